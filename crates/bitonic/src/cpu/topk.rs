//! Top-k selection on the CPU ([`crate::Strategy::CpuTopk`]): per row, the
//! `(ordered word, index)` pairs, a selection of the k smallest (`select_nth_unstable`) and a
//! sort of those. The words sort ascending in the order asked for (complemented for the
//! largest keys) and pairs are unique, so the result is the first k of a stable sort. Rows
//! run in parallel; a long row alone is cut into pieces selected in parallel, whose k best
//! are selected from again.

use crate::key::{tied_bits, KeyOrder};
use crate::{SortIndex, SortKey};
use rayon::prelude::*;

/// Below this many keys a row is selected on one thread.
const PARALLEL_MIN_LEN: usize = 1 << 16;

/// Writes each row's first `k` keys of a stable sort of `keys` in `order` (rows of `row_len`,
/// `1 <= k <= row_len`) to `values` and their indices in the row to `indices`, k a row.
pub(crate) fn topk_rows<K: SortKey, I: SortIndex>(
    keys: &[K],
    (values, indices): (&mut [K], &mut [I]),
    (row_len, k): (usize, usize),
    order: KeyOrder,
) {
    let rows = keys.par_chunks(row_len);
    let outputs = values.par_chunks_mut(k).zip(indices.par_chunks_mut(k));
    let many_rows = keys.len() / row_len >= rayon::current_num_threads();
    rows.zip(outputs).for_each(|(row, (values, indices))| {
        let best = if many_rows || row.len() < PARALLEL_MIN_LEN {
            best_of(row, 0, k, order)
        } else {
            best_in_pieces(row, k, order)
        };
        // Each value is its key as it is (not its word's key, canonical in numeric order).
        for ((value, index), &(_, i)) in values.iter_mut().zip(indices).zip(&best) {
            *value = row[i];
            *index = I::from_usize(i);
        }
    });
}

/// The `k` smallest `(ordered word, offset + index)` pairs of `keys`, sorted (all of them,
/// sorted, when there are at most `k`).
fn best_of<K: SortKey>(
    keys: &[K],
    offset: usize,
    k: usize,
    order: KeyOrder,
) -> Vec<(K::Bits, usize)> {
    let pairs = keys.iter().enumerate();
    let pairs = pairs.map(|(i, &key)| (tied_bits(key, order), offset + i));
    smallest(pairs.collect(), k)
}

/// The `k` smallest of `pairs`, sorted.
fn smallest<W: Ord>(mut pairs: Vec<W>, k: usize) -> Vec<W> {
    if k < pairs.len() {
        pairs.select_nth_unstable(k - 1);
        pairs.truncate(k);
    }
    pairs.sort_unstable();
    pairs
}

