//! The line source every text reader shares: lines of a `BufRead` one at a
//! time, in one reused buffer of at most `max_line_bytes`, so memory stays
//! bounded whatever the input. A line over the limit is consumed to its end
//! and reported, so a reader that skips bad lines can go on after it.

use std::io::BufRead;

use super::error::{TextError, TextErrorKind};

/// The default longest line: far above any real sample line.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;

/// Lines of one named input, numbered from 1, without `\n` or `\r\n`.
#[derive(Debug)]
pub struct LineSource<R> {
    inner: R,
    file: String,
    line: Vec<u8>,
    number: u64,
    max: usize,
    done: bool,
}

impl<R: BufRead> LineSource<R> {
    pub fn new(inner: R, file: impl Into<String>, max_line_bytes: usize) -> Self {
        Self { inner, file: file.into(), line: Vec::new(), number: 0, max: max_line_bytes, done: false }
    }

    /// The name errors give the input.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The number of the line last returned (1-based).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Moves to the next line (then `line()`); false at the end. A final
    /// line without `\n` counts.
    pub fn advance(&mut self) -> Result<bool, TextError> {
        if self.done {
            return Ok(false);
        }
        self.line.clear();
        self.number += 1;
        let mut too_long = false;
        let mut saw_any = false;
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Err(self.error(0, TextErrorKind::Io(e.to_string())));
                }
            };
            if buf.is_empty() {
                self.done = true;
                if !saw_any {
                    return Ok(false);
                }
                break;
            }
            saw_any = true;
            let (take, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            let room = self.max.saturating_sub(self.line.len());
            if take > room {
                too_long = true;
            }
            if !too_long {
                self.line.extend_from_slice(&buf[..take]);
            } else if self.line.len() < self.max {
                self.line.extend_from_slice(&buf[..room.min(take)]);
            }
            self.inner.consume(take + usize::from(end));
            if end {
                break;
            }
        }
        if too_long {
            return Err(self.error(1, TextErrorKind::LineTooLong { limit: self.max }));
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Ok(true)
    }

    /// The current line.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// An error about bytes `span` of the current line.
    pub fn error_at(&self, span: std::ops::Range<usize>, kind: TextErrorKind) -> TextError {
        let text = self.line.get(span.clone()).unwrap_or(&[]);
        TextError::new(&self.file, self.number, span.start + 1, text, kind)
    }

    fn error(&self, column: usize, kind: TextErrorKind) -> TextError {
        TextError::new(&self.file, self.number, column, &self.line, kind)
    }
}
