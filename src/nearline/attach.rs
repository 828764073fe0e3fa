//! A logged request's samples with actions appended to each row's LineId.
//! Appending varint fields 6 to a serialized LineId adds to its repeated
//! `actions` (proto/monolith/line_id.proto: `repeated int32 actions = 6
//! [packed = true]`; parsers take packed and unpacked runs alike), as
//! `add_action` does (src/samples/transforms/actions.rs). Every byte the
//! rewrite does not touch is copied as it came.

use prost::encoding::{WireType as ProstWire, encode_key, encode_varint, encoded_len_varint};

use crate::view::{FeatureKind, FeatureView, ListType};
use crate::wire::{DecodeError, Reader, WireType, Within, len_field_len, push_len_header};

use super::NearlineError;
use super::logged::{Logged, Samples};
use super::rows::{Batch, LINE_ID, List};

/// The samples of `logged` (one `fex.v1.LoggedRequest`) with `actions[row]`
/// appended to row `row`'s LineId.actions, after the actions it has. An
/// `example_batch` request gives one ExampleBatch, an `examples` request one
/// Example per row. Rows given no actions are copied byte for byte.
pub fn attach_actions(logged: &[u8], actions: &[Vec<i32>]) -> Result<Vec<Vec<u8>>, NearlineError> {
    let logged = Logged::decode(logged)?;
    match &logged.samples {
        Samples::Batch(buf, at) => Ok(vec![batch(buf, *at, actions)?]),
        Samples::Examples(all) => {
            if all.len() != actions.len() {
                return Err(NearlineError::Rows { found: actions.len(), rows: all.len() as i64 });
            }
            let rows = all.iter().zip(actions).enumerate();
            rows.map(|(row, (&(buf, at), acts))| match acts.is_empty() {
                true => Ok(buf.to_vec()),
                false => example(buf, at, acts, row).map_err(|e| within(e, "example", Some(row))),
            })
            .collect()
        }
    }
}

/// Adds a step to a decode error's path; other errors pass.
fn within(e: NearlineError, field: &'static str, index: Option<usize>) -> NearlineError {
    match e {
        NearlineError::Decode(d) => NearlineError::Decode(d.within(field, index).within("examples", None)),
        other => other,
    }
}

/// One top-level field of a message: its number, where it starts and ends
/// (relative to the message), and its body if length-delimited.
struct Field<'a> {
    number: u32,
    start: usize,
    end: usize,
    body: Option<(&'a [u8], usize)>,
}

/// The top-level fields of a message, each checked by the `Reader`.
fn fields(buf: &[u8], base: usize) -> Result<Vec<Field<'_>>, DecodeError> {
    let mut out = Vec::new();
    let mut r = Reader::new(buf, base);
    while !r.is_empty() {
        let start = r.offset() - base;
        let (number, wire) = r.key()?;
        let body =
            if wire == WireType::Len { Some(r.len_delimited()?) } else { r.skip(number, wire).map(|()| None)? };
        out.push(Field { number, start, end: r.offset() - base, body });
    }
    Ok(out)
}

