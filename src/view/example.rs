//! `Example` (one row) read in place: its named features, LineId, labels and
//! instance weight.

use crate::wire::{DecodeError, DecodeErrorKind, Reader, WireType, Within};

use super::le_f32;

/// A serialized `Example`, with its top level checked.
#[derive(Debug, Clone, Copy)]
pub struct ExampleView<'a> {
    buf: &'a [u8],
    base: usize,
    line_id: Option<(&'a [u8], usize)>,
    instance_weight: f32,
    data_source_key: u32,
    features: usize,
}

/// One `NamedFeature`: its name and the Feature body (if any).
#[derive(Debug, Clone, Copy)]
pub struct NamedFeatureEntry<'a> {
    pub name: &'a [u8],
    pub feature: Option<(&'a [u8], usize)>,
    pub index: usize,
}

impl<'a> ExampleView<'a> {
    /// Checks the top level; `base` is the Example's offset in a larger buffer.
    pub fn parse(buf: &'a [u8], base: usize) -> Result<Self, DecodeError> {
        let mut view = Self { buf, base, line_id: None, instance_weight: 0.0, data_source_key: 0, features: 0 };
        let mut r = Reader::new(buf, base);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (1, WireType::Len) => {
                    r.len_delimited().within("named_feature", Some(view.features))?;
                    view.features += 1;
                }
                // Messages merge when repeated; LineId readers take the last value
                // of each field, so the last body is all a reader needs unless the
                // sender split one LineId in two, which no encoder does.
                (100, WireType::Len) => view.line_id = Some(r.len_delimited().within("line_id", None)?),
                (101, WireType::Len | WireType::Fixed32) => r.skip(field, wire)?,
                (102, WireType::Fixed32) => view.instance_weight = f32::from_bits(r.fixed32()?),
                (103, WireType::Varint) => view.data_source_key = r.varint()? as u32,
                (1 | 100 | 101 | 102 | 103, _) => return Err(r.wrong_wire(field, wire, "its declared type")),
                _ => r.skip(field, wire)?,
            }
        }
        Ok(view)
    }

    /// The serialized LineId (field 100) and its offset, if present.
    pub fn line_id(&self) -> Option<(&'a [u8], usize)> {
        self.line_id
    }

    /// Field 102 (0 when absent).
    pub fn instance_weight(&self) -> f32 {
        self.instance_weight
    }

    pub fn data_source_key(&self) -> u32 {
        self.data_source_key
    }

    pub fn feature_count(&self) -> usize {
        self.features
    }

    /// Calls `f` with each label (field 101, packed or not).
    pub fn labels(&self, mut f: impl FnMut(f32)) -> Result<(), DecodeError> {
        let mut r = Reader::new(self.buf, self.base);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (101, WireType::Len) => {
                    let (run, at) = r.len_delimited()?;
                    packed_floats(run, at, &mut f).within("label", None)?;
                }
                (101, WireType::Fixed32) => f(f32::from_bits(r.fixed32()?)),
                _ => r.skip(field, wire)?,
            }
        }
        Ok(())
    }

    /// The named features in wire order, with their Feature bodies located.
    pub fn features(&self) -> impl Iterator<Item = Result<NamedFeatureEntry<'a>, DecodeError>> + 'a {
        let mut r = Reader::new(self.buf, self.base);
        let mut index = 0;
        std::iter::from_fn(move || {
            while !r.is_empty() {
                let step = r.key().and_then(|(field, wire)| {
                    if field == 1 && wire == WireType::Len {
                        r.len_delimited().map(Some)
                    } else {
                        r.skip(field, wire).map(|()| None)
                    }
                });
                match step {
                    Ok(Some((body, at))) => {
                        let i = index;
                        index += 1;
                        return Some(named_feature(body, at, i).within("named_feature", Some(i)));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        r = Reader::new(&[], 0);
                        return Some(Err(e));
                    }
                }
            }
            None
        })
    }
}

/// Floats of one packed run (the body of a packed field 101).
fn packed_floats(run: &[u8], at: usize, f: &mut impl FnMut(f32)) -> Result<(), DecodeError> {
    if !run.len().is_multiple_of(4) {
        let kind = DecodeErrorKind::PackedLength { len: run.len(), element: 4 };
        return Err(DecodeError::new(kind, at));
    }
    run.chunks_exact(4).for_each(|c| f(le_f32(c)));
    Ok(())
}

/// Decodes a NamedFeature's name and locates its Feature body.
fn named_feature(body: &[u8], at: usize, index: usize) -> Result<NamedFeatureEntry<'_>, DecodeError> {
    let mut r = Reader::new(body, at);
    let mut entry = NamedFeatureEntry { name: &[], feature: None, index };
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        match (field, wire) {
            (1, WireType::Len) => entry.name = r.len_delimited()?.0,
            (2, WireType::Len) => entry.feature = Some(r.len_delimited().within("feature", None)?),
            (1 | 2, _) => return Err(r.wrong_wire(field, wire, "length-delimited")),
            _ => r.skip(field, wire)?,
        }
    }
    Ok(entry)
}

/// Labels of an Example, collected. Allocates; for tests and tools.
pub fn labels_of(view: &ExampleView<'_>) -> Result<Vec<f32>, DecodeError> {
    let mut out = Vec::new();
    view.labels(|v| out.push(v))?;
    Ok(out)
}
