//! The key-value merge sort (kernels/merge.cu's placement and key-value merge levels):
//! [`crate::dispatch::Strategy::KeyValueMerge`], how argsorts and key-value sorts of one array
//! run. Stable: after the tuned tile sort each value moves to its key's rank in the tile
//! (equal keys by index), and the merges give each key a *tag*, its rank in the stable order of
//! the block's inputs, so equal keys keep that order and each value follows its key's tag.
//! Keys and values stay in two arrays; no pass packs, unpacks or gathers them.

use super::launch::{self, config, KeyValueArrays};
use super::merge::{self, padded_tile_bytes, search_grid, LevelSamples, MultiwayTiling};
use super::{kernel_name, kernels, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::policy::Policy;
use cudarc::driver::{CudaSlice, CudaViewMut, DevicePtr, DeviceRepr, ValidAsZeroBits};

/// Bytes of a key of K with its tag: kernels/merge.cu's `Tagged` word (a u64 for 32-bit keys,
/// a 16-byte KeyIndex for 64-bit ones).
fn tagged_bytes<K>() -> usize {
    2 * std::mem::size_of::<K>()
}

/// Output words of one block of a key-value merge level of keys K ([`Policy::kv_merge_tile_of`]).
fn kv_merge_tile<K>(policy: &Policy) -> usize {
    policy.kv_merge_tile_of(std::mem::size_of::<K>())
}

/// The dynamic shared memory of a key-value merge tile of keys K with values V: its padded
/// tagged words, then the values.
fn kv_merge_shared_bytes<K, V>(policy: &Policy) -> u32 {
    let tile = kv_merge_tile::<K>(policy);
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
/// 2^13 u64), the keys' order kept in the other array, and `place_values` moves each value to
/// where its key went (`place_equal_values` for the tiles with equal keys). Then merge levels
/// (`merge_level_kv`) between the arrays and a spare pair of the same size, the runs placed
/// where an even number of levels ends in the caller's arrays. `map` maps the keys for the
/// whole sort and back on the last store. With `positions`, `values` is output only: each
/// key's value is its position.
pub(crate) fn merge_sort_kv<K: DeviceRepr, V: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    policy: &Policy,
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
    let tile_bits = policy.tile_bits(std::mem::size_of::<K>());
    let tile = 1usize << tile_bits;
    let runs = n.div_ceil(tile);
    // The levels merge tagged words: the policy's ways for their width.
    let plan = merge::level_ways_of(policy, tagged_bytes::<K>(), n, tile);
    let levels = plan.len();
    let mut spare_keys =
        unsafe { stream.alloc::<K>(n) }.during(|| format!("allocating {n} keys to sort beside"))?;
    let spare_values = unsafe { stream.alloc::<V>(if levels > 0 { n } else { 1 }) }
        .during(|| format!("allocating {n} values to merge into"))?;
    // The runs go to the spare arrays when the levels are odd, so that the last level ends in
    // the caller's; the tile sort reads the keys and writes the spare, so the keys keep the
    // order the values are in. With even levels the runs stay in the keys, sorted in place
    // after a copy of them keeps that order in the spare.
    let mut in_spare = levels % 2 == 1;
    if !in_spare {
        stream
            .memcpy_dtod(keys, &mut spare_keys)
            .during(|| "copying the keys".into())?;
    }
    let layout = merge::run_layout(n, tile_bits);
    merge::sort_runs(
        gpu,
        policy,
        keys,
        &mut spare_keys.as_view_mut(),
        layout,
        map,
        in_spare,
    )?;

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
        let f = gpu.function_for(
            policy,
            kernels::merge_kv::<K, V>(),
            &kv_kernel_name::<K, V>(name),
        )?;
        gpu.allow_shared(&f, shared)?;
        let cfg = config(runs as u32, (tile / 16) as u32, shared);
        let keys = (original_keys, sorted_keys);
        let values = (values_in, placed_values);
        launch::place_values(
            gpu,
            &f,
            cfg,
            keys,
            values,
            (n64, map, unmap),
            &mut equal_tiles,
        )
        .during(|| format!("launching {name}"))?;
    }

    let merge_tile = kv_merge_tile::<K>(policy);
    let (splits, samples_len) = merge::level_buffers(&plan, merge_tile, n, tile);
    let mut ranks = unsafe { stream.alloc::<u64>(splits) }
        .during(|| format!("allocating {splits} merge paths"))?;
    // SAFETY: each multiway level's samples are written before its search reads them.
    let mut samples = unsafe { stream.alloc::<K>(samples_len) }
        .during(|| format!("allocating {samples_len} samples"))?;
    let mut run_len = tile;
    // Whether the last level stored this one's samples (a multiway level before a multiway one).
    let mut samples_stored = false;
    for (level, &ways) in plan.iter().enumerate() {
        let ((src_keys, src_values), (dst_keys, dst_values)) =
            (arrays(in_spare), arrays(!in_spare));
        let src = KeyValueArrays {
            keys: src_keys,
            values: src_values,
        };
        let dst = KeyValueArrays {
            keys: dst_keys,
            values: dst_values,
        };
        let level_map = if level + 1 == levels { map } else { 0 };
        if ways == 2 {
            two_way_level::<K, V>(gpu, policy, (src, dst), (n, run_len), &mut ranks, level_map)?;
            samples_stored = false;
        } else {
            let next_bits = merge::next_sample_bits(&plan, level, merge_tile, run_len);
            let level_samples = LevelSamples {
                buffer: &mut samples,
                stored: samples_stored,
                next_bits,
            };
            let sizes = (n, run_len, ways);
            multiway_level::<K, V>(
                gpu,
                policy,
                (src, dst),
                sizes,
                &mut ranks,
                level_samples,
                level_map,
            )?;
            samples_stored = next_bits.is_some();
        }
        in_spare = !in_spare;
        run_len *= ways;
    }
    debug_assert!(!in_spare, "the last level writes into the caller's arrays");
    Ok(())
}

