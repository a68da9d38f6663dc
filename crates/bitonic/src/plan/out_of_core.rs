//! Sorts bigger than the GPU (issue 54), as a plan: how many keys each GPU sort takes, and how
//! the sorted runs merge back into the caller's buffer with no host memory beyond staging. Pure:
//! the device's memory is a number here. `Sorter::sort_large` (src/sorter/out_of_core.rs) carries
//! it out; the tests here run the schedule on the host.
//!
//! **Every run resident** ([`Merge::Resident`]) when the keys fit the device but one sort of
//! them does not (its workspace, or past [`MAX_LEN`] keys), and, from
//! [`crate::policy::HostPolicy::pipeline_from`] keys, in place of one in-memory sort: the keys
//! go up run by run and stay; the output is made a piece at a time between splitters drawn
//! from regular samples of the sorted runs, and goes down while the next piece sorts.
//!
//! **Past the device's memory: two runs, the last one resident.** Keys that fit one in-memory GPU sort
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
//! bytes, twice what one in-memory sort reaches, and at most 2 × 2^31 keys (one GPU sort
//! indexes at most [`MAX_LEN`]).
//!
//! **More runs: a forward merge into the holes.** Past that, the runs are as long as one sort
//! takes (whole blocks of [`BLOCK`] keys), each sorted on the GPU and written back in its place.
//! The merge then makes the output a block at a time, forward: the block's slice of every run
//! goes up, is sorted there, and comes back into a block of the buffer whose keys have all been
//! read ([`block_merge`]), or into one of `runs + 1` spare blocks on the host, which always
//! suffice (each run has at most one block partly read). Last, the blocks are put in order on
//! the host, each block copied once but one a cycle, lifted into a staging block
//! ([`order_blocks`]): host memory, not the link.
//!
//! **With values** (key-value sorts and argsorts, [`plan_out_of_core_pairs`]): one sort, every
//! run resident, or many runs merged in blocks as above, the values beside their keys in each
//! sort, copy and spare block. Blocks sort stably and [`co_ranks_by`] cuts ties in run order,
//! so equal keys keep their order. Pairs have no two-run schedule.

use super::{plan, Operation, Request, MAX_LEN};
use crate::device::DeviceFacts;
use crate::error::{Error, Result};
use crate::options::Backend;
use crate::policy::Policy;
use crate::DType;
use rayon::prelude::*;
use std::ops::Range;

/// The smallest merge piece worth a round trip over the link: 2^20 keys.
pub const MIN_PIECE: usize = 1 << 20;

/// Keys of a block of the many-run merge ([`Merge::Blocks`]): 2^24 (64 MiB of u32 keys), a copy
/// long enough for the link's speed, and few enough bytes for the host's spare blocks. Budgets
/// too small for two sorts of that many take blocks of the largest power of two that allows
/// them.
pub const BLOCK: usize = 1 << 24;

/// The longest piece of [`Merge::Resident`]: 2^28 keys (1 GiB of u32), long enough for the
/// link's speed; a longer first piece would sort longer before the first copy down.
const MOST_PIECE: usize = 1 << 28;

/// The shortest block: shorter ones would make the schedule's arithmetic (quadratic in the
/// blocks) cost more than the copies.
const MIN_BLOCK: usize = 1 << 16;

/// How an out-of-core sort's runs merge.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    /// One run: an in-memory sort, nothing to merge.
    None,
    /// Every run resident: the keys fit the GPU but not one sort (its workspace, or past
    /// [`MAX_LEN`] keys). All go up, each run is sorted where it lies, and the output is made
    /// on the GPU a piece at a time (the runs' slices between two splitters drawn from regular
    /// samples, sorted together) and copied down while the next piece sorts: each key crosses
    /// the link once each way. 4- and 8-byte keys.
    Resident {
        /// Keys a piece holds on average; a piece's buffers hold [`piece_capacity`], the most
        /// a piece between two splitters can have.
        piece_len: usize,
        /// Keys between two samples of a run.
        sample_gap: usize,
    },
    /// Two runs, the last resident on the GPU: the backward merge of [`merge_pieces`], pieces
    /// of at most this many keys, no host staging.
    ResidentRun {
        /// Keys a piece holds at most.
        piece_len: usize,
    },
    /// More runs (each but the last a whole number of blocks): the forward merge of
    /// [`block_merge`] in blocks of this many keys, into blocks of the buffer already read or
    /// `runs + 1` spare blocks of host staging, then [`order_blocks`] through one more.
    Blocks {
        /// Keys a block.
        block_len: usize,
    },
}

