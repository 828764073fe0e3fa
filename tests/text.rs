//! The text readers beyond the golden cases (tests/text_corpus): deepx
//! config errors, where each line error points, the line source's edges
//! (CRLF, no final newline, I/O failure, long lines), and Criteo: parsing,
//! the dense rule, the fit pass and its vocabulary files through the same
//! `Vocab` loader the model's `vocab` operator uses, the KeyedJaggedTensor
//! layout and the multi-hot worked example of seed 004, the day split.

use std::io::{Cursor, Read};

use fex::columns::{Column, KeyedJagged, NamedColumn};
use fex::text::criteo::{self, CriteoReader, Fit, FitOptions, RawRow};
use fex::text::deepx::{self, ConfigError, DeepxConfig, Format, LastBatch, ReadOptions};
use fex::text::{OnError, TextErrorKind};
use fex::{DataType, Values};

fn config(format: &str, text: &str) -> Result<DeepxConfig, ConfigError> {
    DeepxConfig::parse(Format::parse(format)?, text)
}

#[test]
fn config_defaults_and_required_keys_are_deepxs() {
    // instance_reader_impl.h:27-30; libsvm_ex_instance_reader.cc:35-41;
    // uch_instance_reader.cc:39-45.
    let c = config("libsvm", "").unwrap();
    assert_eq!((c.batch, c.label_size, c.w, c.uuid, c.groups), (32, 1, false, false, 1));
    let c = config("libsvm_ex", "batch=64;label_size=2;w=1;uuid=0;x_size=2").unwrap();
    assert_eq!((c.batch, c.label_size, c.w, c.uuid, c.groups), (64, 2, true, false, 2));
    let c = config("uch", "batch=32;label_size=1;w=0;uuid=0;x_hist_item_size=20").unwrap();
    assert_eq!((c.groups, c.w), (20, false));
    for alias in ["hist_item_size", "history_item_size"] {
        assert_eq!(config("uch", &format!("{alias}=3")).unwrap().groups, 3);
    }
    assert_eq!(config("LibsvmInstanceReader", "batch=1").unwrap().format, Format::Libsvm);
    // Blanks around a value are std::stoi's to skip (instance_reader_impl.cc:97).
    assert_eq!(config("libsvm", "batch= 2 ;;w=1;").unwrap().batch, 2);
}

#[test]
fn config_errors_say_which_key_and_what_is_allowed() {
    let cases = [
        ("libsvm_ex", "batch=2", "the libsvm_ex reader needs x_size=N (no default)"),
        ("uch", "w=1", "the uch reader needs x_hist_item_size=N (no default)"),
        (
            "libsvm",
            "batch=2;x_size=3",
            "unknown key \"x_size\" for the libsvm reader; the keys are batch, batch_size, label_size, w, has_w, \
             uuid, has_uuid",
        ),
        (
            "libsvm_ex",
            "x_size=1;bacth=2",
            "unknown key \"bacth\" for the libsvm_ex reader; the keys are batch, \
             batch_size, label_size, w, has_w, uuid, has_uuid, x_size",
        ),
        ("libsvm", "batch=0", "batch=\"0\": must be at least 1"),
        ("libsvm", "batch=x", "batch=\"x\": not an integer"),
        ("libsvm", "label_size=33", "label_size=\"33\": must be from 1 to 32 (deepx's MAX_LABEL_SIZE)"),
        ("libsvm_ex", "x_size=129", "x_size=\"129\": must be from 1 to 128 (deepx's MAX_X_SIZE)"),
        (
            "libsvm",
            "batch=1;batch_size=2",
            "batch is given twice; deepx keeps one value (the last of a repeated key, any_map.cc:30 and 44, or \
             whichever alias its hash map visits last), fex refuses it",
        ),
        ("libsvm", "batch", "config entry \"batch\" is not key=value (entries are separated by ';')"),
        // Issue 24, 4: deepx looks keys up verbatim (any_map.cc:21-47,
        // instance_reader_impl.cc:94-115), and std::stoi ignores what
        // follows an integer (instance_reader_impl.cc:97).
        (
            "libsvm",
            "batch=2; label_size=1",
            "key \" label_size\" has blanks around it; deepx looks keys up verbatim and refuses it \
             (instance_reader_impl.cc:94-115), and so does fex",
        ),
        (
            "libsvm",
            "batch =2",
            "key \"batch \" has blanks around it; deepx looks keys up verbatim and refuses it \
             (instance_reader_impl.cc:94-115), and so does fex",
        ),
        (
            "libsvm",
            "batch=2x",
            "batch=\"2x\": not an integer; deepx's std::stoi reads the leading digits and ignores the rest \
             (instance_reader_impl.cc:97-111), fex refuses it",
        ),
        (
            "libsvm",
            "w=1 0",
            "w=\"1 0\": not an integer; deepx's std::stoi reads the leading digits and ignores the rest \
             (instance_reader_impl.cc:97-111), fex refuses it",
        ),
        ("libsvm", "batch=2; ", "config entry \" \" is not key=value (entries are separated by ';')"),
        ("svm", "", "unknown instance reader \"svm\"; the readers are libsvm, libsvm_ex, uch"),
    ];
    for (format, text, want) in cases {
        let e = config(format, text).expect_err(text);
        assert_eq!(e.to_string(), want, "{format} {text:?}");
    }
}

