//! The merge plans, and models of the merge kernels that sort with them on the CPU.

use super::*;
use crate::multi::merge_tile;

/// [`level_ways_of`] for words `W`.
fn level_ways<W>(policy: &Policy, n: usize, run_len: usize) -> Vec<usize> {
    level_ways_of(policy, std::mem::size_of::<W>(), n, run_len)
}

/// [`merge_sort_passes`] for words `W`.
fn merge_sort_passes_of<W>(policy: &Policy, n: usize) -> usize {
    merge_sort_passes(policy, std::mem::size_of::<W>(), n)
}

/// kernels/merge.cu's `level_co_ranks` and `merge_level` on the CPU, tile by tile: which
/// pair of runs a tile lies in, the merge path at its start (the next tile's, or the whole
/// first run for the tile that ends its pair), then the CPU's tile merge.
fn model_level(keys: &[u32], run_len: usize, tile: usize) -> Vec<u32> {
    let n = keys.len();
    let pair_at = |o: usize| {
        let start = o / (2 * run_len) * (2 * run_len);
        let a_len = run_len.min(n - start);
        (start, a_len, run_len.min(n - start - a_len))
    };
    let ranks: Vec<usize> = (0..n.div_ceil(tile))
        .map(|q| {
            let (start, a_len, b_len) = pair_at(q * tile);
            let a = &keys[start..start + a_len];
            co_rank(
                a,
                &keys[start + a_len..start + a_len + b_len],
                q * tile - start,
            )
        })
        .collect();
    let mut out = vec![0; n];
    for (q, &a0) in ranks.iter().enumerate() {
        let (start, a_len, b_len) = pair_at(q * tile);
        let (a, b) = keys[start..start + a_len + b_len].split_at(a_len);
        let o0 = q * tile - start;
        let o1 = (o0 + tile).min(a_len + b_len);
        let a1 = if o1 == a_len + b_len {
            a_len
        } else {
            ranks[q + 1]
        };
        merge_tile(a, b, o0, (a0, a1), &mut out[start + o0..start + o1]);
    }
    out
}

#[test]
fn merge_levels_on_the_model_sort_runs_of_any_count() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    // Runs of 16 merged in tiles of 8 (a tile never spans two pairs): exact multiples,
    // one past, an odd run count, few distinct keys.
    for (n, distinct) in [
        (16, 1000),
        (17, 1000),
        (100, 3),
        (128, 1000),
        (129, 7),
        (333, 50),
    ] {
        let mut keys: Vec<u32> = (0..n).map(|_| rng.random_range(0..distinct)).collect();
        let mut expected = keys.clone();
        expected.sort_unstable();
        for run in keys.chunks_mut(16) {
            run.sort_unstable();
        }
        let mut run_len = 16;
        while run_len < n {
            keys = model_level(&keys, run_len, 8);
            run_len *= 2;
        }
        assert_eq!(keys, expected, "{n} keys");
    }
}

