//! The top-k plans: every pass keeps the kernels' contracts, and models of the merge pass.

use super::radix::*;
use super::spread::*;
use super::*;
use crate::policy::TopkPolicy;

/// `base` with its top-k numbers changed by `change`.
fn with_topk(base: &Policy, change: impl FnOnce(&mut TopkPolicy)) -> Policy {
    let mut policy = base.clone();
    change(&mut policy.topk);
    policy
}

/// Every pass's shape keeps the kernel's contract: the chunks cover the row, aligned, the
/// candidate area holds a tile after a flush (or the whole chunk), the buffer fits 64 KiB,
/// each pass reads the k best of every chunk of the one before, and the last has one chunk.
#[test]
fn plans_reduce_to_one_chunk_a_row() {
    let ks = [1, 2, 7, 50, 64, 256, 1000, 1024, 2048];
    let lens = [1, 2, 31, 1000, 4097, 100_003, (1 << 20) + 3, 1 << 31];
    for key_bytes in [2, 4, 8] {
        let composite_bytes = if key_bytes == 8 { 16 } else { 8 };
        for rows in [1, 3, 64, 100_000] {
            for &row_len in &lens {
                for &k in ks.iter().filter(|&&k| k <= row_len) {
                    if rows * row_len > 1 << 31 {
                        continue;
                    }
                    let passes = filter_plan(rows, row_len, k, key_bytes, 132);
                    let what = format!("{rows}x{row_len} k {k} {key_bytes}-byte keys");
                    assert_eq!(passes[0].row_len, row_len, "{what}");
                    assert_eq!(passes.last().unwrap().chunks, 1, "{what}");
                    assert!(passes.len() <= 4, "{what}: {passes:?}");
                    for (i, p) in passes.iter().enumerate() {
                        let element = if i == 0 { key_bytes } else { composite_bytes };
                        assert!(p.chunks * p.chunk_len >= p.row_len, "{what}");
                        assert!((p.chunks - 1) * p.chunk_len < p.row_len, "{what}");
                        assert!(p.chunks == 1 || p.chunk_len % T::CHUNK_ALIGN == 0, "{what}");
                        assert!(p.slots.is_power_of_two(), "{what}");
                        let capacity = p.slots - k;
                        assert!(
                            capacity >= p.chunk_len.min(2 * filter_tile(element)),
                            "{what}"
                        );
                        assert!(p.slots * composite_bytes <= 64 * 1024, "{what}: {p:?}");
                        if let Some(next) = passes.get(i + 1) {
                            assert_eq!(next.row_len, p.chunks * k, "{what}");
                            assert!(next.row_len < p.row_len, "{what}");
                        }
                    }
                }
            }
        }
    }
}

/// A policy with `topk_radix_per_thread` = `per_thread` and `topk_radix_stream_chunks` =
/// `stream_chunks` (1: no segments), and no sampled select.
fn radix_policy(per_thread: usize, stream_chunks: usize) -> Policy {
    with_topk(&Policy::HOPPER, |t| {
        t.radix_per_thread = per_thread;
        t.radix_stream_chunks = stream_chunks;
        t.sampled_max_k = 0;
    })
}

/// A policy that streams every k it can (the GPU tests'): no row cut for the grid's sake,
/// segments of up to `stream_chunks` chunks.
fn unspread(stream_chunks: usize) -> Policy {
    with_topk(&radix_policy(32, stream_chunks), |t| {
        t.radix_blocks_per_sm = 0;
        t.radix_stream_min_k = 1;
        t.radix_stream_max_k = 1024;
    })
}

