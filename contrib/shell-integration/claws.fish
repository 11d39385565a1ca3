# openfiles Claws shell integration for fish, run by `fish --init-command` after the user's
# config: OSC 633 marks with the per-terminal nonce (unset from the environment at once).
set -g __claws_nonce $CLAWS_SI_NONCE
set -e CLAWS_SI_NONCE
set -e CLAWS_SI_SCRIPT
set -g __claws_running 0

function __claws_esc
    set -l s (string replace -a -- '\\' '\\\\' "$argv[1]" | string collect)
    set s (string replace -a -- ';' '\\x3b' "$s" | string collect)
    set s (string replace -a -- \n '\\x0a' "$s" | string collect)
    set s (string replace -a -- \r '\\x0d' "$s" | string collect)
    set s (string replace -a -- \a '\\x07' "$s" | string collect)
    set s (string replace -a -- \e '\\x1b' "$s" | string collect)
    printf '%s' "$s"
end

function __claws_preexec --on-event fish_preexec
    set -l c (__claws_esc "$argv[1]" | string collect)
    printf '\e]633;E;%s;%s\a\e]633;C;%s\a' $__claws_nonce "$c" $__claws_nonce
    set -g __claws_running 1
end

function __claws_postexec --on-event fish_postexec
    set -l ec $status
    if test "$__claws_running" = 1
        printf '\e]633;D;%s;%s\a' $__claws_nonce $ec
        set -g __claws_running 0
    end
end

function __claws_prompt --on-event fish_prompt
    printf '\e]633;A;%s\a' $__claws_nonce
end
