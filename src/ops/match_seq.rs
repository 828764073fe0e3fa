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
use super::unequal_lengths;
use crate::columns::Column;
use crate::error::ExtractError;

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
            let (p, s) = (("primary key sequence", pk, p.len()), ("secondary key sequence", sk, s.len()));
            return Err(unequal_lengths(name, r, p, s, "a match's two key sequences"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{Ragged, Values};

    /// An id sequence of width 1 whose rows hold `lens[r]` positions.
    fn sequence(lens: &[usize]) -> Column {
        let total = lens.iter().sum();
        let mut r = Ragged { values: Values::U64(vec![1; total]), width: Some(1), ..Default::default() };
        r.splits.push(0).unwrap();
        lens.iter().fold(0, |n, len| {
            r.splits.push(n + len).unwrap();
            n + len
        });
        Column::Ragged(r)
    }

    fn keys<'a>(primary: Option<&'a Column>, secondary: Option<&'a Column>) -> MatchKeys<'a> {
        MatchKeys { primary, secondary, names: ["p", "s"], separator: b"\x1d" }
    }

    /// Two sequences pair position with position, a SHARED one (one row)
    /// against every row of the other; the first row of unequal length is
    /// refused. A row's keys (not a sequence) or ALL stand at each position.
    #[test]
    fn positions_pair_and_unequal_rows_are_refused() {
        let (shared, rows, strings) = (sequence(&[2]), sequence(&[2, 1, 2]), Column::Strings(Default::default()));
        let error = |k: &MatchKeys<'_>| check(k, 3, "out").err().map(|e| e.to_string());
        let message = error(&keys(Some(&shared), Some(&rows))).unwrap();
        assert!(
            message.contains("row 1: the primary key sequence \"p\" is 2 long, the secondary key sequence \"s\" 1")
        );
        assert_eq!(error(&keys(Some(&rows), Some(&rows))), None);
        assert_eq!(error(&keys(Some(&rows), Some(&strings))), None, "one sequence: nothing to pair");
        let all: Vec<Places> = places(&keys(Some(&shared), Some(&rows)), 2).collect();
        assert_eq!(all, [(At::Position(0), At::Position(3)), (At::Position(1), At::Position(4))]);
        let broadcast: Vec<Places> = places(&keys(None, Some(&rows)), 1).collect();
        assert_eq!(broadcast, [(At::Row(1), At::Position(2))]);
        assert_eq!(places(&keys(Some(&strings), None), 0).count(), 0, "no sequence, no positions");
    }
}