fn first_error(format: &str, cfg: &str, input: &str) -> fex::text::TextError {
    let mut r = deepx::open(format, cfg, Cursor::new(input.to_string()), "f.txt", ReadOptions::default()).unwrap();
    loop {
        match r.next_batch() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("{input:?} read without error"),
            Err(e) => return e,
        }
    }
}

#[test]
fn every_line_error_names_line_column_and_text() {
    // (format, config, input, line, column, text, message start)
    let cases = [
        ("libsvm", "", "\n", 1, 1, "", "missing label 1 of 1"),
        ("libsvm", "label_size=2", "1 \n", 1, 1, "1 ", "missing label 2 of 2"),
        ("libsvm", "", "x 1\n", 1, 1, "x", "label is not a number in [-10000, 10000]"),
        ("libsvm", "", "1\n-10000.5 3\n", 2, 1, "-10000.5", "label is not a number"),
        ("libsvm", "", "inf 3\n", 1, 1, "inf", "label is not a number"),
        ("libsvm", "", "1:0 3\n", 1, 3, "0", "weight is not a number in (0, 10000]"),
        ("libsvm", "", "1:-1 3\n", 1, 3, "-1", "weight is not a number"),
        ("libsvm", "", "1:10001 3\n", 1, 3, "10001", "weight is not a number"),
        ("libsvm", "", "1: 3\n", 1, 3, "", "weight is not a number"),
        ("libsvm", "", "1 uuid: 3\n", 1, 3, "uuid:", "empty uuid"),
        ("libsvm", "", "1 3 -4\n", 1, 5, "-4", "feature id is not a u64"),
        ("libsvm", "", "1 3|4\n", 1, 3, "3|4", "feature id is not a u64"),
        ("libsvm", "", "1 3:100.5\n", 1, 5, "100.5", "feature value is not a number in [-100, 100]"),
        ("libsvm", "", "1 3:NaN\n", 1, 5, "NaN", "feature value is not a number"),
        ("libsvm_ex", "x_size=2", "1 3|4:x\n", 1, 7, "x", "feature value is not a number"),
        ("libsvm_ex", "x_size=2", "1 3|a\n", 1, 5, "a", "feature id is not a u64 (groups are separated by '|')"),
        ("uch", "x_hist_item_size=1", "1 3\n", 1, 3, "3", "missing the candidate group"),
    ];
    for (format, cfg, input, line, column, text, message) in cases {
        let e = first_error(format, cfg, input);
        assert_eq!((e.file(), e.line(), e.column(), e.text()), ("f.txt", line, column, text), "{input:?}: {e}");
        assert!(e.to_string().starts_with(&format!("f.txt:{line}:{column}: {message}")), "{input:?}: {e}");
    }
}

