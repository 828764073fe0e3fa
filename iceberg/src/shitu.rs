//! The joined-request ("Shitu") table: one row per request the label join
//! emitted, with the bytes the library reads (seed 002 §3, §4.1). The
//! near-line job appends to it (Iceberg's Flink sink); it is the input a
//! backfill recomputes features from. fex makes it (`fex table create`),
//! so that every writer and reader finds one schema:
//!
//! | column | type | |
//! |---|---|---|
//! | `request_id` | string | as the join read it (`label_join:` keys) |
//! | `user_id` | string | |
//! | `request_time` | timestamptz | the request's time; the partition column |
//! | `emitted_at` | timestamptz | the event time the join emitted it at |
//! | `rule` | string | `refresh`, `requests_back` or `time` |
//! | `payload` | string | `batch` (one ExampleBatch) or `examples` |
//! | `rows` | int | the request's rows |
//! | `late_request` | boolean | it arrived behind the watermark |
//! | `actions` | string | the joined actions, a JSON array as the manifest has them |
//! | `joined` | binary | the samples with their actions, framed records (`fex extract` input) |

use std::sync::Arc;

use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};

use crate::sink::{Partitioning, create_or_load, describe, table_ident};
use crate::{CatalogSpec, TableError, schema};

/// The Shitu table's schema.
pub fn shitu_schema() -> Result<Schema, TableError> {
    let p = |t| Type::Primitive(t);
    let columns = [
        ("request_id", p(PrimitiveType::String), false),
        ("user_id", p(PrimitiveType::String), false),
        (schema::REQUEST_TIME, p(PrimitiveType::Timestamptz), false),
        ("emitted_at", p(PrimitiveType::Timestamptz), false),
        ("rule", p(PrimitiveType::String), false),
        ("payload", p(PrimitiveType::String), false),
        ("rows", p(PrimitiveType::Int), true),
        ("late_request", p(PrimitiveType::Boolean), true),
        ("actions", p(PrimitiveType::String), false),
        ("joined", p(PrimitiveType::Binary), true),
    ];
    let fields = columns
        .into_iter()
        .enumerate()
        .map(|(i, (name, t, required))| Arc::new(NestedField::new(i as i32 + 1, name, t, required)))
        .collect::<Vec<_>>();
    Ok(Schema::builder().with_fields(fields).build()?)
}

/// Makes the Shitu table `table` in `catalog`, or checks the one there;
/// returns the line that describes it.
pub fn create_shitu(catalog: &CatalogSpec, table: &str, partitioning: Partitioning) -> Result<String, TableError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let name = catalog.describe();
    let sql = runtime.block_on(catalog.open(&runtime))?;
    let ident = table_ident(table)?;
    let wanted = shitu_schema()?;
    let found = runtime.block_on(create_or_load(sql.as_ref(), &ident, &wanted, partitioning, &name))?;
    schema::check(table, found.metadata().current_schema(), &wanted)?;
    Ok(describe(table, &name, &found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_its_columns_in_order() {
        let s = shitu_schema().unwrap();
        let names: Vec<_> = s.as_struct().fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "request_id",
                "user_id",
                "request_time",
                "emitted_at",
                "rule",
                "payload",
                "rows",
                "late_request",
                "actions",
                "joined"
            ]
        );
        assert!(s.field_by_name("joined").unwrap().required);
    }
}
