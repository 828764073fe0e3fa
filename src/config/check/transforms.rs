//! Each operator's parameters checked and compiled into a [`Transform`] with
//! the layout, dtype and shape of what it produces.

use std::sync::Arc;

use super::ops::{Need, sequence_width};
use super::{Checker, Files};
use crate::config::plan::{Op, Output};
use crate::config::raw::{RawEntry, RawOp, entries};
use crate::ops::{
    Bucketing, Combiner, DocFreqs, Expr, MAX_INPUTS, MatchAll, OverlapMethod, Pattern, ShowKeys, Transform,
    TransformKind as K, Vocab,
};

/// The most numbers a `lookup` value may hold (`value_dim`).
const MAX_VALUE_DIM: u64 = 4096;
use crate::proto::fex_v1::{DataType, Layout};

impl Checker {
    pub(super) fn transform(
        &mut self,
        e: &RawEntry,
        op: &RawOp,
        ins: &[&Output],
        files: Files<'_>,
    ) -> Option<Transform> {
        let path = e.path.as_str();
        let one = |cx: &mut Self, need| cx.inputs_fit(e, ins, need, 1..=1);
        let many = |cx: &mut Self, need, min| cx.inputs_fit(e, ins, need, min..=MAX_INPUTS);
        let ragged = |cx: &mut Self, kind, splits: &Option<String>| ragged(kind, cx.splits(path, splits.as_deref()));
        Some(match op {
            RawOp::V1ToV2(o) => {
                one(self, Need::IdsOrSequence).then(|| per_position(ragged(self, K::V1ToV2, &o.splits), ins))?
            }
            RawOp::Slot(o) => {
                let v1 = self.slot_method(path, o.method.as_deref());
                one(self, Need::IdsOrSequence).then(|| per_position(ragged(self, K::Slot { v1 }, &o.splits), ins))?
            }
            RawOp::Reslot(o) => {
                let slot = self.required_u64(path, "slot", o.slot, 0..=0x7fff);
                one(self, Need::IdsOrSequence)
                    .then(|| per_position(ragged(self, K::Reslot { slot }, &o.splits), ins))?
            }
            RawOp::Hash(o) if o.weighted == Some(true) => {
                let rule = self.bucketing(e, o);
                let separator = self.separator(
                    path,
                    o.separator.as_deref(),
                    "give the string between key:weight parts (FG's is \\x1d)",
                );
                let value_dim = self.id_value_dim(path, o.value_dim);
                let fits = self.strings_input(path, ins);
                let usable = fits && !separator.is_empty();
                let kind = K::HashWeighted { rule, separator, value_dim };
                usable.then(|| ragged(self, kind, &o.splits))?
            }
            RawOp::Hash(o) => {
                let rule = self.bucketing(e, o);
                let separator = o.separator.as_ref().map(|s| s.as_bytes().to_vec());
                if separator.as_ref().is_some_and(Vec::is_empty) {
                    self.error(
                        format!("{path}.separator"),
                        "is empty; give the string that splits the values (FG's is \\x1d)",
                    );
                }
                let value_dim = self.id_value_dim(path, o.value_dim);
                // Parts of strings are not positions: a sequence is hashed
                // position by position only without a separator, only
                // hashed (num_buckets drops ids, a position cannot lose
                // one), and whole (value_dim cuts rows, not positions).
                let hashed = matches!(rule, Bucketing::Hash { .. });
                let need = if separator.is_none() && hashed && value_dim == 0 {
                    Need::IdsStringsOrSequence
                } else {
                    Need::IdsOrStrings
                };
                let kind = K::Hash { rule, separator, value_dim };
                one(self, need).then(|| per_position(ragged(self, kind, &o.splits), ins))?
            }
            RawOp::FilterSlots(o) => {
                let slots = self.slots(path, o.slots.as_deref().unwrap_or_default());
                one(self, Need::Ids).then(|| ragged(self, K::FilterSlots { slots }, &o.splits))?
            }
            RawOp::Cross(o) => {
                let kind = self.cross(path, o);
                many(self, Need::IdsOrStrings, 2).then(|| ragged(self, kind, &o.splits))?
            }
            RawOp::Vocab(o) => {
                let vocab = self.vocab(path, o.file.as_deref(), files)?;
                let kind = K::Vocab(Arc::new(vocab));
                one(self, Need::IdsStringsOrSequence).then(|| per_position(ragged(self, kind, &o.splits), ins))?
            }
            RawOp::Group(o) => many(self, Need::Ids, 1).then(|| ragged(self, K::Group, &o.splits))?,
            RawOp::Kjt => {
                let keys: Vec<String> = ins.iter().map(|o| o.name.clone()).collect();
                let n = keys.len();
                many(self, Need::Ids, 1).then(|| keyed(K::KeyedJagged { keys }, n))?
            }
            RawOp::MultiHot(o) => {
                let inputs_ok = many(self, Need::Ids, 1);
                self.multi_hot(path, o, ins, inputs_ok)?
            }
            RawOp::Expr(o) => {
                let inputs_ok = many(self, Need::DenseOrFloatSequence, 1);
                self.expr(path, o, ins, inputs_ok)?
            }
            RawOp::Lookup(o) => self.lookup(path, o, ins, e)?,
            RawOp::Match(o) => self.match_op(path, o, ins, e)?,
            RawOp::Overlap(o) => self.overlap(path, o, ins, e)?,
            RawOp::Bm25(o) => self.bm25(path, o, ins, e, files)?,
            RawOp::Tokenize(o) => {
                let file = o.file.as_deref().unwrap_or_default();
                let kind = match o.tokenizer_type.as_deref() {
                    None | Some("bpe") => Some(crate::ops::TokenizerKind::HuggingFace),
                    Some("sentencepiece") => Some(crate::ops::TokenizerKind::SentencePiece),
                    Some(other) => {
                        let message = format!("unknown tokenizer type {other:?}; expected bpe or sentencepiece");
                        self.error(format!("{path}.tokenizer_type"), message);
                        None
                    }
                };
                let tokenizer = if file.is_empty() {
                    let what = match kind {
                        Some(crate::ops::TokenizerKind::SentencePiece) => "the sentencepiece .model file",
                        _ => "the tokenizer.json file",
                    };
                    self.error(format!("{path}.file"), format!("missing; name {what}"));
                    None
                } else if let Some(kind) = kind {
                    match crate::ops::TokenizerFile::load_from(files.source, &files.base_dir.join(file), kind) {
                        Ok(t) => {
                            self.files.push((t.path.clone(), t.digest));
                            Some(t)
                        }
                        Err(message) => {
                            self.error(format!("{path}.file"), message);
                            None
                        }
                    }
                } else {
                    None
                };
                let fits = self.strings_input(path, ins);
                let tokenizer = tokenizer.filter(|_| fits)?;
                ragged(self, K::Tokenize(Arc::new(tokenizer)), &o.splits)
            }
            RawOp::BoolMask(o) => {
                let separator =
                    self.separator(path, o.separator.as_deref(), "give the parts' separator (default \\x1d)");
                if ins.len() != 2 {
                    let message = format!("op bool_mask takes [values, mask], found {} inputs", ins.len());
                    self.error(format!("{path}.inputs"), message);
                    return None;
                }
                let strings = ins[0].layout().0 == Layout::Strings;
                let buckets = match (o.buckets, strings) {
                    (Some(0), _) => {
                        self.error(format!("{path}.buckets"), "found 0, expected at least 1");
                        None
                    }
                    (None, true) => {
                        self.error(format!("{path}.buckets"), "missing; string values are hashed into buckets");
                        None
                    }
                    (b, _) => Some(b),
                };
                let fits = self.inputs_fit(e, ins, Need::IdsOrStrings, 2..=2);
                let buckets = buckets.filter(|_| fits && !separator.is_empty())?;
                ragged(self, K::BoolMask { separator, buckets }, &o.splits)
            }
            RawOp::KvDot(o) => {
                let separator =
                    self.separator(path, o.separator.as_deref(), "give the entries' separator (default \\x1d)");
                let kv = match o.kv_delimiter.as_deref().map(str::as_bytes) {
                    None => Some(b':'),
                    Some([c]) if !separator.contains(c) => Some(*c),
                    Some(other) => {
                        let message = format!(
                            "found {:?}, expected one character that is not in the separator",
                            String::from_utf8_lossy(other)
                        );
                        self.error(format!("{path}.kv_delimiter"), message);
                        None
                    }
                };
                if ins.len() != 2 {
                    let message = format!("op kv_dot takes [query, document], found {} inputs", ins.len());
                    self.error(format!("{path}.inputs"), message);
                    return None;
                }
                let fits = self.inputs_fit(e, ins, Need::IdsOrStrings, 2..=2);
                let kv = kv.filter(|_| fits && !separator.is_empty())?;
                dense(K::KvDot { separator, kv }, DataType::F32, vec![1])
            }
            RawOp::RegexReplace(o) => {
                let pattern = match o.pattern.as_deref().map(Pattern::new) {
                    Some(Ok(p)) => Some(p),
                    Some(Err(message)) => {
                        self.error(format!("{path}.pattern"), message);
                        None
                    }
                    None => {
                        self.error(format!("{path}.pattern"), "missing; give the regular expression to replace");
                        None
                    }
                };
                let replacement = o.replacement.clone().unwrap_or_default().into_bytes();
                let fits = self.strings_input(path, ins);
                let pattern = pattern.filter(|_| fits)?;
                strings(K::RegexReplace { pattern, replacement })
            }
            RawOp::NormalizeText(o) => {
                let n = self.text_normalizer(path, o, files);
                let fits = self.strings_input(path, ins);
                n.filter(|_| fits).map(|n| strings(K::NormalizeText(Arc::new(n))))?
            }
            RawOp::Slice(o) => {
                if o.start.is_none() && o.end.is_none() {
                    self.error(format!("{path}.start"), "give start, end or both (characters; negative from the end)");
                }
                self.strings_input(path, ins).then(|| strings(K::Slice { start: o.start.unwrap_or(0), end: o.end }))?
            }
            RawOp::Split(o) => {
                let separator =
                    self.separator(path, o.separator.as_deref(), "give the string to split at (default \\x1d)");
                if o.index.is_none() {
                    let message = "missing; give the part to keep (0 is the first; negative counts from the end)";
                    self.error(format!("{path}.index"), message);
                }
                let fits = self.strings_input(path, ins);
                let index = o.index.filter(|_| fits && !separator.is_empty())?;
                strings(K::Split { separator, index })
            }
            RawOp::Concat => {
                let width: i64 = ins.iter().map(|o| dims(o).iter().product::<i64>()).sum();
                many(self, Need::Dense, 1).then(|| dense(K::Concat, DataType::F32, vec![width]))?
            }
            numeric => {
                let (kind, dtype) = self.numeric(e, numeric)?;
                let fits = one(self, Need::DenseOrSequence);
                match ins.first().and_then(|o| sequence_width(o)) {
                    // A sequence, value by value: its positions and width kept.
                    Some(width) => fits.then(|| numbers_at_positions(kind, dtype, width))?,
                    None => fits.then(|| dense(kind, dtype, dims(ins[0])))?,
                }
            }
        })
    }