/// Issue 24, 4: lines deepx reads in a way their author cannot have meant,
/// and lines deepx refuses. fex refuses each; the error names file, line,
/// column, and what deepx does (with its source line) where it differs.
/// The book's "deepx, line by line" page (docs/src/training/deepx.md) lists every case.
#[test]
fn lines_deepx_misreads_or_refuses_are_refused_saying_what_deepx_does() {
    const AFTER: &str = "text after a number; deepx ends the number here, steps over one byte and reads on from \
                         the next (base.h:122, 207), fex refuses it";
    const TAKES: &str = "; deepx's parser reads a number from it (fast_strtox.cc:86-140), fex refuses it";
    let value = format!("feature value is not a number in [-100, 100]{TAKES}");
    let label = format!("label is not a number in [-10000, 10000]{TAKES}");
    let weight = format!("weight is not a number in (0, 10000]{TAKES}");
    let hist = |g: usize| {
        format!(
            "history group {g} is empty and a later one is not; deepx stops reading histories at the first empty \
             one and keeps the line with __instXhist_size {g} and the rest dropped (uch.h:78-85, 144-149); fex \
             refuses it"
        )
    };
    let bad_hist = "in history group 0; deepx stops reading histories at a bad one and keeps the line with \
                    __instXhist_size 0 (uch.h:78-85, 144-149), fex refuses it";
    // (format, config, input, column, text, the message after file:line:column)
    let cases: Vec<(&str, &str, &str, usize, &str, String)> = vec![
        // Text after a number: deepx reads 5:1.5 and 6; 5:0 and 10; 1:2 and 3.
        ("libsvm", "", "1 5:1.5x 6\n", 8, "x", AFTER.into()),
        ("libsvm", "", "1 5:0x10\n", 6, "x10", AFTER.into()),
        ("libsvm", "", "1 1:2:3\n", 6, ":3", AFTER.into()),
        ("libsvm", "", "1:0.5x 3\n", 6, "x", AFTER.into()),
        ("libsvm", "", "1:2:3 4\n", 4, ":3", AFTER.into()),
        // Tokens deepx's fast_strtod takes whole: 0, -0, 1, 1.23, 0.
        ("libsvm", "", ". 3\n", 1, ".", label.clone()),
        ("libsvm", "", "- 3\n", 1, "-", label.clone()),
        ("libsvm", "", "1 3:1e\n", 5, "1e", value.clone()),
        ("libsvm", "", "1 3:1.2.3\n", 5, "1.2.3", value.clone()),
        ("libsvm", "", "1:e5 3\n", 3, "e5", weight.clone()),
        // An id above u64::MAX deepx wraps; a sign it refuses, as fex does.
        (
            "libsvm",
            "",
            "1 18446744073709551616:0.5\n",
            3,
            "18446744073709551616",
            "feature id is not a u64: it is above 18446744073709551615; deepx wraps it modulo 2^64 \
             (fast_strtox.cc:177-189, no overflow check), fex refuses it"
                .into(),
        ),
        ("libsvm", "", "1 +5\n", 3, "+5", "feature id is not a u64".into()),
        // libsvm_ex: text past x_size groups deepx ignores; an empty group it refuses.
        (
            "libsvm_ex",
            "x_size=1",
            "1 3|4\n",
            4,
            "|4",
            "text after the last of x_size=1 feature groups; deepx reads the first 1 groups and ignores the rest \
             of the line (libsvm_ex.h:110-117); fex refuses it"
                .into(),
        ),
        (
            "libsvm_ex",
            "x_size=2",
            "1 3||4\n",
            5,
            "",
            "feature group 1 is empty; deepx refuses such a line too (libsvm_ex.h:55-62, base.h:169-173)".into(),
        ),
        // uch: deepx stops at an empty or bad history and keeps the line.
        ("uch", "x_hist_item_size=2", "1 1|2||4\n", 7, "", hist(0)),
        ("uch", "x_hist_item_size=3", "1 1|2|3||5\n", 9, "", hist(1)),
        ("uch", "x_hist_item_size=3", "1 1|2||x\n", 7, "", hist(0)),
        (
            "uch",
            "x_hist_item_size=2",
            "1 1|2|x|4\n",
            7,
            "x",
            format!("feature id is not a u64 (groups are separated by '|') {bad_hist}"),
        ),
        (
            "uch",
            "x_hist_item_size=2",
            "1 1|2|3 4:x\n",
            11,
            "x",
            format!("feature value is not a number in [-100, 100] {bad_hist}"),
        ),
        (
            "uch",
            "x_hist_item_size=1",
            "1 |2\n",
            3,
            "",
            "the user group is empty; deepx refuses such a line too (uch.h:58-66, base.h:169-173)".into(),
        ),
        (
            "uch",
            "x_hist_item_size=1",
            "1 1|\n",
            5,
            "",
            "the candidate group is empty; deepx refuses such a line too (uch.h:68-76, base.h:169-173)".into(),
        ),
    ];
    for (format, cfg, input, column, text, message) in cases {
        let e = first_error(format, cfg, input);
        assert_eq!((e.file(), e.line(), e.column(), e.text()), ("f.txt", 1, column, text), "{input:?}: {e}");
        assert_eq!(e.to_string(), format!("f.txt:1:{column}: {message}: {text:?}"), "{input:?}");
    }
}

