//! The sample table's schema: identity columns, then one column per model
//! output, typed as `fex extract` writes Parquet where Iceberg has the type:
//!
//! | fex's Arrow | Iceberg |
//! |---|---|
//! | Int32 / Int64 / Float32 / Float64 / Boolean | int / long / float / double / boolean |
//! | UInt64 (fids) | long, the same 64 bits (Iceberg has no unsigned type) |
//! | Binary, LargeBinary (strings) | binary |
//! | Utf8, LargeUtf8 | string |
//! | List, LargeList, FixedSizeList | list (a fixed size is not kept) |
//! | Struct | struct |
//!
//! The identity: `request_id` (string), `row` (int: the row's index in its
//! record's output) and `request_time` (timestamptz), the column the table
//! is partitioned by.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema as ArrowSchema, SchemaRef};
use iceberg::spec::{ListType, NestedField, NestedFieldRef, PrimitiveType, Schema, StructType, Type};

use crate::TableError;
use crate::identity::{REQUEST_ID_OUTPUT, REQUEST_TIME_OUTPUT};

pub use fex::offline::identity::{REQUEST_ID, REQUEST_TIME, ROW};

/// The metadata key Parquet's Arrow writer reads a field's id from.
const FIELD_ID: &str = "PARQUET:field_id";

/// The table's schema for a model whose Arrow table (with the identity
/// outputs) is `outputs`. Ids are numbered here; a catalog may number them
/// again when it creates the table (read them back from the table).
pub fn table_schema(outputs: &ArrowSchema) -> Result<Schema, TableError> {
    let mut next = 1;
    let mut id = || {
        let i = next;
        next += 1;
        i
    };
    let mut fields: Vec<NestedFieldRef> = vec![
        Arc::new(NestedField::optional(id(), REQUEST_ID, Type::Primitive(PrimitiveType::String))),
        Arc::new(NestedField::required(id(), ROW, Type::Primitive(PrimitiveType::Int))),
        Arc::new(NestedField::optional(id(), REQUEST_TIME, Type::Primitive(PrimitiveType::Timestamptz))),
    ];
    let mut problems = Vec::new();
    for f in model_fields(outputs) {
        if [REQUEST_ID, ROW, REQUEST_TIME].contains(&f.name().as_str()) {
            problems.push(format!("output {:?} has the name of an identity column", f.name()));
            continue;
        }
        match iceberg_type(f.data_type(), &mut id) {
            Ok(t) => fields.push(Arc::new(NestedField::new(id(), f.name(), t, !f.is_nullable()))),
            Err(what) => problems.push(format!("output {:?}: {what}", f.name())),
        }
    }
    if !problems.is_empty() {
        return Err(TableError::Model(format!(
            "the model's outputs cannot be an Iceberg table: {}",
            problems.join("; ")
        )));
    }
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// The model's own outputs: the Arrow table without the identity outputs.
pub fn model_fields(outputs: &ArrowSchema) -> impl Iterator<Item = &Arc<Field>> {
    outputs.fields().iter().filter(|f| f.name() != REQUEST_ID_OUTPUT && f.name() != REQUEST_TIME_OUTPUT)
}

fn iceberg_type(dt: &DataType, id: &mut impl FnMut() -> i32) -> Result<Type, String> {
    let p = |p| Ok(Type::Primitive(p));
    match dt {
        DataType::Boolean => p(PrimitiveType::Boolean),
        DataType::Int32 => p(PrimitiveType::Int),
        DataType::Int64 | DataType::UInt64 => p(PrimitiveType::Long),
        DataType::Float32 => p(PrimitiveType::Float),
        DataType::Float64 => p(PrimitiveType::Double),
        DataType::Binary | DataType::LargeBinary => p(PrimitiveType::Binary),
        DataType::Utf8 | DataType::LargeUtf8 => p(PrimitiveType::String),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            let element_id = id();
            let element = iceberg_type(item.data_type(), id)?;
            Ok(Type::List(ListType::new(Arc::new(NestedField::list_element(element_id, element, !item.is_nullable())))))
        }
        DataType::Struct(fields) => {
            let ids: Vec<i32> = fields.iter().map(|_| id()).collect();
            let mut nested = Vec::with_capacity(fields.len());
            for (f, i) in fields.iter().zip(ids) {
                nested.push(Arc::new(NestedField::new(
                    i,
                    f.name(),
                    iceberg_type(f.data_type(), id)?,
                    !f.is_nullable(),
                )));
            }
            Ok(Type::Struct(StructType::new(nested)))
        }
        other => Err(format!("Arrow type {other} has no Iceberg type here")),
    }
}