/// Every radix pass fits a block's registers (a segment: whole blocks of registers, at
/// most the policy's many), the chunks cover the row, each pass reads the k best of every
/// chunk of the one before and shrinks the row, and the last has one chunk.
#[test]
fn radix_plans_reduce_to_one_chunk_a_row() {
    let most = T::THREADS as usize * T::RADIX_PER_THREAD[2];
    assert_eq!(most, T::RADIX_CHUNK);
    let ks = [1, 2, 7, 50, 64, 256, 1000, 1024, 2048];
    let lens = [
        1,
        2,
        31,
        1000,
        4097,
        8191,
        8192,
        8193,
        100_003,
        (1 << 20) + 3,
        1 << 28,
    ];
    let policies = [
        radix_policy(32, 1),
        radix_policy(32, 64),
        radix_policy(32, 5),
        unspread(64),
        Policy::HOPPER,
        with_topk(&Policy::HOPPER, |t| {
            t.radix_blocks_per_sm = 0;
        }),
    ];
    for policy in &policies {
        for (rows, key_bytes) in [1, 3, 64, 100_000]
            .into_iter()
            .flat_map(|r| [(r, 2), (r, 8)])
        {
            for &row_len in &lens {
                for &k in ks.iter().filter(|&&k| k <= row_len) {
                    if rows * row_len > 1 << 31 || (row_len > most && k > T::RADIX_MAX_K) {
                        continue;
                    }
                    let passes = radix_plan(rows, row_len, k, key_bytes, 132, policy);
                    let what = format!("{rows}x{row_len} k {k} {policy:?}");
                    assert_eq!(passes[0].row_len, row_len, "{what}");
                    assert_eq!(passes.last().unwrap().chunks, 1, "{what}");
                    assert!(passes.len() <= 8, "{what}: {passes:?}");
                    for (i, p) in passes.iter().enumerate() {
                        assert!(p.chunks * p.chunk_len >= p.row_len, "{what}");
                        assert!((p.chunks - 1) * p.chunk_len < p.row_len, "{what}");
                        let sorted_runs =
                            merges(key_bytes, k) || passes[0].kind == RadixKind::Sampled;
                        let merge = i == 1 && sorted_runs && passes[0].chunks <= T::MERGE_RUNS_MOST;
                        assert_eq!(p.kind == RadixKind::Merge, merge, "{what}");
                        match p.kind {
                            RadixKind::Merge => {
                                // A row's runs in one block, in the first pass's module.
                                assert_eq!((p.chunks, p.chunk_len), (1, p.row_len), "{what}");
                                assert_eq!(p.per_thread, passes[0].per_thread, "{what}");
                            }
                            RadixKind::Segments => {
                                // The first pass: segments of whole blocks of 32 a thread,
                                // at least T::STREAM_MIN_CHUNKS, as many as the policy allows,
                                // for the policy's k whose threshold a block of registers
                                // can give; below the policy's k, segments of exactly
                                // T::STREAM_MIN_CHUNKS, a pass fewer than chunks, and enough
                                // of them to fill the GPU.
                                assert_eq!((i, p.per_thread), (0, 32), "{what}");
                                assert!(8 * k <= most, "{what}");
                                assert!(k <= policy.topk.radix_stream_max_k, "{what}");
                                if k < policy.topk.radix_stream_min_k {
                                    assert_eq!(p.chunk_len, T::STREAM_MIN_CHUNKS * most, "{what}");
                                    assert!(
                                        rows * p.chunks >= T::STREAM_BLOCKS_PER_SM * 132,
                                        "{what}"
                                    );
                                    let plain = radix_passes(
                                        rows,
                                        row_len,
                                        k,
                                        key_bytes,
                                        132,
                                        policy,
                                        Streaming::Off,
                                    );
                                    assert!(passes.len() < plain.len(), "{what}");
                                }
                                assert_eq!(p.chunk_len % most, 0, "{what}");
                                assert!(p.chunk_len >= T::STREAM_MIN_CHUNKS * most, "{what}");
                                assert!(
                                    p.chunk_len <= most * policy.topk.radix_stream_chunks,
                                    "{what}"
                                );
                            }
                            RadixKind::Sampled => {
                                // The first pass, for the policy's k and 2- or 4-byte
                                // keys, chunks of 16-byte multiples, each but a row's last
                                // at least T::SAMPLED_MIN_LEN and 8 k.
                                assert_eq!(i, 0, "{what}");
                                assert!(key_bytes <= 4, "{what}");
                                let long = row_len > policy.topk.filter_above;
                                assert!(long || k >= policy.topk.sampled_min_k, "{what}");
                                assert!(k <= policy.topk.sampled_max_k, "{what}");
                                assert!(p.chunks == 1 || p.chunk_len % T::CHUNK_ALIGN == 0);
                                assert!(p.chunk_len >= sampled_chunk(k, policy), "{what}");
                            }
                            RadixKind::Chunks => {
                                assert!(
                                    p.chunk_len <= p.per_thread * T::THREADS as usize,
                                    "{what}"
                                );
                                assert!(
                                    p.chunks == 1
                                        || p.chunk_len == p.per_thread * T::THREADS as usize,
                                    "{what}"
                                );
                            }
                        }
                        if let Some(next) = passes.get(i + 1) {
                            assert_eq!(next.row_len, p.chunks * k, "{what}");
                            assert!(next.row_len * 4 <= p.row_len, "{what}: {passes:?}");
                        }
                    }
                }
            }
        }
    }
    let (no_streams, streams) = (&radix_policy(32, 1), &radix_policy(32, 64));
    fn plan(
        rows: usize,
        row_len: usize,
        k: usize,
        key_bytes: usize,
        policy: &Policy,
    ) -> Vec<(usize, usize, bool, bool)> {
        radix_plan(rows, row_len, k, key_bytes, 132, policy)
            .iter()
            .map(|p| {
                let (stream, merge) = (p.kind == RadixKind::Segments, p.kind == RadixKind::Merge);
                (p.chunks, p.chunk_len, stream, merge)
            })
            .collect()
    }
    // 16,384 rows of 1,024: one pass, 4 elements a thread, with or without streams.
    for policy in [no_streams, streams] {
        let short = radix_plan(16_384, 1024, 50, 4, 132, policy);
        assert_eq!((short.len(), short[0].per_thread), (1, 4));
    }
    // One row of 2^24: 2,048 chunks of 8,192, then the 2,048 x 50 partials spread over
    // the GPU in chunks of 4,096, then those results; at k = 256 too, since 1,056 blocks
    // wanted leave segments of two chunks, too few to stream.
    assert_eq!(
        plan(1, 1 << 24, 50, 8, streams),
        [
            (2048, 8192, false, false),
            (25, 4096, false, false),
            (1, 1250, false, false)
        ]
    );
    assert!(radix_plan(1, 1 << 24, 256, 4, 132, streams)
        .iter()
        .all(|p| p.kind != RadixKind::Segments));
    // With u64 composites, a row's 4 sorted runs of k merge in one block; streamed (k from
    // 100 to 512, and below where it saves a pass), a row of 32,768 is one segment, whose
    // block writes the row's result.
    assert_eq!(
        plan(4096, 32_768, 50, 4, no_streams),
        [(4, 8192, false, false), (1, 200, false, true)]
    );
    assert_eq!(
        plan(4096, 32_768, 50, 4, streams),
        [(1, 32_768, true, false)]
    );
    // Below the policy's k, one row of 2^24 streams 512 segments of 4 chunks where that
    // leaves the partials one block (k = 8), not where it saves no pass (k = 1, 50), and
    // 64 rows of 20,000 keep their chunks: 64 segments would not fill the GPU.
    assert_eq!(
        plan(1, 1 << 24, 8, 4, streams),
        [(512, 32_768, true, false), (1, 4096, false, false)]
    );
    for k in [1, 50] {
        assert!(radix_plan(1, 1 << 24, k, 4, 132, streams)
            .iter()
            .all(|p| p.kind != RadixKind::Segments));
    }
    assert!(radix_plan(64, 20_000, 8, 4, 132, streams)
        .iter()
        .all(|p| p.kind != RadixKind::Segments));
    for k in [100, 256, 512] {
        assert_eq!(
            plan(4096, 32_768, k, 2, streams),
            [(1, 32_768, true, false)]
        );
    }
    assert!(radix_plan(4096, 32_768, 1024, 2, 132, streams)
        .iter()
        .all(|p| p.kind != RadixKind::Segments));
    // 256 rows of 151,936 at k = 256: 5 segments a row (1,056 blocks wanted), merged; a
    // row of 2^28 at k = 100: 1,024 segments of 32 chunks (1,056 wanted, of whole chunks).
    assert_eq!(
        plan(256, 151_936, 256, 4, streams),
        [(5, 32_768, true, false), (1, 1280, false, true)]
    );
    assert_eq!(
        plan(1, 1 << 28, 100, 4, streams)[0],
        (1024, 1 << 18, true, false)
    );
    // No spreading, every k up to 1,024 (the GPU tests' policies): a row is one segment,
    // or segments of up to the policy's chunks; too large a k for a threshold of one block
    // of registers, or segments of fewer than 4 chunks, do not stream.
    assert_eq!(
        plan(3, 40_000, 1, 4, &unspread(64)),
        [(1, 40_960, true, false)]
    );
    assert_eq!(
        plan(3, 100_003, 1024, 4, &unspread(64)),
        [(1, 106_496, true, false)]
    );
    assert_eq!(
        plan(2, 100_003, 50, 4, &unspread(4)),
        [(4, 32_768, true, false), (1, 200, false, true)]
    );
    assert_eq!(
        plan(2, 100_003, 1000, 2, &unspread(4)),
        [(4, 32_768, true, false), (1, 4000, false, false)]
    );
    assert!(radix_plan(3, 100_003, 1025, 4, 132, &unspread(64))
        .iter()
        .all(|p| p.kind != RadixKind::Segments));
    assert!(radix_plan(3, 20_000, 50, 4, 132, &unspread(64))
        .iter()
        .all(|p| p.kind != RadixKind::Segments));
    // The GPU tests' merges (tests/topk.rs): 7 runs of crowded keys, 2 of tied ones.
    for ((rows, row_len), runs) in [((3, 26_000), 7), ((3, 4097), 2)] {
        let passes = radix_plan(rows, row_len, 256, 2, 132, streams);
        assert_eq!((passes[0].chunks, passes[1].kind), (runs, RadixKind::Merge));
    }
    // A row of 151,936 without streams is 18 whole chunks and one shorter.
    let logits = radix_plan(256, 151_936, 50, 4, 132, no_streams);
    assert_eq!((logits[0].chunks, logits[0].chunk_len), (19, 8192));
    // At most 16 a thread: chunks of 4,096, no segments, and still one pass for short rows.
    let sixteen = &radix_policy(16, 64);
    let half = radix_plan(4096, 32_768, 50, 8, 132, sixteen);
    assert_eq!((half[0].chunks, half[0].per_thread, half.len()), (8, 16, 2));
    for row_len in [1000, 4096, 8192, 100_003] {
        for k in [1, 50, 1024, 2048.min(row_len)] {
            let passes = radix_plan(3, row_len, k, 4, 132, sixteen);
            assert!(passes.iter().all(|p| p.per_thread <= 16
                && p.chunk_len <= 4096
                && p.kind != RadixKind::Segments));
            assert_eq!(passes.last().unwrap().chunks, 1);
        }
    }
}

