//! Every kernel launch: one typed function a kernel family, named after it, whose parameters
//! after `(gpu, kernel, cfg)` are the kernel's own, in order, as Rust types. This is the only
//! file that launches (the only `unsafe` launches), and each launch states why its arguments
//! are the kernel's. Raw launches cudarc cannot express (thread-block clusters) are here too.
//!
//! The caller looks the kernel up ([`Gpu::function`]) by the name the doc comment gives, so a
//! family's instantiations (`_u32`, `_u64`, …) share one function.

use super::graph::{self, KernelNode};
use super::layout::{KeyIndex, RowLayout};
use super::merge::MultiwayTiling;
use super::Gpu;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    DriverError, LaunchArgs, LaunchConfig, PushKernelArg,
};

/// The one unsafe launch of a kernel whose arguments `push` adds, on `gpu`'s stream.
///
/// # Safety
/// `push` must add exactly `kernel`'s parameters, in order and type, and every buffer must
/// hold what the kernel reads and writes under `cfg`.
unsafe fn launch<'a>(
    gpu: &'a Gpu,
    kernel: &'a CudaFunction,
    cfg: LaunchConfig,
    push: impl FnOnce(&mut LaunchArgs<'a>),
) -> Result<(), DriverError> {
    let mut args = gpu.stream().launch_builder(kernel);
    push(&mut args);
    // SAFETY: the caller's contract; cudarc copies the arguments when it queues the launch
    // and records the buffers' use on the stream.
    unsafe { args.launch(cfg) }.map(drop)
}

/// A 1-D launch: `blocks` blocks of `threads` threads with `shared_bytes` of dynamic shared
/// memory.
pub(crate) fn config(blocks: u32, threads: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// The arguments of one tuned pass after the keys, the layout and the tile bits:
/// `[col_bits, lo, b_first, b_last, hi_first, stop, map]` (kernels/tuned.cu's `tuned_pass_*`).
pub(crate) type PassArgs = [u32; PASS_ARG_COUNT];
/// How many [`PassArgs`] there are.
pub(crate) const PASS_ARG_COUNT: usize = 7;

/// The arrays of a tuned pass: it reads its tiles from `source` (the keys themselves when
/// `None`) and writes them to `keys`. Only a merge sort's tile sort reads another array (its
/// spare, of the same length), so that its levels end in the caller's array.
pub(crate) struct PassArrays<'a, 'k, T> {
    pub source: Option<&'a CudaView<'a, T>>,
    pub keys: &'a mut CudaViewMut<'k, T>,
}

impl<T> PassArrays<'_, '_, T> {
    /// The device addresses `(src, keys)` of the kernel's first two parameters, and `f`
    /// called with them while the arrays' stream records hold (the guards record the reads
    /// and the write on the stream when they drop, after `f`'s launch).
    fn with_addresses<R>(&mut self, gpu: &Gpu, f: impl FnOnce(u64, u64) -> R) -> R {
        let stream = gpu.stream();
        if let Some(source) = self.source {
            assert_eq!(
                source.len(),
                self.keys.len(),
                "a source as long as the keys"
            );
            let (src, _read) = source.device_ptr(stream);
            let (keys, _write) = self.keys.device_ptr_mut(stream);
            f(src, keys)
        } else {
            let (keys, _write) = self.keys.device_ptr_mut(stream);
            f(keys, keys)
        }
    }
}

/// One launch of kernels/tuned.cu's `tuned_pass_*(src, keys, layout, tile_bits, pass
/// args…)`, in clusters of `cluster_blocks` blocks when that is more than 1.
pub(crate) fn tuned_pass<T>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    cluster_blocks: u32,
    mut arrays: PassArrays<T>,
    args: (RowLayout, u32, PassArgs),
) -> Result<(), DriverError> {
    arrays.with_addresses(gpu, |src, keys| {
        if cluster_blocks > 1 {
            return cluster::launch_pass(gpu, kernel, cfg, cluster_blocks, (src, keys), args);
        }
        let (layout, tile_bits, fields) = args;
        // SAFETY: tuned_pass_*(const T *src, T *keys, RowLayout layout, u32 tile_bits, seven u32
        // fields); the layout addresses only slots of the two arrays (RowLayout::slots), both
        // as long, and padding slots are neither read nor stored.
        unsafe {
            launch(gpu, kernel, cfg, |l| {
                l.arg(&src).arg(&keys).arg(&layout).arg(&tile_bits);
                for value in &fields {
                    l.arg(value);
                }
            })
        }
    })
}

/// The tuned passes of `fields`, each a launch of kernels/tuned.cu's `tuned_pass_*` as
/// [`tuned_pass`] makes it (no clusters), as one CUDA graph (graph.rs): the first reads
/// `arrays.source`, every later one the keys the pass before wrote.
pub(crate) fn tuned_passes_graph<T>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    mut arrays: PassArrays<T>,
    (layout, tile_bits): (RowLayout, u32),
    fields: &[PassArgs],
) -> crate::Result<()> {
    arrays.with_addresses(gpu, |src, keys| {
        let launches = fields
            .iter()
            .enumerate()
            .map(|(i, values)| {
                let mut node = KernelNode::new(kernel, cfg);
                let read = if i == 0 { src } else { keys };
                node.arg(&read).arg(&keys).arg(&layout).arg(&tile_bits);
                for value in values {
                    node.arg(value);
                }
                node
            })
            .collect();
        // SAFETY: as for `tuned_pass`: each node's arguments are tuned_pass_*'s, and the
        // layout addresses only the arrays' slots.
        unsafe { graph::launch(gpu, launches, "the tuned passes") }
    })
}