/// Whether a table's schema can take the model's rows: every column the
/// model writes is in the table with the same type (ids aside), and every
/// column the table requires is written. Each problem is named.
pub fn check(table_name: &str, table: &Schema, wanted: &Schema) -> Result<(), TableError> {
    let mut problems = Vec::new();
    for f in wanted.as_struct().fields() {
        match table.as_struct().fields().iter().find(|t| t.name == f.name) {
            None => problems.push(format!("column {:?} ({}) is not in the table", f.name, type_name(&f.field_type))),
            Some(t) => {
                if !same_type(&t.field_type, &f.field_type) {
                    let (had, wants) = (type_name(&t.field_type), type_name(&f.field_type));
                    problems.push(format!("column {:?} is {had} in the table, {wants} for the model", f.name));
                } else if t.required && !f.required {
                    problems
                        .push(format!("column {:?} is required in the table and may be null for the model", f.name));
                }
            }
        }
    }
    for t in table.as_struct().fields() {
        if t.required && !wanted.as_struct().fields().iter().any(|f| f.name == t.name) {
            problems.push(format!(
                "the table requires column {:?} ({}), which the model does not write",
                t.name,
                type_name(&t.field_type)
            ));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(TableError::Mismatch { table: table_name.to_string(), problems }) }
}

/// A type as Iceberg's docs write it: `list<float>`, `struct<value: long>`.
pub fn type_name(t: &Type) -> String {
    match t {
        Type::Primitive(p) => p.to_string(),
        Type::List(l) => format!("list<{}>", type_name(&l.element_field.field_type)),
        Type::Map(m) => {
            format!("map<{}, {}>", type_name(&m.key_field.field_type), type_name(&m.value_field.field_type))
        }
        Type::Struct(s) => {
            let fields: Vec<String> =
                s.fields().iter().map(|f| format!("{}: {}", f.name, type_name(&f.field_type))).collect();
            format!("struct<{}>", fields.join(", "))
        }
    }
}

fn same_type(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::Primitive(x), Type::Primitive(y)) => x == y,
        (Type::List(x), Type::List(y)) => same_type(&x.element_field.field_type, &y.element_field.field_type),
        (Type::Struct(x), Type::Struct(y)) => {
            x.fields().len() == y.fields().len()
                && x.fields()
                    .iter()
                    .zip(y.fields())
                    .all(|(p, q)| p.name == q.name && same_type(&p.field_type, &q.field_type))
        }
        (Type::Map(x), Type::Map(y)) => {
            same_type(&x.key_field.field_type, &y.key_field.field_type)
                && same_type(&x.value_field.field_type, &y.value_field.field_type)
        }
        _ => false,
    }
}

/// The Arrow schema the data files are written with: the table's columns
/// that the model writes, in the table's order, typed as fex's columns are
/// (lists keep their layout) except fids, written as Int64 of the same bits,
/// and each field carrying the table's field id. `check` must have passed.
pub fn write_schema(table: &Schema, outputs: &ArrowSchema) -> Result<SchemaRef, TableError> {
    let by_name: HashMap<&str, &Arc<Field>> = model_fields(outputs).map(|f| (f.name().as_str(), f)).collect();
    let identity = fex::offline::identity::identity_fields();
    let mut fields = Vec::new();
    for t in table.as_struct().fields() {
        let field = match (identity.iter().find(|f| f.name() == &t.name), by_name.get(t.name.as_str())) {
            (Some(f), _) => f.clone(),
            (None, Some(f)) => Field::new(&t.name, written(f.data_type(), &t.field_type)?, f.is_nullable()),
            // An optional column the model does not write: it stays null.
            (None, None) => continue,
        };
        fields.push(with_id(field, t.id));
    }
    Ok(Arc::new(ArrowSchema::new(fields)))
}

fn with_id(field: Field, id: i32) -> Field {
    field.with_metadata(HashMap::from([(FIELD_ID.to_string(), id.to_string())]))
}

