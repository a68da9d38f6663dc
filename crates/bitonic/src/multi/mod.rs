//! Sorting keys sharded over several ranks (GPUs): the exchange schedules and the merge logic,
//! written above a `Transport` (feature `bench`) so that the same code runs over simulated ranks (threads, in
//! the tests and on machines without GPUs); the GPUs run the same schedule and splitter rules
//! over NCCL (src/cuda/multi/).
//!
//! Two algorithms, both ending with the keys in global order across ranks (rank 0 holds the
//! smallest):
//!
//! * [`Algorithm::MergeSplit`]: the bitonic network over ranks. A comparator between ranks is a
//!   merge-split: both send their whole shard, the lower rank keeps the smallest `m` keys of the
//!   two, the upper the largest `m`. Shards count as padded to a common length `m` with `+inf`
//!   (never sent), which, as in the single-GPU network, never moves down; ranks past `p` are
//!   virtual. Any `p` works, in `log p (log p + 1) / 2` rounds, each moving every shard.
//! * [`Algorithm::Partition`]: sample sort. Every rank sorts locally, the ranks agree on `p-1`
//!   splitters from a regular sample, and one all-to-all sends each key to its rank; each rank
//!   then merges the `p` sorted runs that arrived, pairwise in `log p` levels
//!   (`merge_runs`). Splitters are ordered by (key, rank, index), so equal keys still split
//!   evenly without tagging any key.
//!
//! A merge of two sorted runs of any lengths goes one *tile* of the output at a time
//! (`merge_by_tiles`), as a GPU block merges it: the merge path (`co_rank`) says which keys
//! of each run fall in the tile; those, the second run's falling and then the first run's
//! rising, padded with `+inf`, make a bitonic sequence that one bitonic merge sorts. Each key
//! is read and written once a merge.

#[cfg(feature = "bench")]
mod simulated;
#[cfg(feature = "bench")]
mod threads;
#[cfg(feature = "bench")]
pub use simulated::{sort_sharded, LocalSort, Transport};
#[cfg(feature = "bench")]
pub use threads::{simulate, ThreadTransport};

use crate::network::{stage_sizes, stage_steps};

/// How the shards are merged across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// The bitonic network over ranks, each comparator a merge-split of two shards.
    MergeSplit,
    /// Sample sort: splitters, one all-to-all, and a merge of the runs that arrived.
    Partition,
}

impl Algorithm {
    /// Both algorithms.
    pub const ALL: [Algorithm; 2] = [Algorithm::MergeSplit, Algorithm::Partition];

    /// `merge-split` or `partition`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::MergeSplit => "merge-split",
            Algorithm::Partition => "partition",
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

// ---- The schedule and the splitter rules, shared with the GPUs (src/cuda/multi/) ----

/// The rounds of the bitonic network over `p` ranks, each a list of `(lower, upper)` rank pairs
/// that merge-split: the lower keeps the smaller half of the two shards, the upper the larger.
/// Ranks past `p` (up to the next power of two) hold only `+inf` padding: their comparators
/// leave the real rank's shard as it is and are left out. `log p (log p + 1) / 2` rounds.
pub(crate) fn merge_split_rounds(p: usize) -> Vec<Vec<(usize, usize)>> {
    stage_sizes(p)
        .flat_map(stage_steps)
        .map(|step| {
            (0..p)
                .map(|r| (r, step.partner(r)))
                .filter(|&(r, partner)| r < partner && partner < p)
                .collect()
        })
        .collect()
}

/// How many of the `n` sorted keys rank `rank` holds after a merge-split sort of `p` shards:
/// the shards count as padded to the longest (`m` keys) with `+inf`, so rank r ends with the
/// keys at global positions `r m .. (r + 1) m`, and the padding falls to the last ranks.
pub fn merge_split_share(rank: usize, m: usize, n: usize) -> usize {
    n.saturating_sub(rank * m).min(m)
}

/// A sampled key with the rank and position in its sorted shard that it came from. Ordered by
/// (key, rank, index): a total order over all keys of all ranks that agrees with every sorted
/// shard, so that equal keys, too, split evenly between ranks with no tags to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Splitter<B> {
    pub key: B,
    pub rank: usize,
    pub index: usize,
}