/// kernels/map_keys.cu `map_keys_{u32,u64}(keys, n, kind, descending, inverse)`: keys to
/// ascending-sortable words, or back.
pub(crate) fn map_keys<B: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &mut CudaViewMut<B>,
    (kind, descending, inverse): (u32, u32, u32),
) -> Result<(), DriverError> {
    let n = words.len() as u32;
    // SAFETY: map_keys_W(W *keys, u32 n, u32 kind, u32 descending, u32 inverse) over n words.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(words)
                .arg(&n)
                .arg(&kind)
                .arg(&descending)
                .arg(&inverse);
        })
    }
}

/// kernels/v1 … v5 `vX_block_sort_W(keys, n)`, `vX_block_merge_W(keys, n, size)` and
/// `vX_step_W(keys, n, size, stride)` (V0's `v0_step_W` too): the seed versions' launches,
/// `sizes` the stage and stride a kernel takes after `n` (none, one or two of them).
pub(crate) fn seed_kernel<B: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &mut CudaViewMut<B>,
    sizes: &[u32],
) -> Result<(), DriverError> {
    let n = keys.len() as u32;
    // SAFETY: every seed kernel takes (W *keys, u32 n) and then the stage size and the stride
    // its kind needs, which the caller passes; the kernels index below n.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(keys).arg(&n);
            for size in sizes {
                l.arg(size);
            }
        })
    }
}

/// kernels/merge.cu `co_ranks_W(a, a_len, b, b_len, ranks, count)`: the merge path of runs
/// `a` and `b` at `count` output positions (every tile boundary and the end).
pub(crate) fn co_ranks<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (a, b): (&CudaView<W>, &CudaView<W>),
    ranks: &mut CudaSlice<u64>,
    count: u32,
) -> Result<(), DriverError> {
    let (a_len, b_len) = (a.len() as u64, b.len() as u64);
    assert!(ranks.len() >= count as usize, "a merge path a position");
    // SAFETY: co_ranks_W(const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(a)
                .arg(&a_len)
                .arg(b)
                .arg(&b_len)
                .arg(ranks)
                .arg(&count);
        })
    }
}

/// kernels/merge.cu `merge_tiles_W(a, b, ranks, out, total)`: one block merges one tile of
/// `out` between the merge paths of [`co_ranks`].
pub(crate) fn merge_tiles<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (a, b): (&CudaView<W>, &CudaView<W>),
    ranks: &CudaSlice<u64>,
    out: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let total = out.len() as u64;
    assert_eq!(
        out.len(),
        a.len() + b.len(),
        "a merge writes every word of both runs"
    );
    // SAFETY: merge_tiles_W(const W *a, const W *b, const u64 *ranks, W *out, u64 total).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(a).arg(b).arg(ranks).arg(out).arg(&total);
        })
    }
}

/// kernels/merge.cu `level_co_ranks_W(keys, n, run_len, ranks, tiles)` and
/// `level_co_ranks_kv_K(…)` (keys given by device address): the merge path at every tile
/// boundary of one merge level.
pub(crate) fn level_co_ranks(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: u64,
    (n, run_len): (u64, u64),
    ranks: &mut CudaSlice<u64>,
    tiles: u32,
) -> Result<(), DriverError> {
    assert!(ranks.len() >= tiles as usize, "a merge path a tile");
    // SAFETY: level_co_ranks*(const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles), with
    // `keys` the address of n live words (the callers take it from a view of n words).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(&keys).arg(&n).arg(&run_len).arg(ranks).arg(&tiles);
        })
    }
}

/// kernels/merge.cu `merge_level_W(keys, n, run_len, ranks, out, map)`: one merge level of
/// keys alone, from `src` into `dst`, unmapping with `map` on the last.
pub(crate) fn merge_level<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (&CudaView<W>, &mut CudaViewMut<W>),
    run_len: u64,
    ranks: &CudaSlice<u64>,
    map: u32,
) -> Result<(), DriverError> {
    let n = src.len() as u64;
    assert_eq!(src.len(), dst.len(), "a level writes every word");
    // SAFETY: merge_level_W(const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out,
    // u32 map).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(src)
                .arg(&n)
                .arg(&run_len)
                .arg(ranks)
                .arg(dst)
                .arg(&map);
        })
    }
}

/// kernels/merge.cu `multiway_samples_W(keys, n, sample_bits, samples)` (or its key-value
/// part's `multiway_samples_kv_K`): every 2^sample_bits-th of the `n` words at device address
/// `keys`, the samples a multiway level's tiles start at.
pub(crate) fn multiway_samples<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, n): (u64, u64),
    sample_bits: u32,
    samples: &mut CudaSlice<W>,
) -> Result<(), DriverError> {
    assert!(n > 0 && samples.len() as u64 > (n - 1) >> sample_bits);
    // SAFETY: multiway_samples_W(const W *keys, u64 n, u32 sample_bits, W *samples) writes
    // samples[i] for i <= (n - 1) >> sample_bits, reading keys[i << sample_bits] < n; `keys`
    // holds n words (the callers' arrays).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(&keys).arg(&n).arg(&sample_bits).arg(samples);
        })
    }
}