/// One two-way level of [`merge_sort_kv`]: runs 2k and 2k + 1 of `run_len` pairs at `src`
/// merge into `dst` (`level_co_ranks_kv`, then `merge_level_kv`).
fn two_way_level<K: DeviceRepr, V: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    (src, dst): (KeyValueArrays, KeyValueArrays),
    (n, run_len): (usize, usize),
    ranks: &mut CudaSlice<u64>,
    map: u32,
) -> Result<()> {
    let tiles = n.div_ceil(kv_merge_tile::<K>(policy)) as u32;
    let co_ranks = gpu.function_for(
        policy,
        kernels::merge_kv::<K, V>(),
        &kernel_name::<K>("level_co_ranks_kv"),
    )?;
    let merge = gpu.function_for(
        policy,
        kernels::merge_kv::<K, V>(),
        &kv_kernel_name::<K, V>("merge_level"),
    )?;
    let merge_shared = kv_merge_shared_bytes::<K, V>(policy);
    gpu.allow_shared(&merge, merge_shared)?;
    let sizes = (n as u64, run_len as u64);
    launch::level_co_ranks(
        gpu,
        &co_ranks,
        search_grid(tiles),
        src.keys,
        sizes,
        ranks,
        tiles,
    )
    .during(|| "launching level_co_ranks_kv".into())?;
    let cfg = config(tiles, policy.merge_threads, merge_shared);
    launch::merge_level_kv(gpu, &merge, cfg, (src, dst), sizes, ranks, map)
        .during(|| "launching merge_level_kv".into())
}

/// One multiway level of [`merge_sort_kv`]: groups of `ways` runs of `run_len` pairs at `src`
/// merge into `dst`. The splits come from the keys alone ([`merge::multiway_splits`] with the
/// key-value module's `multiway_co_ranks_kv`), then one block a tile merges the keys
/// tagged with their tile index and moves each value by its key's tag
/// (`multiway_merge_level_kv`).
fn multiway_level<K: DeviceRepr, V: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    (src, dst): (KeyValueArrays, KeyValueArrays),
    (n, run_len, ways): (usize, usize, usize),
    ranks: &mut CudaSlice<u64>,
    mut samples: LevelSamples<K>,
    map: u32,
) -> Result<()> {
    let merge_tile = kv_merge_tile::<K>(policy);
    let tiling = MultiwayTiling::new(merge_tile, run_len, ways);
    let tiles = tiling.tiles(n, run_len, ways) as u32;
    let module = kernels::merge_kv::<K, V>();
    let keys = (src.keys, n as u64);
    let sizes = (run_len as u64, ways as u32);
    let kernels_of = (module, "_kv");
    merge::multiway_splits(
        gpu,
        policy,
        kernels_of,
        keys,
        sizes,
        (tiling, tiles),
        ranks,
        &mut samples,
    )?;
    let f = gpu.function_for(
        policy,
        module,
        &kv_kernel_name::<K, V>("multiway_merge_level"),
    )?;
    // The two tiles of tagged words the rounds merge between, then the tile's values.
    let shared = (merge::multiway_tiles_bytes(merge_tile, tagged_bytes::<K>())
        + merge_tile * std::mem::size_of::<V>()) as u32;
    gpu.allow_shared(&f, shared)?;
    let cfg = config(tiles, policy.merge_threads, shared);
    let sizes = (n as u64, run_len as u64, ways as u32);
    launch::multiway_merge_level_kv(
        gpu,
        &f,
        cfg,
        (src, dst),
        sizes,
        tiling,
        ranks,
        map,
        (samples.buffer, samples.next_bits),
    )
    .during(|| "launching multiway_merge_level_kv".into())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Merge tiles: 2^11 tagged u64 words (one padding word each 16) and their values; 2^11
        // 16-byte words for 64-bit keys (one each 8).
        assert_eq!(
            kv_merge_shared_bytes::<u32, u32>(&Policy::HOPPER),
            2176 * 8 + 2048 * 4
        );
        assert_eq!(
            kv_merge_shared_bytes::<u64, u64>(&Policy::HOPPER),
            2304 * 16 + 2048 * 8
        );
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
}