/// The Arrow type a column of fex's type `dt` is written as, with the ids
/// of the table's type `t` on its nested fields.
fn written(dt: &DataType, t: &Type) -> Result<DataType, TableError> {
    let bad = || TableError::Model(format!("fex's Arrow type {dt} does not fit the table's {}", type_name(t)));
    Ok(match (dt, t) {
        (DataType::UInt64, Type::Primitive(PrimitiveType::Long)) => DataType::Int64,
        (DataType::LargeBinary, Type::Primitive(PrimitiveType::Binary)) => DataType::LargeBinary,
        // Lists keep fex's own layout (offsets of 32 or 64 bits, or a fixed
        // size): Parquet writes each as the same LIST, so no buffer changes.
        (DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _), Type::List(l)) => {
            let inner = written(item.data_type(), &l.element_field.field_type)?;
            let element = Arc::new(with_id(Field::new("element", inner, item.is_nullable()), l.element_field.id));
            match dt {
                DataType::LargeList(_) => DataType::LargeList(element),
                DataType::FixedSizeList(_, size) => DataType::FixedSizeList(element, *size),
                _ => DataType::List(element),
            }
        }
        (DataType::Struct(fields), Type::Struct(s)) => {
            let mut out = Vec::with_capacity(fields.len());
            for (f, tf) in fields.iter().zip(s.fields()) {
                out.push(with_id(
                    Field::new(f.name(), written(f.data_type(), &tf.field_type)?, f.is_nullable()),
                    tf.id,
                ));
            }
            DataType::Struct(Fields::from(out))
        }
        (DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) | DataType::Struct(_), _) => {
            return Err(bad());
        }
        (other, _) => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(dt: DataType) -> Arc<Field> {
        Arc::new(Field::new("item", dt, false))
    }

    /// fex's Arrow types as the sample table's: every kind `fex extract`
    /// writes (src/offline/sink.rs's test table). A nested type's ids are
    /// numbered before its column's (a catalog numbers them again).
    fn outputs() -> ArrowSchema {
        let weighted = DataType::Struct(Fields::from(vec![
            Field::new("value", DataType::UInt64, false),
            Field::new("weight", DataType::Float32, false),
        ]));
        ArrowSchema::new(vec![
            Field::new("ids", DataType::List(item(DataType::UInt64)), false),
            Field::new("weighted", DataType::LargeList(item(weighted)), false),
            Field::new("sequence", DataType::List(item(DataType::FixedSizeList(item(DataType::Int64), 2))), false),
            Field::new("dense", DataType::FixedSizeList(item(DataType::Float32), 6), false),
            Field::new("strings", DataType::LargeBinary, false),
            Field::new("scalar", DataType::Float64, false),
            Field::new(REQUEST_ID_OUTPUT, DataType::LargeBinary, false),
            Field::new(REQUEST_TIME_OUTPUT, DataType::Int64, false),
        ])
    }

    #[test]
    fn every_output_kind_has_its_iceberg_type() {
        let schema = table_schema(&outputs()).unwrap();
        let got: Vec<String> = schema
            .as_struct()
            .fields()
            .iter()
            .map(|f| {
                format!("{} {} {}{}", f.id, f.name, if f.required { "required " } else { "" }, type_name(&f.field_type))
            })
            .collect();
        assert_eq!(
            got,
            [
                "1 request_id string",
                "2 row required int",
                "3 request_time timestamptz",
                "5 ids required list<long>",
                "9 weighted required list<struct<value: long, weight: float>>",
                "12 sequence required list<list<long>>",
                "14 dense required list<float>",
                "15 strings required binary",
                "16 scalar required double",
            ]
        );
    }

    #[test]
    fn the_written_schema_carries_the_tables_ids_and_writes_fids_as_longs() {
        let schema = table_schema(&outputs()).unwrap();
        let write = write_schema(&schema, &outputs()).unwrap();
        let id = |f: &Field| f.metadata()[FIELD_ID].clone();
        let ids: Vec<String> = write.fields().iter().map(|f| id(f)).collect();
        assert_eq!(ids, ["1", "2", "3", "5", "9", "12", "14", "15", "16"]);
        let DataType::List(element) = write.field_with_name("ids").unwrap().data_type() else { panic!() };
        assert_eq!((element.data_type(), id(element).as_str()), (&DataType::Int64, "4"));
        let DataType::LargeList(element) = write.field_with_name("weighted").unwrap().data_type() else { panic!() };
        let DataType::Struct(fields) = element.data_type() else { panic!() };
        assert_eq!(
            (fields[0].data_type(), id(&fields[0]).as_str(), id(&fields[1]).as_str()),
            (&DataType::Int64, "7", "8")
        );
    }

    #[test]
    fn a_table_that_does_not_fit_is_refused_with_every_problem_named() {
        let table = table_schema(&outputs()).unwrap();
        let mut changed = outputs().fields().iter().map(|f| f.as_ref().clone()).collect::<Vec<_>>();
        changed[5] = Field::new("scalar", DataType::Float32, false);
        changed[4] = Field::new("text", DataType::LargeBinary, false);
        let wanted = table_schema(&ArrowSchema::new(changed)).unwrap();
        let err = check("t.samples", &table, &wanted).unwrap_err().to_string();
        assert_eq!(
            err,
            "table t.samples does not match the model: column \"text\" (binary) is not in the table; column \"scalar\" is \
             double in the table, float for the model; the table requires column \"strings\" (binary), which the model does \
             not write"
        );
        check("t.samples", &table, &table_schema(&outputs()).unwrap()).unwrap();
    }
}
