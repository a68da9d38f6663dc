//! The CPU backends against std's sort: property tests over lengths 0..5000 and every key
//! type and order, plus hand-picked lengths around powers of two for every pattern.

mod common;

use bitonic::{Backend, Order, Sorter};
use common::{assert_same_bits, lengths_around_powers, make_keys, reference, TestKey, PATTERNS};
use proptest::prelude::*;

const CPU_BACKENDS: [Backend; 3] = [Backend::CpuNetworkSerial, Backend::CpuNetwork, Backend::Cpu];
const ORDERS: [Order; 2] = [Order::Ascending, Order::Descending];

fn check<K: TestKey>(keys: &[K]) {
    for backend in CPU_BACKENDS {
        for order in ORDERS {
            let mut got = keys.to_vec();
            let ran = Sorter::new()
                .backend(backend)
                .order(order)
                .sort(&mut got)
                .unwrap();
            assert_eq!(ran.backend, backend);
            let what = format!("{:?} {backend:?} {order:?} len {}", K::DTYPE, keys.len());
            assert_same_bits(&got, &reference(keys, order), &what);
        }
    }
}

fn every_pattern_around_powers<K: TestKey>() {
    for len in lengths_around_powers(15) {
        for pattern in PATTERNS {
            check(&make_keys::<K>(len, pattern, 7));
        }
    }
}

#[test]
fn u32_patterns_around_powers_of_two() {
    every_pattern_around_powers::<u32>();
}
#[test]
fn i32_patterns_around_powers_of_two() {
    every_pattern_around_powers::<i32>();
}
#[test]
fn u64_patterns_around_powers_of_two() {
    every_pattern_around_powers::<u64>();
}
#[test]
fn i64_patterns_around_powers_of_two() {
    every_pattern_around_powers::<i64>();
}
#[test]
fn f32_patterns_around_powers_of_two() {
    every_pattern_around_powers::<f32>();
}
#[test]
fn f64_patterns_around_powers_of_two() {
    every_pattern_around_powers::<f64>();
}

/// Larger than the parallel backend's tile, so its global steps run too.
#[test]
fn parallel_backend_past_its_tile() {
    for len in [(1 << 16) - 1, 1 << 16, (1 << 17) + 3, 300_007] {
        check(&make_keys::<u64>(len, common::Pattern::Random, 11));
        check(&make_keys::<f32>(len, common::Pattern::FewDistinct, 12));
    }
}

#[test]
fn float_total_order_is_documented_order() {
    let mut v = vec![
        1.0f64,
        f64::NAN,
        -0.0,
        f64::NEG_INFINITY,
        0.0,
        -f64::NAN,
        f64::INFINITY,
        -1.0,
    ];
    Sorter::new().backend(Backend::Cpu).sort(&mut v).unwrap();
    let bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
    let want: Vec<u64> = [
        -f64::NAN,
        f64::NEG_INFINITY,
        -1.0,
        -0.0,
        0.0,
        1.0,
        f64::INFINITY,
        f64::NAN,
    ]
    .iter()
    .map(|x| x.to_bits())
    .collect();
    assert_eq!(bits, want);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn u32_any(keys in prop::collection::vec(any::<u32>(), 0..5000)) { check(&keys); }
    #[test]
    fn i32_any(keys in prop::collection::vec(any::<i32>(), 0..5000)) { check(&keys); }
    #[test]
    fn u64_any(keys in prop::collection::vec(any::<u64>(), 0..5000)) { check(&keys); }
    #[test]
    fn i64_any(keys in prop::collection::vec(any::<i64>(), 0..5000)) { check(&keys); }
    #[test]
    fn f32_any_bits(bits in prop::collection::vec(any::<u32>(), 0..5000)) {
        // Arbitrary bit patterns: NaNs of every payload, subnormals, ±0, ±inf.
        check(&bits.into_iter().map(f32::from_bits).collect::<Vec<_>>());
    }
    #[test]
    fn f64_any_bits(bits in prop::collection::vec(any::<u64>(), 0..5000)) {
        check(&bits.into_iter().map(f64::from_bits).collect::<Vec<_>>());
    }
    #[test]
    fn few_distinct_small_values(keys in prop::collection::vec(0u32..4, 0..5000)) { check(&keys); }
}
