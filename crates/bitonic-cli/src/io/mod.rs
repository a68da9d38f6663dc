//! Key files: raw little-endian binary and NumPy `.npy`, read memory-mapped (or from stdin) and
//! written atomically (a temporary file in the destination folder, renamed into place).

mod npy;

use bitonic::{DType, SortKey};
use memmap2::Mmap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Problems with a key file. Every message names the file as the user does (`-` as "standard
/// input" or "standard output": see [`crate::ui::input_name`]).
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{path}: no such file")]
    NotFound { path: String },
    // The cause is in the message, not a source, so that `{:#}` says it once.
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}: {bytes} bytes is not a whole number of {dtype} keys ({size} bytes each)")]
    RaggedLength {
        path: String,
        bytes: usize,
        dtype: DType,
        size: usize,
    },
    #[error(
        "{path}: truncated .npy file: the header promises {keys} keys ({bytes} bytes) but the \
         file holds {held} bytes"
    )]
    Truncated {
        path: String,
        keys: u64,
        bytes: u64,
        held: usize,
    },
    /// Cut short before its keys: inside the magic or the header.
    #[error("{path}: truncated .npy file: {reason}")]
    TruncatedHeader { path: String, reason: String },
    #[error("{path}: {reason}")]
    TooLarge { path: String, reason: String },
    #[error("{path}: not a valid .npy file: {reason}")]
    BadNpy { path: String, reason: String },
    #[error(
        "{path}: .npy dtype {descr:?} is not supported (use one of <u4 <i4 <u8 <i8 <f4 <f8 <f2)"
    )]
    UnsupportedNpyDtype { path: String, descr: String },
    #[error("{path}: NumPy has no {dtype} type; write {dtype} keys to a raw file (not .npy)")]
    NoNpyDtype { path: String, dtype: DType },
    #[error("{path}: the file holds {found} keys but --dtype {given} was given")]
    DtypeMismatch {
        path: String,
        found: DType,
        given: DType,
    },
    #[error(
        "{path}: a 2-D .npy array in Fortran (column-major) order is not supported: its rows \
         are not contiguous; save it in C order (numpy.save(file, numpy.ascontiguousarray(a)))"
    )]
    FortranOrder { path: String },
    #[error("{path}: a .npy array of shape {shape:?} is not supported (one or two dimensions)")]
    UnsupportedShape { path: String, shape: Vec<u64> },
    #[error("{path} exists; pass --force to overwrite it")]
    WouldOverwrite { path: String },
    #[error("{path} is the input file; pass --force to sort it in place")]
    OutputIsInput { path: String },
}

impl IoError {
    /// Whether the command line alone is wrong (exit status 2, [`crate::ui::Usage`]): a .npy
    /// output of a type NumPy lacks is asked for by the output's name and `--dtype`, whatever
    /// the input holds. Every other problem depends on the files (exit status 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, IoError::NoNpyDtype { .. })
    }
}

/// How keys are laid out in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Keys back to back, little-endian, no header.
    Raw,
    /// NumPy's `.npy`, one-dimensional, little-endian.
    Npy,
}

impl Format {
    /// `.npy` files are NumPy, everything else (and `-`) raw.
    pub fn from_path(path: &Path) -> Format {
        match path.extension() {
            Some(ext) if ext.eq_ignore_ascii_case("npy") => Format::Npy,
            _ => Format::Raw,
        }
    }
}

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

/// An opened key file: its type and its key bytes (mapped, not yet copied).
pub struct KeyFile {
    pub path: PathBuf,
    /// How the file was read: `Npy` when it starts with NumPy's magic.
    pub format: Format,
    pub dtype: DType,
    /// `[len]`, or `[rows, keys per row]` for a 2-D .npy array.
    pub shape: Vec<usize>,
    bytes: Bytes,
    /// Where the keys start (after a .npy header).
    offset: usize,
}

fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn input_name(path: &Path) -> String {
    crate::ui::input_name(path)
}

fn output_name(path: &Path) -> String {
    crate::ui::output_name(path)
}

