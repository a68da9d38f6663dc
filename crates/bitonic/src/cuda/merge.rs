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

use super::kernels::KernelModule;
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

/// The most words one group of a multiway level may span: its search keeps positions in 32
/// bits (kernels/merge/multiway.cuh), so larger groups merge two runs at a time.
const MULTIWAY_GROUP_MAX: usize = u32::MAX as usize;

/// How a multiway level cuts each group of its runs into tiles (kernels/merge/multiway.cuh's
/// `MultiwayTiling`): every 2^`sample_bits`-th word of each run is a sample, and tile t of a
/// group starts at the first sample past `tile_samples` t samples of the group's stable
/// merge; a full group has `group_tiles` tiles.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MultiwayTiling {
    pub sample_bits: u32,
    pub tile_samples: u32,
    pub group_tiles: u32,
}

// SAFETY: three u32s, laid out as the kernels' struct.
unsafe impl DeviceRepr for MultiwayTiling {}

impl MultiwayTiling {
    /// The tiling of a level that merges `ways` runs of `run_len` words (a multiple of
    /// `tile / 16`) in tiles of at most `tile` words. A tile of `tile_samples` S words (S the
    /// spacing) starts and ends within (ways - 1)(S - 1) words of where the samples put it
    /// (kernels/merge/multiway.cuh's `multiway_co_ranks`), so with S = tile / (16 ways)
    /// every tile fits and tiles hold about 15/16 of `tile` words on average.
    pub(crate) fn new(tile: usize, run_len: usize, ways: usize) -> Self {
        let spacing = (tile / (16 * ways)).max(1);
        assert!(
            ways.is_power_of_two() && spacing.is_power_of_two() && run_len % spacing == 0,
            "a multiway level of {ways} runs of {run_len} in tiles of {tile}"
        );
        let tile_samples = (tile - (ways - 1) * (spacing - 1)) / spacing;
        let group_samples = run_len * ways / spacing;
        MultiwayTiling {
            sample_bits: spacing.trailing_zeros(),
            tile_samples: tile_samples as u32,
            group_tiles: group_samples.div_ceil(tile_samples) as u32,
        }
    }

    /// Words between samples.
    pub(crate) fn spacing(&self) -> usize {
        1 << self.sample_bits
    }

    /// Samples of `n` words: every run's (runs start at multiples of the spacing).
    pub(crate) fn samples(&self, n: usize) -> usize {
        n.div_ceil(self.spacing())
    }

    /// The launch of `multiway_samples` over `n` words (a grid-stride loop).
    pub(crate) fn samples_grid(&self, n: usize) -> LaunchConfig {
        config((self.samples(n).div_ceil(256) as u32).min(4096), 256, 0)
    }

    /// The launch of `multiway_co_ranks` for `tiles` tiles: one warp a tile, in blocks of
    /// kernels/merge/multiway.cuh's `CO_RANKS_WARPS` (4).
    pub(crate) fn co_ranks_grid(tiles: u32) -> LaunchConfig {
        const CO_RANKS_WARPS: u32 = 4;
        config(tiles.div_ceil(CO_RANKS_WARPS), 32 * CO_RANKS_WARPS, 0)
    }

    /// Tiles of a level over `n` words in groups of `ways` runs of `run_len`: every full
    /// group's, and the last group's.
    pub(crate) fn tiles(&self, n: usize, run_len: usize, ways: usize) -> usize {
        let span = run_len * ways;
        let last = self.samples(n % span).div_ceil(self.tile_samples as usize);
        n / span * self.group_tiles as usize + last
    }
}

/// How many runs each level of a merge sort of words `W` merges at once, from runs of
/// `run_len` words to one run of `n`: the policy's most for the word size
/// ([`Policy::merge_ways_of`]), fewer when fewer runs are left, and two where a group of more
/// would span over [`MULTIWAY_GROUP_MAX`] words. A level of two ways is the two-way bitonic
/// level; more ways, a multiway level. A plan that would end in one two-way level after
/// multiway ones merges twice the ways in its first level instead, where that is at most
/// [`Policy::fold_ways`]: one level fewer, for one more round in the first.
pub(crate) fn level_ways<W>(policy: &Policy, n: usize, run_len: usize) -> Vec<usize> {
    level_ways_of(policy, std::mem::size_of::<W>(), n, run_len)
}