fn push_len_field(out: &mut Vec<u8>, number: u32, body: &[u8]) {
    encode_key(number, ProstWire::LengthDelimited, out);
    encode_varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

fn push_actions(line_id: &mut Vec<u8>, actions: &[i32]) {
    for &a in actions {
        encode_key(6, ProstWire::Varint, line_id);
        // int32 on the wire: sign-extended to 64 bits, as protobuf writes it.
        encode_varint(i64::from(a) as u64, line_id);
    }
}

/// The ExampleBatch with its `__LINE_ID__` list rewritten (or added).
fn batch(buf: &[u8], at: usize, actions: &[Vec<i32>]) -> Result<Vec<u8>, NearlineError> {
    let parsed = Batch::parse(buf, at).map_err(|e| e.within("example_batch", None))?;
    if i64::try_from(actions.len()) != Ok(parsed.batch_size) {
        return Err(NearlineError::Rows { found: actions.len(), rows: parsed.batch_size });
    }
    let rows = actions.len();
    if actions.iter().all(Vec::is_empty) {
        return Ok(buf.to_vec());
    }
    let target = parsed.list(LINE_ID).map_err(|e| e.within("example_batch", None))?;
    let mut out = Vec::with_capacity(buf.len() + 16 * rows);
    let Some(entry) = target else {
        out.extend_from_slice(buf);
        let list = rewrite_list(None, actions)?;
        push_len_field(&mut out, 1, &list);
        return Ok(out);
    };
    let list = List::decode(entry).map_err(|e| e.within("example_batch", None))?;
    let body = rewrite_list(Some(&list), actions)?;
    for f in fields(buf, at)? {
        match f.body {
            Some((_, base)) if f.number == 1 && base == entry.base => push_len_field(&mut out, 1, &body),
            _ => out.extend_from_slice(&buf[f.start..f.end]),
        }
    }
    Ok(out)
}

/// The `__LINE_ID__` NamedFeatureList with every row's actions. A SHARED
/// list stays SHARED when every row gets the same actions; otherwise it
/// becomes one Feature per row.
fn rewrite_list(list: Option<&List<'_>>, actions: &[Vec<i32>]) -> Result<Vec<u8>, NearlineError> {
    let rows = actions.len();
    let shared = list.is_some_and(|l| l.ty == ListType::Shared);
    let spread = shared && actions.windows(2).any(|w| w[0] != w[1]);
    let mut out = Vec::new();
    let mut written = 0;
    match list {
        None => push_len_field(&mut out, 1, LINE_ID),
        Some(list) => {
            let mut n = 0;
            for f in fields(list.entry.body, list.entry.base)? {
                let raw = &list.entry.body[f.start..f.end];
                match (f.number, f.body) {
                    (2, Some(feature)) if spread && n == 0 => {
                        for (row, acts) in actions.iter().enumerate() {
                            push_with_actions(&mut out, Some(feature), acts, row)?;
                        }
                        written = rows;
                    }
                    (2, Some(feature)) if !spread && n < rows && !(shared && n > 0) => {
                        push_with_actions(&mut out, Some(feature), &actions[n], n)?;
                        written = n + 1;
                    }
                    // The list type goes: the list is INDIVIDUAL now.
                    (3, None) if spread => {}
                    _ => out.extend_from_slice(raw),
                }
                n += usize::from(f.number == 2 && f.body.is_some());
            }
        }
    }
    // Rows the list has no Feature for: up to the last with actions, each
    // a LineId holding only them (or an empty Feature, to keep rows aligned).
    let needed = match shared && !spread {
        true => 1,
        false => actions.iter().rposition(|a| !a.is_empty()).map_or(0, |r| r + 1),
    };
    for (row, acts) in actions.iter().enumerate().take(needed).skip(written) {
        push_with_actions(&mut out, None, acts, row)?;
    }
    Ok(out)
}

/// Appends field 2 (the Feature of a NamedFeatureList or NamedFeature):
/// `feature`, a LineId's bytes_list, with `actions` appended to its first
/// value (a LineId holding only them when there is none), written in place
/// with every length computed first; `feature` as it came when `actions`
/// is empty.
fn push_with_actions(
    out: &mut Vec<u8>,
    feature: Option<(&[u8], usize)>,
    actions: &[i32],
    row: usize,
) -> Result<(), NearlineError> {
    if actions.is_empty() {
        push_len_field(out, 2, feature.map_or(&[][..], |(body, _)| body));
        return Ok(());
    }
    let view = feature.map(|(body, at)| FeatureView::parse(body, at)).transpose()?;
    let (mut first, mut rest, mut count) = (None, 0, 0);
    if let Some(view) = &view {
        match view.kind() {
            None => {}
            Some(FeatureKind::BytesList) => view.bytes_values(|b| {
                match count {
                    0 => first = Some(b),
                    _ => rest += len_field_len(1, b.len()),
                }
                count += 1;
            })?,
            Some(kind) => return Err(NearlineError::NotALineId { row, kind: kind.name() }),
        }
    }
    let added: usize = actions.iter().map(|&a| 1 + encoded_len_varint(i64::from(a) as u64)).sum();
    let line_id = first.map_or(0, <[u8]>::len) + added;
    let list = len_field_len(1, line_id) + rest;
    push_len_header(out, 2, len_field_len(6, list));
    push_len_header(out, 6, list);
    push_len_header(out, 1, line_id);
    out.extend_from_slice(first.unwrap_or_default());
    push_actions(out, actions);
    if let Some(view) = view.filter(|_| count > 1) {
        let mut k = 0;
        view.bytes_values(|b| {
            if k > 0 {
                push_len_field(out, 1, b);
            }
            k += 1;
        })?;
    }
    Ok(())
}

/// An Example with `actions` appended to its LineId: its `__LINE_ID__`
/// named feature if it has one (the extractor reads that first), else
/// field 100 (`line_id`), added when absent.
fn example(buf: &[u8], at: usize, actions: &[i32], row: usize) -> Result<Vec<u8>, NearlineError> {
    let all = fields(buf, at)?;
    let mut named = None;
    for (i, f) in all.iter().enumerate() {
        if let (1, Some((body, base))) = (f.number, f.body)
            && Reader::new(body, base).last_len_field(1).within("named_feature", Some(i))? == LINE_ID
        {
            named = Some(i);
        }
    }
    let target = named.or_else(|| all.iter().rposition(|f| f.number == 100 && f.body.is_some()));
    let mut out = Vec::with_capacity(buf.len() + 16);
    for (i, f) in all.iter().enumerate() {
        match (Some(i) == target, f.body) {
            (true, Some((body, base))) if named.is_some() => {
                push_len_field(&mut out, 1, &named_line_id(body, base, actions, row)?);
            }
            (true, Some((body, _))) => {
                let mut line_id = body.to_vec();
                push_actions(&mut line_id, actions);
                push_len_field(&mut out, 100, &line_id);
            }
            _ => out.extend_from_slice(&buf[f.start..f.end]),
        }
    }
    if target.is_none() {
        let mut line_id = Vec::new();
        push_actions(&mut line_id, actions);
        push_len_field(&mut out, 100, &line_id);
    }
    Ok(out)
}

/// A `__LINE_ID__` NamedFeature with its Feature (the last field 2) given
/// the actions.
fn named_line_id(buf: &[u8], base: usize, actions: &[i32], row: usize) -> Result<Vec<u8>, NearlineError> {
    let all = fields(buf, base)?;
    let target = all.iter().rposition(|f| f.number == 2 && f.body.is_some());
    let mut out = Vec::with_capacity(buf.len() + 16);
    for (i, f) in all.iter().enumerate() {
        match f.body {
            Some(feature) if Some(i) == target => push_with_actions(&mut out, Some(feature), actions, row)?,
            _ => out.extend_from_slice(&buf[f.start..f.end]),
        }
    }
    if target.is_none() {
        push_with_actions(&mut out, None, actions, row)?;
    }
    Ok(out)
}
