//! Carries out the GPU strategy that [`crate::dispatch::choose`] picked, on words already on
//! the device: the key map around the seed versions, and the call into the strategy's file.

use super::kernels::{self, KernelModule};
use super::layout::{map_flags, RowLayout};
use super::{kernel_name, kv, launch, merge, passes, rows, seed, Gpu};
use crate::dispatch::{Layout, Operation, Request, Strategy};
use crate::error::{CudaContext as _, Error, Result};
use crate::key::MapKind;
use crate::policy::Policy;
use crate::{DType, Order, SortKey, Version};
use cudarc::driver::{CudaSlice, CudaViewMut, DeviceRepr};

/// The most keys one sort takes: the kernels index with 32-bit integers over the padded length.
pub const MAX_LEN: usize = 1 << 31;

/// The device and the tuning one sort runs with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub gpu: &'a Gpu,
    pub policy: &'a Policy,
}

/// The kernel modules `strategy` runs for `len` keys of `key_bytes` bytes in rows of `row_len`
/// (`len` for one array) with values of `value_bytes` (0: keys alone; argsorts carry 4-byte
/// indices), on `t`'s device. 16-bit keys sort as `u32` words, widened and narrowed by the
/// map_keys module (src/cuda/words.rs), except in the top-k selections by composites. The tuned kernels come in one module a tile size, and the tile
/// depends on the input and the device (passes.rs). [`prepare`] compiles them side by side
/// before the first sort; a module missing here would still compile on first use, alone (a
/// GPU test checks that none does; a segmented sort's tiles follow its segments' lengths, so
/// it compiles them as it meets them).
pub(crate) fn modules_for(
    t: Target,
    strategy: Strategy,
    len: usize,
    row_len: usize,
    key_bytes: usize,
    value_bytes: usize,
) -> Vec<&'static KernelModule> {
    // The top-k selections by composites read 16-bit keys as they are.
    let by_composites = strategy.selects_by_composites();
    let (key_bytes, widen) = match key_bytes {
        2 if !by_composites => (4, Some(&kernels::MAP_KEYS)),
        other => (other, None),
    };
    let tuned =
        |word_bytes, layout| passes::tuned_module(t.gpu.info(), t.policy, word_bytes, &layout);
    let rows = RowLayout::rows(len, row_len.clamp(1, len.max(1)));
    // A merge sort's runs (Policy::merge_run_bits); a key-value merge sort's are whole tiles.
    let runs = merge::run_layout(len, t.policy.merge_run_bits(key_bytes, len));
    let tiles = merge::run_layout(len, t.policy.tile_bits(key_bytes));
    let wide = key_bytes == 8;
    let mut modules = match strategy {
        Strategy::Seed(version) => vec![&kernels::MAP_KEYS, seed::module(version)],
        Strategy::NetworkPasses | Strategy::SegmentPasses => vec![tuned(key_bytes, rows)],
        Strategy::MergeSort => vec![tuned(key_bytes, runs), &kernels::MERGE_WORDS],
        Strategy::KeyValueMerge => {
            let merge_kv = match (wide, value_bytes == 8) {
                (false, false) => kernels::merge_kv::<u32, u32>(),
                (false, true) => kernels::merge_kv::<u32, u64>(),
                (true, false) => kernels::merge_kv::<u64, u32>(),
                (true, true) => kernels::merge_kv::<u64, u64>(),
            };
            vec![tuned(key_bytes, tiles), merge_kv]
        }
        // (key, index) pairs: a u32 key and its index make a u64 word, a u64 key a 16-byte
        // pair.
        Strategy::PairPasses => {
            let pair_bytes = if wide { 16 } else { 8 };
            vec![tuned(pair_bytes, rows), &kernels::PAIRS]
        }
        // The top-k selections prepare their own modules (src/cuda/topk.rs): the radix
        // select's depend on k.
        Strategy::TopkFilter | Strategy::TopkRadix | Strategy::TopkWarpSort => vec![],
        Strategy::CpuSort
        | Strategy::CpuNetwork
        | Strategy::CpuNetworkSerial
        | Strategy::CpuTopk => vec![],
    };
    if let Some(widen) = widen {
        if strategy.on_gpu() && !modules.contains(&widen) {
            modules.push(widen);
        }
    }
    modules
}