/// Samples a rank offers, on average: the policy's ([`crate::policy::MultiGpuPolicy`]).
pub(crate) const SAMPLES_PER_RANK: usize = crate::policy::MultiGpuPolicy::HOPPER.samples_per_rank;

/// The positions of its sorted shard of `len` keys that a rank offers as samples: evenly
/// spaced, as many as its share of all `total` keys, so that every key stands the same chance.
pub(crate) fn sample_positions(len: usize, total: usize, p: usize) -> Vec<usize> {
    let count = sample_count(len, total, p);
    (0..count).map(|k| k * len / count).collect()
}

/// How many samples a rank of `len` keys offers ([`sample_positions`]): every rank knows it
/// for every other once the shard lengths are known, so only the sampled keys travel.
pub(crate) fn sample_count(len: usize, total: usize, p: usize) -> usize {
    (SAMPLES_PER_RANK * p * len).div_ceil(total.max(1)).min(len)
}

/// Rank `rank`'s samples: `keys` are the keys at its [`sample_positions`], in order.
pub(crate) fn rank_samples<B>(
    rank: usize,
    len: usize,
    total: usize,
    p: usize,
    keys: impl IntoIterator<Item = B>,
) -> impl Iterator<Item = Splitter<B>> {
    sample_positions(len, total, p)
        .into_iter()
        .zip(keys)
        .map(move |(index, key)| Splitter { key, rank, index })
}

/// Every rank's samples from an all-gather in which each rank sent the keys at its
/// [`sample_positions`] padded to `width` keys, the most any rank offers (`gathered` holds
/// `lens.len() * width` keys, rank by rank). With the lengths known, the positions and the
/// counts are too, so only keys travel.
pub(crate) fn gathered_samples<B: Copy>(
    gathered: &[B],
    width: usize,
    lens: &[usize],
) -> Vec<Splitter<B>> {
    let (p, total) = (lens.len(), lens.iter().sum());
    assert_eq!(gathered.len(), p * width, "width keys a rank");
    lens.iter()
        .enumerate()
        .flat_map(|(rank, &len)| {
            let keys = gathered[rank * width..(rank + 1) * width].iter().copied();
            rank_samples(rank, len, total, p, keys)
        })
        .collect()
}

/// The most samples any rank offers: the width of each rank's part of the samples' gather.
pub(crate) fn widest_sample(lens: &[usize]) -> usize {
    let total = lens.iter().sum();
    lens.iter()
        .map(|&len| sample_count(len, total, lens.len()))
        .max()
        .unwrap_or(0)
}

/// The `p - 1` splitters, evenly spaced through all ranks' samples.
pub(crate) fn choose_splitters<B: Ord + Copy>(
    mut samples: Vec<Splitter<B>>,
    p: usize,
) -> Vec<Splitter<B>> {
    samples.sort_unstable();
    (1..p)
        .filter_map(|k| samples.get(k * samples.len() / p))
        .copied()
        .collect()
}

/// How rank `rank` finds where `splitter` cuts its sorted shard: the keys before the cut are
/// those below the splitter in (key, rank, index) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut<B> {
    /// The splitter's own rank: the cut is at the splitter's index.
    At(usize),
    /// Count the keys below `key`, or at or below it when `or_equal` (a rank before the
    /// splitter's, whose equal keys come first).
    Below { key: B, or_equal: bool },
}

/// The bounds of the `p` buckets of a rank's sorted `len` keys: 0, where each splitter cuts,
/// `len` (with no splitters, when no rank had a key, every bucket but the last is empty).
pub(crate) fn bucket_bounds(
    cuts: impl IntoIterator<Item = usize>,
    len: usize,
    p: usize,
) -> Vec<usize> {
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.resize(p + 1, len);
    bounds
}

/// Who sends what to whom in partition's all-to-all, from every rank's bucket bounds
/// ([`bucket_bounds`]): the bookkeeping that every rank (or the one host thread of all ranks)
/// derives alike, so that the k-th send from one rank to another matches the receive there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Buckets {
    /// `bounds[r][j] .. bounds[r][j + 1]`: the keys of rank r's sorted shard bound for rank j.
    bounds: Vec<Vec<usize>>,
}

impl Buckets {
    /// From every rank's bucket bounds, in rank order (`p + 1` each).
    pub(crate) fn new(bounds: Vec<Vec<usize>>) -> Buckets {
        let p = bounds.len();
        assert!(
            bounds.iter().all(|b| b.len() == p + 1),
            "p + 1 bounds a rank"
        );
        Buckets { bounds }
    }

