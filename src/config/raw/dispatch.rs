//! Dispatch on a feature's `kind` or `op`: the struct each one is read into.

use serde_norway::Mapping;

use super::entries::{self, Entry};
use super::keys::{Scope, read};
use super::{Body, KINDS, OPS, error};
use crate::config::ConfigError;

#[derive(Debug)]
pub(in crate::config) enum RawKind {
    Sparse(entries::Sparse),
    Dense(entries::Dense),
    String(entries::Strings),
    Sequence(entries::Sequence),
    List(entries::List),
    LineId(entries::LineId),
    Label(entries::Label),
    /// No keys of its own besides the common ones.
    Weight,
    ActionLabel(entries::ActionLabel),
}

#[derive(Debug)]
pub(in crate::config) enum RawOp {
    V1ToV2(entries::V1ToV2),
    Slot(entries::Slot),
    Reslot(entries::Reslot),
    Hash(entries::Hash),
    FilterSlots(entries::FilterSlots),
    Cross(entries::Cross),
    Vocab(entries::Vocab),
    Ln(entries::Ln),
    Clip(entries::Clip),
    Normalize(entries::Normalize),
    Bucketize(entries::Bucketize),
    Cast(entries::Cast),
    Scale(entries::Scale),
    Pow(entries::Pow),
    Group(entries::Group),
    /// No keys of its own besides the common ones.
    Kjt,
    /// No keys of its own besides the common ones.
    Concat,
    MultiHot(entries::MultiHot),
    Expr(entries::Expr),
    Lookup(entries::Lookup),
    Match(entries::Match),
    Overlap(entries::Overlap),
    Bm25(entries::Bm25),
    KvDot(entries::KvDot),
    BoolMask(entries::BoolMask),
    Tokenize(entries::Tokenize),
    RegexReplace(entries::RegexReplace),
    Slice(entries::Slice),
    Split(entries::Split),
    NormalizeText(entries::NormalizeText),
}

/// One feature mapping being read into its struct.
pub(super) struct Parsed<'a> {
    pub map: &'a Mapping,
    pub path: &'a str,
    pub errors: &'a mut Vec<ConfigError>,
    pub visible: bool,
    pub inputs: (Vec<String>, &'static str),
}

impl Parsed<'_> {
    pub(super) fn broken(&mut self, key: &str, message: &str) -> Body {
        self.errors.push(error(format!("{}.{key}", self.path), message));
        Body::Broken
    }

    fn read<T: Entry>(&mut self, owner: &str) -> T {
        let t: T = read(self.map, Scope { path: self.path, owner: Some(owner) }, self.errors);
        self.visible = t.output().unwrap_or(true);
        self.inputs = t.inputs();
        t
    }

    pub(super) fn kind(&mut self, kind: &str) -> Option<RawKind> {
        let owner = format!("kind {kind}");
        Some(match kind {
            "sparse" => RawKind::Sparse(self.read(&owner)),
            "dense" => RawKind::Dense(self.read(&owner)),
            "string" => RawKind::String(self.read(&owner)),
            "sequence" => RawKind::Sequence(self.read(&owner)),
            "list" => RawKind::List(self.read(&owner)),
            "line_id" => RawKind::LineId(self.read(&owner)),
            "label" => RawKind::Label(self.read(&owner)),
            "instance_weight" => {
                self.read::<entries::Weight>(&owner);
                RawKind::Weight
            }
            "action_label" => RawKind::ActionLabel(self.read(&owner)),
            other => {
                self.broken("kind", &format!("unknown feature kind {other:?}, expected one of {KINDS}"));
                return None;
            }
        })
    }

    pub(super) fn op(&mut self, op: &str) -> Option<RawOp> {
        let owner = format!("op {op}");
        Some(match op {
            "v1_to_v2" => RawOp::V1ToV2(self.read(&owner)),
            "slot" => RawOp::Slot(self.read(&owner)),
            "reslot" => RawOp::Reslot(self.read(&owner)),
            "hash" => RawOp::Hash(self.read(&owner)),
            "filter_slots" => RawOp::FilterSlots(self.read(&owner)),
            "cross" => RawOp::Cross(self.read(&owner)),
            "vocab" => RawOp::Vocab(self.read(&owner)),
            "ln" => RawOp::Ln(self.read(&owner)),
            "clip" => RawOp::Clip(self.read(&owner)),
            "normalize" => RawOp::Normalize(self.read(&owner)),
            "bucketize" => RawOp::Bucketize(self.read(&owner)),
            "cast" => RawOp::Cast(self.read(&owner)),
            "scale" => RawOp::Scale(self.read(&owner)),
            "pow" => RawOp::Pow(self.read(&owner)),
            "group" => RawOp::Group(self.read(&owner)),
            "kjt" => {
                self.read::<entries::Kjt>(&owner);
                RawOp::Kjt
            }
            "concat" => {
                self.read::<entries::Concat>(&owner);
                RawOp::Concat
            }
            "multi_hot" => RawOp::MultiHot(self.read(&owner)),
            "expr" => RawOp::Expr(self.read(&owner)),
            "lookup" => RawOp::Lookup(self.read(&owner)),
            "match" => RawOp::Match(self.read(&owner)),
            "overlap" => RawOp::Overlap(self.read(&owner)),
            "bm25" => RawOp::Bm25(self.read(&owner)),
            "kv_dot" => RawOp::KvDot(self.read(&owner)),
            "bool_mask" => RawOp::BoolMask(self.read(&owner)),
            "tokenize" => RawOp::Tokenize(self.read(&owner)),
            "regex_replace" => RawOp::RegexReplace(self.read(&owner)),
            "slice" => RawOp::Slice(self.read(&owner)),
            "split" => RawOp::Split(self.read(&owner)),
            "normalize_text" => RawOp::NormalizeText(self.read(&owner)),
            other => {
                self.broken("op", &format!("unknown operator {other:?}, expected one of {OPS}"));
                return None;
            }
        })
    }
}
