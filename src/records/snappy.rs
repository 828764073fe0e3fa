//! Monolith's snappy streams (`snappy_inputbuffer.cc`, `ByteSnappyInputBuffer`,
//! Hadoop's block format): a block is a big-endian u32 of its raw length,
//! then chunks of a big-endian u32 compressed length and that many bytes of
//! raw snappy, until the chunks' raw bytes add up to the block's length.
//! Every length is checked against a bound before anything is allocated.

use std::io::{self, Read};

use super::codec::invalid;

/// The largest raw block or compressed chunk accepted. Monolith's buffers
/// are 64 MiB by default (`kDEFAULT_SNAPPY_BUFFER_SIZE`, data_reader.cc).
const MAX_CHUNK: u32 = 64 << 20;

pub(super) struct BlockDecoder {
    input: Box<dyn Read + Send>,
    /// Raw bytes still to come in the current block (0: between blocks).
    block_left: u64,
    compressed: Vec<u8>,
    out: Vec<u8>,
    at: usize,
    decoder: snap::raw::Decoder,
}

impl BlockDecoder {
    pub(super) fn new(input: Box<dyn Read + Send>) -> Self {
        Self {
            input,
            block_left: 0,
            compressed: Vec::new(),
            out: Vec::new(),
            at: 0,
            decoder: snap::raw::Decoder::new(),
        }
    }

    /// A big-endian u32; `None` at a clean end of the stream.
    fn u32(&mut self) -> io::Result<Option<u32>> {
        let mut b = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match self.input.read(&mut b[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(invalid(format!("snappy stream ends inside a length ({got} of 4 bytes)"))),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Some(u32::from_be_bytes(b)))
    }

    /// Decodes the next chunk into `out`; false at the end of the stream.
    fn fill(&mut self) -> io::Result<bool> {
        while self.block_left == 0 {
            match self.u32()? {
                None => return Ok(false),
                Some(n) if n > MAX_CHUNK => {
                    return Err(invalid(format!("snappy block of {n} bytes is over the limit of {MAX_CHUNK}")));
                }
                Some(n) => self.block_left = u64::from(n),
            }
        }
        let Some(len) = self.u32()? else {
            return Err(invalid(format!("snappy stream ends inside a block ({} bytes missing)", self.block_left)));
        };
        if len > MAX_CHUNK {
            return Err(invalid(format!("snappy chunk of {len} bytes is over the limit of {MAX_CHUNK}")));
        }
        self.compressed.clear();
        let got = (&mut self.input).take(u64::from(len)).read_to_end(&mut self.compressed)?;
        if got < len as usize {
            return Err(invalid(format!("snappy chunk truncated: expected {len} bytes, found {got}")));
        }
        let raw = snap::raw::decompress_len(&self.compressed).map_err(|e| invalid(format!("snappy: {e}")))?;
        if raw as u64 > self.block_left {
            let left = self.block_left;
            return Err(invalid(format!("snappy chunk of {raw} raw bytes overruns its block ({left} left)")));
        }
        self.out.resize(raw, 0);
        self.decoder.decompress(&self.compressed, &mut self.out).map_err(|e| invalid(format!("snappy: {e}")))?;
        self.block_left -= raw as u64;
        self.at = 0;
        Ok(true)
    }
}

impl Read for BlockDecoder {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            if !self.fill()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Writes `data` in Monolith's snappy block format, `block` raw bytes per
/// block, each block one chunk (for tests and tools).
pub fn encode_blocks(data: &[u8], block: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = snap::raw::Encoder::new();
    for piece in data.chunks(block.max(1)) {
        let compressed = encoder.compress_vec(piece).expect("snappy compresses any input");
        out.extend_from_slice(&(piece.len() as u32).to_be_bytes());
        out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
        out.extend_from_slice(&compressed);
    }
    out
}