    /// How many ranks.
    pub(crate) fn ranks(&self) -> usize {
        self.bounds.len()
    }

    /// The part of rank `from`'s sorted shard that goes to rank `to`.
    pub(crate) fn run(&self, from: usize, to: usize) -> std::ops::Range<usize> {
        self.bounds[from][to]..self.bounds[from][to + 1]
    }

    /// The lengths of the runs that arrive at rank `to`, in sender order: how they lie one
    /// after the other in its receive buffer, and the leaves of its merge tree.
    pub(crate) fn runs_to(&self, to: usize) -> Vec<usize> {
        (0..self.ranks())
            .map(|from| self.run(from, to).len())
            .collect()
    }

    /// Where rank `from`'s run starts in rank `to`'s receive buffer: after the runs of the
    /// ranks before it.
    pub(crate) fn offset(&self, from: usize, to: usize) -> usize {
        (0..from).map(|r| self.run(r, to).len()).sum()
    }

    /// How many keys rank `to` ends with.
    pub(crate) fn arriving(&self, to: usize) -> usize {
        self.offset(self.ranks(), to)
    }

    /// Every rank's result length, in rank order.
    pub(crate) fn sizes(&self) -> Vec<usize> {
        (0..self.ranks()).map(|to| self.arriving(to)).collect()
    }
}

pub(crate) fn cut_for<B: Copy>(splitter: &Splitter<B>, rank: usize) -> Cut<B> {
    if rank == splitter.rank {
        Cut::At(splitter.index)
    } else {
        Cut::Below {
            key: splitter.key,
            or_equal: rank < splitter.rank,
        }
    }
}

#[cfg(any(test, feature = "bench"))]
pub(crate) use crate::plan::merge::co_rank;

#[cfg(any(test, feature = "bench"))]
/// Output keys a GPU block merges at once for 4- and 8-byte words (kernels/merge.cu's
/// `MergeTile`); the simulated ranks merge in tiles of the same length.
pub(crate) const MERGE_TILE: usize = crate::Policy::HOPPER.merge.tile;

#[cfg(any(test, feature = "bench"))]
/// Merges sorted `a` and `b` into `out` (`a.len() + b.len()` keys) one tile of `tile` output
/// keys at a time (kernels/merge.cu's `merge_tiles`): the merge path at both ends of the tile
/// gives its keys from each run; placed as those from `b` falling, then those from `a` rising,
/// they are bitonic (padded virtually with `+inf`), and one bitonic merge sorts them.
pub(crate) fn merge_by_tiles<B: Ord + Copy + Send + Sync>(
    a: &[B],
    b: &[B],
    out: &mut [B],
    tile: usize,
) {
    assert_eq!(out.len(), a.len() + b.len());
    for (t, keys) in out.chunks_mut(tile).enumerate() {
        let (start, end) = (t * tile, t * tile + keys.len());
        merge_tile(
            a,
            b,
            start,
            (co_rank(a, b, start), co_rank(a, b, end)),
            keys,
        );
    }
}

#[cfg(any(test, feature = "bench"))]
/// One tile of the merge of sorted `a` and `b`: its `out.len()` outputs from merged position
/// `start` on, given the merge paths `(a_from, a_to)` at its ends (kernels/merge.cu's
/// `merge_tile`). Its keys from `b` falling, then those from `a` rising, are bitonic (padded
/// virtually with `+inf`), and one bitonic merge sorts them.
pub(crate) fn merge_tile<B: Ord + Copy + Send + Sync>(
    a: &[B],
    b: &[B],
    start: usize,
    (a_from, a_to): (usize, usize),
    out: &mut [B],
) {
    let end = start + out.len();
    let (b_from, b_to) = (start - a_from, end - a_to);
    let (falling, rising) = out.split_at_mut(b_to - b_from);
    for (slot, &key) in falling.iter_mut().zip(b[b_from..b_to].iter().rev()) {
        *slot = key;
    }
    rising.copy_from_slice(&a[a_from..a_to]);
    crate::cpu::network::merge_bitonic(out);
}

