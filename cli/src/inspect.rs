//! `fex inspect`: the first `--limit` records, each with where it is and
//! what it holds: its features (lists, rows, values) or, with `--model`, the
//! tensors the model extracts from it.

use std::fmt::Write as _;

use fex::offline::Payload;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use fex::proto::parser_pb::Instance;
use fex::records::{RecordReader, sources};
use prost::Message;

use crate::args::InspectArgs;
use crate::exit;

/// Rows of a list shown before "...".
const ROWS_SHOWN: usize = 4;

pub fn run(a: InspectArgs) -> u8 {
    let plan = match &a.model {
        Some(path) => match crate::extract::load_model(path) {
            Ok(plan) => Some(plan),
            Err(code) => return code,
        },
        None => None,
    };
    let inputs = match sources::expand(&a.input.inputs) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::NO_INPUT;
        }
    };
    let payload = a.input.payload();
    let mut shown = 0;
    let mut code = 0;
    let mut buf = Vec::new();
    'files: for path in &inputs {
        let mut reader = match RecordReader::open(path, a.input.read_options(), None) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return exit::NO_INPUT;
            }
        };
        loop {
            if shown >= a.limit {
                break 'files;
            }
            let meta = match reader.next_into(&mut buf) {
                Ok(Some(meta)) => meta,
                Ok(None) => break,
                Err(e) => {
                    eprintln!("error: {e}");
                    if e.index() == 0
                        && let Some(hint) = fex::offline::hint(path, a.input.read_options())
                    {
                        eprintln!("hint: {hint}");
                    }
                    code = exit::DATA;
                    break;
                }
            };
            shown += 1;
            let mut text =
                format!("{}: record {} at byte {} ({} bytes)", reader.name(), meta.index, meta.offset, meta.len);
            if a.input.lagrangex_header {
                let _ = write!(text, ", pb type {}, data source key {:#x}", meta.pb_type, meta.data_source_key);
            }
            println!("{text}");
            let body = match &plan {
                Some(plan) => tensors(plan, payload, &buf),
                None => features(payload, &buf, a.values),
            };
            match body {
                Ok(body) => print!("{body}"),
                Err(e) => {
                    println!("  error: {e}");
                    code = exit::DATA;
                }
            }
        }
    }
    code
}

