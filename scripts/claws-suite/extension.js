// openfiles standing in for the Claws VS Code extension's bundle (`dist/extension.js`), so
// Claws's own suites run against `openfiles claws serve` unchanged: `activate` turns the
// suite's mocked `vscode` settings (`claws.*`) into the user's openfiles config.toml
// (`$XDG_CONFIG_HOME/openfiles/config.toml`) and starts the server for the mocked workspace
// folder; `deactivate` stops it. Written for scripts/claws-auth-suite.sh; no Claws code.
'use strict';

const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

let child = null;

function toml(s) {
  return JSON.stringify(String(s));
}

exports.activate = function activate() {
  const vscode = require('vscode');
  const root = vscode.workspace.workspaceFolders[0].uri.fsPath;
  const cfg = vscode.workspace.getConfiguration('claws');
  const get = (k, fb) => cfg.get(k, fb);
  const lines = ['[claws.auth]', `enabled = ${!!get('auth.enabled', false)}`];
  const tokenPath = get('auth.tokenPath', '');
  if (tokenPath) lines.push(`token_path = ${toml(tokenPath)}`);
  lines.push('[claws.web_socket]', `enabled = ${!!get('webSocket.enabled', false)}`);
  const port = get('webSocket.port', 0);
  if (port) lines.push(`port = ${port}`);
  for (const [k, key] of [['webSocket.certPath', 'cert_path'], ['webSocket.keyPath', 'key_path']]) {
    const v = get(k, '');
    if (v) lines.push(`${key} = ${toml(v)}`);
  }
  const dir = path.join(process.env.XDG_CONFIG_HOME, 'openfiles');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'config.toml'), lines.join('\n') + '\n', { mode: 0o600 });
  child = spawn(process.env.OPENFILES_BIN, ['claws', 'serve', root], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // The extension's server is whole once activated; ours makes its state for the first
  // client. One claws/1 `list` (no hello) here, so the suite's first `hello` does not pay
  // for that within its 3-second timeout on a loaded machine.
  const sock = path.join(root, '.claws', 'claws.sock');
  const until = Date.now() + 60000;
  while (Date.now() < until) {
    const r = spawnSync(process.env.OPENFILES_BIN, ['claws', '--claws-socket', sock, 'list'], {
      stdio: 'ignore',
    });
    if (r.status === 0) break;
    spawnSync('sleep', ['0.05']);
  }
};

exports.deactivate = function deactivate() {
  if (!child || child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.on('exit', () => resolve());
    child.kill('SIGTERM');
  });
};
