//! A delta snapshot (seed 002 §3.4): raw features mined after the requests
//! were joined, keyed by request id and row, added to each request's
//! samples before a backfill extracts them, so a new output can read a
//! feature the logged requests never had.
//!
//! The delta is an Iceberg table of the same catalog: `request_id`
//! (string) and `row` (int: the row's index in the logged request, before
//! any transform), then one column per raw feature, named as the feature
//! the model reads:
//!
//! | column type | the Feature added |
//! |---|---|
//! | list<long> | `fid_v2_list` (fids) |
//! | list<float> | `float_list` |
//! | list<double> | `double_list` |
//! | binary, string | `bytes_list` of one value |
//! | list<binary>, list<string> | `bytes_list` |
//!
//! Other columns (a `request_time` to partition by, say) are not features.
//! Each record of a request gets, per delta column, a `NamedFeatureList`
//! (ExampleBatch: one Feature per row, empty where the delta has no row) or
//! a `NamedFeature` (an Example is one row): the encoded message appended
//! to the record's bytes, which protobuf reads as one more element of the
//! repeated field. A record that already has a feature of that name is an
//! error, not a silent second value.

use std::collections::HashMap;
use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use fex::offline::Payload;
use fex::proto::monolith::io::proto::{
    BytesList, DoubleList, ExampleBatch, Feature, FidList, FloatList, NamedFeature, NamedFeatureList, feature,
};
use fex::records::{ReadOptions, RecordReader, write_record};
use prost::Message;

use crate::TableError;

/// How a delta column becomes a Feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fids,
    Floats,
    Doubles,
    Bytes,
    BytesLists,
}

fn kind_of(dt: &DataType) -> Option<Kind> {
    match dt {
        DataType::Binary | DataType::LargeBinary | DataType::Utf8 | DataType::LargeUtf8 => Some(Kind::Bytes),
        DataType::List(item) | DataType::LargeList(item) => match item.data_type() {
            DataType::Int64 => Some(Kind::Fids),
            DataType::Float32 => Some(Kind::Floats),
            DataType::Float64 => Some(Kind::Doubles),
            DataType::Binary | DataType::LargeBinary | DataType::Utf8 | DataType::LargeUtf8 => Some(Kind::BytesLists),
            _ => None,
        },
        _ => None,
    }
}

/// The delta's rows, indexed by (request id, row).
pub struct Delta {
    name: String,
    /// Feature name and kind of each feature column, by its index in the batches.
    features: Vec<(String, usize, Kind)>,
    batches: Vec<RecordBatch>,
    /// Each request's rows: row → (batch, index in it).
    rows: HashMap<String, HashMap<i32, (usize, usize)>>,
    /// Rows in all.
    len: usize,
}

