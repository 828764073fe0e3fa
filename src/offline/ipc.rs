//! Arrow IPC record batch messages for the tables `table::to_batch` makes,
//! without arrow-ipc's general path: that one rebuilds an `ArrayData` for
//! every column and slice and allocates a buffer for every pad, which cost
//! 12% of `fex extract --format arrow` on the default model. This one walks
//! the arrays, shares their buffers, and builds the flatbuffer header with
//! arrow-ipc's own builders in arrow-ipc's order, so the bytes are the ones
//! `arrow_ipc::writer::StreamWriter` writes (with its default options:
//! metadata V5, 64-byte alignment, no compression): the tests below compare
//! the message of every layout, and slices of it, with StreamWriter's, and
//! tests/offline.rs whole streams. A batch it does not know (nulls, other
//! types, no rows) is left to arrow-ipc: `encode` says None.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{Array, OffsetSizeTrait, RecordBatch};
use arrow_buffer::{Buffer, OffsetBuffer};
use arrow_schema::DataType;

/// Every body buffer starts at a multiple of this.
const ALIGNMENT: usize = 64;
/// The IPC stream's continuation marker.
const CONTINUATION: [u8; 4] = [0xff; 4];

pub(super) struct Encoder {
    fbb: flatbuffers::FlatBufferBuilder<'static>,
    nodes: Vec<arrow_ipc::FieldNode>,
    /// Where each body buffer is, in the header.
    layout: Vec<arrow_ipc::Buffer>,
    /// The message: header, then each body buffer and its padding.
    parts: Vec<Buffer>,
    /// Bytes of body so far.
    body: usize,
    zeros: Buffer,
}

impl Encoder {
    pub(super) fn new() -> Self {
        Self {
            fbb: flatbuffers::FlatBufferBuilder::new(),
            nodes: Vec::new(),
            layout: Vec::new(),
            parts: Vec::new(),
            body: 0,
            zeros: Buffer::from_vec(vec![0u8; ALIGNMENT]),
        }
    }

    /// The message's parts, in the order they are written; None for a
    /// batch this encoder leaves to arrow-ipc.
    pub(super) fn encode(&mut self, batch: &RecordBatch) -> Option<Vec<Buffer>> {
        let rows = batch.num_rows();
        if rows == 0 {
            return None;
        }
        self.nodes.clear();
        self.layout.clear();
        self.parts.clear();
        self.body = 0;
        // The header goes first; its place is kept.
        self.parts.push(self.zeros.slice_with_length(0, 0));
        for column in batch.columns() {
            self.array(column.as_ref(), 0, rows)?;
        }
        let fbb = &mut self.fbb;
        fbb.reset();
        let buffers = fbb.create_vector(&self.layout);
        let nodes = fbb.create_vector(&self.nodes);
        let mut record_batch = arrow_ipc::RecordBatchBuilder::new(fbb);
        record_batch.add_length(rows as i64);
        record_batch.add_nodes(nodes);
        record_batch.add_buffers(buffers);
        let record_batch = record_batch.finish();
        let mut message = arrow_ipc::MessageBuilder::new(fbb);
        message.add_version(arrow_ipc::MetadataVersion::V5);
        message.add_header_type(arrow_ipc::MessageHeader::RecordBatch);
        message.add_bodyLength(self.body as i64);
        message.add_header(record_batch.as_union_value());
        let root = message.finish();
        fbb.finish(root, None);
        let metadata = fbb.finished_data();
        // Continuation, length, metadata, padded to the alignment.
        let padded = (metadata.len() + 8).next_multiple_of(ALIGNMENT);
        let mut header = Vec::with_capacity(padded);
        header.extend_from_slice(&CONTINUATION);
        header.extend_from_slice(&i32::try_from(padded - 8).ok()?.to_le_bytes());
        header.extend_from_slice(metadata);
        header.resize(padded, 0);
        self.parts[0] = Buffer::from_vec(header);
        Some(std::mem::take(&mut self.parts))
    }