    fn slot_method(&mut self, path: &str, method: Option<&str>) -> bool {
        match method {
            None | Some("v2") => false,
            Some("v1") => true,
            Some(m) => {
                self.error(format!("{path}.method"), format!("found {m:?}, expected v1 or v2"));
                false
            }
        }
    }

    fn slots(&mut self, path: &str, slots: &[u64]) -> Vec<u64> {
        if slots.is_empty() || slots.iter().any(|&s| s > 0x7fff) {
            let message = format!("found {slots:?}, expected a non-empty list of slots 0..=32767");
            self.error(format!("{path}.slots"), message);
        }
        let mut slots = slots.to_vec();
        slots.sort_unstable();
        slots
    }

    fn cross(&mut self, path: &str, o: &entries::Cross) -> K {
        let buckets = o.buckets.map(|b| self.required_u64(path, "buckets", Some(b), 1..=u64::MAX));
        let slot = o.slot.map(|s| self.required_u64(path, "slot", Some(s), 0..=0x7fff));
        let max_per_row = self.required_u64(path, "max_per_row", o.max_per_row.or(Some(1024)), 1..=1 << 20) as usize;
        K::Cross { buckets, slot, max_per_row }
    }

    /// Loads a vocabulary through the file source; its digest joins the
    /// model's identity.
    fn vocab(&mut self, path: &str, file: Option<&str>, files: Files<'_>) -> Option<Vocab> {
        let file = file.unwrap_or_default();
        if file.is_empty() {
            self.error(format!("{path}.file"), "missing; name the vocabulary file (one entry per line)");
            return None;
        }
        match Vocab::load_from(files.source, &files.base_dir.join(file)) {
            Ok(v) => {
                self.files.push((v.path.clone(), v.digest));
                Some(v)
            }
            Err(e) => {
                self.error(format!("{path}.file"), e.to_string());
                None
            }
        }
    }

