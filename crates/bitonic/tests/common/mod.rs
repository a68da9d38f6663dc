//! Helpers shared by the integration tests: input patterns, the reference sort, and the rule
//! for GPU tests (ignored without a GPU, run and fail under BITONIC_REQUIRE_GPU=1: see
//! [`harness`]).
#![allow(dead_code)]

pub mod harness;
pub mod setting;

use bitonic::{key::cmp_keys, Gpu, Order, SortKey};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The GPU, for a test the harness runs as [`harness::Needs::Gpu`]: it runs one without a GPU
/// only when that is asked for (`BITONIC_REQUIRE_GPU=1`, `--include-ignored`), so that no GPU
/// is a failure here, never a pass.
#[track_caller]
pub fn gpu(test: &str) -> &'static Gpu {
    match Gpu::get() {
        Ok(gpu) => gpu,
        Err(why) if require_env("BITONIC_REQUIRE_GPU") => {
            panic!("{test}: BITONIC_REQUIRE_GPU=1 but there is no GPU: {why}")
        }
        Err(why) => panic!("{test}: there is no GPU: {why}"),
    }
}

pub fn require_env(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// The shapes of test data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Random,
    Sorted,
    Reversed,
    FewDistinct,
    AllEqual,
}

pub const PATTERNS: [Pattern; 5] = [
    Pattern::Random,
    Pattern::Sorted,
    Pattern::Reversed,
    Pattern::FewDistinct,
    Pattern::AllEqual,
];

/// Builds keys from random words; floats also get NaNs of both signs, ±0.0 and ±inf mixed in.
pub trait TestKey: SortKey {
    fn from_random(word: u64) -> Self;
    fn specials() -> Vec<Self> {
        Vec::new()
    }
}

macro_rules! test_int {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            fn from_random(word: u64) -> Self { word as $t }
        }
    )*};
}
test_int!(u32, i32, u64, i64);

impl TestKey for f32 {
    fn from_random(word: u64) -> Self {
        // Mostly ordinary numbers of both signs, over a wide range of magnitudes.
        let mantissa = (word >> 11) as f32 / (1u64 << 53) as f32;
        let exponent = ((word & 0x3f) as i32) - 32;
        let sign = if word & 0x40 != 0 { -1.0 } else { 1.0 };
        sign * mantissa * 2f32.powi(exponent)
    }
    fn specials() -> Vec<Self> {
        vec![
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            -1e-45,
        ]
    }
}

impl TestKey for f64 {
    fn from_random(word: u64) -> Self {
        let mantissa = (word >> 11) as f64 / (1u64 << 53) as f64;
        let exponent = ((word & 0x3ff) as i32) - 512;
        let sign = if word & 0x400 != 0 { -1.0 } else { 1.0 };
        sign * mantissa * 2f64.powi(exponent)
    }
    fn specials() -> Vec<Self> {
        vec![
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            -5e-324,
        ]
    }
}

/// 16-bit floats from random bit patterns: every class (subnormals, NaNs with payloads) comes
/// up, besides the specials.
macro_rules! test_half {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            fn from_random(word: u64) -> Self {
                <$t>::from_bits((word >> 16) as u16)
            }
            fn specials() -> Vec<Self> {
                vec![
                    <$t>::NAN,
                    -<$t>::NAN,
                    <$t>::INFINITY,
                    <$t>::NEG_INFINITY,
                    <$t>::ZERO,
                    <$t>::NEG_ZERO,
                    <$t>::MIN_POSITIVE_SUBNORMAL,
                    -<$t>::MIN_POSITIVE_SUBNORMAL,
                    <$t>::MIN_POSITIVE,
                    <$t>::MAX,
                    <$t>::MIN,
                ]
            }
        }
    )*};
}
test_half!(bitonic::half::f16, bitonic::half::bf16);

