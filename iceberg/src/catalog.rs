//! The catalog that holds the tables: by default an embedded SQL catalog on
//! a SQLite file in the warehouse directory (`catalog.db`), which Java's
//! JDBC catalog, pyiceberg's SQL catalog and iceberg-rust's all read (the
//! same `iceberg_tables` table, catalog name `fex`); a PostgreSQL URI for a
//! catalog several machines share.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iceberg::io::LocalFsStorageFactory;
use iceberg::{CatalogBuilder, Runtime};
use iceberg_catalog_sql::{SqlBindStyle, SqlCatalog, SqlCatalogBuilder};

use crate::TableError;

/// The catalog's name in its database (the rows it owns there).
pub const CATALOG_NAME: &str = "fex";
/// The embedded catalog's file in the warehouse directory.
pub const SQLITE_FILE: &str = "catalog.db";
/// How long a PostgreSQL catalog's server may take to accept a connection.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Where the catalog is and where its tables' files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogSpec {
    /// The warehouse directory (absolute): tables live under
    /// `<warehouse>/<namespace>/<table>`.
    pub warehouse: PathBuf,
    /// The catalog database: `sqlite:...` or `postgresql://...`. None: the
    /// SQLite file in the warehouse.
    pub uri: Option<String>,
}

impl CatalogSpec {
    pub fn in_warehouse(warehouse: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(warehouse)?;
        Ok(Self { warehouse: std::path::absolute(warehouse)?, uri: None })
    }

    /// The database URI sqlx connects to.
    pub fn uri(&self) -> String {
        match &self.uri {
            Some(uri) => uri.clone(),
            None => format!("sqlite:{}?mode=rwc", self.warehouse.join(SQLITE_FILE).display()),
        }
    }

    /// How the catalog is named in messages (a PostgreSQL password is not
    /// shown).
    pub fn describe(&self) -> String {
        match &self.uri {
            None => format!("{} (SQLite)", self.warehouse.join(SQLITE_FILE).display()),
            Some(uri) => match (uri.find("://"), uri.rfind('@')) {
                (Some(scheme), Some(at)) if at > scheme => format!("{}://…{}", &uri[..scheme], &uri[at..]),
                _ => uri.clone(),
            },
        }
    }

    fn bind_style(&self) -> SqlBindStyle {
        match &self.uri {
            Some(uri) if uri.starts_with("postgres") => SqlBindStyle::DollarNumeric,
            _ => SqlBindStyle::QMark,
        }
    }

    /// Connects (the tables of the catalog are created if the database has
    /// none). An unreachable database is an error naming it, within
    /// [`CONNECT_TIMEOUT`].
    pub async fn open(&self, runtime: &tokio::runtime::Runtime) -> Result<SqlCatalog, TableError> {
        let failed = |message: String| TableError::Catalog { catalog: self.describe(), message };
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
        let props = HashMap::from([
            ("uri".to_string(), self.uri()),
            ("warehouse".to_string(), self.warehouse.display().to_string()),
            ("sql_bind_style".to_string(), self.bind_style().to_string()),
            // One connection: a SQLite file takes one writer at a time.
            ("pool.max-connections".to_string(), "1".to_string()),
        ]);
        SqlCatalogBuilder::default()
            .with_storage_factory(Arc::new(LocalFsStorageFactory))
            .with_runtime(Runtime::new(runtime))
            .load(CATALOG_NAME, props)
            .await
            .map_err(|e| failed(e.to_string()))
    }
}
