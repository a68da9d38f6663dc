//! Sorts past one GPU sort (`Sorter::sort_large`; with values, `sort_pairs_large` and
//! `argsort_large`), forced on any GPU by small device budgets (`Sorter::device_memory`): every
//! run resident (merged in pieces between sampled splitters), the two-run schedule (one run kept
//! on the GPU, merged backward) and the many-run one (merged in blocks, put in order on the
//! host). Keys against std's sort, bit for bit, for every pattern, both orders, 4-, 8- and
//! 2-byte keys with floats' specials, in place and into an output (the input then unchanged);
//! values and indices against a stable sort (ties in their original order, ±0.0 and NaNs tied
//! in numeric order), every run resident and merged in blocks. Without a GPU the CPU backend sorts.

mod common;

use bitonic::half::f16;
use bitonic::key::cmp_keys_in;
use bitonic::plan::out_of_core::Merge;
use bitonic::{Backend, Error, FloatOrder, Order, SortKey, Sorter};
use common::harness::{self, tests, Needs};
use common::{assert_same_bits, gpu, make_keys, reference, Pattern, TestKey, PATTERNS};

fn main() {
    harness::run(tests![
        Needs::Nothing => cpu_backend_sorts_whatever_the_length;
        Needs::Gpu =>
            every_run_resident, pipelined_when_one_sort_fits, two_runs_merge_on_the_gpu, many_runs_merge_in_blocks,
            other_key_types, pairs_keep_their_values, pairs_past_the_device_merge_in_blocks,
            argsorts_number_the_keys,
            into_an_output_leaves_the_input, short_and_empty_inputs, a_budget_too_small_says_what_it_needs;
    ]);
}

/// Sorts `keys` with `sorter`'s large sort, in place, and checks it against the reference;
/// returns how the runs merged.
fn check<K: TestKey>(sorter: &Sorter, keys: &[K], order: Order, what: &str) -> Merge {
    let mut got = keys.to_vec();
    let plan = sorter
        .clone()
        .order(order)
        .sort_large(&mut got)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_same_bits(&got, &reference(keys, order), what);
    assert_eq!(plan.len, keys.len());
    plan.merge
}

/// A sorter on the GPU with `budget` bytes of device memory for its large sorts.
fn on_gpu(test: &str, budget: usize) -> Sorter<'static> {
    Sorter::new()
        .gpu(gpu(test))
        .backend(Backend::Cuda)
        .device_memory(budget)
}

fn cpu_backend_sorts_whatever_the_length() {
    for len in [0, 1, 1000, 100_003] {
        let keys: Vec<i64> = make_keys(len, Pattern::FewDistinct, 2);
        let sorter = Sorter::new().backend(Backend::Cpu);
        let (mut got, mut ids) = (keys.clone(), (0..len as u64).collect::<Vec<u64>>());
        sorter.sort_pairs_large(&mut got, &mut ids).unwrap();
        let want = stable_order(&keys, Order::Ascending, FloatOrder::Total);
        assert_eq!(ids, want.iter().map(|&i| i as u64).collect::<Vec<_>>());
        let mut indices = vec![0u32; len];
        sorter.argsort_large(&keys, &mut indices).unwrap();
        assert_eq!(indices, want.iter().map(|&i| i as u32).collect::<Vec<_>>());
        let keys: Vec<f32> = make_keys(len, Pattern::Random, 1);
        let sorter = Sorter::new().backend(Backend::Cpu);
        assert_eq!(check(&sorter, &keys, Order::Descending, "cpu"), Merge::None);
        let mut out = vec![0f32; len];
        sorter.sort_large_into(&keys, &mut out).unwrap();
        assert_same_bits(&out, &reference(&keys, Order::Ascending), "cpu into");
    }
}

