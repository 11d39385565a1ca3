// The Claws editor extension's own server, headless, for side-by-side figures
// (scripts/claws-side-by-side.sh): its compiled sources (`tsc` of extension/src into
// extension/dist) under node with a stand-in `vscode` module whose createTerminal opens a
// wrapped terminal's Pseudoterminal as the editor would. No Claws code is copied here.
//
//   node reference-server.js EXTENSION_DIR WORKSPACE
//
// Serves WORKSPACE/.claws/claws.sock until killed. NODE_PATH must reach `zod` and
// `node-pty` (the extension's dependencies).
'use strict';

const Module = require('module');
const path = require('path');

const extRoot = path.resolve(process.argv[2]);
const workspace = path.resolve(process.argv[3]);

class EventEmitter {
  constructor() {
    this.listeners = [];
    this.event = (f) => {
      this.listeners.push(f);
      return { dispose() {} };
    };
  }
  fire(a) {
    for (const f of this.listeners.slice()) f(a);
  }
  dispose() {
    this.listeners = [];
  }
}

const opened = new EventEmitter();
const closed = new EventEmitter();
const disposable = () => ({ dispose() {} });
const vscode = {
  EventEmitter,
  TerminalProfile: class { constructor(o) { this.options = o; } },
  MarkdownString: class { constructor() { this.value = ''; } appendMarkdown(s) { this.value += s; return this; } },
  ThemeColor: class { constructor(id) { this.id = id; } },
  StatusBarAlignment: { Left: 1, Right: 2 },
  Uri: { file: (p) => ({ fsPath: p, scheme: 'file', path: p }) },
  workspace: {
    workspaceFolders: [{ uri: { fsPath: workspace } }],
    getConfiguration: () => ({ get: (_k, fallback) => fallback }),
    onDidChangeConfiguration: disposable,
  },
  window: {
    terminals: [],
    activeTerminal: undefined,
    createOutputChannel: () => ({
      appendLine: (m) => { if (process.env.CLAWS_REFERENCE_LOG) console.error(m); },
      show() {}, dispose() {},
    }),
    createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
    createTerminal: (opts) => {
      const t = {
        name: opts.name || 'terminal', processId: Promise.resolve(process.pid),
        shellIntegration: undefined, show() {}, sendText() {},
        dispose() { if (opts.pty && opts.pty.close) opts.pty.close(); },
      };
      vscode.window.terminals.push(t);
      if (opts.pty) {
        // The editor subscribes to the output and opens the Pseudoterminal once shown.
        opts.pty.onDidWrite(() => {});
        setImmediate(() => opts.pty.open({ columns: 80, rows: 24 }));
      }
      opened.fire(t);
      return t;
    },
    onDidOpenTerminal: opened.event,
    onDidCloseTerminal: closed.event,
    onDidChangeActiveTerminal: disposable,
    registerTerminalProfileProvider: disposable,
    showErrorMessage: () => Promise.resolve(),
    showInformationMessage: () => Promise.resolve(),
    showWarningMessage: () => Promise.resolve(),
    showQuickPick: () => Promise.resolve(undefined),
  },
  commands: { registerCommand: disposable, executeCommand: () => Promise.resolve() },
};

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  return request === 'vscode' ? 'vscode' : resolve.call(this, request, parent, ...rest);
};
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode };

const ext = require(path.join(extRoot, 'dist', 'extension.js'));
ext.activate({
  subscriptions: [],
  extensionPath: extRoot,
  globalState: { get() {}, update() { return Promise.resolve(); } },
});