/// [`level_ways`] for words of `word_bytes`.
pub(crate) fn level_ways_of(
    policy: &Policy,
    word_bytes: usize,
    n: usize,
    run_len: usize,
) -> Vec<usize> {
    let most = policy.merge_ways_of(word_bytes) as usize;
    let plan = plan_levels(n, run_len, most, most);
    let levels = plan.len();
    let ends_in_two_way = levels >= 2 && plan[levels - 1] == 2 && plan[levels - 2] > 2;
    let doubled = 2 * plan.first().copied().unwrap_or(1) as u32;
    if ends_in_two_way && doubled <= policy.fold_ways && Policy::MERGE_WAYS.contains(&doubled) {
        let folded = plan_levels(n, run_len, 2 * plan[0], most);
        if folded.len() < levels {
            return folded;
        }
    }
    plan
}

/// Levels from runs of `run_len` to one run of `n`, each merging as many runs as are left up
/// to `most` (`first_most` in the first level), two where a group would pass
/// [`MULTIWAY_GROUP_MAX`] words.
fn plan_levels(n: usize, mut run_len: usize, first_most: usize, most: usize) -> Vec<usize> {
    let mut ways = Vec::new();
    while run_len < n {
        let runs = n.div_ceil(run_len);
        let cap = if ways.is_empty() { first_most } else { most };
        let mut w = cap.min(runs.next_power_of_two()).max(2);
        if run_len.saturating_mul(w).min(n) > MULTIWAY_GROUP_MAX {
            w = 2;
        }
        ways.push(w);
        run_len = run_len.saturating_mul(w);
    }
    ways
}

/// Merges the sorted runs of `run_len` words (the last may be shorter) in `keys`, or in
/// `spare` when `runs_in_spare`, level by level (`plan`: [`level_ways`] of them), one launch
/// pair a level, each level from one buffer into the other (both as long). Returns whether
/// the sorted words ended in `spare`. `run_len` must be a power of two at least half a merge
/// tile, so that no tile spans two groups of runs, and below `keys.len()`. The last level's
/// stores undo the key map `map`.
fn merge_levels<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    plan: &[usize],
    (mut run_len, runs_in_spare): (usize, bool),
    map: u32,
) -> Result<bool> {
    let n = keys.len();
    assert_eq!(spare.len(), n, "the spare buffer holds every word");
    assert!(run_len.is_power_of_two() && 2 * run_len >= merge_tile_len::<W>(policy) && run_len < n);
    let stream = gpu.stream();
    let tile = merge_tile_len::<W>(policy);
    debug_assert_eq!(plan, level_ways::<W>(policy, n, run_len));
    let (splits, samples_len) = level_buffers(plan, tile, n, run_len);
    let mut ranks = unsafe { stream.alloc::<u64>(splits) }
        .during(|| format!("allocating {splits} merge paths"))?;
    // SAFETY: each multiway level's samples are written before its search reads them.
    let mut samples = unsafe { stream.alloc::<W>(samples_len) }
        .during(|| format!("allocating {samples_len} samples"))?;
    let mut in_spare = runs_in_spare;
    // Whether the last level stored this one's samples (a multiway level before a multiway one).
    let mut samples_stored = false;
    for (level, &ways) in plan.iter().enumerate() {
        let level_map = if level + 1 == plan.len() { map } else { 0 };
        let (src, mut dst) = if in_spare {
            (spare.as_view(), keys.slice_mut(..))
        } else {
            (keys.as_view(), spare.slice_mut(..))
        };
        if ways == 2 {
            merge_level(gpu, policy, &src, &mut dst, run_len, &mut ranks, level_map)?;
            samples_stored = false;
        } else {
            let next_sample_bits = next_sample_bits(plan, level, tile, run_len);
            let level_samples = LevelSamples {
                buffer: &mut samples,
                stored: samples_stored,
                next_bits: next_sample_bits,
            };
            let sizes = (run_len, ways);
            multiway_level(
                gpu,
                policy,
                &src,
                &mut dst,
                sizes,
                &mut ranks,
                level_samples,
                level_map,
            )?;
            samples_stored = next_sample_bits.is_some();
        }
        in_spare = !in_spare;
        run_len *= ways;
    }
    Ok(in_spare)
}

/// The buffers the levels `plan` of a merge sort of `n` words from runs of `run_len` need, in
/// merge tiles of `tile` words: (merge paths or splits, samples), the most any level takes.
/// Two-way levels need one merge path a tile, multiway levels one split a tile and run and
/// the runs' samples.
pub(crate) fn level_buffers(
    plan: &[usize],
    tile: usize,
    n: usize,
    run_len: usize,
) -> (usize, usize) {
    let (mut splits, mut samples) = (n.div_ceil(tile).max(1), 0);
    let mut level_run = run_len;
    for &ways in plan {
        if ways > 2 {
            let tiling = MultiwayTiling::new(tile, level_run, ways);
            splits = splits.max(tiling.tiles(n, level_run, ways) * ways);
            samples = samples.max(tiling.samples(n));
        }
        level_run *= ways;
    }
    (splits, samples.max(1))
}