/// kernels/merge.cu `multiway_co_ranks_W(keys, n, run_len, ways, samples, tiling, ranks,
/// tiles)` (or `multiway_co_ranks_kv_K`): where every tile of one multiway level of the `n`
/// words at device address `keys` starts in each run of its group, `ways` splits a tile,
/// from the samples of [`multiway_samples`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_co_ranks<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, n): (u64, u64),
    (run_len, ways): (u64, u32),
    samples: &CudaSlice<W>,
    tiling: MultiwayTiling,
    ranks: &mut CudaSlice<u64>,
    tiles: u32,
) -> Result<(), DriverError> {
    assert!(ranks.len() >= tiles as usize * ways as usize);
    assert!(samples.len() as u64 > (n - 1) >> tiling.sample_bits);
    // SAFETY: multiway_co_ranks_W(const W *keys, u64 n, u64 run_len, u32 ways, const W
    // *samples, MultiwayTiling tiling, u64 *ranks, u32 tiles) writes ranks[b ways + j] for
    // b < tiles and j < ways, reading the samples of every run and the n words at `keys`.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(&keys)
                .arg(&n)
                .arg(&run_len)
                .arg(&ways)
                .arg(samples)
                .arg(&tiling)
                .arg(ranks)
                .arg(&tiles);
        })
    }
}

/// kernels/merge.cu `multiway_merge_level_W(keys, n, run_len, ways, tiling, ranks, out, map,
/// next_samples, next_sample_bits)`: one multiway merge level of keys alone, from `src` into
/// `dst`, unmapping with `map` on the last, and storing every 2^`next_sample_bits`-th word
/// of its output in `next_samples` when that is `Some` (the next level's samples).
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_merge_level<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (&CudaView<W>, &mut CudaViewMut<W>),
    (run_len, ways): (u64, u32),
    tiling: MultiwayTiling,
    ranks: &CudaSlice<u64>,
    map: u32,
    (samples, next_sample_bits): (&mut CudaSlice<W>, Option<u32>),
) -> Result<(), DriverError> {
    let n = src.len() as u64;
    assert_eq!(src.len(), dst.len(), "a level writes every word");
    let next_sample_bits = next_sample_bits.unwrap_or(64);
    assert!(next_sample_bits >= 64 || samples.len() as u64 > (n - 1) >> next_sample_bits);
    // SAFETY: multiway_merge_level_W(const W *keys, u64 n, u64 run_len, u32 ways,
    // MultiwayTiling tiling, const u64 *ranks, W *out, u32 map, W *next_samples, u32
    // next_sample_bits), one block a tile, reading the splits of multiway_co_ranks for its
    // tile and the next, writing out[i] for i < n and, with next_sample_bits below 64,
    // next_samples[i >> next_sample_bits] for the multiples i of its spacing.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(src)
                .arg(&n)
                .arg(&run_len)
                .arg(&ways)
                .arg(&tiling)
                .arg(ranks)
                .arg(dst)
                .arg(&map)
                .arg(samples)
                .arg(&next_sample_bits);
        })
    }
}

/// The key and value arrays of one level of the key-value merge sort, by device address:
/// they alternate between the caller's arrays and the spare pair, level by level.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyValueArrays {
    /// Address of the keys.
    pub keys: u64,
    /// Address of the values.
    pub values: u64,
}

/// kernels/merge.cu `merge_level_kv_K_V(keys, values, n, run_len, ranks, out_keys,
/// out_values, map)`: one level of the key-value merge sort.
pub(crate) fn merge_level_kv(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (KeyValueArrays, KeyValueArrays),
    (n, run_len): (u64, u64),
    ranks: &CudaSlice<u64>,
    map: u32,
) -> Result<(), DriverError> {
    // SAFETY: merge_level_kv_K_V(const K *, const V *, u64 n, u64 run_len, const u64 *ranks,
    // K *, V *, u32 map); the four addresses are of live arrays of n keys and n values
    // (kv.rs holds their buffers across the launches).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(&src.keys)
                .arg(&src.values)
                .arg(&n)
                .arg(&run_len)
                .arg(ranks);
            l.arg(&dst.keys).arg(&dst.values).arg(&map);
        })
    }
}

/// kernels/merge.cu `multiway_merge_level_kv_K_V(keys, values, n, run_len, ways, tiling, ranks,
/// out_keys, out_values, map, next_samples, next_sample_bits)`: one multiway level of the
/// key-value merge sort, storing the next level's samples of keys K when `next_sample_bits`
/// is `Some`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_merge_level_kv<K: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (KeyValueArrays, KeyValueArrays),
    (n, run_len, ways): (u64, u64, u32),
    tiling: MultiwayTiling,
    ranks: &CudaSlice<u64>,
    map: u32,
    (samples, next_sample_bits): (&mut CudaSlice<K>, Option<u32>),
) -> Result<(), DriverError> {
    let next_sample_bits = next_sample_bits.unwrap_or(64);
    assert!(next_sample_bits >= 64 || samples.len() as u64 > (n - 1) >> next_sample_bits);
    // SAFETY: multiway_merge_level_kv_K_V(const K *keys, const V *values, u64 n, u64 run_len,
    // u32 ways, MultiwayTiling tiling, const u64 *ranks, K *out, V *out_values, u32 map, K
    // *next_samples, u32 next_sample_bits), one block a tile, reading n keys and values at
    // `src` and the splits of its tile and the next, writing n keys and values at `dst` and,
    // with next_sample_bits below 64, the samples.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(&src.keys)
                .arg(&src.values)
                .arg(&n)
                .arg(&run_len)
                .arg(&ways)
                .arg(&tiling)
                .arg(ranks)
                .arg(&dst.keys)
                .arg(&dst.values)
                .arg(&map)
                .arg(samples)
                .arg(&next_sample_bits);
        })
    }
}

