//! The merge sort of tile sorts and the key-value merge sort: their runs, their levels (how
//! many runs each merges, two-way or multiway) and the buffers the levels need.
//!
//! A merge sort's tile sort makes sorted runs (src/plan/passes.rs); each level merges groups
//! of runs from one array into the other, so the runs go to the spare array when the levels
//! are odd and the last level ends in the caller's. A two-way level finds the merge path at
//! every tile boundary; a multiway level finds where each tile starts in every run from
//! samples of the runs ([`MultiwayTiling`]), and stores the next level's samples as it merges.
//! docs/design/merge-sort.md explains both.

use super::passes::{plan_passes, PassPlan};
use super::workspace::{Scratch, Workspace};
use crate::device::DeviceFacts;
use crate::error::Result;
use crate::kernels::abi::{MultiwayTiling, RowLayout};
use crate::policy::{MergePolicy, Policy};

/// One merge level: groups of `ways` runs of `run_len` words merge into runs of
/// `ways × run_len`, a block a tile of output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeLevel {
    /// Runs a group merges: 2 for the two-way bitonic level, more for a multiway one.
    pub ways: usize,
    /// Words of each run it merges (the last may be shorter).
    pub run_len: usize,
    /// Blocks: one a tile of output.
    pub tiles: u32,
    /// A multiway level's tiling and samples; `None` for a two-way level.
    pub(crate) multiway: Option<Multiway>,
    /// The key map its stores undo (the last level's; 0 elsewhere).
    pub(crate) map: u32,
}

/// A multiway level's tiling, and whether its samples were stored by the level before and
/// whether it stores the next level's (at that spacing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Multiway {
    pub(crate) tiling: MultiwayTiling,
    pub(crate) samples_stored: bool,
    pub(crate) next_sample_bits: Option<u32>,
}

/// The levels of a merge from runs of `run_len` words to one run of `n`, in merge tiles of
/// `tile` words, and the most merge paths (or splits) and samples any level needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Levels {
    /// Output words a merge block writes.
    pub tile: usize,
    /// The levels, first to last.
    pub levels: Vec<MergeLevel>,
    /// u64 merge paths or splits of the level that needs most.
    pub(crate) splits: usize,
    /// Samples of the multiway level that needs most.
    pub(crate) samples: usize,
}

impl Levels {
    /// How many runs each level merges.
    pub fn ways(&self) -> Vec<usize> {
        self.levels.iter().map(|l| l.ways).collect()
    }

    /// Whether the runs go to the spare array: an odd number of levels, so that the last
    /// ends in the caller's.
    pub fn runs_in_spare(&self) -> bool {
        self.levels.len() % 2 == 1
    }
}

/// A merge sort of one array of words: the tile sort that makes the runs, then the levels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergePlan {
    /// Bytes of a word: 4, 8, or 16 (key-index pairs).
    pub word_bytes: usize,
    /// The tile sort of runs of 2^run_bits words, keys mapped on load and left mapped.
    pub runs: PassPlan,
    /// log2 of a run's words.
    pub run_bits: u32,
    /// The merge levels.
    pub levels: Levels,
}

/// The key-value merge sort: the tile sort of the keys, the placement of their values, and the
/// key-value levels, which merge keys tagged with their place and move each value by its tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValuePlan {
    /// Bytes of a key word (4 or 8).
    pub key_bytes: usize,
    /// Bytes of a value (4 or 8).
    pub value_bytes: usize,
    /// Whether each value is its key's position (an argsort): no values are read.
    pub positions: bool,
    /// The tile sort of the keys alone, in whole tiles.
    pub runs: PassPlan,
    /// log2 of a tile's keys.
    pub tile_bits: u32,
    /// The levels, in key-value merge tiles.
    pub levels: Levels,
    /// Dynamic shared memory of the placement and of a key-value merge block.
    pub(crate) place_shared: u32,
    pub(crate) merge_shared: u32,
    pub(crate) multiway_shared: u32,
}

/// The merge sort of `n` words of `word_bytes` (more than one run), keys mapped by `map` on
/// the tile sort's loads and unmapped on the last level's stores; its scratch in `workspace`:
/// the spare array, the merge paths and the samples.
pub(crate) fn plan_merge_sort(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    word_bytes: usize,
    n: usize,
    map: u32,
    workspace: &mut Workspace,
) -> Result<MergePlan> {
    let run_bits = policy.merge_run_bits(word_bytes, n);
    let tile = policy.merge.tile_of(word_bytes);
    let ways = level_ways_of(policy, word_bytes, n, 1 << run_bits);
    let levels = levels(&ways, tile, n, 1 << run_bits, map);
    let runs = plan_passes(
        facts,
        policy,
        word_bytes,
        run_layout(n, run_bits),
        map,
        true,
    )?;
    workspace.add(Scratch::Spare, n, word_bytes);
    workspace.add(Scratch::Ranks, levels.splits, 8);
    workspace.add(Scratch::Samples, levels.samples, word_bytes);
    Ok(MergePlan {
        word_bytes,
        runs,
        run_bits,
        levels,
    })
}