/// The model's tensors for one record, as the golden corpus renders them.
fn tensors(plan: &fex::Plan, payload: Payload, buf: &[u8]) -> Result<String, String> {
    let one = [buf];
    let input = match payload {
        Payload::ExampleBatch => fex::Input::Batch(buf),
        Payload::Example => fex::Input::Examples(&one),
        Payload::Instance => fex::Input::Instances(&one),
    };
    let mut out = fex::Extracted::default();
    let mut ex = fex::Extractor::new();
    ex.extract(plan, input, fex::Policy::default(), &mut out).map_err(|e| e.to_string())?;
    Ok(indent(&fex::corpus::render(&out)))
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The record's features, decoded.
fn features(payload: Payload, buf: &[u8], values: usize) -> Result<String, String> {
    let mut s = String::new();
    match payload {
        Payload::ExampleBatch => {
            let b = pb::ExampleBatch::decode(buf).map_err(|e| format!("not an ExampleBatch: {e}"))?;
            let _ = writeln!(s, "  batch_size {}, {} lists", b.batch_size, b.named_feature_list.len());
            for list in &b.named_feature_list {
                let kind = if list.r#type == 1 { "shared" } else { "individual" };
                let _ = writeln!(s, "  {} ({kind}, {} features)", list.name, list.feature.len());
                for (r, f) in list.feature.iter().take(ROWS_SHOWN).enumerate() {
                    let _ = writeln!(s, "    [{r}] {}", describe(f, values));
                }
                if list.feature.len() > ROWS_SHOWN {
                    let _ = writeln!(s, "    ... {} more rows", list.feature.len() - ROWS_SHOWN);
                }
            }
        }
        Payload::Example => {
            let e = pb::Example::decode(buf).map_err(|e| format!("not an Example: {e}"))?;
            let _ = writeln!(s, "  {} features", e.named_feature.len());
            for f in &e.named_feature {
                let feature = f.feature.clone().unwrap_or_default();
                let _ = writeln!(s, "  {}: {}", f.name, describe(&feature, values));
            }
            if let Some(line_id) = &e.line_id {
                let _ = writeln!(s, "  line_id: {line_id:?}");
            }
            if !e.label.is_empty() {
                let _ = writeln!(s, "  label: {:?}", e.label);
            }
        }
        Payload::Instance => {
            let i = Instance::decode(buf).map_err(|e| format!("not an Instance: {e}"))?;
            let _ = writeln!(s, "  fid: {}", list(&i.fid, values, |v| format!("{v:#x}")));
            let _ = writeln!(s, "  label: {:?}, instance_weight: {:?}", i.label, i.instance_weight);
            if let Some(line_id) = &i.line_id {
                let _ = writeln!(s, "  line_id: {line_id:?}");
            }
            for f in &i.feature {
                let _ = writeln!(s, "  {f:?}");
            }
        }
    }
    Ok(s)
}

fn list<T>(v: &[T], max: usize, show: impl Fn(&T) -> String) -> String {
    let mut parts: Vec<String> = v.iter().take(max).map(show).collect();
    if v.len() > max {
        parts.push(format!("... ({} values)", v.len()));
    }
    format!("[{}]", parts.join(", "))
}

/// One Feature: its variant and its first values.
fn describe(f: &pb::Feature, max: usize) -> String {
    let hex = |v: &u64| format!("{v:#x}");
    let dbg = |v: &dyn std::fmt::Debug| format!("{v:?}");
    match &f.r#type {
        None => "(empty)".to_string(),
        Some(Type::FidV1List(l)) => format!("fid_v1_list {}", list(&l.value, max, hex)),
        Some(Type::FidV2List(l)) => format!("fid_v2_list {}", list(&l.value, max, hex)),
        Some(Type::FloatList(l)) => format!("float_list {}", list(&l.value, max, |v| dbg(v))),
        Some(Type::DoubleList(l)) => format!("double_list {}", list(&l.value, max, |v| dbg(v))),
        Some(Type::Int64List(l)) => format!("int64_list {}", list(&l.value, max, |v| dbg(v))),
        Some(Type::BytesList(l)) => {
            format!("bytes_list {}", list(&l.value, max, |v| format!("{:?}", String::from_utf8_lossy(v))))
        }
        Some(Type::FidV2Lists(l)) => format!("fid_v2_lists {}", list(&l.list, max, |x| list(&x.value, max, hex))),
        Some(Type::FidV1Lists(l)) => format!("fid_v1_lists {}", list(&l.list, max, |x| list(&x.value, max, hex))),
        Some(Type::FloatLists(l)) => format!("float_lists {}", list(&l.list, max, |x| list(&x.value, max, |v| dbg(v)))),
        Some(Type::DoubleLists(l)) => {
            format!("double_lists {}", list(&l.list, max, |x| list(&x.value, max, |v| dbg(v))))
        }
        Some(Type::Int64Lists(l)) => format!("int64_lists {}", list(&l.list, max, |x| list(&x.value, max, |v| dbg(v)))),
        Some(Type::BytesLists(l)) => format!(
            "bytes_lists {}",
            list(&l.list, max, |x| list(&x.value, max, |v| format!("{:?}", String::from_utf8_lossy(v))))
        ),
        Some(Type::Int64Value(v)) => format!("int64_value {v}"),
        Some(Type::FloatValue(v)) => format!("float_value {v:?}"),
        Some(Type::DoubleValue(v)) => format!("double_value {v:?}"),
        Some(Type::BytesValue(v)) => format!("bytes_value {:?}", String::from_utf8_lossy(v)),
    }
}
