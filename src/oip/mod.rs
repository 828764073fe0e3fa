//! The Open Inference Protocol (KServe v2) face of fex: how a model's
//! outputs are named, typed and shaped as v2 tensors, how a v2 request
//! carries samples, and the conversions of tensor bytes both ways. Pure
//! mappings over the `inference` messages: fex-server and fex-client move
//! them over gRPC; nothing here does I/O.
//!
//! Naming (Merlin's convention, which Triton users know): a dense output `x`
//! is the v2 tensor `x`, `[rows, d...]`; a ragged output is `x__values`
//! (`[n]`, or `[n, width]` for a sequence) and `x__offsets` (`[rows + 1]`,
//! the row splits); strings are `x`, BYTES `[rows]`; a keyed-jagged output
//! is `x__values` and `x__lengths` (INT32 `[keys, rows]`, key-major). Values
//! that carry weights add `x__weights` (FP32, one per value).

mod contents;
mod inputs;
mod outputs;
mod upstream;

pub use contents::{ContentsError, raw_of_contents, tensor_of_output};
pub use inputs::{EXAMPLE_BATCH, EXAMPLES, InputError, Samples, input_metadata, samples};
pub use outputs::{Selection, SelectionError, output_metadata, push_outputs, select};
pub use upstream::{ConvertError, convert, convertible};

use crate::proto::fex_v1::DataType;

/// Suffix of a ragged or keyed-jagged output's values tensor.
pub const VALUES: &str = "__values";
/// Suffix of a ragged output's row-splits tensor.
pub const OFFSETS: &str = "__offsets";
/// Suffix of a keyed-jagged output's lengths tensor.
pub const LENGTHS: &str = "__lengths";
/// Suffix of the weights tensor of weighted values.
pub const WEIGHTS: &str = "__weights";

/// The v2 datatype of a fex element type (`BYTES` for strings).
pub fn datatype(dtype: DataType) -> &'static str {
    match dtype {
        DataType::F32 => "FP32",
        DataType::F64 => "FP64",
        DataType::I32 => "INT32",
        DataType::I64 => "INT64",
        DataType::U64 => "UINT64",
        DataType::Bytes => "BYTES",
        DataType::Unspecified => "",
    }
}

/// The fex element type of a v2 datatype fex can hold, if it is one.
pub fn dtype_of(datatype: &str) -> Option<DataType> {
    Some(match datatype {
        "FP32" => DataType::F32,
        "FP64" => DataType::F64,
        "INT32" => DataType::I32,
        "INT64" => DataType::I64,
        "UINT64" => DataType::U64,
        "BYTES" => DataType::Bytes,
        _ => return None,
    })
}

/// Bytes per element of a v2 datatype; `None` for BYTES and unknown names.
pub fn element_size(datatype: &str) -> Option<usize> {
    Some(match datatype {
        "BOOL" | "UINT8" | "INT8" => 1,
        "UINT16" | "INT16" | "FP16" | "BF16" => 2,
        "UINT32" | "INT32" | "FP32" => 4,
        "UINT64" | "INT64" | "FP64" => 8,
        _ => return None,
    })
}

/// Longest caller string echoed whole into an error message.
const ECHO_LIMIT: usize = 128;

/// A caller's string for an error message: quoted, whole when short, else
/// its first 64 bytes (at a character boundary) and its length, so a huge
/// name cannot push a status message past a client's metadata limit.
pub fn clipped(s: &str) -> String {
    if s.len() <= ECHO_LIMIT {
        return format!("{s:?}");
    }
    let cut = (0..=64).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
    format!("{:?} ({} bytes)", format!("{}…", &s[..cut]), s.len())
}

/// The number of elements of a shape: `None` when a dimension is negative
/// or the product overflows.
pub fn element_count(shape: &[i64]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| usize::try_from(d).ok().and_then(|d| n.checked_mul(d)))
}
