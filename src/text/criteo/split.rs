//! The train/test split of seed 004, step 4: days 0..22 shuffled together
//! for training with a seed, day 23 held out as the test set. The shuffle is
//! two passes with bounded memory: every line goes to one of `buckets`
//! files chosen by a seeded counter-based generator, then each bucket is
//! read whole, permuted (Fisher-Yates, seeded) and appended to the output.
//! Memory is the largest bucket (about the input over `buckets`); the same
//! inputs, seed and bucket count give the same file on every machine.

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Criteo's days: `day_0` .. `day_23`.
pub const DAYS: usize = 24;

/// Training days (all but the last) and the held-out last day.
pub fn split_days<P: AsRef<Path>>(days: &[P]) -> Option<(&[P], &P)> {
    let (test, train) = days.split_last()?;
    (!train.is_empty()).then_some((train, test))
}

/// SplitMix64 of `seed` and `i`: a uniform u64 per (seed, i).
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Shuffles the lines of `inputs` (in order) into `output`, with `buckets`
/// temporary files in `tmp`; returns the lines written.
pub fn shuffle_lines(inputs: &[PathBuf], output: &Path, tmp: &Path, seed: u64, buckets: usize) -> std::io::Result<u64> {
    let buckets = buckets.max(1);
    std::fs::create_dir_all(tmp)?;
    let paths: Vec<PathBuf> = (0..buckets).map(|b| tmp.join(format!("bucket_{b}.tsv"))).collect();
    let mut files =
        paths.iter().map(|p| std::fs::File::create(p).map(BufWriter::new)).collect::<std::io::Result<Vec<_>>>()?;
    let mut i = 0u64;
    let mut line = Vec::new();
    for input in inputs {
        let mut r = crate::text::open(input, crate::records::Compression::Auto)?;
        while {
            line.clear();
            r.read_until(b'\n', &mut line)? > 0
        } {
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            files[(mix(seed, i) % buckets as u64) as usize].write_all(&line)?;
            i += 1;
        }
    }
    for f in files {
        f.into_inner().map_err(|e| e.into_error())?;
    }
    let mut out = BufWriter::new(std::fs::File::create(output)?);
    for (b, path) in paths.iter().enumerate() {
        let text = std::fs::read(path)?;
        let mut lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
        let s = mix(seed ^ 0x5eed, b as u64);
        for j in (1..lines.len()).rev() {
            lines.swap(j, (mix(s, j as u64) % (j as u64 + 1)) as usize);
        }
        for l in lines {
            out.write_all(l)?;
        }
        std::fs::remove_file(path)?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(i)
}