/// The pairs of adjacent runs merged at one level of a merge tree, as (offset, first run's
/// length, second run's length); an odd last run pairs with an empty one. The next level's
/// runs are the pairs' sums.
pub(crate) fn merge_level(runs: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut offset = 0;
    runs.chunks(2)
        .map(|pair| {
            let (a, b) = (pair[0], pair.get(1).copied().unwrap_or(0));
            offset += a + b;
            (offset - a - b, a, b)
        })
        .collect()
}

#[cfg(any(test, feature = "bench"))]
/// Sorts `words`, which hold sorted runs of the lengths `runs` one after the other, by merging
/// adjacent runs pairwise, level by level: the CPU form of the GPUs' merge of a bucket.
pub(crate) fn merge_runs<B: Ord + Copy + Send + Sync>(
    mut words: Vec<B>,
    runs: &[usize],
    tile: usize,
) -> Vec<B> {
    assert_eq!(runs.iter().sum::<usize>(), words.len());
    let mut runs = runs.to_vec();
    let mut merged = words.clone();
    while runs.len() > 1 {
        let level = merge_level(&runs);
        for &(offset, a, b) in &level {
            let (first, second) = words[offset..offset + a + b].split_at(a);
            merge_by_tiles(first, second, &mut merged[offset..offset + a + b], tile);
        }
        std::mem::swap(&mut words, &mut merged);
        runs = level.iter().map(|&(_, a, b)| a + b).collect();
    }
    words
}