/// kernels/merge.cu `place_values_K_V` and `place_equal_values_K_V(original_keys,
/// sorted_keys, values_in, placed_values, n, map, unmap, equal_tiles)`: each value moves to
/// its key's rank in its tile (`values_in` 0: each value is its key's position).
pub(crate) fn place_values(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (original_keys, sorted_keys): (u64, u64),
    (values_in, placed_values): (u64, u64),
    (n, map, unmap): (u64, u32, u32),
    equal_tiles: &mut CudaSlice<u32>,
) -> Result<(), DriverError> {
    assert!(
        equal_tiles.len() >= cfg.grid_dim.0 as usize,
        "a flag a tile"
    );
    // SAFETY: place_*values_K_V(const K *, const K *, const V *, V *, u64 n, u32 map,
    // u32 unmap, u32 *equal_tiles); the addresses are of live arrays of n keys or values (or
    // 0 for `values_in`, which the kernel then does not read).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(&original_keys)
                .arg(&sorted_keys)
                .arg(&values_in)
                .arg(&placed_values);
            l.arg(&n).arg(&map).arg(&unmap).arg(equal_tiles);
        })
    }
}

/// kernels/pairs.cu `pack_{u32,u64}(keys, pairs, n, row_len, map)`: (key, index-in-row)
/// pairs, the key mapped.
pub(crate) fn pack_pairs<B: DeviceRepr, P: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &mut CudaViewMut<B>,
    pairs: &mut CudaViewMut<P>,
    (row_len, map): (u32, u32),
) -> Result<(), DriverError> {
    let n = words.len() as u32;
    assert_eq!(words.len(), pairs.len(), "a pair a key");
    // SAFETY: pack_W(const W *keys, P *pairs, u32 n, u32 row_len, u32 map).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(words).arg(pairs).arg(&n).arg(&row_len).arg(&map);
        })
    }
}

/// kernels/pairs.cu `unpack_{u32,u64}(pairs, keys, indices, n, map)`: sorted pairs back into
/// keys (unmapped) and their indices.
pub(crate) fn unpack_pairs<B: DeviceRepr, P: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    pairs: &mut CudaViewMut<P>,
    words: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
    map: u32,
) -> Result<(), DriverError> {
    let n = words.len() as u32;
    assert!(pairs.len() == words.len() && indices.len() >= words.len());
    // SAFETY: unpack_W(const P *pairs, W *keys, u32 *indices, u32 n, u32 map).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(pairs).arg(words).arg(indices).arg(&n).arg(&map);
        })
    }
}

/// kernels/pairs.cu `gather_{u32,u64}(values, values_out, indices, n, row_len)`: each row's
/// values in the order of its indices.
pub(crate) fn gather<V: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    sources: &CudaSlice<V>,
    values: &mut CudaViewMut<V>,
    indices: &CudaSlice<u32>,
    row_len: u32,
) -> Result<(), DriverError> {
    let n = values.len() as u32;
    assert!(sources.len() == values.len() && indices.len() >= values.len());
    // SAFETY: gather_V(const V *values, V *values_out, const u32 *indices, u32 n,
    // u32 row_len); each index is below row_len, inside its row.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(sources)
                .arg(values)
                .arg(indices)
                .arg(&n)
                .arg(&row_len);
        })
    }
}

/// kernels/multi.cu `pack_kv*(keys, values, out, n, first, map[, half])`: key-value words for
/// the multi-GPU sort (keys given as their words).
pub(crate) fn pack_key_values<B: DeviceRepr, V: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, values): (&CudaView<B>, &CudaView<V>),
    out: &mut CudaSlice<KeyIndex>,
    (first, map, half): (u64, u32, Option<u32>),
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(values.len() == keys.len() && out.len() >= keys.len());
    // SAFETY: pack_kv*(const K *keys, const V *values, KeyIndex *out, u64 n, u64 first,
    // u32 map) and, for the kernels of 8-byte values, u32 half.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(keys)
                .arg(values)
                .arg(out)
                .arg(&n)
                .arg(&first)
                .arg(&map);
            if let Some(half) = &half {
                l.arg(half);
            }
        })
    }
}

/// kernels/multi.cu `unpack_kv*(words, keys, values, n, map[, half])`: sorted key-value words
/// back into keys and values.
pub(crate) fn unpack_key_values<K: DeviceRepr, V: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &CudaView<KeyIndex>,
    (keys, values): (&mut CudaSlice<K>, &mut CudaSlice<V>),
    (map, half): (u32, Option<u32>),
) -> Result<(), DriverError> {
    let n = words.len() as u64;
    assert!(keys.len() >= words.len() && values.len() >= words.len());
    // SAFETY: unpack_kv*(const KeyIndex *words, K *keys, V *values, u64 n, u32 map) and, for
    // the kernels of 8-byte values, u32 half.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(words).arg(keys).arg(values).arg(&n).arg(&map);
            if let Some(half) = &half {
                l.arg(half);
            }
        })
    }
}

