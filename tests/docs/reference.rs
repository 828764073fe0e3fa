//! The model-config reference cannot drift from the loader: the kinds,
//! operators, transforms and keys are asked of the loader itself (its
//! "unknown key ...; allowed: ..." and "expected one of ..." messages come
//! from the structs it reads into), and each must be on its page, in its row;
//! each kind, operator and transform a page's table names must be accepted.

use fex::Plan;

const REFERENCE: &str = include_str!("../../docs/src/configs/reference.md");
const TRANSFORMS: &str = include_str!("../../docs/src/training/transforms.md");
const MODEL_SERVER: &str = include_str!("../../docs/src/calling/model-server.md");

/// The loader's message for `yaml`, which must fail.
fn errors(yaml: &str) -> String {
    match Plan::from_yaml(yaml) {
        Ok(_) => panic!("loaded:\n{yaml}"),
        Err(e) => e.to_string(),
    }
}

/// The comma-separated list after `marker` on the message's line that has it.
fn list_after(message: &str, marker: &str) -> Vec<String> {
    let line = message.lines().find(|l| l.contains(marker)).unwrap_or_else(|| panic!("no {marker:?} in:\n{message}"));
    let list = &line[line.find(marker).unwrap() + marker.len()..];
    list.split(',').map(|k| k.trim().to_string()).filter(|k| !k.is_empty()).collect()
}

/// The keys the loader takes where `key_path` is: a bogus key is put there.
fn allowed(yaml_with_bogus: &str) -> Vec<String> {
    list_after(&errors(yaml_with_bogus), "allowed: ")
}

fn model(features: &str, rest: &str) -> String {
    format!("name: t\nfeatures:\n{features}\n{rest}")
}

const A_FEATURE: &str = "  - {name: a, kind: sparse}";

/// The kinds, operators or transforms the loader names after "expected one of".
fn names(yaml: &str) -> Vec<String> {
    list_after(&errors(yaml), "expected one of ")
}

/// Table rows of a page by the name in their first cell: `| `x` |` or
/// `| `x`, `y` |`.
fn row<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    page.lines().find(|l| {
        l.strip_prefix("| ")
            .and_then(|l| l.split(" | ").next())
            .is_some_and(|cell| cell.split(", ").any(|c| c.split(' ').next() == Some(&format!("`{name}`"))))
    })
}

/// Whether `text` names `key` in backticks: `key`, `key: ...` or `key (`.
fn names_key(text: &str, key: &str) -> bool {
    let quoted = format!("`{key}");
    text.match_indices(&quoted).any(|(i, _)| matches!(text.as_bytes().get(i + quoted.len()), Some(b'`' | b':' | b' ')))
}

/// Every name in the first column of the table whose header starts `| head |`.
fn first_column(page: &str, head: &str) -> Vec<String> {
    let header = format!("| {head} |");
    let start = page.find(&header).unwrap_or_else(|| panic!("no table {header}"));
    let rows = page[start..].lines().skip(2).take_while(|l| l.starts_with('|'));
    let cells = rows.map(|l| l.split(" | ").next().unwrap().trim_start_matches("| ").to_string());
    cells
        .flat_map(|c| {
            c.split(", ").map(|n| n.split(' ').next().unwrap().trim_matches('`').to_string()).collect::<Vec<_>>()
        })
        .collect()
}

/// For each name, its keys (less the ones every entry has) must be in its
/// row of `page`.
fn check_rows(page: &str, what: &str, entries: &[(String, Vec<String>)], common: &[&str]) -> Vec<String> {
    let mut missing = Vec::new();
    for (name, keys) in entries {
        let Some(row) = row(page, name) else {
            missing.push(format!("{what} {name}: no row"));
            continue;
        };
        for key in keys.iter().filter(|k| !common.contains(&k.as_str())) {
            if !names_key(row, key) {
                missing.push(format!("{what} {name}: key {key}"));
            }
        }
    }
    missing
}