/// [`best_of`] a long row: its pieces' best k in parallel, then the best k of those.
fn best_in_pieces<K: SortKey>(row: &[K], k: usize, order: KeyOrder) -> Vec<(K::Bits, usize)> {
    let piece = row
        .len()
        .div_ceil(rayon::current_num_threads() * 4)
        .max(PARALLEL_MIN_LEN / 4)
        .max(k);
    let pieces = row.par_chunks(piece).enumerate();
    let best: Vec<_> = pieces
        .flat_map_iter(|(p, keys)| best_of(keys, p * piece, k, order))
        .collect();
    smallest(best, k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::cmp_keys;
    use crate::Order;

    /// The largest (descending) or smallest keys.
    const SELECTS: [Order; 2] = [Order::Descending, Order::Ascending];

    /// [`topk_rows`] of the order given, floats in total order.
    fn topk_rows<K: SortKey, I: SortIndex>(
        keys: &[K],
        row_len: usize,
        k: usize,
        select: Order,
        values: &mut [K],
        indices: &mut [I],
    ) {
        super::topk_rows(keys, (values, indices), (row_len, k), KeyOrder::of(select))
    }

    /// The first k of a stable sort of each row: indices by key (descending for the largest),
    /// ties by index.
    fn reference<K: SortKey>(
        keys: &[K],
        row_len: usize,
        k: usize,
        select: Order,
    ) -> (Vec<K>, Vec<usize>) {
        let (mut values, mut indices) = (Vec::new(), Vec::new());
        for row in keys.chunks(row_len) {
            let mut order: Vec<usize> = (0..row.len()).collect();
            order.sort_by(|&a, &b| match select {
                Order::Descending => cmp_keys(&row[b], &row[a]),
                Order::Ascending => cmp_keys(&row[a], &row[b]),
            });
            values.extend(order[..k].iter().map(|&i| row[i]));
            indices.extend_from_slice(&order[..k]);
        }
        (values, indices)
    }

    fn check<K: SortKey>(keys: &[K], row_len: usize, what: &str) {
        for k in [1, 2, 3, 7, 50, 64, 1000, row_len / 2, row_len - 1, row_len] {
            if k == 0 || k > row_len {
                continue;
            }
            for select in SELECTS {
                let rows = keys.len() / row_len;
                let mut values = vec![keys[0]; rows * k];
                let mut indices = vec![0u32; rows * k];
                topk_rows(keys, row_len, k, select, &mut values, &mut indices);
                let (want_values, want_indices) = reference(keys, row_len, k, select);
                let what = format!("{what}: {rows}x{row_len} k {k} {select:?}");
                let bits = |v: &[K]| bytemuck::cast_slice::<K, u8>(v).to_vec();
                assert_eq!(bits(&values), bits(&want_values), "values of {what}");
                let indices: Vec<usize> = indices.iter().map(|&i| i as usize).collect();
                assert_eq!(indices, want_indices, "indices of {what}");
            }
        }
    }

    /// A reproducible stream of words (xorshift), so the tests need no random crate.
    fn words(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect()
    }

    fn patterns(n: usize, seed: u64) -> Vec<(&'static str, Vec<u64>)> {
        let random = words(n, seed);
        let mut sorted = random.clone();
        sorted.sort_unstable();
        let reversed: Vec<u64> = sorted.iter().rev().copied().collect();
        let few: Vec<u64> = random.iter().map(|w| w % 5).collect();
        vec![
            ("random", random),
            ("sorted", sorted),
            ("reversed", reversed),
            ("few distinct", few),
            ("all equal", vec![42; n]),
        ]
    }

    #[test]
    fn every_type_and_pattern_against_a_stable_sort() {
        for (rows, row_len) in [(1, 1), (1, 2), (3, 31), (2, 1000), (1, 4097), (64, 100)] {
            let n = rows * row_len;
            for (name, w) in patterns(n, row_len as u64) {
                check(
                    &w.iter().map(|&w| w as u32).collect::<Vec<_>>(),
                    row_len,
                    name,
                );
                check(
                    &w.iter().map(|&w| w as i32).collect::<Vec<_>>(),
                    row_len,
                    name,
                );
                check(&w, row_len, name);
                check(
                    &w.iter().map(|&w| w as i64).collect::<Vec<_>>(),
                    row_len,
                    name,
                );
                let f32s = |w: &u64| (*w as i32) as f32 * 0.25;
                check(&w.iter().map(f32s).collect::<Vec<_>>(), row_len, name);
                check(
                    &w.iter().map(|&w| f64::from_bits(w)).collect::<Vec<_>>(),
                    row_len,
                    name,
                );
            }
        }
    }

    #[test]
    fn floats_in_total_order() {
        let specials = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::MIN_POSITIVE,
        ];
        let keys: Vec<f32> = (0..300)
            .map(|i| specials[(i * 7) % specials.len()])
            .collect();
        check(&keys, 300, "f32 specials");
        check(&keys, 30, "f32 specials in rows");
        let wide: Vec<f64> = keys.iter().map(|&k| k as f64).collect();
        check(&wide, 100, "f64 specials");
        // -NaN is the smallest key, +NaN the largest; -0.0 comes before +0.0.
        let mut v = [0f32; 2];
        let mut i = [0usize; 2];
        topk_rows(
            &[0.0, -0.0, f32::NAN],
            3,
            2,
            Order::Descending,
            &mut v,
            &mut i,
        );
        assert!(v[0].is_nan() && v[1].to_bits() == 0 && i == [2, 0]);
        topk_rows(
            &[0.0, -0.0, -f32::NAN],
            3,
            2,
            Order::Ascending,
            &mut v,
            &mut i,
        );
        assert!(v[0].is_nan() && v[1].to_bits() == (-0.0f32).to_bits() && i == [2, 1]);
    }

    /// A long row alone is selected in parallel pieces; ties across pieces go to the smaller
    /// index.
    #[test]
    fn a_long_row_in_pieces() {
        let n = PARALLEL_MIN_LEN * 5 + 3;
        for (name, w) in patterns(n, 9) {
            let keys: Vec<u32> = w.iter().map(|&w| (w % 1000) as u32).collect();
            for k in [1, 10, 1000, 5000] {
                for select in SELECTS {
                    let mut values = vec![0u32; k];
                    let mut indices = vec![0usize; k];
                    topk_rows(&keys, n, k, select, &mut values, &mut indices);
                    let (want_values, want_indices) = reference(&keys, n, k, select);
                    assert_eq!(values, want_values, "{name} k {k} {select:?}");
                    assert_eq!(indices, want_indices, "{name} k {k} {select:?}");
                }
            }
        }
    }
}