impl Delta {
    /// The delta of table `name` from its rows (read from its data files).
    pub fn new(name: &str, batches: Vec<RecordBatch>) -> Result<Self, TableError> {
        let bad = |m: String| TableError::Model(format!("delta {name}: {m}"));
        let Some(first) = batches.first() else {
            return Ok(Self { name: name.to_string(), features: Vec::new(), batches, rows: HashMap::new(), len: 0 });
        };
        let schema = first.schema();
        let (id_at, row_at) = match (schema.index_of("request_id"), schema.index_of("row")) {
            (Ok(i), Ok(r)) => (i, r),
            _ => return Err(bad("it has no request_id and row columns to key the rows by".into())),
        };
        let mut features = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            if i == id_at || i == row_at || f.name() == "request_time" {
                continue;
            }
            match kind_of(f.data_type()) {
                Some(kind) => features.push((f.name().clone(), i, kind)),
                None => {
                    return Err(bad(format!(
                        "column {:?} is {}; a raw feature is a list of longs (fids), floats, doubles or \
                         strings, or one string",
                        f.name(),
                        f.data_type()
                    )));
                }
            }
        }
        let mut rows: HashMap<String, HashMap<i32, (usize, usize)>> = HashMap::new();
        let mut len = 0;
        for (b, batch) in batches.iter().enumerate() {
            let column = batch.column(id_at);
            let ids: Vec<Option<&str>> = match column.data_type() {
                DataType::Utf8 => column.as_string::<i32>().iter().collect(),
                DataType::LargeUtf8 => column.as_string::<i64>().iter().collect(),
                other => return Err(bad(format!("request_id is {other}, not a string column"))),
            };
            let row = batch.column(row_at);
            let row = row.as_primitive_opt::<arrow_array::types::Int32Type>();
            let row = row.ok_or_else(|| bad("row is not an int column".into()))?;
            for (r, id) in ids.into_iter().enumerate() {
                let Some(id) = id.filter(|_| row.is_valid(r)) else { continue };
                if rows.entry(id.to_string()).or_default().insert(row.value(r), (b, r)).is_some() {
                    return Err(bad(format!("request {id} row {} is in it twice", row.value(r))));
                }
                len += 1;
            }
        }
        Ok(Self { name: name.to_string(), features, batches, rows, len })
    }

    /// The feature names the delta adds.
    pub fn feature_names(&self) -> Vec<&str> {
        self.features.iter().map(|(n, _, _)| n.as_str()).collect()
    }

    /// Rows the delta has.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The framed records `joined` of request `request_id` with the delta's
    /// features added to each record.
    pub fn add_to(&self, request_id: &str, payload: Payload, joined: &[u8]) -> Result<Vec<u8>, TableError> {
        let bad = |m: String| TableError::Model(format!("request {request_id}: {m}"));
        let mut reader = RecordReader::new(request_id, Cursor::new(joined.to_vec()), ReadOptions::default())
            .map_err(|e| bad(e.to_string()))?;
        let mut out = Vec::with_capacity(joined.len() + 64);
        let mut record = Vec::new();
        let mut row = 0i32;
        let rows = self.rows.get(request_id);
        while reader.next_into(&mut record).map_err(|e| bad(e.to_string()))?.is_some() {
            match payload {
                Payload::ExampleBatch => {
                    let batch = ExampleBatch::decode(record.as_slice()).map_err(|e| bad(e.to_string()))?;
                    let size = batch.batch_size.max(0);
                    for (name, column, kind) in &self.features {
                        if batch.named_feature_list.iter().any(|l| &l.name == name) {
                            return Err(bad(format!(
                                "it has a feature {name:?} already; the delta {} adds one",
                                self.name
                            )));
                        }
                        let feature = (0..size).map(|r| self.feature(rows, row + r, *column, *kind)).collect();
                        let list = NamedFeatureList { name: name.clone(), feature, ..Default::default() };
                        append(&mut record, &list);
                    }
                    row += size;
                }
                Payload::Example => {
                    let example = fex::proto::monolith::io::proto::Example::decode(record.as_slice())
                        .map_err(|e| bad(e.to_string()))?;
                    for (name, column, kind) in &self.features {
                        if example.named_feature.iter().any(|f| &f.name == name) {
                            return Err(bad(format!(
                                "it has a feature {name:?} already; the delta {} adds one",
                                self.name
                            )));
                        }
                        let feature = Some(self.feature(rows, row, *column, *kind));
                        append(&mut record, &NamedFeature { name: name.clone(), feature, ..Default::default() });
                    }
                    row += 1;
                }
                Payload::Instance => return Err(bad("a delta adds features to Examples and ExampleBatches".into())),
            }
            write_record(&mut out, &record)?;
        }
        Ok(out)
    }

    /// The Feature of `column` for `row` of a request whose delta rows are
    /// `rows`: empty where the delta has no such row or a null.
    fn feature(&self, rows: Option<&HashMap<i32, (usize, usize)>>, row: i32, column: usize, kind: Kind) -> Feature {
        let value = rows.and_then(|rows| rows.get(&row)).and_then(|&(b, r)| {
            let array = self.batches[b].column(column);
            array.is_valid(r).then_some((array, r))
        });
        let Some((array, r)) = value else { return Feature::default() };
        let items = |array: &ArrayRef| -> ArrayRef {
            match array.data_type() {
                DataType::LargeList(_) => array.as_list::<i64>().value(r),
                _ => array.as_list::<i32>().value(r),
            }
        };
        let bytes_of = |a: &ArrayRef| -> Vec<Vec<u8>> {
            match a.data_type() {
                DataType::Binary => a.as_binary::<i32>().iter().map(|v| v.unwrap_or_default().to_vec()).collect(),
                DataType::LargeBinary => a.as_binary::<i64>().iter().map(|v| v.unwrap_or_default().to_vec()).collect(),
                DataType::Utf8 => {
                    a.as_string::<i32>().iter().map(|v| v.unwrap_or_default().as_bytes().to_vec()).collect()
                }
                _ => a.as_string::<i64>().iter().map(|v| v.unwrap_or_default().as_bytes().to_vec()).collect(),
            }
        };
        let kind = match kind {
            Kind::Fids => {
                let values = items(array);
                let value = values.as_primitive::<Int64Type>().values().iter().map(|&v| v as u64).collect();
                feature::Type::FidV2List(FidList { value })
            }
            Kind::Floats => {
                let value = items(array).as_primitive::<Float32Type>().values().to_vec();
                feature::Type::FloatList(FloatList { value })
            }
            Kind::Doubles => {
                let value = items(array).as_primitive::<Float64Type>().values().to_vec();
                feature::Type::DoubleList(DoubleList { value })
            }
            Kind::Bytes => feature::Type::BytesList(BytesList { value: bytes_of(&array.slice(r, 1)) }),
            Kind::BytesLists => feature::Type::BytesList(BytesList { value: bytes_of(&items(array)) }),
        };
        Feature { r#type: Some(kind) }
    }
}