/// An out-of-core sort's plan.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutOfCorePlan {
    /// Keys in all.
    pub len: usize,
    /// Bytes a key.
    pub key_bytes: usize,
    /// The runs, in order, each sorted by one in-memory GPU sort.
    pub runs: Vec<Range<usize>>,
    /// How they merge.
    pub merge: Merge,
    /// The most device memory any step takes, bytes.
    pub device_bytes: usize,
    /// Host memory beyond the caller's buffer, bytes: the merge's spare and staging blocks.
    pub host_bytes: usize,
}

impl OutOfCorePlan {
    /// The plan of keys that one in-memory sort takes (on the CPU, `device_bytes` 0).
    pub(crate) fn in_memory(len: usize, dtype: DType, device_bytes: usize) -> OutOfCorePlan {
        OutOfCorePlan {
            len,
            key_bytes: dtype.size(),
            runs: std::iter::once(0..len).collect(),
            merge: Merge::None,
            device_bytes,
            host_bytes: 0,
        }
    }
}

/// What an out-of-core sort moves: keys of `dtype`, with values of `value_bytes` each (0: keys
/// alone; 4 or 8: a key-value sort or an argsort, whose indices are values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Items {
    /// The keys' type.
    pub dtype: DType,
    /// Bytes of each key's value, 0 for none.
    pub value_bytes: usize,
}

impl Items {
    /// Keys alone.
    pub fn keys(dtype: DType) -> Items {
        Items {
            dtype,
            value_bytes: 0,
        }
    }

    /// Bytes of a key and its value.
    fn bytes(self) -> usize {
        self.dtype.size() + self.value_bytes
    }

    /// The request of an in-memory GPU sort of `n` of them.
    fn request(self, n: usize) -> Request {
        let operation = match self.value_bytes {
            0 => Operation::Sort,
            value_bytes => Operation::SortPairs { value_bytes },
        };
        Request::new(operation, self.dtype, n).backend(Backend::Cuda)
    }
}

/// Device bytes of an in-memory GPU sort of `n` `items`: the keys, their values, and the
/// workspace of the sort's plan (16-bit keys' widened words included); `usize::MAX` past
/// [`MAX_LEN`] keys, which no one GPU sort takes.
pub(crate) fn in_memory_bytes(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    items: Items,
    n: usize,
) -> Result<usize> {
    if n > MAX_LEN {
        return Ok(usize::MAX);
    }
    let sort = plan(&items.request(n), Some((facts, policy)))?;
    Ok(n * items.bytes() + sort.workspace_bytes())
}

/// Many `items` that one in-memory sort takes in `budget` device bytes (0: none),
/// found by bisection. The bytes mostly grow with the keys, but not always (a plan's runs and
/// levels change at some lengths: 2^24 + 1 u32 keys take fewer bytes than 2^24), so this is a
/// length that fits, not always the most, and a shorter one may not fit: callers check the
/// lengths they take.
fn most_in_memory(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    items: Items,
    budget: usize,
) -> Result<usize> {
    let (mut fits, mut fails) = (0usize, (budget / items.bytes()).min(MAX_LEN) + 1);
    while fails - fits > 1 {
        let mid = fits + (fails - fits) / 2;
        if in_memory_bytes(facts, policy, items, mid)? <= budget {
            fits = mid;
        } else {
            fails = mid;
        }
    }
    Ok(fits)
}

