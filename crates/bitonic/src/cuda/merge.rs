//! Merging sorted runs on one GPU (kernels/merge.cu): one block merges one tile of the output,
//! its words placed as a bitonic sequence by the merge path and sorted by half-cleaners in
//! shared memory, so each merge reads and writes every word once.
//!
//! * [`merge_two_runs`]: two runs of any lengths, from anywhere (the multi-GPU sort's merges:
//!   the halves a merge-split keeps, the runs a partition receives).
//! * [`merge_sort`]: tuned tile sorts, then [`merge_levels`] merges the runs pairwise, level by
//!   level, until one is left: [`crate::dispatch::Strategy::MergeSort`], how one long array
//!   of keys sorts ([`sort_by_merging`]).
//!
//! The key-value merge sort (src/cuda/kv.rs) uses the same merge path and tile merge.

use super::launch::{self, config};
use super::layout::RowLayout;
use super::{kernel_name, kernels, passes, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::policy::Policy;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DevicePtr, DeviceRepr, LaunchConfig};

/// Output words one block merges: kernels/merge.cu's `MergeTile`, 16 words a thread (8 for
/// 16-byte key-index pairs) in blocks of [`Policy::merge_threads`].
pub(crate) fn merge_tile_len<W>(policy: &Policy) -> usize {
    policy.merge_tile_of(std::mem::size_of::<W>())
}

/// Shared-memory bytes of `tile` words of `word_bytes` with kernels/merge.cu's padding of one
/// word a 128 bytes (`padded_tile`).
pub(crate) fn padded_tile_bytes(tile: usize, word_bytes: usize) -> usize {
    (tile + tile / (128 / word_bytes)) * word_bytes
}

/// Merges the sorted runs `a` and `b` into `out` (`a.len() + b.len()` words): the merge path
/// at every tile boundary (`co_ranks`), then one block a tile (`merge_tiles`). Among equal
/// words, `a`'s go first. src/multi/mod.rs's `merge_by_tiles` does the same on the CPU.
pub(crate) fn merge_two_runs<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
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
    let tiles = total.div_ceil(merge_tile_len::<W>(policy)) as u32;
    let count = tiles + 1;
    let mut ranks = unsafe { stream.alloc::<u64>(count as usize) }
        .during(|| format!("allocating {count} merge paths"))?;
    let f = gpu.function_for(policy, &kernels::MERGE_WORDS, &kernel_name::<W>("co_ranks"))?;
    launch::co_ranks(gpu, &f, search_grid(count), (a, b), &mut ranks, count)
        .during(|| "launching co_ranks".into())?;
    let f = gpu.function_for(
        policy,
        &kernels::MERGE_WORDS,
        &kernel_name::<W>("merge_tiles"),
    )?;
    let cfg = config(tiles, policy.merge_threads, 0);
    launch::merge_tiles(gpu, &f, cfg, (a, b), &ranks, out).during(|| "launching merge_tiles".into())
}

/// Sorts `keys`, which holds sorted runs of `run_len` words (the last may be shorter), by
/// merging neighbouring runs pairwise, one launch pair a level, between `keys` and `spare`
/// (as long). Returns whether the sorted words ended in `spare` (an odd number of levels).
/// `run_len` must be a power of two at least half a merge tile, so that no tile spans two
/// pairs of runs, and below `keys.len()`. The last level's stores undo the key map `map`.
fn merge_levels<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    mut run_len: usize,
    map: u32,
) -> Result<bool> {
    let n = keys.len();
    assert_eq!(spare.len(), n, "the spare buffer holds every word");
    assert!(run_len.is_power_of_two() && 2 * run_len >= merge_tile_len::<W>(policy) && run_len < n);
    let stream = gpu.stream();
    let tiles = n.div_ceil(merge_tile_len::<W>(policy)) as u32;
    let mut ranks = unsafe { stream.alloc::<u64>(tiles.max(1) as usize) }
        .during(|| format!("allocating {tiles} merge paths"))?;
    let mut in_spare = false;
    while run_len < n {
        let level_map = if 2 * run_len >= n { map } else { 0 };
        if in_spare {
            merge_level(
                gpu,
                policy,
                &spare.as_view(),
                keys,
                run_len,
                &mut ranks,
                level_map,
            )?;
        } else {
            merge_level(
                gpu,
                policy,
                &keys.as_view(),
                spare,
                run_len,
                &mut ranks,
                level_map,
            )?;
        }
        in_spare = !in_spare;
        run_len *= 2;
    }
    Ok(in_spare)
}

