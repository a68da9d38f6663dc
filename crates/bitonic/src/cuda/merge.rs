//! Merging sorted runs on one GPU (kernels/merge.cu): one block merges one tile of the output,
//! its words placed as a bitonic sequence by the merge path and sorted by half-cleaners in
//! shared memory, so each merge reads and writes every word once.
//!
//! * [`merge_two_runs`]: two runs of any lengths, from anywhere (the multi-GPU sort's merges:
//!   the halves a merge-split keeps, the runs a partition receives).
//! * [`merge_sort`]: tuned tile sorts, then [`merge_levels`] merges the runs pairwise, level by
//!   level, until one is left: how the tuned version sorts one array past 2^22 keys
//!   ([`Gpu::sort_one_row`]).
//! * [`merge_sort_kv`]: the same for keys and values (key-value sorts and argsorts of one row,
//!   src/cuda/pairs.rs), stable: after the tuned tile sort each value moves to its key's rank
//!   in the tile (equal keys by index), and the merges give each key a *tag*, its rank in the
//!   stable order of the block's inputs, so equal keys keep that order and each value follows
//!   its key's tag. Keys and values stay in two arrays; no pass packs, unpacks or gathers them.

use super::{kernel_name, kernels, plan, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::multi::MERGE_TILE;
use cudarc::driver::{
    CudaSlice, CudaView, CudaViewMut, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};

/// Output words one block merges: kernels/merge.cu's `MergeTile`, 16 words a thread (8 for
/// 16-byte key-index pairs) in blocks of [`MERGE_THREADS`], which its register layout assumes.
pub(super) fn merge_tile_len<W>() -> usize {
    merge_tile_of(std::mem::size_of::<W>())
}

/// [`merge_tile_len`] for words of `word_bytes`.
fn merge_tile_of(word_bytes: usize) -> usize {
    if word_bytes == 16 {
        MERGE_TILE / 2
    } else {
        MERGE_TILE
    }
}

/// Shared-memory bytes of `tile` words of `word_bytes` with kernels/merge.cu's padding of one
/// word a 128 bytes (`padded_tile`).
fn padded_tile_bytes(tile: usize, word_bytes: usize) -> usize {
    (tile + tile / (128 / word_bytes)) * word_bytes
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
    let tiles = total.div_ceil(merge_tile_len::<W>()) as u32;
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
/// pairs of runs, and below `keys.len()`. The last level's stores undo the key map `map`.
fn merge_levels<W: DeviceRepr>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    mut run_len: usize,
    map: u32,
) -> Result<bool> {
    let n = keys.len();
    assert_eq!(spare.len(), n, "the spare buffer holds every word");
    assert!(run_len.is_power_of_two() && 2 * run_len >= merge_tile_len::<W>() && run_len < n);
    let stream = gpu.stream();
    let tiles = n.div_ceil(merge_tile_len::<W>()) as u32;
    let mut ranks = unsafe { stream.alloc::<u64>(tiles.max(1) as usize) }
        .during(|| format!("allocating {tiles} merge paths"))?;
    let mut in_spare = false;
    while run_len < n {
        let level_map = if 2 * run_len >= n { map } else { 0 };
        if in_spare {
            merge_level(gpu, &spare.as_view(), keys, run_len, &mut ranks, level_map)?;
        } else {
            merge_level(gpu, &keys.as_view(), spare, run_len, &mut ranks, level_map)?;
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
    map: u32,
) -> Result<()> {
    let stream = gpu.stream();
    let tiles = src.len().div_ceil(merge_tile_len::<W>()) as u32;
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
    launch
        .arg(src)
        .arg(&n64)
        .arg(&run64)
        .arg(&*ranks)
        .arg(dst)
        .arg(&map);
    unsafe { launch.launch(plan::config(tiles, MERGE_THREADS, 0)) }
        .during(|| "launching merge_level".into())?;
    Ok(())
}

/// Whether one array of `n` keys sorts as a [`merge_sort`]: past 2^22 keys, where it beat the
/// network's passes on the H100 (2^23 by 9%, 2^24 by 34%; up to 2^22 the passes stay in L2 and
/// win; docs/notes/tuned.md). `BITONIC_KEYS_MERGE=0` keeps the network's passes, for
/// measurements.
pub(super) fn keys_through_merges(n: usize) -> bool {
    plan::env_u32("BITONIC_KEYS_MERGE") != Some(0) && n > 1 << 22
}

/// Whether key-index pairs in rows of `row_len` (`n` in all) sort as a [`merge_sort`]: one row
/// past 2^19 pairs, where on the H100 the network's passes won at 2^18 and the merges at 2^20
/// (docs/notes/rows.md). `BITONIC_PAIR_MERGE=0` keeps the network's passes, for measurements.
pub(super) fn pairs_through_merges(n: usize, row_len: usize) -> bool {
    plan::env_u32("BITONIC_PAIR_MERGE") != Some(0) && row_len == n && n > 1 << 19
}

/// log2 of the runs a [`merge_sort`] of `W` words starts from: one tuned tile each.
fn run_bits<W>() -> u32 {
    plan::default_tile_bits(std::mem::size_of::<W>())
}

impl Gpu {
    /// Sorts one array of words with the tuned version: the network's passes, or past 2^22
    /// keys a [`merge_sort`]. `map` is the key map (kernels/common.cuh's flags), 0 for words
    /// that are sortable already.
    pub(super) fn sort_one_row<W: DeviceRepr>(
        &self,
        keys: &mut CudaViewMut<W>,
        map: u32,
    ) -> Result<()> {
        let n = keys.len();
        if keys_through_merges(n) {
            return self.sort_by_merging(keys, map);
        }
        plan::tuned(self, keys, plan::RowLayout::rows(n, n), map)
    }

    /// Sorts `keys` of one array by [`merge_sort`], the key map `map` folded into the tile
    /// sort's loads and the last merge level's stores, and the result copied back when it
    /// ends in the spare buffer. Without memory for that buffer it sorts with the network's
    /// passes instead, which need none.
    fn sort_by_merging<W: DeviceRepr>(&self, keys: &mut CudaViewMut<W>, map: u32) -> Result<()> {
        let n = keys.len();
        let Ok(mut spare) = (unsafe { self.stream.alloc::<W>(n) }) else {
            return plan::tuned(self, keys, plan::RowLayout::rows(n, n), map);
        };
        if merge_sort(self, keys, &mut spare.as_view_mut(), map)? {
            self.stream
                .memcpy_dtod(&spare, keys)
                .during(|| "copying the merged keys back".into())?;
        }
        Ok(())
    }
}

/// Passes over the array of a [`merge_sort`] of `n` words and its copy back: the tile sort,
/// one a merge level, and the copy when the levels are odd.
pub(super) fn merge_sort_passes<W>(n: usize) -> usize {
    let levels = n
        .div_ceil(1 << run_bits::<W>())
        .next_power_of_two()
        .trailing_zeros() as usize;
    1 + levels + levels % 2
}

/// Sorts `keys` (more than one tile of them) as a merge sort of tile sorts: the tuned passes
/// sort runs of one tile each (2^14 u32, 2^13 u64, 2^12 key-index pairs), mapping the keys on
/// their loads, then [`merge_levels`] merges the runs through `spare` and unmaps on the last
/// level's stores. Returns whether the result is in `spare`.
pub(super) fn merge_sort<W: DeviceRepr>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    map: u32,
) -> Result<bool> {
    let runs = plan::RowLayout::runs(keys.len(), run_bits::<W>());
    plan::tuned_keeping_map(gpu, keys, runs, map, true)?;
    merge_levels(gpu, keys, spare, 1 << run_bits::<W>(), map)
}

/// Whether a key-value sort or argsort of one row takes [`merge_sort_kv`] (any length but
/// rows of many). `BITONIC_KV_MERGE=0` keeps the pairs' path (pack, sort, unpack, gather), for
/// measurements.
pub(super) fn kv_through_merges(n: usize, row_len: usize) -> bool {
    plan::env_u32("BITONIC_KV_MERGE") != Some(0) && row_len == n
}

/// Bytes of a key of K with its tag: kernels/merge.cu's `Tagged` word (a u64 for 32-bit keys,
/// a 16-byte KeyIndex for 64-bit ones).
fn tagged_bytes<K>() -> usize {
    2 * std::mem::size_of::<K>()
}

/// The dynamic shared memory of a key-value merge tile of keys K with values V: its padded
/// tagged words, then the values.
fn kv_merge_shared_bytes<K, V>() -> u32 {
    let tile = merge_tile_of(tagged_bytes::<K>());
    (padded_tile_bytes(tile, tagged_bytes::<K>()) + tile * std::mem::size_of::<V>()) as u32
}

/// The dynamic shared memory of `place_values` on tiles of `tile` keys K with values V: a
/// region for the larger of the tile's keys (its search tree), its values and its padded u32
/// words, then each key's place, a u16 (kernels/merge.cu's `key_places`).
fn place_shared_bytes<K, V>(tile: usize) -> u32 {
    let region = (tile * std::mem::size_of::<K>())
        .max(tile * std::mem::size_of::<V>())
        .max(padded_tile_bytes(tile, 4));
    (region + tile * std::mem::size_of::<u16>()) as u32
}

/// `name_kv_K_V`: a key-value kernel by the widths of its keys and values.
fn kv_kernel_name<K, V>(name: &str) -> String {
    let width = |bytes| if bytes == 4 { "u32" } else { "u64" };
    format!(
        "{name}_kv_{}_{}",
        width(std::mem::size_of::<K>()),
        width(std::mem::size_of::<V>())
    )
}

/// Sorts `keys` (4- or 8-byte words) and moves `values` (4- or 8-byte words) with them,
/// stably, in place. The runs: the tuned tile sort sorts each tile of keys alone (2^14 u32,
/// 2^13 u64), a copy of the keys keeping their order, and `place_values` moves each value to
/// where its key went (`place_equal_values` for the tiles with equal keys). Then merge levels
/// (`merge_level_kv`) between the arrays and a spare pair of the same size, the runs placed
/// where an even number of levels ends in the caller's arrays. `map` maps the keys for the
/// whole sort and back on the last store. With `positions`, `values` is output only: each
/// key's value is its position.
pub(super) fn merge_sort_kv<K: DeviceRepr, V: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<K>,
    values: &mut CudaViewMut<V>,
    positions: bool,
    map: u32,
) -> Result<()> {
    let n = keys.len();
    assert_eq!(values.len(), n, "a value for every key");
    let stream = gpu.stream();
    if n < 2 {
        // Sorted already (the tuned sort would not even map a single key).
        if positions && n == 1 {
            stream
                .memset_zeros(values)
                .during(|| "writing the position of a single key".into())?;
        }
        return Ok(());
    }
    let tile_bits = run_bits::<K>();
    let tile = 1usize << tile_bits;
    let runs = n.div_ceil(tile);
    let levels = runs.next_power_of_two().trailing_zeros();
    let mut spare_keys =
        unsafe { stream.alloc::<K>(n) }.during(|| format!("allocating {n} keys to sort beside"))?;
    let spare_values = unsafe { stream.alloc::<V>(if levels > 0 { n } else { 1 }) }
        .during(|| format!("allocating {n} values to merge into"))?;
    stream
        .memcpy_dtod(keys, &mut spare_keys)
        .during(|| "copying the keys".into())?;
    // The runs go to the spare arrays when the levels are odd; the keys are sorted there, and
    // their copy elsewhere keeps the order the values are in.
    let mut in_spare = levels % 2 == 1;
    let layout = if runs == 1 {
        plan::RowLayout::rows(n, n)
    } else {
        plan::RowLayout::runs(n, tile_bits)
    };
    if in_spare {
        plan::tuned_keeping_map(gpu, &mut spare_keys.as_view_mut(), layout, map, true)?;
    } else {
        plan::tuned_keeping_map(gpu, keys, layout, map, true)?;
    }

    let (keys_ptr, _k) = keys.device_ptr(stream);
    let (values_ptr, _v) = values.device_ptr(stream);
    let (spare_keys_ptr, _sk) = spare_keys.device_ptr(stream);
    let (spare_values_ptr, _sv) = spare_values.device_ptr(stream);
    let arrays = |spare: bool| {
        if spare {
            (spare_keys_ptr, spare_values_ptr)
        } else {
            (keys_ptr, values_ptr)
        }
    };
    let (original_keys, _) = arrays(!in_spare);
    let (sorted_keys, placed_values) = arrays(in_spare);
    let values_in = if positions { 0 } else { values_ptr };
    let mut equal_tiles =
        unsafe { stream.alloc::<u32>(runs) }.during(|| format!("allocating {runs} tile flags"))?;
    let (n64, unmap) = (n as u64, if levels == 0 { map } else { 0 });
    let shared = place_shared_bytes::<K, V>(tile);
    for name in ["place_values", "place_equal_values"] {
        let f = gpu.function(&kernels::MERGE, &kv_kernel_name::<K, V>(name))?;
        gpu.allow_shared(&f, shared)?;
        let mut launch = stream.launch_builder(&f);
        launch
            .arg(&original_keys)
            .arg(&sorted_keys)
            .arg(&values_in)
            .arg(&placed_values)
            .arg(&n64)
            .arg(&map)
            .arg(&unmap)
            .arg(&mut equal_tiles);
        unsafe { launch.launch(plan::config(runs as u32, (tile / 16) as u32, shared)) }
            .during(|| format!("launching {name}"))?;
    }

    let merge_tile = merge_tile_of(tagged_bytes::<K>());
    let tiles = n.div_ceil(merge_tile) as u32;
    let mut ranks = unsafe { stream.alloc::<u64>(tiles as usize) }
        .during(|| format!("allocating {tiles} merge paths"))?;
    let co_ranks = gpu.function(&kernels::MERGE, &kernel_name::<K>("level_co_ranks_kv"))?;
    let merge = gpu.function(&kernels::MERGE, &kv_kernel_name::<K, V>("merge_level"))?;
    let merge_shared = kv_merge_shared_bytes::<K, V>();
    gpu.allow_shared(&merge, merge_shared)?;
    let mut run_len = tile as u64;
    for level in 0..levels {
        let ((src_keys, src_values), (dst_keys, dst_values)) =
            (arrays(in_spare), arrays(!in_spare));
        let level_map = if level + 1 == levels { map } else { 0 };
        let mut launch = stream.launch_builder(&co_ranks);
        launch
            .arg(&src_keys)
            .arg(&n64)
            .arg(&run_len)
            .arg(&mut ranks)
            .arg(&tiles);
        unsafe { launch.launch(search_grid(tiles)) }
            .during(|| "launching level_co_ranks_kv".into())?;
        let mut launch = stream.launch_builder(&merge);
        launch
            .arg(&src_keys)
            .arg(&src_values)
            .arg(&n64)
            .arg(&run_len)
            .arg(&ranks)
            .arg(&dst_keys)
            .arg(&dst_values)
            .arg(&level_map);
        unsafe { launch.launch(plan::config(tiles, MERGE_THREADS, merge_shared)) }
            .during(|| "launching merge_level_kv".into())?;
        in_spare = !in_spare;
        run_len *= 2;
    }
    debug_assert!(!in_spare, "the last level writes into the caller's arrays");
    Ok(())
}

/// One thread a binary search (merge paths here, splitter cuts in src/cuda/multi.rs).
pub(super) fn search_grid(count: u32) -> LaunchConfig {
    plan::config(count.div_ceil(128).max(1), 128, 0)
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

    /// kernels/merge.cu's `tree_node`: the breadth-first node of a tile's i-th smallest key.
    fn tree_node(i: usize, bits: u32) -> usize {
        let j = i + 1;
        let below = j.trailing_zeros();
        (1 << (bits - 1 - below)) + (j >> (below + 1))
    }

    /// kernels/merge.cu's `place_values` and `place_equal_values` on the CPU: the sorted tile as
    /// a search tree (the largest key left out, a short tile padded with the largest word),
    /// each key's rank from the path down it, plus the equal keys before it; the result must
    /// be the stable sorting permutation (`dest[i]`: where key i goes).
    fn model_placement(keys: &[u32], bits: u32) -> Vec<usize> {
        let t = 1usize << bits;
        let mut sorted = keys.to_vec();
        sorted.sort_unstable();
        let mut tree = vec![0u32; t];
        for i in 0..t - 1 {
            tree[tree_node(i, bits)] = sorted.get(i).copied().unwrap_or(u32::MAX);
        }
        keys.iter()
            .enumerate()
            .map(|(i, &key)| {
                let mut k = 1;
                for _ in 0..bits {
                    k = 2 * k + usize::from(tree[k] < key);
                }
                let rank = k - t;
                assert_eq!(rank, sorted.partition_point(|&s| s < key), "rank of {key}");
                rank + keys[..i].iter().filter(|&&other| other == key).count()
            })
            .collect()
    }

    #[test]
    fn placement_of_values_is_the_stable_permutation() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        for (bits, len, distinct) in [
            (4, 16, u32::MAX),
            (4, 15, 3),
            (4, 1, 9),
            (6, 64, 10),
            (6, 50, u32::MAX),
            (10, 1024, 1),
            (10, 1000, 100),
        ] {
            // Keys up to the largest word, which the padding equals.
            let keys: Vec<u32> = (0..len)
                .map(|_| match rng.random_range(0..distinct.min(1000)) {
                    0 => u32::MAX,
                    d if distinct == u32::MAX => rng.random::<u32>() | d,
                    d => d,
                })
                .collect();
            let dest = model_placement(&keys, bits);
            let mut stable: Vec<usize> = (0..len).collect();
            stable.sort_by_key(|&i| keys[i]);
            let mut placed = vec![usize::MAX; len];
            for (i, &d) in dest.iter().enumerate() {
                placed[d] = i;
            }
            assert_eq!(placed, stable, "{len} keys in a tile of 2^{bits}");
        }
    }

    #[test]
    fn shared_memory_of_the_key_value_kernels() {
        // Merge tiles: 2^12 tagged u64 words (one padding word each 16) and their values; 2^11
        // 16-byte words for 64-bit keys (one each 8).
        assert_eq!(kv_merge_shared_bytes::<u32, u32>(), 4352 * 8 + 4096 * 4);
        assert_eq!(kv_merge_shared_bytes::<u64, u64>(), 2304 * 16 + 2048 * 8);
        // Placement: the padded u32 words, or the values or keys when they are wider, then a
        // u16 place a key. Two blocks of 32-bit keys and values fit an H100's 228 KiB.
        assert_eq!(
            place_shared_bytes::<u32, u32>(1 << 14),
            (16384 + 512) * 4 + 16384 * 2
        );
        assert_eq!(
            place_shared_bytes::<u32, u64>(1 << 14),
            16384 * 8 + 16384 * 2
        );
        assert_eq!(place_shared_bytes::<u64, u32>(1 << 13), 8192 * 8 + 8192 * 2);
        // (each block also has a static list of 1040 bytes)
        assert!(2 * (place_shared_bytes::<u32, u32>(1 << 14) + 1040) <= 228 * 1024);
    }

    #[test]
    fn passes_of_a_merge_sort() {
        // 2^24 u32 keys: runs of 2^14, 10 levels, the result back in place.
        assert_eq!(merge_sort_passes::<u32>(1 << 24), 11);
        // 2^29: 15 levels, the last into the spare buffer, then the copy back.
        assert_eq!(merge_sort_passes::<u32>(1 << 29), 17);
        // One key past a power of two takes one level more.
        assert_eq!(merge_sort_passes::<u64>((1 << 23) + 1), 1 + 11 + 1);
        assert_eq!(merge_sort_passes::<[u8; 16]>(1 << 24), 1 + 12);
    }
}