/// The out-of-core sort of `len` keys of `dtype` in `budget` bytes of device memory: within the
/// device's memory, one run or every run resident (pipelined from
/// [`crate::policy::HostPolicy::pipeline_from`] keys); past it two runs, the last resident,
/// where they fit (see the module's text); else as many runs as one sort each takes, merged
/// in blocks; or [`Error::DeviceMemory`] with the bytes a sort of one block needs, when not
/// even that fits.
pub fn plan_out_of_core(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    dtype: DType,
    len: usize,
    budget: usize,
) -> Result<OutOfCorePlan> {
    let key_bytes = dtype.size();
    let sort_bytes = |n| in_memory_bytes(facts, policy, Items::keys(dtype), n);
    if let Some(plan) = within_device(facts, policy, Items::keys(dtype), len, budget)? {
        return Ok(plan);
    }
    // A piece of an eighth of the budget's keys (at least MIN_PIECE); the resident run takes
    // what is left beside a piece's sort, and no more than one sort takes.
    let piece_len = (budget / key_bytes / 8)
        .max(MIN_PIECE)
        .min(len)
        .min(MAX_LEN);
    let piece_bytes = sort_bytes(piece_len)?;
    let beside_piece = budget.saturating_sub(piece_bytes) / key_bytes;
    // The most keys one sort takes in the budget: the resident run's bound here, the runs'
    // below.
    let fits = most_in_memory(facts, policy, Items::keys(dtype), budget)?;
    let resident = beside_piece.min(fits).min(len);
    let first = len - resident;
    let device_bytes = sort_bytes(first)?
        .max(sort_bytes(resident)?)
        .max((resident * key_bytes).saturating_add(piece_bytes));
    if resident > 0 && device_bytes <= budget {
        return Ok(OutOfCorePlan {
            len,
            key_bytes,
            runs: vec![0..first, first..len],
            merge: Merge::ResidentRun { piece_len },
            device_bytes,
            host_bytes: 0,
        });
    }
    in_blocks(facts, policy, Items::keys(dtype), len, budget, fits)
}

/// The many-run schedule ([`Merge::Blocks`]) of `len` `items` in `budget` device bytes, of
/// which one sort takes `fits`: runs of as many whole blocks as one sort takes (a run's and the
/// last run's sorts, and a block's, within the budget), merged in blocks of [`BLOCK`] keys, or
/// of the largest power of two of which 16 fit one sort, so that the spare blocks (one a run)
/// hold at most about a sixteenth of the items; [`Error::DeviceMemory`] with the bytes a sort
/// of one block needs, when not even that fits.
fn in_blocks(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    items: Items,
    len: usize,
    budget: usize,
    fits: usize,
) -> Result<OutOfCorePlan> {
    let sort_bytes = |n| in_memory_bytes(facts, policy, items, n);
    let block_len = match fits / 16 {
        0 => BLOCK.min(len),
        sixteenth => BLOCK.min(1 << sixteenth.ilog2()).max(MIN_BLOCK).min(len),
    };
    let most = fits / block_len * block_len;
    // The merge: two sets of block buffers taking turns, one of them sorting.
    let merge_bytes = sort_bytes(block_len)?.saturating_add(block_len * items.bytes());
    let device_of = |run_len: usize| -> Result<usize> {
        let last = match len % run_len {
            0 => run_len,
            rest => rest,
        };
        Ok(sort_bytes(run_len)?.max(sort_bytes(last)?).max(merge_bytes))
    };
    let mut run_len = most;
    while run_len > 0 && device_of(run_len)? > budget {
        run_len -= block_len;
    }
    let key_bytes = items.dtype.size();
    if run_len == 0 {
        let values = match items.value_bytes {
            0 => String::new(),
            bytes => format!(" with values of {bytes}"),
        };
        return Err(Error::DeviceMemory {
            bytes: merge_bytes,
            what: format!(
                "an out-of-core sort of {len} keys of {key_bytes} bytes{values}: one GPU sort \
                 of a block of {block_len} keys beside a second block (the budget is {budget} \
                 bytes)"
            ),
        });
    }
    let runs: Vec<Range<usize>> = (0..len)
        .step_by(run_len)
        .map(|start| start..(start + run_len).min(len))
        .collect();
    // The spares (at most runs + 1), the staging block, and an argsort's block of keys
    // gathered from the input (no keys in its spares): within the same bound.
    let host_bytes = (runs.len() + 2) * block_len * items.bytes();
    Ok(OutOfCorePlan {
        len,
        key_bytes,
        device_bytes: device_of(run_len)?,
        host_bytes,
        runs,
        merge: Merge::Blocks { block_len },
    })
}

/// The plan of `len` `items` within the device's memory, if they fit `budget`: pipelined (every
/// run resident) from [`crate::policy::HostPolicy::pipeline_from`] keys, else one in-memory
/// sort, else every run resident.
fn within_device(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    items: Items,
    len: usize,
    budget: usize,
) -> Result<Option<OutOfCorePlan>> {
    let host = &policy.host;
    if len >= host.pipeline_from {
        let piece = len.div_ceil(host.pipeline_pieces).min(MOST_PIECE);
        let shape = (host.pipeline_runs, piece);
        if let Some(plan) = every_run_resident(facts, policy, items, len, budget, shape)? {
            return Ok(Some(plan));
        }
    }
    let one_sort = in_memory_bytes(facts, policy, items, len)?;
    if one_sort <= budget {
        return Ok(Some(OutOfCorePlan::in_memory(len, items.dtype, one_sort)));
    }
    every_run_resident(facts, policy, items, len, budget, (2, MOST_PIECE))
}