/// Issue 24, 3: deepx casts to f32, then checks the range (base.h:82-119,
/// 194-204): 1e-50 is a weight of 0 and refused; 10000.0004 is 10000 and
/// read. fex checks the f32 it stores, the same way.
#[test]
fn ranges_are_checked_on_the_f32_stored_as_deepx_checks_them() {
    let input = "10000.0004:10000.0004 3:100.000001 4:1e-50\n-10000.0004 5:-100.000001\n";
    let mut r = deepx::open("libsvm", "w=1", Cursor::new(input), "f.txt", ReadOptions::default()).unwrap();
    let b = r.next_batch().unwrap().unwrap();
    let dense = |name: &str| match &b.iter().find(|c| c.name == name).unwrap().column {
        Column::Dense(d) => d.values.clone(),
        c => panic!("{c:?}"),
    };
    assert_eq!(dense("__instY"), Values::F32(vec![10000.0, -10000.0]));
    assert_eq!(dense("__instW"), Values::F32(vec![10000.0, 1.0]));
    let Column::Ragged(x) = &b[0].column else { panic!() };
    assert_eq!(x.weights, [100.0, 0.0, -100.0]);
    let cases = [
        ("1:1e-50 3\n", 3, "1e-50", "weight is not a number in (0, 10000] (as the f32 stored it is 0.0)"),
        (
            "1:10000.0005 3\n",
            3,
            "10000.0005",
            "weight is not a number in (0, 10000] (as the f32 stored it is 10000.001)",
        ),
        (
            "10000.0005\n",
            1,
            "10000.0005",
            "label is not a number in [-10000, 10000] (as the f32 stored it is 10000.001)",
        ),
        (
            "1 3:100.00001\n",
            5,
            "100.00001",
            "feature value is not a number in [-100, 100] (as the f32 stored it is 100.00001)",
        ),
        ("1 3:1e39\n", 5, "1e39", "feature value is not a number in [-100, 100] (as the f32 stored it is inf)"),
    ];
    for (input, column, text, message) in cases {
        let e = first_error("libsvm", "", input);
        assert_eq!(e.to_string(), format!("f.txt:1:{column}: {message}: {text:?}"), "{input:?}");
    }
}

#[test]
fn crlf_and_a_last_line_without_newline_are_read() {
    let mut r = deepx::open("libsvm", "batch=8", Cursor::new("1 2\r\n0 3:0.5"), "f", ReadOptions::default()).unwrap();
    let b = r.next_batch().unwrap().unwrap();
    let Column::Ragged(x) = &b[0].column else { panic!() };
    assert_eq!(x.values, Values::U64(vec![2, 3]));
    assert_eq!(x.weights, vec![1.0, 0.5]);
    assert!(r.next_batch().unwrap().is_none());
}

#[test]
fn a_long_line_fails_or_is_skipped_and_memory_stays_bounded() {
    let long = format!("1 {}\n0 5\n", "7 ".repeat(10_000));
    let opts = ReadOptions { max_line_bytes: 100, ..ReadOptions::default() };
    let e = first_error_with("libsvm", &long, opts);
    assert_eq!(e.kind(), &TextErrorKind::LineTooLong { limit: 100 });
    assert_eq!((e.line(), e.text().len() <= 64 + 3), (1, true));
    let opts = ReadOptions { on_error: OnError::Skip, ..opts };
    let mut r = deepx::open("libsvm", "", Cursor::new(long), "f", opts).unwrap();
    let b = r.next_batch().unwrap().unwrap();
    let Column::Ragged(x) = &b[0].column else { panic!() };
    assert_eq!((x.values.clone(), r.skipped()), (Values::U64(vec![5]), 1));
}

fn first_error_with(format: &str, input: &str, opts: ReadOptions) -> fex::text::TextError {
    let mut r = deepx::open(format, "", Cursor::new(input.to_string()), "f", opts).unwrap();
    loop {
        match r.next_batch() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no error"),
            Err(e) => return e,
        }
    }
}

/// A reader that fails after its first bytes.
struct Failing(Cursor<Vec<u8>>);
impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 => Err(std::io::Error::other("disk gone")),
            n => Ok(n),
        }
    }
}

#[test]
fn an_io_error_is_reported_with_where_it_happened() {
    let input = std::io::BufReader::with_capacity(4, Failing(Cursor::new(b"1 2\n0 3".to_vec())));
    let mut r = deepx::open("libsvm", "batch=1", input, "f", ReadOptions::default()).unwrap();
    assert!(r.next_batch().unwrap().is_some());
    let e = r.next_batch().unwrap_err();
    assert_eq!((e.line(), e.kind()), (2, &TextErrorKind::Io("disk gone".into())));
    assert!(r.next_batch().unwrap().is_none(), "the reader ends after a failed stream");
}

#[test]
fn batches_have_exactly_batch_rows_and_the_tail_follows_last_batch() {
    let input: String = (0..7).map(|i| format!("1 {i}\n")).collect();
    for (last, sizes) in [(LastBatch::Keep, vec![3, 3, 1]), (LastBatch::Drop, vec![3, 3])] {
        let opts = ReadOptions { last_batch: last, ..ReadOptions::default() };
        let mut r = deepx::open("libsvm", "batch=3", Cursor::new(input.clone()), "f", opts).unwrap();
        let mut got = Vec::new();
        while let Some(b) = r.next_batch().unwrap() {
            got.push(b[0].column.rows());
        }
        assert_eq!(got, sizes);
    }
}

