# NixOS module: openfiles as a socket-activated systemd *user* service for every user.
#   services.openfiles = { enable = true; settings.hooks.feedback = "errors"; };
# The socket is wanted by sockets.target, so each user's manager listens on
# $XDG_RUNTIME_DIR/openfiles/openfiles.sock and starts the service on first use.
{ defaultPackage }:
{ config, lib, pkgs, ... }:

let
  common = import ./common.nix { inherit lib; };
  cfg = config.services.openfiles;
  configFile = common.configFile pkgs cfg.settings;
  systemctl = "${config.systemd.package}/bin/systemctl";
in
{
  options.services.openfiles = {
    enable = lib.mkEnableOption "openfiles, diagnostics and terminals for AI coding agents (a user service)";
  } // common.options { inherit pkgs defaultPackage; };

  config = lib.mkIf cfg.enable {
    assertions = common.assertions cfg;
    environment.systemPackages = [ cfg.package ];
    environment.etc = lib.optionalAttrs (configFile != null) {
      "openfiles/config.toml".source = configFile;
    };

    systemd.user.sockets.openfiles = {
      description = "openfiles control socket";
      wantedBy = [ "sockets.target" ];
      listenStreams = [ common.runtimeSocket ];
      socketConfig = {
        SocketMode = "0600";
        DirectoryMode = "0700";
        FileDescriptorName = "control";
        RemoveOnStop = true;
      };
    };

    # `nixos-rebuild switch` re-executes each logged-in user's manager and runs
    # nixos-activation.service (system.userActivationScripts) in it, but neither reloads nor
    # restarts user services, whatever their reload/restart triggers say. So this step, run
    # per user on every switch (after /etc holds the new file), reloads a running service
    # when /etc/openfiles/config.toml changed since it last ran: SIGHUP through ExecReload,
    # terminals survive. A service that is not running reads the file when it starts. The
    # file gone (settings emptied) means the unit lost OPENFILES_CONFIG: that takes a restart.
    system.userActivationScripts.openfiles = ''
      openfilesNow=$(readlink -e /etc/openfiles/config.toml || true)
      openfilesStamp=''${XDG_RUNTIME_DIR:-/run/user/$(id -u)}/openfiles/config.applied
      openfilesWas=$(cat "$openfilesStamp" 2>/dev/null || true)
      if [ "$openfilesNow" != "$openfilesWas" ]; then
        if ${systemctl} --user is-active --quiet openfiles.service; then
          if [ -n "$openfilesNow" ]; then
            ${systemctl} --user reload openfiles.service || echo "openfiles: reload failed" >&2
          else
            ${systemctl} --user try-restart openfiles.service || echo "openfiles: restart failed" >&2
          fi
        fi
        mkdir -p "''${openfilesStamp%/*}"
        chmod 700 "''${openfilesStamp%/*}"
        printf '%s\n' "$openfilesNow" > "$openfilesStamp"
      fi
      unset openfilesNow openfilesStamp openfilesWas
    '';

    systemd.user.services.openfiles = {
      description = "openfiles: diagnostics and terminals for AI coding agents";
      requires = [ "openfiles.socket" ];
      after = [ "openfiles.socket" ];
      path = common.nixosPath cfg.extraPackages;
      environment = lib.optionalAttrs (configFile != null) {
        OPENFILES_CONFIG = "/etc/openfiles/config.toml";
      };
      serviceConfig = {
        Type = "notify";
        NotifyAccess = "main";
        ExecStart = "${lib.getExe cfg.package} serve";
        ExecReload = common.execReload pkgs;
        WatchdogSec = 30;
        Restart = "on-failure";
        RestartSec = 2;
        TimeoutStopSec = 20;
      };
    };
  };
}
