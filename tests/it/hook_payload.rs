//! One test per payload shape in agent-hooks.md: which paths `openfiles hook` takes from
//! each agent's payload (library level, exact results), plus the shapes that yield nothing.

use std::path::PathBuf;

use openfiles::hook::payload::{parse_bytes, Parsed};

fn paths(json: &str) -> Vec<PathBuf> {
    parse_bytes(json.as_bytes()).paths
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

#[test]
fn claude_edit() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Edit","tool_input":{"file_path":"/w/src/app.ts","old_string":"a","new_string":"b"}}"#
        ),
        vec![p("/w/src/app.ts")]
    );
}

#[test]
fn claude_write() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"Write","tool_input":{"file_path":"/w/new.rs","content":"fn main() {}\n"}}"#
        ),
        vec![p("/w/new.rs")]
    );
}

#[test]
fn claude_multiedit() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"MultiEdit","tool_input":{"file_path":"/w/a.py","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}}"#
        ),
        vec![p("/w/a.py")]
    );
}

#[test]
fn claude_notebook_edit() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"NotebookEdit","tool_input":{"notebook_path":"/w/n.ipynb","new_source":"x = 1"}}"#
        ),
        vec![p("/w/n.ipynb")]
    );
}

#[test]
fn codex_apply_patch_single_file() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: src/a.ts\n@@\n-x\n+y\n*** End Patch"}}"#
        ),
        vec![p("/w/src/a.ts")]
    );
}

#[test]
fn codex_apply_patch_multi_file_with_add_move_and_delete() {
    let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+fn f() {}\n+++ not a header\n*** Update File: src/old.rs\n*** Move to: src/moved.rs\n@@\n-a\n+b\n*** Delete File: src/gone.rs\n*** Update File: /abs/x.rs\n@@\n-c\n+d\n*** End Patch";
    let payload = serde_json::json!({"cwd": "/w", "tool_name": "apply_patch", "tool_input": {"command": patch}});
    assert_eq!(
        paths(&payload.to_string()),
        vec![
            p("/w/src/new.rs"),
            p("/w/src/old.rs"),
            p("/w/src/moved.rs"),
            p("/abs/x.rs")
        ]
    );
}

#[test]
fn codex_apply_patch_as_argv_and_unified_diff() {
    let payload = serde_json::json!({
        "cwd": "/w", "tool_name": "shell_patch",
        "tool_input": {"command": ["apply_patch", "*** Begin Patch\n*** Update File: a.rs\n*** End Patch"]}
    });
    assert_eq!(paths(&payload.to_string()), vec![p("/w/a.rs")]);
    let diff = "--- a/src/x.c\n+++ b/src/x.c\n@@ -1 +1 @@\n-a\n+b\n--- a/old.c\n+++ /dev/null\n--- /dev/null\n+++ added.c\n";
    let payload =
        serde_json::json!({"cwd": "/w", "tool_name": "patch", "tool_input": {"patch": diff}});
    assert_eq!(
        paths(&payload.to_string()),
        vec![p("/w/src/x.c"), p("/w/added.c")]
    );
}

#[test]
fn copilot_tool_args_is_a_json_string() {
    assert_eq!(
        paths(r#"{"toolName":"edit","toolArgs":"{\"path\":\"/w/src/a.ts\"}"}"#),
        vec![p("/w/src/a.ts")]
    );
    // Copilot's create tool, relative to its cwd.
    assert_eq!(
        paths(
            r#"{"cwd":"/w","toolName":"create","toolArgs":"{\"path\":\"b.ts\",\"file_text\":\"x\"}"}"#
        ),
        vec![p("/w/b.ts")]
    );
    // Any nested object may come JSON-encoded.
    assert_eq!(
        paths(r#"{"tool_name":"edit","tool_input":"{\"file_path\":\"/w/c.ts\"}"}"#),
        vec![p("/w/c.ts")]
    );
    // A toolArgs string that is not JSON is ignored, not fatal.
    assert!(paths(r#"{"toolName":"edit","toolArgs":"{nope"}"#).is_empty());
}

#[test]
fn gemini_write_file() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"write_file","tool_input":{"file_path":"/w/notes.md","content":"…"}}"#
        ),
        vec![p("/w/notes.md")]
    );
}

#[test]
fn gemini_replace() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","hook_event_name":"AfterTool","tool_name":"replace","tool_input":{"file_path":"/w/src/m.go","old_string":"a","new_string":"b"}}"#
        ),
        vec![p("/w/src/m.go")]
    );
}

#[test]
fn cursor_after_file_edit_has_no_tool_name() {
    let parsed = parse_bytes(
        br#"{"hook_event_name":"afterFileEdit","workspace_roots":["/w"],"file_path":"/w/src/a.ts","edits":[{"old_string":"a","new_string":"b"}]}"#,
    );
    assert_eq!(parsed.paths, vec![p("/w/src/a.ts")]);
    assert_eq!(parsed.event.as_deref(), Some("afterFileEdit"));
    assert_eq!(parsed.cwd, Some(p("/w")));
}

#[test]
fn cursor_post_tool_use() {
    assert_eq!(
        paths(
            r#"{"hook_event_name":"postToolUse","workspace_roots":["/w"],"tool_name":"Edit","tool_input":{"file_path":"src/a.ts"}}"#
        ),
        vec![p("/w/src/a.ts")]
    );
}