    /// How `hash` makes ids: `buckets` (hashed; with `need_prefix` the
    /// feature's name and `_` first, FG's need_prefix) or `num_buckets`
    /// (FG's: the values are the ids), exactly one.
    fn bucketing(&mut self, e: &RawEntry, o: &entries::Hash) -> Bucketing {
        let path = e.path.as_str();
        let prefix = o.need_prefix == Some(true);
        match (o.buckets, o.num_buckets) {
            (Some(_), Some(_)) => {
                let message = "give buckets (hashed) or num_buckets (the values are the ids), not both";
                self.error(format!("{path}.num_buckets"), message);
            }
            (None, Some(n)) => {
                if prefix {
                    let message = "is for hashed ids (buckets); num_buckets takes the values as they are";
                    self.error(format!("{path}.need_prefix"), message);
                }
                let num_buckets = self.required_u64(path, "num_buckets", Some(n), 1..=u64::MAX);
                return Bucketing::Ids { num_buckets };
            }
            (None, None) => {
                let message = "missing; give buckets (hashed) or num_buckets (the values are the ids)";
                self.error(format!("{path}.buckets"), message);
            }
            (Some(_), None) => {}
        }
        let buckets = self.required_u64(path, "buckets", o.buckets.or(Some(1)), 1..=u64::MAX);
        Bucketing::Hash { buckets, prefix: prefix.then(|| e.name.as_bytes().to_vec()) }
    }

