// openfiles: check the files OpenCode edits and show the model what `openfiles hook` found (--tag openfiles-hook).
// Installed by `openfiles hooks install --agent opencode`; removed by `openfiles hooks uninstall`.
const EDIT_TOOLS = new Set(["edit", "write", "multiedit", "patch", "apply_patch"]);
const BUDGET = 9000;
export const OpenFiles = async ({ directory }) => ({
  "tool.execute.after": async (input, output) => {
    if (!EDIT_TOOLS.has(input?.tool)) return;
    const payload = JSON.stringify({
      hook_event_name: "PostToolUse",
      tool_name: input.tool,
      tool_input: input.args ?? {},
      cwd: directory,
    });
    try {
      const proc = Bun.spawn(["openfiles", "hook", "--agent", "opencode", "--tag", "openfiles-hook"], {
        stdin: new Blob([payload]),
        stdout: "pipe",
        stderr: "ignore",
      });
      const text = await new Response(proc.stdout).text();
      await proc.exited;
      const line = text.trim();
      if (!line) return;
      const context = JSON.parse(line)?.hookSpecificOutput?.additionalContext;
      if (typeof context !== "string" || !context) return;
      const before = typeof output.output === "string" ? output.output : "";
      output.output = `${before}\n\n${context.slice(0, BUDGET)}`;
    } catch {
      // openfiles is not installed or not on PATH, or printed nothing: never break the agent.
    }
  },
});
