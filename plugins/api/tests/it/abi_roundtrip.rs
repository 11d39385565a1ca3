//! The C ABI glue, exercised through the raw table exactly as a host calls it: JSON in,
//! JSON out, errors and panics as status codes with a message, buffers freed by the
//! plugin's own `free_buffer`, instances destroyed once.

use std::ffi::{c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use openfiles_plugin_api::abi::{
    Buffer, PluginTableV1, ABI_MINOR, STATUS_ERROR, STATUS_OK, STATUS_PANIC,
};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
    PluginError, Severity, ABI_MAJOR,
};

static DESTROYED: AtomicUsize = AtomicUsize::new(0);
static CANCELLED: AtomicUsize = AtomicUsize::new(0);

struct Echo {
    prefix: String,
}

impl Drop for Echo {
    fn drop(&mut self) {
        DESTROYED.fetch_add(1, Ordering::SeqCst);
    }
}

impl Plugin for Echo {
    const NAME: &'static str = "echo";
    const VERSION: &'static str = "1.2.3";

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let prefix = init.config["prefix"]
            .as_str()
            .ok_or_else(|| PluginError::Config("config.prefix missing".into()))?
            .to_owned();
        Ok((
            Echo { prefix },
            Capabilities {
                extensions: vec!["txt".into()],
                project_wide: false,
                needs_project: false,
                notes: Vec::new(),
                ..Capabilities::default()
            },
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        if request.files.is_empty() {
            return Err(PluginError::Request("nothing to check".into()));
        }
        if request.files[0].ends_with("boom") {
            panic!("boom requested");
        }
        let more = request.files.len() > 1;
        // The committed texts it was given, echoed as the files' baseline (unless the
        // service says it has it).
        let baseline = request
            .committed
            .iter()
            .filter(|_| !request.baseline_known)
            .map(|(path, text)| FileResult {
                path: path.clone(),
                items: vec![Item {
                    introduced: None,
                    fixes: Vec::new(),
                    line: 1,
                    column: 1,
                    severity: Severity::Error,
                    source: "echo".into(),
                    code: None,
                    message: text.clone(),
                }],
            })
            .collect();
        Ok(CheckResponse {
            more,
            baseline,
            files: request
                .files
                .into_iter()
                .map(|path| FileResult {
                    items: vec![Item {
                        introduced: None,
                        fixes: Vec::new(),
                        line: 3,
                        column: 5,
                        severity: Severity::Warning,
                        source: "echo".into(),
                        code: Some("E1".into()),
                        message: format!("{} {}", self.prefix, path.display()),
                    }],
                    path,
                })
                .collect(),
        })
    }

    fn cancel(&self, _check_id: u64) {
        CANCELLED.fetch_add(1, Ordering::SeqCst);
    }
}

export_plugin!(Echo);

fn table() -> &'static PluginTableV1 {
    // SAFETY: the macro returns a pointer to a static table.
    unsafe { &*openfiles_plugin_v1() }
}

/// Call `f` with an out buffer; return (status, text) and free the buffer the ABI way.
fn call(f: impl FnOnce(*mut Buffer) -> i32) -> (i32, String) {
    let mut out = Buffer::empty();
    let status = f(&mut out);
    // SAFETY: the plugin filled `out`.
    let text = String::from_utf8(unsafe { out.as_slice() }.to_vec()).unwrap();
    // SAFETY: freed once, by the plugin.
    unsafe { (table().free_buffer)(out) };
    (status, text)
}

fn create(config: serde_json::Value) -> (i32, String, *mut c_void) {
    let init = serde_json::to_vec(&Init {
        config,
        state_dir: PathBuf::from("/tmp/x"),
        host_version: "t".into(),
    })
    .unwrap();
    let mut instance: *mut c_void = std::ptr::null_mut();
    let (status, text) =
        // SAFETY: the table's entry points with buffers and slots this test owns.
        call(|out| unsafe { (table().create)(init.as_ptr(), init.len(), &mut instance, out) });
    (status, text, instance)
}

fn check(instance: *mut c_void, json: &[u8]) -> (i32, String) {
    // SAFETY: the table's entry points with buffers and slots this test owns.
    call(|out| unsafe { (table().check)(instance, json.as_ptr(), json.len(), out) })
}

#[test]
fn table_header_names_and_sizes() {
    let t = table();
    assert_eq!(t.abi_major, ABI_MAJOR);
    assert_eq!(t.abi_minor, ABI_MINOR);
    assert_eq!(t.struct_size, std::mem::size_of::<PluginTableV1>());
    // SAFETY: static NUL-terminated strings.
    assert_eq!(unsafe { CStr::from_ptr(t.name) }.to_str().unwrap(), "echo");
    assert_eq!(
        // SAFETY: static NUL-terminated strings of the table.
        unsafe { CStr::from_ptr(t.version) }.to_str().unwrap(),
        "1.2.3"
    );
    // The same table every call.
    assert_eq!(openfiles_plugin_v1(), openfiles_plugin_v1());
}

