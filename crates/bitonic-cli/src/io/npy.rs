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

fn too_many(path: &Path, dims: &str) -> IoError {
    let reason = format!("its shape ({dims}) holds more keys than this machine can address");
    bad(path, reason)
}

/// The header's dictionary, found from the preamble (magic, version, the dictionary's
/// length), or `Err` with the bytes the header needs (`None`: not yet known) when the file
/// ends inside it. `Ok(None)` for a version npyz is left to judge.
fn dictionary(bytes: &[u8]) -> Result<Option<&[u8]>, Option<usize>> {
    let (start, len): (usize, _) = match bytes.get(6) {
        None => return Err(None),
        Some(1) => (
            10,
            bytes
                .get(8..10)
                .map(|n| u16::from_le_bytes([n[0], n[1]]) as usize),
        ),
        Some(2 | 3) => (
            12,
            bytes
                .get(8..12)
                .map(|n| u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize),
        ),
        Some(_) => return Ok(None),
    };
    let end = len.and_then(|len| start.checked_add(len)).ok_or(None)?;
    bytes.get(start..end).map(Some).ok_or(Some(end))
}

/// The error for a file cut short inside its header, after `held` bytes of the `needed`
/// (when known).
fn truncated_header(path: &Path, held: usize, needed: Option<usize>) -> IoError {
    let reason = match (held, needed) {
        (0, _) => "it is empty".to_string(),
        (_, Some(needed)) => {
            format!("it ends inside its header, after {held} of the header's {needed} bytes")
        }
        (_, None) => format!("it ends inside its header, after {held} bytes"),
    };
    IoError::TruncatedHeader {
        path: super::input_name(path),
        reason,
    }
}

/// The error for a file named .npy that does not start with the magic: cut short inside it
/// (truncated), or damaged, or raw keys under a .npy name.
pub fn without_magic(path: &Path, bytes: &[u8]) -> IoError {
    if MAGIC.starts_with(bytes) {
        return truncated_header(path, bytes.len(), None);
    }
    let reason = "it does not start with the .npy magic (\\x93NUMPY): the file is damaged, or \
                  holds raw keys under a .npy name (rename it to read it as raw keys)";
    bad(path, reason)
}

/// Refuses a shape whose dimensions' product overflows 64 bits, before npyz reads the header
/// (npyz multiplies them unchecked: a panic in debug builds, a wrapped count in release). The
/// rest of the header is npyz's to judge.
fn check_shape_product(path: &Path, dict: &[u8]) -> Result<(), IoError> {
    let dict = String::from_utf8_lossy(dict);
    let Some(at) = dict.find("'shape'").or_else(|| dict.find("\"shape\"")) else {
        return Ok(());
    };
    let rest = &dict[at..];
    let Some(dims) = rest
        .find('(')
        .and_then(|open| Some(&rest[open + 1..open + rest[open..].find(')')?]))
    else {
        return Ok(());
    };
    let mut len: u64 = 1;
    for dim in dims.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        if !dim.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(());
        }
        let fits = dim.parse::<u64>().ok().and_then(|d| len.checked_mul(d));
        len = fits.ok_or_else(|| too_many(path, dims.trim()))?;
    }
    Ok(())
}

/// The header of a file that starts with the magic. A file cut inside its header is
/// "truncated", as one cut inside its keys is (`KeyFile::open`). A 1-D array in Fortran order
/// is laid out as in C order, and read; a 2-D one is refused as unsupported.
pub fn parse_header(path: &Path, bytes: &[u8]) -> Result<Header, IoError> {
    match dictionary(bytes) {
        Err(needed) => return Err(truncated_header(path, bytes.len(), needed)),
        Ok(Some(dict)) => check_shape_product(path, dict)?,
        Ok(None) => {}
    }
    let mut cursor = std::io::Cursor::new(bytes);
    let header = npyz::NpyHeader::from_reader(&mut cursor).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => truncated_header(path, bytes.len(), None),
        _ => bad(path, e.to_string()),
    })?;
    let descr = match header.dtype() {
        npyz::DType::Plain(type_str) => type_str.to_string(),
        other => {
            return Err(IoError::UnsupportedNpyDtype {
                path: super::input_name(path),
                descr: other.descr(),
            })
        }
    };
    let found = DType::ALL
        .into_iter()
        .find(|&d| descr_of(d) == Some(descr.as_str()));
    let Some(dtype) = found else {
        return Err(IoError::UnsupportedNpyDtype {
            path: super::input_name(path),
            descr,
        });
    };
    let shape = header.shape().to_vec();
    if shape.is_empty() || shape.len() > 2 {
        return Err(IoError::UnsupportedShape {
            path: super::input_name(path),
            shape,
        });
    }
    if shape.len() == 2 && header.order() == npyz::Order::Fortran {
        return Err(IoError::FortranOrder {
            path: super::input_name(path),
        });
    }
    // Checked: a crafted shape must not wrap to a small count.
    let too_many = || {
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        too_many(path, &dims.join(", "))
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

/// NumPy's name of a key type, little-endian; `None` for bf16, which NumPy lacks.
pub fn descr_of(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::U32 => Some("<u4"),
        DType::I32 => Some("<i4"),
        DType::U64 => Some("<u8"),
        DType::I64 => Some("<i8"),
        DType::F32 => Some("<f4"),
        DType::F64 => Some("<f8"),
        DType::F16 => Some("<f2"),
        DType::BF16 => None,
    }
}

/// The header of a row-major array of `shape` (one or two dimensions) of a type NumPy has
/// ([`descr_of`]; `check_npy_dtype` refuses the others before any work).
pub fn header(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let descr = descr_of(dtype).expect("a .npy output of a type NumPy has");
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
