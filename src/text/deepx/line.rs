//! One deepx line parsed into scratch (include/deepx_core/instance/base.h):
//! labels `y` or `y:w` (y in [-10000, 10000], w in (0, 10000], w = 1 when
//! absent), an optional `uuid:STRING`, then features `id` or `id:value`
//! (id a u64, value in [-100, 100], value = 1 when absent) separated by
//! spaces or tabs, in groups separated by `|` for libsvm_ex and uch. A line
//! is parsed whole before anything is appended to a batch, so a bad line
//! leaves no trace (deepx trims what it appended, libsvm_ex.h:125-134).
//! Ranges are checked on the f32 stored (`number`).
//!
//! A line deepx refuses, fex refuses, so `OnError::Skip` keeps the lines
//! deepx's reader keeps (it logs and skips a bad line,
//! instance_reader_impl.cc:79-91): an empty libsvm_ex group, an empty user
//! or candidate group. Where deepx reads a line in a way its author cannot
//! have meant, fex refuses it and the message says what deepx would have
//! done: text after a number (deepx steps over one byte and reads on), a
//! token only deepx's parser takes for a number, an id above u64::MAX
//! (deepx wraps it), libsvm_ex text past `x_size` groups (deepx ignores
//! it), an empty history group before a filled one and a bad history
//! group (deepx stops reading histories there and keeps the line). NaN and
//! infinities are refused (deepx's parser never makes them). The book's
//! "deepx, line by line" page lists each case with the deepx line.

use std::ops::Range;

use super::config::{DeepxConfig, Format};
use super::number::{self, Number};
use crate::text::error::TextErrorKind;

const MAX_LABEL: f32 = 10000.0;
const MAX_WEIGHT: f32 = 10000.0;
const MAX_FEATURE_VALUE: f32 = 100.0;

