//! String operators over one string per row: `regex_replace` (FG's
//! RegexReplace operator), `slice`, `split` and `normalize_text` (FG's
//! text_normalizer). Each gives one string per row.

use std::fmt;

use super::ids::string_at;
use crate::columns::Column;
use crate::error::ExtractError;

/// Largest compiled program a config's pattern may make (regex's own
/// bound, so a pattern cannot make the config load take unbounded memory).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled pattern, compared and printed by its text.
#[derive(Clone)]
pub struct Pattern {
    pub text: String,
    regex: regex::bytes::Regex,
}

impl Pattern {
    pub fn new(text: &str) -> Result<Pattern, String> {
        let regex = regex::bytes::RegexBuilder::new(text)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| e.to_string().lines().last().unwrap_or_default().trim().to_string())?;
        Ok(Pattern { text: text.to_string(), regex })
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", self.text)
    }
}

/// Every non-overlapping match of `pattern` in each row replaced by
/// `replacement` (`$1`, `${name}` name groups; `$$` is a dollar).
pub(super) fn regex_replace(
    pattern: &Pattern,
    replacement: &[u8],
    input: &Column,
    out: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let s = out.strings_mut();
    s.end_row();
    // A replacement without `$` is copied as it is, and the matches need no
    // groups: no allocation per row.
    let literal = !replacement.contains(&b'$');
    for r in 0..rows {
        let hay = string_at(input, r);
        let mut last = 0;
        if literal {
            for m in pattern.regex.find_iter(hay) {
                s.bytes.extend_from_slice(&hay[last..m.start()]);
                s.bytes.extend_from_slice(replacement);
                last = m.end();
            }
        } else {
            for caps in pattern.regex.captures_iter(hay) {
                let m = caps.get(0).expect("group 0 is the match");
                s.bytes.extend_from_slice(&hay[last..m.start()]);
                caps.expand(replacement, &mut s.bytes);
                last = m.end();
            }
        }
        s.bytes.extend_from_slice(&hay[last..]);
        s.end_row();
    }
    Ok(())
}

/// Characters `start..end` of each row, counted as Python counts them
/// (negative from the end, clamped to the string; `end` None is the end).
/// A row that is not UTF-8 is cut by bytes instead.
pub(super) fn slice(
    start: i64,
    end: Option<i64>,
    input: &Column,
    out: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let s = out.strings_mut();
    s.end_row();
    for r in 0..rows {
        let bytes = string_at(input, r);
        let part = match std::str::from_utf8(bytes) {
            // ASCII: characters are bytes.
            Ok(_) if bytes.is_ascii() => {
                let (a, b) = bounds(start, end, bytes.len());
                if a < b { &bytes[a..b] } else { &[][..] }
            }
            Ok(text) => {
                let chars = text.chars().count();
                let (a, b) = bounds(start, end, chars);
                let at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
                if a < b { &bytes[at(a)..at(b)] } else { &[][..] }
            }
            Err(_) => {
                let (a, b) = bounds(start, end, bytes.len());
                if a < b { &bytes[a..b] } else { &[][..] }
            }
        };
        s.bytes.extend_from_slice(part);
        s.end_row();
    }
    Ok(())
}

/// Part `index` of each row's string split at every `separator`, counted
/// as Python's `s.split(separator)[index]` counts (empty parts are parts;
/// negative from the end); a row with fewer parts gives the empty string.
pub(super) fn split(
    separator: &[u8],
    index: i64,
    input: &Column,
    out: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let s = out.strings_mut();
    s.end_row();
    for r in 0..rows {
        s.bytes.extend_from_slice(part(string_at(input, r), separator, index));
        s.end_row();
    }
    Ok(())
}

/// Part `index` of `text` split at `sep` (non-empty), or empty. The
/// separators are found left to right, each after the last one's end, as
/// Python finds them (so "aaa" split at "aa" is "", "a"), also for a
/// negative index: the parts are counted first.
fn part<'t>(text: &'t [u8], sep: &[u8], index: i64) -> &'t [u8] {
    let want = if index >= 0 {
        index.unsigned_abs()
    } else {
        let parts = separators(text, sep).count() as u64 + 1;
        match parts.checked_sub(index.unsigned_abs()) {
            Some(k) => k,
            None => return &[],
        }
    };
    let mut start = 0;
    for (k, end) in separators(text, sep).chain([text.len()]).enumerate() {
        if k as u64 == want {
            return &text[start..end];
        }
        start = end + sep.len();
    }
    &[]
}

