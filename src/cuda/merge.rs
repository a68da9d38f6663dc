//! Merging sorted runs on one GPU (kernels/merge.cu): one block merges one tile of the output,
//! its words placed as a bitonic sequence by the merge path and sorted by half-cleaners in
//! shared memory, so each merge reads and writes every word once.
//!
//! * [`merge_two_runs`]: two runs of any lengths, from anywhere (the multi-GPU sort's merges:
//!   the halves a merge-split keeps, the runs a partition receives).
//! * [`merge_sort`]: tuned tile sorts, then [`merge_levels`] merges the runs pairwise, level by
//!   level, until one is left: how long key-index pair sorts go (src/cuda/pairs.rs).

use super::{kernel_name, kernels, plan, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::multi::MERGE_TILE;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, LaunchConfig, PushKernelArg};

/// Output words one block merges: kernels/merge.cu's `MergeTile`, 16 words a thread (8 for
/// 16-byte key-index pairs) in blocks of [`MERGE_THREADS`], which its register layout assumes.
pub(super) fn merge_tile<W>() -> usize {
    if std::mem::size_of::<W>() == 16 {
        MERGE_TILE / 2
    } else {
        MERGE_TILE
    }
}
const MERGE_THREADS: u32 = 256;

/// Merges the sorted runs `a` and `b` into `out` (`a.len() + b.len()` words): the merge path
/// at every tile boundary (`co_ranks`), then one block a tile (`merge_tiles`). Among equal
/// words, `a`'s go first. src/multi/mod.rs's `merge_by_tiles` does the same on the CPU.
pub(super) fn merge_two_runs<W: DeviceRepr>(
    gpu: &Gpu,
    a: &CudaView<W>,
    b: &CudaView<W>,
    out: &mut CudaViewMut<W>,
) -> Result<()> {
    let stream = gpu.stream();
    let total = a.len() + b.len();
    assert_eq!(out.len(), total, "a merge writes every word of both runs");
    if a.is_empty() || b.is_empty() {
        let run = if a.is_empty() { b } else { a };
        if total > 0 {
            stream
                .memcpy_dtod(run, out)
                .during(|| "copying a run that has no partner".into())?;
        }
        return Ok(());
    }
    let tiles = total.div_ceil(merge_tile::<W>()) as u32;
    let count = tiles + 1;
    let mut ranks = unsafe { stream.alloc::<u64>(count as usize) }
        .during(|| format!("allocating {count} merge paths"))?;
    let (a_len, b_len, total64) = (a.len() as u64, b.len() as u64, total as u64);
    let f = gpu.function(&kernels::MERGE, &kernel_name::<W>("co_ranks"))?;
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(a)
        .arg(&a_len)
        .arg(b)
        .arg(&b_len)
        .arg(&mut ranks)
        .arg(&count);
    unsafe { launch.launch(search_grid(count)) }.during(|| "launching co_ranks".into())?;
    let f = gpu.function(&kernels::MERGE, &kernel_name::<W>("merge_tiles"))?;
    let mut launch = stream.launch_builder(&f);
    launch.arg(a).arg(b).arg(&ranks).arg(out).arg(&total64);
    unsafe { launch.launch(plan::config(tiles, MERGE_THREADS, 0)) }
        .during(|| "launching merge_tiles".into())?;
    Ok(())
}

/// Sorts `keys`, which holds sorted runs of `run_len` words (the last may be shorter), by
/// merging neighbouring runs pairwise, one launch pair a level, between `keys` and `spare`
/// (as long). Returns whether the sorted words ended in `spare` (an odd number of levels).
/// `run_len` must be a power of two at least half a merge tile, so that no tile spans two
/// pairs of runs.
fn merge_levels<W: DeviceRepr>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    mut run_len: usize,
) -> Result<bool> {
    let n = keys.len();
    assert_eq!(spare.len(), n, "the spare buffer holds every word");
    assert!(run_len.is_power_of_two() && 2 * run_len >= merge_tile::<W>());
    let stream = gpu.stream();
    let tiles = n.div_ceil(merge_tile::<W>()) as u32;
    let mut ranks = unsafe { stream.alloc::<u64>(tiles.max(1) as usize) }
        .during(|| format!("allocating {tiles} merge paths"))?;
    let mut in_spare = false;
    while run_len < n {
        if in_spare {
            merge_level(gpu, &spare.as_view(), keys, run_len, &mut ranks)?;
        } else {
            merge_level(gpu, &keys.as_view(), spare, run_len, &mut ranks)?;
        }
        in_spare = !in_spare;
        run_len *= 2;
    }
    Ok(in_spare)
}