/// Compiles and loads what [`modules_for`] names, on first use: called before every GPU sort,
/// so that a first sort's modules compile side by side.
pub(crate) fn prepare(
    t: Target,
    strategy: Strategy,
    len: usize,
    row_len: usize,
    key_bytes: usize,
    value_bytes: usize,
) -> Result<()> {
    let modules = modules_for(t, strategy, len, row_len, key_bytes, value_bytes);
    t.gpu.prepare(t.policy, &modules)
}

/// Sorts `words` (keys `K` as their words) in rows of `row_len` (the whole slice: one row).
pub(crate) fn sort<K: SortKey>(
    t: Target,
    strategy: Strategy,
    words: &mut CudaViewMut<K::Bits>,
    row_len: usize,
    order: Order,
) -> Result<()> {
    if words.len() < 2 {
        return Ok(());
    }
    prepare(t, strategy, words.len(), row_len, K::DTYPE.size(), 0)?;
    let map = map_flags::<K>(order);
    match strategy {
        Strategy::Seed(version) => sort_seed::<K>(t.gpu, words, version, order),
        // The tuned passes fold the key map into their first load and last store.
        Strategy::NetworkPasses => {
            let layout = RowLayout::rows(words.len(), row_len);
            passes::tuned(t.gpu, t.policy, words, layout, map)
        }
        Strategy::MergeSort => merge::sort_by_merging(t.gpu, t.policy, words, map),
        other => unreachable!("{other:?} is not a GPU sort of keys alone"),
    }
}

/// Sorts each segment `words[offsets[i]..offsets[i + 1]]` on its own.
pub(crate) fn sort_segments<K: SortKey>(
    t: Target,
    words: &mut CudaViewMut<K::Bits>,
    offsets: &[usize],
    order: Order,
) -> Result<()> {
    prepare(
        t,
        Strategy::SegmentPasses,
        words.len(),
        words.len(),
        K::DTYPE.size(),
        0,
    )?;
    rows::sort_segments(t.gpu, t.policy, words, offsets, map_flags::<K>(order))
}

/// Sorts every row of `row_len` words stably and writes each sorted key's index in its row
/// before the sort to `indices`.
pub(crate) fn sort_with_indices<K: SortKey>(
    t: Target,
    strategy: Strategy,
    words: &mut CudaViewMut<K::Bits>,
    row_len: usize,
    indices: &mut CudaViewMut<u32>,
    order: Order,
) -> Result<()> {
    if words.is_empty() {
        return Ok(());
    }
    prepare(t, strategy, words.len(), row_len, K::DTYPE.size(), 4)?;
    let map = map_flags::<K>(order);
    match strategy {
        Strategy::KeyValueMerge => kv::merge_sort_kv(t.gpu, t.policy, words, indices, true, map),
        Strategy::PairPasses => rows::sort_pairs(t.gpu, t.policy, words, indices, row_len, map),
        other => unreachable!("{other:?} is not a GPU argsort"),
    }
}

/// Sorts every row of `row_len` words stably and moves `values` (4- or 8-byte elements) with
/// their keys.
pub(crate) fn sort_with_values<K: SortKey, V: DeviceRepr>(
    t: Target,
    strategy: Strategy,
    words: &mut CudaViewMut<K::Bits>,
    row_len: usize,
    values: &mut CudaViewMut<V>,
    order: Order,
) -> Result<()> {
    let (n, value_bytes) = (words.len(), std::mem::size_of::<V>());
    if value_bytes != 4 && value_bytes != 8 {
        return Err(Error::UnsupportedValue(value_bytes));
    }
    if n < 2 {
        return Ok(());
    }
    prepare(t, strategy, n, row_len, K::DTYPE.size(), value_bytes)?;
    match strategy {
        Strategy::KeyValueMerge => {
            let map = map_flags::<K>(order);
            // SAFETY: 4- or 8-byte values move as words of their size, bits unchanged.
            if value_bytes == 4 {
                let mut values = unsafe { values.transmute_mut::<u32>(n) }.expect("same size");
                kv::merge_sort_kv(t.gpu, t.policy, words, &mut values, false, map)
            } else {
                let mut values = unsafe { values.transmute_mut::<u64>(n) }.expect("same size");
                kv::merge_sort_kv(t.gpu, t.policy, words, &mut values, false, map)
            }
        }
        Strategy::PairPasses => {
            let mut indices = alloc_indices(t.gpu, n)?;
            let mut view = indices.as_view_mut();
            sort_with_indices::<K>(t, strategy, words, row_len, &mut view, order)?;
            rows::gather(t.gpu, values, &indices, row_len)
        }
        other => unreachable!("{other:?} is not a GPU key-value sort"),
    }
}

