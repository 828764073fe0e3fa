//! Model config fixtures: every bad file must fail with precise messages
//! (path, what was found, what is allowed); good files must compile.

use fex::Plan;

/// Validates `tests/fixtures/config/<file>` and returns every error line.
fn errors_of(file: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/config/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    match Plan::from_yaml(&text) {
        Ok(_) => panic!("{file} should fail validation"),
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    }
}

fn check(file: &str, expected: &[&str]) {
    let errors = errors_of(file);
    assert_eq!(errors.len(), expected.len(), "{file}: {errors:#?}");
    for (got, want) in errors.iter().zip(expected) {
        assert!(got.contains(want), "{file}:\n  got  {got}\n  want {want}");
    }
}

#[test]
fn unknown_key_names_the_key_and_the_allowed_ones() {
    check("bad_unknown_key.yaml", &["features.ctr: unknown field `dtyp`, expected one of"]);
}

#[test]
fn unknown_kind_lists_the_kinds() {
    check(
        "bad_unknown_kind.yaml",
        &[r#"features.item_tags.kind: unknown feature kind "sprase", expected one of sparse, dense"#],
    );
}

#[test]
fn bad_shape() {
    check("bad_shape.yaml", &["features.emb.shape: found [4, 0], expected positive dimensions"]);
}

#[test]
fn duplicate_name() {
    check("bad_duplicate.yaml", &[r#"features.item_id: duplicate name "item_id", also defined at features[0]"#]);
}

#[test]
fn every_error_is_reported_at_once() {
    check(
        "bad_many.yaml",
        &[
            r#"features.a.dtype: found "f16", expected one of f32, f64, i64"#,
            "features.b.max_len: missing; required for this kind",
            r#"features.c.field: unknown LineId field "not_a_field"; use one of uid, req_time"#,
            "features.d.default: explicit defaults need compat: native",
        ],
    );
}

#[test]
fn unknown_top_level_key() {
    check("bad_top_level.yaml", &["model: unknown field `feature`, expected one of"]);
}

#[test]
fn reserved_names_point_to_their_kind() {
    check("bad_reserved.yaml", &[r#"features.__LABEL__.name: "__LABEL__" is reserved; declare it with kind: label"#]);
}

#[test]
fn line_id_fields_by_number_need_a_known_type() {
    check(
        "bad_line_id_number.yaml",
        &[
            "features.rank_x.type: missing; a field given by number needs its type",
            r#"features.kind_x.type: unknown type "int128", expected one of int32"#,
        ],
    );
}

#[test]
fn keys_of_other_kinds_are_rejected() {
    check(
        "bad_not_allowed.yaml",
        &[
            "features.item_id.shape: not allowed for kind sparse",
            "features.item_id.max_len: not allowed for kind sparse",
        ],
    );
}

#[test]
fn errors_render_as_one_report() {
    let text =
        std::fs::read_to_string(format!("{}/tests/fixtures/config/bad_many.yaml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let report = Plan::from_yaml(&text).unwrap_err().to_string();
    assert!(report.starts_with("4 errors in model config\n  features.a.dtype"), "{report}");
}

#[test]
fn shipped_models_are_valid() {
    let dir = format!("{}/models", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        Plan::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen += 1;
    }
    assert!(seen >= 2);
}

#[test]
fn default_model_signature() {
    let plan = Plan::default_model();
    assert_eq!(plan.name, "default");
    let spec = plan.signature();
    let user_id = spec.iter().find(|s| s.name == "user_id").unwrap();
    assert!(user_id.shared_once);
    assert_eq!(user_id.shape, [-1, -1]);
    let emb = spec.iter().find(|s| s.name == "item_embedding").unwrap();
    assert_eq!(emb.shape, [-1, 16]);
    assert_eq!(emb.dtype, fex::DataType::F32 as i32);
    let title = spec.iter().find(|s| s.name == "item_title").unwrap();
    assert_eq!(title.layout, fex::Layout::Strings as i32);
}

#[test]
fn line_id_fields_resolve_by_name_or_number() {
    let plan = Plan::from_yaml(
        "name: m\nfeatures:\n  - {name: a, kind: line_id, field: sample_rate}\n  - {name: b, kind: line_id, field: 300, type: sint64, shape: [2]}\n",
    )
    .unwrap();
    let fex::config::Op::LineId { field, dim } = &plan.outputs[0].op else { panic!() };
    assert_eq!((field.number, field.default, *dim), (27, 1.0, 1));
    let fex::config::Op::LineId { field, dim } = &plan.outputs[1].op else { panic!() };
    assert_eq!((field.number, field.repeated, *dim), (300, true, 2));
}
