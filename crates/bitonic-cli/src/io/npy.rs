//! The `.npy` header: parsed with `npyz`, written by hand (a fixed dictionary padded to 64
//! bytes, as NumPy writes it) so the keys themselves can be written in one block.

use super::IoError;
use bitonic::DType;
use std::path::Path;

pub const MAGIC: &[u8] = b"\x93NUMPY";

pub struct Header {
    pub dtype: DType,
    pub data_offset: usize,
    /// Keys the shape promises.
    pub len: u64,
    /// One or two dimensions (rows, keys per row), row-major.
    pub shape: Vec<usize>,
}

fn bad(path: &Path, reason: impl Into<String>) -> IoError {
    IoError::BadNpy {
        path: super::input_name(path),
        reason: reason.into(),
    }
}

pub fn parse_header(path: &Path, bytes: &[u8]) -> Result<Header, IoError> {
    let mut cursor = std::io::Cursor::new(bytes);
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| bad(path, e.to_string()))?;
    let descr = match header.dtype() {
        npyz::DType::Plain(type_str) => type_str.to_string(),
        other => {
            return Err(IoError::UnsupportedNpyDtype {
                path: super::input_name(path),
                descr: other.descr(),
            })
        }
    };
    let dtype = match descr.as_str() {
        "<u4" => DType::U32,
        "<i4" => DType::I32,
        "<u8" => DType::U64,
        "<i8" => DType::I64,
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        _ => {
            return Err(IoError::UnsupportedNpyDtype {
                path: super::input_name(path),
                descr,
            })
        }
    };
    let shape = header.shape().to_vec();
    if shape.is_empty() || shape.len() > 2 {
        return Err(IoError::UnsupportedShape {
            path: super::input_name(path),
            shape,
        });
    }
    if shape.len() == 2 && header.order() == npyz::Order::Fortran {
        let reason = "a 2-D array in Fortran (column-major) order: rows would not be contiguous";
        return Err(bad(path, reason));
    }
    // Checked: a crafted shape must not wrap to a small count.
    let too_many = || {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        let reason = format!(
            "its shape ({}) holds more keys than this machine can address",
            dims.join(", ")
        );
        bad(path, reason)
    };
    let len = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .filter(|&n| usize::try_from(n).is_ok())
        .ok_or_else(too_many)?;
    let dims: Option<Vec<usize>> = shape.iter().map(|&d| usize::try_from(d).ok()).collect();
    Ok(Header {
        dtype,
        data_offset: usize::try_from(cursor.position()).map_err(|_| too_many())?,
        len,
        shape: dims.ok_or_else(too_many)?,
    })
}

/// The header of a row-major array of `shape` (one or two dimensions).
pub fn header(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let descr = match dtype {
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::U64 => "<u8",
        DType::I64 => "<i8",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let dims = match shape {
        [len] => format!("({len},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6) + version (2) + length (2) + dict + '\n', padded with spaces to 64 bytes.
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = MAGIC.to_vec();
    out.extend([1, 0]);
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.bytes());
    out
}
