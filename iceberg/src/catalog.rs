//! The catalog that holds the tables, and where their files go.
//!
//! - By default an embedded SQL catalog on a SQLite file in the warehouse
//!   directory (`catalog.db`), which Java's JDBC catalog, pyiceberg's SQL
//!   catalog and iceberg-rust's all read (the same `iceberg_tables` table,
//!   catalog name `fex`).
//! - A PostgreSQL URI (or another SQLite file) for a SQL catalog several
//!   machines share.
//! - An `http(s)://` URI for an Iceberg REST catalog (iceberg-rust's
//!   client; Polaris, Gravitino, Nessie, Unity, Glue's and S3 Tables'
//!   endpoints, Iceberg's own reference server).
//!
//! The warehouse is a local directory or an object store's URI
//! (`s3://bucket/prefix`, through Apache OpenDAL). Catalog properties
//! (`s3.endpoint`, `client.region`, `s3.access-key-id`, a REST catalog's
//! `credential` or `token`, ...) go to the catalog and to its file IO as
//! given; S3 credentials otherwise come from AWS's usual environment
//! variables and files.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use iceberg::io::{LocalFsStorageFactory, StorageFactory};
use iceberg::{Catalog, CatalogBuilder, Runtime};
use iceberg_catalog_rest::RestCatalogBuilder;
use iceberg_catalog_sql::{SqlBindStyle, SqlCatalogBuilder};
use iceberg_storage_opendal::OpenDalResolvingStorageFactory;

use crate::TableError;

/// The catalog's name in its database (the rows it owns there).
pub const CATALOG_NAME: &str = "fex";
/// The embedded catalog's file in the warehouse directory.
pub const SQLITE_FILE: &str = "catalog.db";
/// How long a PostgreSQL catalog's server may take to accept a connection.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a REST catalog may take to answer its first requests.
pub const REST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Where the catalog is and where its tables' files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogSpec {
    /// The warehouse: an absolute local directory (tables under
    /// `<warehouse>/<namespace>/<table>`), or an object store's URI.
    pub warehouse: String,
    /// The catalog: `sqlite:...`, `postgresql://...` or a REST catalog's
    /// `http(s)://...`. None: the SQLite file in a local warehouse.
    pub uri: Option<String>,
    /// Properties for the catalog and its file IO, as given.
    pub properties: BTreeMap<String, String>,
}

impl CatalogSpec {
    /// A local warehouse directory (made if missing) with its embedded catalog.
    pub fn in_warehouse(warehouse: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(warehouse)?;
        let warehouse = std::path::absolute(warehouse)?.display().to_string();
        Ok(Self { warehouse, uri: None, properties: BTreeMap::new() })
    }

    /// The catalog of `warehouse` (a local directory, made if missing, or an
    /// object store's URI), at `uri` if given, with `properties`. An object
    /// store's warehouse has no embedded catalog: it needs `uri`.
    ///
    /// A REST catalog's warehouse is what its server takes: a location, or
    /// a bare name (Polaris, Gravitino and Unity name their catalogs so),
    /// which is passed on as it is, no directory made.
    pub fn new(warehouse: &str, uri: Option<&str>, properties: BTreeMap<String, String>) -> Result<Self, String> {
        if uri.is_some_and(is_rest_uri) && is_bare_name(warehouse) {
            return Ok(Self { warehouse: warehouse.to_string(), uri: uri.map(str::to_string), properties });
        }
        let mut spec = match crate::files::local_path(warehouse) {
            Some(dir) => {
                Self::in_warehouse(&dir).map_err(|e| format!("cannot create the warehouse {warehouse}: {e}"))?
            }
            None if uri.is_none() => {
                return Err(format!(
                    "the warehouse {warehouse} is not a local directory, so it has no embedded catalog: \
                     give --catalog (postgresql://..., sqlite:..., or a REST catalog's http(s)://...)"
                ));
            }
            None => {
                Self { warehouse: warehouse.trim_end_matches('/').to_string(), uri: None, properties: BTreeMap::new() }
            }
        };
        spec.uri = uri.map(str::to_string);
        spec.properties = properties;
        Ok(spec)
    }

    /// Whether the warehouse is a local directory (a REST catalog's bare
    /// warehouse name is not: its tables are where the server says).
    pub fn is_local(&self) -> bool {
        crate::files::local_path(&self.warehouse).is_some() && !(self.is_rest() && is_bare_name(&self.warehouse))
    }

    /// Whether the catalog is a REST catalog.
    pub fn is_rest(&self) -> bool {
        self.uri.as_deref().is_some_and(is_rest_uri)
    }

    /// The catalog's URI: the SQL database sqlx connects to, or the REST
    /// catalog's endpoint.
    pub fn uri(&self) -> String {
        match &self.uri {
            Some(uri) => uri.clone(),
            None => format!("sqlite:{}?mode=rwc", Path::new(&self.warehouse).join(SQLITE_FILE).display()),
        }
    }

    /// How the catalog is named in messages (a password or a token in the
    /// URI is not shown).
    pub fn describe(&self) -> String {
        match &self.uri {
            None => format!("{} (SQLite)", Path::new(&self.warehouse).join(SQLITE_FILE).display()),
            Some(uri) => {
                let shown = match (uri.find("://"), uri.rfind('@')) {
                    (Some(scheme), Some(at)) if at > scheme => format!("{}://…{}", &uri[..scheme], &uri[at..]),
                    _ => uri.clone(),
                };
                if self.is_rest() { format!("{shown} (REST)") } else { shown }
            }
        }
    }

