//! Seeded test and benchmark data: random, sorted, reversed, few-distinct and all-equal keys.
//! Generation runs on all cores and is reproducible: the same seed gives the same keys on
//! any machine and thread count.

use bitonic::key::cmp_keys;
use bitonic::SortKey;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

/// The shape of generated data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Independent uniform keys (integers over their whole range, floats in [-1, 1]: 16-bit
    /// floats are rounded `f32`s, so 1.0 may come up).
    #[default]
    Random,
    /// Random keys, sorted ascending.
    Sorted,
    /// Random keys, sorted descending.
    Reversed,
    /// Five distinct values in random order.
    FewDistinct,
    /// One value repeated.
    AllEqual,
}

impl Pattern {
    /// `random`, `sorted`, `reversed`, `few-distinct`, `all-equal`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Sorted => "sorted",
            Pattern::Reversed => "reversed",
            Pattern::FewDistinct => "few-distinct",
            Pattern::AllEqual => "all-equal",
        }
    }

    /// Every pattern.
    pub const ALL: [Pattern; 5] = [
        Pattern::Random,
        Pattern::Sorted,
        Pattern::Reversed,
        Pattern::FewDistinct,
        Pattern::AllEqual,
    ];
}

/// Key types that can be drawn at random.
pub trait RandomKey: SortKey {
    fn random(rng: &mut Xoshiro256PlusPlus) -> Self;
}

macro_rules! random_int {
    ($($t:ty),*) => {$(
        impl RandomKey for $t {
            fn random(rng: &mut Xoshiro256PlusPlus) -> Self { rng.random() }
        }
    )*};
}
random_int!(u32, i32, u64, i64);

impl RandomKey for f32 {
    fn random(rng: &mut Xoshiro256PlusPlus) -> Self {
        rng.random::<f32>() * 2.0 - 1.0
    }
}

impl RandomKey for f64 {
    fn random(rng: &mut Xoshiro256PlusPlus) -> Self {
        rng.random::<f64>() * 2.0 - 1.0
    }
}

impl RandomKey for bitonic::half::f16 {
    fn random(rng: &mut Xoshiro256PlusPlus) -> Self {
        Self::from_f32(f32::random(rng))
    }
}

impl RandomKey for bitonic::half::bf16 {
    fn random(rng: &mut Xoshiro256PlusPlus) -> Self {
        Self::from_f32(f32::random(rng))
    }
}

const CHUNK: usize = 1 << 16;

/// One generator per chunk of keys, so generation parallelises and stays reproducible.
fn chunk_rng(seed: u64, chunk: usize) -> Xoshiro256PlusPlus {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for _ in 0..(chunk % 64) {
        rng.jump(); // cheap decorrelation of neighbouring chunks
    }
    Xoshiro256PlusPlus::seed_from_u64(
        rng.random::<u64>() ^ (chunk as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    )
}

/// `len` keys of `pattern`, reproducible from `seed`.
pub fn generate<K: RandomKey>(len: usize, pattern: Pattern, seed: u64) -> Vec<K> {
    let mut keys = vec![K::zeroed(); len];
    fill(&mut keys, pattern, seed);
    keys
}

/// Overwrites `keys` with `pattern`, reproducible from `seed`.
pub fn fill<K: RandomKey>(keys: &mut [K], pattern: Pattern, seed: u64) {
    keys.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = chunk_rng(seed, c);
            chunk.iter_mut().for_each(|k| *k = K::random(&mut rng));
        });
    match pattern {
        Pattern::Random => {}
        Pattern::Sorted => keys.par_sort_unstable_by(cmp_keys),
        Pattern::Reversed => keys.par_sort_unstable_by(|a, b| cmp_keys(b, a)),
        Pattern::FewDistinct => {
            let mut rng = chunk_rng(!seed, 0);
            let pool: Vec<K> = (0..5).map(|_| K::random(&mut rng)).collect();
            keys.par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(c, chunk)| {
                    let mut rng = chunk_rng(seed.rotate_left(17), c);
                    chunk
                        .iter_mut()
                        .for_each(|k| *k = pool[rng.random_range(0..pool.len())]);
                });
        }
        Pattern::AllEqual => {
            if let Some(&first) = keys.first() {
                keys.par_iter_mut().for_each(|k| *k = first);
            }
        }
    }
}

/// Whether `keys` is sorted in `order` (total order for floats); the first offending index.
pub fn first_unsorted<K: SortKey>(keys: &[K], order: bitonic::Order) -> Option<usize> {
    let wrong = match order {
        bitonic::Order::Ascending => std::cmp::Ordering::Greater,
        bitonic::Order::Descending => std::cmp::Ordering::Less,
    };
    keys.par_windows(2)
        .position_first(|w| cmp_keys(&w[0], &w[1]) == wrong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_shaped() {
        let a = generate::<u32>(200_000, Pattern::Random, 1);
        assert_eq!(a, generate::<u32>(200_000, Pattern::Random, 1));
        assert_ne!(a, generate::<u32>(200_000, Pattern::Random, 2));
        let sorted = generate::<f64>(10_000, Pattern::Sorted, 3);
        assert_eq!(first_unsorted(&sorted, bitonic::Order::Ascending), None);
        let reversed = generate::<i64>(10_000, Pattern::Reversed, 3);
        assert_eq!(first_unsorted(&reversed, bitonic::Order::Descending), None);
        let mut few = generate::<u64>(10_000, Pattern::FewDistinct, 4);
        few.sort_unstable();
        few.dedup();
        assert!(few.len() <= 5);
        let equal = generate::<f32>(1000, Pattern::AllEqual, 5);
        assert!(equal.iter().all(|&x| x.to_bits() == equal[0].to_bits()));
    }
}
