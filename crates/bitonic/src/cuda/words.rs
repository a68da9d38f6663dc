//! Device keys as the words the GPU strategies sort. A key of its word's size is its word:
//! the keys are reinterpreted in place. A 16-bit key is narrower than its `u32` word: its
//! ordered words go to a scratch buffer (kernels/map_keys.cu `widen_16`) and come back into
//! the keys when the work is done (`narrow_16`). Either way the strategies then sort keys of
//! type [`SortKey::Wide`], whose words these are: the key type itself, or for 16-bit keys
//! `u32` (words already in key order, so only a descending order maps them).
//!
//! Every GPU call of the sorter reaches its keys through here, so no strategy knows of
//! 16-bit keys.

use super::run::check_len;
use super::{kernels, launch, Gpu};
use crate::error::{CudaContext as _, Error, Result};
use crate::key::is_narrow;
use crate::SortKey;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr};

/// The word the GPU sorts a key `K` as: the word of [`SortKey::Wide`].
pub(crate) type Word<K> = <<K as SortKey>::Wide as SortKey>::Bits;

/// Device keys seen as their words ([`DeviceWords::view`]); [`DeviceWords::finish`] writes
/// widened words back into the keys.
pub(crate) struct DeviceWords<'a, K: SortKey> {
    keys: &'a mut CudaSlice<K>,
    /// The words of 16-bit keys; `None` when the keys are their own words.
    widened: Option<CudaSlice<Word<K>>>,
}

impl<'a, K: SortKey> DeviceWords<'a, K> {
    /// The words of `keys`, which must be on `gpu` and within [`super::MAX_LEN`].
    pub(crate) fn new(gpu: &Gpu, keys: &'a mut CudaSlice<K>) -> Result<Self> {
        Self::of(gpu, keys, true)
    }

    /// Words that the work writes before it reads them (an output): 16-bit keys are not
    /// widened first.
    pub(crate) fn output(gpu: &Gpu, keys: &'a mut CudaSlice<K>) -> Result<Self> {
        Self::of(gpu, keys, false)
    }

    fn of(gpu: &Gpu, keys: &'a mut CudaSlice<K>, widen: bool) -> Result<Self> {
        let (buffer, sorter) = (keys.context().ordinal(), gpu.info().ordinal);
        if buffer != sorter {
            return Err(Error::WrongDevice { buffer, sorter });
        }
        check_len(keys.len())?;
        let widened = if is_narrow::<K>() {
            let mut words = alloc::<Word<K>>(gpu, keys.len())?;
            if widen {
                let n = keys.len();
                convert::<K, _, _>(gpu, &keys.as_view(), &mut words.slice_mut(0..n))?;
            }
            Some(words)
        } else {
            None
        };
        Ok(DeviceWords { keys, widened })
    }

    /// The words, one a key.
    pub(crate) fn view(&mut self) -> CudaViewMut<'_, Word<K>> {
        let n = self.keys.len();
        match &mut self.widened {
            Some(words) => words.slice_mut(0..n),
            // SAFETY: a key of its word's size is its own `Wide` type, of the size and
            // alignment of its word, and every bit pattern of one is a valid value of the
            // other.
            None => unsafe { self.keys.transmute_mut::<Word<K>>(n) }.expect("same size"),
        }
    }

    /// Writes widened words back into the keys (queued on the stream).
    pub(crate) fn finish(self, gpu: &Gpu) -> Result<()> {
        match &self.widened {
            Some(words) => {
                let n = self.keys.len();
                convert::<K, _, _>(gpu, &words.slice(0..n), &mut self.keys.as_view_mut())
            }
            None => Ok(()),
        }
    }
}

/// Runs `work` on the words of device keys and writes them back into the keys.
pub(crate) fn with_words<K: SortKey, R>(
    gpu: &Gpu,
    keys: &mut CudaSlice<K>,
    work: impl FnOnce(&mut CudaViewMut<Word<K>>) -> Result<R>,
) -> Result<R> {
    let mut words = DeviceWords::new(gpu, keys)?;
    let result = work(&mut words.view())?;
    words.finish(gpu)?;
    Ok(result)
}

/// The words of device keys that are only read: the keys in place, or 16-bit keys widened
/// into a buffer of their own.
pub(crate) enum ReadWords<'a, W> {
    InPlace(CudaView<'a, W>),
    /// `len` words (the buffer holds at least one).
    Widened {
        words: CudaSlice<W>,
        len: usize,
    },
}

impl<W> ReadWords<'_, W> {
    /// The words, one a key.
    pub(crate) fn view(&self) -> CudaView<'_, W> {
        match self {
            ReadWords::InPlace(view) => view.slice(..),
            ReadWords::Widened { words, len } => words.slice(0..*len),
        }
    }
}

/// The words of `keys` (on `gpu`), leaving the keys as they are.
pub(crate) fn read_words<'a, K: SortKey>(
    gpu: &Gpu,
    keys: &'a CudaSlice<K>,
) -> Result<ReadWords<'a, Word<K>>> {
    let n = keys.len();
    check_len(n)?;
    if !is_narrow::<K>() {
        // SAFETY: as in DeviceWords::view.
        let view = unsafe { keys.transmute::<Word<K>>(n) }.expect("same size");
        return Ok(ReadWords::InPlace(view));
    }
    let mut words = alloc::<Word<K>>(gpu, n)?;
    convert::<K, _, _>(gpu, &keys.as_view(), &mut words.slice_mut(0..n))?;
    Ok(ReadWords::Widened { words, len: n })
}

/// A device buffer for `n` words (at least one: the driver refuses empty ones).
fn alloc<W: DeviceRepr>(gpu: &Gpu, n: usize) -> Result<CudaSlice<W>> {
    // SAFETY: the widening, or the work on an output, writes every word before it is read.
    unsafe { gpu.stream().alloc::<W>(n.max(1)) }
        .during(|| format!("allocating {n} words for 16-bit keys"))
}

/// Widens 16-bit keys `K` into words, or narrows words back into them: `S` is one of `K` and
/// its word, `D` the other.
fn convert<K: SortKey, S: DeviceRepr, D: DeviceRepr>(
    gpu: &Gpu,
    src: &CudaView<S>,
    dst: &mut CudaViewMut<D>,
) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    let name = if std::mem::size_of::<S>() == 2 {
        "widen_16"
    } else {
        "narrow_16"
    };
    let f = gpu.function(&kernels::MAP_KEYS, name)?;
    let kind = K::DTYPE.map_kind() as u32;
    let cfg = gpu.elementwise(src.len());
    launch::convert_16(gpu, &f, cfg, src, dst, kind).during(|| format!("launching {name}"))
}
