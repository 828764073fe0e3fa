//! One deepx line parsed into scratch (include/deepx_core/instance/base.h):
//! labels `y` or `y:w` (y in [-10000, 10000], w in (0, 10000], w = 1 when
//! absent), an optional `uuid:STRING`, then features `id` or `id:value`
//! (id a u64, value in [-100, 100], value = 1 when absent) separated by
//! spaces or tabs, in groups separated by `|` for libsvm_ex and uch. A line
//! is parsed whole before anything is appended to a batch, so a bad line
//! leaves no trace (deepx trims what it appended, libsvm_ex.h:125-134).
//!
//! Where fex is stricter than deepx's code: NaN and infinities are refused
//! (deepx's range checks let NaN through, base.h:88), a group count other
//! than `x_size` is an error (deepx ignores extra groups), and text after a
//! number that is neither `:`, a space nor `|` is an error everywhere. An
//! empty group is an empty row, as doc/instance.md says ("0 to many
//! features"; deepx's code refuses an empty libsvm_ex group).

use std::ops::Range;

use super::config::{DeepxConfig, Format};
use crate::text::error::TextErrorKind;

const MAX_LABEL: f64 = 10000.0;
const MAX_WEIGHT: f64 = 10000.0;
const MAX_FEATURE_VALUE: f64 = 100.0;

/// A failure: the 0-based byte range of the offending text and what is wrong.
pub(super) type Bad = (Range<usize>, TextErrorKind);

/// One parsed line, reused from line to line.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub labels: Vec<f32>,
    pub weights: Vec<f32>,
    pub uuid: Range<usize>,
    pub ids: Vec<u64>,
    pub values: Vec<f32>,
    /// End (into `ids`) of each group present on the line.
    pub group_ends: Vec<usize>,
}

impl Parsed {
    pub fn parse(&mut self, cfg: &DeepxConfig, line: &[u8]) -> Result<(), Bad> {
        self.labels.clear();
        self.weights.clear();
        self.ids.clear();
        self.values.clear();
        self.group_ends.clear();
        self.uuid = 0..0;
        let mut pos = 0;
        for i in 0..cfg.label_size {
            let t = next_token(line, &mut pos);
            if t.is_empty() {
                let m = format!("missing label {} of {} (label_size={})", i + 1, cfg.label_size, cfg.label_size);
                return Err((0..line.len(), TextErrorKind::Shape(m)));
            }
            self.label(line, t)?;
        }
        let save = pos;
        let t = next_token(line, &mut pos);
        if line[t.clone()].starts_with(b"uuid:") {
            if t.len() == 5 {
                return Err((t, TextErrorKind::Invalid("empty uuid".into())));
            }
            self.uuid = t.start + 5..t.end;
        } else {
            pos = save;
        }
        match cfg.format {
            Format::Libsvm => self.group(line, pos..line.len(), false),
            Format::LibsvmEx | Format::Uch => self.groups(cfg, line, pos),
        }
    }

    fn label(&mut self, line: &[u8], t: Range<usize>) -> Result<(), Bad> {
        let (y, w) = split_colon(line, t.clone());
        let label = number(line, y.clone())
            .filter(|x| x.abs() <= MAX_LABEL)
            .ok_or_else(|| invalid(y, "label is not a number in [-10000, 10000]"))?;
        let weight = match w {
            None => 1.0,
            Some(w) => number(line, w.clone())
                .filter(|&x| x > 0.0 && x <= MAX_WEIGHT)
                .ok_or_else(|| invalid(w, "weight is not a number in (0, 10000]"))?,
        };
        self.labels.push(label as f32);
        self.weights.push(weight as f32);
        Ok(())
    }

    fn groups(&mut self, cfg: &DeepxConfig, line: &[u8], start: usize) -> Result<(), Bad> {
        let mut from = start;
        loop {
            let end = line[from..].iter().position(|&b| b == b'|').map_or(line.len(), |i| from + i);
            self.group(line, from..end, true)?;
            if end == line.len() {
                break;
            }
            from = end + 1;
        }
        let found = self.group_ends.len();
        let start = line[start..].iter().position(|&b| b != b' ' && b != b'\t').map_or(line.len(), |i| start + i);
        match cfg.format {
            Format::LibsvmEx if found != cfg.groups => {
                let m = format!("found {found} feature groups, x_size is {}", cfg.groups);
                Err((start..line.len(), TextErrorKind::Shape(m)))
            }
            Format::Uch if found < 2 => {
                let m = "missing the candidate group (uch lines are user|candidate|history...)".to_string();
                Err((start..line.len(), TextErrorKind::Shape(m)))
            }
            Format::Uch => {
                // Trailing empty history groups are absent ones (deepx stops
                // at the end of the line, uch.h:78-85); histories past
                // x_hist_item_size are ignored, as deepx does (uch.h:144-148).
                while self.group_ends.len() > 2 && self.group_ends[self.group_ends.len() - 2] == self.ids.len() {
                    self.group_ends.pop();
                }
                self.group_ends.truncate(2 + cfg.groups);
                self.ids.truncate(*self.group_ends.last().unwrap_or(&0));
                self.values.truncate(self.ids.len());
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Features of one group: the bytes `span` of the line.
    fn group(&mut self, line: &[u8], span: Range<usize>, piped: bool) -> Result<(), Bad> {
        let mut pos = span.start;
        let end = span.end;
        loop {
            let t = next_token(&line[..end], &mut pos);
            if t.is_empty() {
                break;
            }
            self.feature(line, t, piped)?;
        }
        self.group_ends.push(self.ids.len());
        Ok(())
    }

    fn feature(&mut self, line: &[u8], t: Range<usize>, piped: bool) -> Result<(), Bad> {
        let (id, value) = split_colon(line, t);
        let x = std::str::from_utf8(&line[id.clone()]).ok().and_then(|s| s.parse::<u64>().ok());
        let what =
            if piped { "feature id is not a u64 (groups are separated by '|')" } else { "feature id is not a u64" };
        let x = x.ok_or_else(|| invalid(id, what))?;
        let v = match value {
            None => 1.0,
            Some(v) => number(line, v.clone())
                .filter(|x| x.abs() <= MAX_FEATURE_VALUE)
                .ok_or_else(|| invalid(v, "feature value is not a number in [-100, 100]"))?,
        };
        self.ids.push(x);
        self.values.push(v as f32);
        Ok(())
    }
}

/// The next run of bytes that are neither space nor tab, from `pos`.
fn next_token(line: &[u8], pos: &mut usize) -> Range<usize> {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = line[*pos..].iter().position(|b| !blank(b)).map_or(line.len(), |i| *pos + i);
    let end = line[start..].iter().position(blank).map_or(line.len(), |i| start + i);
    *pos = end;
    start..end
}

/// `a:b` into `a` and `b`; `a` alone into `a` and `None`.
fn split_colon(line: &[u8], t: Range<usize>) -> (Range<usize>, Option<Range<usize>>) {
    match line[t.clone()].iter().position(|&b| b == b':') {
        Some(i) => (t.start..t.start + i, Some(t.start + i + 1..t.end)),
        None => (t, None),
    }
}

/// A finite decimal number (deepx reads with strtod).
fn number(line: &[u8], r: Range<usize>) -> Option<f64> {
    let x: f64 = std::str::from_utf8(&line[r]).ok()?.parse().ok()?;
    x.is_finite().then_some(x)
}

fn invalid(r: Range<usize>, what: &str) -> Bad {
    (r, TextErrorKind::Invalid(what.to_string()))
}
