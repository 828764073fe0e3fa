//! How `decode_examples` cuts one fuzz input into several Examples, and the
//! inverse, used to write seeds.

/// At most this many Examples per input.
pub const MAX_EXAMPLES: usize = 16;

/// Byte 0 gives the count (`byte % MAX_EXAMPLES + 1`), the next `count - 1`
/// bytes the lengths of all Examples but the last, which takes the rest. A
/// short input gives fewer or shorter pieces; an empty one gives none.
pub fn split_examples(data: &[u8]) -> Vec<&[u8]> {
    let Some((&head, rest)) = data.split_first() else { return Vec::new() };
    let count = usize::from(head) % MAX_EXAMPLES + 1;
    let (lengths, mut body) = rest.split_at((count - 1).min(rest.len()));
    let mut out = Vec::with_capacity(count);
    for &len in lengths {
        let (piece, tail) = body.split_at(usize::from(len).min(body.len()));
        out.push(piece);
        body = tail;
    }
    out.push(body);
    out
}

/// The input that [`split_examples`] cuts into `examples`. Every Example but
/// the last must be at most 255 bytes long; `None` otherwise.
pub fn join_examples(examples: &[&[u8]]) -> Option<Vec<u8>> {
    let (last, init) = examples.split_last()?;
    if examples.len() > MAX_EXAMPLES {
        return None;
    }
    let mut out = vec![(examples.len() - 1) as u8];
    for e in init {
        out.push(u8::try_from(e.len()).ok()?);
    }
    init.iter().chain([last]).for_each(|e| out.extend_from_slice(e));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_then_split_round_trips() {
        let examples: [&[u8]; 3] = [b"ab", b"", b"cdef"];
        let joined = join_examples(&examples).unwrap();
        assert_eq!(split_examples(&joined), examples);
    }

    #[test]
    fn short_inputs_give_short_pieces() {
        assert!(split_examples(&[]).is_empty());
        assert_eq!(split_examples(&[2, 5]), [&[] as &[u8], &[]]);
        assert_eq!(split_examples(&[1, 9, 1, 2]), [&[1u8, 2] as &[u8], &[]]);
    }
}
