//! The CPU backend: the strategies [`Strategy::CpuSort`] (the standard library's sort on all
//! cores, the fastest CPU sort here), [`Strategy::CpuNetwork`] and
//! [`Strategy::CpuNetworkSerial`] (the bitonic network, the report's baselines).
//!
//! Every strategy sorts keys as their ordered words ([`crate::key`]): unsigned integers whose
//! order is the keys' order (complemented for descending), so floats sort in total order and
//! one comparison of plain integers decides. Stable sorts order `(word, index)` pairs, which
//! makes equal keys keep their index order.

pub(crate) mod network;
pub(crate) mod topk;

use crate::error::{Error, Result};
use crate::key::{is_narrow, key_from_ordered_bits, ordered_bits, tied_bits, KeyOrder};
use crate::plan::Strategy;
use crate::SortKey;
use rayon::prelude::*;

/// Below this many words a sort stays on the calling thread: rayon's start costs more.
const PARALLEL_MIN_LEN: usize = 1 << 14;

/// Sorts words ascending with `strategy`.
fn sort_words<W: network::Word>(words: &mut [W], strategy: Strategy) {
    match strategy {
        Strategy::CpuSort if words.len() < PARALLEL_MIN_LEN => words.sort_unstable(),
        Strategy::CpuSort => words.par_sort_unstable(),
        Strategy::CpuNetwork => network::sort_parallel(words),
        Strategy::CpuNetworkSerial => network::sort_serial(words),
        other => unreachable!("{other:?} is not a CPU strategy"),
    }
}

/// Sorts `keys` in `order`: maps them to their ordered words, sorts, maps back, bit for bit
/// (the words are a bijection, in numeric float order too). Keys of their word's size are mapped in place; 16-bit keys into a copy of their words (the only
/// allocation, and the only error).
pub(crate) fn sort<K: SortKey>(keys: &mut [K], order: KeyOrder, strategy: Strategy) -> Result<()> {
    let parallel = strategy != Strategy::CpuNetworkSerial && keys.len() >= PARALLEL_MIN_LEN;
    if is_narrow::<K>() {
        let mut words = Vec::new();
        words
            .try_reserve_exact(keys.len())
            .map_err(|_| Error::HostMemory {
                bytes: keys.len() * std::mem::size_of::<K::Bits>(),
                what: "the words of 16-bit keys",
            })?;
        let map = |&key: &K| ordered_bits(key, order);
        let unmap = |(key, &word): (&mut K, &K::Bits)| *key = key_from_ordered_bits(word, order);
        if parallel {
            words.par_extend(keys.par_iter().map(map));
            sort_words(&mut words, strategy);
            keys.par_iter_mut().zip(&words).for_each(unmap);
        } else {
            words.extend(keys.iter().map(map));
            sort_words(&mut words, strategy);
            keys.iter_mut().zip(&words).for_each(unmap);
        }
        return Ok(());
    }
    let words: &mut [K::Bits] = bytemuck::cast_slice_mut(keys);
    let needs_map = K::DTYPE.needs_map(order.order) || order.float == crate::FloatOrder::Numeric;
    if needs_map {
        let map = |w: &mut K::Bits| *w = ordered_bits(bytemuck::cast::<_, K>(*w), order);
        if parallel {
            words.par_iter_mut().for_each(map);
        } else {
            words.iter_mut().for_each(map);
        }
    }
    sort_words(words, strategy);
    if needs_map {
        let unmap = |w: &mut K::Bits| *w = bytemuck::cast(key_from_ordered_bits::<K>(*w, order));
        if parallel {
            words.par_iter_mut().for_each(unmap);
        } else {
            words.iter_mut().for_each(unmap);
        }
    }
    Ok(())
}

/// Sorts each of `rows` (disjoint slices) on its own: rows in parallel (unless the strategy
/// is serial), each row's network on one thread; a single row gets the whole strategy.
pub(crate) fn sort_each<K: SortKey>(
    mut rows: Vec<&mut [K]>,
    order: KeyOrder,
    strategy: Strategy,
) -> Result<()> {
    if rows.len() == 1 {
        return sort(rows.pop().expect("one row"), order, strategy);
    }
    let row_strategy = match strategy {
        Strategy::CpuNetwork => Strategy::CpuNetworkSerial,
        other => other,
    };
    let sort_row = |row: &mut [K]| sort(row, order, row_strategy);
    if strategy == Strategy::CpuNetworkSerial {
        rows.into_iter().try_for_each(sort_row)
    } else {
        rows.into_par_iter().try_for_each(sort_row)
    }
}

/// The stable sorting permutation of `keys`: `(tied word, original index)` pairs sorted,
/// so equal keys (by value, in numeric float order) end in index order.
pub(crate) fn sorted_pairs<K: SortKey>(
    keys: &[K],
    order: KeyOrder,
    strategy: Strategy,
) -> Vec<(K::Bits, usize)> {
    let mut pairs: Vec<(K::Bits, usize)> = if strategy == Strategy::CpuNetworkSerial {
        let pairs = keys.iter().enumerate();
        pairs.map(|(i, &k)| (tied_bits(k, order), i)).collect()
    } else {
        let pairs = keys.par_iter().enumerate();
        pairs.map(|(i, &k)| (tied_bits(k, order), i)).collect()
    };
    sort_words(&mut pairs, strategy);
    pairs
}