/// kernels/multi.cu `fill_largest_W(keys, n)`: padding words.
pub(crate) fn fill_largest<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let n = words.len() as u64;
    // SAFETY: fill_largest_W(W *keys, u64 n).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(words).arg(&n);
        })
    }
}

/// The shape arguments of kernels/topk.cu's filter, radix select and warp sort (which reads
/// only row_len, rows, k and map), in the kernels' order after the input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TopkArgs {
    pub row_len: u64,
    pub rows: u32,
    pub chunks: u32,
    pub chunk_len: u64,
    pub k: u32,
    pub slots: u32,
    pub map: u32,
}

/// The bytes of each of the two halves of scratch that [`topk_passes`] alternates the partial
/// results of `passes` between (composites `C`, k a chunk; a multiple of 16 bytes).
pub(crate) fn topk_partials_half<'a, C>(passes: impl IntoIterator<Item = &'a TopkArgs>) -> usize {
    let most = passes
        .into_iter()
        .filter(|a| a.chunks > 1)
        .map(|a| a.rows as usize * a.chunks as usize * a.k as usize * std::mem::size_of::<C>())
        .max()
        .unwrap_or(0);
    most.next_multiple_of(16)
}

/// The passes of the filter, the radix select or the warp sort, kernels/topk.cu `topk_keys_W`,
/// `topk_partials_W`, `topk_radix_keys_W_R`, `topk_radix_partials_W_R`, `topk_radix_stream_W`,
/// `topk_sampled_W`, `topk_merge_W`, `topk_warp_sort_W_P` and `topk_warp_filter_W(input,
/// row_len, rows, chunks, chunk_len, k, slots, map, partials, values, indices)`, as one CUDA
/// graph (graph.rs), each after the one before: the first reads `input` (rows of keys `In`),
/// each later one the partial results of the one before, composites `C`, k a chunk, which
/// alternate between the two halves of `scratch` ([`topk_partials_half`]); the last, one
/// chunk a row, writes `values` and `indices`.
pub(crate) fn topk_passes<In: DeviceRepr, C: DeviceRepr, B: DeviceRepr>(
    gpu: &Gpu,
    passes: &[(CudaFunction, LaunchConfig, TopkArgs)],
    input: &CudaView<In>,
    scratch: &mut CudaSlice<u8>,
    (values, indices): (&mut CudaViewMut<B>, &mut CudaViewMut<u32>),
) -> crate::Result<()> {
    let half = topk_partials_half::<C>(passes.iter().map(|p| &p.2));
    assert!(scratch.len() >= 2 * half && !passes.is_empty());
    let (values_len, indices_len) = (values.len(), indices.len());
    let stream = gpu.stream();
    let (keys, _record_read) = input.device_ptr(stream);
    let (values_at, _record_values) = values.device_ptr_mut(stream);
    let (indices_at, _record_indices) = indices.device_ptr_mut(stream);
    let (base, _record_scratch) = scratch.device_ptr_mut(stream);
    let (null, last) = (0u64, passes.len() - 1);
    let mut readable = input.len(); // elements the pass's input holds
    let mut launches = Vec::with_capacity(passes.len());
    for (i, (kernel, cfg, a)) in passes.iter().enumerate() {
        let (rows, k) = (a.rows as usize, a.k as usize);
        assert!(
            readable >= rows * a.row_len as usize,
            "rows of row_len elements"
        );
        assert!(a.slots as usize * std::mem::size_of::<C>() <= cfg.shared_mem_bytes as usize);
        assert!(k >= 1 && (a.slots as usize).is_power_of_two() && a.slots >= a.k);
        let from = match i {
            0 => keys,
            _ => base + ((i - 1) % 2 * half) as u64,
        };
        let mut node = KernelNode::new(kernel, *cfg);
        node.arg(&from).arg(&a.row_len).arg(&a.rows).arg(&a.chunks);
        node.arg(&a.chunk_len).arg(&a.k).arg(&a.slots).arg(&a.map);
        if i < last {
            assert!(a.chunks > 1);
            node.arg(&(base + (i % 2 * half) as u64))
                .arg(&null)
                .arg(&null);
            readable = rows * a.chunks as usize * k;
        } else {
            assert!(a.chunks == 1 && values_len >= rows * k && indices_len >= rows * k);
            node.arg(&null).arg(&values_at).arg(&indices_at);
        }
        launches.push(node);
    }
    // SAFETY: each node's arguments are its kernel's, in order and type (above): it reads
    // rows x row_len elements of its input (the keys, or the partial results of the pass
    // before: checked above), writes chunks x k partials a row to its half of the scratch (at
    // most `half` bytes: `topk_partials_half`), or, the last pass, k values and indices a row
    // (checked above), the other outputs null and unused; and keeps `slots` composites in its
    // dynamic shared memory (checked above; src/cuda/topk.rs sizes it).
    unsafe { graph::launch(gpu, launches, "the top-k's passes") }
}