fn every_run_resident() {
    // The keys fit the budget, one sort of them does not: four runs, pieces of 2^20 keys,
    // samples 1,024 keys apart (ties across runs in the few-distinct and all-equal keys).
    let test = "every_run_resident";
    let len = (1 << 24) + 13;
    let sorter = on_gpu(test, len * 4 * 3 / 2);
    for pattern in PATTERNS {
        for order in [Order::Ascending, Order::Descending] {
            let keys: Vec<u32> = make_keys(len, pattern, 11);
            let what = format!("u32 {pattern:?} {order:?}");
            let merge = check(&sorter, &keys, order, &what);
            assert!(matches!(merge, Merge::Resident { .. }), "{what}: {merge:?}");
        }
    }
    let len = (1 << 23) + 13;
    for pattern in [Pattern::Random, Pattern::FewDistinct] {
        let keys: Vec<f64> = make_keys(len, pattern, 12);
        let what = format!("f64 {pattern:?}");
        let merge = check(
            &on_gpu(test, len * 8 * 3 / 2),
            &keys,
            Order::Descending,
            &what,
        );
        assert!(matches!(merge, Merge::Resident { .. }), "{what}: {merge:?}");
        let mut out = vec![0f64; len];
        let plan = on_gpu(test, len * 8 * 3 / 2)
            .sort_large_into(&keys, &mut out)
            .unwrap();
        assert!(
            matches!(plan.merge, Merge::Resident { .. }),
            "{what}: {plan:?}"
        );
        assert_same_bits(&out, &reference(&keys, Order::Ascending), &what);
    }
}

fn pipelined_when_one_sort_fits() {
    // Past the policy's `host.pipeline_from` keys, with the device's free memory: the runs
    // sort as they arrive, the pieces go down as they are made.
    let test = "pipelined_when_one_sort_fits";
    let sorter = Sorter::new().gpu(gpu(test)).backend(Backend::Cuda);
    let len = bitonic::Policy::HOPPER.host.pipeline_from + 5;
    let keys: Vec<i64> = make_keys(len, Pattern::Random, 13);
    let merge = check(&sorter, &keys, Order::Ascending, "pipelined i64");
    assert!(matches!(merge, Merge::Resident { .. }), "{merge:?}");
    // A policy that never pipelines: one in-memory sort.
    let mut policy = bitonic::Policy::HOPPER;
    policy.host.pipeline_from = usize::MAX;
    let merge = check(
        &sorter.policy(policy),
        &keys,
        Order::Ascending,
        "not pipelined",
    );
    assert_eq!(merge, Merge::None);
}

fn two_runs_merge_on_the_gpu() {
    // A little over the keys' bytes (an in-memory sort takes about twice them): two runs,
    // pieces of 2^20 keys.
    let len = (5 << 20) + 12_345;
    let sorter = on_gpu("two_runs_merge_on_the_gpu", len * 4 * 6 / 5);
    for pattern in PATTERNS {
        for order in [Order::Ascending, Order::Descending] {
            let keys: Vec<u32> = make_keys(len, pattern, 2);
            let what = format!("u32 {pattern:?} {order:?}");
            let merge = check(&sorter, &keys, order, &what);
            assert!(
                matches!(merge, Merge::ResidentRun { .. }),
                "{what}: {merge:?}"
            );
        }
    }
}

fn many_runs_merge_in_blocks() {
    // The keys' bytes over four: runs of about a quarter, blocks of 2^16 keys, a last run of
    // a few keys.
    let len = (6 << 20) + 777;
    let sorter = on_gpu("many_runs_merge_in_blocks", len);
    for pattern in PATTERNS {
        for order in [Order::Ascending, Order::Descending] {
            let keys: Vec<f32> = make_keys(len, pattern, 3);
            let what = format!("f32 {pattern:?} {order:?}");
            let merge = check(&sorter, &keys, order, &what);
            assert!(matches!(merge, Merge::Blocks { .. }), "{what}: {merge:?}");
        }
    }
}