// ---------------------------------------------------------------- Criteo

/// A Criteo line from numbers; `None` is an empty field.
fn criteo_line(label: i64, dense: &[Option<i64>; 13], cats: &[Option<&str>; 26]) -> String {
    let mut f = vec![label.to_string()];
    f.extend(dense.iter().map(|d| d.map(|x| x.to_string()).unwrap_or_default()));
    f.extend(cats.iter().map(|c| c.unwrap_or("").to_string()));
    f.join("\t")
}

fn raw(line: &str) -> Result<RawRow, (std::ops::Range<usize>, TextErrorKind)> {
    let mut row = RawRow::default();
    criteo::parse(line.as_bytes(), &mut row).map(|()| row)
}

#[test]
fn criteo_fields_and_empty_values() {
    // torchrec/datasets/criteo.py:226-236: empty fields are 0; categorical
    // fields are hexadecimal.
    let mut dense = [None; 13];
    dense[0] = Some(5);
    dense[1] = Some(-3);
    let mut cats = [None; 26];
    cats[0] = Some("68fd1e64");
    cats[25] = Some("FFFFFFFF");
    let r = raw(&criteo_line(1, &dense, &cats)).unwrap();
    assert_eq!((r.label, r.dense[0], r.dense[1], r.dense[12]), (1, 5, -3, 0));
    assert_eq!((r.cats[0], r.cats[1], r.cats[25]), (0x68fd1e64, 0, 0xffff_ffff));
    let all_empty = "\t".repeat(39);
    assert_eq!(raw(&all_empty).unwrap(), RawRow::default());
}

#[test]
fn criteo_errors_point_at_the_field() {
    let good = criteo_line(0, &[Some(1); 13], &[Some("a"); 26]);
    let short = good.rsplit_once('\t').unwrap().0.to_string();
    let long = format!("{good}\tx");
    let e = raw(&short).unwrap_err();
    assert_eq!(
        e.1,
        TextErrorKind::Shape(
            "found 39 tab-separated fields, a Criteo line has 40 (label, 13 integer, 26 categorical)".into()
        )
    );
    assert!(matches!(raw(&long).unwrap_err().1, TextErrorKind::Shape(m) if m.starts_with("found 41")));
    let bad_int = good.replacen("\t1\t", "\t1.5\t", 1);
    let (span, kind) = raw(&bad_int).unwrap_err();
    assert_eq!(
        (&bad_int[span], kind),
        ("1.5", TextErrorKind::Invalid("integer feature is not a decimal integer".into()))
    );
    let bad_hex = good.replacen("\ta\t", "\tzz\t", 1);
    let (span, kind) = raw(&bad_hex).unwrap_err();
    assert_eq!((&bad_hex[span], kind), ("zz", TextErrorKind::Invalid("categorical value is not hexadecimal".into())));
    let too_wide = good.replacen("\ta\t", "\t11112222333344445\t", 1);
    assert!(matches!(raw(&too_wide).unwrap_err().1, TextErrorKind::Invalid(m) if m.contains("16 hex digits")));
    let big = good.replacen("1", "99999999999999999999", 1);
    assert!(raw(&big).is_err(), "an i64 overflow is an error, not a wrap");
}

#[test]
fn dense_is_ln_x_plus_3_and_never_infinite_or_nan() {
    // Seed 004 step 2; fex's rule for x + 3 <= 0: x is clamped to -2, so ln 1 = 0.
    assert_eq!(criteo::dense_ln(0), 3f64.ln() as f32);
    assert_eq!(criteo::dense_ln(1), 4f64.ln() as f32);
    assert_eq!(criteo::dense_ln(-1), 2f64.ln() as f32);
    for x in [-2, -3, -4, -1000, i64::MIN] {
        assert_eq!(criteo::dense_ln(x), 0.0, "{x}");
    }
    assert!(criteo::dense_ln(i64::MAX).is_finite());
    let mut prev = f32::MIN;
    for x in -10..1000 {
        let y = criteo::dense_ln(x);
        assert!(y.is_finite() && y >= prev, "monotone and finite at {x}");
        prev = y;
    }
}

fn kjt(b: &[NamedColumn]) -> &KeyedJagged {
    let Column::KeyedJagged(k) = &b[2].column else { panic!("sparse is keyed-jagged") };
    k
}

