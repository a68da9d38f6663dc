//! Multi-rank sorting with simulated ranks (one thread each, the same code above the
//! transport that GPUs will use): p = 1…8, uneven and empty shards, equal keys, both
//! algorithms and orders, against std's sort; and a failing rank stops every rank.

mod common;

use bitonic::multi::{
    merge_split_share, simulate, sort_sharded, Algorithm, ThreadTransport, Transport,
};
use bitonic::{Order, SortKey};
use common::{assert_same_bits, make_keys, reference, Pattern, TestKey};

const ALGORITHMS: [Algorithm; 2] = [Algorithm::MergeSplit, Algorithm::Partition];

fn check<K: TestKey>(shard_lens: &[usize], pattern: Pattern, seed: u64) {
    let all = make_keys::<K>(shard_lens.iter().sum(), pattern, seed);
    let mut shards = Vec::new();
    let mut at = 0;
    for &len in shard_lens {
        shards.push(all[at..at + len].to_vec());
        at += len;
    }
    for algorithm in ALGORITHMS {
        for order in [Order::Ascending, Order::Descending] {
            let parts = simulate(&shards, order, algorithm).unwrap();
            assert_eq!(parts.len(), shard_lens.len());
            if algorithm == Algorithm::MergeSplit {
                // The GPUs return the same shares (src/cuda/multi/).
                let (m, n) = (*shard_lens.iter().max().unwrap(), all.len());
                let shares: Vec<usize> = (0..parts.len())
                    .map(|r| merge_split_share(r, m, n))
                    .collect();
                assert_eq!(parts.iter().map(Vec::len).collect::<Vec<_>>(), shares);
            }
            let joined: Vec<K> = parts.concat();
            let what = format!(
                "{:?} {algorithm:?} {order:?} shards {shard_lens:?} {pattern:?}",
                K::DTYPE
            );
            assert_same_bits(&joined, &reference(&all, order), &what);
        }
    }
}

#[test]
fn every_rank_count_up_to_eight() {
    for p in 1..=8usize {
        let even: Vec<usize> = vec![1000; p];
        let uneven: Vec<usize> = (0..p).map(|r| (r * 977 + 13) % 2500).collect();
        let with_empty: Vec<usize> = (0..p)
            .map(|r| if r % 3 == 1 { 0 } else { 700 + r })
            .collect();
        for lens in [&even, &uneven, &with_empty] {
            check::<u32>(lens, Pattern::Random, p as u64);
            check::<f64>(lens, Pattern::FewDistinct, p as u64);
        }
        check::<i64>(&uneven, Pattern::AllEqual, 3);
        check::<f32>(&even, Pattern::Reversed, 4);
        check::<i32>(&with_empty, Pattern::Sorted, 5);
        check::<u64>(&vec![0; p], Pattern::Random, 6);
    }
}

#[test]
fn equal_keys_still_split_evenly() {
    let shards = vec![vec![7u32; 4000], vec![7; 10], vec![7; 0], vec![7; 2000]];
    let parts = simulate(&shards, Order::Ascending, Algorithm::Partition).unwrap();
    let biggest = parts.iter().map(Vec::len).max().unwrap();
    assert!(
        biggest < 3000,
        "sizes {:?}",
        parts.iter().map(Vec::len).collect::<Vec<_>>()
    );
}

#[test]
fn a_failing_rank_stops_every_rank() {
    for algorithm in ALGORITHMS {
        let ends = ThreadTransport::group(4);
        let shard: Vec<u32> = (0..1000).rev().collect();
        let local = |w: &mut [u32]| w.sort_unstable();
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ends
                .iter()
                .map(|end| {
                    let shard = &shard;
                    scope.spawn(move || {
                        if end.rank() == 2 {
                            end.abort(); // this "device" fails before sending anything
                            return Err(bitonic::Error::PeerFailed);
                        }
                        sort_sharded(end, shard, Order::Ascending, algorithm, &local)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, result) in results.iter().enumerate() {
            let err = result.as_ref().expect_err("no rank may return a result");
            assert!(
                err.to_string().contains("another rank"),
                "rank {rank}: {err}"
            );
        }
        let _ = u32::DTYPE;
    }
}