/// The sampled select's first pass: one chunk a row where the rows fill the GPU, else as
/// many as it wants of at least the policy's least chunk and 8 k keys, their sorted runs
/// merged up to 7 a row; k from the policy's least, or any k on rows past
/// `topk_filter_above`; never for 8-byte keys or rows shorter than a chunk.
#[test]
fn sampled_plans() {
    let kinds = |rows, row_len, k, key_bytes, policy: &Policy| {
        radix_plan(rows, row_len, k, key_bytes, 132, policy)
            .iter()
            .map(|p| (p.kind, p.chunks, p.chunk_len))
            .collect::<Vec<_>>()
    };
    let hopper = &Policy::HOPPER;
    use RadixKind::*;
    for k in [100, 256, 1024] {
        assert_eq!(
            kinds(4096, 32_768, k, 2, hopper),
            [(Sampled, 1, 32_768)],
            "k {k}"
        );
    }
    assert_ne!(kinds(4096, 32_768, 99, 4, hopper)[0].0, Sampled);
    assert_eq!(
        kinds(256, 151_936, 1024, 4, hopper),
        [(Sampled, 4, 37_984), (Merge, 1, 4 * 1024)]
    );
    // Rows of 128,256: 3 chunks of at least 32,768 (8 blocks an SM would want 17).
    assert_eq!(
        kinds(64, 128_256, 1024, 4, hopper),
        [(Sampled, 3, 42_752), (Merge, 1, 3 * 1024)]
    );
    // A row of 2^28: 1,024 chunks of 2^18 for k = 1 (past topk_filter_above) to 100.
    for k in [1, 100] {
        assert_eq!(kinds(1, 1 << 28, k, 2, hopper)[0], (Sampled, 1056, 254_208));
    }
    let short = &with_topk(&Policy::HOPPER, |t| {
        t.sampled_min_k = 1;
        t.sampled_min_chunk = 0;
    });
    assert_eq!(kinds(1, 1 << 24, 8, 2, short)[0], (Sampled, 1056, 15_888));
    let logits = kinds(64, 128_256, 1024, 4, short);
    assert_eq!(logits[0], (Sampled, 15, 8560));
    assert!(logits[1..].iter().all(|p| p.0 == Chunks));
    assert_eq!(kinds(3, 8191, 1, 4, short)[0].0, Chunks);
    assert_eq!(kinds(3, 8 * 1025 - 1, 1025, 4, short)[0].0, Chunks);
    assert_eq!(kinds(3, 100_000, 50, 8, short)[0].0, Chunks);
}

