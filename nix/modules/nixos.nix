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
