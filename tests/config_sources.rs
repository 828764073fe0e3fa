//! Where a model's files come from (`FileSource`), what a model is
//! (`Plan::identity`), the typed errors of `Plan::select` and `Vocab`, and the
//! one-way imports of the config stages.

use std::path::Path;

use fex::Plan;
use fex::config::{Identity, SelectError};
use fex::files::{FileSource, Filesystem, InMemory};
use fex::ops::{Vocab, VocabError};

const VOCAB_MODEL: &str = "name: v\nversion: \"3\"\nfeatures:\n  - {name: raw, kind: sparse, source: item_id, output: false}\n  - {name: ids, op: vocab, input: raw, file: vocab/items.txt}\n";

fn plan_with(text: &str, files: &dyn FileSource) -> Plan {
    Plan::from_yaml_with(text, Path::new("models"), files).unwrap_or_else(|e| panic!("{e}"))
}

fn memory(items: &str) -> InMemory {
    [("models/vocab/items.txt", items)].into_iter().collect()
}

#[test]
fn both_file_sources_build_the_same_plan() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("vocab")).unwrap();
    std::fs::write(dir.path().join("vocab/items.txt"), "10\n20\n").unwrap();
    let on_disk = Plan::from_yaml_with(VOCAB_MODEL, dir.path(), &Filesystem).unwrap();
    let in_memory = plan_with(VOCAB_MODEL, &memory("10\n20\n"));
    assert_eq!(on_disk.identity(), in_memory.identity());
    assert_eq!(lookups(&on_disk), lookups(&in_memory), "the same vocabulary");
    assert_eq!(lookups(&on_disk), [2, 3, 1]);
    assert_eq!(Plan::from_yaml_in(VOCAB_MODEL, dir.path()).unwrap().identity(), on_disk.identity());
}

/// What the plan's vocabulary maps 10, 20 and 30 to.
fn lookups(plan: &Plan) -> Vec<i64> {
    let fex::config::Op::Derived(t) = &plan.outputs[1].op else { panic!("ids is an operator") };
    let fex::ops::TransformKind::Vocab(v) = &t.kind else { panic!("ids is a vocabulary") };
    [10, 20, 30].iter().map(|&x| v.id(x)).collect()
}

#[test]
fn missing_and_bad_files_are_config_errors() {
    let check = |files: &InMemory, want: &str| {
        let e = Plan::from_yaml_with(VOCAB_MODEL, Path::new("models"), files).unwrap_err().to_string();
        assert!(e.contains(want), "want {want:?} in\n{e}");
    };
    check(&InMemory::new(), "features.ids.file: cannot read models/vocab/items.txt: no in-memory file");
    check(&memory("7\n8\n7\n"), r#"features.ids.file: models/vocab/items.txt:3: "7" repeats the entry of id 2"#);
}

#[test]
fn vocab_errors_are_typed() {
    let Err(VocabError::Repeated { line, entry, first, .. }) = Vocab::parse(Path::new("v.txt"), b"a\n\nb\na\n") else {
        panic!("a repeated entry is an error")
    };
    assert_eq!((line, entry.as_str(), first), (4, "a", 2));
    let Err(VocabError::Read { path, source }) = Vocab::load_from(&InMemory::new(), Path::new("x.txt")) else {
        panic!("a missing file is an error")
    };
    assert_eq!((path.as_path(), source.kind()), (Path::new("x.txt"), std::io::ErrorKind::NotFound));
}

/// The version string's shape for a config (and its vocabulary, if any).
fn check_version(text: &str, items: &str, matches: fn(&str) -> bool) -> Identity {
    let identity = plan_with(text, &memory(items)).identity().clone();
    assert!(matches(&identity.version), "{text}: {}", identity.version);
    identity
}

fn hex(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn identity_version_keeps_its_documented_shape() {
    check_version("name: m\nversion: \"7\"\nfeatures: [{name: a, kind: sparse}]\n", "", |v| v == "7");
    check_version("name: m\nfeatures: [{name: a, kind: sparse}]\n", "", |v| hex(v, 16));
    check_version(VOCAB_MODEL, "10\n", |v| v.strip_prefix("3+files.").is_some_and(|h| hex(h, 8)));
    let unversioned = VOCAB_MODEL.replace("version: \"3\"\n", "");
    check_version(&unversioned, "10\n", |v| hex(v, 16));
}

#[test]
fn identity_changes_with_the_config_and_its_files() {
    let base = check_version(VOCAB_MODEL, "10\n", |_| true);
    assert_eq!(base, check_version(VOCAB_MODEL, "10\n", |_| true), "the same inputs, the same identity");
    let new_file = check_version(VOCAB_MODEL, "10\n11\n", |_| true);
    assert_ne!((base.digest, &base.version), (new_file.digest, &new_file.version));
    let new_text = check_version(&VOCAB_MODEL.replace("raw", "raw2"), "10\n", |_| true);
    assert_ne!(base.digest, new_text.digest);
    assert_eq!(base.version, new_text.version, "the declared version, the same files");
}

#[test]
fn select_errors_are_typed() {
    let plan = Plan::from_yaml("name: m\nfeatures: [{name: a, kind: sparse}, {name: b, kind: dense, output: false}]\n")
        .unwrap();
    let cases: &[(&[&str], SelectError, &str)] = &[
        (&["a", "a"], SelectError::Repeated { name: "a".into() }, r#"output "a" is asked for twice"#),
        (
            &["b"],
            SelectError::Unknown { model: "m".into(), name: "b".into(), known: vec!["a".into()] },
            r#"model "m" has no output "b"; it has a"#,
        ),
    ];
    for (names, error, text) in cases {
        let got = plan.select(names).unwrap_err();
        assert_eq!((&got, got.to_string().as_str()), (error, *text));
    }
    assert_eq!(plan.select(&["a"]).unwrap(), [0]);
}

/// Each config stage and the modules it must not import: the stages run
/// raw → check → compile → plan, and plan (with offline) is pure data.
#[test]
fn config_stages_import_one_way() {
    let cases: &[(&str, &[&str])] = &[
        ("plan.rs", &["super::", "config::raw", "config::check", "config::compile"]),
        ("names.rs", &["config::"]),
        // The compiled `offline:` section, pure data beside the plan.
        ("offline.rs", &["config::raw", "config::check", "config::compile"]),
        ("raw", &["check", "compile", "plan::"]),
        ("check", &["compile"]),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
    for (module, forbidden) in cases {
        for (file, text) in sources(&root.join(module)) {
            for line in text.lines().filter(|l| l.trim_start().starts_with("use ") || l.contains("::")) {
                let code = line.split("//").next().unwrap_or_default();
                if let Some(bad) = forbidden.iter().find(|f| code.contains(*f)) {
                    panic!("{file}: imports {bad:?}: {line}");
                }
            }
        }
    }
}

/// The Rust files of a module (a file, or a directory of them).
fn sources(path: &Path) -> Vec<(String, String)> {
    let files = match std::fs::read_dir(path) {
        Ok(dir) => dir.map(|e| e.unwrap().path()).collect(),
        Err(_) => vec![path.to_path_buf()],
    };
    files.into_iter().map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap())).collect()
}
