#!/usr/bin/env node
// taplo's own TOML language server — the WebAssembly build of its `taplo-lsp` crate that npm's
// @taplo/lsp ships (the PyPI and npm builds of the taplo CLI leave the server out) — spoken to
// over stdio, for the openfiles lsp plugin.
//
// Offline and zero-config whatever the workspace: the server is given no network (every fetch
// fails, so no schema or schema catalog is ever downloaded) and no file (it reads none: no
// `.taplo.toml`, no schema a `#:schema` directive names — the documents come over the
// protocol). What it reports is what `taplo lint --no-schema` reports: TOML syntax and
// structure (duplicate keys, a table defined twice).
"use strict";

const { fileURLToPath } = require("node:url");
const path = require("node:path");
// Resolved from this package's own folder, never from the workspace it checks.
const { TaploLsp } = require("@taplo/lsp");

const offline = () => Promise.reject(new Error("openfiles: taplo runs offline"));
const noFile = () => Promise.reject(new Error("openfiles: taplo reads no file"));
globalThis.fetch = offline;

// Anything the server prints goes to stderr: stdout carries the protocol only.
const toStderr = (bytes) => {
  process.stderr.write(bytes);
  return Promise.resolve(bytes.length);
};

const env = {
  now: () => new Date(),
  envVar: () => undefined,
  envVars: () => [],
  stdErrAtty: () => false,
  stdin: () => Promise.resolve(new Uint8Array()),
  stdout: toStderr,
  stderr: toStderr,
  glob: () => [],
  readFile: noFile,
  writeFile: noFile,
  urlToFilePath: (url) => (url.startsWith("file:") ? fileURLToPath(url) : url),
  isAbsolute: (p) => path.isAbsolute(p),
  cwd: () => process.cwd(),
  findConfigFile: () => undefined,
  fetch: { fetch: offline, Headers, Request, Response },
};

function send(message) {
  const body = Buffer.from(JSON.stringify(message), "utf8");
  process.stdout.write(`Content-Length: ${body.length}\r\n\r\n`);
  process.stdout.write(body);
}

async function main() {
  const lsp = await TaploLsp.initialize(env, { onMessage: send });
  let buf = Buffer.alloc(0);
  process.stdin.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const header = buf.subarray(0, end).toString("ascii");
      const m = /content-length:\s*(\d+)/i.exec(header);
      if (!m) {
        process.stderr.write(`openfiles-taplo-lsp: no Content-Length in ${header}\n`);
        process.exit(1);
      }
      const len = Number(m[1]);
      if (buf.length < end + 4 + len) return;
      const body = buf.subarray(end + 4, end + 4 + len).toString("utf8");
      buf = buf.subarray(end + 4 + len);
      let message;
      try {
        message = JSON.parse(body);
      } catch (e) {
        process.stderr.write(`openfiles-taplo-lsp: bad message: ${e}\n`);
        continue;
      }
      lsp.send(message);
      if (message.method === "exit") process.exit(0);
    }
  });
  process.stdin.on("end", () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`openfiles-taplo-lsp: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