#[test]
fn every_kind_and_its_keys_are_in_the_reference() {
    let kinds = names(&model("  - {name: a, kind: zzz}", ""));
    let entries: Vec<(String, Vec<String>)> = kinds
        .iter()
        .map(|k| (k.clone(), allowed(&model(&format!("  - {{name: a, kind: {k}, zzz: 1}}"), ""))))
        .collect();
    let mut missing = check_rows(REFERENCE, "kind", &entries, &["name", "kind", "output"]);
    let tasks = allowed(&model("  - {name: a, kind: action_label, tasks: [{pos: [1], zzz: 1}]}", ""));
    let row = row(REFERENCE, "action_label").unwrap_or("");
    missing.extend(tasks.iter().filter(|k| !names_key(row, k)).map(|k| format!("task key {k}")));
    assert!(missing.is_empty(), "docs/src/configs/reference.md lacks: {missing:?}");
    assert_eq!(first_column(REFERENCE, "kind"), kinds, "the kinds table names other kinds than the loader takes");
}

#[test]
fn every_operator_and_its_keys_are_in_the_reference() {
    let ops = names(&model(&format!("{A_FEATURE}\n  - {{name: b, op: zzz, input: a}}"), ""));
    let entries: Vec<(String, Vec<String>)> = ops
        .iter()
        .map(|o| (o.clone(), allowed(&model(&format!("{A_FEATURE}\n  - {{name: b, op: {o}, zzz: 1}}"), ""))))
        .collect();
    let missing = check_rows(REFERENCE, "op", &entries, &["name", "op", "output"]);
    assert!(missing.is_empty(), "docs/src/configs/reference.md lacks: {missing:?}");
    let (mut listed, mut ops) = (first_column(REFERENCE, "op"), ops);
    listed.sort();
    ops.sort();
    assert_eq!(listed, ops, "the operators table names other operators than the loader takes");
}

#[test]
fn the_model_and_feature_keys_are_in_the_reference() {
    let mut keys = allowed(&model(A_FEATURE, "zzz: 1"));
    keys.extend(allowed(&model(A_FEATURE, "limits: {zzz: 1}")));
    keys.extend(["name", "kind", "op", "output"].map(String::from));
    let missing: Vec<&String> = keys.iter().filter(|k| !names_key(REFERENCE, k)).collect();
    assert!(missing.is_empty(), "docs/src/configs/reference.md lacks the keys {missing:?}");
}

#[test]
fn every_transform_and_its_keys_are_on_the_transforms_page() {
    let transforms = names(&model(A_FEATURE, "offline: {transforms: [{transform: zzz}]}"));
    let entries: Vec<(String, Vec<String>)> = transforms
        .iter()
        .map(|t| {
            (t.clone(), allowed(&model(A_FEATURE, &format!("offline: {{transforms: [{{transform: {t}, zzz: 1}}]}}"))))
        })
        .collect();
    let mut missing = check_rows(TRANSFORMS, "transform", &entries, &["transform"]);
    let section = allowed(&model(A_FEATURE, "offline: {zzz: 1}"));
    missing.extend(section.iter().filter(|k| !names_key(TRANSFORMS, k)).map(|k| format!("offline key {k}")));
    assert!(missing.is_empty(), "docs/src/training/transforms.md lacks: {missing:?}");
    let mut listed = first_column(TRANSFORMS, "transform");
    let mut accepted = transforms.clone();
    listed.sort();
    accepted.sort();
    assert_eq!(listed, accepted, "the transforms table names other transforms than the loader takes");
}

#[test]
fn the_upstream_keys_are_on_the_model_server_page() {
    let mut keys = allowed(&model(A_FEATURE, "upstream: {zzz: 1}"));
    keys.extend(allowed(&model(A_FEATURE, "upstream: {address: 'https://h:1', model: m, tls: {zzz: 1}}")));
    keys.extend(allowed(&model(A_FEATURE, "upstream: {address: 'http://h:1', model: m, inputs: [{zzz: 1}]}")));
    let start = MODEL_SERVER.find("| key | meaning |").expect("the upstream keys table");
    let table: String = MODEL_SERVER[start..].lines().take_while(|l| l.starts_with('|')).collect();
    let missing: Vec<&String> = keys.iter().filter(|k| !names_key(&table, k)).collect();
    assert!(missing.is_empty(), "the upstream: keys table of docs/src/calling/model-server.md lacks {missing:?}");
}