/// The key-value merge sort of `n` keys of `key_bytes` (4 or 8) with values of `value_bytes`
/// (4 or 8), or their positions; its scratch in `workspace`.
pub(crate) fn plan_key_value(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    (key_bytes, value_bytes, positions): (usize, usize, bool),
    n: usize,
    map: u32,
    workspace: &mut Workspace,
) -> Result<KeyValuePlan> {
    let tile_bits = policy.sort.tile_bits(key_bytes);
    let tile = 1usize << tile_bits;
    // The levels merge tagged words (a key and its place): the policy's ways for their width.
    let tagged = 2 * key_bytes;
    let merge_tile = policy.merge.kv_tile_of(key_bytes);
    let ways = level_ways_of(policy, tagged, n, tile);
    let levels = levels(&ways, merge_tile, n, tile, map);
    let runs = plan_passes(
        facts,
        policy,
        key_bytes,
        run_layout(n, tile_bits),
        map,
        true,
    )?;
    let padded = MergePolicy::padded_tile_bytes(merge_tile, tagged);
    let kv = KeyValuePlan {
        key_bytes,
        value_bytes,
        positions,
        runs,
        tile_bits,
        place_shared: place_shared_bytes(tile, key_bytes, value_bytes) as u32,
        merge_shared: (padded + merge_tile * value_bytes) as u32,
        multiway_shared: (multiway_tiles_bytes(merge_tile, tagged) + merge_tile * value_bytes)
            as u32,
        levels,
    };
    let level_count = kv.levels.levels.len();
    workspace.add(Scratch::Spare, n, key_bytes);
    workspace.add(
        Scratch::SpareValues,
        if level_count > 0 { n } else { 0 },
        value_bytes,
    );
    workspace.add(Scratch::EqualTiles, n.div_ceil(tile), 4);
    workspace.add(Scratch::Ranks, kv.levels.splits, 8);
    workspace.add(Scratch::Samples, kv.levels.samples, key_bytes);
    Ok(kv)
}

/// The dynamic shared memory of the value placement on tiles of `tile` keys: a region for the
/// larger of the tile's keys (its search tree), its values and its padded u32 words, then each
/// key's place, a u16 (kernels/merge/place.cuh `key_places`).
pub(crate) fn place_shared_bytes(tile: usize, key_bytes: usize, value_bytes: usize) -> usize {
    let region = (tile * key_bytes)
        .max(tile * value_bytes)
        .max(MergePolicy::padded_tile_bytes(tile, 4));
    region + tile * std::mem::size_of::<u16>()
}

/// Bytes of the two padded tiles of `tile` words of `word_bytes` that a multiway merge's
/// rounds merge between, each with a slack word after it (kernels/merge/multiway.cuh).
pub(crate) fn multiway_tiles_bytes(tile: usize, word_bytes: usize) -> usize {
    2 * (MergePolicy::padded_tile_bytes(tile, word_bytes) + word_bytes)
}

/// The runs of 2^`run_bits` words that the tile sort of a merge sort of `n` words sorts, or
/// the whole array when it fits one.
pub(crate) fn run_layout(n: usize, run_bits: u32) -> RowLayout {
    if n <= 1 << run_bits {
        RowLayout::rows(n, n)
    } else {
        RowLayout::runs(n, run_bits)
    }
}

/// Passes over the array of a merge sort of `n` words of `word_bytes`: the tile sort and one a
/// merge level.
#[cfg(test)]
pub(crate) fn merge_sort_passes(policy: &Policy, word_bytes: usize, n: usize) -> usize {
    let run_len = 1 << policy.merge_run_bits(word_bytes, n);
    1 + level_ways_of(policy, word_bytes, n, run_len).len()
}

/// The levels `ways` from runs of `run_len` to one run of `n` in merge tiles of `tile` words,
/// the last unmapping `map`.
fn levels(ways: &[usize], tile: usize, n: usize, mut run_len: usize, map: u32) -> Levels {
    assert!(ways.is_empty() || (run_len.is_power_of_two() && 2 * run_len >= tile));
    let mut levels = Vec::with_capacity(ways.len());
    let (mut splits, mut samples) = (n.div_ceil(tile).max(1), 0);
    for (level, &w) in ways.iter().enumerate() {
        let multiway = (w > 2).then(|| {
            let tiling = MultiwayTiling::new(tile, run_len, w);
            let previous = level.checked_sub(1).map(|l| ways[l]);
            Multiway {
                tiling,
                samples_stored: previous.is_some_and(|p| p > 2),
                next_sample_bits: next_sample_bits(ways, level, tile, run_len),
            }
        });
        let tiles = match &multiway {
            Some(m) => {
                let tiles = m.tiling.tiles(n, run_len, w);
                splits = splits.max(tiles * w);
                samples = samples.max(m.tiling.samples(n));
                tiles
            }
            None => n.div_ceil(tile),
        };
        levels.push(MergeLevel {
            ways: w,
            run_len,
            tiles: tiles as u32,
            multiway,
            map: if level + 1 == ways.len() { map } else { 0 },
        });
        run_len *= w;
    }
    Levels {
        tile,
        levels,
        splits,
        samples: samples.max(1),
    }
}

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

    /// Tiles of a level over `n` words in groups of `ways` runs of `run_len`: every full
    /// group's, and the last group's.
    pub(crate) fn tiles(&self, n: usize, run_len: usize, ways: usize) -> usize {
        let span = run_len * ways;
        let last = self.samples(n % span).div_ceil(self.tile_samples as usize);
        n / span * self.group_tiles as usize + last
    }
}

