//! `ExampleBatch` and `NamedFeatureList` read in place. The batch is scanned at
//! the top level only; a list's name is peeked without touching its features, so
//! lists a plan does not need are skipped by their length prefix.

use crate::wire::{DecodeError, Reader, WireType, Within};

use super::FeatureView;

/// `FeatureListType`: SHARED lists hold one Feature used by every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    Individual,
    Shared,
}

/// A serialized `ExampleBatch`, with its top level checked.
#[derive(Debug, Clone, Copy)]
pub struct ExampleBatchView<'a> {
    buf: &'a [u8],
    batch_size: i32,
    data_source_key: u32,
    lists: usize,
}

impl<'a> ExampleBatchView<'a> {
    /// Checks the top level: every field's key and length; lists are not entered.
    pub fn parse(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let mut view = Self { buf, batch_size: 0, data_source_key: 0, lists: 0 };
        let mut r = Reader::new(buf, 0);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (1, WireType::Len) => {
                    r.len_delimited().within("named_feature_list", Some(view.lists))?;
                    view.lists += 1;
                }
                (3, WireType::Varint) => view.batch_size = r.varint().within("batch_size", None)? as i32,
                (100, WireType::Varint) => view.data_source_key = r.varint()? as u32,
                (1 | 3 | 100, _) => return Err(r.wrong_wire(field, wire, "its declared type")),
                _ => r.skip(field, wire)?,
            }
        }
        Ok(view)
    }

    pub fn batch_size(&self) -> i32 {
        self.batch_size
    }

    pub fn data_source_key(&self) -> u32 {
        self.data_source_key
    }

    /// Number of `named_feature_list` entries.
    pub fn list_count(&self) -> usize {
        self.lists
    }

    /// The named feature lists in wire order, not yet entered.
    pub fn lists(&self) -> ListIter<'a> {
        ListIter { r: Reader::new(self.buf, 0), index: 0 }
    }
}

/// Iterates `named_feature_list` bodies. The batch was checked by `parse`, so
/// a failure here can only come from a buffer that was not.
pub struct ListIter<'a> {
    r: Reader<'a>,
    index: usize,
}

impl<'a> Iterator for ListIter<'a> {
    type Item = Result<ListEntry<'a>, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while !self.r.is_empty() {
            let step = self.r.key().and_then(|(field, wire)| {
                if field == 1 && wire == WireType::Len {
                    self.r.len_delimited().map(Some)
                } else {
                    self.r.skip(field, wire).map(|()| None)
                }
            });
            match step {
                Ok(Some((body, base))) => {
                    let index = self.index;
                    self.index += 1;
                    return Some(Ok(ListEntry { body, base, index }));
                }
                Ok(None) => {}
                Err(e) => {
                    self.r = Reader::new(&[], 0);
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

/// One `NamedFeatureList`, located but not decoded.
#[derive(Debug, Clone, Copy)]
pub struct ListEntry<'a> {
    pub body: &'a [u8],
    pub base: usize,
    /// Position among the batch's lists, for error paths.
    pub index: usize,
}

impl<'a> ListEntry<'a> {
    /// The list's name: reads keys until field 1, skipping features by length.
    /// A name repeated on the wire resolves to the last one, as in protobuf.
    #[inline]
    pub fn name(&self) -> Result<&'a [u8], DecodeError> {
        self.peek_name().within("named_feature_list", Some(self.index))
    }

    #[inline]
    fn peek_name(&self) -> Result<&'a [u8], DecodeError> {
        // Names come first in every encoder we know; keep scanning only to
        // honour a later duplicate, which costs a key and a length per field.
        Reader::new(self.body, self.base).last_len_field(1)
    }

    /// Decodes the list header and hands each Feature body to `f`.
    pub fn decode(
        &self,
        mut f: impl FnMut(usize, &'a [u8], usize) -> Result<(), DecodeError>,
    ) -> Result<ListType, DecodeError> {
        self.decode_inner(&mut f).within("named_feature_list", Some(self.index))
    }

    fn decode_inner(
        &self,
        f: &mut impl FnMut(usize, &'a [u8], usize) -> Result<(), DecodeError>,
    ) -> Result<ListType, DecodeError> {
        let mut r = Reader::new(self.body, self.base);
        let mut list_type = ListType::Individual;
        let mut n = 0;
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match (field, wire) {
                (2, WireType::Len) => {
                    let (body, at) = r.len_delimited().within("feature", Some(n))?;
                    f(n, body, at).within("feature", Some(n))?;
                    n += 1;
                }
                (3, WireType::Varint) => {
                    list_type = if r.varint()? as i32 == 1 { ListType::Shared } else { ListType::Individual };
                }
                (1, WireType::Len) => r.skip(field, wire)?,
                (1..=3, _) => return Err(r.wrong_wire(field, wire, "its declared type")),
                _ => r.skip(field, wire)?,
            }
        }
        Ok(list_type)
    }

    /// The whole list decoded into views. Allocates; for tests and tools.
    pub fn features(&self) -> Result<(ListType, Vec<FeatureView<'a>>), DecodeError> {
        let mut out = Vec::new();
        let t = self.decode(|_, body, at| {
            out.push(FeatureView::parse(body, at)?);
            Ok(())
        })?;
        Ok((t, out))
    }
}