// ---- The algorithms over a transport (simulated ranks) ----

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_of_the_network_over_ranks() {
        assert!(merge_split_rounds(1).is_empty());
        assert_eq!(merge_split_rounds(2), vec![vec![(0, 1)]]);
        // p = 4: stage 2 (0-1, 2-3), stage 4 flip (0-3, 1-2), then 0-1, 2-3.
        assert_eq!(
            merge_split_rounds(4),
            vec![
                vec![(0, 1), (2, 3)],
                vec![(0, 3), (1, 2)],
                vec![(0, 1), (2, 3)]
            ]
        );
        // p = 3: rank 3 is virtual; its comparators drop out.
        assert_eq!(
            merge_split_rounds(3),
            vec![vec![(0, 1)], vec![(1, 2)], vec![(0, 1)]]
        );
        for p in 1..=16usize {
            let log = p.next_power_of_two().trailing_zeros() as usize;
            assert_eq!(merge_split_rounds(p).len(), log * (log + 1) / 2);
        }
    }

    #[test]
    fn shares_after_a_merge_split() {
        assert_eq!(
            (0..4)
                .map(|r| merge_split_share(r, 10, 35))
                .collect::<Vec<_>>(),
            [10, 10, 10, 5]
        );
        assert_eq!(
            (0..3)
                .map(|r| merge_split_share(r, 7, 8))
                .collect::<Vec<_>>(),
            [7, 1, 0]
        );
    }

    #[test]
    fn splitters_cut_equal_keys_by_rank_then_index() {
        let s = Splitter {
            key: 5u32,
            rank: 1,
            index: 3,
        };
        assert_eq!(cut_for(&s, 1), Cut::At(3));
        assert_eq!(
            cut_for(&s, 0),
            Cut::Below {
                key: 5,
                or_equal: true
            }
        );
        assert_eq!(
            cut_for(&s, 2),
            Cut::Below {
                key: 5,
                or_equal: false
            }
        );
        assert_eq!(sample_positions(0, 100, 4), Vec::<usize>::new());
        assert_eq!(sample_positions(100, 100, 1), (0..100).collect::<Vec<_>>());
        assert_eq!(
            sample_positions(4096, 8192, 2),
            (0..1024).map(|k| k * 4).collect::<Vec<_>>()
        );
    }

    /// The bookkeeping of one rank a process (src/cuda/multi/process.rs) against the simulated
    /// ranks: the samples gathered padded, the splitters, every rank's bucket bounds, and each
    /// rank's receive buffer laid out by `Buckets` and merged give the same shards as
    /// `simulate`'s partition, sizes included.
    #[cfg(feature = "bench")]
    #[test]
    fn bookkeeping_of_a_rank_a_process_matches_the_simulated_ranks() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(53);
        for p in 1..=6usize {
            for trial in 0..12 {
                let lens: Vec<usize> = (0..p)
                    .map(|r| match trial % 4 {
                        0 => rng.random_range(0..5000),
                        1 if r % 2 == 1 => 0,
                        2 => 0,
                        _ => rng.random_range(1000..3000),
                    })
                    .collect();
                // All equal, few distinct, random.
                let mut key = || match trial % 3 {
                    0 => 7u32,
                    1 => rng.random_range(0..3),
                    _ => rng.random(),
                };
                let shards: Vec<Vec<u32>> = lens
                    .iter()
                    .map(|&len| (0..len).map(|_| key()).collect())
                    .collect();
                let want =
                    simulate(&shards, crate::Order::Ascending, Algorithm::Partition).unwrap();
                let got = partition_by_bookkeeping(shards, &lens);
                assert_eq!(got, want, "p = {p}, lens {lens:?}");
            }
        }
    }

    /// What every rank does in src/cuda/multi/process.rs, on the CPU, with the gathers laid
    /// out as NCCL's all-gather lays them out.
    #[cfg(feature = "bench")]
    fn partition_by_bookkeeping(mut shards: Vec<Vec<u32>>, lens: &[usize]) -> Vec<Vec<u32>> {
        let (p, total) = (lens.len(), lens.iter().sum::<usize>());
        for shard in &mut shards {
            shard.sort_unstable();
        }
        if p == 1 {
            return shards;
        }
        let width = widest_sample(lens);
        let mut gathered = vec![u32::MAX; p * width];
        for (rank, shard) in shards.iter().enumerate() {
            for (k, i) in sample_positions(lens[rank], total, p)
                .into_iter()
                .enumerate()
            {
                gathered[rank * width + k] = shard[i];
            }
        }
        let splitters = choose_splitters(gathered_samples(&gathered, width, lens), p);
        let bounds = shards
            .iter()
            .enumerate()
            .map(|(rank, words)| {
                let cuts = splitters.iter().map(|s| match cut_for(s, rank) {
                    Cut::At(index) => index,
                    Cut::Below { key, or_equal } => {
                        words.partition_point(|&w| w < key || (or_equal && w == key))
                    }
                });
                bucket_bounds(cuts, words.len(), p)
            })
            .collect();
        let buckets = Buckets::new(bounds);
        (0..p)
            .map(|to| {
                let mut received = vec![0u32; buckets.arriving(to)];
                for (from, words) in shards.iter().enumerate() {
                    let run = &words[buckets.run(from, to)];
                    let at = buckets.offset(from, to);
                    received[at..at + run.len()].copy_from_slice(run);
                }
                merge_runs(received, &buckets.runs_to(to), MERGE_TILE)
            })
            .collect()
    }

    #[test]
    fn co_rank_follows_a_stable_merge() {
        let a = [1u32, 3, 3, 5, 9];
        let b = [2u32, 3, 4, 9, 9, 10];
        // The stable merge, each key tagged with its run (a first among equals).
        let mut tagged: Vec<(u32, usize)> = a.iter().map(|&k| (k, 0)).collect();
        tagged.extend(b.iter().map(|&k| (k, 1)));
        tagged.sort();
        for o in 0..=a.len() + b.len() {
            let from_a = tagged[..o].iter().filter(|t| t.1 == 0).count();
            assert_eq!(co_rank(&a, &b, o), from_a, "o = {o}");
        }
        assert_eq!(co_rank::<u32>(&[], &[1, 2], 1), 0);
        assert_eq!(co_rank::<u32>(&[1, 2], &[], 2), 2);
    }

    #[test]
    fn merges_of_runs_of_any_lengths() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for p in 1..=9usize {
            for trial in 0..20 {
                let lens: Vec<usize> = (0..p)
                    .map(|_| rng.random_range(0..40 + trial * 30))
                    .collect();
                let distinct = if trial % 3 == 0 { 3 } else { 1 << 20 };
                let runs: Vec<Vec<u32>> = lens
                    .iter()
                    .map(|&len| {
                        let mut run: Vec<u32> =
                            (0..len).map(|_| rng.random_range(0..distinct)).collect();
                        run.sort();
                        run
                    })
                    .collect();
                let mut expected = runs.concat();
                expected.sort();
                // Tiles of every kind: one key, odd, a power of two, longer than a merge.
                for tile in [1, 2, 3, 8, 37, 64, MERGE_TILE] {
                    let merged = merge_runs(runs.concat(), &lens, tile);
                    assert_eq!(merged, expected, "runs {lens:?}, tiles of {tile}");
                }
            }
        }
    }
}