/// The spread select's rule and its gather's chunks: few long rows of 2- or 4-byte keys
/// where the sample's candidates fit, with the shapes of the README's table and of the
/// GPU test (tests/topk.rs `gpu_spread_select`) on 132 multiprocessors.
#[test]
fn spread_plans() {
    let hopper = &Policy::HOPPER;
    let plan = |rows, row_len, k, key_bytes| spread_plan(rows, row_len, k, key_bytes, 132, hopper);
    let chunks = |rows, row_len, k| plan(rows, row_len, k, 4).map(|p| (p.chunks, p.chunk_len));
    for k in [1, 8, 50, 256, 1024] {
        for key_bytes in [2, 4] {
            // 1,056 blocks: 16 chunks a row of 128,256, the last of 5,376.
            let logits = plan(64, 128_256, k, key_bytes);
            let (chunks, chunk_len) = (16, 8192);
            let sample_blocks = 1;
            let rank = sample_rank(k, T::SPREAD_SAMPLES, 128_256);
            let want = SpreadPlan {
                sample_blocks,
                rank,
                chunks,
                chunk_len,
            };
            assert_eq!(logits, Some(want), "k {k}");
        }
        assert_eq!(plan(64, 128_256, k, 8), None, "8-byte keys");
        assert_eq!(plan(4096, 32_768, k, 4), None, "rows shorter than 65,536");
        // One row of 2^24 (k from 100): 1,024 chunks of 16,384, sampled by several blocks.
        if let Some(long) = plan(1, 1 << 24, k, 4) {
            assert!(k >= 100 && long.sample_blocks > 1, "k {k}");
            assert_eq!((long.chunks, long.chunk_len), (1024, 16_384), "k {k}");
        } else {
            assert!(k < 100, "k {k}");
        }
        assert_eq!(
            plan(529, 1 << 17, k, 4),
            None,
            "rows for more than half the grid"
        );
    }
    // 256 rows of 151,936: 5 chunks.
    for k in [1, 50, 256, 1024] {
        assert_eq!(chunks(256, 151_936, k), Some((5, 32_768)), "k {k}");
    }
    // Below k = 100 (topk_sampled_min_k), only 64 rows or more.
    assert_eq!(chunks(63, 128_256, 99), None);
    assert_eq!(chunks(63, 128_256, 100), Some((16, 8192)));
    assert_eq!(chunks(1, 1 << 20, 1), None);
    // With up to 256 sample blocks a row (`topk_spread_sample_blocks`), the power of
    // two that leaves the fewest candidates (one row of 2^24 at k = 256: 64 blocks, a
    // threshold that 20 of 2^19 samples reach, ~1,070 candidates); none for k = 1,024 of
    // 2^28 (listed words or candidates past 4,096), nor below k = 100.
    let blocks = |rows, row_len, k| {
        let plan = spread_plan(rows, row_len, k, 2, 132, hopper);
        plan.map(|p| (p.sample_blocks, p.rank, p.chunks))
    };
    for (row_len, k, want) in [
        (1 << 24, 100, Some((128, 18, 1024))),
        (1 << 24, 256, Some((64, 20, 1024))),
        (1 << 24, 1024, Some((64, 55, 1024))),
        (1 << 28, 256, Some((256, 8, 1024))),
        (1 << 28, 1024, None),
        (1 << 22, 100, Some((64, 28, 512))),
        (1 << 22, 99, None),
    ] {
        assert_eq!(blocks(1, row_len, k), want, "1 x {row_len}, k {k}");
    }
    let every_k = &with_topk(&Policy::HOPPER, |t| {
        t.spread_min_rows = 1;
    });
    for (rows, row_len) in [(1, 65_536), (2, 65_537), (3, 9 * 8192 - 1), (4, 128_256)] {
        for k in [1, 2, 8, 50, 129, 256, 1000, 1024] {
            let plan = spread_plan(rows, row_len, k, 4, 132, every_k);
            let SpreadPlan {
                chunks, chunk_len, ..
            } = plan.expect("the GPU test's");
            assert_eq!(chunk_len % T::SPREAD_TILE, 0);
            assert!(chunks * chunk_len >= row_len && (chunks - 1) * chunk_len < row_len);
        }
    }
    let sampled = |rows, row_len, k| {
        let plan = spread_plan(rows, row_len, k, 4, 132, every_k);
        plan.map(|p| (p.sample_blocks, p.chunks, p.chunk_len))
    };
    // A row of 2^20 + 3, a sample of 1 in 128: one sample block for k up to 896 (a
    // threshold that 18 samples reach, about 2,300 keys), several above; one of 2^21, 1 in
    // 256: one for k up to 256 (6 samples, about 1,540 keys); one of 2^22: several for
    // every k (one block's leave about 3,070 keys, past 4,096 at three deviations).
    assert_eq!(sampled(1, (1 << 20) + 3, 896), Some((1, 129, 8192)));
    assert_eq!(sampled(1, (1 << 20) + 3, 897), Some((16, 129, 8192)));
    assert_eq!(sampled(1, 1 << 21, 256), Some((1, 256, 8192)));
    assert_eq!(sampled(1, 1 << 21, 257).map(|p| p.0), Some(32));
    assert_eq!(sampled(1, 1 << 22, 1).map(|p| p.0), Some(256));
    assert_eq!(sampled(1, 65_535, 1), None);
    let off = with_topk(&Policy::HOPPER, |t| {
        t.spread_min_len = usize::MAX;
    });
    assert_eq!(spread_plan(64, 128_256, 50, 4, 132, &off), None);
    // Rows the dispatch gives the filter take it too (tests/topk.rs `gpu_spread_select`).
    let filtered = with_topk(&Policy::HOPPER, |t| {
        t.filter_above = 1 << 20;
    });
    for (k, key_bytes) in [(256, 2), (256, 4), (1024, 2), (1024, 4)] {
        let plan = spread_plan(1, (1 << 21) + 5, k, key_bytes, 132, &filtered);
        assert_eq!(
            plan.map(|p| p.chunks),
            Some(257),
            "k {k}, {key_bytes} bytes"
        );
    }
}