    /// A multi-value separator, FG's 0x1D when not given; an empty one is an
    /// error at `path.separator`, `hint` saying what to give.
    fn separator(&mut self, path: &str, given: Option<&str>, hint: &str) -> Vec<u8> {
        let separator = given.map_or_else(|| vec![0x1d], |s| s.as_bytes().to_vec());
        if separator.is_empty() {
            self.error(format!("{path}.separator"), format!("is empty; {hint}"));
        }
        separator
    }

    /// `hash`'s `value_dim` (FG's id_feature value_dim): keep each row's
    /// first ids; 0, FG's default, keeps them all.
    fn id_value_dim(&mut self, path: &str, value_dim: Option<u64>) -> usize {
        let Some(n) = value_dim else { return 0 };
        self.required_u64(path, "value_dim", Some(n), 0..=MAX_VALUE_DIM) as usize
    }

    /// The settings `lookup` and `match` share: the keys' separator, and
    /// either a combiner and default (numbers) or buckets (hashed values).
    fn map_settings(&mut self, path: &str, o: &MapSettings<'_>) -> (Vec<u8>, Result<(Combiner, f64), u64>) {
        let separator = self.separator(path, o.separator, "give the keys' separator (default \\x1d)");
        if o.need_discrete {
            for (key, given) in [("combiner", o.combiner.is_some()), ("default", o.default.is_some())] {
                if given {
                    self.error(format!("{path}.{key}"), "is for numbers; need_discrete: true hashes the values found");
                }
            }
            return (separator, Err(self.required_u64(path, "buckets", o.buckets, 1..=u64::MAX)));
        }
        if o.buckets.is_some() {
            self.error(format!("{path}.buckets"), "is for need_discrete: true (hashed values)");
        }
        if o.splits.is_some() {
            self.error(format!("{path}.splits"), "is for need_discrete: true (ragged ids)");
        }
        let combiner = match o.combiner {
            None | Some("sum") => Combiner::Sum,
            Some("mean") => Combiner::Mean,
            Some("min") => Combiner::Min,
            Some("max") => Combiner::Max,
            Some(other) => {
                self.error(format!("{path}.combiner"), format!("found {other:?}, expected sum, mean, min or max"));
                Combiner::Sum
            }
        };
        (separator, Ok((combiner, self.finite(path, o.op, "default", o.default, Some(0.0)))))
    }

    /// Whether `ins` is one string feature (for the string operators).
    fn strings_input(&mut self, path: &str, ins: &[&Output]) -> bool {
        let ok = ins.len() == 1 && ins[0].layout().0 == Layout::Strings;
        if !ok {
            let found: Vec<String> =
                ins.iter().map(|o| format!("{:?} ({})", o.name, o.layout().0.as_str_name())).collect();
            self.error(format!("{path}.input"), format!("takes one string feature; found {}", found.join(", ")));
        }
        ok
    }

    /// Whether `ins[0]` is a string feature (a map) and the rest are keys
    /// (strings or ids; with `sequence`, also an id sequence).
    fn map_inputs(&mut self, path: &str, e: &RawEntry, ins: &[&Output], sequence: bool) -> bool {
        let (map_layout, _, _) = ins[0].layout();
        if map_layout != Layout::Strings {
            let message = format!("the map {:?} must be a string feature (key:value entries)", ins[0].name);
            self.error(format!("{path}.inputs"), message);
            return false;
        }
        let n = ins.len() - 1;
        let need = if sequence { Need::IdsStringsOrSequence } else { Need::IdsOrStrings };
        self.inputs_fit(e, &ins[1..], need, n..=n)
    }

