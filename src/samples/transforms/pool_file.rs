//! negative_gen's item pool as a file, so the pool (and the draws) of one
//! run carry into the next: Monolith's `ItemPoolSave` / `ItemPoolRestore`
//! (bytedance/monolith, monolith/native_training/data/kernels/
//! item_pool_kernels.cc, lines 87-150 and 357-500), which write each
//! channel as a `ChannelCache` record next to a checkpoint.
//!
//! The format is ours, because Monolith's loses what a continued run
//! needs: it writes each channel's items from a hash map (cache_mgr.cc,
//! `ToProto`, lines 143-165), so the FIFO order that decides eviction and
//! the time factor of a negative's weight is not kept, nor is the state of
//! the draws. Here, little-endian throughout:
//!
//! ```text
//! "FEXPOOL\0"  version: u32 (1)
//! config: u32 length + UTF-8   the negative_gen keys that shape the pool
//! rng: u64                     the draw state
//! channels: u32, then per channel, in the order first seen:
//!   channel id: u64, items: u32, then per item, oldest first:
//!     gid: u64, sample_cnt: u64, example: u32 length + bytes
//! checksum: u64                xxh64 of everything before it
//! ```
//!
//! Loading checks every length against what remains, the checksum, and the
//! config against the model's: a damaged or foreign file is an error.

use bytes::Bytes;

const MAGIC: &[u8; 8] = b"FEXPOOL\0";
const VERSION: u32 = 1;

/// What a pool file holds.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Snapshot {
    /// The negative_gen keys that shape the pool, as text.
    pub config: String,
    pub rng: u64,
    pub channels: Vec<(u64, Vec<Pooled>)>,
}

/// One pooled item.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pooled {
    pub gid: u64,
    pub sample_cnt: u64,
    /// The Example of the item's features.
    pub example: Bytes,
}

/// An item pool file that cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemPoolError {
    #[error("not an item pool file: it does not start with \"FEXPOOL\"")]
    NotAPool,
    #[error("item pool file version {found}; this fex reads version {VERSION}")]
    Version { found: u32 },
    #[error("item pool file cut short or damaged at byte {at}: {what}")]
    Corrupt { at: usize, what: &'static str },
    #[error("item pool file checksum does not match its contents: the file is damaged")]
    Checksum,
    #[error("the item pool was saved by a negative_gen with {saved}; this model's has {model}")]
    Mismatch { saved: String, model: String },
    #[error("the model has no negative_gen transform to restore an item pool into")]
    NoNegativeGen,
    #[error("pooled item {gid}: {error}")]
    Item { gid: u64, error: crate::wire::DecodeError },
    #[error("item pool file holds {what}, which no run can pool: the file was not written by fex")]
    Impossible { what: String },
}

/// The file's bytes.
pub(super) fn encode(s: &Snapshot) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend(VERSION.to_le_bytes());
    put_bytes(&mut out, s.config.as_bytes());
    out.extend(s.rng.to_le_bytes());
    out.extend((s.channels.len() as u32).to_le_bytes());
    for (cid, items) in &s.channels {
        out.extend(cid.to_le_bytes());
        out.extend((items.len() as u32).to_le_bytes());
        for item in items {
            out.extend(item.gid.to_le_bytes());
            out.extend(item.sample_cnt.to_le_bytes());
            put_bytes(&mut out, &item.example);
        }
    }
    let sum = xxhash_rust::xxh64::xxh64(&out, 0);
    out.extend(sum.to_le_bytes());
    out
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend((b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Reads a file `encode` wrote.
pub(super) fn decode(bytes: &[u8]) -> Result<Snapshot, ItemPoolError> {
    if !bytes.starts_with(MAGIC) {
        return Err(ItemPoolError::NotAPool);
    }
    let mut r = Cursor { bytes, at: MAGIC.len() };
    let found = r.u32("version")?;
    if found != VERSION {
        return Err(ItemPoolError::Version { found });
    }
    let body_end = bytes.len().checked_sub(8).filter(|&e| e >= r.at).ok_or(r.corrupt("checksum"))?;
    let sum = u64::from_le_bytes(bytes[body_end..].try_into().map_err(|_| r.corrupt("checksum"))?);
    if xxhash_rust::xxh64::xxh64(&bytes[..body_end], 0) != sum {
        return Err(ItemPoolError::Checksum);
    }
    r.bytes = &bytes[..body_end];
    let config = String::from_utf8(r.take("config")?.to_vec()).map_err(|_| r.corrupt("config is not UTF-8"))?;
    let rng = r.u64("rng")?;
    let mut channels = Vec::new();
    for _ in 0..r.u32("channel count")? {
        let cid = r.u64("channel id")?;
        let mut items = Vec::new();
        for _ in 0..r.u32("item count")? {
            let (gid, sample_cnt) = (r.u64("gid")?, r.u64("sample_cnt")?);
            items.push(Pooled { gid, sample_cnt, example: Bytes::copy_from_slice(r.take("item")?) });
        }
        channels.push((cid, items));
    }
    if r.at != r.bytes.len() {
        return Err(r.corrupt("bytes after the last channel"));
    }
    Ok(Snapshot { config, rng, channels })
}

/// Reads with every length checked against what remains.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn corrupt(&self, what: &'static str) -> ItemPoolError {
        ItemPoolError::Corrupt { at: self.at, what }
    }

    fn fixed<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ItemPoolError> {
        let end = self.at.checked_add(N).filter(|&e| e <= self.bytes.len()).ok_or(self.corrupt(what))?;
        let out = self.bytes[self.at..end].try_into().map_err(|_| self.corrupt(what))?;
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, ItemPoolError> {
        self.fixed(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, ItemPoolError> {
        self.fixed(what).map(u64::from_le_bytes)
    }

    fn take(&mut self, what: &'static str) -> Result<&'a [u8], ItemPoolError> {
        let len = self.u32(what)? as usize;
        let end = self.at.checked_add(len).filter(|&e| e <= self.bytes.len()).ok_or(self.corrupt(what))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
}
