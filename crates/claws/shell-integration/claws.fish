# openfiles Claws shell integration for fish, run by `fish --init-command` after the user's
# config: OSC 633 marks with the per-terminal nonce (unset from the environment at once):
# A prompt, E command line, C start, D exit code, X <token> (the command starting is the one
# `exec` typed), R <token>;<reason> (fish refused it). `exec` types the command, key
# \e[9901~, a decimal token, key \e[9902~, Enter; the keys are bound to functions that take
# the token (typed between them) out of the line and check the line with
# `commandline --is-valid` (fish keeps a refused line in its editor, so a refused line is
# cleared instead of executed).
# Every mark goes to the terminal itself, named here at start-up (the pty fish's stdout is on
# now; /dev/tty if that cannot be told): never to the stdout of the moment, so a redirected
# block or function (`begin …; end > f`) gets only its own output. (fish cannot keep a
# descriptor of its own open, so each mark opens the device.)
set -g __claws_tty /dev/tty
if isatty stdout; and builtin -q path
    set -l t (path resolve /proc/self/fd/1)
    test -c "$t"; and set -g __claws_tty $t
end
# The nonce comes in a private file (never the environment), read and deleted at once.
set -g __claws_nonce ""
set -g __claws_hup ""
if set -q CLAWS_SI_NONCE_FILE
    read -g __claws_nonce < $CLAWS_SI_NONCE_FILE
    command rm -f -- $CLAWS_SI_NONCE_FILE
    set -g __claws_hup "$CLAWS_SI_NONCE_FILE.hup"
end
set -e CLAWS_SI_NONCE_FILE
set -e CLAWS_SI_SCRIPT
set -g __claws_running 0
# A stray SIGHUP to the service's cgroup must not end the session: fish exits on SIGHUP
# unless a handler takes it; the service's own hang-up creates the marker first (see bashrc).
function __claws_on_hup --on-signal HUP
    if test -n "$__claws_hup"; and test -e "$__claws_hup"
        command rm -f -- $__claws_hup
        exit 129
    end
end
set -g __claws_tag 0
set -g __claws_at 0

function __claws_k0
    set -g __claws_at (commandline -C)
end

function __claws_k1
    set -l b (commandline | string collect)
    set -l p (commandline -C)
    set -g __claws_tag 0
    test "$p" -gt "$__claws_at"; or return
    set -l tag (string sub -s (math $__claws_at + 1) -l (math $p - $__claws_at) -- "$b")
    set -l line (string sub -l $__claws_at -- "$b" | string collect)(string sub -s (math $p + 1) -- "$b" | string collect)
    commandline -r -- "$line"
    commandline -C $__claws_at
    string match -qr '^[1-9][0-9]*$' -- "$tag"; or return
    set -g __claws_tag $tag
    commandline --is-valid
    set -l v $status
    if test $v -ne 0
        set -l why "syntax error"
        test $v -eq 2; and set why "incomplete command"
        printf '\e]633;R;%s;%s;%s\a' $__claws_nonce $__claws_tag $why >$__claws_tty
        set -g __claws_tag 0
        commandline -r ''
    end
end

for __claws_mode in default insert
    bind -M $__claws_mode \e\[9901~ __claws_k0
    bind -M $__claws_mode \e\[9902~ __claws_k1
end
set -e __claws_mode

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
    if test "$__claws_tag" != 0
        printf '\e]633;X;%s;%s\a' $__claws_nonce $__claws_tag >$__claws_tty
        set -g __claws_tag 0
    end
    set -l c (__claws_esc "$argv[1]" | string collect)
    printf '\e]633;E;%s;%s\a\e]633;C;%s\a' $__claws_nonce "$c" $__claws_nonce >$__claws_tty
    set -g __claws_running 1
end

function __claws_postexec --on-event fish_postexec
    set -l ec $status
    if test "$__claws_running" = 1
        printf '\e]633;D;%s;%s\a' $__claws_nonce $ec >$__claws_tty
        set -g __claws_running 0
    end
end

function __claws_prompt --on-event fish_prompt
    # An `exec` line that ran nothing.
    if test "$__claws_tag" != 0
        printf '\e]633;R;%s;%s\a' $__claws_nonce $__claws_tag >$__claws_tty
        set -g __claws_tag 0
    end
    printf '\e]633;A;%s\a' $__claws_nonce >$__claws_tty
end
