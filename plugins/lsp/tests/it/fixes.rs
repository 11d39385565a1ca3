//! Fixes through the plugin (issue 34): typescript-language-server's quick fixes asked in a
//! second step (`CheckRequest::fixes_only`) for exactly the text the check reported on, and
//! nothing once the file changed.

use crate::support::Env;
use openfiles_plugin_api::content_hash;
use serde_json::json;

const TS: &str = "const count: number = 3;\nconsole.log(coutn);\n";

#[test]
fn quick_fixes_come_for_the_text_checked_and_not_after_it_changed() {
    let env = Env::new(json!({}));
    env.write("tsconfig.json", r#"{"compilerOptions":{"strict":true}}"#);
    let file = env.write("m.ts", TS);
    let items = env.check(&file, 60_000);
    let typo = items
        .iter()
        .find(|i| i.code.as_deref() == Some("2552"))
        .unwrap_or_else(|| panic!("{items:#?}"));
    assert!(
        typo.fixes.is_empty(),
        "the check's answer does not wait for fixes"
    );

    let fixed = env.fixes(&file, 10_000);
    assert_eq!(fixed.len(), 1, "{fixed:#?}");
    let (item, fix) = (&fixed[0], &fixed[0].fixes[0]);
    assert_eq!(
        (item.line, item.column, item.code.as_deref()),
        (2, 13, Some("2552"))
    );
    assert_eq!(fix.title, "Change spelling to 'count'");
    assert!(fix.safe);
    assert_eq!(fix.files[0].sha256, content_hash(TS.as_bytes()));
    let e = &fix.files[0].edits[0];
    assert_eq!((e.line, e.column, e.end_line, e.end_column), (2, 13, 2, 18));
    assert_eq!(e.new_text, "count");

    // The file changed since the check: its fixes would not fit, none are given.
    env.write("m.ts", &format!("// moved\n{TS}"));
    assert!(env.fixes(&file, 10_000).is_empty());
}
