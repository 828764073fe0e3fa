//! Rules of Monolith's kernels that `compat: monolith` reproduces and that
//! several writers share. Each cites the line of
//! `monolith/native_training/data/kernels/parse_example_lib.cc` (K) it follows.

use crate::view::FeatureKind;

/// The variants `BaseParser::FillFeature` writes nothing for, whatever the
/// output (K 167-173): the scalar `*_value` variants, which no branch reads,
/// and the list-of-list variants, which it only logs. Every other list
/// variant either fills the output or, for an output of another type, aborts
/// the kernel (a CHECK on the tensor's dtype or rank), which fex refuses.
pub(super) fn fill_ignores(kind: FeatureKind) -> bool {
    use FeatureKind::*;
    matches!(
        kind,
        Int64Value
            | FloatValue
            | DoubleValue
            | BytesValue
            | FidV2Lists
            | FloatLists
            | DoubleLists
            | Int64Lists
            | BytesLists
            | FidV1Lists
    )
}
