//! The merge kernels (kernels/merge.cu): merge paths, two-way and multiway levels of keys
//! alone and of keys with values, and the value placement.

use super::launch;
use crate::cuda::exec::Exec;
use crate::kernels::abi::MultiwayTiling;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtrMut, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg,
};

/// kernels/merge.cu `co_ranks_W(a, a_len, b, b_len, ranks, count)`: the merge path of runs
/// `a` and `b` at `count` output positions (every tile boundary and the end).
pub(crate) fn co_ranks<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (a, b): (&CudaView<W>, &CudaView<W>),
    ranks: &mut CudaViewMut<u64>,
    count: u32,
) -> Result<(), DriverError> {
    let (a_len, b_len) = (a.len() as u64, b.len() as u64);
    assert!(ranks.len() >= count as usize, "a merge path a position");
    // SAFETY: co_ranks_W(const W *a, u64 a_len, const W *b, u64 b_len, u64 *ranks, u32 count).
    unsafe {
        launch(x, kernel, cfg, |l| {
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
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (a, b): (&CudaView<W>, &CudaView<W>),
    ranks: &CudaViewMut<u64>,
    out: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let total = out.len() as u64;
    assert_eq!(out.len(), a.len() + b.len(), "a merge writes both runs");
    assert!(
        ranks.len() > cfg.grid_dim.0 as usize,
        "a merge path a tile and the end"
    );
    let ranks = ranks.as_view();
    // SAFETY: merge_tiles_W(const W *a, const W *b, const u64 *ranks, W *out, u64 total).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(a).arg(b).arg(&ranks).arg(out).arg(&total);
        })
    }
}

/// kernels/merge.cu `level_co_ranks_W(keys, n, run_len, ranks, tiles)` and
/// `level_co_ranks_kv_K(…)`: the merge path at every tile boundary of one merge level of
/// `keys`.
pub(crate) fn level_co_ranks<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, run_len): (&CudaView<W>, u64),
    ranks: &mut CudaViewMut<u64>,
    tiles: u32,
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(ranks.len() >= tiles as usize, "a merge path a tile");
    // SAFETY: level_co_ranks*(const W *keys, u64 n, u64 run_len, u64 *ranks, u32 tiles) reads
    // the n keys and writes a merge path a tile.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(&run_len).arg(ranks).arg(&tiles);
        })
    }
}

/// kernels/merge.cu `merge_level_W(keys, n, run_len, ranks, out, map)`: one merge level of
/// keys alone, from `src` into `dst`, unmapping with `map` on the last.
pub(crate) fn merge_level<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (&CudaView<W>, &mut CudaViewMut<W>),
    run_len: u64,
    ranks: &CudaViewMut<u64>,
    map: u32,
) -> Result<(), DriverError> {
    let n = src.len() as u64;
    assert_eq!(src.len(), dst.len(), "a level writes every word");
    assert!(
        ranks.len() >= cfg.grid_dim.0 as usize,
        "a merge path a tile"
    );
    let ranks = ranks.as_view();
    // SAFETY: merge_level_W(const W *keys, u64 n, u64 run_len, const u64 *ranks, W *out,
    // u32 map).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(src)
                .arg(&n)
                .arg(&run_len)
                .arg(&ranks)
                .arg(dst)
                .arg(&map);
        })
    }
}

/// kernels/merge.cu `multiway_samples_W(keys, n, sample_bits, samples)` (or its key-value
/// part's `multiway_samples_kv_K`): every 2^sample_bits-th of `keys`, the samples a multiway
/// level's tiles start at.
pub(crate) fn multiway_samples<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    sample_bits: u32,
    samples: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(n > 0 && samples.len() as u64 > (n - 1) >> sample_bits);
    // SAFETY: multiway_samples_W(const W *keys, u64 n, u32 sample_bits, W *samples) writes
    // samples[i] for i <= (n - 1) >> sample_bits, reading keys[i << sample_bits] < n.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(&sample_bits).arg(samples);
        })
    }
}