    /// `lookup`: a map (strings) and its keys (strings or ids); numbers
    /// combined into `[B, value_dim]`, or with `need_discrete` the values
    /// (with `need_key`, the keys and values) hashed.
    fn lookup(&mut self, path: &str, o: &entries::Lookup, ins: &[&Output], e: &RawEntry) -> Option<Transform> {
        let settings =
            MapSettings::of("lookup", o.need_discrete, &o.combiner, o.default, o.buckets, &o.separator, &o.splits);
        let (separator, kind) = self.map_settings(path, &settings);
        let need_key = o.need_key == Some(true);
        if need_key && !settings.need_discrete {
            let message = "gives ids (FG's key_value strings, hashed): set need_discrete: true and buckets";
            self.error(format!("{path}.need_key"), message);
        }
        let value_dim = self.value_dim(path, o.value_dim, settings.need_discrete);
        let lists = o.map_keys.is_some() || o.map_values.is_some();
        // Keys per position of an id sequence give a value per position.
        let keys = if lists {
            let inputs_ok = self.map_lists(path, o, ins, (e, &separator, settings.need_discrete));
            inputs_ok.then_some(ins[0])?
        } else {
            if ins.len() != 2 {
                let message = format!("op lookup takes [map, key], found {} inputs", ins.len());
                self.error(format!("{path}.inputs"), message);
                return None;
            }
            self.map_inputs(path, e, ins, kind.is_ok()).then_some(ins[1])?
        };
        if let (Ok((combiner, default)), Some(_)) = (kind, sequence_width(keys)) {
            if value_dim != 1 {
                let message = "is for ragged or string keys; per position of a sequence a lookup gives one number";
                self.error(format!("{path}.value_dim"), message);
                return None;
            }
            return Some(numbers_per_position(K::Lookup { separator, combiner, default, value_dim, lists }));
        }
        Some(match kind {
            Ok((combiner, default)) => {
                let kind = K::Lookup { separator, combiner, default, value_dim, lists };
                dense(kind, DataType::F32, vec![value_dim as i64])
            }
            Err(buckets) => {
                ragged(K::LookupIds { separator, buckets, need_key, lists }, self.splits(path, o.splits.as_deref()))
            }
        })
    }

    /// `lookup`'s `value_dim`: how many numbers a value holds (1 by
    /// default), for continuous lookups only.
    fn value_dim(&mut self, path: &str, value_dim: Option<u64>, need_discrete: bool) -> usize {
        let Some(d) = value_dim else { return 1 };
        if need_discrete {
            let message = "is for numbers; need_discrete: true gives every value found as an id (FG's value_dim 0)";
            self.error(format!("{path}.value_dim"), message);
            return 1;
        }
        self.required_u64(path, "value_dim", Some(d), 1..=MAX_VALUE_DIM) as usize
    }

    /// `match`: a two-level map and its primary and secondary keys, either
    /// of which may be FG's `ALL`.
    fn match_op(&mut self, path: &str, o: &entries::Match, ins: &[&Output], e: &RawEntry) -> Option<Transform> {
        let settings =
            MapSettings::of("match", o.need_discrete, &o.combiner, o.default, o.buckets, &o.separator, &o.splits);
        let (separator, kind) = self.map_settings(path, &settings);
        let show = ShowKeys { primary: o.show_pkey == Some(true), secondary: o.show_skey == Some(true) };
        for (key, given) in [("show_pkey", show.primary), ("show_skey", show.secondary)] {
            if given && !settings.need_discrete {
                let message = "gives ids (FG's key_value strings, hashed): set need_discrete: true and buckets";
                self.error(format!("{path}.{key}"), message);
            }
        }
        let given = o.inputs.as_deref().unwrap_or_default();
        let all: Vec<bool> = given.iter().map(|i| i.is_all()).collect();
        let all = match all.as_slice() {
            [false, false, false] => None,
            [false, true, false] => Some(MatchAll::Primary),
            [false, false, true] => Some(MatchAll::Secondary),
            _ => {
                let message = format!(
                    "op match takes [map, primary key, secondary key], one key at most ALL; found {:?}",
                    given.iter().map(|i| i.0.as_str()).collect::<Vec<_>>()
                );
                self.error(format!("{path}.inputs"), message);
                return None;
            }
        };
        self.match_value_dim(path, o.value_dim, settings.need_discrete);
        // Keys per position of an id sequence give a value per position.
        if !self.map_inputs(path, e, ins, kind.is_ok()) {
            return None;
        }
        let sequence = ins[1..].iter().any(|k| sequence_width(k).is_some());
        Some(match kind {
            Ok((combiner, default)) if sequence => numbers_per_position(K::Match { separator, all, combiner, default }),
            Ok((combiner, default)) => dense(K::Match { separator, all, combiner, default }, DataType::F32, vec![1]),
            Err(buckets) => {
                ragged(K::MatchIds { separator, all, buckets, show }, self.splits(path, o.splits.as_deref()))
            }
        })
    }

    /// `match`'s `value_dim`: FG's match_feature takes only 1 for numbers
    /// (TorchEasyRec's docs/source/feature/feature.md, "MatchFeature": "目前只支持
    /// value_dim=1"), and its map has no way to write a vector: `,` already
    /// separates a primary key's entries, so `sk:1,2` is `sk:1` and an entry
    /// `2`. fex takes 1 and refuses the rest rather than invent a syntax.
    fn match_value_dim(&mut self, path: &str, value_dim: Option<u64>, need_discrete: bool) {
        match value_dim {
            Some(d) if !need_discrete && d != 1 => {
                let message = format!(
                    "found {d}, allowed 1: a match value is one number (FG's match_feature takes value_dim 1 \
                     only, and in its map `pk^sk:v,sk:v` a `,` ends the value, so `1,2` is no vector); use \
                     lookup for vectors"
                );
                self.error(format!("{path}.value_dim"), message);
            }
            _ => _ = self.value_dim(path, value_dim, need_discrete),
        }
    }