/// `message` appended to `record` as field 1 (ExampleBatch's
/// `named_feature_list`, Example's `named_feature`): its tag, length and bytes.
fn append(record: &mut Vec<u8>, message: &impl Message) {
    record.push(0x0A); // field 1, length-delimited
    prost::encoding::encode_varint(message.encoded_len() as u64, record);
    message.encode_raw(record);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int64Builder, ListBuilder};
    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    fn delta() -> Delta {
        let mut fids = ListBuilder::new(Int64Builder::new());
        fids.values().append_value(-1);
        fids.values().append_value(7);
        fids.append(true);
        fids.append(false);
        let fids = fids.finish();
        let schema = Schema::new(vec![
            Field::new("request_id", DataType::Utf8, true),
            Field::new("row", DataType::Int32, false),
            Field::new("mined", fids.data_type().clone(), true),
            Field::new("tag", DataType::Utf8, true),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(vec!["a", "a"])),
                Arc::new(Int32Array::from(vec![1, 0])),
                Arc::new(fids),
                Arc::new(StringArray::from(vec![Some("x"), None])),
            ],
        )
        .unwrap();
        Delta::new("fex.delta", vec![batch]).unwrap()
    }

    #[test]
    fn each_row_of_a_batch_gets_its_features_and_missing_rows_empty_ones() {
        let d = delta();
        assert_eq!(d.feature_names(), ["mined", "tag"]);
        let batch = ExampleBatch { batch_size: 3, ..Default::default() };
        let mut framed = Vec::new();
        write_record(&mut framed, &batch.encode_to_vec()).unwrap();
        let out = d.add_to("a", Payload::ExampleBatch, &framed).unwrap();
        let decoded = ExampleBatch::decode(&out[8..]).unwrap();
        assert_eq!(decoded.batch_size, 3);
        let mined = &decoded.named_feature_list[0];
        assert_eq!(mined.name, "mined");
        // Row 0's value is null, row 1 has two fids (u64 bits of -1), row 2 is not in the delta.
        assert_eq!(mined.feature[0], Feature::default());
        assert_eq!(mined.feature[1].r#type, Some(feature::Type::FidV2List(FidList { value: vec![u64::MAX, 7] })));
        assert_eq!(mined.feature[2], Feature::default());
        let tag = &decoded.named_feature_list[1];
        assert_eq!(tag.feature[1].r#type, Some(feature::Type::BytesList(BytesList { value: vec![b"x".to_vec()] })));
        // Twice is refused: the record has the feature now.
        let again = d.add_to("a", Payload::ExampleBatch, &out).unwrap_err().to_string();
        assert!(again.contains("has a feature \"mined\" already"), "{again}");
    }

    #[test]
    fn a_column_that_is_no_feature_is_refused_by_name() {
        let schema = Schema::new(vec![
            Field::new("request_id", DataType::Utf8, true),
            Field::new("row", DataType::Int32, false),
            Field::new("when", DataType::Int32, true),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(vec!["a"])),
                Arc::new(Int32Array::from(vec![0])),
                Arc::new(Int32Array::from(vec![0])),
            ],
        )
        .unwrap();
        let err = Delta::new("fex.d", vec![batch]).err().unwrap().to_string();
        assert!(err.contains("column \"when\" is Int32"), "{err}");
    }
}