#[test]
fn a_batch_is_the_seeds_keyed_jagged_tensor() {
    // Seed 004 step 5: values key-major, lengths B*26 ones, offsets
    // 0..=B*26, keys cat_0..cat_25, length_per_key 26 x B, offset_per_key
    // 0, B, .., 26B; dense [B, 13] f32, label [B].
    let lines: String = (0..3)
        .map(|r| {
            let cats: Vec<String> = (0..26).map(|k| format!("{:x}", 100 * k + r)).collect();
            let cats: [Option<&str>; 26] = std::array::from_fn(|k| Some(cats[k].as_str()));
            criteo_line(r as i64 % 2, &[Some(r as i64); 13], &cats) + "\n"
        })
        .collect();
    let mut reader = CriteoReader::new(Cursor::new(lines), "day_0", None, 3, ReadOptions::default());
    let b = reader.next_batch().unwrap().unwrap();
    let names: Vec<&str> = b.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["label", "dense", "sparse"]);
    assert_eq!(b[0].column.shape(), [3]);
    assert_eq!(b[1].column.shape(), [3, 13]);
    assert_eq!(b[0].column.dtype(), DataType::F32);
    let k = kjt(&b);
    assert_eq!(k.keys, (0..26).map(|i| format!("cat_{i}")).collect::<Vec<_>>());
    assert_eq!(k.rows, 3);
    assert_eq!(k.lengths, vec![1; 78]);
    assert_eq!(k.offsets, (0..=78).collect::<Vec<i64>>());
    let want: Vec<i64> = (0..26).flat_map(|key| (0..3).map(move |r| 100 * key + r)).collect();
    assert_eq!(k.values, Values::I64(want));
    assert_eq!(criteo::length_per_key(k), vec![3; 26]);
    assert_eq!(criteo::offset_per_key(k), (0..=26).map(|i| 3 * i).collect::<Vec<i64>>());
    assert!(reader.next_batch().unwrap().is_none());
}

