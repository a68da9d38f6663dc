//! The multi-GPU sort on real GPUs, against std's sort: every key type, both orders, both
//! algorithms, uneven and empty shards, several ranks on one GPU, and failures.
//!
//! Tests that need more GPUs than the machine has are ignored, unless `BITONIC_REQUIRE_GPUS=N`
//! asks for N of them (then they fail); with no GPU at all they fail under
//! `BITONIC_REQUIRE_GPU=1`, like every GPU test. Parts of a test that need more GPUs than the
//! test (`key_value_pairs`, `three_gpus_and_a_host_slice`) skip with a note by the same rule.

mod common;

use bitonic::cuda::multi::{DeviceShard, MultiGpu};
use bitonic::cuda::Gpu;
use bitonic::key::cmp_keys;
use bitonic::multi::{merge_split_share, Algorithm};
use bitonic::Order;
use common::harness::{self, enough_gpus, tests, Needs};
use common::{
    assert_same_bits, make_keys, reference, shard_sets, shards_of, Pattern, TestKey, PATTERNS,
};

fn main() {
    harness::run(tests![
        Needs::Gpus(1) =>
            ranks_sharing_one_gpu, four_ranks_sharing_one_gpu, small_sorts_for_the_sanitizer,
            three_gpus_and_a_host_slice, wrong_shards_are_errors,
            out_of_memory_is_an_error_for_the_whole_sort, key_value_pairs;
        Needs::Gpus(2) => two_gpus, two_ranks_on_each_of_two_gpus;
        Needs::Gpus(4) => four_gpus;
    ]);
}

const ALGORITHMS: [Algorithm; 2] = [Algorithm::MergeSplit, Algorithm::Partition];

/// A sorter with one rank per entry of `ordinals`, or `None` (with a note) when the machine
/// has too few GPUs and nothing requires them.
fn multi_or_skip(test: &str, ordinals: &[usize]) -> Option<MultiGpu> {
    let needed = ordinals.iter().max().map_or(1, |o| o + 1);
    if !enough_gpus(test, needed) {
        return None;
    }
    Some(MultiGpu::new(ordinals).unwrap_or_else(|e| panic!("{test}: {e}")))
}

/// Sorts shards of `lens` keys (one per rank) with both algorithms and orders and compares
/// the joined result with std's sort.
fn check<K: TestKey>(multi: &MultiGpu, lens: &[usize], pattern: Pattern, seed: u64) {
    let all = make_keys::<K>(lens.iter().sum(), pattern, seed);
    let buffers = shards_of(multi, &all, lens, K::from_random(1));
    let views: Vec<_> = buffers
        .iter()
        .zip(lens)
        .map(|(b, &len)| b.slice(0..len))
        .collect();
    for algorithm in ALGORITHMS {
        for order in [Order::Ascending, Order::Descending] {
            let what = format!(
                "{:?} {algorithm:?} {order:?} shards {lens:?} {pattern:?}",
                K::DTYPE
            );
            let sorted = multi
                .sort_shards(&views, order, algorithm)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let mut joined = vec![K::from_random(0); all.len()];
            multi.download(&sorted, &mut joined).unwrap();
            assert_same_bits(&joined, &reference(&all, order), &what);
            if algorithm == Algorithm::MergeSplit {
                let m = *lens.iter().max().unwrap();
                let shares: Vec<usize> = (0..lens.len())
                    .map(|r| merge_split_share(r, m, all.len()))
                    .collect();
                assert_eq!(
                    sorted.iter().map(DeviceShard::len).collect::<Vec<_>>(),
                    shares,
                    "{what}"
                );
            }
        }
    }
    // The inputs are left as they were.
    let mut after = vec![K::from_random(0); all.len()];
    let mut at = 0;
    for (rank, view) in views.iter().enumerate() {
        if !view.is_empty() {
            let stream = multi.gpu(rank).stream();
            stream
                .memcpy_dtoh(view, &mut after[at..at + view.len()])
                .unwrap();
            stream.synchronize().unwrap();
        }
        at += view.len();
    }
    assert_same_bits(&after, &all, "inputs after the sort");
}