/// A key and the position it started at, ordered by the key alone: a merge that keeps
/// equal keys in their runs' order leaves their tags rising.
#[derive(Clone, Copy, Debug)]
struct Tagged(u32, u32);
impl PartialEq for Tagged {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Tagged {}
impl PartialOrd for Tagged {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Tagged {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// kernels/merge/multiway.cuh's `multiway_co_ranks` on the CPU for one tile boundary: how
/// many words of each run come before output position `d` of their stable merge, found as
/// the kernel finds them — a word of the widest window as the pivot (aimed two rounds of
/// three, the middle the third), its counts
/// in every window, the windows narrowed — until every window is closed.
fn model_splits<T: Copy + Ord>(runs: &[&[T]], d: usize) -> Vec<usize> {
    let ways = runs.len();
    let mut lo = vec![0; ways];
    let mut hi: Vec<usize> = runs.iter().map(|r| r.len().min(d)).collect();
    for round in 0.. {
        let widest = (0..ways).fold(0, |w, j| if hi[j] - lo[j] > hi[w] - lo[w] { j } else { w });
        let widest_len = hi[widest] - lo[widest];
        if widest_len == 0 {
            break;
        }
        let open: usize = (0..ways).map(|j| hi[j] - lo[j]).sum();
        let below: usize = lo.iter().sum();
        let at = if round % 3 != 2 {
            (widest_len as f32 * ((d - below) as f32 / open as f32)) as usize
        } else {
            widest_len / 2
        };
        let pivot = lo[widest] + at.min(widest_len - 1);
        let c = runs[widest][pivot];
        let counts: Vec<usize> = (0..ways)
            .map(|j| {
                let window = &runs[j][lo[j]..hi[j]];
                match j.cmp(&widest) {
                    std::cmp::Ordering::Less => lo[j] + window.partition_point(|w| *w <= c),
                    std::cmp::Ordering::Equal => pivot,
                    std::cmp::Ordering::Greater => lo[j] + window.partition_point(|w| *w < c),
                }
            })
            .collect();
        let before = counts.iter().sum::<usize>() < d;
        for j in 0..ways {
            if before {
                lo[j] = lo[j].max(counts[j] + usize::from(j == widest));
            } else {
                hi[j] = hi[j].min(counts[j]);
            }
        }
    }
    lo
}

/// kernels/merge/multiway.cuh's `merge_round`: `threads` threads of `e` outputs each merge
/// the pairs of segment groups of `width` (segments `seg[s] .. seg[s + 1]` of `from`).
fn model_round<T: Copy + Ord>(from: &[T], seg: &[usize], width: usize, e: usize) -> Vec<T> {
    let ways = seg.len() - 1;
    let pair = |p: usize| {
        let at = |s: usize| seg[s.min(ways)];
        (
            at(2 * p * width),
            at((2 * p + 1) * width),
            at((2 * p + 2) * width),
        )
    };
    let len = from.len();
    let mut to = from.to_vec();
    for thread in 0..len.div_ceil(e) {
        let mut out = thread * e;
        let stop = len.min(out + e);
        let mut p = 0;
        let (mut a, mut b, mut end) = pair(0);
        while end <= out {
            p += 1;
            (a, b, end) = pair(p);
        }
        let k = co_rank(&from[a..b], &from[b..end], out - a);
        let (mut ai, mut bi) = (a + k, b + (out - a - k));
        while out < stop {
            if out == end {
                while end == out {
                    p += 1;
                    (a, b, end) = pair(p);
                }
                (ai, bi) = (a, b);
            }
            let take_a = bi == end || (ai < b && from[ai] <= from[bi]);
            to[out] = if take_a { from[ai] } else { from[bi] };
            if take_a {
                ai += 1;
            } else {
                bi += 1;
            }
            out += 1;
        }
    }
    to
}

/// kernels/merge/multiway.cuh's `multiway_co_ranks` on the CPU for one tile start: the
/// runs' split at their pivot, the first sample (every `spacing`-th word of a run) past
/// `m_target` samples of their stable merge. The samples' split comes from
/// [`model_splits`]; each run's split from a search in the window of `spacing` words
/// it bounds.
fn model_tile_start<T: Copy + Ord>(runs: &[&[T]], spacing: usize, m_target: usize) -> Vec<usize> {
    let sampled: Vec<Vec<T>> = runs
        .iter()
        .map(|r| r.iter().step_by(spacing).copied().collect())
        .collect();
    let views: Vec<&[T]> = sampled.iter().map(Vec::as_slice).collect();
    let m = model_splits(&views, m_target);
    let pivot_run = (0..runs.len())
        .filter(|&j| m[j] < sampled[j].len())
        .min_by_key(|&j| (sampled[j][m[j]], j))
        .expect("a sample past the split");
    let c = sampled[pivot_run][m[pivot_run]];
    (0..runs.len())
        .map(|j| {
            if j == pivot_run || m[j] == 0 {
                return m[j] * spacing;
            }
            let (first, last) = (
                (m[j] - 1) * spacing + 1,
                (m[j] * spacing).min(runs[j].len()),
            );
            let window = &runs[j][first..last];
            first
                + if j < pivot_run {
                    window.partition_point(|w| *w <= c)
                } else {
                    window.partition_point(|w| *w < c)
                }
        })
        .collect()
}

/// One multiway level on the CPU, as kernels/merge/multiway.cuh runs it: the splits at
/// every tile start ([`MultiwayTiling`], [`model_tile_start`]), then each tile's segments
/// loaded in run order and merged in rounds by threads of `e` outputs. Checks that every
/// tile fits in `tile` words.
fn model_multiway_level<T: Copy + Ord>(
    keys: &[T],
    run_len: usize,
    ways: usize,
    tile: usize,
    e: usize,
) -> Vec<T> {
    let n = keys.len();
    let tiling = MultiwayTiling::new(tile, run_len, ways);
    let group_tiles = tiling.group_tiles as usize;
    let tiles = tiling.tiles(n, run_len, ways);
    let group_of = |b: usize| {
        let start = b / group_tiles * (run_len * ways);
        (start, (run_len * ways).min(n - start))
    };
    let runs_of = |start: usize, len: usize| -> Vec<&[T]> {
        (0..ways)
            .map(|j| {
                let begin = (j * run_len).min(len);
                &keys[start + begin..start + begin + run_len.min(len - begin)]
            })
            .collect()
    };
    let splits: Vec<Vec<usize>> = (0..tiles)
        .map(|b| {
            let t = b % group_tiles;
            if t == 0 {
                return vec![0; ways];
            }
            let (start, len) = group_of(b);
            let m_target = t * tiling.tile_samples as usize;
            model_tile_start(&runs_of(start, len), tiling.spacing(), m_target)
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for (b, from) in splits.iter().enumerate() {
        let (start, len) = group_of(b);
        let runs = runs_of(start, len);
        let to: Vec<usize> = if (b + 1) % group_tiles == 0 || b + 1 == tiles {
            runs.iter().map(|r| r.len()).collect()
        } else {
            splits[b + 1].clone()
        };
        assert_eq!(
            out.len(),
            start + from.iter().sum::<usize>(),
            "tile {b} starts where the last ended"
        );
        let mut seg = vec![0];
        let mut words = Vec::new();
        for j in 0..ways {
            words.extend_from_slice(&runs[j][from[j]..to[j]]);
            seg.push(words.len());
        }
        assert!(words.len() <= tile, "tile {b} of {} words", words.len());
        let mut width = 1;
        while width < len.div_ceil(run_len) {
            words = model_round(&words, &seg, width, e);
            width *= 2;
        }
        out.extend(words);
    }
    assert_eq!(out.len(), n);
    out
}

/// Sorted runs of random keys below `distinct`, of the lengths `lens`.
fn random_sorted_runs(
    rng: &mut impl rand::Rng,
    lens: impl Iterator<Item = usize>,
    distinct: u32,
) -> Vec<Vec<u32>> {
    lens.map(|len| {
        let mut run: Vec<u32> = (0..len).map(|_| rng.random_range(0..distinct)).collect();
        run.sort_unstable();
        run
    })
    .collect()
}

/// The split of `runs` at every output position of their stable merge (by key, then run,
/// then position): element d is how many words of each run the first d outputs hold.
pub(crate) fn stable_merge_splits(runs: &[Vec<u32>]) -> Vec<Vec<usize>> {
    let mut merged: Vec<(u32, usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(j, r)| r.iter().enumerate().map(move |(i, &k)| (k, j, i)))
        .collect();
    merged.sort_unstable();
    let mut split = vec![0; runs.len()];
    let mut splits = vec![split.clone()];
    for &(_, j, _) in &merged {
        split[j] += 1;
        splits.push(split.clone());
    }
    splits
}

#[test]
fn multiway_tile_starts_are_merge_paths_near_their_samples() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
    for (ways, spacing) in [(2, 8), (4, 8), (8, 4), (8, 32), (16, 2), (32, 1), (32, 4)] {
        for distinct in [1, 3, 1000, u32::MAX] {
            // Runs of one length but the last (a level's last group), some sample-less.
            let run_len = 16 * spacing;
            let lens: Vec<usize> = (0..ways)
                .map(|j| {
                    if j + 1 < ways {
                        run_len
                    } else {
                        rng.random_range(0..run_len)
                    }
                })
                .collect();
            let runs = random_sorted_runs(&mut rng, lens.into_iter(), distinct);
            let splits = stable_merge_splits(&runs);
            let views: Vec<&[u32]> = runs.iter().map(Vec::as_slice).collect();
            let samples: usize = runs.iter().map(|r| r.len().div_ceil(spacing)).sum();
            for m_target in 1..samples {
                let got = model_tile_start(&views, spacing, m_target);
                let d: usize = got.iter().sum();
                let want = &splits[d];
                let what =
                    format!("{ways} ways, spacing {spacing}, {distinct} keys, {m_target} samples");
                assert_eq!(&got, want, "{what}");
                assert!(d <= spacing * m_target, "{what}: starts at {d}");
                assert!(
                    d + (ways - 1) * (spacing - 1) >= spacing * m_target,
                    "{what}: starts at {d}"
                );
            }
        }
    }
}

#[test]
fn multiway_splits_match_a_stable_merge() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
    for ways in [2, 4, 8, 16, 32] {
        for distinct in [1, 3, 1000, u32::MAX] {
            // Runs of different lengths, some empty (a level's last group).
            let lens: Vec<usize> = (0..ways)
                .map(|j| {
                    if j % 5 == 3 {
                        0
                    } else {
                        rng.random_range(0..200)
                    }
                })
                .collect();
            let runs = random_sorted_runs(&mut rng, lens.into_iter(), distinct);
            let views: Vec<&[u32]> = runs.iter().map(Vec::as_slice).collect();
            for (d, want) in stable_merge_splits(&runs).into_iter().enumerate() {
                assert_eq!(
                    model_splits(&views, d),
                    want,
                    "{ways} ways, {distinct} keys, d {d}"
                );
            }
        }
    }
}

#[test]
fn multiway_levels_on_the_model_sort_stably() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(12);
    // Runs of 256 merged in tiles of at most 512 by threads of 16 (a tile never spans
    // two groups; samples every 8, 4, 2 and 1 words for 4 to 32 ways): whole groups, a
    // last group of fewer runs, a short last run, few distinct keys.
    for ways in [4, 8, 16, 32] {
        for (n, distinct) in [
            (256, 9),
            (257, 1000),
            (1000, 3),
            (1024, 1000),
            (1025, 1),
            (3333, 50),
            (9000, 7),
            (8192, 1 << 20),
        ] {
            let mut keys: Vec<Tagged> = (0..n)
                .map(|i| Tagged(rng.random_range(0..distinct), i as u32))
                .collect();
            let mut expected = keys.clone();
            expected.sort_by_key(|t| t.0); // stable
            for run in keys.chunks_mut(256) {
                run.sort_by_key(|t| t.0);
            }
            let mut policy = Policy::HOPPER;
            policy.merge.ways = ways as u32;
            // (A two-way step runs the bitonic level on the GPU, modelled above; the
            // multiway model merges two runs too.)
            let mut run_len = 256;
            for w in level_ways::<u32>(&policy, n, 256) {
                keys = model_multiway_level(&keys, run_len, w, 512, 16);
                run_len *= w;
            }
            let got: Vec<(u32, u32)> = keys.iter().map(|t| (t.0, t.1)).collect();
            let want: Vec<(u32, u32)> = expected.iter().map(|t| (t.0, t.1)).collect();
            assert_eq!(got, want, "{ways} ways, {n} keys");
        }
    }
}

#[test]
fn level_plans() {
    let p = |ways| {
        let mut p = Policy::HOPPER;
        (p.merge.ways, p.merge.wide_ways, p.merge.fold_ways) = (ways, 2, 2);
        p
    };
    // 2^10 runs of 2^14: three eight-way levels and a two-way one.
    assert_eq!(level_ways::<u32>(&p(8), 1 << 24, 1 << 14), [8, 8, 8, 2]);
    assert_eq!(level_ways::<u32>(&p(16), 1 << 24, 1 << 14), [16, 16, 4]);
    assert_eq!(level_ways::<u32>(&p(2), 1 << 16, 1 << 14), [2, 2]);
    // Three runs left take a four-way level; one key past a run, a two-way one.
    assert_eq!(level_ways::<u32>(&p(8), 3 << 14, 1 << 14), [4]);
    assert_eq!(level_ways::<u32>(&p(8), (1 << 14) + 1, 1 << 14), [2]);
    assert!(level_ways::<u32>(&p(8), 1 << 14, 1 << 14).is_empty());
    // Groups past 2^32 - 1 words merge two runs at a time (the search's 32-bit positions).
    assert_eq!(
        level_ways::<u32>(&p(8), 1 << 34, 1 << 14),
        [8, 8, 8, 8, 8, 2, 2, 2, 2, 2]
    );
    assert_eq!(level_ways::<u32>(&p(8), 1 << 32, 1 << 29), [2, 2, 2]);
    assert_eq!(level_ways::<u32>(&p(8), (1 << 32) - 1, 1 << 29), [8]);
    // 8-byte words take wide_merge_ways: Hopper's 16 for 2^24 u64 keys in runs of 2^13.
    assert_eq!(level_ways::<u64>(&p(8), 1 << 24, 1 << 13), [2; 11]);
    assert_eq!(
        level_ways::<u64>(&Policy::HOPPER, 1 << 24, 1 << 13),
        [16, 16, 8]
    );
    // Hopper folds a trailing two-way level into a sixteen-way first one (fold_ways), and
    // only a trailing one: not a four-way one, nor the two-way levels of huge groups.
    let hopper = |n, run_len| level_ways::<u32>(&Policy::HOPPER, n, run_len);
    assert_eq!(hopper(1 << 24, 1 << 14), [16, 8, 8]);
    assert_eq!(hopper(1 << 21, 1 << 14), [16, 8]);
    assert_eq!(hopper((1 << 17) + 1, 1 << 14), [16]);
    assert_eq!(hopper(1 << 25, 1 << 14), [8, 8, 8, 4]);
    assert_eq!(hopper(1 << 29, 1 << 14), [8, 8, 8, 8, 8]);
    assert_eq!(hopper((1 << 14) + 1, 1 << 14), [2]);
    assert_eq!(hopper(1 << 34, 1 << 14), [8, 8, 8, 8, 8, 2, 2, 2, 2, 2]);
    // 8-byte words: sixteen ways, which fold_ways (16) does not double.
    assert_eq!(
        level_ways::<u64>(&Policy::HOPPER, (1 << 24) + 1, 1 << 12),
        [16, 16, 16, 2]
    );
}

#[test]
fn passes_of_a_merge_sort() {
    let mut two = Policy::HOPPER;
    (two.merge.ways, two.merge.wide_ways) = (2, 2);
    // 2^24 u32 keys: runs of 2^14, 10 levels, the result back in place.
    assert_eq!(merge_sort_passes_of::<u32>(&two, 1 << 24), 11);
    // 2^29: 15 levels, the tile sort into the spare buffer so that the last ends in place.
    assert_eq!(merge_sort_passes_of::<u32>(&two, 1 << 29), 16);
    // One key past a power of two takes one level more (u64 above 2^21: runs of 2^12).
    assert_eq!(merge_sort_passes_of::<u64>(&two, (1 << 23) + 1), 1 + 12);
    assert_eq!(merge_sort_passes_of::<[u8; 16]>(&two, 1 << 24), 1 + 12);
    // Eight ways: 2^24 in 8, 8, 8, 2; 2^29 in five eight-way levels.
    let mut eight = Policy::HOPPER;
    (
        eight.merge.ways,
        eight.merge.wide_ways,
        eight.merge.fold_ways,
    ) = (8, 8, 2);
    assert_eq!(merge_sort_passes_of::<u32>(&eight, 1 << 24), 1 + 4);
    assert_eq!(merge_sort_passes_of::<u32>(&eight, 1 << 29), 1 + 5);
    assert_eq!(merge_sort_passes_of::<u64>(&eight, (1 << 23) + 1), 1 + 4);
    // Hopper's u64: 2^24 in runs of 2^12 and three sixteen-way levels; 2^21 in whole
    // tiles (2^13) and two.
    assert_eq!(merge_sort_passes_of::<u64>(&Policy::HOPPER, 1 << 24), 1 + 3);
    assert_eq!(merge_sort_passes_of::<u64>(&Policy::HOPPER, 1 << 21), 1 + 2);
    // Hopper's u32: 2^24 in 16, 8, 8 (the two-way level folded into the first).
    assert_eq!(merge_sort_passes_of::<u32>(&Policy::HOPPER, 1 << 24), 1 + 3);
}

/// The key-value merge block's shared memory under Hopper's policy, keys and values of the
/// bytes given.
fn kv_merge_shared(key_bytes: usize, value_bytes: usize) -> u32 {
    let facts = crate::device::DeviceInfo::h100();
    let kv = (key_bytes, value_bytes, false);
    let mut workspace = Workspace::none();
    plan_key_value(&facts, &Policy::HOPPER, kv, 1 << 20, 0, &mut workspace)
        .unwrap()
        .merge_shared
}

/// [`place_shared_bytes`] of keys and values of the bytes given on `tile` keys.
fn place_shared_bytes_of(key_bytes: usize, value_bytes: usize, tile: usize) -> u32 {
    place_shared_bytes(tile, key_bytes, value_bytes) as u32
}

/// kernels/merge.cu's `tree_node`: the breadth-first node of a tile's i-th smallest key.
fn tree_node(i: usize, bits: u32) -> usize {
    let j = i + 1;
    let below = j.trailing_zeros();
    (1 << (bits - 1 - below)) + (j >> (below + 1))
}

/// kernels/merge.cu's `place_values` and `place_equal_values` on the CPU: the sorted tile as
/// a search tree (the largest key left out, a short tile padded with the largest word),
/// each key's rank from the path down it, plus the equal keys before it; the result must
/// be the stable sorting permutation (`dest[i]`: where key i goes).
fn model_placement(keys: &[u32], bits: u32) -> Vec<usize> {
    let t = 1usize << bits;
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    let mut tree = vec![0u32; t];
    for i in 0..t - 1 {
        tree[tree_node(i, bits)] = sorted.get(i).copied().unwrap_or(u32::MAX);
    }
    keys.iter()
        .enumerate()
        .map(|(i, &key)| {
            let mut k = 1;
            for _ in 0..bits {
                k = 2 * k + usize::from(tree[k] < key);
            }
            let rank = k - t;
            assert_eq!(rank, sorted.partition_point(|&s| s < key), "rank of {key}");
            rank + keys[..i].iter().filter(|&&other| other == key).count()
        })
        .collect()
}

#[test]
fn placement_of_values_is_the_stable_permutation() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
    for (bits, len, distinct) in [
        (4, 16, u32::MAX),
        (4, 15, 3),
        (4, 1, 9),
        (6, 64, 10),
        (6, 50, u32::MAX),
        (10, 1024, 1),
        (10, 1000, 100),
    ] {
        // Keys up to the largest word, which the padding equals.
        let keys: Vec<u32> = (0..len)
            .map(|_| match rng.random_range(0..distinct.min(1000)) {
                0 => u32::MAX,
                d if distinct == u32::MAX => rng.random::<u32>() | d,
                d => d,
            })
            .collect();
        let dest = model_placement(&keys, bits);
        let mut stable: Vec<usize> = (0..len).collect();
        stable.sort_by_key(|&i| keys[i]);
        let mut placed = vec![usize::MAX; len];
        for (i, &d) in dest.iter().enumerate() {
            placed[d] = i;
        }
        assert_eq!(placed, stable, "{len} keys in a tile of 2^{bits}");
    }
}

#[test]
fn shared_memory_of_the_key_value_kernels() {
    // Merge tiles: 2^11 tagged u64 words (one padding word each 16) and their values; 2^11
    // 16-byte words for 64-bit keys (one each 8).
    assert_eq!(kv_merge_shared(4, 4), 2176 * 8 + 2048 * 4);
    assert_eq!(kv_merge_shared(8, 8), 2304 * 16 + 2048 * 8);
    // Placement: the padded u32 words, or the values or keys when they are wider, then a
    // u16 place a key. Two blocks of 32-bit keys and values fit an H100's 228 KiB.
    assert_eq!(
        place_shared_bytes_of(4, 4, 1 << 14),
        (16384 + 512) * 4 + 16384 * 2
    );
    assert_eq!(place_shared_bytes_of(4, 8, 1 << 14), 16384 * 8 + 16384 * 2);
    assert_eq!(place_shared_bytes_of(8, 4, 1 << 13), 8192 * 8 + 8192 * 2);
    // (each block also has a static list of 1040 bytes)
    assert!(2 * (place_shared_bytes_of(4, 4, 1 << 14) + 1040) <= 228 * 1024);
}