/// The out-of-core sort of `len` keys of `dtype` with values of `value_bytes` (4 or 8) in
/// `budget` bytes of device memory, for a key-value sort or an argsort: one run, or every run
/// resident, within the device's memory; past it, many runs merged in blocks, as
/// [`plan_out_of_core`] plans keys past two runs (pairs have no two-run schedule).
pub fn plan_out_of_core_pairs(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    (dtype, value_bytes): (DType, usize),
    len: usize,
    budget: usize,
) -> Result<OutOfCorePlan> {
    let items = Items { dtype, value_bytes };
    if let Some(plan) = within_device(facts, policy, items, len, budget)? {
        return Ok(plan);
    }
    let fits = most_in_memory(facts, policy, items, budget)?;
    in_blocks(facts, policy, items, len, budget, fits)
}

/// The plan of [`Merge::Resident`] when the keys and what sorts them fit `budget`: the fewest
/// runs (at least `min_runs`, of at most [`MAX_LEN`] keys) whose sort's workspace fits beside
/// all the keys, and the longest pieces (at most `most_piece` keys, halved down to about
/// [`MIN_PIECE`]) of which two, with their sorts' workspace, fit beside them too.
fn every_run_resident(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    items: Items,
    len: usize,
    budget: usize,
    (min_runs, most_piece): (usize, usize),
) -> Result<Option<OutOfCorePlan>> {
    let key_bytes = items.dtype.size();
    // A key and its value, as they lie on the GPU.
    let item_bytes = items.bytes();
    let Some(room) = budget
        .checked_sub(len.saturating_mul(item_bytes))
        .filter(|_| key_bytes >= 4)
    else {
        return Ok(None);
    };
    let sort_bytes = |n| in_memory_bytes(facts, policy, items, n);
    let workspace = |n: usize| -> Result<usize> { Ok(sort_bytes(n)? - n * item_bytes) };
    let mut runs = len.div_ceil(MAX_LEN).max(min_runs);
    let (run_len, run_workspace) = loop {
        let run_len = len.div_ceil(runs);
        if run_len < MIN_PIECE {
            return Ok(None);
        }
        // The last run may be shorter, and a shorter sort can take more workspace.
        let last = len - (len.div_ceil(run_len) - 1) * run_len;
        let run_workspace = workspace(run_len)?.max(workspace(last)?);
        if run_workspace <= room {
            break (run_len, run_workspace);
        }
        runs *= 2;
    };
    let runs: Vec<Range<usize>> = (0..len)
        .step_by(run_len)
        .map(|start| start..(start + run_len).min(len))
        .collect();
    // Samples a run: about 4,096, at most 2^16 keys apart.
    let sample_gap = (run_len >> 12).clamp(64, 1 << 16);
    let mut piece_len = most_piece.min(len);
    // Two pieces' buffers and sorts.
    let pieces_bytes = |piece_len| -> Result<usize> {
        let capacity = piece_capacity(runs.len(), piece_len, sample_gap);
        Ok(sort_bytes(capacity)?.saturating_mul(2))
    };
    let pieces = loop {
        let pieces = pieces_bytes(piece_len)?;
        if pieces <= room {
            break pieces;
        }
        if piece_len <= MIN_PIECE {
            return Ok(None);
        }
        piece_len /= 2;
    };
    let device_bytes = len * item_bytes + run_workspace.max(pieces);
    Ok(Some(OutOfCorePlan {
        len,
        key_bytes,
        runs,
        merge: Merge::Resident {
            piece_len,
            sample_gap,
        },
        device_bytes,
        host_bytes: 0,
    }))
}

/// The most keys a piece of [`Merge::Resident`] can hold, its splitters `⌈S / pieces⌉` samples
/// apart (S samples in all, `sample_gap` keys apart in each of `runs` runs): each run adds at
/// most a gap beyond its samples in the piece, and the rounding of S over the pieces at most
/// `runs + 1` gaps more, so `piece_len + 2 (runs + 1) sample_gap`.
pub fn piece_capacity(runs: usize, piece_len: usize, sample_gap: usize) -> usize {
    piece_len + 2 * (runs + 1) * sample_gap
}