fn other_key_types() {
    let test = "other_key_types";
    let len = (3 << 20) + 5;
    // Two runs (budgets over the keys' bytes, in words), then blocks (a quarter of them).
    for (times, kind) in [(6.0 / 5.0, "two runs"), (0.25, "blocks")] {
        let budget = |word_bytes: usize| (len as f64 * word_bytes as f64 * times) as usize;
        let u64s: Vec<u64> = make_keys(len, Pattern::FewDistinct, 4);
        let merge = check(&on_gpu(test, budget(8)), &u64s, Order::Ascending, kind);
        assert_ne!(merge, Merge::None, "u64 {kind}");
        let i64s: Vec<i64> = make_keys(len, Pattern::Random, 5);
        let merge = check(&on_gpu(test, budget(8)), &i64s, Order::Descending, kind);
        assert_ne!(merge, Merge::None, "i64 {kind}");
        // 16-bit keys sort as widened words: their budget counts those.
        let halves: Vec<f16> = make_keys(len, Pattern::Random, 6);
        let merge = check(&on_gpu(test, budget(4)), &halves, Order::Ascending, kind);
        assert_ne!(merge, Merge::None, "f16 {kind}");
    }
}

fn into_an_output_leaves_the_input() {
    let test = "into_an_output_leaves_the_input";
    let len = (4 << 20) + 3;
    for budget in [len * 4 * 6 / 5, len] {
        let keys: Vec<i32> = make_keys(len, Pattern::Random, 7);
        let before = keys.clone();
        let mut out = vec![0i32; len];
        let plan = on_gpu(test, budget)
            .sort_large_into(&keys, &mut out)
            .unwrap();
        assert!(plan.runs.len() > 1, "{plan:?}");
        assert_same_bits(&keys, &before, "the input");
        assert_same_bits(&out, &reference(&keys, Order::Ascending), "into");
    }
    let mut short = vec![0u32; 5];
    let refused = on_gpu(test, 1 << 30).sort_large_into(&[1u32, 2, 3], &mut short);
    assert!(
        matches!(refused, Err(Error::LengthMismatch { .. })),
        "{refused:?}"
    );
}

fn short_and_empty_inputs() {
    let test = "short_and_empty_inputs";
    for len in [0, 1, 2, 1000, 65_537] {
        let keys: Vec<u64> = make_keys(len, Pattern::Random, 8);
        let merge = check(&on_gpu(test, 1 << 30), &keys, Order::Descending, "short");
        assert_eq!(merge, Merge::None, "{len} keys");
    }
    // Without a budget: what the device has free.
    let keys: Vec<u32> = make_keys(1 << 20, Pattern::Random, 9);
    let sorter = Sorter::new().gpu(gpu(test)).backend(Backend::Cuda);
    assert_eq!(
        check(&sorter, &keys, Order::Ascending, "free memory"),
        Merge::None
    );
}