#[test]
fn create_check_cancel_destroy_round_trip() {
    let (status, caps, instance) = create(serde_json::json!({"prefix": "saw"}));
    assert_eq!(status, STATUS_OK, "{caps}");
    let caps: Capabilities = serde_json::from_str(&caps).unwrap();
    assert_eq!(caps.extensions, vec!["txt".to_owned()]);
    assert!(!instance.is_null());

    let req = serde_json::to_vec(&CheckRequest {
        id: 7,
        workspace: "/w".into(),
        files: vec!["/w/a.txt".into(), "/w/é.txt".into()],
        also_report: vec![],
        timeout_ms: 1000,
        committed: [("/w/a.txt".into(), "old ü".to_owned())].into(),
        ..Default::default()
    })
    .unwrap();
    let (status, text) = check(instance, &req);
    assert_eq!(status, STATUS_OK, "{text}");
    let resp: CheckResponse = serde_json::from_str(&text).unwrap();
    assert_eq!(resp.files.len(), 2);
    assert!(resp.more, "an early answer says so across the boundary");
    assert_eq!(resp.files[1].items[0].message, "saw /w/é.txt");
    assert_eq!(resp.files[1].items[0].code.as_deref(), Some("E1"));
    assert_eq!(
        resp.baseline.len(),
        1,
        "the committed texts and baseline cross it"
    );
    assert_eq!(resp.baseline[0].path, PathBuf::from("/w/a.txt"));
    assert_eq!(resp.baseline[0].items[0].message, "old ü");
    let known = serde_json::to_vec(&CheckRequest {
        baseline_known: true,
        ..serde_json::from_slice(&req).unwrap()
    })
    .unwrap();
    let (status, text) = check(instance, &known);
    assert_eq!(status, STATUS_OK, "{text}");
    let resp: CheckResponse = serde_json::from_str(&text).unwrap();
    assert!(
        resp.baseline.is_empty(),
        "baseline_known crosses it: {text}"
    );

    let before = CANCELLED.load(Ordering::SeqCst);
    // SAFETY: an instance from `create` (or null, which the entry points refuse), destroyed once.
    unsafe { (table().cancel)(instance, 7) };
    assert_eq!(CANCELLED.load(Ordering::SeqCst), before + 1);

    let destroyed = DESTROYED.load(Ordering::SeqCst);
    // SAFETY: an instance from `create` (or null, which the entry points refuse), destroyed once.
    unsafe { (table().destroy)(instance) };
    assert_eq!(DESTROYED.load(Ordering::SeqCst), destroyed + 1);
}

#[test]
fn errors_and_panics_become_status_codes_with_messages() {
    let (status, msg, instance) = create(serde_json::json!({}));
    assert_eq!(status, STATUS_ERROR);
    assert_eq!(msg, "config.prefix missing");
    assert!(instance.is_null());

    let (status, msg, _) = call_create_raw(b"{not json");
    assert_eq!(status, STATUS_ERROR);
    assert!(msg.contains("bad init JSON"), "{msg}");

    let (status, _, instance) = create(serde_json::json!({"prefix": "p"}));
    assert_eq!(status, STATUS_OK);
    let (status, msg) = check(instance, br#"{"id":1,"workspace":"/w","files":[]}"#);
    assert_eq!((status, msg.as_str()), (STATUS_ERROR, "nothing to check"));
    let (status, msg) = check(
        instance,
        br#"{"id":2,"workspace":"/w","files":["/w/boom"]}"#,
    );
    assert_eq!(status, STATUS_PANIC);
    assert_eq!(msg, "boom requested");
    let (status, msg) = check(instance, b"\xff\xfe");
    assert_eq!(status, STATUS_ERROR);
    assert!(msg.contains("bad request JSON"), "{msg}");
    // Still usable after a panic.
    let (status, _) = check(instance, br#"{"id":3,"workspace":"/w","files":["/w/a"]}"#);
    assert_eq!(status, STATUS_OK);
    // Null pointers are refused, not dereferenced.
    let (status, _) = check(std::ptr::null_mut(), b"{}");
    assert_eq!(status, STATUS_ERROR);
    // SAFETY: an instance from `create` (or null, which the entry points refuse), destroyed once.
    unsafe { (table().cancel)(std::ptr::null_mut(), 1) };
    // SAFETY: an instance from `create` (or null, which the entry points refuse), destroyed once.
    unsafe { (table().destroy)(std::ptr::null_mut()) };
    // SAFETY: an instance from `create` (or null, which the entry points refuse), destroyed once.
    unsafe { (table().destroy)(instance) };
}

fn call_create_raw(bytes: &[u8]) -> (i32, String, *mut c_void) {
    let mut instance: *mut c_void = std::ptr::null_mut();
    let (status, text) =
        // SAFETY: the table's entry points with buffers and slots this test owns.
        call(|out| unsafe { (table().create)(bytes.as_ptr(), bytes.len(), &mut instance, out) });
    (status, text, instance)
}

#[test]
fn a_plugin_without_an_answer_of_its_own_says_its_questions_are_unsupported() {
    let (status, _, instance) = create(serde_json::json!({"prefix": "p"}));
    assert_eq!(status, STATUS_OK);
    let q = serde_json::json!({"kind": "definition", "workspace": "/w", "file": "/w/a.txt", "line": 1, "column": 1});
    let json = serde_json::to_vec(&q).unwrap();
    // SAFETY: the table's entry points with buffers and slots this test owns.
    let (status, text) =
        call(|out| unsafe { (table().query)(instance, json.as_ptr(), json.len(), out) });
    assert_eq!(status, STATUS_OK, "{text}");
    let answer: openfiles_plugin_api::query::QueryAnswer = serde_json::from_str(&text).unwrap();
    assert!(answer.unsupported);
    // SAFETY: destroyed once.
    unsafe { (table().destroy)(instance) };
    assert!(table().struct_size >= openfiles_plugin_api::abi::QUERY_MIN_SIZE);
}