/// kernels/merge.cu `multiway_co_ranks_W(keys, n, run_len, ways, samples, tiling, ranks,
/// tiles)` (or `multiway_co_ranks_kv_K`): where every tile of one multiway level of `keys`
/// starts in each run of its group, `ways` splits a tile, from the samples of
/// [`multiway_samples`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_co_ranks<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    (run_len, ways): (u64, u32),
    samples: &CudaViewMut<W>,
    tiling: MultiwayTiling,
    ranks: &mut CudaViewMut<u64>,
    tiles: u32,
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(ranks.len() >= tiles as usize * ways as usize);
    assert!(n > 0 && samples.len() as u64 > (n - 1) >> tiling.sample_bits);
    let samples = samples.as_view();
    // SAFETY: multiway_co_ranks_W(const W *keys, u64 n, u64 run_len, u32 ways, const W
    // *samples, MultiwayTiling tiling, u64 *ranks, u32 tiles) writes ranks[b ways + j] for
    // b < tiles and j < ways, reading the samples of every run and the n keys.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(&run_len).arg(&ways);
            l.arg(&samples).arg(&tiling).arg(ranks).arg(&tiles);
        })
    }
}

/// The next level's samples that a multiway level stores as it merges: every
/// 2^`bits`-th word of its output into `samples`, when `bits` is `Some`.
pub(crate) struct NextSamples<'s, 'a, W> {
    pub(crate) samples: &'s mut CudaViewMut<'a, W>,
    pub(crate) bits: Option<u32>,
}

impl<W> NextSamples<'_, '_, W> {
    /// The kernels' `next_sample_bits`: 64 stores none. Checks that the samples of `n`
    /// words fit.
    fn bits_for(&self, n: u64) -> u32 {
        let bits = self.bits.unwrap_or(64);
        assert!(bits >= 64 || self.samples.len() as u64 > (n - 1) >> bits);
        bits
    }
}

/// kernels/merge.cu `multiway_merge_level_W(keys, n, run_len, ways, tiling, ranks, out, map,
/// next_samples, next_sample_bits)`: one multiway merge level of keys alone, from `src` into
/// `dst`, unmapping with `map` on the last, and storing the next level's samples.
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_merge_level<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (&CudaView<W>, &mut CudaViewMut<W>),
    (run_len, ways): (u64, u32),
    tiling: MultiwayTiling,
    ranks: &CudaViewMut<u64>,
    map: u32,
    next: NextSamples<W>,
) -> Result<(), DriverError> {
    let n = src.len() as u64;
    assert_eq!(src.len(), dst.len(), "a level writes every word");
    let next_sample_bits = next.bits_for(n);
    let ranks = ranks.as_view();
    // SAFETY: multiway_merge_level_W(const W *keys, u64 n, u64 run_len, u32 ways,
    // MultiwayTiling tiling, const u64 *ranks, W *out, u32 map, W *next_samples, u32
    // next_sample_bits), one block a tile, reading the splits of multiway_co_ranks for its
    // tile and the next, writing out[i] for i < n and, with next_sample_bits below 64,
    // next_samples[i >> next_sample_bits] for the multiples i of its spacing (checked above).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(src)
                .arg(&n)
                .arg(&run_len)
                .arg(&ways)
                .arg(&tiling)
                .arg(&ranks);
            l.arg(dst)
                .arg(&map)
                .arg(next.samples)
                .arg(&next_sample_bits);
        })
    }
}

/// The keys and values a key-value level reads: as many of each.
pub(crate) type KeyValueSrc<'s, 'a, K, V> = (&'s CudaView<'a, K>, &'s CudaView<'a, V>);

/// The keys and values a key-value level writes: as many of each.
pub(crate) type KeyValueDst<'s, 't, 'a, 'b, K, V> =
    (&'s mut CudaViewMut<'a, K>, &'t mut CudaViewMut<'b, V>);

/// Checks that a key-value level's four arrays hold as many elements as its keys.
fn same_lengths<K, V>(src: &KeyValueSrc<K, V>, dst: &KeyValueDst<K, V>) -> u64 {
    let n = src.0.len();
    assert!(src.1.len() == n && dst.0.len() == n && dst.1.len() == n);
    n as u64
}

