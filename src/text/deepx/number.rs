//! Numbers in a deepx line, read as fex reads them, with what deepx's own
//! parser would have done for the ones fex refuses. deepx's `fast_strtod`
//! (src/common/fast_strtox.cc:86-140) takes an optional sign, a run of
//! digits and dots, then optionally `e` or `E`, a sign and another such run,
//! and stops at the first other byte without complaint: to it `.`, `-`,
//! `1e` and `1.2.3` are numbers (0, -0, 1, 1.23). fex takes a token only
//! when the whole of it is a decimal number. Ranges are checked on the f32
//! that is stored, after rounding, as deepx checks its `float_t`
//! (include/deepx_core/instance/base.h:82-119, 194-204).

/// What a token is as a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Number {
    /// A decimal number, as the f32 stored.
    Value(f32),
    /// Not a number to deepx either (it refuses the line).
    Refused,
    /// Not a number, though deepx's parser takes all of it as one.
    DeepxTakes,
    /// A number followed by other text, from this offset in the token on:
    /// deepx reads the number and stops there.
    TextAfter(usize),
}

/// `token` as a number.
pub(super) fn read(token: &[u8]) -> Number {
    let deepx = deepx_span(token);
    let whole = std::str::from_utf8(token).ok().and_then(|s| s.parse::<f64>().ok()).filter(|x| x.is_finite());
    match whole {
        Some(x) if deepx == token.len() => Number::Value(x as f32),
        _ if deepx == 0 => Number::Refused,
        _ if deepx == token.len() => Number::DeepxTakes,
        _ if leading_number(&token[..deepx]) => Number::TextAfter(deepx),
        _ => Number::DeepxTakes,
    }
}

/// Bytes of `s` that deepx's fast_strtod consumes (0: it refuses `s`).
fn deepx_span(s: &[u8]) -> usize {
    let mut i = usize::from(matches!(s.first(), Some(b'-' | b'+')));
    i += digits_and_dots(&s[i..]);
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        i += usize::from(matches!(s.get(i), Some(b'-' | b'+')));
        i += digits_and_dots(&s[i..]);
    }
    i
}

fn digits_and_dots(s: &[u8]) -> usize {
    s.iter().take_while(|&&b| b.is_ascii_digit() || b == b'.').count()
}

/// Whether `s`, what deepx read, is a number fex would read too: then
/// only what follows it is wrong.
fn leading_number(s: &[u8]) -> bool {
    std::str::from_utf8(s).ok().and_then(|s| s.parse::<f64>().ok()).is_some_and(f64::is_finite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepx_reads_these_spans() {
        // fast_strtox.cc:90-139, by hand.
        let cases: [(&str, usize); 12] = [
            ("1.5", 3),
            ("-", 1),
            (".", 1),
            ("1e", 2),
            ("1.2.3", 5),
            ("e5", 2),
            ("1.5x", 3),
            ("0x10", 1),
            ("2:3", 1),
            ("inf", 0),
            ("x", 0),
            ("+.5e-3", 6),
        ];
        for (s, n) in cases {
            assert_eq!(deepx_span(s.as_bytes()), n, "{s}");
        }
    }

    #[test]
    fn tokens_are_numbers_or_say_what_deepx_would_do() {
        assert_eq!(read(b"1.5"), Number::Value(1.5));
        assert_eq!(read(b"1e-50"), Number::Value(0.0), "rounded to the f32 stored");
        assert_eq!(read(b"NaN"), Number::Refused);
        assert_eq!(read(b"1.2.3"), Number::DeepxTakes);
        assert_eq!(read(b"-"), Number::DeepxTakes);
        assert_eq!(read(b"1.5x"), Number::TextAfter(3));
        assert_eq!(read(b"2:3"), Number::TextAfter(1));
        assert_eq!(read(b"1e5e"), Number::TextAfter(3));
        assert_eq!(read(b"1.2.3x"), Number::DeepxTakes, "deepx's part is no number to fex");
    }
}