/// Sorts one array of words that already sort ascending (no key map), as
/// [`crate::dispatch::choose`] says the tuned version sorts keys alone: the multi-GPU sort's
/// local sorts.
pub(crate) fn sort_ascending_words<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    words: &mut CudaViewMut<W>,
) -> Result<()> {
    let request = Request {
        len: words.len(),
        key_bytes: std::mem::size_of::<W>(),
        layout: Layout::Whole,
        with_values: false,
        backend: crate::Backend::Cuda,
        version: None,
        operation: Operation::Sort,
    };
    match crate::dispatch::choose(&request, Some(policy))?.1 {
        Strategy::MergeSort => merge::sort_by_merging(gpu, policy, words, 0),
        _ => {
            let layout = RowLayout::rows(words.len(), words.len());
            passes::tuned(gpu, policy, words, layout, 0)
        }
    }
}

/// A device buffer for `n` indices (at least one element: the driver refuses empty ones).
pub(crate) fn alloc_indices(gpu: &Gpu, n: usize) -> Result<CudaSlice<u32>> {
    // SAFETY: every strategy writes each index before anything reads it.
    unsafe { gpu.stream().alloc::<u32>(n.max(1)) }.during(|| format!("allocating {n} indices"))
}

/// The seed versions sort ascending words: map the keys first and back after.
fn sort_seed<K: SortKey>(
    gpu: &Gpu,
    words: &mut CudaViewMut<K::Bits>,
    version: Version,
    order: Order,
) -> Result<()> {
    let map = K::DTYPE.needs_map(order);
    if map {
        map_keys(gpu, words, K::DTYPE.map_kind(), order, false)?;
    }
    seed::run(gpu, words, version)?;
    if map {
        map_keys(gpu, words, K::DTYPE.map_kind(), order, true)?;
    }
    Ok(())
}

/// Turns keys into ascending-sortable words (`inverse` false) or back (kernels/map_keys.cu).
pub(crate) fn map_keys<B: crate::key::Bits>(
    gpu: &Gpu,
    words: &mut CudaViewMut<B>,
    kind: MapKind,
    order: Order,
    inverse: bool,
) -> Result<()> {
    let f = gpu.function(&kernels::MAP_KEYS, &kernel_name::<B>("map_keys"))?;
    let flags = (
        kind as u32,
        (order == Order::Descending) as u32,
        inverse as u32,
    );
    let cfg = gpu.elementwise(words.len());
    launch::map_keys(gpu, &f, cfg, words, flags).during(|| "launching map_keys".into())
}

/// Bytes `strategy` moves through device memory to sort `n` keys of `dtype` in one array: a
/// read and a write of every key per pass over the array, plus the two key-map passes around
/// a seed version when the type or the order needs them, and for 16-bit keys the passes that
/// widen them to words and narrow them back. The yardstick for achieved bandwidth.
pub(crate) fn bytes_moved(
    t: Target,
    strategy: Strategy,
    n: usize,
    dtype: DType,
    order: Order,
) -> Result<u64> {
    let words = dtype.wide();
    let wide = words.size() == 8;
    let passes = match strategy {
        Strategy::Seed(version) if wide => seed::passes::<u64>(t.gpu, version, n),
        Strategy::Seed(version) => seed::passes::<u32>(t.gpu, version, n),
        Strategy::MergeSort if wide => merge::merge_sort_passes::<u64>(t.policy, n),
        Strategy::MergeSort => merge::merge_sort_passes::<u32>(t.policy, n),
        Strategy::NetworkPasses if wide => passes::pass_count::<u64>(t.gpu, t.policy, n)?,
        Strategy::NetworkPasses => passes::pass_count::<u32>(t.gpu, t.policy, n)?,
        _ => {
            return Err(Error::Unsupported(
                "byte counts of argsorts, key-value and row sorts",
            ))
        }
    };
    let maps = match strategy {
        Strategy::Seed(_) if words.needs_map(order) => 2,
        _ => 0,
    };
    // Widening reads a key and writes a word; narrowing the reverse.
    let widen = match words == dtype {
        true => 0,
        false => 2 * n * (dtype.size() + words.size()),
    };
    Ok(((passes + maps) * 2 * n * words.size() + widen) as u64)
}

/// `Ok` when `len` keys fit the kernels' 32-bit indexing.
pub(crate) fn check_len(len: usize) -> Result<()> {
    if len > MAX_LEN {
        Err(Error::TooLong { len, max: MAX_LEN })
    } else {
        Ok(())
    }
}
