//! The `.npy` header: parsed with `npyz`, written by hand (a fixed dictionary padded to 64
//! bytes, as NumPy writes it) so the keys themselves can be written in one block.

use super::IoError;
use crate::DType;
use std::path::Path;

pub const MAGIC: &[u8] = b"\x93NUMPY";

pub struct Header {
    pub dtype: DType,
    pub data_offset: usize,
    /// Keys the shape promises.
    pub len: u64,
}

fn bad(path: &Path, reason: impl Into<String>) -> IoError {
    IoError::BadNpy {
        path: path.to_path_buf(),
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
                path: path.to_path_buf(),
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
                path: path.to_path_buf(),
                descr,
            })
        }
    };
    if header.shape().len() != 1 {
        return Err(IoError::NotOneDimensional {
            path: path.to_path_buf(),
            shape: header.shape().to_vec(),
        });
    }
    Ok(Header {
        dtype,
        data_offset: cursor.position() as usize,
        len: header.shape()[0],
    })
}

pub fn header(dtype: DType, len: usize) -> Vec<u8> {
    let descr = match dtype {
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::U64 => "<u8",
        DType::I64 => "<i8",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
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