const TEXT_AFTER: &str = "text after a number";

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
    /// Where the first group starts (libsvm_ex, uch).
    groups_from: usize,
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
        // Text after a label is refused by deepx too (base.h:93-96).
        let what = "label is not a number in [-10000, 10000]";
        let label = match number::read(&line[y.clone()]) {
            Number::TextAfter(_) => return Err(invalid(y, what)),
            n => in_range(n, y, what, |x| x.abs() <= MAX_LABEL)?,
        };
        let weight = match w {
            None => 1.0,
            Some(w) => {
                let n = number::read(&line[w.clone()]);
                in_range(n, w, "weight is not a number in (0, 10000]", |x| x > 0.0 && x <= MAX_WEIGHT)?
            }
        };
        self.labels.push(label);
        self.weights.push(weight);
        Ok(())
    }

    fn groups(&mut self, cfg: &DeepxConfig, line: &[u8], start: usize) -> Result<(), Bad> {
        let wanted = if cfg.format == Format::Uch { 2 + cfg.groups } else { cfg.groups };
        self.groups_from = start;
        let mut from = start;
        loop {
            let end = line[from..].iter().position(|&b| b == b'|').map_or(line.len(), |i| from + i);
            let index = self.group_ends.len();
            if index == wanted {
                return self.past_the_last_group(cfg, line, from);
            }
            if cfg.format == Format::Uch && index > 2 && !is_blank(&line[from..end]) {
                self.no_empty_history_before(line, index)?;
            }
            self.group(line, from..end, true).map_err(|bad| in_history(cfg, index, bad))?;
            self.check_group(cfg, from..end)?;
            if end == line.len() {
                break;
            }
            from = end + 1;
        }
        self.all_groups_found(cfg, line, start)
    }

    /// The group just parsed (`span`), against deepx's rules for its place.
    fn check_group(&self, cfg: &DeepxConfig, span: Range<usize>) -> Result<(), Bad> {
        let index = self.group_ends.len() - 1;
        let empty = index.checked_sub(1).map_or(0, |i| self.group_ends[i]) == self.ids.len();
        // An empty group is all blanks: point where its features would end.
        let shape = |m: String| Err((span.end..span.end, TextErrorKind::Shape(m)));
        match (cfg.format, index) {
            (Format::LibsvmEx, _) if empty => shape(format!(
                "feature group {index} is empty; deepx refuses such a line too (libsvm_ex.h:55-62, base.h:169-173)"
            )),
            (Format::Uch, 0 | 1) if empty => {
                let (which, at) = if index == 0 { ("user", "uch.h:58-66") } else { ("candidate", "uch.h:68-76") };
                shape(format!("the {which} group is empty; deepx refuses such a line too ({at}, base.h:169-173)"))
            }
            _ => Ok(()),
        }
    }

    /// Before a filled history group `index`, every earlier one must be
    /// filled (they are parsed; this one is not yet).
    fn no_empty_history_before(&self, line: &[u8], index: usize) -> Result<(), Bad> {
        let Some(h) = (2..index).find(|&g| self.group_ends[g - 1] == self.group_ends[g]) else { return Ok(()) };
        let at = group_start(&line[self.groups_from..], h) + self.groups_from;
        let m = format!(
            "history group {} is empty and a later one is not; deepx stops reading histories at the first \
             empty one and keeps the line with __instXhist_size {} and the rest dropped (uch.h:78-85, \
             144-149); fex refuses it",
            h - 2,
            h - 2
        );
        Err((at..at, TextErrorKind::Shape(m)))
    }

    /// The line goes on after the last group the config asks for.
    fn past_the_last_group(&mut self, cfg: &DeepxConfig, line: &[u8], from: usize) -> Result<(), Bad> {
        if cfg.format == Format::Uch {
            // Histories past x_hist_item_size are not read, as deepx reads
            // none of them (uch.h:144-148).
            return self.all_groups_found(cfg, line, from);
        }
        if line[from..].iter().all(|&b| b == b' ' || b == b'\t' || b == b'|') {
            return Ok(());
        }
        let m = format!(
            "text after the last of x_size={} feature groups; deepx reads the first {} groups and ignores the \
             rest of the line (libsvm_ex.h:110-117); fex refuses it",
            cfg.groups, cfg.groups
        );
        Err((from - 1..line.len(), TextErrorKind::Shape(m)))
    }

    fn all_groups_found(&mut self, cfg: &DeepxConfig, line: &[u8], start: usize) -> Result<(), Bad> {
        let found = self.group_ends.len();
        let start = line[start..].iter().position(|&b| b != b' ' && b != b'\t').map_or(line.len(), |i| start + i);
        match cfg.format {
            Format::LibsvmEx if found != cfg.groups => {
                let m = format!(
                    "found {found} feature groups, x_size is {}; deepx refuses such a line too (libsvm_ex.h:55-62)",
                    cfg.groups
                );
                Err((start..line.len(), TextErrorKind::Shape(m)))
            }
            Format::Uch if found < 2 => {
                let m = "missing the candidate group (uch lines are user|candidate|history...)".to_string();
                Err((start..line.len(), TextErrorKind::Shape(m)))
            }
            Format::Uch => {
                // Trailing empty history groups are absent ones: deepx stops
                // at the end of the line or at an empty group (uch.h:78-85).
                while self.group_ends.len() > 2 && self.group_ends[self.group_ends.len() - 2] == self.ids.len() {
                    self.group_ends.pop();
                }
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
        let x = feature_id(&line[id.clone()], piped).map_err(|m| invalid(id, &m))?;
        let v = match value {
            None => 1.0,
            Some(v) => {
                let what = "feature value is not a number in [-100, 100]";
                in_range(number::read(&line[v.clone()]), v, what, |x| x.abs() <= MAX_FEATURE_VALUE)?
            }
        };
        self.ids.push(x);
        self.values.push(v);
        Ok(())
    }
}

/// A feature id: decimal digits, at most u64::MAX.
fn feature_id(s: &[u8], piped: bool) -> Result<u64, String> {
    if !s.is_empty() && s.iter().all(u8::is_ascii_digit) {
        // Digits only, so the one failure is overflow.
        return std::str::from_utf8(s).ok().and_then(|s| s.parse().ok()).ok_or_else(|| {
            "feature id is not a u64: it is above 18446744073709551615; deepx wraps it modulo 2^64 \
             (fast_strtox.cc:177-189, no overflow check), fex refuses it"
                .to_string()
        });
    }
    let what = if piped { "feature id is not a u64 (groups are separated by '|')" } else { "feature id is not a u64" };
    Err(what.to_string())
}

/// The f32 a number token stores, if `ok` (deepx's range, checked on the
/// f32 as deepx checks it); otherwise what is wrong and, where deepx reads
/// the token anyway, what it does.
fn in_range(n: Number, r: Range<usize>, what: &str, ok: impl Fn(f32) -> bool) -> Result<f32, Bad> {
    match n {
        Number::Value(x) if ok(x) => Ok(x),
        Number::Value(x) => Err(invalid(r, &format!("{what} (as the f32 stored it is {x:?})"))),
        Number::Refused => Err(invalid(r, what)),
        Number::DeepxTakes => Err(invalid(
            r,
            &format!("{what}; deepx's parser reads a number from it (fast_strtox.cc:86-140), fex refuses it"),
        )),
        Number::TextAfter(at) => Err(invalid(
            r.start + at..r.end,
            &format!(
                "{TEXT_AFTER}; deepx ends the number here, steps over one byte and reads on from the next \
                 (base.h:122, 207), fex refuses it"
            ),
        )),
    }
}

/// Where group `g` of `groups` starts: after its `g`-th `|`.
fn group_start(groups: &[u8], g: usize) -> usize {
    match g.checked_sub(1) {
        None => 0,
        Some(n) => groups.iter().enumerate().filter(|(_, b)| **b == b'|').nth(n).map_or(groups.len(), |(i, _)| i + 1),
    }
}

/// A bad feature in a history group says what deepx does with it: stop
/// reading histories, keep the line. (Text after a number is not such a
/// stop: deepx reads on past it, as its message says.)
fn in_history(cfg: &DeepxConfig, index: usize, (span, kind): Bad) -> Bad {
    let (Format::Uch, 2.., TextErrorKind::Invalid(m)) = (cfg.format, index, &kind) else { return (span, kind) };
    if m.starts_with(TEXT_AFTER) {
        return (span, kind);
    }
    let m = format!(
        "{m} in history group {}; deepx stops reading histories at a bad one and keeps the line with \
         __instXhist_size {} (uch.h:78-85, 144-149), fex refuses it",
        index - 2,
        index - 2
    );
    (span, TextErrorKind::Invalid(m))
}

/// The next run of bytes that are neither space nor tab, from `pos`.
fn next_token(line: &[u8], pos: &mut usize) -> Range<usize> {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = line[*pos..].iter().position(|b| !blank(b)).map_or(line.len(), |i| *pos + i);
    let end = line[start..].iter().position(blank).map_or(line.len(), |i| start + i);
    *pos = end;
    start..end
}

fn is_blank(s: &[u8]) -> bool {
    s.iter().all(|&b| b == b' ' || b == b'\t')
}

/// `a:b` into `a` and `b`; `a` alone into `a` and `None`.
fn split_colon(line: &[u8], t: Range<usize>) -> (Range<usize>, Option<Range<usize>>) {
    match line[t.clone()].iter().position(|&b| b == b':') {
        Some(i) => (t.start..t.start + i, Some(t.start + i + 1..t.end)),
        None => (t, None),
    }
}

fn invalid(r: Range<usize>, what: &str) -> Bad {
    (r, TextErrorKind::Invalid(what.to_string()))
}