/// A CPU model of topk_merge's placement: each element's place among sorted runs (its
/// place in its run, plus the elements of every other run before it, equal ones of an
/// earlier run counting) is its place in the stable merge, padding (0) included.
#[test]
fn merge_places_are_a_stable_merge() {
    let better = |a: u64, b: u64| a > b;
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    for (k, count) in [(1, 5), (3, 2), (50, 32), (256, 16), (7, 3)] {
        let runs: Vec<Vec<u64>> = (0..count)
            .map(|_| {
                let real = (next() as usize) % (k + 1); // the rest is padding
                let mut run: Vec<u64> = (0..k)
                    .map(|i| {
                        if i < real {
                            1 + next() % 1000 * 64 + i as u64
                        } else {
                            0
                        }
                    })
                    .collect();
                run.sort_by(|a, b| b.cmp(a));
                run
            })
            .collect();
        let mut placed = vec![None; count * k];
        for (own, run) in runs.iter().enumerate() {
            for (p, &c) in run.iter().enumerate() {
                let mut place = p;
                for (other, r) in runs.iter().enumerate().filter(|&(o, _)| o != own) {
                    place += r
                        .iter()
                        .take_while(|&&x| {
                            if other < own {
                                !better(c, x)
                            } else {
                                better(x, c)
                            }
                        })
                        .count();
                }
                assert!(
                    placed[place].replace((own, p)).is_none(),
                    "k {k}: place {place} twice"
                );
            }
        }
        let mut want: Vec<(u64, usize, usize)> = runs
            .iter()
            .enumerate()
            .flat_map(|(o, r)| r.iter().enumerate().map(move |(p, &c)| (c, o, p)))
            .collect();
        want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let got: Vec<(u64, usize, usize)> = placed
            .iter()
            .map(|at| {
                let (o, p) = at.unwrap();
                (runs[o][p], o, p)
            })
            .collect();
        assert_eq!(got, want, "k {k}, {count} runs");
    }
}

#[test]
fn many_rows_are_one_pass_and_one_long_row_is_spread() {
    let many = filter_plan(10_000, 1000, 10, 4, 132);
    assert_eq!(many.len(), 1);
    assert_eq!((many[0].chunk_len, many[0].slots), (1000, 1024));
    let long = filter_plan(1, 1 << 24, 64, 4, 132);
    assert_eq!(long[0].chunks, 4 * 132);
    // 528 x 64 partials in 5 chunks of at least 2^13, then the 5 x 64 best in one.
    assert_eq!(
        long.iter().map(|p| p.chunks).collect::<Vec<_>>(),
        [528, 5, 1]
    );
    // The largest k the filter takes: 32 KiB of u64 composites, 64 KiB of 16-byte ones.
    let wide = filter_plan(1, 1 << 24, 2048, 8, 132);
    assert_eq!(wide[0].slots, 4096);
}