    /// Rows `start..start + len` of `array`: its node, its buffers, then its
    /// children's, as arrow-ipc's `write_array_data` lays them out.
    fn array(&mut self, array: &dyn Array, start: usize, len: usize) -> Option<()> {
        if array.null_count() > 0 {
            return None;
        }
        self.nodes.push(arrow_ipc::FieldNode::new(len as i64, 0));
        // No nulls: an empty validity buffer.
        self.buffer(self.zeros.slice_with_length(0, 0));
        match array.data_type() {
            DataType::Int32 => self.values(array.as_primitive::<Int32Type>().values().inner(), 4, start, len),
            DataType::Int64 => self.values(array.as_primitive::<Int64Type>().values().inner(), 8, start, len),
            DataType::UInt64 => self.values(array.as_primitive::<UInt64Type>().values().inner(), 8, start, len),
            DataType::Float32 => self.values(array.as_primitive::<Float32Type>().values().inner(), 4, start, len),
            DataType::Float64 => self.values(array.as_primitive::<Float64Type>().values().inner(), 8, start, len),
            DataType::LargeBinary => {
                let a = array.as_binary::<i64>();
                let (first, last) = self.offsets(a.offsets(), start, len)?;
                if first > last || last > a.values().len() {
                    return None;
                }
                self.buffer(a.values().slice_with_length(first, last - first));
                Some(())
            }
            DataType::List(_) => self.list::<i32>(array, start, len),
            DataType::LargeList(_) => self.list::<i64>(array, start, len),
            DataType::FixedSizeList(_, size) => {
                let size = usize::try_from(*size).ok()?;
                let a = array.as_fixed_size_list();
                self.array(a.values().as_ref(), start * size, len * size)
            }
            DataType::Struct(_) => {
                for child in array.as_struct().columns() {
                    self.array(child.as_ref(), start, len)?;
                }
                Some(())
            }
            _ => None,
        }
    }

    fn list<O: OffsetSizeTrait>(&mut self, array: &dyn Array, start: usize, len: usize) -> Option<()> {
        let a = array.as_list::<O>();
        let (first, last) = self.offsets(a.offsets(), start, len)?;
        self.array(a.values().as_ref(), first, last.checked_sub(first)?)
    }

    /// Writes the offsets of rows `start..start + len` and returns the range
    /// of values they cover. Offsets that do not start at 0 (a slice of
    /// rows: a keyed-jagged output's keys) are rebased, as arrow-ipc does.
    fn offsets<O: OffsetSizeTrait>(
        &mut self,
        offsets: &OffsetBuffer<O>,
        start: usize,
        len: usize,
    ) -> Option<(usize, usize)> {
        let rows = offsets.get(start..start + len + 1)?;
        let (first, last) = (rows[0], rows[len]);
        let buffer = if first == O::zero() {
            let width = std::mem::size_of::<O>();
            offsets.inner().inner().slice_with_length(start * width, (len + 1) * width)
        } else {
            Buffer::from_vec(rows.iter().map(|&o| o - first).collect::<Vec<O>>())
        };
        self.buffer(buffer);
        Some((first.as_usize(), last.as_usize()))
    }

    fn values(&mut self, values: &Buffer, width: usize, start: usize, len: usize) -> Option<()> {
        let from = start * width;
        let bytes = (len * width).min(values.len().checked_sub(from)?);
        self.buffer(values.slice_with_length(from, bytes));
        Some(())
    }