fn check_all_types(multi: &MultiGpu, p: usize) {
    for (i, lens) in shard_sets(p).iter().enumerate() {
        for (j, &pattern) in PATTERNS.iter().enumerate() {
            let seed = (i * 10 + j) as u64;
            check::<u32>(multi, lens, pattern, seed);
            check::<f32>(multi, lens, pattern, seed);
            check::<i64>(multi, lens, pattern, seed);
        }
        check::<i32>(multi, lens, Pattern::Random, 7);
        check::<u64>(multi, lens, Pattern::FewDistinct, 8);
        check::<f64>(multi, lens, Pattern::Random, 9);
    }
}

fn ranks_sharing_one_gpu() {
    for ordinals in [vec![0], vec![0, 0], vec![0, 0, 0]] {
        let Some(multi) = multi_or_skip("ranks_sharing_one_gpu", &ordinals) else {
            return;
        };
        check_all_types(&multi, ordinals.len());
    }
}

/// Partition on four ranks: two levels of run merges, runs of every length (empty, a few keys,
/// millions: power-of-two chunks of several passes each), keys alone and key-value pairs.
fn four_ranks_sharing_one_gpu() {
    let Some(multi) = multi_or_skip("four_ranks_sharing_one_gpu", &[0, 0, 0, 0]) else {
        return;
    };
    for lens in shard_sets(4) {
        check::<u32>(&multi, &lens, Pattern::Random, 21);
        check::<f64>(&multi, &lens, Pattern::FewDistinct, 22);
        check_kv::<u32, u32>(&multi, &lens, Pattern::Random, |i| i as u32);
    }
    check::<u32>(
        &multi,
        &[(1 << 21) + 5, 1 << 21, 3, (1 << 20) - 1],
        Pattern::Random,
        23,
    );
    check::<i64>(
        &multi,
        &[1 << 19, 0, 1 << 20, 77_777],
        Pattern::AllEqual,
        24,
    );
}

/// A few sorts with merges on any GPU count, small enough for compute-sanitizer's racecheck
/// (bench/sanitize.sh): two ranks of one GPU, both algorithms, keys alone and key-value pairs.
fn small_sorts_for_the_sanitizer() {
    let Some(multi) = multi_or_skip("small_sorts_for_the_sanitizer", &[0, 0]) else {
        return;
    };
    check::<u32>(&multi, &[20_001, 9_000], Pattern::Random, 11);
    check::<f64>(&multi, &[3_000, 17_000], Pattern::FewDistinct, 12);
    check_kv::<f32, u64>(&multi, &[5_000, 12_345], Pattern::Random, |i| i as u64);
    check_kv::<i64, u32>(&multi, &[7_777, 0], Pattern::FewDistinct, |i| i as u32);
    check_kv::<u64, f64>(&multi, &[3_001, 4_000], Pattern::Random, |i| i as f64 * 0.5);
}

fn two_gpus() {
    if let Some(multi) = multi_or_skip("two_gpus", &[0, 1]) {
        check_all_types(&multi, 2);
        // Larger shards: several tiles and strided passes in every merge.
        check::<u32>(&multi, &[(1 << 21) + 5, 1 << 21], Pattern::Random, 1);
    }
}

fn four_gpus() {
    if let Some(multi) = multi_or_skip("four_gpus", &[0, 1, 2, 3]) {
        check_all_types(&multi, 4);
        check::<f32>(
            &multi,
            &[1 << 20, (1 << 20) - 1, 3, 1 << 19],
            Pattern::Random,
            2,
        );
    }
}

fn two_ranks_on_each_of_two_gpus() {
    if let Some(multi) = multi_or_skip("two_ranks_on_each_of_two_gpus", &[0, 1, 0, 1]) {
        check_all_types(&multi, 4);
    }
}