/// The spacing (log2) of the samples that level `level` of `plan` (runs of `run_len` into
/// merge tiles of `tile` words) stores for the next one, when that is a multiway level.
pub(crate) fn next_sample_bits(
    plan: &[usize],
    level: usize,
    tile: usize,
    run_len: usize,
) -> Option<u32> {
    match plan.get(level + 1) {
        Some(&next) if next > 2 => {
            Some(MultiwayTiling::new(tile, run_len * plan[level], next).sample_bits)
        }
        _ => None,
    }
}

/// The samples of a multiway level in `buffer`: already `stored` by the level before, or to
/// gather; and the spacing of the next level's, which this level stores, when `next_bits` is
/// `Some` (a multiway level next).
pub(crate) struct LevelSamples<'a, W> {
    pub(crate) buffer: &'a mut CudaSlice<W>,
    pub(crate) stored: bool,
    pub(crate) next_bits: Option<u32>,
}

/// Shared-memory bytes of a multiway merge block: the two padded tiles its rounds merge
/// between, each with a slack word after it (kernels/merge/multiway.cuh).
fn multiway_shared_bytes<W>(policy: &Policy) -> u32 {
    let word = std::mem::size_of::<W>();
    multiway_tiles_bytes(merge_tile_len::<W>(policy), word) as u32
}

/// Bytes of the two padded tiles of `tile` words of `word_bytes` that a multiway merge's
/// rounds merge between, each with a slack word after it.
pub(crate) fn multiway_tiles_bytes(tile: usize, word_bytes: usize) -> usize {
    2 * (padded_tile_bytes(tile, word_bytes) + word_bytes)
}

/// The first two steps of a multiway level over the `n` words at device address `keys` (a
/// key-value level's keys), in groups of `ways` runs of `run_len`: the samples gathered
/// (`multiway_samples`) unless the level before stored them, then one warp a tile finds where
/// the tile starts in every run (`multiway_co_ranks`), into `ranks`. The kernels come from
/// `module`, their names ending in `kind` before the word type ("" for words alone, "_kv" in
/// a key-value module).
#[allow(clippy::too_many_arguments)]
pub(crate) fn multiway_splits<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    (module, kind): (&'static KernelModule, &str),
    keys: (u64, u64),
    sizes: (u64, u32),
    (tiling, tiles): (MultiwayTiling, u32),
    ranks: &mut CudaSlice<u64>,
    samples: &mut LevelSamples<W>,
) -> Result<()> {
    if !samples.stored {
        let name = kernel_name::<W>(&format!("multiway_samples{kind}"));
        let f = gpu.function_for(policy, module, &name)?;
        let cfg = tiling.samples_grid(keys.1 as usize);
        launch::multiway_samples(gpu, &f, cfg, keys, tiling.sample_bits, samples.buffer)
            .during(|| format!("launching {name}"))?;
    }
    let name = kernel_name::<W>(&format!("multiway_co_ranks{kind}"));
    let f = gpu.function_for(policy, module, &name)?;
    let cfg = MultiwayTiling::co_ranks_grid(tiles);
    launch::multiway_co_ranks(
        gpu,
        &f,
        cfg,
        keys,
        sizes,
        samples.buffer,
        tiling,
        ranks,
        tiles,
    )
    .during(|| format!("launching {name}"))
}

