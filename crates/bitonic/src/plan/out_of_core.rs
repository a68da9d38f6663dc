//! Sorts bigger than the GPU (issue 54), as a plan: how many keys each GPU sort takes, and how
//! the sorted runs merge back into the caller's buffer with no host memory beyond staging. Pure:
//! the device's memory is a number here. No runner carries it out yet; its tests run the
//! schedule on the host (docs/notes/out-of-core.md says what is next).
//!
//! **The schedule: two runs, the last one resident.** Keys that fit one in-memory GPU sort
//! (the keys and the workspace of the sort `plan_words` plans) take it. Longer ones are cut
//! into two runs. Run A, the first `len - resident` keys, goes to the GPU, is sorted there and comes back
//! into its place in the buffer; run B, the rest, is sorted on the GPU and stays there. Then the
//! merge runs backward, one *piece* of at most `piece_len` keys of the output at a time, from
//! the largest keys: the piece's share of A (found by [`co_ranks`]) goes up, joins its share of
//! B on the GPU, is sorted there (two sorted slices: any stable sort merges them, in the link's
//! time) and comes back to the end of the output not yet written. No piece overwrites a key of
//! A not yet read: after the pieces from position q on, A's unread keys are its first a, with
//! a ≤ q (B's are on the GPU), and the next piece ends at q. So the buffer is both input and
//! output, and the host holds nothing else.
//!
//! Device memory, keys of W bytes: a run's sort takes `run × W` plus its workspace; the merge,
//! the resident run plus one piece's sort. So two runs reach about the device's memory in keys'
//! bytes, twice what one in-memory sort reaches; longer inputs need more runs (a multiway merge
//! whose output lands in the holes its inputs leave), which this plan refuses with the bytes it
//! would need.

use super::{plan_words, MAX_LEN};
use crate::device::DeviceFacts;
use crate::error::{Error, Result};
use crate::policy::Policy;
use std::ops::Range;

/// The smallest merge piece worth a round trip over the link: 2^20 keys.
pub const MIN_PIECE: usize = 1 << 20;

/// An out-of-core sort's plan.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfCorePlan {
    /// Keys in all.
    pub len: usize,
    /// Bytes a key.
    pub key_bytes: usize,
    /// The runs, in order: one (an in-memory sort) or two, the last of which stays on the GPU
    /// for the merge.
    pub runs: Vec<Range<usize>>,
    /// Keys a merge piece holds at most (0 with one run).
    pub piece_len: usize,
    /// The most device memory any step takes, bytes.
    pub device_bytes: usize,
}

/// Device bytes of an in-memory GPU sort of `n` keys of `key_bytes`: the keys and the sort's
/// workspace, as its plan lays them out; `usize::MAX` past [`MAX_LEN`] keys, which no one GPU
/// sort takes.
pub(crate) fn in_memory_bytes(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    key_bytes: usize,
    n: usize,
) -> Result<usize> {
    if n > MAX_LEN {
        return Ok(usize::MAX);
    }
    Ok(n * key_bytes + plan_words(facts, policy, key_bytes, n)?.workspace_bytes())
}

/// The most keys of `key_bytes` one in-memory sort takes in `budget` device bytes (0: none).
fn most_in_memory(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    key_bytes: usize,
    budget: usize,
) -> Result<usize> {
    // The bytes grow with the keys: bisect.
    let (mut fits, mut fails) = (0usize, (budget / key_bytes).min(MAX_LEN) + 1);
    while fails - fits > 1 {
        let mid = fits + (fails - fits) / 2;
        if in_memory_bytes(facts, policy, key_bytes, mid)? <= budget {
            fits = mid;
        } else {
            fails = mid;
        }
    }
    Ok(fits)
}

/// The out-of-core sort of `len` keys of `key_bytes` in `budget` bytes of device memory: one run
/// when the keys fit an in-memory sort, else two (see the module's text), or
/// [`Error::DeviceMemory`] with the device bytes two runs would need.
pub fn plan_out_of_core(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    key_bytes: usize,
    len: usize,
    budget: usize,
) -> Result<OutOfCorePlan> {
    let sort_bytes = |n| in_memory_bytes(facts, policy, key_bytes, n);
    if sort_bytes(len)? <= budget {
        return Ok(OutOfCorePlan {
            len,
            key_bytes,
            runs: std::iter::once(0..len).collect(),
            piece_len: 0,
            device_bytes: sort_bytes(len)?,
        });
    }
    // A piece of an eighth of the budget's keys (at least MIN_PIECE); the resident run takes
    // what is left beside a piece's sort, and no more than one sort takes.
    let piece_len = (budget / key_bytes / 8)
        .max(MIN_PIECE)
        .min(len)
        .min(MAX_LEN);
    let beside_piece = budget.saturating_sub(sort_bytes(piece_len)?) / key_bytes;
    let resident = beside_piece
        .min(most_in_memory(facts, policy, key_bytes, budget)?)
        .min(len);
    let first = len - resident;
    if resident == 0 || sort_bytes(first)? > budget {
        // Two runs of half the keys each: a run's sort, and the resident half beside a piece's
        // (past 2 × MAX_LEN keys no two runs do: more runs are not planned yet).
        let half = len.div_ceil(2);
        let beside = (half * key_bytes).saturating_add(sort_bytes(piece_len)?);
        let bytes = sort_bytes(half)?.max(beside);
        return Err(Error::DeviceMemory {
            bytes,
            what: format!(
                "an out-of-core sort of {len} keys of {key_bytes} bytes in two runs of at most \
                 {MAX_LEN} keys each (more runs are not planned yet), within a budget of \
                 {budget} bytes"
            ),
        });
    }
    let device_bytes = sort_bytes(first)?
        .max(sort_bytes(resident)?)
        .max((resident * key_bytes).saturating_add(sort_bytes(piece_len)?));
    Ok(OutOfCorePlan {
        len,
        key_bytes,
        runs: vec![0..first, first..len],
        piece_len,
        device_bytes,
    })
}