/// `len` keys of the given pattern, reproducible from `seed`.
pub fn make_keys<K: TestKey>(len: usize, pattern: Pattern, seed: u64) -> Vec<K> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (len as u64).rotate_left(32));
    let specials = K::specials();
    let mut keys: Vec<K> = (0..len)
        .map(|_| {
            let word: u64 = rng.random();
            // One key in 16 is special (NaN, ±0, ±inf) for floats.
            if !specials.is_empty() && word % 16 == 0 {
                specials[(word >> 8) as usize % specials.len()]
            } else {
                K::from_random(word)
            }
        })
        .collect();
    match pattern {
        Pattern::Random => {}
        Pattern::Sorted => keys.sort_unstable_by(cmp_keys),
        Pattern::Reversed => keys.sort_unstable_by(|a, b| cmp_keys(b, a)),
        Pattern::AllEqual => {
            let first = keys.first().copied();
            keys.iter_mut().for_each(|k| *k = first.unwrap());
        }
        Pattern::FewDistinct => {
            let pool: Vec<K> = keys.iter().take(5).copied().collect();
            keys.iter_mut()
                .for_each(|k| *k = pool[rng.random_range(0..pool.len())]);
        }
    }
    keys
}

/// std's sort in the library's order.
pub fn reference<K: SortKey>(keys: &[K], order: Order) -> Vec<K> {
    use rayon::prelude::*;
    let mut sorted = keys.to_vec();
    sorted.par_sort_unstable_by(cmp_keys);
    if order == Order::Descending {
        sorted.reverse();
    }
    sorted
}

/// Bitwise equality, so that NaN payloads and the sign of zero are checked too.
pub fn assert_same_bits<K: SortKey>(got: &[K], want: &[K], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length changed");
    let got_bits: &[u8] = bytemuck::cast_slice(got);
    let want_bits: &[u8] = bytemuck::cast_slice(want);
    if got_bits != want_bits {
        let size = std::mem::size_of::<K>();
        let at = got_bits
            .iter()
            .zip(want_bits)
            .position(|(a, b)| a != b)
            .unwrap()
            / size;
        panic!(
            "{what}: first difference at index {at} of {}: got {:?}, want {:?}",
            got.len(),
            got[at],
            want[at]
        );
    }
}

/// Lengths around every power of two up to `max_pow`, plus a few odd ones.
pub fn lengths_around_powers(max_pow: u32) -> Vec<usize> {
    let mut lens = vec![0, 1, 2, 3, 5, 7, 100, 1000, 4999];
    for p in 1..=max_pow {
        let x = 1usize << p;
        lens.extend([x - 1, x, x + 1]);
    }
    lens.sort_unstable();
    lens.dedup();
    lens
}

/// Shard lengths for `p` ranks of a multi-GPU sort: even, different by rank (around the tile
/// sizes), every other one empty, a few keys each, and all empty.
pub fn shard_sets(p: usize) -> Vec<Vec<usize>> {
    vec![
        vec![4096; p],
        (0..p).map(|r| (r * 7919 + 1001) % 20_000).collect(),
        (0..p)
            .map(|r| if r % 2 == 1 { 0 } else { 32_769 + r })
            .collect(),
        (0..p).map(|r| [1, 2, 3, 16_383][r % 4]).collect(),
        vec![0; p],
    ]
}

/// `all` cut into shards of `lens` values, each on its rank's GPU of `multi`. CUDA makes no
/// empty buffer: an empty shard is a one-value buffer holding `filler`, of which the tests view
/// nothing.
pub fn shards_of<T: cudarc::driver::DeviceRepr + Copy>(
    multi: &bitonic::cuda::multi::MultiGpu,
    all: &[T],
    lens: &[usize],
    filler: T,
) -> Vec<cudarc::driver::CudaSlice<T>> {
    let mut at = 0;
    lens.iter()
        .enumerate()
        .map(|(rank, &len)| {
            let host = if len == 0 {
                vec![filler]
            } else {
                all[at..at + len].to_vec()
            };
            at += len;
            multi.gpu(rank).stream().clone_htod(&host).unwrap()
        })
        .collect()
}
