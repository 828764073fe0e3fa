//! A `fex.v1.LoggedRequest` (proto/fex/v1/service.proto) read in place: the
//! log record's own fields and the samples of the `ExtractRequest` it holds.
//! Every length is checked by the wire `Reader`; offsets are absolute in the
//! logged record, so an error says where in it decoding stopped.

use crate::wire::{DecodeError, Reader, WireType, Within};

use super::NearlineError;

/// The samples of the logged call: `example_batch` (field 2) or
/// `examples` (field 3), each with its offset in the record.
#[derive(Debug, Clone)]
pub(super) enum Samples<'a> {
    Batch(&'a [u8], usize),
    Examples(Vec<(&'a [u8], usize)>),
}

/// One logged Extract call.
#[derive(Debug, Clone)]
pub(super) struct Logged<'a> {
    pub model: &'a str,
    pub unix_micros: i64,
    pub request_id: &'a str,
    pub samples: Samples<'a>,
}

impl<'a> Logged<'a> {
    pub fn decode(buf: &'a [u8]) -> Result<Self, NearlineError> {
        let mut model = "";
        let mut request_id = "";
        let mut unix_micros = 0;
        let mut samples = None;
        let mut r = Reader::new(buf, 0);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (1, WireType::Len) => {
                    let (body, at) = r.len_delimited().within("request", None)?;
                    samples = request(body, at).map_err(|e| e.within("request", None))?;
                }
                (2, WireType::Len) => model = text(&mut r, "model")?,
                (5, WireType::Varint) => unix_micros = r.varint().within("unix_micros", None)? as i64,
                (6, WireType::Len) => request_id = text(&mut r, "request_id")?,
                (1 | 2 | 5 | 6, _) => return Err(r.wrong_wire(field, wire, "its declared type").into()),
                _ => r.skip(field, wire)?,
            }
        }
        let samples = samples.ok_or(NearlineError::NoSamples)?;
        Ok(Self { model, unix_micros, request_id, samples })
    }
}

/// A string field's text; not UTF-8 is an error at its offset.
fn text<'a>(r: &mut Reader<'a>, what: &'static str) -> Result<&'a str, NearlineError> {
    let (body, at) = r.len_delimited().within(what, None)?;
    std::str::from_utf8(body).map_err(|e| NearlineError::Utf8 { what, offset: at + e.valid_up_to() })
}

/// The samples of an `ExtractRequest`; the oneof's last member wins.
fn request(buf: &[u8], base: usize) -> Result<Option<Samples<'_>>, DecodeError> {
    let mut out = None;
    let mut r = Reader::new(buf, base);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (2, WireType::Len) => {
                let (body, at) = r.len_delimited().within("example_batch", None)?;
                out = Some(Samples::Batch(body, at));
            }
            (3, WireType::Len) => {
                let (body, at) = r.len_delimited().within("examples", None)?;
                // Examples are merged when the field repeats, as a message is.
                let list = example_list(body, at).map_err(|e| e.within("examples", None))?;
                match &mut out {
                    Some(Samples::Examples(all)) => all.extend(list),
                    _ => out = Some(Samples::Examples(list)),
                }
            }
            (2 | 3, _) => return Err(r.wrong_wire(field, wire, "length-delimited")),
            _ => r.skip(field, wire)?,
        }
    }
    Ok(out)
}

/// `ExampleList.example` (field 1), each Example's bytes and offset.
fn example_list(buf: &[u8], base: usize) -> Result<Vec<(&[u8], usize)>, DecodeError> {
    let mut out = Vec::new();
    let mut r = Reader::new(buf, base);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (1, WireType::Len) => out.push(r.len_delimited().within("example", Some(out.len()))?),
            (1, _) => return Err(r.wrong_wire(field, wire, "length-delimited")),
            _ => r.skip(field, wire)?,
        }
    }
    Ok(out)
}
