//! The merge levels of a plan's [`Levels`], one driver for the merge sort of keys alone
//! (kernels/merge.cu `*_W`) and the key-value merge sort (`*_kv_K_V`): each level merges groups
//! of runs from one pair of arrays into the other, two-way (the merge path at every tile
//! boundary, then a block a tile) or multiway (the samples, where each tile starts in every
//! run, then a block a tile that stores the next level's samples).

use super::exec::{config, Exec};
use super::launch::merge::{self as launch, KeyValueDst, KeyValueSrc, NextSamples};
use crate::error::{CudaContext as _, Result};
use crate::kernels::abi::MultiwayTiling;
use crate::kernels::kernel_width;
use crate::kernels::{self, KernelModule};
use crate::plan::merge::multiway_tiles_bytes;
use crate::plan::{KeyValuePlan, Levels, MergeLevel};
use crate::policy::MergePolicy;
use cudarc::driver::{CudaViewMut, DeviceRepr, LaunchConfig};

/// One side of a merge: the keys, and the values when they travel with them.
pub(crate) struct Side<'a, K, V> {
    pub(crate) keys: CudaViewMut<'a, K>,
    pub(crate) values: Option<CudaViewMut<'a, V>>,
}

/// The kernels of a merge's levels: of words alone, or of keys with values.
pub(crate) struct LevelKernels {
    module: &'static KernelModule,
    co_ranks: String,
    merge: String,
    samples: String,
    multiway_co_ranks: String,
    multiway_merge: String,
    /// Dynamic shared memory of a two-way and of a multiway merge block.
    merge_shared: u32,
    multiway_shared: u32,
}

impl LevelKernels {
    /// The levels of a merge sort of words `W` in merge tiles of `tile` words.
    pub(crate) fn words<W>(tile: usize) -> LevelKernels {
        let w = kernel_width::<W>();
        let word_bytes = std::mem::size_of::<W>();
        LevelKernels {
            module: &kernels::MERGE_WORDS,
            co_ranks: format!("level_co_ranks_{w}"),
            merge: format!("merge_level_{w}"),
            samples: format!("multiway_samples_{w}"),
            multiway_co_ranks: format!("multiway_co_ranks_{w}"),
            multiway_merge: format!("multiway_merge_level_{w}"),
            merge_shared: 0,
            multiway_shared: multiway_tiles_bytes(tile, word_bytes) as u32,
        }
    }

    /// The levels of the key-value merge sort `plan`.
    pub(crate) fn key_value(plan: &KeyValuePlan) -> LevelKernels {
        let width = |bytes| if bytes == 4 { "u32" } else { "u64" };
        let (k, v) = (width(plan.key_bytes), width(plan.value_bytes));
        LevelKernels {
            module: kernels::merge_kv(plan.key_bytes, plan.value_bytes),
            co_ranks: format!("level_co_ranks_kv_{k}"),
            merge: format!("merge_level_kv_{k}_{v}"),
            samples: format!("multiway_samples_kv_{k}"),
            multiway_co_ranks: format!("multiway_co_ranks_kv_{k}"),
            multiway_merge: format!("multiway_merge_level_kv_{k}_{v}"),
            merge_shared: plan.merge_shared,
            multiway_shared: plan.multiway_shared,
        }
    }
}

/// Merges the runs in `main`, or in `spare` when `runs_in_spare`, level by level as `levels`
/// says, each level from one side into the other, with the merge paths or splits in `ranks`
/// and the multiway levels' samples in `samples`. The levels end in `main` (the plan puts the
/// runs where an even number of sides ends there); the last level's stores undo the key map.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<'a, K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    levels: &Levels,
    kernels: &LevelKernels,
    mut main: Side<'a, K, V>,
    mut spare: Side<'a, K, V>,
    runs_in_spare: bool,
    ranks: &mut CudaViewMut<u64>,
    samples: &mut CudaViewMut<K>,
) -> Result<()> {
    let mut in_spare = runs_in_spare;
    for level in &levels.levels {
        let (src, dst) = if in_spare {
            (&mut spare, &mut main)
        } else {
            (&mut main, &mut spare)
        };
        match level.multiway {
            None => two_way(x, kernels, level, (src, dst), ranks)?,
            Some(m) => {
                let next = NextSamples {
                    samples: &mut *samples,
                    bits: m.next_sample_bits,
                };
                let stored = m.samples_stored;
                multiway(
                    x,
                    kernels,
                    level,
                    m.tiling,
                    (src, dst),
                    ranks,
                    (stored, next),
                )?
            }
        }
        in_spare = !in_spare;
    }
    debug_assert!(!in_spare, "the levels end in the caller's arrays");
    Ok(())
}

