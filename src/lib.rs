//! fex: the shared feature library. Decodes Monolith samples straight from the
//! protobuf wire format, runs a compiled model plan and produces packed tensors.
//! The same code serves online (fex-server) and offline sample building.

pub mod catalog;
pub mod columns;
pub mod config;
pub mod corpus;
pub mod error;
pub mod extract;
pub mod fid;
pub mod files;
pub mod nearline;
#[cfg(feature = "offline")]
pub mod offline;
pub mod oip;
pub mod ops;
pub mod proto;
pub mod records;
pub mod samples;
pub mod tensor;
pub mod text;
pub mod view;
pub mod wire;

pub use columns::{Column, NamedColumn, Splits, Values};
pub use config::{Compat, ConfigErrors, Plan};
pub use error::{ErrorKind, ExtractError};
pub use extract::{
    Extracted, Extractor, Input, Policy, Rows, RowsMismatch, SharedRows, Stats, extract_batch, extract_examples,
};
pub use proto::fex_v1::{DataType, Layout, Tensor};