#[test]
fn multi_hot_reproduces_the_seeds_worked_example() {
    // Seed 004, "举个例子": B = 2, num_embeddings [6, 7, 5, 9],
    // min_table_size 8, multi_hot_size 3.
    let keys: Vec<String> = (0..4).map(|i| format!("cat_{i}")).collect();
    let ids = [1, 2, 3, 4, 0, 5, 6, 1]; // rows [1 2 3 4], [0 5 6 1]... row-major
    let ids: Vec<i64> = vec![ids[0], ids[1], ids[2], 8, ids[4], ids[5], ids[6] % 5, 7];
    let k = criteo::key_major(&keys, 2, &ids);
    assert_eq!(k.offsets, vec![0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let m = criteo::multi_hot(&k, &[6, 7, 5, 9], 8, 3).unwrap();
    assert_eq!(m.offsets, vec![0, 1, 2, 3, 4, 5, 6, 9, 12]);
    assert_eq!(m.lengths, vec![1, 1, 1, 1, 1, 1, 3, 3]);
    let Values::I64(v) = &m.values else { panic!() };
    // The first six values pass through; the expanded rows start with the
    // original ids I_{0,3} = 8 and I_{1,3} = 7, then weight entries in [0, 9).
    let Values::I64(orig) = &k.values else { panic!() };
    assert_eq!(&v[..6], &orig[..6]);
    assert_eq!((v[6], v[9]), (8, 7));
    for (x, at) in [(8u64, 6), (7, 9)] {
        for j in 1..3 {
            assert_eq!(v[at + j as usize] as u64, fex::ops::multihot_weight(3, x, j, 9), "seed = key index 3");
        }
    }
    assert!(v.iter().skip(6).all(|&w| (0..9).contains(&w)));
    assert!(matches!(criteo::multi_hot(&k, &[6, 7, 5, 8], 8, 3), Err(criteo::MultiHotError::OutOfRange { id: 8, .. })));
    assert!(matches!(criteo::multi_hot(&k, &[6, 7, 5], 8, 3), Err(criteo::MultiHotError::Tables { .. })));
}

fn day(rows: &[[&str; 26]]) -> String {
    rows.iter().map(|c| criteo_line(0, &[None; 13], &c.map(Some)) + "\n").collect()
}

#[test]
fn fit_assigns_ids_from_2_in_first_appearance_order_across_days() {
    // Seed 004 step 3 and torchrec criteo.py:436-458 (the docstring's
    // example, threshold 1 and 2).
    let mut r0 = [["0"; 26]; 2];
    let mut r1 = [["0"; 26]; 2];
    (r0[0][0], r0[1][0], r1[0][0], r1[1][0]) = ("abc", "e09", "e09", "1a1");
    (r0[0][1], r0[1][1], r1[0][1], r1[1][1]) = ("ff", "ff", "7", "ff");
    let days = [day(&r0), day(&r1)];
    for (threshold, col0, col1) in [(0, vec![0xabc, 0xe09, 0x1a1], vec![0xff, 0x7]), (2, vec![0xe09], vec![0xff])] {
        let mut fit = Fit::new(FitOptions { threshold, ..FitOptions::default() });
        for (i, d) in days.iter().enumerate() {
            let s = fit.add_input(Cursor::new(d.clone()), &format!("day_{i}"), ReadOptions::default()).unwrap();
            assert_eq!(s.rows, 2);
        }
        assert_eq!((fit.vocabulary(0), fit.vocabulary(1)), (col0, col1));
        assert_eq!(fit.vocabulary(2), vec![0], "an empty field is the value 0, an ordinary value");
    }
    // Written and loaded back: day 1 through the reader gives torchrec's
    // day_1_sparse_contig ids (threshold 2: col_0 [2, 1], col_1 [1, 2]).
    let dir = tempfile::tempdir().unwrap();
    let mut fit = Fit::new(FitOptions { threshold: 2, ..FitOptions::default() });
    for d in &days {
        fit.add_input(Cursor::new(d.clone()), "d", ReadOptions::default()).unwrap();
    }
    let paths = fit.write(dir.path()).unwrap();
    assert_eq!(paths.len(), 26);
    assert_eq!(std::fs::read_to_string(dir.path().join("cat_0.txt")).unwrap(), format!("{}\n", 0xe09));
    let vocabs = criteo::load_vocabs(dir.path()).unwrap();
    let mut reader = CriteoReader::new(Cursor::new(days[1].clone()), "day_1", Some(vocabs), 2, ReadOptions::default());
    let b = reader.next_batch().unwrap().unwrap();
    let Values::I64(v) = &kjt(&b).values else { panic!() };
    assert_eq!(&v[..4], &[2, 1, 1, 2]);
}

#[test]
fn fit_vocabularies_give_the_same_ids_through_the_models_vocab_operator() {
    // The files are what `op: vocab` loads: the model maps a raw id column
    // with them and gets the reader's ids.
    let dir = tempfile::tempdir().unwrap();
    let mut fit = Fit::new(FitOptions { columns: vec![0], ..FitOptions::default() });
    let mut r = [["0"; 26]; 3];
    (r[0][0], r[1][0], r[2][0]) = ("ffffffff", "10", "ffffffff");
    fit.add_input(Cursor::new(day(&r)), "d", ReadOptions::default()).unwrap();
    assert_eq!(fit.write(dir.path()).unwrap(), vec![dir.path().join("cat_0.txt")]);
    let v = fex::ops::Vocab::load(&dir.path().join("cat_0.txt")).unwrap();
    assert_eq!((v.id(0xffff_ffff), v.id(0x10), v.id(0x11)), (2, 3, 1));
    let yaml = format!(
        "name: t\nfeatures:\n  - {{name: c, kind: sparse}}\n  - {{name: v, op: vocab, input: c, file: {}}}\n",
        dir.path().join("cat_0.txt").display()
    );
    let plan = fex::Plan::from_yaml(&yaml).unwrap();
    let batch = format!(
        "batch_size: 1\nlists:\n  - {{name: c, type: INDIVIDUAL, features: [{{fid_v2_list: [{}, 16, 17]}}]}}\n",
        0xffff_ffffu64
    );
    let bytes = fex::corpus::Batch::from_yaml(&batch).unwrap().encode().unwrap();
    let out = fex::extract_batch(&plan, &bytes).unwrap();
    let Column::Ragged(r) = &out.columns.iter().find(|c| c.name == "v").unwrap().column else { panic!() };
    assert_eq!(r.values, Values::I64(vec![2, 3, 1]));
}

#[test]
fn fit_memory_is_counted_and_only_fitted_columns_are_held() {
    let mut fit = Fit::new(FitOptions { columns: vec![3], ..FitOptions::default() });
    let mut row = RawRow::default();
    for x in 0..10_000u64 {
        row.cats[3] = x;
        row.cats[4] = x;
        fit.add(&row);
    }
    assert_eq!((fit.distinct(3), fit.distinct(4), fit.rows()), (10_000, 0, 10_000));
    let per_value = fit.bytes() as f64 / 10_000.0;
    assert!((28.0..=64.0).contains(&per_value), "{per_value} bytes per distinct value");
}

#[test]
fn criteo_skip_mode_counts_bad_lines_and_keeps_the_rest() {
    let good = criteo_line(1, &[Some(1); 13], &[Some("a"); 26]);
    let input = format!("{good}\nnot a line\n{good}\n");
    let opts = ReadOptions { on_error: OnError::Skip, ..ReadOptions::default() };
    let mut r = CriteoReader::new(Cursor::new(input.clone()), "d", None, 10, opts);
    assert_eq!(r.next_batch().unwrap().unwrap()[0].column.rows(), 2);
    assert_eq!(r.skipped(), 1);
    let mut r = CriteoReader::new(Cursor::new(input), "day_3.tsv", None, 10, ReadOptions::default());
    let e = r.next_batch().unwrap_err();
    assert_eq!((e.file(), e.line(), e.column()), ("day_3.tsv", 2, 1));
}

#[test]
fn split_holds_out_the_last_day_and_shuffles_the_rest_reproducibly() {
    let dir = tempfile::tempdir().unwrap();
    let days: Vec<std::path::PathBuf> = (0..criteo::DAYS).map(|d| dir.path().join(format!("day_{d}"))).collect();
    for (d, p) in days.iter().enumerate() {
        let text: String = (0..50).map(|i| format!("{d} {i}\n")).collect();
        std::fs::write(p, text).unwrap();
    }
    let (train, test) = criteo::split_days(&days).unwrap();
    assert_eq!((train.len(), test), (23, &days[23]));
    let shuffle = |seed, name: &str| {
        let out = dir.path().join(name);
        let n = criteo::shuffle_lines(train, &out, &dir.path().join("tmp"), seed, 4).unwrap();
        assert_eq!(n, 23 * 50);
        std::fs::read_to_string(out).unwrap()
    };
    let a = shuffle(7, "a");
    assert_eq!(a, shuffle(7, "b"), "same seed, same order");
    assert_ne!(a, shuffle(8, "c"), "another seed, another order");
    let mut lines: Vec<&str> = a.lines().collect();
    let in_order: Vec<String> = (0..23).flat_map(|d| (0..50).map(move |i| format!("{d} {i}"))).collect();
    assert_ne!(lines, in_order.iter().map(String::as_str).collect::<Vec<_>>());
    lines.sort();
    let mut want: Vec<&str> = in_order.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(lines, want, "every training line exactly once, none of day 23");
}

#[test]
fn loading_vocabularies_needs_all_26_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut fit = Fit::new(FitOptions { columns: vec![0, 1], ..FitOptions::default() });
    fit.add(&RawRow::default());
    fit.write(dir.path()).unwrap();
    let e = criteo::load_vocabs(dir.path()).unwrap_err();
    assert!(e.to_string().contains("cat_2.txt"), "{e}");
}

// ---------------------------------------------------------------- never panic

use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_string()),
        Just("-1:0.5".to_string()),
        Just("uuid:x".to_string()),
        Just("uuid:".to_string()),
        Just("|".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just(":".to_string()),
        Just("nan".to_string()),
        "[0-9]{1,21}(:[-0-9.e]{0,6})?",
        "[ -~]{0,6}",
    ]
}

