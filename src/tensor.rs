//! Reading packed tensors back as typed values: for callers in Rust, tests and
//! tools. The buffers are little-endian; these helpers copy into `Vec`s.

use crate::proto::fex_v1::{DataType, Tensor};

fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes.chunks_exact(N).map(|c| {
        let mut w = [0u8; N];
        w.copy_from_slice(c);
        w
    })
}

impl Tensor {
    /// Row split `i` (an element or byte offset), whatever the splits dtype.
    #[inline]
    pub fn split(&self, i: usize) -> usize {
        let at = |n: usize| self.row_splits.get(i * n..i * n + n);
        if self.splits_dtype == DataType::I32 as i32 {
            at(4).map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]).max(0) as usize)
        } else {
            at(8).map_or(0, |b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize)
        }
    }

    /// Value `i` of an 8-byte integer tensor.
    #[inline]
    pub fn u64_at(&self, i: usize) -> u64 {
        self.values
            .get(i * 8..i * 8 + 8)
            .map_or(0, |b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// Value `i` of a numeric tensor, widened to f64.
    #[inline]
    pub fn f64_at(&self, i: usize) -> f64 {
        let get = |n: usize| self.values.get(i * n..i * n + n);
        match DataType::try_from(self.dtype).unwrap_or(DataType::Unspecified) {
            DataType::F32 => get(4).map_or(0.0, |b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            DataType::I32 => get(4).map_or(0.0, |b| f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            DataType::F64 => {
                get(8).map_or(0.0, |b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            }
            DataType::U64 => self.u64_at(i) as f64,
            _ => self.u64_at(i) as i64 as f64,
        }
    }

    /// Elements per row of a dense tensor (the product of the shape after rows).
    pub fn row_width(&self) -> usize {
        self.shape.iter().skip(1).map(|&d| d.max(0) as usize).product()
    }

    /// Rows: the first dimension of the shape.
    pub fn rows(&self) -> usize {
        self.shape.first().map_or(0, |&r| r.max(0) as usize)
    }

    pub fn f32s(&self) -> Vec<f32> {
        words::<4>(&self.values).map(f32::from_le_bytes).collect()
    }

    pub fn f64s(&self) -> Vec<f64> {
        words::<8>(&self.values).map(f64::from_le_bytes).collect()
    }

    pub fn i32s(&self) -> Vec<i32> {
        words::<4>(&self.values).map(i32::from_le_bytes).collect()
    }

    pub fn i64s(&self) -> Vec<i64> {
        words::<8>(&self.values).map(i64::from_le_bytes).collect()
    }

    pub fn u64s(&self) -> Vec<u64> {
        words::<8>(&self.values).map(u64::from_le_bytes).collect()
    }

    /// Row splits widened to i64, whatever their declared dtype.
    pub fn splits(&self) -> Vec<i64> {
        if self.splits_dtype == DataType::I32 as i32 {
            words::<4>(&self.row_splits).map(|w| i64::from(i32::from_le_bytes(w))).collect()
        } else {
            words::<8>(&self.row_splits).map(i64::from_le_bytes).collect()
        }
    }

    /// The rows of a strings tensor (empty for other layouts).
    pub fn strings(&self) -> Vec<&[u8]> {
        let splits = self.splits();
        splits.windows(2).filter_map(|w| self.values.get(w[0] as usize..w[1] as usize)).collect()
    }

    /// Ragged rows of u64 ids (sparse outputs).
    pub fn ragged_u64(&self) -> Vec<Vec<u64>> {
        let values = self.u64s();
        self.splits().windows(2).map(|w| values[w[0] as usize..w[1] as usize].to_vec()).collect()
    }
}