/// All of a stream (stdin, a FIFO), its buffer grown fallibly: a stream larger than memory is
/// an error naming the size, not an abort.
fn read_stream(mut from: impl Read, path: &Path) -> Result<Vec<u8>, IoError> {
    let mut all: Vec<u8> = Vec::new();
    loop {
        let more = all.len().max(1 << 20);
        if all.try_reserve(more).is_err() {
            let what = format!("reading more than {} bytes", all.len());
            return Err(IoError::TooLarge {
                path: input_name(path),
                reason: crate::ui::memory_message(&what, all.len().checked_add(more)),
            });
        }
        let spare = (all.capacity() - all.len()) as u64;
        let read = (&mut from)
            .take(spare)
            .read_to_end(&mut all)
            .map_err(|error| IoError::Io {
                path: input_name(path),
                error,
            })?;
        if (read as u64) < spare {
            return Ok(all);
        }
    }
}

impl KeyFile {
    /// Opens `path` (`-` for stdin). A file whose name ends in `.npy` must be a .npy file: one
    /// without NumPy's magic is an error (damaged, or cut short inside the magic), not raw
    /// keys sorted as u32. Any other input is a .npy when it starts with the magic (stdin has
    /// no name; a .npy may be named otherwise), raw keys when not. A `.npy` header gives the
    /// dtype; `dtype` must then agree with it. Raw data takes `dtype`, `u32` when none is
    /// given. Regular files are mapped;
    /// stdin, FIFOs and devices are read whole; a folder is an error. Every size the file
    /// states is checked against what it holds.
    pub fn open(path: &Path, dtype: Option<DType>) -> Result<KeyFile, IoError> {
        let io = |error| IoError::Io {
            path: input_name(path),
            error,
        };
        let bytes = if is_stdio(path) {
            Bytes::Owned(read_stream(std::io::stdin().lock(), path)?)
        } else {
            let file = File::open(path).map_err(|e| match (file_in_the_way(path), e.kind()) {
                (Some(why), _) => io(std::io::Error::other(why)),
                (None, std::io::ErrorKind::NotFound) => IoError::NotFound {
                    path: input_name(path),
                },
                _ => io(e),
            })?;
            let metadata = file.metadata().map_err(io)?;
            if metadata.is_dir() {
                return Err(io(std::io::Error::other("is a folder, not a key file")));
            }
            if !metadata.is_file() {
                Bytes::Owned(read_stream(file, path)?) // a FIFO or a device: no length to map
            } else if metadata.len() == 0 {
                Bytes::Owned(Vec::new()) // an empty file cannot be mapped
            } else {
                // SAFETY: the map is only read; a file truncated under us would fault, as any
                // reader of a file changed concurrently can expect.
                Bytes::Mapped(unsafe { Mmap::map(&file) }.map_err(io)?)
            }
        };
        let all: &[u8] = match &bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        };
        let npy_header = if all.starts_with(npy::MAGIC) {
            Some(npy::parse_header(path, all)?)
        } else if !is_stdio(path) && Format::from_path(path) == Format::Npy {
            return Err(npy::without_magic(path, all));
        } else {
            None
        };
        let (found, offset) = match &npy_header {
            Some(h) => (Some(h.dtype), h.data_offset),
            None => (None, 0),
        };
        let dtype = match (found, dtype) {
            (Some(found), Some(given)) if found != given => {
                return Err(IoError::DtypeMismatch {
                    path: input_name(path),
                    found,
                    given,
                })
            }
            (Some(found), _) => found,
            (None, given) => given.unwrap_or(DType::U32),
        };
        let data_bytes = all.len() - offset;
        let shape = match &npy_header {
            Some(h) => {
                // The header's promise, in checked arithmetic: a crafted shape is an error.
                let bytes = h.len.checked_mul(dtype.size() as u64).ok_or_else(|| {
                    let reason = format!("its shape promises {} keys, too many to address", h.len);
                    IoError::BadNpy {
                        path: input_name(path),
                        reason,
                    }
                })?;
                if bytes > data_bytes as u64 {
                    return Err(IoError::Truncated {
                        path: input_name(path),
                        keys: h.len,
                        bytes,
                        held: data_bytes,
                    });
                }
                if bytes < data_bytes as u64 {
                    let reason = format!(
                        "the header promises {} keys ({bytes} bytes) but the file holds \
                         {data_bytes} bytes after the header",
                        h.len
                    );
                    return Err(IoError::BadNpy {
                        path: input_name(path),
                        reason,
                    });
                }
                h.shape.clone()
            }
            None => {
                if data_bytes % dtype.size() != 0 {
                    return Err(IoError::RaggedLength {
                        path: input_name(path),
                        bytes: data_bytes,
                        dtype,
                        size: dtype.size(),
                    });
                }
                vec![data_bytes / dtype.size()]
            }
        };
        Ok(KeyFile {
            path: path.to_path_buf(),
            format: match npy_header {
                Some(_) => Format::Npy,
                None => Format::Raw,
            },
            dtype,
            shape,
            bytes,
            offset,
        })
    }

    /// The key bytes, little-endian.
    pub fn data(&self) -> &[u8] {
        let all: &[u8] = match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        };
        &all[self.offset..]
    }

    pub fn len(&self) -> usize {
        self.data().len() / self.dtype.size()
    }

    /// The keys, copied into an aligned vector allocated fallibly (an error names the size
    /// and the memory available). Panics if `K` is not the file's dtype.
    pub fn keys<K: SortKey>(&self) -> anyhow::Result<Vec<K>> {
        assert_eq!(
            K::DTYPE,
            self.dtype,
            "KeyFile::keys called with the wrong type"
        );
        let what = format!(
            "the {} {} keys of {}",
            self.len(),
            self.dtype,
            input_name(&self.path)
        );
        let mut keys = crate::ui::alloc_keys::<K>(self.len(), &what)?;
        bytemuck::cast_slice_mut::<K, u8>(&mut keys).copy_from_slice(self.data());
        Ok(keys)
    }
}