fn three_gpus_and_a_host_slice() {
    if let Some(multi) = multi_or_skip("three_gpus_and_a_host_slice", &[0, 1, 2]) {
        check_all_types(&multi, 3);
    }
    let Some(multi) = multi_or_skip("three_gpus_and_a_host_slice", &[0]) else {
        return;
    };
    let multi = MultiGpu::all().unwrap_or(multi);
    let all = make_keys::<f64>((1 << 20) + 7, Pattern::Random, 3);
    for algorithm in ALGORITHMS {
        let mut keys = all.clone();
        multi
            .sort_host(&mut keys, Order::Descending, algorithm)
            .unwrap();
        assert_same_bits(&keys, &reference(&all, Order::Descending), "sort_host");
    }
}

fn wrong_shards_are_errors() {
    let Some(multi) = multi_or_skip("wrong_shards_are_errors", &[0, 0]) else {
        return;
    };
    let keys = multi.gpu(0).stream().clone_htod(&[3u32, 1, 2]).unwrap();
    let err = multi
        .sort_shards(&[keys.slice(..)], Order::Ascending, Algorithm::MergeSplit)
        .unwrap_err();
    assert!(err.to_string().contains("one shard per rank"), "{err}");
}

/// A GPU without memory for the sort's buffers: the sort returns the library's error (no hang,
/// no result), and the sorter refuses later sorts instead of waiting on aborted peers.
fn out_of_memory_is_an_error_for_the_whole_sort() {
    let two = Gpu::device_count().is_ok_and(|c| c >= 2);
    let ordinals = if two { vec![0, 1] } else { vec![0, 0] };
    let Some(multi) = multi_or_skip("out_of_memory_is_an_error_for_the_whole_sort", &ordinals)
    else {
        return;
    };
    let victim = multi.gpu(1);
    let (free, _) = victim.context().mem_get_info().unwrap();
    // Leave 640 MiB: room for the upload of a 256 MiB shard (two on one GPU), not for the
    // three 256 MiB buffers each rank's merge-split then needs.
    let hog = unsafe { victim.stream().alloc::<u8>(free - (640 << 20)) }.unwrap();
    let all: Vec<u32> = make_keys((1 << 27) - 64, Pattern::Random, 5);
    let err = multi.sort_host(&mut all.clone(), Order::Ascending, Algorithm::MergeSplit);
    drop(hog);
    // The hog's memory went back to its stream's pool, which hands it to the driver only at a
    // synchronization: until then NCCL's own allocations for the new communicators below fail
    // (ncclUnhandledCudaError, seen on two H200s).
    victim.stream().synchronize().unwrap();
    let err = err.expect_err("the sort cannot have had the memory it needs");
    assert!(matches!(err, bitonic::Error::DeviceMemory { .. }), "{err}");
    if two {
        let again = multi.sort_host(
            &mut all[..1000].to_vec(),
            Order::Ascending,
            Algorithm::Partition,
        );
        let again = again.expect_err("the communicators were aborted");
        assert!(again.to_string().contains("aborted"), "{again}");
    }
    // A new sorter works.
    let multi = MultiGpu::new(&ordinals).unwrap();
    let mut keys = all[..100_000].to_vec();
    multi
        .sort_host(&mut keys, Order::Ascending, Algorithm::MergeSplit)
        .unwrap();
    assert_same_bits(
        &keys,
        &reference(&all[..100_000], Order::Ascending),
        "after the failure",
    );
}

/// Key-value sorts across ranks: values follow their keys, equal keys keep their input order
/// (the values here are the input positions, so any instability shows), every supported pair
/// of widths, both algorithms and orders.
fn check_kv<
    K: TestKey,
    V: cudarc::driver::DeviceRepr + bytemuck::Pod + PartialEq + std::fmt::Debug,