/// Where each separator starts, left to right, none overlapping the last.
fn separators<'t>(text: &'t [u8], sep: &'t [u8]) -> impl Iterator<Item = usize> + 't {
    let mut from = 0;
    std::iter::from_fn(move || {
        let rest = text.get(from..)?;
        let at = match sep {
            [b] => rest.iter().position(|x| x == b),
            _ => rest.windows(sep.len()).position(|w| w == sep),
        }?;
        from += at + sep.len();
        Some(from - sep.len())
    })
}

/// Python's slice bounds over `len` items.
fn bounds(start: i64, end: Option<i64>, len: usize) -> (usize, usize) {
    let len_i = len as i64;
    let fix = |x: i64| if x < 0 { (len_i + x).max(0) } else { x.min(len_i) } as usize;
    (fix(start), end.map_or(len, fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_count_like_python() {
        let cases: [(i64, Option<i64>, &str); 8] = [
            (0, Some(2), "ab"),
            (1, None, "bcdé"),
            (-2, None, "dé"),
            (-10, Some(1), "a"),
            (3, Some(1), ""),
            (0, Some(-1), "abcd"),
            (5, None, ""),
            (-1, Some(99), "é"),
        ];
        for (start, end, want) in cases {
            let (a, b) = bounds(start, end, 5);
            let text: String = "abcdé".chars().skip(a).take(b.saturating_sub(a)).collect();
            assert_eq!(text, want, "{start}..{end:?}");
        }
    }

    /// Each case as Python answers `text.split(sep)[index]` (IndexError:
    /// the empty string).
    #[test]
    fn splits_count_like_python() {
        // Text, separator, index, the part.
        type Case = (&'static [u8], &'static [u8], i64, &'static [u8]);
        let cases: [Case; 16] = [
            (b"a>b>c", b">", 0, b"a"),
            (b"a>b>c", b">", 2, b"c"),
            (b"a>b>c", b">", 3, b""),
            (b"a>b>c", b">", -1, b"c"),
            (b"a>b>c", b">", -3, b"a"),
            (b"a>b>c", b">", -4, b""),
            (b"", b">", 0, b""),
            (b"", b">", -1, b""),
            (b"abc", b">", 0, b"abc"),
            (b"abc", b">", 1, b""),
            (b"a>", b">", 1, b""),
            (b">>a", b">", 2, b"a"),
            (b"aaa", b"aa", 0, b""),
            (b"aaa", b"aa", -1, b"a"),
            (b"x::y::", b"::", -2, b"y"),
            (b"\xff\x1d\xfe", b"\x1d", 1, b"\xfe"),
        ];
        for (text, sep, index, want) in cases {
            assert_eq!(part(text, sep, index), want, "{text:?} {sep:?} {index}");
        }
        assert_eq!(part(b"a", b">", i64::MIN), b"");
        assert_eq!(part(b"a", b">", i64::MAX), b"");
    }

    proptest::proptest! {
        /// An ASCII string normalizes byte by byte (`apply_ascii`) to what
        /// the character path (`apply`) gives, whatever the options: case,
        /// stop characters (ASCII or not), spaces removed, CJK split (no
        /// ASCII character is one), a length limit.
        #[test]
        fn ascii_strings_normalize_as_characters_do(
            text in proptest::collection::vec(proptest::sample::select(b"aZ09 \t\r,.!~\x0b\x7f".to_vec()), 0..24),
            upper in proptest::option::of(proptest::bool::ANY),
            (sbc2dbc, cht2chs, remove_space, split_chars) in (proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY),
            stops in proptest::option::of(proptest::sample::subsequence(vec!['a', 'A', ',', ' ', '\t', '～', '乾'], 0..4)),
            max_length in proptest::option::of(0usize..30),
        ) {
            let stop_chars = stops.map(|mut s| { s.sort_unstable(); (s, 0) });
            let n = TextNormalizer { sbc2dbc, upper, cht2chs, stop_chars, remove_space, split_chars, max_length };
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            n.apply_ascii(&text, n.ascii_drops(), &mut fast);
            n.apply(std::str::from_utf8(&text).unwrap(), &mut slow);
            proptest::prop_assert_eq!(fast, slow);
        }

        /// `part` agrees with the parts collected byte by byte, indexed
        /// as Python indexes a list.
        #[test]
        fn splits_agree_with_the_parts_collected(
            text in proptest::collection::vec(proptest::sample::select(b"ab,;\xff".to_vec()), 0..12),
            sep in proptest::sample::select(vec![&b","[..], b",,", b",;,", b"\xff"]),
            index in -6i64..6,
        ) {
            let mut parts = vec![vec![]];
            let mut i = 0;
            while i < text.len() {
                if text[i..].starts_with(sep) {
                    parts.push(vec![]);
                    i += sep.len();
                } else {
                    parts.last_mut().unwrap().push(text[i]);
                    i += 1;
                }
            }
            let at = if index < 0 { parts.len() as i64 + index } else { index };
            let want = usize::try_from(at).ok().and_then(|k| parts.get(k)).cloned().unwrap_or_default();
            proptest::prop_assert_eq!(part(&text, sep, index), &want[..]);
        }
    }

    #[test]
    fn patterns_compile_once_and_say_what_is_wrong() {
        assert!(Pattern::new("a(b").unwrap_err().contains("unclosed group"));
        assert_eq!(Pattern::new("x+").unwrap(), Pattern::new("x+").unwrap());
        assert!(Pattern::new("(a{1000}){1000}").unwrap_err().contains("size limit"));
    }

    /// The golden corpus writes strings as YAML text, which cannot hold
    /// bytes that are not UTF-8; these rows say what such bytes become.
    #[test]
    fn traditional_chinese_in_bytes_that_are_not_utf8() {
        let rows: [&[u8]; 3] = [b"\xe8\x90\xac\xff\xe8\x90", "體育".as_bytes(), b"\xc3(a\xe9\xbe\x8d"];
        let mut input = crate::columns::Strings::default();
        input.end_row();
        for r in rows {
            input.bytes.extend_from_slice(r);
            input.end_row();
        }
        let n = TextNormalizer { cht2chs: true, upper: Some(true), ..TextNormalizer::default() };
        let mut out = Column::Strings(Default::default());
        normalize(&n, &Column::Strings(input), &mut out, rows.len()).unwrap();
        let Column::Strings(s) = out else { unreachable!("normalize writes strings") };
        let text = String::from_utf8(s.bytes).unwrap();
        let got: Vec<&str> = s.offsets.windows(2).map(|w| &text[w[0] as usize..w[1] as usize]).collect();
        // 萬, a bad byte, a cut 萬 (one U+FFFD for the sequence); 龍 after
        // a bad lead byte.
        assert_eq!(got, ["万\u{FFFD}\u{FFFD}", "体育", "\u{FFFD}(A龙"]);
    }
}

/// FG's text_normalizer as an operator (`normalize_text`), with FG's
/// option names. Applied in a fixed order, whatever the order given:
/// full-width to half-width (`TEXT_SBC2DBC`: U+FF01..U+FF5E to ASCII,
/// U+3000 to a space), case (`TEXT_LOWER2UPPER` or `TEXT_UPPER2LOWER`,
/// ASCII letters only), traditional to simplified Chinese (`TEXT_CHT2CHS`:
/// character by character, OpenCC's TSCharacters table, see `t2s`; FG
/// numbers this option between SBC2DBC and FILTER), stop characters
/// removed (`TEXT_FILTER`, the characters of `stop_chars`), white space
/// removed (`TEXT_REMOVE_SPACE`, Unicode White_Space), CJK ideographs
/// split by spaces (`TEXT_SPLITCHRS`: one space between two characters
/// where either is a CJK ideograph and neither is white space), then cut
/// to `max_length` characters. A string
/// that is not UTF-8 is read with U+FFFD for each bad sequence.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextNormalizer {
    pub sbc2dbc: bool,
    /// Some(true): to upper case; Some(false): to lower case.
    pub upper: Option<bool>,
    /// Traditional Chinese characters to simplified (`TEXT_CHT2CHS`).
    pub cht2chs: bool,
    /// Sorted stop characters (`TEXT_FILTER`), and their file's digest.
    pub stop_chars: Option<(Vec<char>, u64)>,
    pub remove_space: bool,
    pub split_chars: bool,
    pub max_length: Option<usize>,
}

impl TextNormalizer {
    /// The stop characters of a file: every character but line ends.
    pub fn stop_chars(bytes: &[u8]) -> Result<Vec<char>, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("is not UTF-8 ({e})"))?;
        let mut chars: Vec<char> = text.chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
        chars.sort_unstable();
        chars.dedup();
        Ok(chars)
    }

    fn char(&self, c: char) -> Option<char> {
        let c = match c {
            '\u{3000}' if self.sbc2dbc => ' ',
            '\u{FF01}'..='\u{FF5E}' if self.sbc2dbc => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            c => c,
        };
        let c = match self.upper {
            Some(true) => c.to_ascii_uppercase(),
            Some(false) => c.to_ascii_lowercase(),
            None => c,
        };
        // After width and case, so stop characters are matched against
        // simplified text (a stop list written in simplified characters
        // also removes their traditional forms).
        let c = if self.cht2chs { super::t2s::simplified(c) } else { c };
        if self.stop_chars.as_ref().is_some_and(|(stop, _)| stop.binary_search(&c).is_ok()) {
            return None;
        }
        if self.remove_space && c.is_whitespace() {
            return None;
        }
        Some(c)
    }

    /// The ASCII characters this normalizer drops, after case, as bits:
    /// stop characters and, with `TEXT_REMOVE_SPACE`, white space (ASCII's
    /// White_Space is 9..=13 and the space).
    fn ascii_drops(&self) -> u128 {
        let mut drops = 0u128;
        for b in 0..128u8 {
            let c = char::from(b);
            let stop = self.stop_chars.as_ref().is_some_and(|(stop, _)| stop.binary_search(&c).is_ok());
            if stop || (self.remove_space && c.is_whitespace()) {
                drops |= 1 << b;
            }
        }
        drops
    }

    /// `text`, all ASCII, normalized and appended to `out`: what `apply`
    /// gives, byte by byte. No ASCII character changes width or script, and
    /// none is a CJK ideograph, so only case, the dropped characters
    /// (`drops`, from `ascii_drops`) and `max_length` apply.
    fn apply_ascii(&self, text: &[u8], drops: u128, out: &mut Vec<u8>) {
        let limit = self.max_length.unwrap_or(usize::MAX);
        if drops == 0 {
            // Every byte is kept: copy the run, then change its case.
            let at = out.len();
            out.extend_from_slice(&text[..text.len().min(limit)]);
            match self.upper {
                Some(true) => out[at..].make_ascii_uppercase(),
                Some(false) => out[at..].make_ascii_lowercase(),
                None => {}
            }
            return;
        }
        let mut count = 0usize;
        for &b in text {
            let c = match self.upper {
                Some(true) => b.to_ascii_uppercase(),
                Some(false) => b.to_ascii_lowercase(),
                None => b,
            };
            if drops >> c & 1 == 1 {
                continue;
            }
            if count == limit {
                break;
            }
            out.push(c);
            count += 1;
        }
    }

    /// `text` normalized, appended to `out`.
    fn apply(&self, text: &str, out: &mut Vec<u8>) {
        let mut count = 0usize;
        let mut last: Option<char> = None;
        let limit = self.max_length.unwrap_or(usize::MAX);
        let mut buf = [0u8; 4];
        for c in text.chars().filter_map(|c| self.char(c)) {
            if self.split_chars
                && let Some(p) = last
                && !p.is_whitespace()
                && !c.is_whitespace()
                && (is_cjk(p) || is_cjk(c))
            {
                if count == limit {
                    break;
                }
                out.push(b' ');
                count += 1;
            }
            if count == limit {
                break;
            }
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            count += 1;
            last = Some(c);
        }
    }
}

/// A CJK unified ideograph (the main block, extensions A to G, and the
/// compatibility ideographs).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2EBEF | 0x30000..=0x3134F | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// Each row's string normalized; one string per row.
pub(super) fn normalize(n: &TextNormalizer, input: &Column, out: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let s = out.strings_mut();
    s.end_row();
    let drops = n.ascii_drops();
    for r in 0..rows {
        let bytes = string_at(input, r);
        if bytes.is_ascii() {
            n.apply_ascii(bytes, drops, &mut s.bytes);
            s.end_row();
            continue;
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => n.apply(text, &mut s.bytes),
            Err(_) => n.apply(&String::from_utf8_lossy(bytes), &mut s.bytes),
        }
        s.end_row();
    }
    Ok(())
}