/// One level of [`merge_levels`]: runs 2k and 2k + 1 of `src` merge into `dst`.
fn merge_level<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    src: &CudaView<W>,
    dst: &mut CudaViewMut<W>,
    run_len: usize,
    ranks: &mut CudaSlice<u64>,
    map: u32,
) -> Result<()> {
    let tiles = src.len().div_ceil(merge_tile_len::<W>(policy)) as u32;
    let (n64, run64) = (src.len() as u64, run_len as u64);
    let f = gpu.function_for(
        policy,
        &kernels::MERGE_WORDS,
        &kernel_name::<W>("level_co_ranks"),
    )?;
    let (keys, _record_read) = src.device_ptr(gpu.stream());
    launch::level_co_ranks(
        gpu,
        &f,
        search_grid(tiles),
        keys,
        (n64, run64),
        ranks,
        tiles,
    )
    .during(|| "launching level_co_ranks".into())?;
    let f = gpu.function_for(
        policy,
        &kernels::MERGE_WORDS,
        &kernel_name::<W>("merge_level"),
    )?;
    let cfg = config(tiles, policy.merge_threads, 0);
    launch::merge_level(gpu, &f, cfg, (src, dst), run64, ranks, map)
        .during(|| "launching merge_level".into())
}

/// log2 of the runs a [`merge_sort`] of `W` words starts from: one tuned tile each.
fn run_bits<W>(policy: &Policy) -> u32 {
    policy.tile_bits(std::mem::size_of::<W>())
}

/// The runs the tile sort of a [`merge_sort`] of `n` words of `word_bytes` sorts (a key-value
/// merge sort's too): one tuned tile each, or the whole array when it fits one.
pub(crate) fn run_layout(policy: &Policy, n: usize, word_bytes: usize) -> RowLayout {
    let run_bits = policy.tile_bits(word_bytes);
    if n <= 1 << run_bits {
        RowLayout::rows(n, n)
    } else {
        RowLayout::runs(n, run_bits)
    }
}

/// Sorts one array of words as a [`merge_sort`], the key map `map` folded into the tile
/// sort's loads and the last merge level's stores, and the result copied back when it ends in
/// the spare buffer. Without memory for that buffer it sorts with the network's passes
/// instead, which need none.
pub(crate) fn sort_by_merging<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    map: u32,
) -> Result<()> {
    let n = keys.len();
    // SAFETY: the spare buffer is written by the tile sorts' merge levels before it is read.
    let Ok(mut spare) = (unsafe { gpu.stream().alloc::<W>(n) }) else {
        return passes::tuned(gpu, policy, keys, RowLayout::rows(n, n), map);
    };
    if merge_sort(gpu, policy, keys, &mut spare.as_view_mut(), map)? {
        gpu.stream()
            .memcpy_dtod(&spare, keys)
            .during(|| "copying the merged keys back".into())?;
    }
    Ok(())
}

/// Passes over the array of a [`merge_sort`] of `n` words and its copy back: the tile sort,
/// one a merge level, and the copy when the levels are odd.
pub(crate) fn merge_sort_passes<W>(policy: &Policy, n: usize) -> usize {
    let levels = n
        .div_ceil(1 << run_bits::<W>(policy))
        .next_power_of_two()
        .trailing_zeros() as usize;
    1 + levels + levels % 2
}