/// Why a path cannot name a file: the first of its folders that exists is not a folder
/// (`somefile` in `somefile/out.bin`), which the system calls "not a directory" or "no such
/// file". `None` when the folders that exist are folders.
fn file_in_the_way(path: &Path) -> Option<String> {
    let folders = path
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty());
    let existing = folders
        .filter_map(|a| Some((a, std::fs::metadata(a).ok()?)))
        .next()?;
    match existing {
        (_, m) if m.is_dir() => None,
        (a, m) if m.is_file() => Some(format!("{} is a file, not a folder", a.display())),
        (a, _) => Some(format!("{} is not a folder", a.display())),
    }
}

/// Refuses to write over an existing file (a symbolic link, even dangling, included), or
/// over the input, unless `force`; and checks, before any work, that the folder the write
/// will go to ([`through_links`]) exists and takes a new file.
pub fn check_output(output: &Path, input: Option<&Path>, force: bool) -> Result<(), IoError> {
    if is_stdio(output) {
        return Ok(());
    }
    let err = |error| IoError::Io {
        path: output_name(output),
        error,
    };
    if output.is_dir() {
        return Err(err(std::io::Error::other("is a folder")));
    }
    let target = through_links(output).map_err(err)?;
    let dir = folder_of(&target);
    if !dir.is_dir() {
        let why = file_in_the_way(&target)
            .unwrap_or_else(|| format!("the folder {} does not exist", dir.display()));
        return Err(err(std::io::Error::new(std::io::ErrorKind::NotFound, why)));
    }
    // The same temporary file the write will make, made and dropped now: a folder that does
    // not take it fails here, before the work, not after.
    temporary_in(dir, None).map_err(|e| {
        let why = format!("cannot write in {}: {e}", dir.display());
        err(std::io::Error::new(e.kind(), why))
    })?;
    if force {
        return Ok(());
    }
    if let (Some(input), Ok(out)) = (input, output.canonicalize()) {
        if !is_stdio(input) && input.canonicalize().is_ok_and(|i| i == out) {
            return Err(IoError::OutputIsInput {
                path: output_name(output),
            });
        }
    }
    // A link counts as existing even when its target does not.
    if std::fs::symlink_metadata(output).is_ok() {
        return Err(IoError::WouldOverwrite {
            path: output_name(output),
        });
    }
    Ok(())
}

/// Refuses a .npy output of keys NumPy has no type for (bf16), before any work.
pub fn check_npy_dtype(output: &Path, dtype: DType) -> Result<(), IoError> {
    if Format::from_path(output) == Format::Npy && npy::descr_of(dtype).is_none() {
        return Err(IoError::NoNpyDtype {
            path: output_name(output),
            dtype,
        });
    }
    Ok(())
}

