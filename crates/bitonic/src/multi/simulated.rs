//! The multi-GPU sort's schedules over simulated ranks exchanging bytes through
//! [`Transport`] (one thread each: src/multi/threads.rs): the benchmark's and the tests' model
//! of src/cuda/multi, under the `bench` feature. The same rules decide both:
//! `merge_split_rounds`, the splitters, the tile merge.

use super::{
    bucket_bounds, choose_splitters, cut_for, merge_by_tiles, merge_runs, merge_split_rounds,
    sample_positions, Algorithm, Cut, Splitter, MERGE_TILE,
};
use crate::error::{Error, Result};
use crate::key::Bits;
use crate::key::{key_from_ordered_bits, ordered_bits, KeyOrder};
use crate::{Order, SortKey};

/// Moves bytes between ranks: [`super::ThreadTransport`] between simulated ranks. The GPUs
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

/// Sorts the keys of all ranks into global order; each rank passes its shard and gets its
/// part of the result back (sizes may change: see [`super::merge_split_share`] and the splitters).
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
        let key_order = KeyOrder::of(order);
        let mut words: Vec<K::Bits> = shard.iter().map(|&k| ordered_bits(k, key_order)).collect();
        local_sort(&mut words);
        let sorted = match algorithm {
            Algorithm::MergeSplit => merge_split(transport, words, &sizes)?,
            Algorithm::Partition => partition(transport, words, &sizes)?,
        };
        Ok(sorted
            .into_iter()
            .map(|bits| key_from_ordered_bits::<K>(bits, key_order))
            .collect())
    })();
    if result.is_err() {
        transport.abort();
    }
    result
}

/// Sorts one rank's words ascending (the CPU network in simulations).
pub type LocalSort<'a, B> = &'a (dyn Fn(&mut [B]) + Sync);

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