/// Where the first `at` keys of the stable merge of sorted `runs` (ties: the earlier run's keys
/// first) end in each run: `at` split over the runs, in run order. `at` is at most the runs'
/// keys in all.
pub fn co_ranks<W: Ord + Copy + Into<u64>>(runs: &[&[W]], at: usize) -> Vec<usize> {
    co_ranks_by(runs, at, |&w| w.into())
}

/// [`co_ranks`] of runs of keys sorted by their `word`s (their ordered bits), compared as words.
pub fn co_ranks_by<T>(runs: &[&[T]], at: usize, word: impl Fn(&T) -> u64) -> Vec<usize> {
    let total: usize = runs.iter().map(|r| r.len()).sum();
    assert!(at <= total, "{at} of {total} keys");
    if at == 0 {
        return vec![0; runs.len()];
    }
    // The at-th smallest word, v: the least x with at least `at` words at or below it, which
    // lies between the runs' smallest and largest words.
    let at_or_below = |x: u64| -> usize {
        runs.iter()
            .map(|r| r.partition_point(|w| word(w) <= x))
            .sum()
    };
    let ends = runs.iter().filter(|r| !r.is_empty());
    let mut lo = ends.clone().map(|r| word(&r[0])).min().unwrap_or(0);
    let mut hi = ends.map(|r| word(&r[r.len() - 1])).max().unwrap_or(0);
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
        .map(|r| r.partition_point(|w| word(w) < lo))
        .collect();
    let mut ties = at - splits.iter().sum::<usize>();
    for (split, run) in splits.iter_mut().zip(runs) {
        let equal = run.partition_point(|w| word(w) <= lo) - *split;
        let taken = equal.min(ties);
        *split += taken;
        ties -= taken;
    }
    splits
}

/// The pieces of the backward merge of a two-run plan, last first: for each, the output range
/// it fills and the ranges of run A (in the buffer) and of run B (in B, on the GPU) it takes.
/// `split(at)` says how many of the first `at` output keys come from A: the merge path, A's
/// keys first among equal ones.
pub fn merge_pieces(
    plan: &OutOfCorePlan,
    mut split: impl FnMut(usize) -> Result<usize>,
) -> Result<Vec<MergePiece>> {
    let Merge::ResidentRun { piece_len } = plan.merge else {
        panic!("a merge of two runs, the last resident: {:?}", plan.merge);
    };
    let mut pieces = Vec::new();
    let (mut end, mut ends) = (plan.len, [plan.runs[0].len(), plan.runs[1].len()]);
    while end > 0 {
        let start = end.saturating_sub(piece_len);
        let from_a = split(start)?;
        let starts = [from_a, start - from_a];
        pieces.push(MergePiece {
            output: start..end,
            from_a: starts[0]..ends[0],
            from_b: starts[1]..ends[1],
        });
        (end, ends) = (start, [starts[0], starts[1]]);
    }
    Ok(pieces)
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

/// Where an output block of the many-run merge ([`block_merge`]) is written.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// Block i of the buffer (keys from i × the block's length), whose keys have all been read.
    Buffer(usize),
    /// Spare block i of host staging.
    Spare(usize),
}

/// One output block of the many-run merge: its keys from each run (positions in the run) and
/// where it is written until the blocks are put in order.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputBlock {
    /// Its keys from each run, in run order.
    pub from_runs: Vec<Range<usize>>,
    /// Where it is written.
    pub slot: Slot,
}

/// The forward merge of sorted runs that lie one after another in one buffer, in blocks of
/// `block_len` keys of the output, for more runs than [`merge_pieces`] takes: each output block
/// takes its slice of every run (by [`co_ranks`]) and is written to the first block of the
/// buffer whose keys have all been read (its own slices counted: they are on the GPU by then),
/// else to a spare block of host staging. Every run but the last must be a whole number of
/// blocks. At most `runs + 1` spares are ever used: after b output blocks, b blocks' worth of
/// keys have been read, and each run has at most one block partly read. The blocks are then put
/// in order on the host ([`order_blocks`]).
pub fn block_merge<W: Ord + Copy + Into<u64> + Sync>(
    runs: &[&[W]],
    block_len: usize,
) -> Vec<OutputBlock> {
    block_merge_by(runs, block_len, |&w| w.into())
}

