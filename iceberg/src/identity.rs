//! Which request and row a sample is: the library's
//! [`fex::offline::identity`], with its errors as the table's.

use std::path::Path;

use fex::Plan;
use fex::files::Filesystem;
pub use fex::offline::identity::{IdentitySource, REQUEST_ID_OUTPUT, REQUEST_TIME_OUTPUT, RowIdentity};

use crate::TableError;

/// The model of `text` (its files read against `dir`) with the identity
/// outputs added, and where they read (`fex::offline::identity::with_identity`).
pub fn with_identity(text: &str, dir: &Path, plan: &Plan) -> Result<(Plan, IdentitySource), TableError> {
    fex::offline::identity::with_identity(text, dir, &Filesystem, plan).map_err(|e| TableError::Model(e.to_string()))
}