/// One thread a binary search (merge paths here, splitter cuts in src/cuda/multi/).
pub(crate) fn search_grid(count: u32) -> LaunchConfig {
    config(count.div_ceil(128).max(1), 128, 0)
}

/// A two-way level: runs 2k and 2k + 1 of `src` merge into `dst`.
fn two_way<K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernels: &LevelKernels,
    level: &MergeLevel,
    (src, dst): (&mut Side<K, V>, &mut Side<K, V>),
    ranks: &mut CudaViewMut<u64>,
) -> Result<()> {
    let (tiles, run_len) = (level.tiles, level.run_len as u64);
    let co_ranks = x.function(kernels.module, &kernels.co_ranks)?;
    let keys = src.keys.as_view();
    launch::level_co_ranks(
        x,
        &co_ranks,
        search_grid(tiles),
        (&keys, run_len),
        ranks,
        tiles,
    )
    .during(|| format!("launching {}", kernels.co_ranks))?;
    let merge = x.function_sharing(kernels.module, &kernels.merge, kernels.merge_shared)?;
    let cfg = config(tiles, x.policy.merge.threads, kernels.merge_shared);
    let launched = match (&mut src.values, &mut dst.values) {
        (Some(values), Some(out_values)) => {
            let values = values.as_view();
            let from: KeyValueSrc<K, V> = (&keys, &values);
            let to: KeyValueDst<K, V> = (&mut dst.keys, out_values);
            launch::merge_level_kv(x, &merge, cfg, (from, to), run_len, ranks, level.map)
        }
        _ => {
            let arrays = (&keys, &mut dst.keys);
            launch::merge_level(x, &merge, cfg, arrays, run_len, ranks, level.map)
        }
    };
    launched.during(|| format!("launching {}", kernels.merge))
}

/// A multiway level: groups of `ways` runs of `src` merge into `dst`. The samples (gathered
/// here unless the level before stored them), then one warp a tile finds where the tile starts
/// in every run, then one block a tile merges and stores the next level's samples.
fn multiway<K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernels: &LevelKernels,
    level: &MergeLevel,
    tiling: MultiwayTiling,
    (src, dst): (&mut Side<K, V>, &mut Side<K, V>),
    ranks: &mut CudaViewMut<u64>,
    (stored, next): (bool, NextSamples<K>),
) -> Result<()> {
    let (tiles, ways) = (level.tiles, level.ways as u32);
    let sizes = (level.run_len as u64, ways);
    let keys = src.keys.as_view();
    let n = keys.len();
    if !stored {
        let f = x.function(kernels.module, &kernels.samples)?;
        let blocks = (tiling.samples(n).div_ceil(256) as u32).min(4096);
        launch::multiway_samples(
            x,
            &f,
            config(blocks, 256, 0),
            &keys,
            tiling.sample_bits,
            &mut *next.samples,
        )
        .during(|| format!("launching {}", kernels.samples))?;
    }
    let f = x.function(kernels.module, &kernels.multiway_co_ranks)?;
    let warps = MergePolicy::CO_RANKS_WARPS;
    let cfg = config(tiles.div_ceil(warps), 32 * warps, 0);
    launch::multiway_co_ranks(
        x,
        &f,
        cfg,
        &keys,
        sizes,
        &*next.samples,
        tiling,
        ranks,
        tiles,
    )
    .during(|| format!("launching {}", kernels.multiway_co_ranks))?;
    let shared = kernels.multiway_shared;
    let f = x.function_sharing(kernels.module, &kernels.multiway_merge, shared)?;
    let cfg = config(tiles, x.policy.merge.threads, shared);
    let map = level.map;
    let launched = match (&mut src.values, &mut dst.values) {
        (Some(values), Some(out_values)) => {
            let values = values.as_view();
            let from: KeyValueSrc<K, V> = (&keys, &values);
            let to: KeyValueDst<K, V> = (&mut dst.keys, out_values);
            launch::multiway_merge_level_kv(x, &f, cfg, (from, to), sizes, tiling, ranks, map, next)
        }
        _ => {
            let arrays = (&keys, &mut dst.keys);
            launch::multiway_merge_level(x, &f, cfg, arrays, sizes, tiling, ranks, map, next)
        }
    };
    launched.during(|| format!("launching {}", kernels.multiway_merge))
}