proptest! {
    /// Any line either reads or fails with a location inside it: never a
    /// panic, and every batch has consistent shapes.
    #[test]
    fn deepx_lines_never_panic(tokens in prop::collection::vec(token(), 0..12), format in 0..3usize, skip: bool) {
        let line = tokens.concat();
        let (name, cfg) = [("libsvm", "w=1;uuid=1"), ("libsvm_ex", "x_size=2;uuid=1"), ("uch", "x_hist_item_size=2")][format];
        let opts = ReadOptions { on_error: if skip { OnError::Skip } else { OnError::Fail }, ..ReadOptions::default() };
        let mut r = deepx::open(name, cfg, Cursor::new(format!("{line}\n{line}\n")), "p", opts).unwrap();
        match r.next_batch() {
            Ok(Some(b)) => {
                let rows = b[0].column.rows();
                prop_assert!(b.iter().all(|c| c.column.rows() == rows));
                prop_assert_eq!(rows as u64 + r.skipped(), 2);
            }
            Ok(None) => prop_assert_eq!(r.skipped(), 2),
            Err(e) => {
                prop_assert!(!skip);
                prop_assert!(e.line() == 1 && e.column() >= 1 && e.column() <= line.len() + 1, "{}", e);
            }
        }
    }

    #[test]
    fn criteo_lines_never_panic(fields in prop::collection::vec("[-0-9a-fA-Fx ]{0,18}", 0..45)) {
        let line = fields.join("\t");
        let mut row = RawRow::default();
        if let Err((span, _)) = criteo::parse(line.as_bytes(), &mut row) {
            prop_assert!(span.end <= line.len());
        }
    }
}
