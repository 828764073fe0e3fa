//! Element type conversions between a fex tensor and the input a model
//! server declares for it: ids and splits change integer width (checked),
//! uint64 ids travel as INT64 with the same bits, and a tensor already of
//! the declared type moves without a copy.

use bytes::Bytes;

/// A tensor that cannot be sent as the declared type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConvertError {
    #[error("{from} cannot be sent as {to}; fex converts between INT32, INT64 and UINT64, and FP32 to FP64")]
    Unsupported { from: String, to: String },
    #[error("element {index} ({value}) does not fit in {to}")]
    Overflow { index: usize, value: i128, to: String },
}

/// Whether `convert` takes elements of `from` to `to`.
pub fn convertible(from: &str, to: &str) -> bool {
    const INTS: [&str; 3] = ["INT32", "INT64", "UINT64"];
    from == to || (INTS.contains(&from) && INTS.contains(&to)) || (from == "FP32" && to == "FP64")
}

/// `raw` (elements of `from`) as elements of `to`.
pub fn convert(raw: Bytes, from: &str, to: &str) -> Result<Bytes, ConvertError> {
    let same_bits = matches!((from, to), ("UINT64", "INT64") | ("INT64", "UINT64"));
    if from == to || same_bits {
        return Ok(raw);
    }
    let wide: Vec<i128> = match from {
        "INT32" => raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4")) as i128).collect(),
        "INT64" => raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8")) as i128).collect(),
        "UINT64" => raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8")) as i128).collect(),
        "FP32" if to == "FP64" => {
            let out: Vec<u8> = raw
                .chunks_exact(4)
                .flat_map(|c| (f32::from_le_bytes(c.try_into().expect("4")) as f64).to_le_bytes())
                .collect();
            return Ok(out.into());
        }
        _ => return Err(ConvertError::Unsupported { from: from.into(), to: to.into() }),
    };
    let overflow = |index: usize, value: i128| ConvertError::Overflow { index, value, to: to.into() };
    let mut out = Vec::with_capacity(wide.len() * 8);
    for (i, &v) in wide.iter().enumerate() {
        match to {
            "INT32" => out.extend(i32::try_from(v).map_err(|_| overflow(i, v))?.to_le_bytes()),
            "INT64" => out.extend(i64::try_from(v).map_err(|_| overflow(i, v))?.to_le_bytes()),
            "UINT64" => out.extend(u64::try_from(v).map_err(|_| overflow(i, v))?.to_le_bytes()),
            _ => return Err(ConvertError::Unsupported { from: from.into(), to: to.into() }),
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le64(v: &[i64]) -> Bytes {
        v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>().into()
    }

    #[test]
    fn integers_change_width_checked_and_ids_keep_their_bits() {
        let splits = le64(&[0, 3, 7]);
        let narrow = convert(splits.clone(), "INT64", "INT32").unwrap();
        assert_eq!(&narrow[..], &[0, 0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(convert(narrow, "INT32", "INT64").unwrap(), splits);
        let ids = le64(&[-1]);
        assert_eq!(convert(ids.clone(), "UINT64", "INT64").unwrap().as_ptr(), ids.as_ptr(), "moved, not copied");
        assert_eq!(
            convert(le64(&[1 << 40]), "INT64", "INT32").unwrap_err().to_string(),
            "element 0 (1099511627776) does not fit in INT32"
        );
        assert!(convert(le64(&[-1]), "UINT64", "INT32").is_err());
        assert!(convert(le64(&[1]), "FP64", "FP32").unwrap_err().to_string().contains("cannot be sent"));
        let f = Bytes::from(1.5f32.to_le_bytes().to_vec());
        assert_eq!(convert(f, "FP32", "FP64").unwrap(), Bytes::from(1.5f64.to_le_bytes().to_vec()));
    }
}