    fn bind_style(&self) -> SqlBindStyle {
        match &self.uri {
            Some(uri) if uri.starts_with("postgres") => SqlBindStyle::DollarNumeric,
            _ => SqlBindStyle::QMark,
        }
    }

    /// The storage of the warehouse's files: the local file system, or
    /// OpenDAL's by the location's scheme (s3://, gs://, ...).
    fn storage(&self) -> Arc<dyn StorageFactory> {
        if self.is_local() { Arc::new(LocalFsStorageFactory) } else { Arc::new(OpenDalResolvingStorageFactory::new()) }
    }

    /// The properties the catalog is loaded with: the given ones, then the
    /// catalog's own.
    fn props(&self, own: &[(&str, String)]) -> HashMap<String, String> {
        let mut props: HashMap<String, String> = self.properties.clone().into_iter().collect();
        for (k, v) in own {
            props.insert(k.to_string(), v.clone());
        }
        props
    }

    /// Connects (a SQL database with no catalog tables gets them). An
    /// unreachable catalog is an error naming it, within [`CONNECT_TIMEOUT`]
    /// (PostgreSQL) or [`REST_TIMEOUT`] (REST).
    pub async fn open(&self, runtime: &tokio::runtime::Runtime) -> Result<Arc<dyn Catalog>, TableError> {
        let failed = |message: String| TableError::Catalog { catalog: self.describe(), message };
        if self.is_rest() {
            let props = self.props(&[("uri", self.uri()), ("warehouse", self.warehouse.clone())]);
            let connect = async {
                let catalog = RestCatalogBuilder::default()
                    .with_storage_factory(self.storage())
                    .with_runtime(Runtime::new(runtime))
                    .load(CATALOG_NAME, props)
                    .await?;
                // The client asks the server for its configuration on first
                // use: a catalog that cannot be reached is said here, before
                // any file is written.
                catalog.list_namespaces(None).await?;
                Ok::<_, iceberg::Error>(catalog)
            };
            return match tokio::time::timeout(REST_TIMEOUT, connect).await {
                Ok(Ok(catalog)) => Ok(Arc::new(catalog)),
                Ok(Err(e)) => Err(failed(causes(&e))),
                Err(_) => Err(failed(format!("no answer within {} s", REST_TIMEOUT.as_secs()))),
            };
        }
        // sqlx's pool retries a refused connection until its 30-second
        // acquire timeout, which iceberg-rust's catalog does not expose: one
        // connection first says at once why the server cannot be reached.
        if self.bind_style() == SqlBindStyle::DollarNumeric {
            use sqlx::Connection;
            match tokio::time::timeout(CONNECT_TIMEOUT, sqlx::PgConnection::connect(&self.uri())).await {
                Ok(Ok(connection)) => {
                    let _ = connection.close().await;
                }
                Ok(Err(e)) => return Err(failed(e.to_string())),
                Err(_) => return Err(failed(format!("no connection within {} s", CONNECT_TIMEOUT.as_secs()))),
            }
        }
        let props = self.props(&[
            ("uri", self.uri()),
            ("warehouse", self.warehouse.clone()),
            ("sql_bind_style", self.bind_style().to_string()),
            // One connection: a SQLite file takes one writer at a time.
            ("pool.max-connections", "1".to_string()),
        ]);
        let catalog = SqlCatalogBuilder::default()
            .with_storage_factory(self.storage())
            .with_runtime(Runtime::new(runtime))
            .load(CATALOG_NAME, props)
            .await
            .map_err(|e| failed(e.to_string()))?;
        Ok(Arc::new(catalog))
    }
}

/// A REST catalog's URI.
fn is_rest_uri(uri: &str) -> bool {
    uri.starts_with("http://") || uri.starts_with("https://")
}

/// A warehouse given as a name, not a path or a URI (no '/', no scheme).
fn is_bare_name(warehouse: &str) -> bool {
    !warehouse.is_empty()
        && !warehouse.contains('/')
        && !warehouse.contains(':')
        && warehouse != "."
        && warehouse != ".."
}

/// An error and every cause under it that its message does not already
/// say: an HTTP client's "error sending request" says why only there (a
/// refused connection, a certificate no root vouches for).
pub fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let said = cause.to_string();
        if !message.contains(&said) {
            message.push_str(": ");
            message.push_str(&said);
        }
        next = cause.source();
    }
    message
}

/// `KEY=VALUE` as a catalog property.
pub fn parse_property(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("{s:?}: give a catalog property as KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rest_catalogs_warehouse_may_be_a_name() {
        let named = CatalogSpec::new("training", Some("https://catalog.example/api"), BTreeMap::new()).unwrap();
        assert_eq!(named.warehouse, "training");
        assert!(!named.is_local() && !std::path::Path::new("training").exists(), "no directory made for a name");
        let s3 = CatalogSpec::new("s3://b/w/", Some("http://127.0.0.1:1"), BTreeMap::new()).unwrap();
        assert_eq!((s3.warehouse.as_str(), s3.is_local()), ("s3://b/w", false));
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("w");
        let local = CatalogSpec::new(at.to_str().unwrap(), Some("http://127.0.0.1:1"), BTreeMap::new()).unwrap();
        assert!(local.is_local() && at.is_dir());
        let err = CatalogSpec::new("s3://b/w", None, BTreeMap::new()).unwrap_err();
        assert!(err.contains("has no embedded catalog"), "{err}");
        assert_eq!(parse_property("a=b=c"), Ok(("a".to_string(), "b=c".to_string())));
        assert!(parse_property("=x").is_err() && parse_property("x").is_err());
    }
}