/// Where the first `at` keys of the stable merge of sorted `runs` (ties: the earlier run's keys
/// first) end in each run: `at` split over the runs, in run order. `at` is at most the runs'
/// keys in all.
pub fn co_ranks<W: Ord + Copy + Into<u64>>(runs: &[&[W]], at: usize) -> Vec<usize> {
    let total: usize = runs.iter().map(|r| r.len()).sum();
    assert!(at <= total, "{at} of {total} keys");
    if at == 0 {
        return vec![0; runs.len()];
    }
    // The at-th smallest word, v: the least x with at least `at` words at or below it.
    let at_or_below = |x: u64| -> usize {
        runs.iter()
            .map(|r| r.partition_point(|&w| w.into() <= x))
            .sum()
    };
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at_or_below(mid) >= at {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    // Every word below v, then the ties with v in run order until `at`.
    let mut splits: Vec<usize> = runs
        .iter()
        .map(|r| r.partition_point(|&w| w.into() < lo))
        .collect();
    let mut ties = at - splits.iter().sum::<usize>();
    for (split, run) in splits.iter_mut().zip(runs) {
        let equal = run.partition_point(|&w| w.into() <= lo) - *split;
        let taken = equal.min(ties);
        *split += taken;
        ties -= taken;
    }
    splits
}

/// The pieces of the backward merge of a two-run plan, last first: for each, the output range
/// it fills and the ranges of run A (in the buffer) and of run B (in B, on the GPU) it takes.
/// `a` and `b` are the sorted runs' words.
pub fn merge_pieces<W: Ord + Copy + Into<u64>>(
    plan: &OutOfCorePlan,
    a: &[W],
    b: &[W],
) -> Vec<MergePiece> {
    assert_eq!(plan.runs.len(), 2, "a merge of two runs");
    assert_eq!((a.len(), b.len()), (plan.runs[0].len(), plan.runs[1].len()));
    let mut pieces = Vec::new();
    let (mut end, mut ends) = (plan.len, [a.len(), b.len()]);
    while end > 0 {
        let start = end.saturating_sub(plan.piece_len);
        let starts = co_ranks(&[a, b], start);
        pieces.push(MergePiece {
            output: start..end,
            from_a: starts[0]..ends[0],
            from_b: starts[1]..ends[1],
        });
        (end, ends) = (start, [starts[0], starts[1]]);
    }
    pieces
}

/// One piece of a two-run merge: `output` of the buffer from `from_a` of run A and `from_b` of
/// run B.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergePiece {
    /// The keys of the output the piece fills.
    pub output: Range<usize>,
    /// Its keys from run A (positions in the buffer, where A lies first).
    pub from_a: Range<usize>,
    /// Its keys from run B (positions in B).
    pub from_b: Range<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceInfo;

    /// Stable merges by hand: (word, run, position) ordered by word, then run, then position.
    fn reference_split(runs: &[&[u32]], at: usize) -> Vec<usize> {
        let mut all: Vec<(u32, usize, usize)> = runs
            .iter()
            .enumerate()
            .flat_map(|(r, run)| run.iter().enumerate().map(move |(i, &w)| (w, r, i)))
            .collect();
        all.sort();
        let mut splits = vec![0; runs.len()];
        for &(_, r, _) in &all[..at] {
            splits[r] += 1;
        }
        splits
    }

    #[test]
    fn co_ranks_split_a_stable_merge() {
        let mut state = 7u64;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % m) as u32
        };
        for (lens, distinct) in [
            (vec![0, 5], 3),
            (vec![10, 0, 7], 2),
            (vec![50, 33, 80], 1),
            (vec![64, 64], 1000),
            (vec![100, 1, 37, 200], 5),
        ] {
            let runs: Vec<Vec<u32>> = lens
                .iter()
                .map(|&n| {
                    let mut run: Vec<u32> = (0..n).map(|_| next(distinct)).collect();
                    run.sort();
                    run
                })
                .collect();
            let views: Vec<&[u32]> = runs.iter().map(|r| r.as_slice()).collect();
            let total: usize = lens.iter().sum();
            for at in 0..=total {
                assert_eq!(
                    co_ranks(&views, at),
                    reference_split(&views, at),
                    "{lens:?} at {at}"
                );
            }
        }
        // The extreme words.
        let (lows, highs) = ([0u64, 0, u64::MAX], [0u64, u64::MAX, u64::MAX]);
        assert_eq!(co_ranks(&[&lows[..], &highs[..]], 3), [2, 1]);
        assert_eq!(co_ranks(&[&lows[..], &highs[..]], 5), [3, 2]);
    }

    /// The schedule on the host, the GPU's memory a second vector: run A sorted in its place,
    /// run B sorted aside, then the pieces last first, each written where the buffer's keys
    /// have all been read. Checks that no piece overwrites a key of A still to be read.
    fn simulate(plan: &OutOfCorePlan, buffer: &mut [u32]) {
        if plan.runs.len() == 1 {
            buffer.sort();
            return;
        }
        let (a_range, b_range) = (plan.runs[0].clone(), plan.runs[1].clone());
        let mut resident = buffer[b_range].to_vec();
        resident.sort();
        buffer[a_range.clone()].sort();
        let a_sorted = buffer[a_range.clone()].to_vec(); // (for the co-ranks only)
        let mut unread_a = a_range.end;
        for piece in merge_pieces(plan, &a_sorted, &resident) {
            assert!(piece.output.len() <= plan.piece_len);
            assert_eq!(piece.from_a.end, unread_a, "pieces take A from the back");
            assert!(
                piece.output.start >= piece.from_a.start,
                "{piece:?} would overwrite keys of A not yet read"
            );
            let mut on_gpu: Vec<u32> = buffer[piece.from_a.clone()].to_vec();
            on_gpu.extend_from_slice(&resident[piece.from_b.clone()]);
            on_gpu.sort(); // the GPU's sort of the two slices
            unread_a = piece.from_a.start;
            buffer[piece.output.clone()].copy_from_slice(&on_gpu);
        }
        assert_eq!(unread_a, 0);
    }

    #[test]
    fn two_runs_merge_back_into_the_buffer() {
        let info = DeviceInfo::h100();
        let policy = Policy::HOPPER;
        let w = 4;
        let keys = |n: usize, distinct: u32| -> Vec<u32> {
            (0..n as u32)
                .map(|i| i.wrapping_mul(2654435761) % distinct)
                .collect()
        };
        // Budgets that force two runs of a few million keys, with pieces of 2^20.
        for (len, budget_keys, distinct) in [
            (3_000_000, 4_000_000, u32::MAX),
            (5_000_001, 5_500_000, 3),
            (2_500_000, 3_000_000, 1),
        ] {
            let budget = budget_keys * w;
            let plan = plan_out_of_core(&info, &policy, w, len, budget).unwrap();
            assert_eq!(plan.runs.len(), 2, "{len} keys in {budget} bytes");
            assert!(plan.device_bytes <= budget);
            assert_eq!(plan.runs[1].end, len);
            let mut buffer = keys(len, distinct);
            let mut want = buffer.clone();
            want.sort();
            simulate(&plan, &mut buffer);
            assert!(buffer == want, "{len} keys, {distinct} distinct");
        }
    }

    #[test]
    fn plans_say_what_they_need() {
        let info = DeviceInfo::h100();
        let policy = Policy::HOPPER;
        // Fits one sort: one run, no pieces.
        let one = plan_out_of_core(&info, &policy, 4, 1 << 20, 64 << 20).unwrap();
        assert_eq!(one.runs.len(), 1);
        assert_eq!((one.runs[0].clone(), one.piece_len), (0..1 << 20, 0));
        // 2^32 u32 keys (16 GiB) on a GPU of 20 GiB: two runs, the resident one and a piece's
        // sort within the budget.
        let small_gpu = 20usize << 30;
        let big = plan_out_of_core(&info, &policy, 4, 1 << 32, small_gpu).unwrap();
        assert_eq!(big.runs.len(), 2);
        assert!(big.device_bytes <= small_gpu);
        assert!(big.runs.iter().all(|r| r.len() <= MAX_LEN));
        assert!(big.runs[1].len() * 4 + big.piece_len * 4 <= small_gpu);
        // The 2^34 (64 GiB) on an H200's 139 GiB: more than two runs of 2^31 keys, the
        // most one GPU sort indexes: refused, saying so.
        let h200 = 139usize << 30;
        let refused = plan_out_of_core(&info, &policy, 4, 1 << 34, h200).unwrap_err();
        let Error::DeviceMemory { what, .. } = refused else {
            panic!("{refused:?}")
        };
        assert!(what.contains("two runs"), "{what}");
        // Four times the device's memory: refused, with the bytes two runs would take.
        let refused = plan_out_of_core(&info, &policy, 4, 1 << 36, small_gpu).unwrap_err();
        let Error::DeviceMemory { bytes, .. } = refused else {
            panic!("{refused:?}")
        };
        assert!(bytes > small_gpu, "{bytes}");
    }
}