/// One multiway level of [`merge_levels`]: runs `ways` k … `ways` k + ways - 1 of `src`
/// merge into `dst`. [`multiway_splits`] finds where each tile starts in every run, then one
/// block a tile merges (`multiway_merge_level`), storing the next level's samples.
#[allow(clippy::too_many_arguments)]
fn multiway_level<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    src: &CudaView<W>,
    dst: &mut CudaViewMut<W>,
    (run_len, ways): (usize, usize),
    ranks: &mut CudaSlice<u64>,
    mut samples: LevelSamples<W>,
    map: u32,
) -> Result<()> {
    let tiling = MultiwayTiling::new(merge_tile_len::<W>(policy), run_len, ways);
    let tiles = tiling.tiles(src.len(), run_len, ways) as u32;
    let sizes = (run_len as u64, ways as u32);
    let (address, _record_read) = src.device_ptr(gpu.stream());
    let keys = (address, src.len() as u64);
    let kernels_of = (&kernels::MERGE_WORDS, "");
    multiway_splits(
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
        &kernels::MERGE_WORDS,
        &kernel_name::<W>("multiway_merge_level"),
    )?;
    let shared = multiway_shared_bytes::<W>(policy);
    gpu.allow_shared(&f, shared)?;
    let cfg = config(tiles, policy.merge_threads, shared);
    let next = (samples.buffer, samples.next_bits);
    launch::multiway_merge_level(gpu, &f, cfg, (src, dst), sizes, tiling, ranks, map, next)
        .during(|| "launching multiway_merge_level".into())
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

/// log2 of the runs a [`merge_sort`] of `n` words `W` starts from
/// ([`Policy::merge_run_bits`]).
fn run_bits<W>(policy: &Policy, n: usize) -> u32 {
    policy.merge_run_bits(std::mem::size_of::<W>(), n)
}

/// The runs of 2^`run_bits` words that the tile sort of a merge sort of `n` words sorts
/// ([`Policy::merge_run_bits`]; a key-value merge sort's are whole tiles), or the whole array
/// when it fits one.
pub(crate) fn run_layout(n: usize, run_bits: u32) -> RowLayout {
    if n <= 1 << run_bits {
        RowLayout::rows(n, n)
    } else {
        RowLayout::runs(n, run_bits)
    }
}

/// Sorts one array of words as a [`merge_sort`], the key map `map` folded into the tile
/// sort's loads and the last merge level's stores. Without memory for its spare buffer it
/// sorts with the network's passes instead, which need none.
pub(crate) fn sort_by_merging<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    map: u32,
) -> Result<()> {
    let n = keys.len();
    // SAFETY: the spare buffer is written by the tile sort or a merge level before it is read.
    let Ok(mut spare) = (unsafe { gpu.stream().alloc::<W>(n) }) else {
        return passes::tuned(gpu, policy, keys, RowLayout::rows(n, n), map);
    };
    merge_sort(gpu, policy, keys, &mut spare.as_view_mut(), map)
}

/// Passes over the array of a [`merge_sort`] of `n` words: the tile sort and one a merge
/// level ([`level_ways`]).
pub(crate) fn merge_sort_passes<W>(policy: &Policy, n: usize) -> usize {
    1 + level_ways::<W>(policy, n, 1 << run_bits::<W>(policy, n)).len()
}

/// The tile sort of a merge sort: the tuned passes sort the runs of `layout`, mapping the keys
/// on their loads (`map`) and leaving them mapped, in place in `keys`, or, with `into_spare`,
/// from `keys` into `spare` (as long; `keys` stays as it was), so that an odd number of
/// levels after it ends in `keys`.
pub(crate) fn sort_runs<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    layout: RowLayout,
    map: u32,
    into_spare: bool,
) -> Result<()> {
    if into_spare {
        passes::tuned_keeping_map(gpu, policy, Some(&keys.as_view()), spare, layout, map, true)
    } else {
        passes::tuned_keeping_map(gpu, policy, None, keys, layout, map, true)
    }
}