/// One level of [`merge_levels`]: runs 2k and 2k + 1 of `src` merge into `dst`.
fn merge_level<W: DeviceRepr>(
    gpu: &Gpu,
    src: &CudaView<W>,
    dst: &mut CudaViewMut<W>,
    run_len: usize,
    ranks: &mut CudaSlice<u64>,
) -> Result<()> {
    let stream = gpu.stream();
    let tiles = src.len().div_ceil(merge_tile::<W>()) as u32;
    let (n64, run64) = (src.len() as u64, run_len as u64);
    let f = gpu.function(&kernels::MERGE, &kernel_name::<W>("level_co_ranks"))?;
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(src)
        .arg(&n64)
        .arg(&run64)
        .arg(&mut *ranks)
        .arg(&tiles);
    unsafe { launch.launch(search_grid(tiles)) }.during(|| "launching level_co_ranks".into())?;
    let f = gpu.function(&kernels::MERGE, &kernel_name::<W>("merge_level"))?;
    let mut launch = stream.launch_builder(&f);
    launch.arg(src).arg(&n64).arg(&run64).arg(&*ranks).arg(dst);
    unsafe { launch.launch(plan::config(tiles, MERGE_THREADS, 0)) }
        .during(|| "launching merge_level".into())?;
    Ok(())
}

/// An experiment, off unless `BITONIC_KEYS_MERGE=1`: plain keys (no key map) of one long
/// array sorted as the long pair sorts are, by tile sorts and merges (docs/notes/rows.md
/// measures it against the network's passes).
pub(super) fn keys_through_merges(n: usize) -> bool {
    std::env::var("BITONIC_KEYS_MERGE").is_ok_and(|v| v.trim() == "1") && n > MERGES_FROM
}

/// The shortest array a merge sort of tile sorts takes: on the H100 the network's passes sort
/// pairs faster at 2^18 and slower at 2^20 (docs/notes/rows.md).
pub(super) const MERGES_FROM: usize = 1 << 19;

impl Gpu {
    /// Sorts `keys` (sortable words, no key map) by [`merge_sort`], the result copied back.
    pub(super) fn sort_by_merging<W: DeviceRepr>(&self, keys: &mut CudaViewMut<W>) -> Result<()> {
        let n = keys.len();
        let mut spare = unsafe { self.stream.alloc::<W>(n) }
            .during(|| format!("allocating {n} words to merge into"))?;
        if merge_sort(self, keys, &mut spare.as_view_mut())? {
            self.stream
                .memcpy_dtod(&spare, keys)
                .during(|| "copying the merged keys back".into())?;
        }
        Ok(())
    }
}

/// Sorts `keys` (sortable words, already mapped) as a merge sort of tile sorts: the tuned
/// passes sort runs of one tile each (2^14 u32, 2^13 u64, 2^12 key-index pairs), then
/// [`merge_levels`] merges them through `spare`. Returns whether the result is in `spare`.
pub(super) fn merge_sort<W: DeviceRepr>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
) -> Result<bool> {
    let run_bits = plan::default_tile_bits(std::mem::size_of::<W>());
    plan::tuned(gpu, keys, plan::RowLayout::runs(keys.len(), run_bits), 0)?;
    merge_levels(gpu, keys, spare, 1 << run_bits)
}

/// One thread a binary search (merge paths here, splitter cuts in src/cuda/multi.rs).
pub(super) fn search_grid(count: u32) -> LaunchConfig {
    plan::config(count.div_ceil(128).max(1), 128, 0)
}