/// [`block_merge`] of runs of keys sorted by their `word`s (their ordered bits).
pub fn block_merge_by<T: Sync>(
    runs: &[&[T]],
    block_len: usize,
    word: impl Fn(&T) -> u64 + Sync,
) -> Vec<OutputBlock> {
    assert!(block_len > 0, "blocks of at least one key");
    let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
    let (count, total) = (runs.len(), lens.iter().sum::<usize>());
    for &len in &lens[..count.saturating_sub(1)] {
        assert_eq!(len % block_len, 0, "runs but the last of whole blocks");
    }
    let starts: Vec<usize> = lens
        .iter()
        .scan(0, |at, &len| {
            let start = *at;
            *at += len;
            Some(start)
        })
        .collect();
    let buffer_blocks = total.div_ceil(block_len);
    let block_range = |b: usize| b * block_len..((b + 1) * block_len).min(total);
    // Whether every key of buffer block b has been read, `read[r]` keys of each run r.
    let all_read = |b: usize, read: &[usize]| {
        let keys = block_range(b);
        (0..count).all(|r| {
            let run = starts[r]..starts[r] + lens[r];
            let (lo, hi) = (keys.start.max(run.start), keys.end.min(run.end));
            lo >= hi || read[r] >= hi - run.start
        })
    };
    let (mut used, mut spares) = (vec![false; buffer_blocks], 0usize);
    let mut blocks = Vec::with_capacity(buffer_blocks);
    let mut read = vec![0usize; count];
    // Each block's end in every run: bisections that read the runs at random, on all cores.
    let all_ends: Vec<Vec<usize>> = (0..buffer_blocks)
        .into_par_iter()
        .map(|b| co_ranks_by(runs, block_range(b).end, &word))
        .collect();
    for (b, ends) in all_ends.into_iter().enumerate() {
        let out = block_range(b);
        let from_runs = read.iter().zip(&ends).map(|(&s, &e)| s..e).collect();
        read = ends;
        // A free block of the buffer as long as the output block, else a spare.
        let free = (0..buffer_blocks)
            .find(|&f| !used[f] && block_range(f).len() == out.len() && all_read(f, &read));
        let slot = match free {
            Some(f) => {
                used[f] = true;
                Slot::Buffer(f)
            }
            None => {
                spares += 1;
                Slot::Spare(spares - 1)
            }
        };
        blocks.push(OutputBlock { from_runs, slot });
    }
    debug_assert!(spares <= count + 1, "{spares} spares for {count} runs");
    blocks
}

/// The one block of host staging that [`order_blocks`] lifts a block of a cycle into.
pub const STAGING: Slot = Slot::Spare(usize::MAX);

/// The copies, `(from, to)` in order, that put the blocks of [`block_merge`] in order (output
/// block b into buffer block b; `slots[b]` is where it was written), each block copied once
/// but one a cycle. First the chains: a buffer block that holds no output block (a hole) is
/// filled with its own block from where that lies, which leaves a hole there, filled in turn,
/// until the block came from a spare. What is left out of place are cycles among buffer
/// blocks: one block of each is lifted into [`STAGING`], which makes a hole, and its chain
/// ends with the lifted block. No block is overwritten before it moves.
pub fn order_blocks(slots: &[Slot]) -> Vec<(Slot, Slot)> {
    let mut moves = BlockMoves {
        at: slots.to_vec(),
        holder: slots.iter().enumerate().map(|(b, &s)| (s, b)).collect(),
        copies: Vec::new(),
    };
    for hole in 0..slots.len() {
        if !moves.holder.contains_key(&Slot::Buffer(hole)) {
            moves.chain(hole);
        }
    }
    for first in 0..slots.len() {
        if moves.at[first] != Slot::Buffer(first) {
            let lifted = moves.holder[&Slot::Buffer(first)];
            moves.copy(lifted, STAGING);
            moves.chain(first);
        }
    }
    moves.copies
}

/// Where each block of [`order_blocks`] lies, which block each slot holds, and the copies so
/// far.
struct BlockMoves {
    at: Vec<Slot>,
    holder: std::collections::HashMap<Slot, usize>,
    copies: Vec<(Slot, Slot)>,
}

impl BlockMoves {
    /// Copies block `b` from where it lies into the free slot `to`.
    fn copy(&mut self, b: usize, to: Slot) {
        let from = self.at[b];
        self.copies.push((from, to));
        self.holder.remove(&from);
        self.holder.insert(to, b);
        self.at[b] = to;
    }

    /// Fills the hole at buffer block `place` with its block, then the hole that leaves, and
    /// so on, until a block came from a spare (or from staging).
    fn chain(&mut self, mut place: usize) {
        loop {
            let from = self.at[place];
            self.copy(place, Slot::Buffer(place));
            match from {
                Slot::Buffer(next) => place = next,
                Slot::Spare(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests;