/// The shape of the spread select's launches (kernels/topk.cu `topk_spread_*`): rows of
/// `row_len` keys, each gathered in `chunks` chunks of `chunk_len`, keeping `k`, the select's
/// sort over `slots` composites, key map `map`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpreadArgs {
    pub row_len: u64,
    pub rows: u32,
    pub chunks: u32,
    pub chunk_len: u64,
    pub k: u32,
    pub slots: u32,
    pub map: u32,
    /// The samples that a row's threshold is reached by, and the blocks that sample a row.
    pub rank: u32,
    pub sample_blocks: u32,
}

/// Where the spread select keeps its intermediate results, carved from one buffer: each row's
/// `capacity` candidate composites `C` better than its threshold and as many tied with it (at
/// the start, aligned for `C`), its threshold, count and ties (three u32: kernels/topk.cu
/// `SpreadRow`), each chunk's count of ties, and, where several blocks sample a row, their
/// lists of `rank` words each. Offsets in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpreadScratch {
    rows: usize,
    chunk_ties: usize,
    lists: usize,
    end: usize,
}

impl SpreadScratch {
    pub fn new<C>(a: &SpreadArgs, capacity: usize) -> SpreadScratch {
        let rows = a.rows as usize;
        let candidates = rows * 2 * capacity * std::mem::size_of::<C>();
        let chunk_ties = candidates + 3 * rows * 4;
        let lists = chunk_ties + rows * a.chunks as usize * 4;
        let listed = match a.sample_blocks {
            1 => 0,
            blocks => rows * blocks as usize * a.rank as usize,
        };
        SpreadScratch {
            rows: candidates,
            chunk_ties,
            lists,
            end: lists + listed * 4,
        }
    }

    /// The bytes it takes.
    pub fn bytes(&self) -> usize {
        self.end
    }
}

/// The spread select's kernels (kernels/topk.cu `topk_spread_*_W`): the sample, the threshold
/// (where several blocks sample a row, else `None`), the gather and the select, each with its
/// launch shape.
pub(crate) struct SpreadKernels<'k> {
    pub sample: (&'k CudaFunction, LaunchConfig),
    pub threshold: Option<(&'k CudaFunction, LaunchConfig)>,
    pub gather: (&'k CudaFunction, LaunchConfig),
    pub select: (&'k CudaFunction, LaunchConfig),
}

/// The spread select of `input`'s rows into `values` and `indices` (k a row), its intermediate
/// results in `scratch` (at least [`SpreadScratch::bytes`] of `a` and `capacity` candidates a
/// row), as one CUDA graph of three or four launches (graph.rs), each after the one before:
/// - `topk_spread_sample_W(input, row_len, rows, rank, map, sample_blocks, spread, lists)`: each
///   row's threshold from a sample of it, its count and ties zeroed; or, where several blocks
///   sample a row, their lists;
/// - `topk_spread_threshold_W(rows, rank, sample_blocks, lists, spread)`: each row's threshold
///   from its sample blocks' lists, its count and ties zeroed;
/// - `topk_spread_gather_W(input, row_len, rows, chunks, chunk_len, map, spread, candidates,
///   chunk_ties)`: the keys of every chunk better than their row's threshold to the row's
///   candidates, those equal to it to its ties, and each chunk's count of ties;
/// - `topk_spread_select_W(input, row_len, rows, chunks, chunk_len, k, slots, map, spread,
///   candidates, chunk_ties, values, indices)`: each row's k best of its candidates and ties
///   (the ties placed in order where they overflowed, or the row filtered where the gather
///   missed), sorted.
pub(crate) fn topk_spread<W: DeviceRepr, C: DeviceRepr>(
    gpu: &Gpu,
    kernels: SpreadKernels,
    input: &CudaView<W>,
    a: SpreadArgs,
    (scratch, capacity): (&mut CudaSlice<u8>, usize),
    (values, indices): (&mut CudaViewMut<W>, &mut CudaViewMut<u32>),
) -> crate::Result<()> {
    let (rows, k) = (a.rows as usize, a.k as usize);
    assert!(input.len() >= rows * a.row_len as usize);
    assert!(values.len() >= rows * k && indices.len() >= rows * k);
    assert!(k >= 1 && (a.slots as usize).is_power_of_two() && a.slots >= a.k);
    assert!(a.rank >= 1 && a.sample_blocks >= 1);
    assert!(kernels.threshold.is_some() == (a.sample_blocks > 1));
    let shared = kernels.select.1.shared_mem_bytes as usize;
    assert!(a.slots as usize * std::mem::size_of::<C>() <= shared);
    assert!(capacity * std::mem::size_of::<C>() <= shared && a.chunks as usize * 4 <= shared);
    let layout = SpreadScratch::new::<C>(&a, capacity);
    assert!(scratch.len() >= layout.bytes());
    let stream = gpu.stream();
    let (input, _record_read) = input.device_ptr(stream);
    let (values, _record_values) = values.device_ptr_mut(stream);
    let (indices, _record_indices) = indices.device_ptr_mut(stream);
    let (base, _record_scratch) = scratch.device_ptr_mut(stream);
    let (candidates, spread) = (base, base + layout.rows as u64);
    let (chunk_ties, lists) = (base + layout.chunk_ties as u64, base + layout.lists as u64);

    let mut launches = Vec::with_capacity(4);
    // Where the sample's, the gather's and the select's parameters begin: the rows of keys.
    let rows_of_keys = |(kernel, cfg): (&CudaFunction, LaunchConfig)| {
        let mut node = KernelNode::new(kernel, cfg);
        node.arg(&input).arg(&a.row_len).arg(&a.rows);
        node
    };
    let mut sample = rows_of_keys(kernels.sample);
    sample.arg(&a.rank).arg(&a.map).arg(&a.sample_blocks);
    sample.arg(&spread).arg(&lists);
    launches.push(sample);
    if let Some((kernel, cfg)) = kernels.threshold {
        let mut threshold = KernelNode::new(kernel, cfg);
        threshold.arg(&a.rows).arg(&a.rank).arg(&a.sample_blocks);
        threshold.arg(&lists).arg(&spread);
        launches.push(threshold);
    }
    let mut gather = rows_of_keys(kernels.gather);
    gather.arg(&a.chunks).arg(&a.chunk_len).arg(&a.map);
    gather.arg(&spread).arg(&candidates).arg(&chunk_ties);
    launches.push(gather);
    let mut select = rows_of_keys(kernels.select);
    select.arg(&a.chunks).arg(&a.chunk_len).arg(&a.k);
    select.arg(&a.slots).arg(&a.map).arg(&spread);
    select.arg(&candidates).arg(&chunk_ties);
    select.arg(&values).arg(&indices);
    launches.push(select);
    // SAFETY: each node's arguments are its kernel's, in order and type (above). The sample
    // reads samples of rows x row_len keys (checked above) and writes a SpreadRow a row, or,
    // with several sample blocks, rank words a block a row of the lists; the threshold reads
    // those lists (at most its SPREAD_LISTED words a row, which src/cuda/topk.rs
    // `spread_plan` keeps to) and writes a SpreadRow a row; the gather reads the keys and a
    // SpreadRow a row, counts in it, and writes at most the kernel's SPREAD_CAPACITY
    // (`capacity`) better candidates and as many ties a row and a count of ties a chunk; the
    // select reads all those and writes k values and indices a row (checked above), keeping
    // its candidates, the filter's slots, `slots` composites and a u32 a chunk in its dynamic
    // shared memory (checked above; src/cuda/topk.rs sizes it). The scratch holds every part
    // (`layout`, checked above).
    unsafe { graph::launch(gpu, launches, "the spread select") }
}

/// kernels/topk.cu `topk_take_W(src, row_len, dst, k, count)`: the first k elements of each
/// row of `row_len` of `src`, k a row into `dst`.
pub(crate) fn topk_take<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    src: &CudaView<W>,
    (row_len, k): (u64, u64),
    dst: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let count = dst.len() as u64;
    assert!(k <= row_len && count % k == 0 && src.len() as u64 >= count / k * row_len);
    // SAFETY: topk_take_W(const W *src, u64 row_len, W *dst, u64 k, u64 count): reads the
    // first k of count / k rows of src (checked above), writes count elements of dst.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(src).arg(&row_len).arg(dst).arg(&k).arg(&count);
        })
    }
}