    /// A body buffer, then its padding to the alignment.
    fn buffer(&mut self, buffer: Buffer) {
        let len = buffer.len();
        let pad = len.next_multiple_of(ALIGNMENT) - len;
        self.layout.push(arrow_ipc::Buffer::new(self.body as i64, len as i64));
        self.body += len + pad;
        if len > 0 {
            self.parts.push(buffer);
        }
        if pad > 0 {
            self.parts.push(self.zeros.slice_with_length(0, pad));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::UInt64Type;
    use arrow_array::{
        ArrayRef, FixedSizeListArray, GenericListArray, LargeBinaryArray, PrimitiveArray, RecordBatch, StructArray,
    };
    use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
    use arrow_schema::{Field, Fields};

    use super::*;

    fn prim<T: arrow_array::ArrowPrimitiveType>(v: Vec<T::Native>) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), None))
    }

    fn list<O: OffsetSizeTrait>(splits: Vec<O>, items: ArrayRef) -> ArrayRef {
        let field = Arc::new(Field::new("item", items.data_type().clone(), false));
        Arc::new(GenericListArray::<O>::new(field, OffsetBuffer::new(ScalarBuffer::from(splits)), items, None))
    }

    fn fixed(items: ArrayRef, width: i32) -> ArrayRef {
        let field = Arc::new(Field::new("item", items.data_type().clone(), false));
        Arc::new(FixedSizeListArray::new(field, width, items, None))
    }

    fn weighted(values: ArrayRef, weights: Vec<f32>) -> ArrayRef {
        let weights = prim::<Float32Type>(weights);
        let fields = Fields::from(vec![
            Field::new("value", values.data_type().clone(), false),
            Field::new("weight", DataType::Float32, false),
        ]);
        Arc::new(StructArray::new(fields, vec![values, weights], None))
    }

    /// Every layout `Column::into_arrow` makes, three rows.
    fn every_layout() -> RecordBatch {
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("ragged_i32", list(vec![0i32, 2, 2, 5], prim::<Int64Type>(vec![1, 2, 3, 4, 5]))),
            ("ragged_u64_i64", list(vec![0i64, 1, 3, 4], prim::<UInt64Type>(vec![u64::MAX, 7, 8, 9]))),
            ("sequence", list(vec![0i32, 1, 1, 3], fixed(prim::<Int64Type>(vec![1, 2, 3, 4, 5, 6]), 2))),
            ("weighted", list(vec![0i32, 1, 2, 2], weighted(prim::<UInt64Type>(vec![10, 11]), vec![0.5, 1.5]))),
            ("dense_2x3", fixed(prim::<Float32Type>((0..18).map(|i| i as f32).collect()), 6)),
            ("dense_1", fixed(prim::<Float64Type>(vec![0.25, 0.5, 0.75]), 1)),
            ("scalar", prim::<Float32Type>(vec![1.0, 2.0, 3.0])),
            ("label_i32", prim::<Int32Type>(vec![1, 0, 1])),
            (
                "strings",
                Arc::new(LargeBinaryArray::new(
                    OffsetBuffer::new(ScalarBuffer::from(vec![0i64, 3, 3, 8])),
                    Buffer::from_vec(b"abcdefgh".to_vec()),
                    None,
                )),
            ),
            // Keyed-jagged: keys * rows entries (2 keys here), with weights.
            ("kjt", list(vec![0i64, 1, 1, 2, 4, 4, 5], weighted(prim::<Int64Type>(vec![1, 2, 3, 4, 5]), vec![1.0; 5]))),
        ];
        let columns = columns.into_iter().map(|(name, a)| {
            if name == "kjt" {
                // Keyed-jagged columns have keys * rows entries; the test
                // batch holds them as a list of the rows' lists instead.
                (name, list(vec![0i32, 2, 4, 6], a))
            } else {
                (name, a)
            }
        });
        RecordBatch::try_from_iter(columns).unwrap()
    }

    /// The record batch message arrow-ipc's StreamWriter writes for `batch`.
    fn arrow_ipc_message(batch: &RecordBatch) -> Vec<u8> {
        let stream = |batches: &[&RecordBatch]| {
            let mut out = Vec::new();
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
            for b in batches {
                w.write(b).unwrap();
            }
            w.finish().unwrap();
            drop(w);
            out
        };
        let schema_only = stream(&[]);
        let with_batch = stream(&[batch]);
        // Schema message, the batch's message, the 8-byte end of stream.
        with_batch[schema_only.len() - 8..with_batch.len() - 8].to_vec()
    }

    fn ours(batch: &RecordBatch) -> Option<Vec<u8>> {
        let parts = Encoder::new().encode(batch)?;
        Some(parts.iter().flat_map(|p| p.as_slice().iter().copied()).collect())
    }

    #[test]
    fn every_layout_is_encoded_as_arrow_ipc_encodes_it() {
        let batch = every_layout();
        let mut encoder = Encoder::new();
        for _ in 0..2 {
            // Twice: the encoder's state is reset between messages.
            let parts = encoder.encode(&batch).expect("every layout takes the fast path");
            let bytes: Vec<u8> = parts.iter().flat_map(|p| p.as_slice().iter().copied()).collect();
            assert!(bytes == arrow_ipc_message(&batch), "the message differs from arrow-ipc's");
        }
        // Each column alone, too, and slices of rows: offsets that do not
        // start at 0 are rebased (keyed-jagged columns are such slices).
        for i in 0..batch.num_columns() {
            let one = batch.project(&[i]).unwrap();
            assert_eq!(ours(&one), Some(arrow_ipc_message(&one)), "column {}", batch.schema().field(i).name());
        }
        for (start, len) in [(1, 2), (2, 1), (1, 1), (0, 2)] {
            let rows = batch.slice(start, len);
            assert_eq!(ours(&rows), Some(arrow_ipc_message(&rows)), "rows {start}..{}", start + len);
        }
    }

    /// Three rows and no values in any list: the batch a reader makes when
    /// no row has a feature of a group (issue 24), weights included.
    fn no_values() -> RecordBatch {
        let none = || prim::<UInt64Type>(vec![]);
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("ragged_i32", list(vec![0i32; 4], prim::<Int64Type>(vec![]))),
            ("ragged_i64", list(vec![0i64; 4], none())),
            ("sequence", list(vec![0i32; 4], fixed(prim::<Int64Type>(vec![]), 2))),
            ("weighted_i32", list(vec![0i32; 4], weighted(none(), vec![]))),
            ("weighted_i64", list(vec![0i64; 4], weighted(none(), vec![]))),
            (
                "strings",
                Arc::new(LargeBinaryArray::new(
                    OffsetBuffer::new(ScalarBuffer::from(vec![0i64; 4])),
                    Buffer::from_vec(Vec::<u8>::new()),
                    None,
                )),
            ),
        ];
        RecordBatch::try_from_iter(columns).unwrap()
    }

    #[test]
    fn lists_without_values_are_encoded_as_arrow_ipc_encodes_them() {
        let batch = no_values();
        assert_eq!(ours(&batch), Some(arrow_ipc_message(&batch)));
        for i in 0..batch.num_columns() {
            let one = batch.project(&[i]).unwrap();
            assert_eq!(ours(&one), Some(arrow_ipc_message(&one)), "column {}", batch.schema().field(i).name());
        }
    }

    #[test]
    fn batches_it_does_not_know_are_left_to_arrow_ipc() {
        let batch = every_layout();
        // Nulls.
        let nulls: ArrayRef = Arc::new(PrimitiveArray::<Int64Type>::new(
            ScalarBuffer::from(vec![1, 2]),
            Some(NullBuffer::from(vec![true, false])),
        ));
        assert_eq!(ours(&RecordBatch::try_from_iter([("n", nulls)]).unwrap()), None);
        // Other types.
        let bools: ArrayRef = Arc::new(arrow_array::BooleanArray::from(vec![true, false]));
        assert_eq!(ours(&RecordBatch::try_from_iter([("b", bools)]).unwrap()), None);
        // No rows.
        assert_eq!(ours(&batch.slice(0, 0)), None);
    }
}
