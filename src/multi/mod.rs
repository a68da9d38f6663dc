//! Sorting keys sharded over several ranks (GPUs): the exchange schedules and the merge logic,
//! written above a [`Transport`] so that the same code runs over simulated ranks (threads, in
//! the tests and on machines without GPUs) and, later, over NCCL between GPUs.
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
//!   splitters from a regular sample, and one all-to-all sends each key to its rank; a final
//!   local sort merges what arrived. Keys are made distinct by their global position first, so
//!   equal keys still split evenly.
//!
//! Errors: a rank that fails calls [`Transport::abort`]; every rank waiting on it then returns
//! [`Error::PeerFailed`] instead of hanging, and no rank passes off a partial result.

mod threads;

pub use threads::{simulate, ThreadTransport};

use crate::error::{Error, Result};
use crate::key::Bits;
use crate::key::{key_from_ordered_bits, ordered_bits};
use crate::network::{stage_sizes, stage_steps};
use crate::{Order, SortKey};

/// Moves bytes between ranks. Implemented by [`ThreadTransport`]; an NCCL one is to come.
pub trait Transport: Sync {
    fn rank(&self) -> usize;
    fn ranks(&self) -> usize;
    /// Sends `send` to rank `to` and receives one message from rank `from` (a grouped
    /// ncclSend/ncclRecv). Messages between two ranks arrive in the order they were sent.
    fn exchange(&self, to: usize, send: Vec<u8>, from: usize) -> Result<Vec<u8>>;
    /// Tells every rank that this one failed, so that none waits for it forever.
    fn abort(&self);
}

/// How the shards are merged across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Algorithm {
    MergeSplit,
    Partition,
}

/// Sorts the keys of all ranks into global order; each rank passes its shard and gets its
/// part of the result back (sizes may change). `local_sort` sorts one rank's words ascending.
pub fn sort_sharded<K: SortKey, T: Transport>(
    transport: &T,
    shard: &[K],
    order: Order,
    algorithm: Algorithm,
    local_sort: LocalSort<K::Bits>,
) -> Result<Vec<K>> {
    let result = (|| {
        // Global positions make every key distinct: equal keys split evenly and stay stable.
        let sizes = all_gather_sizes(transport, shard.len())?;
        let first = sizes[..transport.rank()].iter().sum::<usize>() as u64;
        let mut words: Vec<Tagged<K::Bits>> = shard
            .iter()
            .enumerate()
            .map(|(i, &k)| (ordered_bits(k, order), first + i as u64))
            .collect();
        local_sort(&mut words);
        let sorted = match algorithm {
            Algorithm::MergeSplit => merge_split(transport, words, &sizes)?,
            Algorithm::Partition => partition(transport, words, &sizes, local_sort)?,
        };
        Ok(sorted
            .into_iter()
            .map(|(bits, _)| key_from_ordered_bits::<K>(bits, order))
            .collect())
    })();
    if result.is_err() {
        transport.abort();
    }
    result
}

/// A key's ordered bits and its global position: distinct, so every order below is total.
pub type Tagged<B> = (B, u64);

/// Sorts one rank's tagged words ascending (the CPU network in simulations, the tuned GPU sort
/// on a GPU).
pub type LocalSort<'a, B> = &'a (dyn Fn(&mut [Tagged<B>]) + Sync);

fn encode<B: Bits>(words: &[Tagged<B>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.len() * (std::mem::size_of::<B>() + 8));
    for (bits, position) in words {
        out.extend_from_slice(bytemuck::bytes_of(bits));
        out.extend_from_slice(&position.to_le_bytes());
    }
    out
}

fn decode<B: Bits>(bytes: &[u8]) -> Result<Vec<Tagged<B>>> {
    let width = std::mem::size_of::<B>();
    if bytes.len() % (width + 8) != 0 {
        return Err(Error::PeerFailed);
    }
    Ok(bytes
        .chunks_exact(width + 8)
        .map(|c| {
            let position = u64::from_le_bytes(c[width..].try_into().expect("8 bytes"));
            (bytemuck::pod_read_unaligned(&c[..width]), position)
        })
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

/// The bitonic network over ranks, every comparator a merge-split of two sorted shards. Shards
/// count as padded to the longest one with +inf keys, which are never sent: a rank holding
/// fewer real keys simply has its padding at the end.
fn merge_split<B: Bits, T: Transport>(
    t: &T,
    mut mine: Vec<Tagged<B>>,
    sizes: &[usize],
) -> Result<Vec<Tagged<B>>> {
    let (p, r) = (t.ranks(), t.rank());
    let m = sizes.iter().copied().max().unwrap_or(0);
    for size in stage_sizes(p) {
        for step in stage_steps(size) {
            let partner = step.partner(r);
            if partner >= p {
                continue; // a virtual rank of +inf keys: nothing moves
            }
            let theirs = decode::<B>(&t.exchange(partner, encode(&mine), partner)?)?;
            let mut merged = Vec::with_capacity(mine.len() + theirs.len());
            let (mut i, mut j) = (0, 0);
            while i < mine.len() || j < theirs.len() {
                if j == theirs.len() || (i < mine.len() && mine[i] <= theirs[j]) {
                    merged.push(mine[i]);
                    i += 1;
                } else {
                    merged.push(theirs[j]);
                    j += 1;
                }
            }
            // The lower rank keeps the m smallest of the (padded) 2m, the upper the m largest.
            mine = if r < partner {
                merged[..m.min(merged.len())].to_vec()
            } else {
                merged.split_off(m.min(merged.len()))
            };
        }
    }
    Ok(mine)
}

/// Sample sort: regular sample, p-1 splitters, one all-to-all, a local sort.
fn partition<B: Bits, T: Transport>(
    t: &T,
    words: Vec<Tagged<B>>,
    sizes: &[usize],
    local_sort: LocalSort<B>,
) -> Result<Vec<Tagged<B>>> {
    let (p, r) = (t.ranks(), t.rank());
    if p == 1 {
        return Ok(words);
    }
    // Each rank offers evenly spaced keys of its sorted shard, as many as its share of all keys
    // (32 per rank on average), so that the samples stand for every key equally.
    let total = sizes.iter().sum::<usize>().max(1);
    let count = (32 * p * words.len()).div_ceil(total);
    let sample: Vec<Tagged<B>> = (0..count).map(|k| words[k * words.len() / count]).collect();
    let mut samples = sample.clone();
    for (_, got) in ring_all_to_all(t, |_| encode(&sample))? {
        samples.extend(decode::<B>(&got)?);
    }
    samples.sort_unstable();
    let splitters: Vec<Tagged<B>> = (1..p)
        .filter_map(|k| samples.get(k * samples.len() / p))
        .copied()
        .collect();
    // Bucket j takes the keys below splitter j (the last bucket the rest); the shard is sorted.
    let mut cuts = vec![0usize];
    cuts.extend(splitters.iter().map(|s| words.partition_point(|w| w < s)));
    cuts.resize(p, words.len());
    cuts.push(words.len());
    let mut received = words[cuts[r]..cuts[r + 1]].to_vec();
    for (_, got) in ring_all_to_all(t, |to| encode(&words[cuts[to]..cuts[to + 1]]))? {
        received.extend(decode::<B>(&got)?);
    }
    local_sort(&mut received);
    Ok(received)
}