/// kernels/multi.cu `take_W(keys, positions, out, count)`: the words at `positions`.
pub(crate) fn take<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaSlice<W>,
    positions: &CudaSlice<u64>,
    out: &mut CudaSlice<W>,
) -> Result<(), DriverError> {
    let count = positions.len() as u32;
    assert!(out.len() >= positions.len(), "a word a position");
    // SAFETY: take_W(const W *keys, const u64 *positions, W *out, u32 count); the positions
    // are inside `keys` (the caller's sample positions).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(keys).arg(positions).arg(out).arg(&count);
        })
    }
}

/// kernels/multi.cu `count_below_W(keys, n, queries, upper, out, count)`: for each query, how
/// many of the first `n` sorted words lie below it (or at most it, where `upper` says so).
pub(crate) fn count_below<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, n): (&CudaSlice<W>, u64),
    (queries, upper): (&CudaSlice<W>, &CudaSlice<u32>),
    out: &mut CudaSlice<u64>,
) -> Result<(), DriverError> {
    let count = queries.len() as u32;
    assert!(keys.len() as u64 >= n && upper.len() == queries.len() && out.len() >= queries.len());
    // SAFETY: count_below_W(const W *keys, u64 n, const W *queries, const u32 *upper,
    // u64 *out, u32 count).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(keys)
                .arg(&n)
                .arg(queries)
                .arg(upper)
                .arg(out)
                .arg(&count);
        })
    }
}

/// kernels/multi.cu `fill_random_W(keys, n, first, seed)`: the random words of global
/// positions `first ..`.
pub(crate) fn fill_random<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &mut CudaViewMut<W>,
    (first, seed): (u64, u64),
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    // SAFETY: fill_random_W(W *keys, u64 n, u64 first, u64 seed).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(&first).arg(&seed);
        })
    }
}

/// kernels/multi.cu `check_sorted_W(keys, n, sums)`: a hash sum of the words and a count of
/// descents, added into `sums[0..2]`.
pub(crate) fn check_sorted<W: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    sums: &mut CudaSlice<u64>,
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(sums.len() >= 2, "two sums");
    // SAFETY: check_sorted_W(const W *keys, u64 n, u64 *sums).
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(sums);
        })
    }
}