    /// `overlap`: a query and a title (strings or ids) compared by `method`
    /// into `[B, 1]`.
    fn overlap(&mut self, path: &str, o: &entries::Overlap, ins: &[&Output], e: &RawEntry) -> Option<Transform> {
        let method = match o.method.as_deref() {
            Some(m) => OverlapMethod::parse(m).or_else(|| {
                self.error(format!("{path}.method"), format!("found {m:?}, expected one of {}", OverlapMethod::NAMES));
                None
            }),
            None => {
                self.error(format!("{path}.method"), format!("missing; give one of {}", OverlapMethod::NAMES));
                None
            }
        };
        let separator = self.separator(path, o.separator.as_deref(), "give the terms' separator (default \\x1d)");
        // The distances answer every row (no term matched: the title's
        // length plus 1, FG's range), so a default would never be used.
        if let (Some(m), Some(_)) = (method, o.default)
            && m.is_distance()
        {
            let message = "is not used by the proximity distances: a row without a matched term (an empty query \
                           or title too) gives the title's length plus 1, FG's \"no matched term\"";
            self.error(format!("{path}.default"), message);
        }
        // 0 is a position for index_of, so its rows without terms give -1.
        let none = if method == Some(OverlapMethod::IndexOf) { -1.0 } else { 0.0 };
        let default = self.finite(path, "overlap", "default", o.default, Some(none));
        if ins.len() != 2 {
            self.error(
                format!("{path}.inputs"),
                format!("op overlap takes [query, title], found {} inputs", ins.len()),
            );
            return None;
        }
        let inputs_ok = self.inputs_fit(e, ins, Need::IdsOrStrings, 2..=2);
        let method = method.filter(|_| inputs_ok && !separator.is_empty())?;
        Some(dense(K::Overlap { method, separator, default }, DataType::F32, vec![1]))
    }

    /// `bm25`: a query and a title (strings or ids), BM25's constants, and
    /// the file of document frequencies, read here once.
    fn bm25(
        &mut self,
        path: &str,
        o: &entries::Bm25,
        ins: &[&Output],
        e: &RawEntry,
        files: Files<'_>,
    ) -> Option<Transform> {
        let before = self.count();
        let separator = self.separator(path, o.separator.as_deref(), "give the terms' separator (default \\x1d)");
        let default = self.finite(path, "bm25", "default", o.default, Some(0.0));
        let k1 = self.finite(path, "bm25", "k1", o.k1, Some(1.2));
        let b = self.finite(path, "bm25", "b", o.b, Some(0.75));
        let avg_len = self.finite(path, "bm25", "avg_len", o.avg_len, None);
        // These bounds keep every share finite (no inf / inf, no 0 · inf).
        if !(0.0..=1000.0).contains(&k1) {
            self.error(format!("{path}.k1"), format!("found {k1}, allowed 0 <= k1 <= 1000"));
        }
        if !(0.0..=1.0).contains(&b) {
            self.error(format!("{path}.b"), format!("found {b}, allowed 0 <= b <= 1"));
        }
        if o.avg_len.is_some_and(|x| x.is_finite() && x < 0.001) {
            self.error(
                format!("{path}.avg_len"),
                format!("found {avg_len}, expected the titles' average term count (at least 0.001)"),
            );
        }
        self.required_u64(path, "documents", o.documents, 1..=u64::MAX);
        let table = self.doc_freqs(path, o.file.as_deref(), o.documents.filter(|&d| d >= 1), files);
        if ins.len() != 2 {
            let message = format!("op bm25 takes [query, title], found {} inputs", ins.len());
            self.error(format!("{path}.inputs"), message);
            return None;
        }
        let inputs_ok = self.inputs_fit(e, ins, Need::IdsOrStrings, 2..=2);
        let table = table.filter(|_| inputs_ok && self.count() == before)?;
        let params = crate::ops::Bm25Params { k1, b, avg_len };
        Some(dense(K::Bm25 { table: Arc::new(table), params, separator, default }, DataType::F32, vec![1]))
    }

    /// Reads `bm25`'s document frequencies through the file source; the
    /// file's digest joins the model's identity. Its counts are checked
    /// against `documents`, so without a valid one the file is not read.
    fn doc_freqs(
        &mut self,
        path: &str,
        file: Option<&str>,
        documents: Option<u64>,
        files: Files<'_>,
    ) -> Option<DocFreqs> {
        let file = file.unwrap_or_default();
        if file.is_empty() {
            self.error(format!("{path}.file"), "missing; name the file of document frequencies (term, tab, count)");
            return None;
        }
        match DocFreqs::load_from(files.source, &files.base_dir.join(file), documents?) {
            Ok(t) => {
                self.files.push((t.path.clone(), t.digest));
                Some(t)
            }
            Err(e) => {
                self.error(format!("{path}.file"), e.to_string());
                None
            }
        }
    }

