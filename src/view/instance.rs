//! The legacy `parser.proto.Instance` read in place: flat fids, values, labels,
//! instance weight, LineId and the matrix features.

use crate::wire::{DecodeError, Reader, WireType, Within, for_each_fixed32_field, for_each_fixed64_field};

use super::{LineIdView, le_f32, le_u64};

/// A serialized `Instance`, with its top level checked.
#[derive(Debug, Clone, Copy)]
pub struct InstanceView<'a> {
    buf: &'a [u8],
    line_id: Option<(&'a [u8], usize)>,
    instance_weight: f32,
    data_source_key: u32,
}

/// One legacy matrix `Feature`: a name with fids and values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatrixFeature<'a> {
    pub name: &'a [u8],
    pub fids: Vec<u64>,
    pub floats: Vec<f32>,
    pub int64s: Vec<i64>,
    pub bytes: Vec<&'a [u8]>,
}

impl<'a> InstanceView<'a> {
    pub fn parse(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let mut view = Self { buf, line_id: None, instance_weight: 0.0, data_source_key: 0 };
        let mut r = Reader::new(buf, 0);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (4, WireType::Fixed32) => view.instance_weight = f32::from_bits(r.fixed32()?),
                (5, WireType::Len) => view.line_id = Some(r.len_delimited().within("line_id", None)?),
                (100, WireType::Varint) => view.data_source_key = r.varint()? as u32,
                (4 | 5 | 100, _) => return Err(r.wrong_wire(field, wire, "its declared type")),
                _ => r.skip(field, wire)?,
            }
        }
        Ok(view)
    }

    pub fn instance_weight(&self) -> f32 {
        self.instance_weight
    }

    pub fn data_source_key(&self) -> u32 {
        self.data_source_key
    }

    pub fn line_id(&self) -> Option<LineIdView<'a>> {
        self.line_id.map(|(b, at)| LineIdView::new(b, at))
    }

    /// Field 1 `fid` (packed or not).
    pub fn fids(&self) -> Result<Vec<u64>, DecodeError> {
        self.fixed64_field(1).within("fid", None)
    }

    /// Field 8 `next_fid`.
    pub fn next_fids(&self) -> Result<Vec<u64>, DecodeError> {
        self.fixed64_field(8).within("next_fid", None)
    }

    /// Field 2 `value`.
    pub fn values(&self) -> Result<Vec<f32>, DecodeError> {
        self.fixed32_field(2).within("value", None)
    }

    /// Field 3 `label`.
    pub fn labels(&self) -> Result<Vec<f32>, DecodeError> {
        self.fixed32_field(3).within("label", None)
    }

    /// Field 9, the matrix features, decoded.
    pub fn features(&self) -> Result<Vec<MatrixFeature<'a>>, DecodeError> {
        let mut out = Vec::new();
        let mut r = Reader::new(self.buf, 0);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            if field == 9 && wire == WireType::Len {
                let (body, at) = r.len_delimited()?;
                out.push(matrix_feature(body, at).within("feature", Some(out.len()))?);
            } else {
                r.skip(field, wire)?;
            }
        }
        Ok(out)
    }

    fn fixed64_field(&self, number: u32) -> Result<Vec<u64>, DecodeError> {
        let mut out = Vec::new();
        for_each_fixed64_field(self.buf, 0, number, |run| out.extend(run.chunks_exact(8).map(le_u64)))?;
        Ok(out)
    }

    fn fixed32_field(&self, number: u32) -> Result<Vec<f32>, DecodeError> {
        let mut out = Vec::new();
        for_each_fixed32_field(self.buf, 0, number, |run| out.extend(run.chunks_exact(4).map(le_f32)))?;
        Ok(out)
    }
}

fn matrix_feature(body: &[u8], at: usize) -> Result<MatrixFeature<'_>, DecodeError> {
    let mut out = MatrixFeature::default();
    let mut r = Reader::new(body, at);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (1, WireType::Len) => out.name = r.len_delimited()?.0,
            _ => r.skip(field, wire)?,
        }
    }
    for_each_fixed64_field(body, at, 2, |run| out.fids.extend(run.chunks_exact(8).map(le_u64)))?;
    for_each_fixed32_field(body, at, 3, |run| out.floats.extend(run.chunks_exact(4).map(le_f32)))?;
    let mut r = Reader::new(body, at);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (4, WireType::Varint) => out.int64s.push(r.varint()? as i64),
            (4, WireType::Len) => {
                let mut run = r.sub_reader()?;
                while !run.is_empty() {
                    out.int64s.push(run.varint()? as i64);
                }
            }
            (5, WireType::Len) => out.bytes.push(r.len_delimited()?.0),
            _ => r.skip(field, wire)?,
        }
    }
    Ok(out)
}
