//! Numeric float order (`FloatOrder::Numeric`, torch's and numpy's: every NaN after `+inf`,
//! `-0.0` equal to `+0.0`) on the CPU and the GPU, for every float key type, against a stable
//! reference: a sort of keys alone gives every key back bit for bit, in that order; argsorts,
//! key-value sorts and top-k keep equal keys (by value) in input order, and a top-k writes the
//! input's own keys, bit for bit.

mod common;

use bitonic::half::{bf16, f16};
use bitonic::key::cmp_keys_in;
use bitonic::{Backend, FloatOrder, Order, SortKey, Sorter};
use common::harness::{self, tests, Needs};
use common::{make_keys, TestKey, PATTERNS};
use std::cmp::Ordering;

fn main() {
    harness::run(tests![
        Needs::Nothing => cpu_numeric_order;
        Needs::Gpu => gpu_numeric_order;
    ]);
}

const NUMERIC: FloatOrder = FloatOrder::Numeric;

/// `a` against `b` in numeric order, reversed for descending.
fn cmp_in<K: SortKey>(a: &K, b: &K, order: Order) -> Ordering {
    let up = cmp_keys_in(a, b, NUMERIC);
    match order {
        Order::Ascending => up,
        Order::Descending => up.reverse(),
    }
}

/// The stable sorting permutation of each row in numeric order.
fn stable_permutation<K: SortKey>(keys: &[K], row_len: usize, order: Order) -> Vec<usize> {
    keys.chunks(row_len)
        .flat_map(|row| {
            let mut p: Vec<usize> = (0..row.len()).collect();
            p.sort_by(|&a, &b| cmp_in(&row[a], &row[b], order));
            p
        })
        .collect()
}

/// The keys' bits, sorted: to compare two lists as multisets of exact keys.
fn bit_multiset<K: SortKey>(keys: &[K]) -> Vec<u8> {
    let size = std::mem::size_of::<K>();
    let mut words: Vec<&[u8]> = bytemuck::cast_slice::<K, u8>(keys).chunks(size).collect();
    words.sort_unstable();
    words.concat()
}

fn check<K: TestKey>(backend: Backend) {
    let shapes: &[(usize, usize)] = if backend == Backend::Cuda {
        // One row to the merge sorts (key-only and key-value), rows to the pair passes
        // (top-k by sorting: packed in the passes, in one pass at 3 x 5,000).
        &[(1, 4099), (1, 1 << 20), (64, 1000), (3, 5000), (8, 32_768)]
    } else {
        &[(1, 0), (1, 1), (1, 4099), (64, 1000)]
    };
    for &(rows, row_len) in shapes {
        for pattern in PATTERNS {
            let keys: Vec<K> = make_keys(rows * row_len, pattern, 7);
            for order in [Order::Ascending, Order::Descending] {
                let what = format!(
                    "{:?} {rows}x{row_len} {pattern:?} {order:?} on {backend:?}",
                    K::DTYPE
                );
                let sorter = Sorter::new()
                    .backend(backend)
                    .order(order)
                    .float_order(NUMERIC);
                let want = stable_permutation(&keys, row_len.max(1), order);
                // Keys alone: in order, and the same keys bit for bit.
                let mut sorted = keys.clone();
                sorter.sort_rows(&mut sorted, row_len.max(1)).unwrap();
                for (r, row) in sorted.chunks(row_len.max(1)).enumerate() {
                    assert!(
                        row.windows(2)
                            .all(|w| cmp_in(&w[0], &w[1], order) != Ordering::Greater),
                        "{what}: row {r} out of order"
                    );
                    let input = &keys[r * row_len..(r + 1) * row_len];
                    assert_eq!(
                        bit_multiset(row),
                        bit_multiset(input),
                        "{what}: row {r} keys changed"
                    );
                }
                // An argsort: exactly the stable permutation.
                let mut indices = vec![0i64; keys.len()];
                sorter
                    .argsort_rows(&keys, &mut indices, row_len.max(1))
                    .unwrap();
                let got: Vec<usize> = indices.iter().map(|&i| i as usize).collect();
                assert_eq!(got, want, "{what}: argsort");
                // Key-value: the values follow the stable permutation; keys equal by value.
                let mut pair_keys = keys.clone();
                let mut values: Vec<u32> = (0..keys.len() as u32).collect();
                sorter
                    .sort_pairs_rows(&mut pair_keys, &mut values, row_len.max(1))
                    .unwrap();
                for (j, (&v, &p)) in values.iter().zip(&want).enumerate() {
                    let start = j - j % row_len.max(1);
                    assert_eq!(v as usize, start + p, "{what}: value {j}");
                    assert_eq!(
                        cmp_keys_in(&pair_keys[j], &keys[start + p], NUMERIC),
                        Ordering::Equal,
                        "{what}: key {j}"
                    );
                }
                // Top-k: the first k of the stable sort, and the input's keys bit for bit. A k
                // of three quarters of a short row takes the warp sort where a warp holds the
                // row (32-bit keys of 1,000), else selects by sorting (1 x 4,099; 8-byte keys).
                // A k of 1,000 on long rows takes the selects' later passes over partial
                // results, whose last pass reads the keys back. A k of the whole row is a
                // stable sort with indices into outputs of its own (the sort Python's
                // `sort` runs).
                let mut ks = vec![row_len.min(50)];
                if row_len <= 5000 {
                    ks.push(row_len * 3 / 4);
                } else {
                    ks.push(1000);
                }
                ks.push(row_len);
                for k in ks {
                    let mut best = vec![K::zeroed(); rows * k];
                    let mut at = vec![0u32; rows * k];
                    sorter
                        .topk_rows(&keys, &mut best, &mut at, row_len.max(1), k)
                        .unwrap();
                    for r in 0..rows {
                        let got: Vec<usize> =
                            at[r * k..(r + 1) * k].iter().map(|&i| i as usize).collect();
                        assert_eq!(
                            &got[..],
                            &want[r * row_len..r * row_len + k],
                            "{what}: top-{k} of row {r}"
                        );
                        for (j, &i) in got.iter().enumerate() {
                            let (value, key) = (best[r * k + j], keys[r * row_len + i]);
                            assert!(
                                value.to_bits_ordered() == key.to_bits_ordered(),
                                "{what}: top-{k} of row {r}: value {j} is {value:?}, not the \
                                 input's key {key:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}

fn cpu_numeric_order() {
    check::<f32>(Backend::Cpu);
    check::<f64>(Backend::Cpu);
    check::<f16>(Backend::Cpu);
    check::<bf16>(Backend::Cpu);
}

fn gpu_numeric_order() {
    common::gpu("gpu_numeric_order");
    check::<f32>(Backend::Cuda);
    check::<f64>(Backend::Cuda);
    check::<f16>(Backend::Cuda);
    check::<bf16>(Backend::Cuda);
}