/// How many runs each level of a merge sort of words of `word_bytes` merges at once, from runs
/// of `run_len` words to one run of `n`: the policy's most for the word size
/// ([`MergePolicy::ways_of`]), fewer when fewer runs are left, and two where a group of more
/// would span over [`MergePolicy::MULTIWAY_GROUP_MAX`] words. A plan that would end in one
/// two-way level after multiway ones merges twice the ways in its first level instead, where
/// that is at most [`MergePolicy::fold_ways`]: one level fewer, for one more round in the first.
pub(crate) fn level_ways_of(
    policy: &Policy,
    word_bytes: usize,
    n: usize,
    run_len: usize,
) -> Vec<usize> {
    let most = policy.merge.ways_of(word_bytes) as usize;
    let plan = ways_of_levels(n, run_len, most, most);
    let levels = plan.len();
    let ends_in_two_way = levels >= 2 && plan[levels - 1] == 2 && plan[levels - 2] > 2;
    let doubled = 2 * plan.first().copied().unwrap_or(1) as u32;
    if ends_in_two_way && doubled <= policy.merge.fold_ways && MergePolicy::WAYS.contains(&doubled)
    {
        let folded = ways_of_levels(n, run_len, 2 * plan[0], most);
        if folded.len() < levels {
            return folded;
        }
    }
    plan
}

/// Levels from runs of `run_len` to one run of `n`, each merging as many runs as are left up
/// to `most` (`first_most` in the first level), two where a group would pass
/// [`MergePolicy::MULTIWAY_GROUP_MAX`] words.
fn ways_of_levels(n: usize, mut run_len: usize, first_most: usize, most: usize) -> Vec<usize> {
    let mut ways = Vec::new();
    while run_len < n {
        let runs = n.div_ceil(run_len);
        let cap = if ways.is_empty() { first_most } else { most };
        let mut w = cap.min(runs.next_power_of_two()).max(2);
        if run_len.saturating_mul(w).min(n) > MergePolicy::MULTIWAY_GROUP_MAX {
            w = 2;
        }
        ways.push(w);
        run_len = run_len.saturating_mul(w);
    }
    ways
}

/// The spacing (log2) of the samples that level `level` of `ways` (runs of `run_len` into
/// merge tiles of `tile` words) stores for the next one, when that is a multiway level.
fn next_sample_bits(ways: &[usize], level: usize, tile: usize, run_len: usize) -> Option<u32> {
    match ways.get(level + 1) {
        Some(&next) if next > 2 => {
            Some(MultiwayTiling::new(tile, run_len * ways[level], next).sample_bits)
        }
        _ => None,
    }
}

/// The merge path: how many of the first `o` keys of the merge of sorted `a` and `b` come from
/// `a`, `a`'s keys going first among equal ones (kernels/merge.cu's `co_rank`; on the host, the
/// simulated multi-GPU merges).
#[cfg(any(test, feature = "bench"))]
pub(crate) fn co_rank<B: Ord>(a: &[B], b: &[B], o: usize) -> usize {
    let at_or_before = |i: usize, j: usize| Ok::<_, std::convert::Infallible>(a[i] <= b[j]);
    match co_rank_with((a.len(), b.len()), o, at_or_before) {
        Ok(from_a) => from_a,
        Err(never) => match never {},
    }
}

/// [`co_rank`] of runs of `lens` keys whose order `a_at_or_before_b(i, j)` gives (whether key
/// `i` of the first run goes before key `j` of the second), read one pair at a time: the
/// out-of-core merge reads the second run's keys from the GPU, and a read may fail.
pub(crate) fn co_rank_with<E>(
    (a_len, b_len): (usize, usize),
    o: usize,
    mut a_at_or_before_b: impl FnMut(usize, usize) -> Result<bool, E>,
) -> Result<usize, E> {
    let (mut lo, mut hi) = (o.saturating_sub(b_len), o.min(a_len));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if a_at_or_before_b(mid, o - mid - 1)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

#[cfg(test)]
pub(crate) mod tests;