/// Sorts `keys` (more than one run of them) as a merge sort of tile sorts: the tuned passes
/// sort runs of 2^[`Policy::merge_run_bits`] words (on Hopper a tile of 2^14 u32; past 2^21
/// u64 keys half a tile), mapping the keys on their loads, then [`merge_levels`] merges the
/// runs through `spare` and unmaps on the last level's stores. The sorted words end in `keys`:
/// when the levels are odd, the tile sort reads `keys` and writes its runs to `spare`, so that
/// the last level writes the destination and nothing is copied back.
pub(crate) fn merge_sort<W: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<W>,
    spare: &mut CudaViewMut<W>,
    map: u32,
) -> Result<()> {
    let n = keys.len();
    let run_bits = run_bits::<W>(policy, n);
    let plan = level_ways::<W>(policy, n, 1 << run_bits);
    let runs_in_spare = plan.len() % 2 == 1;
    sort_runs(
        gpu,
        policy,
        keys,
        spare,
        run_layout(n, run_bits),
        map,
        runs_in_spare,
    )?;
    let in_spare = merge_levels(
        gpu,
        policy,
        keys,
        spare,
        &plan,
        (1 << run_bits, runs_in_spare),
        map,
    )?;
    debug_assert!(!in_spare, "an even number of buffer swaps ends in the keys");
    Ok(())
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

    /// A key and the position it started at, ordered by the key alone: a merge that keeps
    /// equal keys in their runs' order leaves their tags rising.
    #[derive(Clone, Copy, Debug)]
    struct Tagged(u32, u32);
    impl PartialEq for Tagged {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }
    impl Eq for Tagged {}
    impl PartialOrd for Tagged {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Tagged {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0.cmp(&other.0)
        }
    }

    /// kernels/merge/multiway.cuh's `multiway_co_ranks` on the CPU for one tile boundary: how
    /// many words of each run come before output position `d` of their stable merge, found as
    /// the kernel finds them — a word of the widest window as the pivot (aimed two rounds of
    /// three, the middle the third), its counts
    /// in every window, the windows narrowed — until every window is closed.
    fn model_splits<T: Copy + Ord>(runs: &[&[T]], d: usize) -> Vec<usize> {
        let ways = runs.len();
        let mut lo = vec![0; ways];
        let mut hi: Vec<usize> = runs.iter().map(|r| r.len().min(d)).collect();
        for round in 0.. {
            let widest =
                (0..ways).fold(0, |w, j| if hi[j] - lo[j] > hi[w] - lo[w] { j } else { w });
            let widest_len = hi[widest] - lo[widest];
            if widest_len == 0 {
                break;
            }
            let open: usize = (0..ways).map(|j| hi[j] - lo[j]).sum();
            let below: usize = lo.iter().sum();
            let at = if round % 3 != 2 {
                (widest_len as f32 * ((d - below) as f32 / open as f32)) as usize
            } else {
                widest_len / 2
            };
            let pivot = lo[widest] + at.min(widest_len - 1);
            let c = runs[widest][pivot];
            let counts: Vec<usize> = (0..ways)
                .map(|j| {
                    let window = &runs[j][lo[j]..hi[j]];
                    match j.cmp(&widest) {
                        std::cmp::Ordering::Less => lo[j] + window.partition_point(|w| *w <= c),
                        std::cmp::Ordering::Equal => pivot,
                        std::cmp::Ordering::Greater => lo[j] + window.partition_point(|w| *w < c),
                    }
                })
                .collect();
            let before = counts.iter().sum::<usize>() < d;
            for j in 0..ways {
                if before {
                    lo[j] = lo[j].max(counts[j] + usize::from(j == widest));
                } else {
                    hi[j] = hi[j].min(counts[j]);
                }
            }
        }
        lo
    }

    /// kernels/merge/multiway.cuh's `merge_round`: `threads` threads of `e` outputs each merge
    /// the pairs of segment groups of `width` (segments `seg[s] .. seg[s + 1]` of `from`).
    fn model_round<T: Copy + Ord>(from: &[T], seg: &[usize], width: usize, e: usize) -> Vec<T> {
        let ways = seg.len() - 1;
        let pair = |p: usize| {
            let at = |s: usize| seg[s.min(ways)];
            (
                at(2 * p * width),
                at((2 * p + 1) * width),
                at((2 * p + 2) * width),
            )
        };
        let len = from.len();
        let mut to = from.to_vec();
        for thread in 0..len.div_ceil(e) {
            let mut out = thread * e;
            let stop = len.min(out + e);
            let mut p = 0;
            let (mut a, mut b, mut end) = pair(0);
            while end <= out {
                p += 1;
                (a, b, end) = pair(p);
            }
            let k = co_rank(&from[a..b], &from[b..end], out - a);
            let (mut ai, mut bi) = (a + k, b + (out - a - k));
            while out < stop {
                if out == end {
                    while end == out {
                        p += 1;
                        (a, b, end) = pair(p);
                    }
                    (ai, bi) = (a, b);
                }
                let take_a = bi == end || (ai < b && from[ai] <= from[bi]);
                to[out] = if take_a { from[ai] } else { from[bi] };
                if take_a {
                    ai += 1;
                } else {
                    bi += 1;
                }
                out += 1;
            }
        }
        to
    }

    /// kernels/merge/multiway.cuh's `multiway_co_ranks` on the CPU for one tile start: the
    /// runs' split at their pivot, the first sample (every `spacing`-th word of a run) past
    /// `m_target` samples of their stable merge. The samples' split comes from
    /// [`model_splits`]; each run's split from a search in the window of `spacing` words
    /// it bounds.
    fn model_tile_start<T: Copy + Ord>(
        runs: &[&[T]],
        spacing: usize,
        m_target: usize,
    ) -> Vec<usize> {
        let sampled: Vec<Vec<T>> = runs
            .iter()
            .map(|r| r.iter().step_by(spacing).copied().collect())
            .collect();
        let views: Vec<&[T]> = sampled.iter().map(Vec::as_slice).collect();
        let m = model_splits(&views, m_target);
        let pivot_run = (0..runs.len())
            .filter(|&j| m[j] < sampled[j].len())
            .min_by_key(|&j| (sampled[j][m[j]], j))
            .expect("a sample past the split");
        let c = sampled[pivot_run][m[pivot_run]];
        (0..runs.len())
            .map(|j| {
                if j == pivot_run || m[j] == 0 {
                    return m[j] * spacing;
                }
                let (first, last) = (
                    (m[j] - 1) * spacing + 1,
                    (m[j] * spacing).min(runs[j].len()),
                );
                let window = &runs[j][first..last];
                first
                    + if j < pivot_run {
                        window.partition_point(|w| *w <= c)
                    } else {
                        window.partition_point(|w| *w < c)
                    }
            })
            .collect()
    }

    /// One multiway level on the CPU, as kernels/merge/multiway.cuh runs it: the splits at
    /// every tile start ([`MultiwayTiling`], [`model_tile_start`]), then each tile's segments
    /// loaded in run order and merged in rounds by threads of `e` outputs. Checks that every
    /// tile fits in `tile` words.
    fn model_multiway_level<T: Copy + Ord>(
        keys: &[T],
        run_len: usize,
        ways: usize,
        tile: usize,
        e: usize,
    ) -> Vec<T> {
        let n = keys.len();
        let tiling = MultiwayTiling::new(tile, run_len, ways);
        let group_tiles = tiling.group_tiles as usize;
        let tiles = tiling.tiles(n, run_len, ways);
        let group_of = |b: usize| {
            let start = b / group_tiles * (run_len * ways);
            (start, (run_len * ways).min(n - start))
        };
        let runs_of = |start: usize, len: usize| -> Vec<&[T]> {
            (0..ways)
                .map(|j| {
                    let begin = (j * run_len).min(len);
                    &keys[start + begin..start + begin + run_len.min(len - begin)]
                })
                .collect()
        };
        let splits: Vec<Vec<usize>> = (0..tiles)
            .map(|b| {
                let t = b % group_tiles;
                if t == 0 {
                    return vec![0; ways];
                }
                let (start, len) = group_of(b);
                let m_target = t * tiling.tile_samples as usize;
                model_tile_start(&runs_of(start, len), tiling.spacing(), m_target)
            })
            .collect();
        let mut out = Vec::with_capacity(n);
        for (b, from) in splits.iter().enumerate() {
            let (start, len) = group_of(b);
            let runs = runs_of(start, len);
            let to: Vec<usize> = if (b + 1) % group_tiles == 0 || b + 1 == tiles {
                runs.iter().map(|r| r.len()).collect()
            } else {
                splits[b + 1].clone()
            };
            assert_eq!(
                out.len(),
                start + from.iter().sum::<usize>(),
                "tile {b} starts where the last ended"
            );
            let mut seg = vec![0];
            let mut words = Vec::new();
            for j in 0..ways {
                words.extend_from_slice(&runs[j][from[j]..to[j]]);
                seg.push(words.len());
            }
            assert!(words.len() <= tile, "tile {b} of {} words", words.len());
            let mut width = 1;
            while width < len.div_ceil(run_len) {
                words = model_round(&words, &seg, width, e);
                width *= 2;
            }
            out.extend(words);
        }
        assert_eq!(out.len(), n);
        out
    }

    /// Sorted runs of random keys below `distinct`, of the lengths `lens`.
    fn random_sorted_runs(
        rng: &mut impl rand::Rng,
        lens: impl Iterator<Item = usize>,
        distinct: u32,
    ) -> Vec<Vec<u32>> {
        lens.map(|len| {
            let mut run: Vec<u32> = (0..len).map(|_| rng.random_range(0..distinct)).collect();
            run.sort_unstable();
            run
        })
        .collect()
    }

    /// The split of `runs` at every output position of their stable merge (by key, then run,
    /// then position): element d is how many words of each run the first d outputs hold.
    fn stable_merge_splits(runs: &[Vec<u32>]) -> Vec<Vec<usize>> {
        let mut merged: Vec<(u32, usize, usize)> = runs
            .iter()
            .enumerate()
            .flat_map(|(j, r)| r.iter().enumerate().map(move |(i, &k)| (k, j, i)))
            .collect();
        merged.sort_unstable();
        let mut split = vec![0; runs.len()];
        let mut splits = vec![split.clone()];
        for &(_, j, _) in &merged {
            split[j] += 1;
            splits.push(split.clone());
        }
        splits
    }

    #[test]
    fn multiway_tile_starts_are_merge_paths_near_their_samples() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        for (ways, spacing) in [(2, 8), (4, 8), (8, 4), (8, 32), (16, 2), (32, 1), (32, 4)] {
            for distinct in [1, 3, 1000, u32::MAX] {
                // Runs of one length but the last (a level's last group), some sample-less.
                let run_len = 16 * spacing;
                let lens: Vec<usize> = (0..ways)
                    .map(|j| {
                        if j + 1 < ways {
                            run_len
                        } else {
                            rng.random_range(0..run_len)
                        }
                    })
                    .collect();
                let runs = random_sorted_runs(&mut rng, lens.into_iter(), distinct);
                let splits = stable_merge_splits(&runs);
                let views: Vec<&[u32]> = runs.iter().map(Vec::as_slice).collect();
                let samples: usize = runs.iter().map(|r| r.len().div_ceil(spacing)).sum();
                for m_target in 1..samples {
                    let got = model_tile_start(&views, spacing, m_target);
                    let d: usize = got.iter().sum();
                    let want = &splits[d];
                    let what = format!(
                        "{ways} ways, spacing {spacing}, {distinct} keys, {m_target} samples"
                    );
                    assert_eq!(&got, want, "{what}");
                    assert!(d <= spacing * m_target, "{what}: starts at {d}");
                    assert!(
                        d + (ways - 1) * (spacing - 1) >= spacing * m_target,
                        "{what}: starts at {d}"
                    );
                }
            }
        }
    }

    #[test]
    fn multiway_splits_match_a_stable_merge() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        for ways in [2, 4, 8, 16, 32] {
            for distinct in [1, 3, 1000, u32::MAX] {
                // Runs of different lengths, some empty (a level's last group).
                let lens: Vec<usize> = (0..ways)
                    .map(|j| {
                        if j % 5 == 3 {
                            0
                        } else {
                            rng.random_range(0..200)
                        }
                    })
                    .collect();
                let runs = random_sorted_runs(&mut rng, lens.into_iter(), distinct);
                let views: Vec<&[u32]> = runs.iter().map(Vec::as_slice).collect();
                for (d, want) in stable_merge_splits(&runs).into_iter().enumerate() {
                    assert_eq!(
                        model_splits(&views, d),
                        want,
                        "{ways} ways, {distinct} keys, d {d}"
                    );
                }
            }
        }
    }

    #[test]
    fn multiway_levels_on_the_model_sort_stably() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(12);
        // Runs of 256 merged in tiles of at most 512 by threads of 16 (a tile never spans
        // two groups; samples every 8, 4, 2 and 1 words for 4 to 32 ways): whole groups, a
        // last group of fewer runs, a short last run, few distinct keys.
        for ways in [4, 8, 16, 32] {
            for (n, distinct) in [
                (256, 9),
                (257, 1000),
                (1000, 3),
                (1024, 1000),
                (1025, 1),
                (3333, 50),
                (9000, 7),
                (8192, 1 << 20),
            ] {
                let mut keys: Vec<Tagged> = (0..n)
                    .map(|i| Tagged(rng.random_range(0..distinct), i as u32))
                    .collect();
                let mut expected = keys.clone();
                expected.sort_by_key(|t| t.0); // stable
                for run in keys.chunks_mut(256) {
                    run.sort_by_key(|t| t.0);
                }
                let policy = Policy {
                    merge_ways: ways as u32,
                    ..Policy::HOPPER
                };
                // (A two-way step runs the bitonic level on the GPU, modelled above; the
                // multiway model merges two runs too.)
                let mut run_len = 256;
                for w in level_ways::<u32>(&policy, n, 256) {
                    keys = model_multiway_level(&keys, run_len, w, 512, 16);
                    run_len *= w;
                }
                let got: Vec<(u32, u32)> = keys.iter().map(|t| (t.0, t.1)).collect();
                let want: Vec<(u32, u32)> = expected.iter().map(|t| (t.0, t.1)).collect();
                assert_eq!(got, want, "{ways} ways, {n} keys");
            }
        }
    }

    #[test]
    fn level_plans() {
        let p = |ways| Policy {
            merge_ways: ways,
            wide_merge_ways: 2,
            fold_ways: 2,
            ..Policy::HOPPER
        };
        // 2^10 runs of 2^14: three eight-way levels and a two-way one.
        assert_eq!(level_ways::<u32>(&p(8), 1 << 24, 1 << 14), [8, 8, 8, 2]);
        assert_eq!(level_ways::<u32>(&p(16), 1 << 24, 1 << 14), [16, 16, 4]);
        assert_eq!(level_ways::<u32>(&p(2), 1 << 16, 1 << 14), [2, 2]);
        // Three runs left take a four-way level; one key past a run, a two-way one.
        assert_eq!(level_ways::<u32>(&p(8), 3 << 14, 1 << 14), [4]);
        assert_eq!(level_ways::<u32>(&p(8), (1 << 14) + 1, 1 << 14), [2]);
        assert!(level_ways::<u32>(&p(8), 1 << 14, 1 << 14).is_empty());
        // Groups past 2^32 - 1 words merge two runs at a time (the search's 32-bit positions).
        assert_eq!(
            level_ways::<u32>(&p(8), 1 << 34, 1 << 14),
            [8, 8, 8, 8, 8, 2, 2, 2, 2, 2]
        );
        assert_eq!(level_ways::<u32>(&p(8), 1 << 32, 1 << 29), [2, 2, 2]);
        assert_eq!(level_ways::<u32>(&p(8), (1 << 32) - 1, 1 << 29), [8]);
        // 8-byte words take wide_merge_ways: Hopper's 16 for 2^24 u64 keys in runs of 2^13.
        assert_eq!(level_ways::<u64>(&p(8), 1 << 24, 1 << 13), [2; 11]);
        assert_eq!(
            level_ways::<u64>(&Policy::HOPPER, 1 << 24, 1 << 13),
            [16, 16, 8]
        );
        // Hopper folds a trailing two-way level into a sixteen-way first one (fold_ways), and
        // only a trailing one: not a four-way one, nor the two-way levels of huge groups.
        let hopper = |n, run_len| level_ways::<u32>(&Policy::HOPPER, n, run_len);
        assert_eq!(hopper(1 << 24, 1 << 14), [16, 8, 8]);
        assert_eq!(hopper(1 << 21, 1 << 14), [16, 8]);
        assert_eq!(hopper((1 << 17) + 1, 1 << 14), [16]);
        assert_eq!(hopper(1 << 25, 1 << 14), [8, 8, 8, 4]);
        assert_eq!(hopper(1 << 29, 1 << 14), [8, 8, 8, 8, 8]);
        assert_eq!(hopper((1 << 14) + 1, 1 << 14), [2]);
        assert_eq!(hopper(1 << 34, 1 << 14), [8, 8, 8, 8, 8, 2, 2, 2, 2, 2]);
        // 8-byte words: sixteen ways, which fold_ways (16) does not double.
        assert_eq!(
            level_ways::<u64>(&Policy::HOPPER, (1 << 24) + 1, 1 << 12),
            [16, 16, 16, 2]
        );
    }

    #[test]
    fn passes_of_a_merge_sort() {
        const TWO: Policy = Policy {
            merge_ways: 2,
            wide_merge_ways: 2,
            ..Policy::HOPPER
        };
        // 2^24 u32 keys: runs of 2^14, 10 levels, the result back in place.
        assert_eq!(merge_sort_passes::<u32>(&TWO, 1 << 24), 11);
        // 2^29: 15 levels, the tile sort into the spare buffer so that the last ends in place.
        assert_eq!(merge_sort_passes::<u32>(&TWO, 1 << 29), 16);
        // One key past a power of two takes one level more (u64 above 2^21: runs of 2^12).
        assert_eq!(merge_sort_passes::<u64>(&TWO, (1 << 23) + 1), 1 + 12);
        assert_eq!(merge_sort_passes::<[u8; 16]>(&TWO, 1 << 24), 1 + 12);
        // Eight ways: 2^24 in 8, 8, 8, 2; 2^29 in five eight-way levels.
        const EIGHT: Policy = Policy {
            merge_ways: 8,
            wide_merge_ways: 8,
            fold_ways: 2,
            ..Policy::HOPPER
        };
        assert_eq!(merge_sort_passes::<u32>(&EIGHT, 1 << 24), 1 + 4);
        assert_eq!(merge_sort_passes::<u32>(&EIGHT, 1 << 29), 1 + 5);
        assert_eq!(merge_sort_passes::<u64>(&EIGHT, (1 << 23) + 1), 1 + 4);
        // Hopper's u64: 2^24 in runs of 2^12 and three sixteen-way levels; 2^21 in whole
        // tiles (2^13) and two.
        assert_eq!(merge_sort_passes::<u64>(&Policy::HOPPER, 1 << 24), 1 + 3);
        assert_eq!(merge_sort_passes::<u64>(&Policy::HOPPER, 1 << 21), 1 + 2);
        // Hopper's u32: 2^24 in 16, 8, 8 (the two-way level folded into the first).
        assert_eq!(merge_sort_passes::<u32>(&Policy::HOPPER, 1 << 24), 1 + 3);
    }
}
