//! Key-value sorts, argsort, rows and segments against a stable std sort of (key, index)
//! pairs, for every key type, both orders and both CPU backends.

mod common;

use bitonic::key::cmp_keys;
use bitonic::{Backend, Order, Sorter};
use common::{assert_same_bits, make_keys, Pattern, TestKey, PATTERNS};
use proptest::prelude::*;

const BACKENDS: [Backend; 2] = [Backend::CpuSerial, Backend::Cpu];
const ORDERS: [Order; 2] = [Order::Ascending, Order::Descending];

/// The stable reference: indices ordered by key (total order), ties by index.
fn reference_permutation<K: TestKey>(keys: &[K], order: Order) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by(|&a, &b| match order {
        Order::Ascending => cmp_keys(&keys[a], &keys[b]),
        Order::Descending => cmp_keys(&keys[b], &keys[a]),
    }); // std's sort_by is stable
    idx
}

fn check_kv<K: TestKey>(keys: &[K]) {
    for backend in BACKENDS {
        for order in ORDERS {
            let sorter = Sorter::new().backend(backend).order(order);
            let want = reference_permutation(keys, order);
            let what = format!("{:?} {backend:?} {order:?} len {}", K::DTYPE, keys.len());

            let perm = sorter.argsort(keys).unwrap();
            assert_eq!(
                perm.iter().map(|&i| i as usize).collect::<Vec<_>>(),
                want,
                "argsort {what}"
            );
            let perm64 = sorter.argsort_u64(keys).unwrap();
            assert!(
                perm64.iter().map(|&i| i as usize).eq(want.iter().copied()),
                "argsort_u64 {what}"
            );

            let mut sorted_keys = keys.to_vec();
            let mut values: Vec<u64> = (0..keys.len() as u64).map(|i| i * 7 + 1).collect();
            sorter.sort_by_key(&mut sorted_keys, &mut values).unwrap();
            let want_keys: Vec<K> = want.iter().map(|&i| keys[i]).collect();
            assert_same_bits(
                &sorted_keys,
                &want_keys,
                &format!("sort_by_key keys {what}"),
            );
            let want_values: Vec<u64> = want.iter().map(|&i| i as u64 * 7 + 1).collect();
            assert_eq!(values, want_values, "sort_by_key values {what}");
        }
    }
}

fn check_rows<K: TestKey>(rows: usize, row_len: usize) {
    let data = make_keys::<K>(
        rows * row_len,
        Pattern::Random,
        (rows * 31 + row_len) as u64,
    );
    for backend in BACKENDS {
        for order in ORDERS {
            let mut got = data.clone();
            Sorter::new()
                .backend(backend)
                .order(order)
                .sort_rows(&mut got, row_len.max(1))
                .unwrap();
            for (r, (got_row, row)) in got
                .chunks(row_len.max(1))
                .zip(data.chunks(row_len.max(1)))
                .enumerate()
            {
                let want = common::reference(row, order);
                assert_same_bits(
                    got_row,
                    &want,
                    &format!("{:?} row {r} of {rows}x{row_len} {order:?}", K::DTYPE),
                );
            }
        }
    }
}

#[test]
fn key_value_every_type_and_pattern() {
    for len in [0, 1, 2, 3, 31, 33, 1000, 1025, 4097, (1 << 14) + 5, 70_001] {
        for pattern in PATTERNS {
            check_kv(&make_keys::<u32>(len, pattern, 1));
            check_kv(&make_keys::<f64>(len, pattern, 2));
        }
        check_kv(&make_keys::<i32>(len, Pattern::FewDistinct, 3));
        check_kv(&make_keys::<u64>(len, Pattern::Random, 4));
        check_kv(&make_keys::<i64>(len, Pattern::AllEqual, 5));
        check_kv(&make_keys::<f32>(len, Pattern::FewDistinct, 6));
    }
}

#[test]
fn rows_of_many_lengths() {
    for (rows, row_len) in [
        (1, 0),
        (5, 1),
        (7, 3),
        (64, 32),
        (100, 33),
        (9, 1023),
        (3, 4096),
        (2, 20_001),
    ] {
        check_rows::<u32>(rows, row_len);
        check_rows::<f32>(rows, row_len);
        check_rows::<i64>(rows, row_len);
    }
    check_rows::<f64>(300, 256);
    check_rows::<u64>(1, 1 << 16);
}

#[test]
fn segments_of_different_lengths() {
    let data = make_keys::<f32>(10_000, Pattern::Random, 9);
    let offsets = [0, 0, 1, 3, 100, 1124, 1124, 5000, 10_000];
    for order in ORDERS {
        let mut got = data.clone();
        Sorter::new()
            .order(order)
            .sort_segments(&mut got, &offsets)
            .unwrap();
        for w in offsets.windows(2) {
            let want = common::reference(&data[w[0]..w[1]], order);
            assert_same_bits(&got[w[0]..w[1]], &want, &format!("segment {w:?} {order:?}"));
        }
    }
}

#[test]
fn bad_shapes_are_errors_not_panics() {
    let s = Sorter::new();
    let mut v = vec![1u32, 2, 3];
    assert!(s
        .sort_rows(&mut v, 2)
        .unwrap_err()
        .to_string()
        .contains("do not split into rows of 2"));
    assert!(s.sort_rows(&mut v, 0).is_err());
    for bad in [&[1, 3][..], &[0, 2][..], &[0, 2, 1, 3][..], &[][..]] {
        assert!(
            s.sort_segments(&mut v, bad)
                .unwrap_err()
                .to_string()
                .contains("segment offsets"),
            "{bad:?}"
        );
    }
    let mut values = vec![0u32; 2];
    assert!(s
        .sort_by_key(&mut v, &mut values)
        .unwrap_err()
        .to_string()
        .contains("3 keys but 2 values"));
    assert_eq!(v, [1, 2, 3], "a refused sort leaves the data alone");
    let gpu = Sorter::new().backend(Backend::Cuda);
    assert!(gpu
        .argsort(&v)
        .unwrap_err()
        .to_string()
        .contains("CPU backends only"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn argsort_is_stable_on_any_floats(bits in prop::collection::vec(any::<u32>(), 0..3000)) {
        check_kv(&bits.into_iter().map(f32::from_bits).collect::<Vec<_>>());
    }

    #[test]
    fn argsort_is_stable_with_many_ties(keys in prop::collection::vec(0i64..5, 0..3000)) {
        check_kv(&keys);
    }
}