    /// `normalize_text`: FG's option names, each once, one case at most;
    /// `TEXT_FILTER` with the file of stop characters it removes.
    fn text_normalizer(
        &mut self,
        path: &str,
        o: &entries::NormalizeText,
        files: Files<'_>,
    ) -> Option<crate::ops::TextNormalizer> {
        const NAMES: &str = "TEXT_LOWER2UPPER, TEXT_UPPER2LOWER, TEXT_SBC2DBC, TEXT_CHT2CHS, TEXT_FILTER, TEXT_REMOVE_SPACE, TEXT_SPLITCHRS";
        let mut n = crate::ops::TextNormalizer::default();
        let options = o.options.as_deref().unwrap_or_default();
        if options.is_empty() {
            self.error(format!("{path}.options"), format!("missing; give some of {NAMES}"));
        }
        let mut filter = false;
        let mut ok = true;
        for (i, option) in options.iter().enumerate() {
            let at = format!("{path}.options[{i}]");
            if options[..i].contains(option) {
                self.error(at, format!("{option} is given twice"));
                ok = false;
                continue;
            }
            match option.as_str() {
                "TEXT_LOWER2UPPER" | "TEXT_UPPER2LOWER" if n.upper.is_some() => {
                    self.error(at, "TEXT_LOWER2UPPER and TEXT_UPPER2LOWER undo each other; give one");
                    ok = false;
                }
                "TEXT_LOWER2UPPER" => n.upper = Some(true),
                "TEXT_UPPER2LOWER" => n.upper = Some(false),
                "TEXT_SBC2DBC" => n.sbc2dbc = true,
                "TEXT_FILTER" => filter = true,
                "TEXT_REMOVE_SPACE" => n.remove_space = true,
                "TEXT_SPLITCHRS" => n.split_chars = true,
                "TEXT_CHT2CHS" => n.cht2chs = true,
                other => {
                    self.error(at, format!("found {other:?}, expected one of {NAMES}"));
                    ok = false;
                }
            }
        }
        if n.remove_space && n.split_chars {
            self.error(
                format!("{path}.options"),
                "TEXT_SPLITCHRS puts spaces that TEXT_REMOVE_SPACE takes out; give one",
            );
            ok = false;
        }
        match (filter, o.stop_chars.as_deref()) {
            (true, None) => {
                self.error(format!("{path}.stop_chars"), "missing; TEXT_FILTER removes the characters of this file");
                ok = false;
            }
            (false, Some(_)) => {
                self.error(format!("{path}.stop_chars"), "is for TEXT_FILTER");
                ok = false;
            }
            (true, Some(file)) => {
                let path_of = files.base_dir.join(file);
                let read = files.source.read(&path_of).map_err(|e| format!("cannot read {}: {e}", path_of.display()));
                let parsed = read.and_then(|bytes| {
                    let chars = crate::ops::TextNormalizer::stop_chars(&bytes)
                        .map_err(|e| format!("{} {e}", path_of.display()))?;
                    Ok((chars, crate::ops::digest(&bytes)))
                });
                match parsed {
                    Ok((chars, digest)) => {
                        self.files.push((path_of, digest));
                        n.stop_chars = Some((chars, digest));
                    }
                    Err(message) => {
                        self.error(format!("{path}.stop_chars"), message);
                        ok = false;
                    }
                }
            }
            (false, None) => {}
        }
        n.max_length = o.max_length.map(|m| m as usize);
        if o.max_length == Some(0) {
            self.error(format!("{path}.max_length"), "found 0, expected at least 1 (characters kept)");
            ok = false;
        }
        ok.then_some(n)
    }

    /// Parses and checks the expression against its inputs' names and widths.
    fn expr(&mut self, path: &str, o: &entries::Expr, ins: &[&Output], inputs_ok: bool) -> Option<Transform> {
        let dtype = self.dtype(path, o.dtype.as_deref(), &[DataType::F32, DataType::F64], DataType::F32);
        let Some(text) = o.expression.as_deref() else {
            self.error(format!("{path}.expression"), "missing; write the expression over the inputs' names");
            return None;
        };
        let key = if o.input.is_some() { "input" } else { "inputs" };
        for i in ins {
            let name = i.name.as_str();
            let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !plain {
                let message = format!("{name:?} cannot be named in an expression (letters, digits and _ only)");
                self.error(format!("{path}.{key}"), message);
                return None;
            }
        }
        if !inputs_ok {
            return None;
        }
        // A sequence's width is its values per position; any sequence makes
        // the expression run per position, its result a sequence too.
        let width_of = |i: &Output| sequence_width(i).unwrap_or_else(|| dims(i).iter().product::<i64>());
        let widths: Vec<(&str, usize)> = ins.iter().map(|i| (i.name.as_str(), width_of(i).max(0) as usize)).collect();
        let per_position = ins.iter().any(|i| sequence_width(i).is_some());
        match Expr::parse(text, &widths) {
            Ok(e) => {
                let width = e.width as i64;
                let kind = K::Expr(Arc::new(e));
                Some(match per_position {
                    true => numbers_at_positions(kind, dtype, width),
                    false => dense(kind, dtype, vec![width]),
                })
            }
            Err(e) => {
                self.error(format!("{path}.expression"), format!("{e} in {text:?}"));
                None
            }
        }
    }