>(
    multi: &MultiGpu,
    lens: &[usize],
    pattern: Pattern,
    value_of: impl Fn(usize) -> V,
) {
    let n: usize = lens.iter().sum();
    let keys = make_keys::<K>(n, pattern, n as u64);
    let values: Vec<V> = (0..n).map(&value_of).collect();
    for algorithm in ALGORITHMS {
        for order in [Order::Ascending, Order::Descending] {
            let what = format!(
                "{:?} values of {} bytes {algorithm:?} {order:?} {lens:?} {pattern:?}",
                K::DTYPE,
                std::mem::size_of::<V>()
            );
            let mut perm: Vec<usize> = (0..n).collect();
            perm.sort_by(|&a, &b| match order {
                Order::Ascending => cmp_keys(&keys[a], &keys[b]),
                Order::Descending => cmp_keys(&keys[b], &keys[a]),
            });
            let want_keys: Vec<K> = perm.iter().map(|&i| keys[i]).collect();
            let want_values: Vec<V> = perm.iter().map(|&i| values[i]).collect();
            // Shards of the given lengths, on their ranks.
            let key_bufs = shards_of(multi, &keys, lens, K::from_random(0));
            let value_bufs = shards_of(multi, &values, lens, value_of(0));
            let key_views: Vec<_> = key_bufs
                .iter()
                .zip(lens)
                .map(|(b, &l)| b.slice(0..l))
                .collect();
            let value_views: Vec<_> = value_bufs
                .iter()
                .zip(lens)
                .map(|(b, &l)| b.slice(0..l))
                .collect();
            let (sorted_keys, sorted_values) = multi
                .sort_pairs_shards(&key_views, &value_views, order, algorithm)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let mut got_keys = vec![K::from_random(0); n];
            let mut got_values = vec![value_of(0); n];
            multi.download(&sorted_keys, &mut got_keys).unwrap();
            multi.download(&sorted_values, &mut got_values).unwrap();
            assert_same_bits(&got_keys, &want_keys, &what);
            assert_eq!(got_values, want_values, "{what}");
        }
    }
}

fn key_value_pairs() {
    for ordinals in [vec![0, 0, 0], vec![0, 1], vec![0, 1, 2, 3]] {
        let Some(multi) = multi_or_skip("key_value_pairs", &ordinals) else {
            continue;
        };
        let p = ordinals.len();
        for lens in shard_sets(p) {
            for pattern in [Pattern::Random, Pattern::FewDistinct, Pattern::AllEqual] {
                check_kv::<u32, u32>(&multi, &lens, pattern, |i| i as u32);
                check_kv::<f32, u64>(&multi, &lens, pattern, |i| (i as u64) << 33 | 1);
                check_kv::<i64, u32>(&multi, &lens, pattern, |i| i as u32 ^ 0x8000_0000);
            }
            check_kv::<f64, f32>(&multi, &lens, Pattern::Random, |i| i as f32);
            check_kv::<i32, i64>(&multi, &lens, Pattern::Sorted, |i| -(i as i64));
            // 64-bit keys with 8-byte values: two sorts, half a value each. Both halves differ
            // from pair to pair, so a half that went elsewhere in either sort shows.
            for pattern in [Pattern::Random, Pattern::AllEqual] {
                let value = |i: usize| (i as u64) << 32 | (i as u64 * 7 + 3);
                check_kv::<u64, u64>(&multi, &lens, pattern, value);
            }
            check_kv::<f64, i64>(&multi, &lens, Pattern::FewDistinct, |i| -(i as i64) - 5);
        }
        // Values of other sizes are refused.
        let keys = multi.upload(&vec![1u64; 4 * p]).unwrap();
        let values = multi.upload(&vec![2u16; 4 * p]).unwrap();
        let err = multi
            .sort_pairs_shards(
                &DeviceShard::views(&keys),
                &DeviceShard::views(&values),
                Order::Ascending,
                Algorithm::MergeSplit,
            )
            .unwrap_err();
        assert!(
            err.to_string().contains("2-byte values with 8-byte keys"),
            "{err}"
        );
        // And the host form.
        let mut k = make_keys::<f32>(100_003, Pattern::FewDistinct, 9);
        let mut v: Vec<u32> = (0..k.len() as u32).collect();
        let want = {
            let mut perm: Vec<usize> = (0..k.len()).collect();
            perm.sort_by(|&a, &b| cmp_keys(&k[a], &k[b]));
            perm.into_iter().map(|i| i as u32).collect::<Vec<_>>()
        };
        multi
            .sort_pairs_host(&mut k, &mut v, Order::Ascending, Algorithm::Partition)
            .unwrap();
        assert_eq!(v, want, "sort_pairs_host");
    }
}
