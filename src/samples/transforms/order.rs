//! `shuffle` and `batch`, which order rows across inputs, so they hold rows
//! that own their bytes (`Rows::into_owned`). Shuffle is tf.data's: a
//! buffer of `buffer_size` rows; each arriving row takes the place of one
//! drawn at random, which leaves; at the end the rest leave in random order.
//! Batch groups rows into `batch_size`; the last short batch is kept unless
//! `drop_remainder`.

use super::Rng;
use crate::extract::Rows;

/// Shuffle, then batch, either optional.
#[derive(Debug)]
pub struct Reorder {
    shuffle: Option<(usize, Rng)>,
    /// Rows waiting in the shuffle buffer.
    buffer: Option<Rows<'static>>,
    batch: Option<(usize, bool)>,
    /// Rows of the batch being filled.
    pending: Option<Rows<'static>>,
    /// Rows dropped by `drop_remainder`.
    pub dropped: u64,
}

impl Reorder {
    pub(super) fn new(shuffle: Option<(usize, u64)>, batch: Option<(usize, bool)>) -> Self {
        let shuffle = shuffle.map(|(n, seed)| (n, Rng::new(seed)));
        Self { shuffle, buffer: None, batch, pending: None, dropped: 0 }
    }

    /// Takes an input's rows; returns the batches (or, without `batch`, the
    /// rows) ready to write, possibly none.
    pub fn push(&mut self, rows: Rows<'static>) -> Vec<Rows<'static>> {
        let mut out = Vec::new();
        let ready = self.shuffled(rows);
        self.batched(ready, &mut out);
        out
    }

    /// The end of input: what the buffers still hold.
    pub fn finish(&mut self) -> Vec<Rows<'static>> {
        let mut out = Vec::new();
        if let (Some((_, rng)), Some(mut buffer)) = (self.shuffle.as_mut(), self.buffer.take()) {
            let mut ready = buffer.empty_like();
            while !buffer.is_empty() {
                let j = (rng.next() % buffer.len() as u64) as usize;
                ready.push_row(&buffer, j).expect("rows of one Rows join");
                buffer.swap_remove(j);
            }
            self.batched(ready, &mut out);
        }
        match (self.pending.take(), self.batch) {
            (Some(p), Some((_, true))) => self.dropped += p.len() as u64,
            (Some(p), _) if !p.is_empty() => out.push(p),
            _ => {}
        }
        out
    }

    fn shuffled(&mut self, rows: Rows<'static>) -> Rows<'static> {
        let Some((size, rng)) = self.shuffle.as_mut() else { return rows };
        let buffer = self.buffer.get_or_insert_with(|| rows.empty_like());
        let mut ready = rows.empty_like();
        for row in 0..rows.len() {
            if buffer.len() < *size {
                buffer.push_row(&rows, row).expect("rows of one plan join");
                continue;
            }
            let j = (rng.next() % buffer.len() as u64) as usize;
            ready.push_row(buffer, j).expect("rows of one Rows join");
            // The arriving row takes the leaving row's place.
            buffer.push_row(&rows, row).expect("rows of one plan join");
            buffer.swap_remove(j);
        }
        ready
    }

    fn batched(&mut self, rows: Rows<'static>, out: &mut Vec<Rows<'static>>) {
        let Some((size, _)) = self.batch else {
            if !rows.is_empty() {
                out.push(rows);
            }
            return;
        };
        for row in 0..rows.len() {
            let pending = self.pending.get_or_insert_with(|| rows.empty_like());
            pending.push_row(&rows, row).expect("rows of one plan join");
            if pending.len() == size {
                out.extend(self.pending.take());
            }
        }
    }
}
