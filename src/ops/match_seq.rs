//! `match` per position of an id sequence (FG's match_feature as a
//! sub-feature of a sequence_feature): the primary key, the secondary key
//! or both are id sequences, and each position's keys are matched and
//! combined as a row's are, one number per position (`[rows, -1, 1]`), as
//! `lookup` gives for sequence keys.
//!
//! fex's rules where FG says nothing: a key that is not a sequence (a
//! row's keys, or ALL) is the same at every position of its row; two
//! sequences pair position `i` with position `i`, and a row where they
//! differ in length is a malformed sample (an error, see [`check`]), as a
//! lookup map's two lists are.

use std::ops::Range;

use super::ids::{is_sequence, row_range};
use super::lookup::{At, Combiner, MatchKeys, Places, match_number, match_rows};
use crate::columns::Column;
use crate::error::{ErrorKind, ExtractError};

/// Whether either key of a match is an id sequence (the per position case).
pub(super) fn any_sequence(keys: &MatchKeys<'_>) -> bool {
    [keys.primary, keys.secondary].into_iter().flatten().any(is_sequence)
}

/// The positions of row `r` of `key` when it is a sequence.
fn positions(key: Option<&Column>, r: usize) -> Option<Range<usize>> {
    key.filter(|c| is_sequence(c)).map(|c| row_range(c, r))
}

/// The places of row `r`'s positions: each position of the sequence (of
/// both, paired by position), a key that is not one at its row.
fn places(keys: &MatchKeys<'_>, r: usize) -> impl Iterator<Item = Places> {
    let (p, s) = (positions(keys.primary, r), positions(keys.secondary, r));
    let n = p.as_ref().or(s.as_ref()).map_or(0, ExactSizeIterator::len);
    let at =
        move |range: &Option<Range<usize>>, i: usize| range.as_ref().map_or(At::Row(r), |x| At::Position(x.start + i));
    (0..n).map(move |i| (at(&p, i), at(&s, i)))
}

/// Refuses a batch where the primary and the secondary key are both
/// sequences and differ in length in some row: pairing their positions
/// would pair the wrong keys. A sequence returned once (SHARED) counts
/// against every row of the other.
pub(super) fn check(keys: &MatchKeys<'_>, rows: usize, name: &str) -> Result<(), ExtractError> {
    for r in 0..rows {
        if let (Some(p), Some(s)) = (positions(keys.primary, r), positions(keys.secondary, r))
            && p.len() != s.len()
        {
            let [pk, sk] = keys.names;
            let message = format!(
                "row {r}: the primary key sequence {pk:?} is {} long, the secondary key sequence {sk:?} {}; a \
                 match's two key sequences must be as long",
                p.len(),
                s.len()
            );
            return Err(ErrorKind::Operator { name: name.to_string(), message }.into());
        }
    }
    Ok(())
}

/// `match`, continuous, per position: each position's keys matched and the
/// numbers found combined, `default` where a position finds nothing; a
/// sequence of one number per position.
pub(super) fn values_positions(
    map: &Column,
    keys: MatchKeys<'_>,
    out: &mut Column,
    rows: usize,
    settings: (Combiner, f64),
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.width = Some(1);
    o.splits.push(0)?;
    let mut result = Ok(());
    match_rows(map, &keys, rows, |r, each| {
        for at in places(&keys, r) {
            o.values.push_f64(match_number(each, r, at, settings));
        }
        if result.is_ok() {
            result = o.splits.push(o.values.len());
        }
    });
    result.map_err(Into::into)
}