/// Launches in thread-block clusters, which cudarc's launch builder cannot express (cudarc
/// 0.19.10, the newest, has no cluster launch, and its cluster occupancy query passes no
/// cluster dimension): the raw driver calls (wrapped in driver.rs), each with its safety
/// argument.
pub(crate) mod cluster {
    use super::super::driver;
    use super::super::layout::RowLayout;
    use super::super::Gpu;
    use super::PassArgs;
    use crate::error::CudaContext as _;
    use crate::error::Result;
    use cudarc::driver::sys::{self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
    use cudarc::driver::{CudaFunction, DriverError, LaunchConfig};
    use std::ffi::c_void;

    fn raw_config(
        gpu: &Gpu,
        cfg: LaunchConfig,
        attribute: &mut CUlaunchAttribute,
    ) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: gpu.stream().cu_stream(),
            attrs: attribute,
            numAttrs: 1,
        }
    }

    fn cluster_attribute(blocks: u32) -> CUlaunchAttribute {
        // SAFETY: an all-zero attribute is valid; the union's cluster field is set below.
        let mut attribute: CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attribute.value.clusterDim.x = blocks;
        attribute.value.clusterDim.y = 1;
        attribute.value.clusterDim.z = 1;
        attribute
    }

    /// Whether the device can run clusters of `blocks` blocks of this shape (the answer is
    /// cached per kernel and shape: the query costs more than a small sort's launch).
    pub(crate) fn fits(
        gpu: &Gpu,
        kernel: &CudaFunction,
        cfg: LaunchConfig,
        blocks: u32,
    ) -> Result<bool> {
        let key = (
            kernel.cu_function() as usize,
            cfg.block_dim.0,
            cfg.shared_mem_bytes,
            blocks,
        );
        if let Some(&known) = gpu
            .cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(known);
        }
        if blocks > 8 {
            // Beyond the portable 8 a kernel must opt in.
            kernel
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
                .during(|| format!("allowing clusters of {blocks} blocks"))?;
        }
        let mut attribute = cluster_attribute(blocks);
        let query = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            ..cfg
        };
        let raw = raw_config(gpu, query, &mut attribute);
        gpu.context()
            .bind_to_thread()
            .during(|| "binding the CUDA context".into())?;
        // SAFETY: valid function and config; `attribute` outlives the call.
        let clusters = unsafe { driver::occupancy_max_active_clusters(kernel.cu_function(), &raw) };
        // An error here (a driver without clusters, say) means: do not use them.
        let fits = matches!(clusters, Ok(n) if n > 0);
        gpu.cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, fits);
        Ok(fits)
    }

    /// One tuned pass in clusters of `blocks` blocks: kernels/tuned.cu's `tuned_pass_*` with
    /// `(src, keys)` (device addresses of live arrays, which the caller's stream records
    /// hold) and `(layout, tile_bits, [col_bits, lo, b_first, b_last, hi_first, stop, map])`.
    pub(crate) fn launch_pass(
        gpu: &Gpu,
        kernel: &CudaFunction,
        cfg: LaunchConfig,
        blocks: u32,
        (mut src, mut keys): (u64, u64),
        args: (RowLayout, u32, PassArgs),
    ) -> std::result::Result<(), DriverError> {
        let (mut layout, mut tile_bits, mut fields) = args;
        gpu.context().bind_to_thread()?;
        let mut params: Vec<*mut c_void> = vec![
            &mut src as *mut _ as *mut c_void,
            &mut keys as *mut _ as *mut c_void,
            &mut layout as *mut _ as *mut c_void,
            &mut tile_bits as *mut _ as *mut c_void,
        ];
        params.extend(fields.iter_mut().map(|f| f as *mut u32 as *mut c_void));
        let mut attribute = cluster_attribute(blocks);
        let raw = raw_config(gpu, cfg, &mut attribute);
        // SAFETY: the parameters match the kernel's signature and live until the call returns
        // (the driver copies them); the caller keeps the arrays alive and recorded on the
        // stream across the launch.
        unsafe { driver::launch_kernel_ex(&raw, kernel.cu_function(), &mut params) }
    }
}

/// kernels/map_keys.cu `widen_16(keys, words, n, kind)` and `narrow_16(words, keys, n,
/// kind)`: 16-bit keys to the `u32` words the GPU sorts in their place, or back; `S` and `D`
/// are the 2- and 4-byte element types, either way round.
pub(crate) fn convert_16<S: DeviceRepr, D: DeviceRepr>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    src: &CudaView<S>,
    dst: &mut CudaViewMut<D>,
    kind: u32,
) -> Result<(), DriverError> {
    let sizes = (std::mem::size_of::<S>(), std::mem::size_of::<D>());
    assert!(
        matches!(sizes, (2, 4) | (4, 2)) && src.len() == dst.len(),
        "16-bit keys and as many u32 words"
    );
    let n = src.len() as u32;
    // SAFETY: widen_16(const u16 *, u32 *, u32 n, u32 kind) and narrow_16(const u32 *, u16 *,
    // u32 n, u32 kind) read n elements of `src` and write n of `dst`, of the sizes asserted.
    unsafe {
        launch(gpu, kernel, cfg, |l| {
            l.arg(src).arg(dst).arg(&n).arg(&kind);
        })
    }
}
