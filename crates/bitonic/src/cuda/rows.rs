//! Segments, and key-index pairs over rows (kernels/pairs.cu): the strategies
//! [`crate::dispatch::Strategy::SegmentPasses`] and [`crate::dispatch::Strategy::PairPasses`].
//! Uniform rows of keys alone are a shorter plan of the tuned passes (src/cuda/passes.rs).
//!
//! **Rows.** The tuned passes sort rows of 2^b slots: the stages of a network on 2^b keys sort
//! every aligned block of 2^b independently, so a row sort is a shorter plan over the same
//! index space. A row shorter than 2^b is padded with +inf slots that no key ever lands in.
//! Segments of different lengths are grouped by their padded length, one plan per group, so
//! the padding never costs more than the segments themselves.
//!
//! **Stability.** Argsorts and key-value sorts of rows sort (key, index-in-row) pairs: equal
//! keys keep index order. A 32-bit key packs with its index into one u64 word; a 64-bit key
//! and its index make a 16-byte `KeyIndex`; values follow the indices (`gather`).

use super::layout::{KeyIndex, RowLayout};
use super::{kernel_name, kernels, launch, passes, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::network::padded_len;
use crate::policy::Policy;
use cudarc::driver::{CudaSlice, CudaViewMut, DevicePtr, DeviceRepr};

/// Sorts each segment `words[offsets[i]..offsets[i + 1]]`: one tuned plan per group of
/// segments with the same padded length (2, 4, 8, … keys). `map` is the key map.
pub(crate) fn sort_segments<B: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    words: &mut CudaViewMut<B>,
    offsets: &[usize],
    map: u32,
) -> Result<()> {
    let mut groups: Vec<(Vec<u32>, Vec<u32>)> = vec![Default::default(); 33];
    for w in offsets.windows(2) {
        let len = w[1] - w[0];
        if len >= 2 {
            let (starts, lens) = &mut groups[padded_len(len).trailing_zeros() as usize];
            starts.push(w[0] as u32);
            lens.push(len as u32);
        }
    }
    let n = words.len();
    let stream = gpu.stream();
    for (row_bits, (starts, lens)) in groups.iter().enumerate() {
        if starts.is_empty() {
            continue;
        }
        let copy = |v: &Vec<u32>| {
            stream
                .clone_htod(v)
                .during(|| format!("copying {} segment bounds", v.len()))
        };
        let (starts_d, lens_d) = (copy(starts)?, copy(lens)?);
        let (starts_ptr, _s) = starts_d.device_ptr(stream);
        let (lens_ptr, _l) = lens_d.device_ptr(stream);
        let layout = RowLayout::segments(n, row_bits as u32, starts.len(), starts_ptr, lens_ptr);
        passes::tuned(gpu, policy, words, layout, map)?;
    }
    Ok(())
}

/// Sorts every row of `row_len` words stably and writes each sorted word's index in its row
/// before the sort to `indices`: (key, index) pairs packed, sorted by the tuned passes over
/// rows, and unpacked. `map` is the key map, applied by the pack and undone by the unpack.
pub(crate) fn sort_pairs<B: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    words: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
    row_len: usize,
    map: u32,
) -> Result<()> {
    if std::mem::size_of::<B>() == 4 {
        sort_pairs_as::<B, u64>(gpu, policy, words, indices, row_len, map)
    } else {
        sort_pairs_as::<B, KeyIndex>(gpu, policy, words, indices, row_len, map)
    }
}

/// [`sort_pairs`] with pairs of type `P`.
fn sort_pairs_as<B: DeviceRepr, P: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    words: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
    row_len: usize,
    map: u32,
) -> Result<()> {
    let n = words.len();
    // SAFETY: `pack` writes every pair before the passes read them.
    let mut pairs = unsafe { gpu.stream().alloc::<P>(n) }
        .during(|| format!("allocating {n} key-index pairs"))?;
    let mut pairs = pairs.as_view_mut();
    pack_or_unpack::<B, P>(gpu, "pack", words, &mut pairs, None, row_len, map)?;
    passes::tuned(gpu, policy, &mut pairs, RowLayout::rows(n, row_len), 0)?;
    pack_or_unpack::<B, P>(
        gpu,
        "unpack",
        words,
        &mut pairs,
        Some(indices),
        row_len,
        map,
    )
}

/// `pack_*(keys, pairs, n, row_len, map)` or `unpack_*(pairs, keys, indices, n, map)`.
fn pack_or_unpack<B: DeviceRepr, P: DeviceRepr>(
    gpu: &Gpu,
    which: &str,
    words: &mut CudaViewMut<B>,
    pairs: &mut CudaViewMut<P>,
    indices: Option<&mut CudaViewMut<u32>>,
    row_len: usize,
    map: u32,
) -> Result<()> {
    let f = gpu.function(&kernels::PAIRS, &kernel_name::<B>(which))?;
    let cfg = gpu.elementwise(words.len());
    match indices {
        None => launch::pack_pairs(gpu, &f, cfg, words, pairs, (row_len as u32, map)),
        Some(indices) => launch::unpack_pairs(gpu, &f, cfg, pairs, words, indices, map),
    }
    .during(|| format!("launching {}", kernel_name::<B>(which)))
}

/// Moves `values` (4- or 8-byte elements, rows of `row_len`) to where `indices` says each
/// row's sorted keys came from: `values[r][i] = old[r][indices[r][i]]`.
pub(crate) fn gather<V: DeviceRepr>(
    gpu: &Gpu,
    values: &mut CudaViewMut<V>,
    indices: &CudaSlice<u32>,
    row_len: usize,
) -> Result<()> {
    let n = values.len();
    let sources = gpu
        .stream()
        .clone_dtod(&*values)
        .during(|| format!("copying {n} values"))?;
    let f = gpu.function(&kernels::PAIRS, &kernel_name::<V>("gather"))?;
    let cfg = gpu.elementwise(n);
    launch::gather(gpu, &f, cfg, &sources, values, indices, row_len as u32)
        .during(|| "launching gather".into())
}