/// kernels/merge.cu `merge_level_kv_K_V(keys, values, n, run_len, ranks, out_keys,
/// out_values, map)`: one level of the key-value merge sort.
pub(crate) fn merge_level_kv<K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (KeyValueSrc<K, V>, KeyValueDst<K, V>),
    run_len: u64,
    ranks: &CudaViewMut<u64>,
    map: u32,
) -> Result<(), DriverError> {
    let n = same_lengths(&src, &dst);
    assert!(
        ranks.len() >= cfg.grid_dim.0 as usize,
        "a merge path a tile"
    );
    let ranks = ranks.as_view();
    // SAFETY: merge_level_kv_K_V(const K *, const V *, u64 n, u64 run_len, const u64 *ranks,
    // K *, V *, u32 map) over arrays of n keys and n values (checked above).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(src.0).arg(src.1).arg(&n).arg(&run_len).arg(&ranks);
            l.arg(dst.0).arg(dst.1).arg(&map);
        })
    }
}

/// kernels/merge.cu `multiway_merge_level_kv_K_V(keys, values, n, run_len, ways, tiling,
/// ranks, out_keys, out_values, map, next_samples, next_sample_bits)`: one multiway level of
/// the key-value merge sort, storing the next level's samples of keys.
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_merge_level_kv<K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, dst): (KeyValueSrc<K, V>, KeyValueDst<K, V>),
    (run_len, ways): (u64, u32),
    tiling: MultiwayTiling,
    ranks: &CudaViewMut<u64>,
    map: u32,
    next: NextSamples<K>,
) -> Result<(), DriverError> {
    let n = same_lengths(&src, &dst);
    let next_sample_bits = next.bits_for(n);
    let ranks = ranks.as_view();
    // SAFETY: multiway_merge_level_kv_K_V(const K *keys, const V *values, u64 n, u64 run_len,
    // u32 ways, MultiwayTiling tiling, const u64 *ranks, K *out, V *out_values, u32 map, K
    // *next_samples, u32 next_sample_bits), one block a tile, reading n keys and values and
    // the splits of its tile and the next, writing n keys and values and, with
    // next_sample_bits below 64, the samples (checked above).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(src.0).arg(src.1).arg(&n).arg(&run_len).arg(&ways);
            l.arg(&tiling).arg(&ranks).arg(dst.0).arg(dst.1).arg(&map);
            l.arg(next.samples).arg(&next_sample_bits);
        })
    }
}

/// Where the value placement takes the values from.
pub(crate) enum Values<'s, 'a, V> {
    /// None: each value is its key's position (an argsort).
    Positions,
    /// Another array.
    From(&'s CudaView<'a, V>),
    /// The array they are placed into, a tile at a time (each block reads its tile's values
    /// into shared memory before it writes them).
    InPlace,
}

/// kernels/merge.cu `place_values_K_V` and `place_equal_values_K_V(original_keys,
/// sorted_keys, values_in, placed_values, n, map, unmap, equal_tiles)`: each value moves to
/// its key's rank in its tile: the keys before the tile sort and after it, the values and
/// where they go.
pub(crate) fn place_values<K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (original_keys, sorted_keys): (&CudaView<K>, &mut CudaViewMut<K>),
    (values, placed_values): (Values<V>, &mut CudaViewMut<V>),
    (map, unmap): (u32, u32),
    equal_tiles: &mut CudaViewMut<u32>,
) -> Result<(), DriverError> {
    let n = original_keys.len();
    assert!(sorted_keys.len() == n && placed_values.len() == n);
    if let Values::From(values) = &values {
        assert_eq!(values.len(), n, "a value a key");
    }
    assert!(
        equal_tiles.len() >= cfg.grid_dim.0 as usize,
        "a flag a tile"
    );
    let n = n as u64;
    let no_values = 0u64;
    let (placed, _write) = placed_values.device_ptr_mut(x.stream);
    // SAFETY: place_*values_K_V(const K *, K *, const V *, V *, u64 n, u32 map, u32 unmap,
    // u32 *equal_tiles) over arrays of n keys and n values (checked above): values_in null
    // when each value is its key's position (the kernel then reads none), or the placed
    // array itself, which each block reads a tile of before it writes that tile.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(original_keys).arg(sorted_keys);
            match values {
                Values::Positions => l.arg(&no_values),
                Values::From(values) => l.arg(values),
                Values::InPlace => l.arg(&placed),
            };
            l.arg(&placed)
                .arg(&n)
                .arg(&map)
                .arg(&unmap)
                .arg(equal_tiles);
        })
    }
}
