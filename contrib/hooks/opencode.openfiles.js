// openfiles: report files OpenCode edits to `openfiles hook` (--tag openfiles-hook).
// Installed by `openfiles hooks install --agent opencode`; removed by `openfiles hooks uninstall`.
export const OpenFiles = async ({ directory }) => ({
  event: async ({ event }) => {
    if (event.type !== "file.edited") return;
    const file = event.properties?.file;
    if (!file) return;
    const payload = JSON.stringify({ tool_name: "edit", file_path: file, cwd: directory });
    try {
      const proc = Bun.spawn(["openfiles", "hook", "--agent", "opencode", "--no-feedback", "--tag", "openfiles-hook"], {
        stdin: new Blob([payload]),
        stdout: "ignore",
        stderr: "ignore",
      });
      await proc.exited;
    } catch {
      // openfiles is not installed or not on PATH: never break the agent.
    }
  },
});