    fn multi_hot(&mut self, path: &str, o: &entries::MultiHot, ins: &[&Output], inputs_ok: bool) -> Option<Transform> {
        let num_embeddings = o.num_embeddings.clone().unwrap_or_default();
        if num_embeddings.len() != ins.len() || num_embeddings.contains(&0) {
            let msg =
                format!("found {num_embeddings:?}, expected one positive table size per input ({} inputs)", ins.len());
            self.error(format!("{path}.num_embeddings"), msg);
        }
        let min_table_size = self.required_u64(path, "min_table_size", o.min_table_size, 1..=u64::MAX);
        let size = self.required_u64(path, "multi_hot_size", o.multi_hot_size, 1..=1024) as usize;
        let keys: Vec<String> = ins.iter().map(|o| o.name.clone()).collect();
        let n = keys.len();
        inputs_ok.then(|| keyed(K::MultiHot { keys, num_embeddings, min_table_size, size }, n))
    }
}

/// The keys `lookup` and `match` share, borrowed from their entries.
struct MapSettings<'a> {
    op: &'static str,
    need_discrete: bool,
    combiner: Option<&'a str>,
    default: Option<f64>,
    buckets: Option<u64>,
    separator: Option<&'a str>,
    splits: Option<&'a str>,
}

impl<'a> MapSettings<'a> {
    fn of(
        op: &'static str,
        need_discrete: Option<bool>,
        combiner: &'a Option<String>,
        default: Option<f64>,
        buckets: Option<u64>,
        separator: &'a Option<String>,
        splits: &'a Option<String>,
    ) -> Self {
        MapSettings {
            op,
            need_discrete: need_discrete == Some(true),
            combiner: combiner.as_deref(),
            default,
            buckets,
            separator: separator.as_deref(),
            splits: splits.as_deref(),
        }
    }
}

/// One string per row, as the `string` kind gives.
fn strings(kind: K) -> Transform {
    Transform {
        kind,
        layout: Layout::Strings,
        dtype: DataType::Bytes,
        splits: DataType::I64,
        spec_shape: vec![-1],
        dense_shape: vec![],
    }
}

/// An id-to-id operator over a sequence keeps the sequence's shape
/// (`[B, -1, width]`): its values are mapped position by position.
fn per_position(mut t: Transform, ins: &[&Output]) -> Transform {
    if let Some(width) = ins.first().and_then(|o| sequence_width(o)) {
        t.spec_shape = vec![-1, -1, width];
    }
    t
}

/// One number per position of an id sequence of keys (`lookup`, `match`).
/// A sequence of `width` numbers per position (`[B, -1, width]`, i64 splits).
fn numbers_at_positions(kind: K, dtype: DataType, width: i64) -> Transform {
    Transform {
        kind,
        layout: Layout::Ragged,
        dtype,
        splits: DataType::I64,
        spec_shape: vec![-1, -1, width],
        dense_shape: vec![],
    }
}

fn numbers_per_position(kind: K) -> Transform {
    numbers_at_positions(kind, DataType::F32, 1)
}

fn ragged(kind: K, splits: DataType) -> Transform {
    Transform {
        kind,
        layout: Layout::Ragged,
        dtype: DataType::I64,
        splits,
        spec_shape: vec![-1, -1],
        dense_shape: vec![],
    }
}

pub(super) fn dense(kind: K, dtype: DataType, shape: Vec<i64>) -> Transform {
    let mut spec_shape = vec![-1];
    spec_shape.extend(&shape);
    Transform { kind, layout: Layout::Dense, dtype, splits: DataType::Unspecified, spec_shape, dense_shape: shape }
}

fn keyed(kind: K, keys: usize) -> Transform {
    let spec_shape = vec![keys as i64, -1];
    Transform {
        kind,
        layout: Layout::KeyedJagged,
        dtype: DataType::I64,
        splits: DataType::I64,
        spec_shape,
        dense_shape: vec![],
    }
}

/// The dense dimensions (after rows) of a dense output.
fn dims(o: &Output) -> Vec<i64> {
    match &o.op {
        Op::Derived(t) => t.dense_shape.clone(),
        _ => o.shape.clone(),
    }
}
