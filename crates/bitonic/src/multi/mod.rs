//! Sorting keys sharded over several ranks (GPUs): the exchange schedules and the merge logic,
//! written above a [`Transport`] so that the same code runs over simulated ranks (threads, in
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

mod threads;

pub use threads::{simulate, ThreadTransport};

use crate::error::{Error, Result};
use crate::key::Bits;
use crate::key::{key_from_ordered_bits, ordered_bits};
use crate::network::{stage_sizes, stage_steps};
use crate::{Order, SortKey};

/// Moves bytes between ranks: [`ThreadTransport`] between simulated ranks. The GPUs
/// (src/cuda/multi/) run the same schedule, `merge_split_rounds`, and the same splitter
/// rules from one host thread over NCCL, since NCCL wants all ranks' calls of a round in one
/// group.
pub trait Transport: Sync {
    /// This rank's number, from 0.
    fn rank(&self) -> usize;
    /// How many ranks there are.
    fn ranks(&self) -> usize;
    /// Sends `send` to rank `to` and receives one message from rank `from` (a grouped
    /// ncclSend/ncclRecv). Messages between two ranks arrive in the order they were sent.
    fn exchange(&self, to: usize, send: Vec<u8>, from: usize) -> Result<Vec<u8>>;
    /// Tells every rank that this one failed, so that none waits for it forever.
    fn abort(&self);
}

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

/// Sorts the keys of all ranks into global order; each rank passes its shard and gets its
/// part of the result back (sizes may change: see [`merge_split_share`] and the splitters).
/// `local_sort` sorts one rank's words ascending.
pub fn sort_sharded<K: SortKey, T: Transport>(
    transport: &T,
    shard: &[K],
    order: Order,
    algorithm: Algorithm,
    local_sort: LocalSort<K::Bits>,
) -> Result<Vec<K>> {
    let result = (|| {
        let sizes = all_gather_sizes(transport, shard.len())?;
        let mut words: Vec<K::Bits> = shard.iter().map(|&k| ordered_bits(k, order)).collect();
        local_sort(&mut words);
        let sorted = match algorithm {
            Algorithm::MergeSplit => merge_split(transport, words, &sizes)?,
            Algorithm::Partition => partition(transport, words, &sizes)?,
        };
        Ok(sorted
            .into_iter()
            .map(|bits| key_from_ordered_bits::<K>(bits, order))
            .collect())
    })();
    if result.is_err() {
        transport.abort();
    }
    result
}

/// Sorts one rank's words ascending (the CPU network in simulations).
pub type LocalSort<'a, B> = &'a (dyn Fn(&mut [B]) + Sync);

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

/// Samples a rank offers, on average. A bucket exceeds its share by at most about one gap
/// between samples of each rank, `p / SAMPLES_PER_RANK` of the share (0.4% at p = 4), and the
/// slowest rank sets the pace of the merges.
pub(crate) const SAMPLES_PER_RANK: usize = 1024;

