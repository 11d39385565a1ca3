//! A generated multi-file TypeScript project with planted mistakes, shared by the tsc
//! plugin's tests, the service-level tsgo test and the tsgo benchmark (included with
//! `#[path]`; plain std, no test framework).
//!
//! `generate(root, n)` writes `3n + 2` files under `src/` — n models, n utils, n services
//! that import them, an index, and a legacy file — plus a strict `tsconfig.json`. The
//! mistakes ([`PLANTED`]) cover: a plain type error, an unused local, a wrong argument count
//! caused by another file (util2 gained a parameter; service2 breaks), a misspelt property,
//! a multi-line elaboration, a column after a non-BMP character (UTF-16 ≠ characters), and a
//! pre-existing error in a file nobody edits. [`toggle_util2`] is the edit that fixes or
//! re-breaks service2 from another file.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// (file relative to the root, line, code) of every planted mistake.
pub const PLANTED: &[(&str, u32, &str)] = &[
    ("src/services/service2.ts", 18, "2554"),
    ("src/services/service3.ts", 21, "2322"),
    ("src/services/service4.ts", 21, "2551"),
    ("src/services/service7.ts", 21, "2554"),
    ("src/services/service9.ts", 21, "2322"),
    ("src/util/util5.ts", 6, "6133"),
    ("src/util/util8.ts", 9, "2322"),
    ("src/legacy.ts", 2, "2322"),
];

/// The generated project.
pub struct TsProject {
    pub root: PathBuf,
    /// Every `.ts` file, canonical.
    pub files: Vec<PathBuf>,
}

impl TsProject {
    pub fn file(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn model(i: usize) -> String {
    format!(
        "export interface Record{i} {{\n  id: number;\n  name: string;\n  tags: string[];\n  owner: {{ id: number; email: string }};\n}}\n\n\
         export function make{i}(id: number, name: string): Record{i} {{\n  return {{ id, name, tags: [], owner: {{ id, email: `${{name}}@example.com` }} }};\n}}\n"
    )
}

fn util(i: usize, extra_param: bool) -> String {
    let sep = if extra_param {
        "parts: string[], sep: string"
    } else {
        "parts: string[], sep = \" / \""
    };
    let mut s = format!(
        "export function clamp{i}(n: number, lo: number, hi: number): number {{\n  return Math.min(hi, Math.max(lo, n));\n}}\n\n\
         export function label{i}({sep}): string {{\n"
    );
    // Line 6 of util5: an unused local.
    if i == 5 {
        s.push_str("  const unused5 = parts.length;\n");
    } else {
        s.push_str("  // join the parts\n");
    }
    s.push_str("  return parts.join(sep);\n}\n");
    if i == 8 {
        // Line 9: the error column is after "🚀", one character but two UTF-16 units.
        s.push_str("export const rocket8 = \"🚀\"; export const count8: number = rocket8;\n");
    }
    s
}

fn service(i: usize) -> String {
    let mut s = format!(
        "import {{ Record{i}, make{i} }} from \"../models/model{i}\";\n\
         import {{ clamp{i}, label{i} }} from \"../util/util{i}\";\n\n\
         export class Service{i} {{\n  private items: Record{i}[] = [];\n\n\
         \x20 add(name: string): Record{i} {{\n    const r = make{i}(this.items.length + 1, name);\n    this.items.push(r);\n    return r;\n  }}\n\n\
         \x20 total(): number {{\n    return clamp{i}(this.items.length, 0, 100);\n  }}\n\n\
         \x20 describe(r: Record{i}): string {{\n    return label{i}([r.name, r.owner.email, String(r.id)]);\n  }}\n"
    );
    // Line 21: one planted mistake per chosen service.
    let planted = match i {
        3 => "  bad(): number { const n: number = \"three\"; return n; }\n".to_owned(),
        4 => "  mail(r: Record4): string { return r.owner.emial; }\n".to_owned(),
        7 => "  capped(): number { return clamp7(this.items.length, 0); }\n".to_owned(),
        9 => "  first(): Record9 { const raw = { id: 1, name: \"x\", tags: [], owner: { id: \"1\", email: \"e\" } }; return raw; }\n".to_owned(),
        _ => "  size(): number { return this.items.length; }\n".to_owned(),
    };
    s.push('\n');
    s.push_str(&planted);
    s.push_str("}\n");
    s
}

/// Write the project under `root` with `n` (≥ 10) modules of each kind.
pub fn generate(root: &Path, n: usize) -> TsProject {
    assert!(n >= 10, "the planted mistakes need at least 10 modules");
    for d in ["src/models", "src/util", "src/services"] {
        std::fs::create_dir_all(root.join(d)).expect("create project dirs");
    }
    std::fs::write(
        root.join("tsconfig.json"),
        r#"{
  "compilerOptions": {
    "strict": true,
    "noUnusedLocals": true,
    "target": "es2020",
    "module": "commonjs",
    "skipLibCheck": true
  },
  "include": ["src"]
}
"#,
    )
    .expect("write tsconfig");
    let mut index = String::new();
    for i in 0..n {
        let w = |rel: String, text: String| {
            std::fs::write(root.join(rel), text).expect("write a project file");
        };
        w(format!("src/models/model{i}.ts"), model(i));
        w(format!("src/util/util{i}.ts"), util(i, i == 2));
        w(format!("src/services/service{i}.ts"), service(i));
        index.push_str(&format!("export * from \"./services/service{i}\";\n"));
    }
    std::fs::write(root.join("src/index.ts"), index).expect("write index");
    std::fs::write(
        root.join("src/legacy.ts"),
        "// Old code nobody touches; it has been broken for a while.\nexport const legacy: number = \"0\" as string;\n",
    )
    .expect("write legacy");
    let root = root.canonicalize().expect("canonical root");
    let mut files = Vec::new();
    for d in ["src", "src/models", "src/util", "src/services"] {
        for e in std::fs::read_dir(root.join(d)).expect("read project dir") {
            let p = e.expect("dir entry").path();
            if p.extension().is_some_and(|x| x == "ts") {
                files.push(p);
            }
        }
    }
    files.sort();
    TsProject { root, files }
}

/// Rewrite `src/util/util2.ts`: with `broken`, `label2` needs a second argument, which breaks
/// `service2.ts` (an error in a file that was not edited); without, it has a default.
pub fn toggle_util2(project: &TsProject, broken: bool) {
    std::fs::write(project.file("src/util/util2.ts"), util(2, broken)).expect("write util2");
}

/// The folder of the globally installed `@typescript/native-preview` package, found through
/// the `tsgo` on `PATH` (npm links `bin/tsgo` there).
pub fn global_native_preview() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let tsgo = std::env::split_paths(&path)
        .map(|d| d.join("tsgo"))
        .find(|p| p.is_file())?;
    let real = tsgo.canonicalize().ok()?;
    let pkg = real.parent()?.parent()?;
    pkg.join("package.json").is_file().then(|| pkg.to_owned())
}

/// Make the project "have" TypeScript 7: `node_modules/@typescript/native-preview` links to
/// the real installed package.
pub fn link_native_preview(project: &TsProject) -> PathBuf {
    let pkg = global_native_preview()
        .expect("tsgo (npm @typescript/native-preview) on PATH: run scripts/install-test-deps.sh");
    let scope = project.root.join("node_modules/@typescript");
    std::fs::create_dir_all(&scope).expect("create node_modules/@typescript");
    let link = scope.join("native-preview");
    if !link.exists() {
        std::os::unix::fs::symlink(&pkg, &link).expect("link native-preview");
    }
    pkg
}