/// Writes keys to `path` (`-` for stdout, raw) in `format`, atomically ([`write_atomically`]).
/// `shape` is `[keys.len()]` or `[rows, keys per row]`; raw files ignore it.
pub fn write_keys<K: SortKey>(
    path: &Path,
    format: Format,
    keys: &[K],
    shape: &[usize],
) -> Result<(), IoError> {
    write_atomically(path, |out| {
        out.write_all(&header_of(format, K::DTYPE, shape))?;
        out.write_all(bytemuck::cast_slice(keys))
    })
}

/// What a key file of `format` holds before its keys: a .npy header, or nothing.
pub fn header_of(format: Format, dtype: DType, shape: &[usize]) -> Vec<u8> {
    match format {
        Format::Npy => npy::header(dtype, shape),
        Format::Raw => Vec::new(),
    }
}

/// Writes a file of `header` and then `len` bytes that `fill` writes in place through a
/// memory map, atomically as [`write_atomically`]: a temporary file, its room taken on the disk
/// first (a full disk is an error here, not a fault during the fill), renamed into place when
/// whole. The output of a sort larger than memory: the system writes the map's pages back as
/// it needs. `-` (stdout) gets the bytes through a buffer instead.
pub fn write_mapped(
    path: &Path,
    header: &[u8],
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if is_stdio(path) {
        // Words of 8 bytes, so that the bytes are aligned for any key.
        let mut words = crate::ui::alloc_keys::<u64>(len.div_ceil(8), "the output")?;
        let bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..len];
        fill(bytes)?;
        return Ok(write_atomically(path, |out| {
            out.write_all(header)?;
            out.write_all(bytes)
        })?);
    }
    let io = |error| IoError::Io {
        path: output_name(path),
        error,
    };
    let target = through_links(path).map_err(io)?;
    let existing = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let tmp = temporary_in(folder_of(&target), existing).map_err(io)?;
    let total = header.len() + len;
    reserve(tmp.file.as_file(), total).map_err(io)?;
    if total > 0 {
        // SAFETY: the file is a new temporary file of ours, which nothing else writes or
        // truncates while the map lives (it is open, and as long, until it is renamed).
        let mut map = unsafe { memmap2::MmapMut::map_mut(tmp.file.as_file()) }.map_err(io)?;
        map[..header.len()].copy_from_slice(header);
        fill(&mut map[header.len()..])?;
        map.flush().map_err(io)?;
    }
    tmp.file.as_file().sync_all().map_err(io)?;
    tmp.file.persist(&target).map_err(|e| io(e.error))?;
    Ok(())
}

/// Makes `file` `len` bytes long, its blocks allocated on the disk where the system can
/// (Linux's `posix_fallocate`): writes through a map of it then never fault for want of space.
fn reserve(file: &File, len: usize) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if len > 0 {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a plain call on an open file descriptor of ours.
        let code = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
        // A file system that cannot reserve blocks (and a C library that does not emulate
        // it) gets the file's length alone, as elsewhere.
        if code != 0 && code != libc::EOPNOTSUPP && code != libc::EINVAL {
            return Err(std::io::Error::from_raw_os_error(code));
        }
    }
    file.set_len(len as u64)
}

/// Writes `text` to `path` atomically ([`write_atomically`]).
pub fn write_text(path: &Path, text: &str) -> Result<(), IoError> {
    write_atomically(path, |out| out.write_all(text.as_bytes()))
}