/// Sorts `keys` (more than one tile of them) as a merge sort of tile sorts: the tuned passes
/// sort runs of one tile each (2^14 u32, 2^13 u64 with 64 KiB tiles), mapping the keys on
/// their loads, then [`merge_levels`] merges the runs through `spare` and unmaps on the last
/// level's stores. Returns whether the result is in `spare`.
pub(crate) fn merge_sort<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    map: u32,
) -> Result<bool> {
    let runs = run_layout(policy, keys.len(), std::mem::size_of::<W>());
    passes::tuned_keeping_map(gpu, policy, keys, runs, map, true)?;
    merge_levels(gpu, policy, keys, spare, 1 << run_bits::<W>(policy), map)
}

/// One thread a binary search (merge paths here, splitter cuts in src/cuda/multi/).
pub(crate) fn search_grid(count: u32) -> LaunchConfig {
    config(count.div_ceil(128).max(1), 128, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multi::{co_rank, merge_tile};

    /// kernels/merge.cu's `level_co_ranks` and `merge_level` on the CPU, tile by tile: which
    /// pair of runs a tile lies in, the merge path at its start (the next tile's, or the whole
    /// first run for the tile that ends its pair), then the CPU's tile merge.
    fn model_level(keys: &[u32], run_len: usize, tile: usize) -> Vec<u32> {
        let n = keys.len();
        let pair_at = |o: usize| {
            let start = o / (2 * run_len) * (2 * run_len);
            let a_len = run_len.min(n - start);
            (start, a_len, run_len.min(n - start - a_len))
        };
        let ranks: Vec<usize> = (0..n.div_ceil(tile))
            .map(|q| {
                let (start, a_len, b_len) = pair_at(q * tile);
                let a = &keys[start..start + a_len];
                co_rank(
                    a,
                    &keys[start + a_len..start + a_len + b_len],
                    q * tile - start,
                )
            })
            .collect();
        let mut out = vec![0; n];
        for (q, &a0) in ranks.iter().enumerate() {
            let (start, a_len, b_len) = pair_at(q * tile);
            let (a, b) = keys[start..start + a_len + b_len].split_at(a_len);
            let o0 = q * tile - start;
            let o1 = (o0 + tile).min(a_len + b_len);
            let a1 = if o1 == a_len + b_len {
                a_len
            } else {
                ranks[q + 1]
            };
            merge_tile(a, b, o0, (a0, a1), &mut out[start + o0..start + o1]);
        }
        out
    }

    #[test]
    fn merge_levels_on_the_model_sort_runs_of_any_count() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        // Runs of 16 merged in tiles of 8 (a tile never spans two pairs): exact multiples,
        // one past, an odd run count, few distinct keys.
        for (n, distinct) in [
            (16, 1000),
            (17, 1000),
            (100, 3),
            (128, 1000),
            (129, 7),
            (333, 50),
        ] {
            let mut keys: Vec<u32> = (0..n).map(|_| rng.random_range(0..distinct)).collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            for run in keys.chunks_mut(16) {
                run.sort_unstable();
            }
            let mut run_len = 16;
            while run_len < n {
                keys = model_level(&keys, run_len, 8);
                run_len *= 2;
            }
            assert_eq!(keys, expected, "{n} keys");
        }
    }

    #[test]
    fn passes_of_a_merge_sort() {
        const P: Policy = Policy::HOPPER;
        // 2^24 u32 keys: runs of 2^14, 10 levels, the result back in place.
        assert_eq!(merge_sort_passes::<u32>(&P, 1 << 24), 11);
        // 2^29: 15 levels, the last into the spare buffer, then the copy back.
        assert_eq!(merge_sort_passes::<u32>(&P, 1 << 29), 17);
        // One key past a power of two takes one level more.
        assert_eq!(merge_sort_passes::<u64>(&P, (1 << 23) + 1), 1 + 11 + 1);
        assert_eq!(merge_sort_passes::<[u8; 16]>(&P, 1 << 24), 1 + 12);
    }
}
