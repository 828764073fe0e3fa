//! Errors of the text readers: what was wrong and exactly where (file, line,
//! 1-based byte column, the offending text, clipped), boxed so a `Result`
//! stays one pointer wide.

use std::fmt;

/// What a reader does with a line it cannot read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnError {
    /// Stop at the first bad line with its error (the default).
    #[default]
    Fail,
    /// Count the line, skip it and go on.
    Skip,
}

/// Why a line or the input could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextErrorKind {
    /// The stream failed (the message of the `std::io::Error`).
    Io(String),
    /// A line longer than the reader's limit (bytes).
    LineTooLong { limit: usize },
    /// A field or token that does not parse; the message says what was
    /// expected.
    Invalid(String),
    /// A line with too few or too many fields, groups or labels.
    Shape(String),
}

/// A bad line or a failed stream, with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError(Box<Inner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    file: String,
    line: u64,
    column: usize,
    text: String,
    kind: TextErrorKind,
}

/// Offending text longer than this is clipped in messages.
const CLIP: usize = 64;

impl TextError {
    pub fn new(file: &str, line: u64, column: usize, text: &[u8], kind: TextErrorKind) -> Self {
        let mut shown = String::from_utf8_lossy(&text[..text.len().min(CLIP)]).into_owned();
        if text.len() > CLIP {
            shown.push('…');
        }
        Self(Box::new(Inner { file: file.to_string(), line, column, text: shown, kind }))
    }

    pub fn file(&self) -> &str {
        &self.0.file
    }

    /// 1-based line number.
    pub fn line(&self) -> u64 {
        self.0.line
    }

    /// 1-based byte column where the offending text starts.
    pub fn column(&self) -> usize {
        self.0.column
    }

    /// The offending text (clipped to 64 bytes).
    pub fn text(&self) -> &str {
        &self.0.text
    }

    pub fn kind(&self) -> &TextErrorKind {
        &self.0.kind
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.0;
        write!(f, "{}:{}:{}: ", i.file, i.line, i.column)?;
        match &i.kind {
            TextErrorKind::Io(m) => write!(f, "cannot read: {m}"),
            TextErrorKind::LineTooLong { limit } => {
                write!(f, "line longer than {limit} bytes (starts {:?}); raise the line limit", i.text)
            }
            TextErrorKind::Invalid(m) | TextErrorKind::Shape(m) => write!(f, "{m}: {:?}", i.text),
        }
    }
}

impl std::error::Error for TextError {}

const _: () = assert!(std::mem::size_of::<Result<(), TextError>>() == std::mem::size_of::<usize>());
