#!/usr/bin/env python3
"""Read `cargo test --no-run --message-format=json` and write, into the folder argv[1], the
lists `scripts/test-runner.sh` reads: `lead`, the service crate's integration-test binary (the
one of the manifest argv[2], named `it`); `list`, every other package's integration-test
binary, one a line (`BINARY<TAB>PACKAGE DIR<TAB>PACKAGE NAME`), the heaviest first.
Exits 1 (nothing written) when there is no lead or nothing to run beside it.
Used by scripts/test.sh to run the plugins' integration tests beside the service's."""
import json
import sys

lead, rest = None, []
for line in sys.stdin:
    a = json.loads(line)
    if a.get("reason") != "compiler-artifact" or not a.get("executable"):
        continue
    if a["target"]["kind"] != ["test"] or not a["profile"]["test"]:
        continue
    pkg_dir = a["manifest_path"].rsplit("/", 1)[0]
    # `path+file:///…/DIR#NAME@VERSION`, or `…/NAME#VERSION` when the folder is named so.
    url, _, frag = a["package_id"].rpartition("#")
    name = frag.split("@")[0] if "@" in frag else url.rstrip("/").rsplit("/", 1)[-1]
    if a["manifest_path"] == sys.argv[2] and a["target"]["name"] == "it":
        lead = a["executable"]
    else:
        rest.append((a["executable"], pkg_dir, name))
# Heaviest first (lsp, pyright, tsc, tests: 60, 28, 22, 17 s in CI), then the small ones.
heavy = [f"openfiles-plugin-{p}" for p in ("lsp", "pyright", "tsc", "tests")]
rest.sort(key=lambda r: (heavy.index(r[2]) if r[2] in heavy else len(heavy), r[2]))
if lead is None or not rest:
    sys.exit(1)
open(sys.argv[1] + "/list", "w").write("".join("\t".join(r) + "\n" for r in rest))
open(sys.argv[1] + "/lead", "w").write(lead)
