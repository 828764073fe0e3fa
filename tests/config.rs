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

/// Every bad fixture and every error it must report, in order: a fixture that
/// reports one error more or less fails too.
#[test]
fn bad_fixtures_report_every_error() {
    let cases: &[(&str, &[&str])] = &[
        (
            "bad_unknown_key.yaml",
            &[
                r#"features.ctr: unknown key "dtyp" for kind dense; allowed: name, kind, source, dtype, shape, default, shared, output"#,
            ],
        ),
        (
            "bad_unknown_op_key.yaml",
            &[
                r#"features.item_tags: unknown key "bukets" for op hash; allowed: name, op, input, buckets, num_buckets, need_prefix, value_dim, splits, separator, weighted, output"#,
                "features.item_tags.buckets: missing; give buckets (hashed) or num_buckets (the values are the ids)",
            ],
        ),
        (
            "bad_other_kinds_keys.yaml",
            &[
                r#"features.item_id: unknown key "shape" for kind sparse; allowed: name, kind, source, dtype, splits, shared, output"#,
                r#"features.item_id: unknown key "max_len" for kind sparse; allowed:"#,
            ],
        ),
        (
            "bad_unknown_kind.yaml",
            &[r#"features.item_tags.kind: unknown feature kind "sprase", expected one of sparse, dense"#],
        ),
        (
            "bad_kind_still_declared.yaml",
            &[
                r#"features.item_tags.kind: unknown feature kind "sprase""#,
                r#"features.tags_hashed.input: "item_tags" has errors, so this cannot be built"#,
                r#"features.crossed.inputs: unknown feature "missing_one""#,
            ],
        ),
        (
            "bad_types_everywhere.yaml",
            &[
                "limits.max_batch_size: invalid value: integer `-1`, expected u64",
                r#"features.a.shape: invalid type: string "two", expected i64"#,
                r#"features.h.buckets: invalid type: string "many", expected u64"#,
                r#"features.c.output: invalid type: string "maybe", expected a boolean"#,
                r#"compat: unknown mode "strict", expected native or monolith"#,
                "limits.max_output_bytes: found 0, must be positive",
                r#"features.b.splits: found "i16", expected i32 or i64"#,
                "features.s.max_len: found 0, allowed 1..=65536",
                r#"features.h.input: "b" has errors, so this cannot be built"#,
            ],
        ),
        ("bad_shape.yaml", &["features.emb.shape: found [4, 0], expected positive dimensions"]),
        ("bad_duplicate.yaml", &[r#"features.item_id: duplicate name "item_id", also defined at features[0]"#]),
        (
            "bad_many.yaml",
            &[
                r#"features.a.dtype: found "f16", expected one of f32, f64, i64"#,
                "features.b.max_len: missing; required for this kind",
                r#"features.c.field: unknown LineId field "not_a_field"; use one of uid, req_time"#,
                "features.d.default: explicit defaults need compat: native",
            ],
        ),
        (
            "bad_top_level.yaml",
            &[
                r#"model: unknown key "feature"; allowed: name, version, compat, limits, features"#,
                "features: missing; a model needs at least one feature",
            ],
        ),
        ("bad_reserved.yaml", &[r#"features.__LABEL__.name: "__LABEL__" is reserved; declare it with kind: label"#]),
        (
            "bad_line_id_number.yaml",
            &[
                "features.rank_x.type: missing; a field given by number needs its type",
                r#"features.kind_x.type: unknown type "int128", expected one of int32"#,
            ],
        ),
    ];
    for (file, expected) in cases {
        check(file, expected);
    }
}

/// Configs given inline: every error line, in order.
#[test]
fn inline_configs_report_every_error() {
    let cases: &[(&str, &[&str])] = &[
        ("[1, 2]", &["model: found no mapping; a config is a mapping with name and features"]),
        ("name: m\nfeatures: [3]", &["features[0]: found no mapping; a feature is {name, kind or op, ...}"]),
        ("name: m\nfeatures: [{kind: sparse}]", &["features[0].name: missing; every feature needs a name"]),
        ("name: m\nfeatures: [{name: a}]", &["features.a.kind: missing; give a kind (sparse, dense"]),
        (
            "name: m\nfeatures: [{name: a, kind: sparse, op: hash}]",
            &["features.a.kind: a feature has either a kind (read from the sample) or an op, not both"],
        ),
        ("name: m\nfeatures: [{name: a, kind: [x]}]", &["features.a.kind: found no string; expected one of sparse"]),
        (
            "name: m\nfeatures: [{name: y, kind: action_label, tasks: [{pos: [1], neg: x, rate: 2}]}]",
            &[
                r#"features.y.tasks[0]: unknown key "rate"; allowed: pos, neg, sample_rate"#,
                r#"features.y.tasks[0].neg: invalid type: string "x", expected a sequence"#,
            ],
        ),
        (
            "name: m\nfeatures: [{name: a, kind: sequence, max_len: 2, per_position: true}, {name: h, op: scale, input: a_1}]",
            &["features.h.factor: missing; required for op scale"],
        ),
        (
            // `expr`: every entry's errors at once, each with the entry's
            // path and the offset in its expression.
            "name: m\nfeatures:\n  - {name: x, kind: dense, output: false}\n  - {name: v, kind: dense, shape: [3], output: false}\n  - {name: ids, kind: sparse, output: false}\n  - {name: a, op: expr, inputs: [x], expression: \"ln(x\"}\n  - {name: b, op: expr, inputs: [x, v], expression: \"x + y\"}\n  - {name: c, op: expr, inputs: [x], expression: \"rnd() * x\"}\n  - {name: d, op: expr, inputs: [ids], expression: \"ids + 1\"}\n  - {name: e, op: expr, inputs: [x, v], dtype: i64}\n  - {name: f, op: expr, inputs: [v, x], expression: \"dot(v, x) + sin(x, x)\"}",
            &[
                r#"features.a.expression: at offset 4: the call of ln at offset 0 is not closed in "ln(x""#,
                r#"features.b.expression: at offset 4: unknown name "y"; the inputs are ["x", "v"] in "x + y""#,
                r#"features.c.expression: at offset 0: rnd is random: a feature must be the same online, offline and near-line in "rnd() * x""#,
                r#"features.d.input: op expr takes a dense tensor or a float sequence (f32, f64); "ids" is LAYOUT_RAGGED DATA_TYPE_I64"#,
                "features.e.dtype: ",
                "features.e.expression: missing; write the expression over the inputs' names",
                r#"features.f.expression: at offset 0: dot of vectors of different widths [3, 1] in "dot(v, x) + sin(x, x)""#,
            ],
        ),
        (
            // `expr` per position (issue 36) takes float sequences only: an
            // id sequence, read or made (a bucketized one), is refused
            // beside a float one too, each input named; two sequences
            // follow the width rules of two vectors.
            "name: m\nfeatures:\n  - {name: p, kind: sequence, dtype: f32, max_len: 2, width: 2, output: false}\n  - {name: d, kind: sequence, dtype: f64, max_len: 2, width: 3, output: false}\n  - {name: cids, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: b, op: bucketize, input: p, boundaries: [1], output: false}\n  - {name: a, op: expr, inputs: [cids], expression: \"cids + 1\"}\n  - {name: mix, op: expr, inputs: [p, cids, b], expression: \"p + cids + b\"}\n  - {name: w, op: expr, inputs: [p, d], expression: \"p * d\"}\n  - {name: r, op: expr, inputs: [p, d], expression: \"dot(p, d)\"}",
            &[
                r#"features.a.input: op expr takes a dense tensor or a float sequence (f32, f64); "cids" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.mix.input: op expr takes a dense tensor or a float sequence (f32, f64); "cids" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.mix.input: op expr takes a dense tensor or a float sequence (f32, f64); "b" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.w.expression: at offset 2: * on vectors of different widths [2, 3] in "p * d""#,
                r#"features.r.expression: at offset 0: dot of vectors of different widths [2, 3] in "dot(p, d)""#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: kv, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: a, op: lookup, inputs: [kv, k], combiner: median}\n  - {name: b, op: lookup, inputs: [x, k]}\n  - {name: c, op: lookup, inputs: [kv, k], need_discrete: true, combiner: sum}\n  - {name: d, op: lookup, inputs: [kv, k, x]}\n  - {name: e, op: lookup, inputs: [kv, x], buckets: 10, separator: ''}",
            &[
                r#"features.a.combiner: found "median", expected sum, mean, min or max"#,
                r#"features.b.inputs: the map "x" must be a string feature (key:value entries)"#,
                "features.c.combiner: is for numbers; need_discrete: true hashes the values found",
                "features.c.buckets: missing; required for this op",
                "features.d.inputs: op lookup takes [map, key], found 3 inputs",
                "features.e.separator: is empty; give the keys' separator (default \\x1d)",
                "features.e.buckets: is for need_discrete: true (hashed values)",
                r#"features.e.input: op lookup takes ragged ids, strings or an id sequence; "x" is LAYOUT_DENSE DATA_TYPE_F32"#,
            ],
        ),
        (
            // A lookup's map as parallel lists: each list must be one (a
            // string kind joined with the separator, ids, or numbers), the
            // map given one way, float values not hashed; every error at once.
            "name: m\nfeatures:\n  - {name: kv, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n  - {name: jk, kind: string, join: \"\\x1d\", output: false}\n  - {name: comma, kind: string, join: ',', output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: nums, kind: list, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: bad_list, kind: list, dtype: u64, output: false}\n  - {name: a, op: lookup, inputs: [k], map_keys: k, map_values: nums}\n  - {name: b, op: lookup, inputs: [k], map_keys: comma, map_values: nums}\n  - {name: c, op: lookup, inputs: [k], map_keys: jk, map_values: x}\n  - {name: d, op: lookup, inputs: [kv, k], map_keys: jk, map_values: nums}\n  - {name: e, op: lookup, inputs: [k], map_keys: jk}\n  - {name: f, op: lookup, inputs: [k], map_keys: jk, map_values: nums, need_discrete: true, buckets: 9}\n  - {name: g, op: lookup, inputs: [k], map_keys: nums, map_values: s}\n  - {name: h, op: lookup, inputs: [k], map_keys: jk, map_values: nope}",
            &[
                r#"features.bad_list.dtype: found "u64", expected one of f32, f64, i64"#,
                r#"features.a.map_keys: "k" reads bytes_list[0] only; give it join: "\u{1d}" (the lookup's separator) to read each element"#,
                r#"features.b.map_keys: "comma" joins its elements with ",", the lookup's separator is "\u{1d}": make them the same"#,
                r#"features.c.map_values: takes a list: strings, or ragged DATA_TYPE_I64, DATA_TYPE_U64, DATA_TYPE_I32, DATA_TYPE_F32, DATA_TYPE_F64; "x" is LAYOUT_DENSE DATA_TYPE_F32"#,
                "features.d.inputs: gives a map ([map, key]) and map_keys, map_values too",
                "features.e.map_values: missing; a map given as lists names both map_keys and map_values",
                r#"features.f.map_values: "nums" holds floats, and need_discrete hashes each value's text"#,
                r#"features.g.map_keys: takes a list: strings, or ragged DATA_TYPE_I64, DATA_TYPE_U64; "nums" is LAYOUT_RAGGED DATA_TYPE_F32"#,
                r#"features.g.map_values: takes a list: strings, or ragged DATA_TYPE_I64, DATA_TYPE_U64, DATA_TYPE_I32, DATA_TYPE_F32, DATA_TYPE_F64; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.h.inputs: unknown feature "nope""#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: kkv, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n  - {name: a, op: match, inputs: [kkv, ALL, ALL]}\n  - {name: b, op: match, inputs: [kkv, k]}\n  - {name: c, op: match, inputs: [k, k, ALL], need_discrete: true, buckets: 0}\n  - {name: d, op: match, inputs: [kkv, k, nope]}",
            &[
                r#"features.a.inputs: op match takes [map, primary key, secondary key], one key at most ALL; found ["kkv", "ALL", "ALL"]"#,
                r#"features.b.inputs: op match takes [map, primary key, secondary key], one key at most ALL; found ["kkv", "k"]"#,
                "features.c.buckets: ",
                r#"features.d.inputs: unknown feature "nope""#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: t, kind: string, output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: h, op: hash, input: t, buckets: 9, separator: ''}\n  - {name: a, op: regex_replace, input: t, pattern: \"a(b\"}\n  - {name: b, op: regex_replace, input: t}\n  - {name: c, op: slice, input: t}\n  - {name: d, op: slice, input: x, start: 1}\n  - {name: e, op: split, input: t, separator: ''}\n  - {name: f, op: split, input: t, index: 1.5}\n  - {name: g, op: split, input: x, separator: ''}",
            &[
                // Read before the checks: a key of the wrong type.
                "features.f.index: invalid type: floating point `1.5`, expected i64",
                "features.h.separator: is empty; give the string that splits the values (FG's is \\x1d)",
                "features.a.pattern: error: unclosed group",
                "features.b.pattern: missing; give the regular expression to replace",
                "features.c.start: give start, end or both (characters; negative from the end)",
                r#"features.d.input: takes one string feature; found "x" (LAYOUT_DENSE)"#,
                "features.e.separator: is empty; give the string to split at (default \\x1d)",
                "features.e.index: missing; give the part to keep (0 is the first; negative counts from the end)",
                "features.g.separator: is empty; give the string to split at (default \\x1d)",
                "features.g.index: missing; give the part to keep (0 is the first; negative counts from the end)",
                r#"features.g.input: takes one string feature; found "x" (LAYOUT_DENSE)"#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: q, kind: string, output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: a, op: overlap, inputs: [q, q]}\n  - {name: b, op: overlap, inputs: [q, q], method: jaccard, default: .nan}\n  - {name: c, op: overlap, inputs: [q], method: is_equal}\n  - {name: d, op: overlap, inputs: [q, x], method: is_contain, separator: ''}\n  - {name: e, op: overlap, inputs: [q, q], method: proximity_avg_dist, default: 0}",
            &[
                "features.a.method: missing; give one of query_common_ratio, title_common_ratio, is_contain, is_equal",
                r#"features.b.method: found "jaccard", expected one of query_common_ratio, title_common_ratio, is_contain, is_equal"#,
                "features.b.default: found NaN, expected a finite number",
                "features.c.inputs: op overlap takes [query, title], found 1 inputs",
                "features.d.separator: is empty; give the terms' separator (default \\x1d)",
                r#"features.d.input: op overlap takes ragged ids or strings; "x" is LAYOUT_DENSE DATA_TYPE_F32"#,
                "features.e.default: is not used by the proximity distances: a row without a matched term (an empty query or title too) gives the title's length plus 1, FG's \"no matched term\"",
            ],
        ),
        (
            // `bm25`: its constants, its file (read once, every bad line
            // named by path and line) and its inputs, all reported at once.
            "name: m\nfeatures:\n  - {name: q, kind: string, output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: a, op: bm25, inputs: [q, q]}\n  - {name: b, op: bm25, inputs: [q, q], file: tests/fixtures/bm25/title_df.tsv, documents: 2, avg_len: 0, k1: -1, b: 1.5}\n  - {name: c, op: bm25, inputs: [q, x], file: nope.tsv, documents: 9, avg_len: .nan, separator: ''}\n  - {name: d, op: bm25, inputs: [q], file: tests/fixtures/bm25/title_df.tsv, documents: 10, avg_len: 3}",
            &[
                "features.a.avg_len: missing; required for op bm25",
                "features.a.documents: missing; required for this op",
                "features.a.file: missing; name the file of document frequencies (term, tab, count)",
                "features.b.k1: found -1, allowed 0 <= k1 <= 1000",
                "features.b.b: found 1.5, allowed 0 <= b <= 1",
                "features.b.avg_len: found 0, expected the titles' average term count (at least 0.001)",
                "features.b.file: ./tests/fixtures/bm25/title_df.tsv:2: found the count 5, more than documents (2)",
                "features.c.separator: is empty; give the terms' separator (default \\x1d)",
                "features.c.avg_len: found NaN, expected a finite number",
                "features.c.file: cannot read ./nope.tsv: No such file or directory (os error 2)",
                r#"features.c.input: op bm25 takes ragged ids or strings; "x" is LAYOUT_DENSE DATA_TYPE_F32"#,
                "features.d.inputs: op bm25 takes [query, title], found 1 inputs",
            ],
        ),
        (
            // Id-to-id operators take an id sequence position by position;
            // a float sequence, or hashing parts of strings, is no id sequence.
            "name: m\nfeatures:\n  - {name: f, kind: sequence, dtype: f32, max_len: 2, width: 1, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: a, op: hash, input: f, buckets: 9}\n  - {name: b, op: hash, input: s, buckets: 9, separator: ','}\n  - {name: c, op: filter_slots, input: s, slots: [1]}",
            &[
                r#"features.a.input: op hash takes ragged ids, strings or an id sequence; "f" is LAYOUT_RAGGED DATA_TYPE_F32, a sequence"#,
                r#"features.b.input: op hash takes ragged ids or strings; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.c.input: op filter_slots takes ragged ids; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
            ],
        ),
        (
            // A lookup or match per position gives numbers; hashed values
            // per position would not keep the positions' width.
            "name: m\nfeatures:\n  - {name: kv, kind: string, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: a, op: lookup, inputs: [kv, s], need_discrete: true, buckets: 9}\n  - {name: b, op: match, inputs: [kv, s, s], need_discrete: true, buckets: 9}",
            &[
                r#"features.a.input: op lookup takes ragged ids or strings; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.b.input: op match takes ragged ids or strings; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                r#"features.b.input: op match takes ragged ids or strings; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: ids, kind: sparse, output: false}\n  - {name: t, kind: string, output: false}\n  - {name: a, op: hash, input: ids, buckets: 9, weighted: true}\n  - {name: b, op: hash, input: t, weighted: true, separator: ''}",
            &[
                r#"features.a.input: takes one string feature; found "ids" (LAYOUT_RAGGED)"#,
                "features.b.buckets: missing; give buckets (hashed) or num_buckets (the values are the ids)",
                "features.b.separator: is empty; give the string between key:weight parts (FG's is \\x1d)",
            ],
        ),
        (
            // FG's id_feature options on hash: buckets (hashed, need_prefix
            // allowed) or num_buckets (the values are the ids), exactly one;
            // num_buckets drops ids, so no sequence (a position keeps its
            // width).
            "name: m\nfeatures:\n  - {name: t, kind: string, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: a, op: hash, input: t, buckets: 9, num_buckets: 9}\n  - {name: b, op: hash, input: t, num_buckets: 0, need_prefix: true}\n  - {name: c, op: hash, input: t, need_prefix: true}\n  - {name: d, op: hash, input: s, num_buckets: 9}\n  - {name: e, op: hash, input: t, num_buckets: 9, weighted: true, need_prefix: true}\n  - {name: f, op: hash, input: s, buckets: 9, value_dim: 1}\n  - {name: g, op: hash, input: t, buckets: 9, value_dim: 4097}",
            &[
                "features.a.num_buckets: give buckets (hashed) or num_buckets (the values are the ids), not both",
                "features.b.need_prefix: is for hashed ids (buckets); num_buckets takes the values as they are",
                "features.b.num_buckets: found 0, allowed 1..=18446744073709551615",
                "features.c.buckets: missing; give buckets (hashed) or num_buckets (the values are the ids)",
                r#"features.d.input: op hash takes ragged ids or strings; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                "features.e.need_prefix: is for hashed ids (buckets); num_buckets takes the values as they are",
                r#"features.f.input: op hash takes ragged ids or strings; "s" is LAYOUT_RAGGED DATA_TYPE_I64, a sequence"#,
                "features.g.value_dim: found 4097, allowed 0..=4096",
            ],
        ),
        (
            // lookup's need_key and match's show_pkey / show_skey give ids;
            // value_dim is for numbers, at most 4096, and not per position.
            "name: m\nfeatures:\n  - {name: kv, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: a, op: lookup, inputs: [kv, k], need_key: true}\n  - {name: b, op: lookup, inputs: [kv, k], need_discrete: true, buckets: 9, value_dim: 2}\n  - {name: c, op: lookup, inputs: [kv, k], value_dim: 0}\n  - {name: d, op: lookup, inputs: [kv, k], value_dim: 5000, need_key: false}\n  - {name: e, op: lookup, inputs: [kv, s], value_dim: 2}\n  - {name: f, op: match, inputs: [kv, k, ALL], show_pkey: true, show_skey: true}\n  - {name: g, op: lookup, inputs: [kv, s], value_dim: 1}",
            &[
                "features.a.need_key: gives ids (FG's key_value strings, hashed): set need_discrete: true and buckets",
                "features.b.value_dim: is for numbers; need_discrete: true gives every value found as an id (FG's value_dim 0)",
                "features.c.value_dim: found 0, allowed 1..=4096",
                "features.d.value_dim: found 5000, allowed 1..=4096",
                "features.e.value_dim: is for ragged or string keys; per position of a sequence a lookup gives one number",
                "features.f.show_pkey: gives ids (FG's key_value strings, hashed): set need_discrete: true and buckets",
                "features.f.show_skey: gives ids (FG's key_value strings, hashed): set need_discrete: true and buckets",
            ],
        ),
        (
            // match's value_dim: FG's match_feature takes 1 only for numbers
            // (TorchEasyRec docs/source/feature/feature.md, "MatchFeature":
            // "目前只支持value_dim=1"), and `,` already ends a value in its
            // map, so fex refuses the rest; with need_discrete, lookup's
            // message. A float sequence is no key, per position or not. Every
            // error of the file at once.
            "name: m\nfeatures:\n  - {name: kkv, kind: string, output: false}\n  - {name: k, kind: string, output: false}\n  - {name: s, kind: sequence, dtype: i64, max_len: 2, width: 1, output: false}\n  - {name: f, kind: sequence, dtype: f32, max_len: 2, width: 1, output: false}\n  - {name: a, op: match, inputs: [kkv, k, k], value_dim: 2}\n  - {name: b, op: match, inputs: [kkv, s, ALL], value_dim: 0}\n  - {name: c, op: match, inputs: [kkv, k, k], need_discrete: true, buckets: 9, value_dim: 1}\n  - {name: d, op: match, inputs: [kkv, s, k], value_dim: 1}\n  - {name: e, op: match, inputs: [kkv, ALL, f], combiner: median}",
            &[
                "features.a.value_dim: found 2, allowed 1: a match value is one number (FG's match_feature takes value_dim 1 only, and in its map `pk^sk:v,sk:v` a `,` ends the value, so `1,2` is no vector); use lookup for vectors",
                "features.b.value_dim: found 0, allowed 1: a match value is one number",
                "features.c.value_dim: is for numbers; need_discrete: true gives every value found as an id (FG's value_dim 0)",
                r#"features.e.combiner: found "median", expected sum, mean, min or max"#,
                r#"features.e.input: op match takes ragged ids, strings or an id sequence; "f" is LAYOUT_RAGGED DATA_TYPE_F32, a sequence"#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: q, kind: string, output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: a, op: kv_dot, inputs: [q]}\n  - {name: b, op: kv_dot, inputs: [q, q], separator: '|', kv_delimiter: '|'}\n  - {name: c, op: kv_dot, inputs: [q, x], kv_delimiter: '::'}",
            &[
                "features.a.inputs: op kv_dot takes [query, document], found 1 inputs",
                r#"features.b.kv_delimiter: found "|", expected one character that is not in the separator"#,
                r#"features.c.kv_delimiter: found "::", expected one character that is not in the separator"#,
                r#"features.c.input: op kv_dot takes ragged ids or strings; "x" is LAYOUT_DENSE DATA_TYPE_F32"#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: v, kind: string, output: false}\n  - {name: x, kind: dense, output: false}\n  - {name: a, op: bool_mask, inputs: [v, v]}\n  - {name: b, op: bool_mask, inputs: [v]}\n  - {name: c, op: bool_mask, inputs: [v, x], buckets: 0}",
            &[
                "features.a.buckets: missing; string values are hashed into buckets",
                "features.b.inputs: op bool_mask takes [values, mask], found 1 inputs",
                "features.c.buckets: found 0, expected at least 1",
                r#"features.c.input: op bool_mask takes ragged ids or strings; "x" is LAYOUT_DENSE DATA_TYPE_F32"#,
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: t, kind: string, output: false}\n  - {name: ids, kind: sparse, output: false}\n  - {name: a, op: tokenize, input: t}\n  - {name: b, op: tokenize, input: t, file: nope.json}\n  - {name: c, op: tokenize, input: ids, file: tests/fixtures/vocab/item_ids.txt}",
            &[
                "features.a.file: missing; name the tokenizer.json file",
                "features.b.file: cannot read ",
                "tests/fixtures/vocab/item_ids.txt is not a tokenizer.json: invalid type",
                r#"features.c.input: takes one string feature; found "ids" (LAYOUT_RAGGED)"#,
            ],
        ),
        (
            // FG's tokenizer_type (TorchEasyRec docs/source/feature/feature.md,
            // "TokenizeFeature": bpe or sentencepiece); a file of the other
            // type is refused with the type it needs.
            "name: m\nfeatures:\n  - {name: t, kind: string, output: false}\n  - {name: a, op: tokenize, input: t, tokenizer_type: sentencepiece}\n  - {name: b, op: tokenize, input: t, tokenizer_type: wordpiece, file: tests/fixtures/tokenizer/bpe.json}\n  - {name: c, op: tokenize, input: t, tokenizer_type: sentencepiece, file: tests/fixtures/tokenizer/bpe.json}\n  - {name: d, op: tokenize, input: t, file: tests/fixtures/tokenizer/unigram.model}\n  - {name: e, op: tokenize, input: t, tokenizer_type: sentencepiece, file: tests/fixtures/vocab/item_ids.txt}",
            &[
                "features.a.file: missing; name the sentencepiece .model file",
                r#"features.b.tokenizer_type: unknown tokenizer type "wordpiece"; expected bpe or sentencepiece"#,
                "tests/fixtures/tokenizer/bpe.json is not a sentencepiece model: sentencepiece error: Internal error (a tokenizer.json needs tokenizer_type: bpe)",
                "tests/fixtures/tokenizer/unigram.model is not a tokenizer.json: expected value at line 2 column 1 (a sentencepiece .model file needs tokenizer_type: sentencepiece)",
                "tests/fixtures/vocab/item_ids.txt is not a sentencepiece model: ",
            ],
        ),
        (
            "name: m\nfeatures:\n  - {name: t, kind: string, output: false}\n  - {name: a, op: normalize_text, input: t}\n  - {name: b, op: normalize_text, input: t, options: [TEXT_CHT2CHS, TEXT_LOWER2UPPER, TEXT_UPPER2LOWER, TEXT_SBC2DBC, TEXT_SBC2DBC, TEXT_NOPE]}\n  - {name: c, op: normalize_text, input: t, options: [TEXT_FILTER, TEXT_SPLITCHRS, TEXT_REMOVE_SPACE], max_length: 0}\n  - {name: d, op: normalize_text, input: t, options: [TEXT_SBC2DBC], stop_chars: x.txt}",
            &[
                "features.a.options: missing; give some of TEXT_LOWER2UPPER, TEXT_UPPER2LOWER, TEXT_SBC2DBC, TEXT_CHT2CHS, TEXT_FILTER, TEXT_REMOVE_SPACE, TEXT_SPLITCHRS",
                "features.b.options[2]: TEXT_LOWER2UPPER and TEXT_UPPER2LOWER undo each other; give one",
                "features.b.options[4]: TEXT_SBC2DBC is given twice",
                r#"features.b.options[5]: found "TEXT_NOPE", expected one of "#,
                "features.c.options: TEXT_SPLITCHRS puts spaces that TEXT_REMOVE_SPACE takes out; give one",
                "features.c.stop_chars: missing; TEXT_FILTER removes the characters of this file",
                "features.c.max_length: found 0, expected at least 1 (characters kept)",
                "features.d.stop_chars: is for TEXT_FILTER",
            ],
        ),
        (
            "name: m\ncompat: monolith\nfeatures:\n  - {name: s, kind: string, join: ','}",
            &["features.s.join: is fex's own (Monolith reads bytes_list[0] only); use compat: native"],
        ),
        (
            "name: m\ncompat: monolith\nfeatures:\n  - {name: l, kind: list}",
            &["features.l.kind: list is fex's own (Monolith has no such feature); use compat: native"],
        ),
    ];
    for (text, expected) in cases {
        let errors: Vec<String> = match Plan::from_yaml(text) {
            Ok(_) => panic!("{text} should fail validation"),
            Err(e) => e.0.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(errors.len(), expected.len(), "{text}: {errors:#?}");
        for (got, want) in errors.iter().zip(*expected) {
            assert!(got.contains(want), "{text}:\n  got  {got}\n  want {want}");
        }
    }
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