#[test]
fn windsurf_post_write_code() {
    assert_eq!(
        paths(
            r#"{"agent_action_name":"post_write_code","tool_info":{"file_path":"/w/app.py","edits":[{"old_string":"a","new_string":"b"}]}}"#
        ),
        vec![p("/w/app.py")]
    );
}

#[test]
fn opencode_plugin_payload() {
    assert_eq!(
        paths(r#"{"tool_name":"edit","file_path":"/w/src/index.ts","cwd":"/w"}"#),
        vec![p("/w/src/index.ts")]
    );
    // What the plugin sends from `tool.execute.after`: the tool's own arguments.
    assert_eq!(
        paths(
            r#"{"hook_event_name":"PostToolUse","tool_name":"write","tool_input":{"filePath":"/w/src/app.py","content":"x"},"cwd":"/w"}"#
        ),
        vec![p("/w/src/app.py")]
    );
    assert_eq!(
        paths(
            r#"{"tool_name":"apply_patch","tool_input":{"patchText":"*** Begin Patch\n*** Add File: src/b.py\n+x\n*** End Patch"},"cwd":"/w"}"#
        ),
        vec![p("/w/src/b.py")]
    );
}

#[test]
fn list_keys_with_strings_and_objects() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"write_many","tool_input":{"files":["a.rs",{"path":"b.rs"},{"file_path":"/c.rs"},7],"paths":["a.rs"]}}"#
        ),
        vec![p("/w/a.rs"), p("/w/b.rs"), p("/c.rs")]
    );
}

#[test]
fn read_only_tools_are_ignored() {
    for tool in [
        "Read",
        "Grep",
        "Bash",
        "Glob",
        "read_file",
        "run_shell_command",
        "view",
    ] {
        let payload = serde_json::json!({"cwd": "/w", "tool_name": tool, "tool_input": {"file_path": "/w/a.rs", "command": "*** Begin Patch\n*** Update File: a.rs\n*** End Patch"}});
        assert!(
            paths(&payload.to_string()).is_empty(),
            "{tool} was taken as a write"
        );
    }
    // Tool name under tool_info, and under `tool`.
    assert!(paths(r#"{"tool_info":{"tool_name":"Read","file_path":"/w/a"}}"#).is_empty());
    assert!(paths(r#"{"tool":"grep","path":"/w/a"}"#).is_empty());
    // An empty tool name is no tool name: parsing goes on.
    assert_eq!(paths(r#"{"tool_name":"","path":"/w/a"}"#), vec![p("/w/a")]);
    // The write filter is case-insensitive and matches inside names.
    assert_eq!(
        paths(r#"{"tool":"STR_REPLACE_BASED_EDIT_TOOL","path":"/w/a"}"#),
        vec![p("/w/a")]
    );
}

#[test]
fn garbage_null_and_string_stdin_yield_nothing() {
    for input in [
        "",
        "   \n",
        "null",
        "\"just a string\"",
        "[1,2]",
        "{nope",
        "42",
        "\u{0}\u{1}",
    ] {
        // Nothing to report; only the reason (for `--verbose`) may be set.
        let p = parse_bytes(input.as_bytes());
        assert_eq!(
            Parsed { invalid: None, ..p },
            Parsed::default(),
            "{input:?}"
        );
    }
    let p = parse_bytes(&[0xff, 0xfe, 0x00]);
    assert!(p.invalid.is_some());
    assert_eq!(Parsed { invalid: None, ..p }, Parsed::default());
}

#[test]
fn relative_paths_with_and_without_cwd() {
    assert_eq!(
        paths(r#"{"cwd":"/w","tool_name":"Edit","tool_input":{"file_path":"src/a.rs"}}"#),
        vec![p("/w/src/a.rs")]
    );
    // workspace_root, then workspace_roots[0], stand in for cwd.
    assert_eq!(
        paths(r#"{"workspace_root":"/r","tool_name":"Edit","file_path":"a.rs"}"#),
        vec![p("/r/a.rs")]
    );
    // Without a working directory the path stays relative (the hook resolves it against its
    // own cwd; see hook_fallback.rs).
    assert_eq!(
        paths(r#"{"tool_name":"Edit","tool_input":{"file_path":"src/a.rs"}}"#),
        vec![p("src/a.rs")]
    );
}

#[test]
fn newlines_long_values_and_duplicates() {
    let long = "a".repeat(4096);
    let payload = serde_json::json!({
        "cwd": "/w", "tool_name": "Edit",
        "file_path": "/w/a.rs",
        "tool_input": {"file_path": "/w/a.rs", "path": "x\ny", "target_file": long, "new_path": "/w/b.rs"},
        "input": {"absolutePath": "/w/a.rs"},
        "args": {"destination": "/w/b.rs", "filePath": "/w/c.rs"}
    });
    assert_eq!(
        paths(&payload.to_string()),
        vec![p("/w/a.rs"), p("/w/b.rs"), p("/w/c.rs")]
    );
    let just_under = "b".repeat(4095);
    let payload =
        serde_json::json!({"tool_name": "Edit", "file_path": format!("/{}", &just_under[1..])});
    assert_eq!(paths(&payload.to_string()).len(), 1);
}

#[test]
fn patch_text_directly_in_input() {
    assert_eq!(
        paths(
            r#"{"cwd":"/w","tool_name":"apply_patch","input":"*** Begin Patch\n*** Add File: z.rs\n+x\n*** End Patch"}"#
        ),
        vec![p("/w/z.rs")]
    );
}