/// Writes a file (`-`: stdout) with `write`, atomically: a temporary file in the destination's
/// folder, renamed into place when whole, so readers see the old file or the whole new one. A
/// failure, or Ctrl-C, SIGTERM or SIGHUP ([`remove_partial_files`]), leaves nothing behind.
/// A new file gets the usual permissions (0666 less the umask); a file written over keeps its
/// own. A symbolic link is written through, as `sort -o` does ([`through_links`]): the link
/// stays, its target is replaced atomically (the temporary file goes beside the target).
/// Errors name the user's path, once.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), IoError> {
    let io = |error| IoError::Io {
        path: output_name(path),
        error,
    };
    if is_stdio(path) {
        let mut out = std::io::stdout().lock();
        return write(&mut out).and_then(|()| out.flush()).map_err(io);
    }
    let target = through_links(path).map_err(io)?;
    let existing = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let mut tmp = temporary_in(folder_of(&target), existing).map_err(io)?;
    {
        let mut buffered = std::io::BufWriter::with_capacity(1 << 20, tmp.file.as_file_mut());
        write(&mut buffered)
            .and_then(|()| buffered.flush())
            .map_err(io)?;
    }
    tmp.file.as_file().sync_all().map_err(io)?;
    tmp.file.persist(&target).map_err(|e| io(e.error))?;
    Ok(())
}

/// The file a write to `path` replaces: `path`, or, when it is a symbolic link, the file it
/// points to, link after link (a relative link from the link's folder). Renaming over the
/// link itself would turn it into a plain file; a dangling link's target is created.
fn through_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                at = folder_of(&at).join(std::fs::read_link(&at)?)
            }
            _ => return Ok(at),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// The folder a file goes in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A hidden temporary file in `dir`, with `permissions` (those of the file it will replace),
/// else 0666 less the umask, as any new file. It is listed in [`PENDING`] from the moment it
/// exists (made under the list's lock) until it is dropped or renamed into place.
fn temporary_in(dir: &Path, permissions: Option<std::fs::Permissions>) -> std::io::Result<Partial> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".bitonic-").suffix(".partial");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let file = builder.tempfile_in(dir).map_err(without_temporary_name)?;
    pending.push(file.path().to_path_buf());
    drop(pending);
    let tmp = Partial {
        _listed: Listed(file.path().to_path_buf()),
        file,
    };
    if let Some(permissions) = permissions {
        tmp.file.as_file().set_permissions(permissions)?;
    }
    Ok(tmp)
}

/// tempfile adds its file's name to the errors it makes ("Permission denied (os error 13) at
/// path \"/d/.bitonic-x.partial\""): the cause alone, so that an error names the user's path,
/// never the hidden file.
fn without_temporary_name(e: std::io::Error) -> std::io::Error {
    let text = e.get_ref().map(ToString::to_string);
    match text.as_deref().and_then(|t| t.split_once(" at path ")) {
        Some((cause, _)) => std::io::Error::new(e.kind(), cause.to_string()),
        None => e,
    }
}

/// Temporary files that exist now: what [`remove_partial_files`] removes.
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A temporary file and its place in [`PENDING`]. The file is dropped (deleted) first, then
/// unlisted; once renamed into place, it is only unlisted.
struct Partial {
    file: tempfile::NamedTempFile,
    _listed: Listed,
}

/// A path listed in [`PENDING`] while this lives.
struct Listed(PathBuf);

impl Drop for Listed {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|p| *p != self.0);
    }
}

/// Removes the partial files being written, for a signal's cleanup
/// ([`crate::signals::exit_on_signals`]): an interrupted command leaves nothing behind. The
/// list stays locked afterwards, so that no new partial file starts before the process ends.
pub fn remove_partial_files() {
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for path in pending.iter() {
        std::fs::remove_file(path).ok();
    }
    std::mem::forget(pending);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_write_lands_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.npy");
        let header = npy::header(DType::U32, &[4]);
        write_mapped(&path, &header, 16, |bytes| {
            let keys: &mut [u32] = bytemuck::try_cast_slice_mut(bytes).unwrap();
            keys.copy_from_slice(&[1, 2, 3, 4]);
            Ok(())
        })
        .unwrap();
        let written = std::fs::read(&path).unwrap();
        assert_eq!(&written[..header.len()], &header[..]);
        assert_eq!(
            bytemuck::cast_slice::<u8, u32>(&written[header.len()..]),
            [1, 2, 3, 4]
        );
        // A fill that fails leaves the old file, and no partial file beside it.
        let failed = write_mapped(&path, &[], 8, |_| anyhow::bail!("the sort failed"));
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), written);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Nothing at all: an empty file.
        let empty = dir.path().join("empty.bin");
        write_mapped(&empty, &[], 0, |_| Ok(())).unwrap();
        assert_eq!(std::fs::read(&empty).unwrap(), Vec::<u8>::new());
    }
}