fn a_budget_too_small_says_what_it_needs() {
    let test = "a_budget_too_small_says_what_it_needs";
    let mut keys: Vec<u32> = make_keys(1 << 22, Pattern::Random, 10);
    let before = keys.clone();
    match on_gpu(test, 64 << 10).sort_large(&mut keys) {
        Err(Error::DeviceMemory { bytes, what }) => {
            assert!(bytes > 64 << 10, "{bytes}");
            assert!(what.contains("out-of-core"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    assert_same_bits(&keys, &before, "a refused sort's keys");
}

/// The stable order of `keys` in `order` and `float`: their indices, ties in index order.
fn stable_order<K: SortKey>(keys: &[K], order: Order, float: FloatOrder) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..keys.len()).collect();
    indices.sort_by(|&a, &b| {
        let by_key = cmp_keys_in(&keys[a], &keys[b], float);
        match order {
            Order::Ascending => by_key,
            Order::Descending => by_key.reverse(),
        }
    });
    indices
}

/// `sort_pairs_large` of `keys` with their indices as values (of `V`) on `sorter`, against the
/// stable order on the host (keys compared as the sort compares them: bit for bit in total
/// order); returns how the runs merged.
fn check_pairs<K: TestKey, V: bitonic::SortIndex + bytemuck::Pod + PartialEq + std::fmt::Debug>(
    sorter: &Sorter,
    keys: &[K],
    (order, float): (Order, FloatOrder),
) -> Merge {
    let what = format!(
        "{} -> {} bytes, {order:?} {float:?}",
        K::DTYPE.name(),
        size_of::<V>()
    );
    let (mut got, mut ids) = (
        keys.to_vec(),
        (0..keys.len()).map(V::from_usize).collect::<Vec<V>>(),
    );
    let plan = sorter.sort_pairs_large(&mut got, &mut ids).unwrap();
    let want = stable_order(keys, order, float);
    let want_ids: Vec<V> = want.iter().map(|&i| V::from_usize(i)).collect();
    assert!(ids == want_ids, "{what}: values out of place");
    // Keys equal by value: bit for bit in total order; in numeric order the GPU writes the
    // canonical keys (±0.0 as +0.0, NaNs as one NaN), as its in-memory key-value sort does.
    for (j, &i) in want.iter().enumerate() {
        let same = cmp_keys_in(&got[j], &keys[i], float) == std::cmp::Ordering::Equal;
        assert!(same, "{what}: key {j} is {:?}, want {:?}", got[j], keys[i]);
    }
    plan.merge
}

/// The stable argsort of `keys` by `sorter`'s large argsort, into indices of `I`, against the
/// host's; returns how the runs merged.
fn check_argsort<
    K: TestKey,
    I: bitonic::SortIndex + bytemuck::Pod + PartialEq + std::fmt::Debug,
>(
    sorter: &Sorter,
    keys: &[K],
    (order, float): (Order, FloatOrder),
    what: &str,
) -> Merge {
    let before = keys.to_vec();
    let mut indices = vec![I::from_usize(0); keys.len()];
    let plan = sorter
        .clone()
        .order(order)
        .float_order(float)
        .argsort_large(keys, &mut indices)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let want: Vec<I> = stable_order(keys, order, float)
        .into_iter()
        .map(I::from_usize)
        .collect();
    assert!(indices == want, "{what}: indices out of place");
    assert_same_bits(keys, &before, &format!("{what}: the input"));
    plan.merge
}

fn pairs_keep_their_values() {
    let test = "pairs_keep_their_values";
    let len = (1 << 22) + 7;
    // Twice the pairs' bytes: every run resident (one sort of them does not fit).
    let cases = [
        (Pattern::FewDistinct, Order::Ascending, FloatOrder::Total),
        (Pattern::Random, Order::Descending, FloatOrder::Numeric),
        (Pattern::AllEqual, Order::Descending, FloatOrder::Total),
    ];
    for (pattern, order, float) in cases {
        let sorter = |bytes: usize| {
            on_gpu(test, len * bytes * 2)
                .order(order)
                .float_order(float)
        };
        let u32s: Vec<u32> = make_keys(len, pattern, 14);
        let merge = check_pairs::<u32, u32>(&sorter(8), &u32s, (order, float));
        assert!(matches!(merge, Merge::Resident { .. }), "u32: {merge:?}");
        // f32 keys (NaNs of both signs, ±0.0, infinities) with 8-byte values.
        let f32s: Vec<f32> = make_keys(len, pattern, 15);
        let merge = check_pairs::<f32, u64>(&sorter(12), &f32s, (order, float));
        assert!(matches!(merge, Merge::Resident { .. }), "f32: {merge:?}");
    }
    // Too little memory for one block's sort: refused, nothing moved.
    let keys: Vec<u32> = make_keys(len, Pattern::Random, 16);
    let (mut got, mut ids) = (keys.clone(), vec![7u32; len]);
    let refused = on_gpu(test, 64 << 10).sort_pairs_large(&mut got, &mut ids);
    assert!(
        matches!(refused, Err(Error::DeviceMemory { .. })),
        "{refused:?}"
    );
    assert_same_bits(&got, &keys, "refused pairs' keys");
    assert!(ids.iter().all(|&v| v == 7), "refused pairs' values");
    // Values of 2 bytes: not sorted out of core.
    let mut shorts = vec![0u16; len];
    let refused = on_gpu(test, len * 8 * 2).sort_pairs_large(&mut got, &mut shorts);
    assert!(matches!(refused, Err(Error::Unsupported(_))), "{refused:?}");
}

fn pairs_past_the_device_merge_in_blocks() {
    // A quarter of the pairs' bytes: runs of about an eighth, merged in blocks through the
    // host; ties across runs and blocks (few distinct, all equal) keep their order.
    let test = "pairs_past_the_device_merge_in_blocks";
    let len = (3 << 20) + 777;
    let cases = [
        (Pattern::FewDistinct, Order::Ascending, FloatOrder::Total),
        (Pattern::Random, Order::Descending, FloatOrder::Numeric),
        (Pattern::AllEqual, Order::Ascending, FloatOrder::Numeric),
        (Pattern::Reversed, Order::Descending, FloatOrder::Total),
    ];
    let blocks = |merge: Merge, what: &str| {
        assert!(matches!(merge, Merge::Blocks { .. }), "{what}: {merge:?}");
    };
    for (pattern, order, float) in cases {
        let sorter = |bytes: usize| {
            on_gpu(test, len * bytes / 4)
                .order(order)
                .float_order(float)
        };
        let what = |kind: &str| format!("{kind} {pattern:?} {order:?} {float:?}");
        let u32s: Vec<u32> = make_keys(len, pattern, 19);
        let merge = check_pairs::<u32, u32>(&sorter(8), &u32s, (order, float));
        blocks(merge, &what("u32 -> u32"));
        let f32s: Vec<f32> = make_keys(len, pattern, 20);
        let merge = check_pairs::<f32, u64>(&sorter(12), &f32s, (order, float));
        blocks(merge, &what("f32 -> u64"));
        let f64s: Vec<f64> = make_keys(len, pattern, 21);
        let merge = check_argsort::<f64, i64>(&sorter(16), &f64s, (order, float), "f64 argsort");
        blocks(merge, &what("f64 argsort"));
        // 16-bit keys sort as widened words: their budget counts those.
        let halves: Vec<f16> = make_keys(len, pattern, 22);
        let merge = check_argsort::<f16, u32>(&sorter(8), &halves, (order, float), "f16 argsort");
        blocks(merge, &what("f16 argsort"));
    }
}

fn argsorts_number_the_keys() {
    let test = "argsorts_number_the_keys";
    let len = (1 << 22) + 7;
    for pattern in [Pattern::Random, Pattern::FewDistinct, Pattern::Sorted] {
        let keys: Vec<u64> = make_keys(len, pattern, 17);
        let want = stable_order(&keys, Order::Ascending, FloatOrder::Total);
        let mut indices = vec![0u32; len];
        let plan = on_gpu(test, len * 12 * 2)
            .argsort_large(&keys, &mut indices)
            .unwrap();
        assert!(
            matches!(plan.merge, Merge::Resident { .. }),
            "{pattern:?}: {plan:?}"
        );
        let want32: Vec<u32> = want.iter().map(|&i| i as u32).collect();
        assert_same_bits(
            &indices,
            &want32,
            &format!("u64 keys, u32 indices, {pattern:?}"),
        );
        let mut wide = vec![0i64; len];
        let sorter = on_gpu(test, len * 16 * 2).order(Order::Descending);
        sorter.argsort_large(&keys, &mut wide).unwrap();
        let want = stable_order(&keys, Order::Descending, FloatOrder::Total);
        let want64: Vec<i64> = want.iter().map(|&i| i as i64).collect();
        assert_same_bits(
            &wide,
            &want64,
            &format!("u64 keys, i64 indices, {pattern:?}"),
        );
    }
    // Short arrays: one in-memory argsort.
    let keys: Vec<f32> = make_keys(1000, Pattern::Random, 18);
    let mut indices = vec![0usize; 1000];
    let plan = on_gpu(test, 1 << 30)
        .argsort_large(&keys, &mut indices)
        .unwrap();
    assert_eq!(plan.merge, Merge::None);
    let want = stable_order(&keys, Order::Ascending, FloatOrder::Total);
    assert_eq!(indices, want);
}