/// The positions of its sorted shard of `len` keys that a rank offers as samples: evenly
/// spaced, as many as its share of all `total` keys, so that every key stands the same chance.
pub(crate) fn sample_positions(len: usize, total: usize, p: usize) -> Vec<usize> {
    let count = (SAMPLES_PER_RANK * p * len).div_ceil(total.max(1)).min(len);
    (0..count).map(|k| k * len / count).collect()
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

/// The merge path: how many of the first `o` keys of the merge of sorted `a` and `b` come from
/// `a`, `a`'s keys going first among equal ones (kernels/merge.cu's `co_rank`).
pub(crate) fn co_rank<B: Ord>(a: &[B], b: &[B], o: usize) -> usize {
    let (mut lo, mut hi) = (o.saturating_sub(b.len()), o.min(a.len()));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if a[mid] <= b[o - mid - 1] {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Output keys a GPU block merges at once for 4- and 8-byte words (kernels/merge.cu's
/// `MergeTile`); the simulated ranks merge in tiles of the same length.
pub(crate) const MERGE_TILE: usize = crate::Policy::HOPPER.merge_tile;

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

fn encode<B: Bits>(words: &[B]) -> Vec<u8> {
    bytemuck::cast_slice(words).to_vec()
}

fn decode<B: Bits>(bytes: &[u8]) -> Result<Vec<B>> {
    if bytes.len() % std::mem::size_of::<B>() != 0 {
        return Err(Error::PeerFailed);
    }
    Ok(bytes
        .chunks_exact(std::mem::size_of::<B>())
        .map(bytemuck::pod_read_unaligned)
        .collect())
}

/// One message to every other rank and one from each, in p-1 rounds around the ring (round k:
/// send to r+k, receive from r-k). Returns `(sender, message)` pairs.
fn ring_all_to_all<T: Transport>(
    t: &T,
    mut message_for: impl FnMut(usize) -> Vec<u8>,
) -> Result<Vec<(usize, Vec<u8>)>> {
    let (p, r) = (t.ranks(), t.rank());
    (1..p)
        .map(|k| {
            let (to, from) = ((r + k) % p, (r + p - k) % p);
            Ok((from, t.exchange(to, message_for(to), from)?))
        })
        .collect()
}

/// Every rank's shard length, in rank order (p-1 rounds of the ring).
fn all_gather_sizes<T: Transport>(t: &T, mine: usize) -> Result<Vec<usize>> {
    let (p, r) = (t.ranks(), t.rank());
    let mut sizes = vec![0usize; p];
    sizes[r] = mine;
    for (from, got) in ring_all_to_all(t, |_| (mine as u64).to_le_bytes().to_vec())? {
        let bytes: [u8; 8] = got.as_slice().try_into().map_err(|_| Error::PeerFailed)?;
        sizes[from] = u64::from_le_bytes(bytes) as usize;
    }
    Ok(sizes)
}

/// The bitonic network over ranks, every comparator a merge-split of two sorted shards. The
/// `+inf` padding up to the longest shard is never sent: the lower rank keeps the `m` smallest
/// real keys of the two, the upper the rest.
fn merge_split<B: Bits, T: Transport>(t: &T, mut mine: Vec<B>, sizes: &[usize]) -> Result<Vec<B>> {
    let r = t.rank();
    let m = sizes.iter().copied().max().unwrap_or(0);
    for round in merge_split_rounds(t.ranks()) {
        let Some(&(lower, upper)) = round.iter().find(|&&(l, u)| l == r || u == r) else {
            continue;
        };
        let partner = if lower == r { upper } else { lower };
        let theirs = decode::<B>(&t.exchange(partner, encode(&mine), partner)?)?;
        let mut merged = vec![B::zeroed(); mine.len() + theirs.len()];
        merge_by_tiles(&mine, &theirs, &mut merged, MERGE_TILE);
        let keep = m.min(merged.len());
        mine = if r == lower {
            merged[..keep].to_vec()
        } else {
            merged.split_off(keep)
        };
    }
    Ok(mine)
}

/// Sample sort: regular samples, p-1 splitters, one all-to-all, a merge of the runs.
fn partition<B: Bits, T: Transport>(t: &T, words: Vec<B>, sizes: &[usize]) -> Result<Vec<B>> {
    let (p, r) = (t.ranks(), t.rank());
    if p == 1 {
        return Ok(words);
    }
    let total = sizes.iter().sum::<usize>();
    let sample: Vec<Splitter<B>> = sample_positions(words.len(), total, p)
        .into_iter()
        .map(|index| Splitter {
            key: words[index],
            rank: r,
            index,
        })
        .collect();
    let mut samples = sample.clone();
    for (_, got) in ring_all_to_all(t, |_| encode_splitters(&sample))? {
        samples.extend(decode_splitters::<B>(&got)?);
    }
    let splitters = choose_splitters(samples, p);
    // Bucket j takes the keys between splitters j-1 and j; the shard is sorted.
    let cuts = splitters.iter().map(|s| match cut_for(s, r) {
        Cut::At(index) => index,
        Cut::Below { key, or_equal } => {
            words.partition_point(|&w| w < key || (or_equal && w == key))
        }
    });
    let cuts = bucket_bounds(cuts, words.len(), p);
    // The runs in rank order, as the GPUs place them.
    let mut runs: Vec<Vec<B>> = vec![Vec::new(); p];
    runs[r] = words[cuts[r]..cuts[r + 1]].to_vec();
    for (from, got) in ring_all_to_all(t, |to| encode(&words[cuts[to]..cuts[to + 1]]))? {
        runs[from] = decode::<B>(&got)?;
    }
    let lens: Vec<usize> = runs.iter().map(Vec::len).collect();
    Ok(merge_runs(runs.concat(), &lens, MERGE_TILE))
}

fn encode_splitters<B: Bits>(splitters: &[Splitter<B>]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in splitters {
        out.extend_from_slice(bytemuck::bytes_of(&s.key));
        out.extend_from_slice(&(s.rank as u64).to_le_bytes());
        out.extend_from_slice(&(s.index as u64).to_le_bytes());
    }
    out
}

fn decode_splitters<B: Bits>(bytes: &[u8]) -> Result<Vec<Splitter<B>>> {
    let width = std::mem::size_of::<B>();
    if bytes.len() % (width + 16) != 0 {
        return Err(Error::PeerFailed);
    }
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize;
    Ok(bytes
        .chunks_exact(width + 16)
        .map(|c| Splitter {
            key: bytemuck::pod_read_unaligned(&c[..width]),
            rank: word(&c[width..width + 8]),
            index: word(&c[width + 8..]),
        })
        .collect())
}

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
