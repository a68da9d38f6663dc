//! Top-k selection on the GPU (kernels/topk.cu): [`Strategy::TopkRadix`],
//! [`Strategy::TopkFilter`], [`Strategy::TopkWarpSort`] for short rows, and past
//! [`crate::dispatch::TOPK_FILTER_MAX_K`] (or for a k above half the row) the first k of each
//! row's stable argsort. 16-bit keys are read as they are by the first three (topk.cu's u16
//! parts), and widened to u32 words for the argsort.
//!
//! **The radix select.** One block holds one chunk of a row in registers (up to
//! [`RADIX_PER_THREAD`] elements a thread, as sortable words) and narrows it in three steps
//! (kernels/topk.cu says how): a threshold that at least k of the chunk's elements reach, from
//! the best of each thread (a tournament of the warps' sorted lists) or of each small group of
//! registers (a radix select over them); the elements that reach it, gathered in shared memory
//! as candidates (a little more than k for keys in no particular order); and the exact k best
//! of those, placed by their ranks, by a tournament (up to 512 of them, k up to 256), or by a
//! radix select over them. A chunk's k best go to a scratch buffer; the next pass selects over
//! them, until a row is one chunk, whose block writes its k best sorted; or, for a row of a
//! few chunks and k up to 256, one block merges their sorted runs. For k from 100 to 512 (the
//! policy's) the first pass gives a block a *segment* of several chunks instead, which it
//! takes one after the other against one running threshold, selecting once a segment.
//! [`radix_plan`] gives the passes.
//!
//! **The spread select.** Few long rows, where the dispatch picked the radix select or the
//! filter, take the spread select instead when a sample's threshold leaves few enough
//! candidates ([`spread_plan`]): a block a row (or several, and a launch that combines them)
//! takes a threshold from a sample of the row, many blocks a row gather the keys that reach
//! it, and a block a row selects among them, three or four launches. A 16-bit key's threshold
//! holds the index too (the slice of 8,192 keys or more it lies in), so that a row that repeats
//! its values leaves about as many candidates as one that does not.
//!
//! **The warp sort.** A row of at most [`crate::dispatch::TOPK_WARP_SORT_MOST`] keys of 2 or
//! 4 bytes fits in one warp's registers as composites, up to 32 a lane: the warp sorts them
//! with a bitonic network (shuffles between lanes, compares within one) and writes the first k,
//! with no barrier and one launch ([`warp_sort`]).
//!
//! **The filter.** One block selects the best k of one chunk of a row, keeping them in shared
//! memory and letting through only the keys that beat the k-th best (kernels/topk.cu says
//! how). A row too long for one block is cut into chunks, so that the grid has
//! [`BLOCKS_PER_SM`] blocks a multiprocessor; the chunks' k best (composites: a key's word and
//! its index) go to a scratch buffer, and the same kernel selects over them again, pass after
//! pass, until each row is one chunk, whose block writes the keys and indices. [`plan`] gives
//! the passes, a pure function of the shape.
//!
//! **Order.** Larger composites are better: the word of a key is its sortable word for the
//! largest keys and its complement for the smallest, and the index is complemented, so equal
//! keys go to the smaller index: the result is the first k of a stable sort.

use super::kernels::{self, KernelModule};
use super::layout::{KeyIndex, MAP_DESCENDING};
use super::run::{self, Target};
use super::{launch, Gpu};
use crate::dispatch::Strategy;
use crate::error::{CudaContext as _, Error, Result};
use crate::key::MapKind;
use crate::{Policy, Select, SortKey};
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr};

/// Threads of a top-k block (kernels: `KERNEL_TOPK_THREADS`).
pub(crate) const THREADS: u32 = 256;
/// Bytes each thread loads a tile: one 16-byte vector.
const VECTOR_BYTES: usize = 16;
/// Blocks a multiprocessor that the chunks of few rows aim for.
const BLOCKS_PER_SM: usize = 4;
/// The fewest elements a chunk of a row has (unless the row is shorter): below it, a block's
/// start-up (padding its buffer, the first sorts) costs more than its loads.
const MIN_CHUNK: usize = 1 << 13;
/// A chunk holds at least this many times k elements, so that each reduction pass reads at
/// most about a sixteenth of the elements of the pass before.
const CHUNK_PER_K: usize = 16;
/// Chunks start at multiples of this many elements: 16-byte aligned when the row is.
const CHUNK_ALIGN: usize = 16;

/// The elements a thread of the radix select can hold: the kernels' instances of `R`.
pub(crate) const RADIX_PER_THREAD: [usize; 3] = [4, 16, 32];
/// Candidates above a block's threshold that a thread of the radix select holds in registers
/// for a radix select over them (kernels: `KERNEL_TOPK_CANDIDATES_PER_THREAD`): the shared
/// memory holds `THREADS` times this many, or times the elements a thread holds if fewer.
const RADIX_CANDIDATES_PER_THREAD: usize = 8;
/// The most candidates a block places by their ranks (each counts the candidates that beat it)
/// instead of a radix select and a bitonic sort (kernels: `KERNEL_TOPK_RANK_MAX`).
const RADIX_RANK_MAX: usize = 128;
/// The most values a radix block's tournament keeps (kernels: `KERNEL_TOPK_TOURNAMENT_MOST`).
const RADIX_TOURNAMENT_MOST: usize = 256;
/// The u64 composites a radix block's tournaments pass through shared memory: a list of up to
/// [`RADIX_TOURNAMENT_MOST`] a warp (kernels: `TOURNAMENT_SLOTS`). 16-byte composites run only
/// the threshold's tournaments of up to 128, which the candidates' space holds.
const RADIX_TOURNAMENT_SLOTS: usize = (THREADS as usize / 32) * RADIX_TOURNAMENT_MOST;
/// The fewest elements a radix chunk has when rows are cut to fill the GPU.
const RADIX_MIN_CHUNK: usize = 2048;

/// The `-D` defines of kernels/topk.cu.
pub(crate) fn kernel_defines() -> Vec<super::nvrtc::Define> {
    vec![
        ("KERNEL_TOPK_THREADS", THREADS.to_string()),
        (
            "KERNEL_TOPK_CANDIDATES_PER_THREAD",
            RADIX_CANDIDATES_PER_THREAD.to_string(),
        ),
        ("KERNEL_TOPK_RANK_MAX", RADIX_RANK_MAX.to_string()),
        (
            "KERNEL_TOPK_TOURNAMENT_MOST",
            RADIX_TOURNAMENT_MOST.to_string(),
        ),
        ("KERNEL_TOPK_MERGE_RUNS_MOST", MERGE_RUNS_MOST.to_string()),
        (
            "KERNEL_TOPK_SAMPLES_PER_THREAD",
            SAMPLED_SAMPLES_PER_THREAD.to_string(),
        ),
        (
            "KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD",
            SPREAD_SAMPLES_PER_THREAD.to_string(),
        ),
        (
            "KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD",
            SPREAD_CANDIDATES_PER_THREAD.to_string(),
        ),
        (
            "KERNEL_TOPK_SPREAD_LISTED_PER_THREAD",
            SPREAD_LISTED_PER_THREAD.to_string(),
        ),
    ]
}

/// The module of the top-k filter and take kernels of keys of `key_bytes` bytes.
pub(crate) fn module(key_bytes: usize) -> &'static KernelModule {
    match key_bytes {
        2 => &kernels::TOPK_U16,
        4 => &kernels::TOPK_U32,
        _ => &kernels::TOPK_U64,
    }
}

/// The module of the top-k radix select of keys of `key_bytes` bytes at `per_thread` (one of
/// [`RADIX_PER_THREAD`]) elements a thread.
fn radix_module(key_bytes: usize, per_thread: usize) -> &'static KernelModule {
    let family = match key_bytes {
        2 => &kernels::TOPK_RADIX_U16,
        4 => &kernels::TOPK_RADIX_U32,
        _ => &kernels::TOPK_RADIX_U64,
    };
    let at = RADIX_PER_THREAD
        .iter()
        .position(|&r| r == per_thread)
        .expect("a radix width the kernels have");
    &family[at]
}

/// One launch of the filter: rows of `row_len` elements cut into `chunks` chunks of
/// `chunk_len` (the last may be shorter), a block's buffer of `slots` composites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    pub(crate) row_len: usize,
    pub(crate) chunks: usize,
    pub(crate) chunk_len: usize,
    pub(crate) slots: usize,
}

/// Elements a block loads a tile: one 16-byte vector a thread.
fn tile(element_bytes: usize) -> usize {
    THREADS as usize * (VECTOR_BYTES / element_bytes).max(1)
}

/// The passes of the filter over `rows` rows of `row_len` keys of `key_bytes` bytes, keeping
/// `k` (1 ≤ k ≤ row_len): the first over the keys, each later one over the k best of every
/// chunk of the pass before, the last with one chunk a row. `multiprocessors` sizes the grid.
pub(crate) fn plan(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
) -> Vec<Pass> {
    // 16- and 32-bit keys make u64 composites, 64-bit keys 16-byte ones.
    let composite_bytes = if key_bytes == 8 { 16 } else { 8 };
    let wanted = (BLOCKS_PER_SM * multiprocessors.max(1)).div_ceil(rows.max(1));
    let min_chunk = MIN_CHUNK.max(CHUNK_PER_K * k);
    let mut passes = Vec::new();
    let (mut len, mut element_bytes) = (row_len, key_bytes);
    loop {
        let chunks = wanted.min(len.div_ceil(min_chunk)).max(1);
        let chunk_len = len.div_ceil(chunks).next_multiple_of(CHUNK_ALIGN).min(len);
        let chunks = len.div_ceil(chunk_len);
        // Room for two tiles of candidates (or the whole chunk) beside the best k: a tile fits
        // after every flush, and a flush comes at most every other tile.
        let slots = (k + chunk_len.min(2 * tile(element_bytes))).next_power_of_two();
        passes.push(Pass {
            row_len: len,
            chunks,
            chunk_len,
            slots,
        });
        if chunks == 1 {
            return passes;
        }
        (len, element_bytes) = (chunks * k, composite_bytes);
    }
}

/// What one launch of the radix select runs (kernels/topk.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RadixKind {
    /// A chunk a block, held in registers (`topk_radix`): over the keys in the first pass,
    /// over the k best of every chunk of the pass before in a later one.
    Chunks,
    /// The first pass in *segments*, several blocks of registers that a block takes one after
    /// the other against one running threshold (`topk_radix` STREAM, 32 a thread).
    Segments,
    /// The first pass by the sampled select (`topk_sampled`): a chunk a block, of any length,
    /// read once against a threshold from a sample of it; its results come out sorted.
    Sampled,
    /// The merge of the first pass's sorted runs of k, a row's in one block (`topk_merge`),
    /// with the module of the first pass (its `per_thread`).
    Merge,
}

/// One launch of the radix select: rows of `row_len` elements cut into `chunks` chunks of
/// `chunk_len` (the last may be shorter), `per_thread` elements a thread, run as `kind` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RadixPass {
    pub(crate) row_len: usize,
    pub(crate) chunks: usize,
    pub(crate) chunk_len: usize,
    pub(crate) per_thread: usize,
    pub(crate) kind: RadixKind,
}

/// Whether the first radix pass's chunks may be merged as sorted runs (kernels/topk.cu
/// `topk_merge`): u64 composites (keys of up to 4 bytes), and k up to
/// [`RADIX_TOURNAMENT_MOST`], whose chunks mostly come out sorted (the merge sorts the others:
/// a radix select's, on ties or a row's short last chunk).
fn merges(key_bytes: usize, k: usize) -> bool {
    key_bytes <= 4 && k <= RADIX_TOURNAMENT_MOST
}

/// The keys a thread of the sampled select samples (kernels: `KERNEL_TOPK_SAMPLES_PER_THREAD`).
const SAMPLED_SAMPLES_PER_THREAD: usize = 16;
/// The fewest keys a chunk of the sampled select has: twice its sample of 4,096
/// (kernels/topk.cu `SAMPLED_MIN_LEN`).
const SAMPLED_MIN_LEN: usize = 2 * SAMPLED_SAMPLES_PER_THREAD * THREADS as usize;

/// The fewest keys a chunk of the sampled select has under `policy` for `k`: the policy's
/// least chunk, and 8 k, so that the sample's threshold keeps a small part of it.
fn sampled_chunk(k: usize, policy: &Policy) -> usize {
    policy
        .topk_sampled_min_chunk
        .max(SAMPLED_MIN_LEN)
        .max(8 * k)
}

/// Whether the first pass of a radix select of `k` of `key_bytes` keys is the sampled select
/// under `policy`, for rows of `row_len`: k from the policy's least (from 1 on rows past
/// `topk_filter_above`) to its largest, rows of at least one chunk.
fn samples(row_len: usize, k: usize, key_bytes: usize, policy: &Policy) -> bool {
    let most_k = policy.topk_sampled_max_k.min(Policy::TOPK_SAMPLED_MOST_K);
    let least_k = if row_len > policy.topk_filter_above {
        1
    } else {
        policy.topk_sampled_min_k
    };
    key_bytes <= 4 && (least_k..=most_k).contains(&k) && row_len >= sampled_chunk(k, policy)
}

/// The blocks that the radix and the spread select cut rows to fill: the policy's
/// `topk_radix_blocks_per_sm` on each of `multiprocessors`.
fn radix_blocks(policy: &Policy, multiprocessors: usize) -> usize {
    policy
        .topk_radix_blocks_per_sm
        .saturating_mul(multiprocessors.max(1))
}

/// The fewest chunks a streamed segment has: segments of 4 and 8 chunks were faster than a
/// chunk a block for k from 100 to 512, and one 2^24 array's segments of two slower from
/// k = 200 (f32 k = 256 0.141 -> 0.161 ms; docs/notes/topk.md, step 8).
const STREAM_MIN_CHUNKS: usize = 4;

/// The most runs a row's merge pass merges: from 8 runs on, a radix pass over their k best
/// takes its threshold (8 k <= the elements in play) and costs less than the merge's searches
/// (docs/notes/topk.md, step 5: 4 and 6 runs faster merged, 8 slower for k >= 50).
const MERGE_RUNS_MOST: usize = 7;

/// The passes of the radix select over `rows` rows of `row_len` elements keeping `k`
/// (1 ≤ k ≤ row_len, and k ≤ [`crate::dispatch::TOPK_RADIX_MAX_K`] when a row is longer than
/// [`crate::dispatch::TOPK_RADIX_CHUNK`]) of `key_bytes`, with `policy`'s
/// `topk_radix_per_thread` (16 or 32), `topk_radix_blocks_per_sm` and
/// `topk_radix_stream_chunks`: the first over the keys, each later one over the k best of
/// every chunk of the pass before, the last with one chunk a row.
///
/// Rows are cut into chunks no longer than a block holds, and into more (down to
/// [`RADIX_MIN_CHUNK`] and 8k elements) while the grid has fewer than `topk_radix_blocks_per_sm`
/// blocks a multiprocessor. A chunk is then a whole block's registers, `per_thread` x THREADS
/// elements, only a row's last shorter, so that every other chunk loads without bounds checks.
/// The first pass at 32 a thread, for k from `topk_radix_stream_min_k` to `_max_k` (and at
/// most an eighth of a block's registers), cuts rows into *segments* of up to
/// `topk_radix_stream_chunks` such chunks instead, as many as the grid wants, and a block
/// streams each ([`RadixKind::Segments`]) where a segment has at least [`STREAM_MIN_CHUNKS`].
/// A k below that range streams segments of [`STREAM_MIN_CHUNKS`] chunks where they make the
/// plan a pass shorter and still fill the GPU ([`STREAM_BLOCKS_PER_SM`]): one row of 2^24 at
/// k = 8 leaves 4,096 partial results, which one block selects from, instead of 16,384, which
/// take two more passes (docs/notes/topk.md, step 17).
/// Where [`samples`] says so (`topk_sampled_min_k` to `_max_k`), the first pass is the sampled
/// select instead ([`RadixKind::Sampled`]), over as many chunks as the grid wants of at least
/// [`SAMPLED_MIN_LEN`] and 8 k keys, whatever a block's registers hold.
/// Where the first pass's results are sorted runs ([`merges`], or sampled) and it leaves at
/// most [`MERGE_RUNS_MOST`] chunks a row, the second and last pass merges them.
pub(crate) fn radix_plan(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
    policy: &Policy,
) -> Vec<RadixPass> {
    let plan = |streaming| {
        radix_passes(
            rows,
            row_len,
            k,
            key_bytes,
            multiprocessors,
            policy,
            streaming,
        )
    };
    let most = THREADS as usize * policy.topk_radix_per_thread;
    let can_stream = policy.topk_radix_stream_chunks >= STREAM_MIN_CHUNKS
        && policy.topk_radix_per_thread == RADIX_PER_THREAD[2]
        && 8 * k <= most
        && !samples(row_len, k, key_bytes, policy);
    if !can_stream {
        return plan(Streaming::Off);
    }
    if (policy.topk_radix_stream_min_k..=policy.topk_radix_stream_max_k).contains(&k) {
        return plan(Streaming::FillGrid);
    }
    let plain = plan(Streaming::Off);
    let segments = rows.saturating_mul(row_len.div_ceil(STREAM_MIN_CHUNKS * most));
    if k < policy.topk_radix_stream_min_k && segments >= STREAM_BLOCKS_PER_SM * multiprocessors {
        let streamed = plan(Streaming::Fewest);
        if streamed.len() < plain.len() {
            return streamed;
        }
    }
    plain
}

/// How a radix plan's first pass cuts rows into segments that a block streams
/// ([`RadixKind::Segments`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Streaming {
    /// Chunks only.
    Off,
    /// As many segments as the grid wants, of up to `topk_radix_stream_chunks` chunks, where
    /// they have at least [`STREAM_MIN_CHUNKS`].
    FillGrid,
    /// Segments of [`STREAM_MIN_CHUNKS`] chunks: the fewest partial results a block of
    /// registers streams to.
    Fewest,
}

/// The blocks an SM of the segments' kernel (kernels/topk.cu `topk_radix_stream_*`, 128
/// registers): a plan of fewer segments than this fills of the GPU keeps its chunks.
const STREAM_BLOCKS_PER_SM: usize = 2;

/// [`radix_plan`] with its first pass cut as `streaming` says.
fn radix_passes(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
    policy: &Policy,
    streaming: Streaming,
) -> Vec<RadixPass> {
    let most_per_thread = policy.topk_radix_per_thread;
    assert!(RADIX_PER_THREAD[1..].contains(&most_per_thread));
    let most = THREADS as usize * most_per_thread;
    let blocks = radix_blocks(policy, multiprocessors);
    let wanted = blocks.div_ceil(rows.max(1)).max(1);
    let min_chunk = RADIX_MIN_CHUNK.max(8 * k).min(most);
    let stream_chunks = policy.topk_radix_stream_chunks.max(1);
    let sampled = samples(row_len, k, key_bytes, policy);
    let mut passes = Vec::new();
    let mut len = row_len;
    loop {
        let segment = match streaming {
            _ if !passes.is_empty() || sampled => 0,
            Streaming::Off => 0,
            Streaming::FillGrid => {
                let segments = wanted
                    .min(len.div_ceil(min_chunk))
                    .max(len.div_ceil(most.saturating_mul(stream_chunks)));
                len.div_ceil(segments).next_multiple_of(most)
            }
            Streaming::Fewest => STREAM_MIN_CHUNKS * most,
        };
        let pass = if passes.is_empty() && sampled {
            let chunks = wanted.min(len / sampled_chunk(k, policy)).max(1);
            let chunk_len = len.div_ceil(chunks).next_multiple_of(CHUNK_ALIGN).min(len);
            RadixPass {
                row_len: len,
                chunks: len.div_ceil(chunk_len),
                chunk_len,
                per_thread: most_per_thread,
                kind: RadixKind::Sampled,
            }
        } else if segment >= STREAM_MIN_CHUNKS * most {
            RadixPass {
                row_len: len,
                chunks: len.div_ceil(segment),
                chunk_len: segment,
                per_thread: most_per_thread,
                kind: RadixKind::Segments,
            }
        } else {
            let chunks = len
                .div_ceil(most)
                .max(wanted.min(len.div_ceil(min_chunk)))
                .max(1);
            let per_thread = RADIX_PER_THREAD
                .into_iter()
                .find(|&r| r * THREADS as usize >= len.div_ceil(chunks) && r <= most_per_thread)
                .expect("a chunk is at most a block's registers");
            let chunk_len = (per_thread * THREADS as usize).min(len);
            RadixPass {
                row_len: len,
                chunks: len.div_ceil(chunk_len),
                chunk_len,
                per_thread,
                kind: RadixKind::Chunks,
            }
        };
        passes.push(pass);
        if pass.chunks == 1 {
            return passes;
        }
        len = pass.chunks * k;
        let sorted_runs = merges(key_bytes, k) || pass.kind == RadixKind::Sampled;
        if passes.len() == 1 && sorted_runs && pass.chunks <= MERGE_RUNS_MOST {
            passes.push(RadixPass {
                row_len: len,
                chunks: 1,
                chunk_len: len,
                per_thread: pass.per_thread,
                kind: RadixKind::Merge,
            });
            return passes;
        }
    }
}

/// How many of `samples` keys spread evenly over `len` a sample's threshold for `need` of the
/// `len` is reached by: the sample's share of `need` and four standard deviations of it
/// (kernels/topk.cu `sample_rank`).
fn sample_rank(need: usize, samples: usize, len: usize) -> usize {
    let expected = (need * samples).div_ceil(len);
    samples.min(expected + (4.0 * (expected as f32).sqrt()) as usize + 1)
}

/// The keys a thread of the spread select samples from a row (kernels:
/// `KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD`), and the sample.
const SPREAD_SAMPLES_PER_THREAD: usize = 32;
const SPREAD_SAMPLES: usize = SPREAD_SAMPLES_PER_THREAD * THREADS as usize;
/// The candidates a thread of the spread select's exact select holds (kernels:
/// `KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD`), and [`SPREAD_CAPACITY`] those a row gathers:
/// twice the sampled select's, so that one sample of 8,192 keys serves a row of 128,256 up to
/// k = 1,024 (~1,550 candidates).
const SPREAD_CANDIDATES_PER_THREAD: usize = 16;
const SPREAD_CAPACITY: usize = SPREAD_CANDIDATES_PER_THREAD * THREADS as usize;
/// Keys a block of the spread select's gather loads at a time, 32 a thread; its chunks are
/// multiples of it, so that only a row's last load has bounds to check, and so that a tile's
/// 16-bit keys share the bits of their index that their words hold (kernels/topk.cu
/// `SpreadWord`, `SPREAD_TILE_SHIFT`): the result depends on it.
const SPREAD_TILE: usize = 32 * THREADS as usize;
const _: () = assert!(SPREAD_TILE == 1 << 13, "kernels/topk.cu SPREAD_TILE_SHIFT");
/// The most blocks that sample one row of the spread select, each [`SPREAD_SAMPLES`] keys of
/// its own slice of the row (and [`Policy::topk_spread_sample_blocks`]).
const SPREAD_SAMPLE_BLOCKS_MOST: usize = 256;
/// The words a thread of the spread select's `topk_spread_threshold` holds (kernels:
/// `KERNEL_TOPK_SPREAD_LISTED_PER_THREAD`), and the most that a row's sample blocks list:
/// `rank` each.
const SPREAD_LISTED_PER_THREAD: usize = 16;
const SPREAD_LISTED_MOST: usize = SPREAD_LISTED_PER_THREAD * THREADS as usize;

/// The spread select's plan: each row sampled by `sample_blocks` blocks, its threshold reached
/// by `rank` of their samples, and its gather cut into `chunks` chunks of `chunk_len` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpreadPlan {
    pub(crate) sample_blocks: usize,
    pub(crate) rank: usize,
    pub(crate) chunks: usize,
    pub(crate) chunk_len: usize,
}

/// Whether the spread select (kernels/topk.cu `topk_spread_*`) takes `rows` rows of `row_len`
/// keys of `key_bytes` keeping `k`, and its plan: keys of 2 or 4 bytes, k up to
/// [`Policy::TOPK_SAMPLED_MOST_K`] (below `topk_sampled_min_k` only for at least
/// `topk_spread_min_rows` rows), rows of at least `topk_spread_min_len` keys (and two samples)
/// and at most half as many as the grid's blocks (`topk_radix_blocks_per_sm`), where a
/// sample's threshold leaves candidates that fit [`SPREAD_CAPACITY`] with three standard
/// deviations to spare: rank (1 + 3 / sqrt(rank)) x row_len / the samples (a row past it,
/// about one in 700, costs time: its select filters the whole row). A row is sampled by one
/// block where that fits, else by the power of two blocks (up to the policy's
/// `topk_spread_sample_blocks`, [`SPREAD_SAMPLE_BLOCKS_MOST`] and the grid's
/// blocks over the rows, each with a slice of at least two samples) that leaves the fewest
/// candidates, listing `rank` words each, at most [`SPREAD_LISTED_MOST`] a row. The gather
/// cuts each row into as many chunks as fill the grid, multiples of [`SPREAD_TILE`].
pub(crate) fn spread_plan(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
    policy: &Policy,
) -> Option<SpreadPlan> {
    let blocks = radix_blocks(policy, multiprocessors);
    let long = row_len >= policy.topk_spread_min_len.max(2 * SPREAD_SAMPLES);
    let enough_rows = k >= policy.topk_sampled_min_k || rows >= policy.topk_spread_min_rows;
    if key_bytes > 4
        || k > Policy::TOPK_SAMPLED_MOST_K
        || !long
        || !enough_rows
        || 2 * rows > blocks
    {
        return None;
    }
    // The rank of `sample_blocks` blocks' samples and the candidates it leaves, where they fit.
    let fits = |sample_blocks: usize| {
        let samples = sample_blocks * SPREAD_SAMPLES;
        let rank = sample_rank(k, samples, row_len);
        let r = rank as f64;
        let candidates = (r + 3.0 * r.sqrt()) * (row_len as f64 / samples as f64);
        let listed = sample_blocks == 1 || sample_blocks * rank <= SPREAD_LISTED_MOST;
        (candidates <= SPREAD_CAPACITY as f64 && listed).then_some((
            sample_blocks,
            rank,
            candidates,
        ))
    };
    // One block where its sample does; else the number of blocks that leaves the fewest
    // candidates (more sample blocks cost little: they run side by side, and fewer candidates
    // make the select shorter).
    let most_blocks = SPREAD_SAMPLE_BLOCKS_MOST
        .min(policy.topk_spread_sample_blocks)
        .min(blocks / rows)
        .min(row_len / (2 * SPREAD_SAMPLES));
    let (sample_blocks, rank, _) = fits(1).or_else(|| {
        std::iter::successors(Some(2usize), |b| Some(2 * b))
            .take_while(|&b| b <= most_blocks)
            .filter_map(fits)
            .min_by(|a, b| a.2.total_cmp(&b.2))
    })?;
    // At most 2 x SPREAD_CAPACITY chunks: the select's places of their ties (u32) fit its
    // shared tile (kernels/topk.cu `put_ties_in_order`).
    let chunks = blocks
        .div_ceil(rows)
        .min(row_len.div_ceil(SPREAD_TILE))
        .min(2 * SPREAD_CAPACITY);
    let chunk_len = row_len.div_ceil(chunks).next_multiple_of(SPREAD_TILE);
    Some(SpreadPlan {
        sample_blocks,
        rank,
        chunks: row_len.div_ceil(chunk_len),
        chunk_len,
    })
}

/// Selects each row's best `k` of `keys` (words of `K`) into `values` and `indices` (`k` a
/// row), with the strategy [`crate::dispatch::choose`] picked: the radix select, the filter,
/// the warp sort, or (a large k, or one above half the row) the rows' stable argsort.
#[allow(clippy::too_many_arguments)]
pub(crate) fn select<K: SortKey>(
    t: Target,
    strategy: Strategy,
    keys: &CudaView<K::Bits>,
    row_len: usize,
    k: usize,
    select: Select,
    values: &mut CudaViewMut<K::Bits>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    checked_rows(n, row_len, k, (values.len(), indices.len()))?;
    match strategy {
        Strategy::TopkRadix | Strategy::TopkFilter | Strategy::TopkWarpSort => {
            let shape = (row_len, k, select);
            by_composites(
                t,
                strategy,
                keys,
                shape,
                K::DTYPE.map_kind(),
                values,
                indices,
            )
        }
        Strategy::PairPasses | Strategy::KeyValueMerge => {
            let key_bytes = K::DTYPE.size();
            let mut modules = run::modules_for(t, strategy, n, row_len, key_bytes, 4);
            modules.push(module(key_bytes));
            t.gpu.prepare(t.policy, &modules)?;
            by_sorting::<K>(t, strategy, keys, (row_len, k, select), values, indices)
        }
        other => unreachable!("{other:?} is not a GPU top-k"),
    }
}

/// The rows of `n` (> 0) keys in rows of `row_len`, checked: within the kernels' indexing,
/// with `k` values and indices a row in `outputs`.
fn checked_rows(n: usize, row_len: usize, k: usize, outputs: (usize, usize)) -> Result<usize> {
    run::check_len(n)?;
    let rows = n / row_len;
    assert!(
        outputs == (rows * k, rows * k),
        "k values and indices a row"
    );
    Ok(rows)
}

/// The selection by composites ([`Strategy::TopkRadix`], [`Strategy::TopkFilter`] or
/// [`Strategy::TopkWarpSort`]) of rows
/// of `row_len` keys given as words `B` of 2, 4 or 8 bytes (16-bit keys as they are, with no
/// widened copy), whose map to sortable words is `kind`; `shape` is (row_len, k, select).
pub(crate) fn by_composites<B: DeviceRepr>(
    t: Target,
    strategy: Strategy,
    keys: &CudaView<B>,
    (row_len, k, select): (usize, usize, Select),
    kind: MapKind,
    values: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    let rows = checked_rows(n, row_len, k, (values.len(), indices.len()))?;
    if strategy == Strategy::TopkRadix
        && !Policy::TOPK_RADIX_PER_THREAD.contains(&t.policy.topk_radix_per_thread)
    {
        return Err(Error::Unsupported(
            "a policy's topk_radix_per_thread other than 16 or 32",
        ));
    }
    let key_bytes = std::mem::size_of::<B>();
    // The better key has the larger word: the smallest keys select complemented words.
    let map = kind as u32
        | match select {
            Select::Largest => 0,
            Select::Smallest => MAP_DESCENDING,
        };
    let shape = (rows, row_len, k, map);
    // Few long rows whose sample leaves few candidates: the spread select, in place of the
    // radix select's or the filter's passes.
    if matches!(strategy, Strategy::TopkRadix | Strategy::TopkFilter) {
        let sms = t.gpu.info().multiprocessors.max(1) as usize;
        if let Some(plan) = spread_plan(rows, row_len, k, key_bytes, sms, t.policy) {
            return spread::<B>(t, keys, shape, plan, values, indices);
        }
    }
    if strategy == Strategy::TopkFilter {
        t.gpu.prepare(t.policy, &[module(key_bytes)])?; // the radix select prepares its passes'
    }
    match (strategy, key_bytes) {
        (Strategy::TopkWarpSort, 2 | 4) => warp_sort(t, keys, shape, values, indices),
        (Strategy::TopkRadix, 8) => radix::<B, KeyIndex>(t, keys, shape, values, indices),
        (Strategy::TopkRadix, _) => radix::<B, u64>(t, keys, shape, values, indices),
        (Strategy::TopkFilter, 8) => filter::<B, KeyIndex>(t.gpu, keys, shape, values, indices),
        (Strategy::TopkFilter, _) => filter::<B, u64>(t.gpu, keys, shape, values, indices),
        (other, _) => unreachable!("{other:?} does not select by composites"),
    }
}

/// The kernels' name of words of `key_bytes`.
fn width(key_bytes: usize) -> &'static str {
    match key_bytes {
        2 => "u16",
        4 => "u32",
        _ => "u64",
    }
}

/// The composites a radix block holds in shared memory: its candidates, the `slots` where the
/// last pass sorts its k best, and the u64 composites' tournament lists.
fn radix_held(slots: usize, per_thread: usize, composite_bytes: usize) -> usize {
    let tournaments = if composite_bytes == 8 {
        RADIX_TOURNAMENT_SLOTS
    } else {
        0
    };
    slots
        .max(THREADS as usize * per_thread.min(RADIX_CANDIDATES_PER_THREAD))
        .max(tournaments)
}

/// The composites a block of the sampled select holds in shared memory: its candidates, the
/// threshold filter's k and a tile of 16-byte vectors of `key_bytes` keys (a chunk whose
/// sample missed), the `slots` where it sorts its k best, and the tournament lists.
fn sampled_held(k: usize, slots: usize, key_bytes: usize) -> usize {
    let filter = (k + THREADS as usize * 16 / key_bytes).next_power_of_two();
    (THREADS as usize * RADIX_CANDIDATES_PER_THREAD)
        .max(filter)
        .max(slots)
        .max(RADIX_TOURNAMENT_SLOTS)
}

/// The composites a block of the spread select's select holds in shared memory: as
/// [`sampled_held`], with its [`SPREAD_CAPACITY`] candidates.
fn spread_held(k: usize, slots: usize, key_bytes: usize) -> usize {
    sampled_held(k, slots, key_bytes).max(SPREAD_CAPACITY)
}

/// The module of a radix pass over keys of `key_bytes`: the sampled select's own part, or the
/// radix part of the pass's `per_thread` (a merge's is its first pass's).
fn radix_pass_module(key_bytes: usize, pass: &RadixPass) -> &'static KernelModule {
    match pass.kind {
        RadixKind::Sampled => sampled_module(key_bytes),
        _ => radix_module(key_bytes, pass.per_thread),
    }
}

/// The part of the sampled and the spread select for keys of `key_bytes` (2 or 4).
fn sampled_module(key_bytes: usize) -> &'static KernelModule {
    match key_bytes {
        2 => &kernels::TOPK_SAMPLED_U16,
        _ => &kernels::TOPK_SAMPLED_U32,
    }
}

/// The radix select's passes ([`radix_plan`]) over keys of words `B` with composites `C`;
/// `shape` is (rows, row_len, k, key map).
fn radix<B: DeviceRepr, C: DeviceRepr>(
    t: Target,
    keys: &CudaView<B>,
    (rows, row_len, k, map): (usize, usize, usize, u32),
    values: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let gpu = t.gpu;
    let key_bytes = std::mem::size_of::<B>();
    let width = width(key_bytes);
    let sms = gpu.info().multiprocessors.max(1) as usize;
    let (slots, composites) = (k.next_power_of_two(), std::mem::size_of::<C>());
    let mut launches = Vec::new();
    let passes = radix_plan(rows, row_len, k, key_bytes, sms, t.policy);
    let modules: Vec<_> = passes
        .iter()
        .map(|p| radix_pass_module(key_bytes, p))
        .collect();
    gpu.prepare(t.policy, &modules)?;
    for (i, (pass, &module)) in passes.iter().zip(&modules).enumerate() {
        let (name, held) = match (pass.kind, i) {
            // The chunk's runs, `slots` apart.
            (RadixKind::Merge, _) => (format!("topk_merge_{width}"), pass.chunk_len / k * slots),
            (RadixKind::Sampled, _) => (
                format!("topk_sampled_{width}"),
                sampled_held(k, slots, key_bytes),
            ),
            (RadixKind::Segments, _) => (
                format!("topk_radix_stream_{width}"),
                radix_held(slots, pass.per_thread, composites),
            ),
            (RadixKind::Chunks, 0) => (
                format!("topk_radix_keys_{width}_{}", pass.per_thread),
                radix_held(slots, pass.per_thread, composites),
            ),
            (RadixKind::Chunks, _) => (
                format!("topk_radix_partials_{width}_{}", pass.per_thread),
                radix_held(slots, pass.per_thread, composites),
            ),
        };
        let shared = held * composites;
        let chunking = (pass.row_len, pass.chunks, pass.chunk_len);
        launches.push(PassLaunch::over_chunks(
            (module, name, shared),
            rows,
            chunking,
            (k, slots, map),
        ));
    }
    run_passes::<B, C>(gpu, &launches, keys, values, indices)
}

/// The spread select ([`spread_plan`]) of rows of keys of words `B` (2 or 4 bytes), u64
/// composites: the sample's (and, with several sample blocks, the threshold's), the gather's
/// and the select's launches; `shape` is (rows, row_len, k, key map).
fn spread<B: DeviceRepr>(
    t: Target,
    keys: &CudaView<B>,
    (rows, row_len, k, map): (usize, usize, usize, u32),
    plan: SpreadPlan,
    values: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let gpu = t.gpu;
    let key_bytes = std::mem::size_of::<B>();
    let module = sampled_module(key_bytes);
    gpu.prepare(t.policy, &[module])?;
    let width = width(key_bytes);
    let slots = k.next_power_of_two();
    let args = launch::SpreadArgs {
        row_len: row_len as u64,
        rows: rows as u32,
        chunks: plan.chunks as u32,
        chunk_len: plan.chunk_len as u64,
        k: k as u32,
        slots: slots as u32,
        map,
        rank: plan.rank as u32,
        sample_blocks: plan.sample_blocks as u32,
    };
    let function = |step: &str| gpu.function(module, &format!("topk_spread_{step}_{width}"));
    let (sample, gather, select) = (
        function("sample")?,
        function("gather")?,
        function("select")?,
    );
    // The threshold's launch only where several blocks sample a row.
    let threshold = match plan.sample_blocks {
        1 => None,
        _ => Some(function("threshold")?),
    };
    let shared = spread_held(k, slots, key_bytes) * std::mem::size_of::<u64>();
    gpu.allow_shared(&select, shared as u32)?;
    let kernels = launch::SpreadKernels {
        sample: (&sample, grid(gpu, rows * plan.sample_blocks, 0)),
        threshold: threshold.as_ref().map(|f| (f, grid(gpu, rows, 0))),
        gather: (&gather, grid(gpu, rows * plan.chunks, 0)),
        select: (&select, grid(gpu, rows, shared)),
    };
    let bytes = launch::SpreadScratch::new::<u64>(&args, SPREAD_CAPACITY).bytes();
    let mut kept = gpu.scratch(bytes)?;
    let scratch = (
        kept.as_mut().expect("scratch of the spread select's bytes"),
        SPREAD_CAPACITY,
    );
    launch::topk_spread::<B, u64>(gpu, kernels, keys, args, scratch, (values, indices))
}

/// The composites a lane of the warp sort holds: the kernels' instances, for rows of up to
/// 64, 256 and 1,024 keys ([`crate::dispatch::TOPK_WARP_SORT_MOST`]).
/// (kernels/topk.cu `EXPORT_TOPK_WARP_SORT` has these instances).
const WARP_SORT_PER_LANE: [usize; 3] = [2, 8, 32];
/// The largest k whose warp filter takes its threshold from the lanes' group bests
/// (`topk_warp_filter_W`): 8 groups a lane give 256 bests, about 2 k. A larger k searches the
/// composites' top bits (`topk_warp_search_W`; kernels/topk.cu `warp_filter`).
const WARP_FILTER_GROUPS_MOST_K: usize = 128;
const _: () = assert!(32 * WARP_SORT_PER_LANE[2] == crate::dispatch::TOPK_WARP_SORT_MOST);

/// The warp sort ([`Strategy::TopkWarpSort`]) of rows of at most
/// [`crate::dispatch::TOPK_WARP_SORT_MOST`] keys of words `B` (2 or 4 bytes): one launch, a
/// warp a row, each lane holding the fewest composites of [`WARP_SORT_PER_LANE`] that the row
/// needs; `shape` is (rows, row_len, k, key map). Rows of 32 a lane and k up to the policy's
/// `topk_warp_filter_max_k` take a warp filter (`topk_warp_filter_W` up to
/// [`WARP_FILTER_GROUPS_MOST_K`], `topk_warp_search_W` past it), which sorts only the keys that
/// reach a threshold.
fn warp_sort<B: DeviceRepr>(
    t: Target,
    keys: &CudaView<B>,
    (rows, row_len, k, map): (usize, usize, usize, u32),
    values: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let gpu = t.gpu;
    let key_bytes = std::mem::size_of::<B>();
    let module = match key_bytes {
        2 => &kernels::TOPK_WARP_U16,
        _ => &kernels::TOPK_WARP_U32,
    };
    gpu.prepare(t.policy, &[module])?;
    let per_lane = WARP_SORT_PER_LANE
        .into_iter()
        .find(|&p| 32 * p >= row_len)
        .expect("a row a warp holds");
    // What the kernel relies on: a row fits a warp, and its first k are in it.
    assert!(1 <= k && k <= row_len && row_len <= 32 * per_lane);
    let filters = per_lane == WARP_SORT_PER_LANE[2] && k <= t.policy.topk_warp_filter_max_k;
    let name = match k {
        _ if !filters => format!("topk_warp_sort_{}_{per_lane}", width(key_bytes)),
        ..=WARP_FILTER_GROUPS_MOST_K => format!("topk_warp_filter_{}", width(key_bytes)),
        _ => format!("topk_warp_search_{}", width(key_bytes)),
    };
    // Each warp's sorted row passes through shared memory, 32 x (per_lane + 1) composites:
    // u32 for 16-bit keys, u64 for 32-bit ones (kernels/topk.cu `WarpComposite`).
    let warps = THREADS as usize / 32;
    let shared = warps * 32 * (per_lane + 1) * 2 * key_bytes;
    // One chunk a row, a warp a row: no partials; the shared memory holds more than `slots`
    // u64 (a warp sort keeps none).
    let selection = (k, k.next_power_of_two(), map);
    let pass = PassLaunch {
        items: rows.div_ceil(warps),
        ..PassLaunch::over_chunks(
            (module, name, shared),
            rows,
            (row_len, 1, row_len),
            selection,
        )
    };
    run_passes::<B, u64>(gpu, &[pass], keys, values, indices)
}

/// The launch of a top-k kernel over `items` (rows, chunks or warps' rows) on `gpu`, with
/// `shared` bytes of dynamic shared memory: a block an item, up to 32 blocks a multiprocessor,
/// whose blocks then take items `gridDim.x` apart.
fn grid(gpu: &Gpu, items: usize, shared: usize) -> cudarc::driver::LaunchConfig {
    let blocks = items.min(gpu.info().multiprocessors.max(1) as usize * 32);
    launch::config(blocks as u32, THREADS, shared as u32)
}

/// One pass of the filter, the radix select or the warp sort: kernel `name` of `module` with
/// `shared` bytes of dynamic shared memory over `items` (rows, chunks or warps' rows: its
/// grid), and its arguments.
struct PassLaunch {
    module: &'static KernelModule,
    name: String,
    shared: usize,
    items: usize,
    args: launch::TopkArgs,
}

impl PassLaunch {
    /// Kernel `name` of `module` with `shared` bytes over `rows` rows of `row_len` elements
    /// (keys, or the partial results of the pass before), each cut into `chunks` chunks of
    /// `chunk_len`, a block a chunk, keeping `k` of each in `slots`, with the key map `map`.
    fn over_chunks(
        (module, name, shared): (&'static KernelModule, String, usize),
        rows: usize,
        (row_len, chunks, chunk_len): (usize, usize, usize),
        (k, slots, map): (usize, usize, u32),
    ) -> PassLaunch {
        let args = launch::TopkArgs {
            row_len: row_len as u64,
            rows: rows as u32,
            chunks: chunks as u32,
            chunk_len: chunk_len as u64,
            k: k as u32,
            slots: slots as u32,
            map,
        };
        PassLaunch {
            module,
            name,
            shared,
            items: rows * chunks,
            args,
        }
    }
}

/// `passes` as one graph ([`launch::topk_passes`]): the first over `keys`, each later one over
/// the partial results of the one before (in the `Gpu`'s scratch), the last into `values` and
/// `indices`.
fn run_passes<B: DeviceRepr, C: DeviceRepr>(
    gpu: &Gpu,
    passes: &[PassLaunch],
    keys: &CudaView<B>,
    values: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let mut launches = Vec::with_capacity(passes.len());
    for pass in passes {
        let f = gpu.function(pass.module, &pass.name)?;
        gpu.allow_shared(&f, pass.shared as u32)?;
        launches.push((f, grid(gpu, pass.items, pass.shared), pass.args));
    }
    let half = launch::topk_partials_half::<C>(passes.iter().map(|p| &p.args));
    let mut kept = gpu.scratch(2 * half)?;
    let scratch = kept.as_mut().expect("scratch of both halves");
    launch::topk_passes::<B, C, B>(gpu, &launches, keys, scratch, (values, indices))
}

/// The filter's passes ([`plan`]) over keys of words `B` with composites `C`; `shape` is
/// (rows, row_len, k, key map).
fn filter<B: DeviceRepr, C: DeviceRepr>(
    gpu: &Gpu,
    keys: &CudaView<B>,
    (rows, row_len, k, map): (usize, usize, usize, u32),
    values: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let key_bytes = std::mem::size_of::<B>();
    let module = module(key_bytes);
    let width = width(key_bytes);
    let passes = plan(
        rows,
        row_len,
        k,
        key_bytes,
        gpu.info().multiprocessors as usize,
    );
    let mut launches = Vec::new();
    for (i, pass) in passes.iter().enumerate() {
        let shared = pass.slots * std::mem::size_of::<C>();
        if shared > gpu.info().shared_per_block_optin {
            return Err(Error::Unsupported(
                "top-k selections whose k best do not fit a block's shared memory",
            ));
        }
        let name = match i {
            0 => format!("topk_keys_{width}"),
            _ => format!("topk_partials_{width}"),
        };
        let chunking = (pass.row_len, pass.chunks, pass.chunk_len);
        launches.push(PassLaunch::over_chunks(
            (module, name, shared),
            rows,
            chunking,
            (k, pass.slots, map),
        ));
    }
    run_passes::<B, C>(gpu, &launches, keys, values, indices)
}

/// A large k: each row's stable argsort (descending for the largest keys) on a copy of the
/// keys, then the first k keys and indices of every row.
fn by_sorting<K: SortKey>(
    t: Target,
    strategy: Strategy,
    keys: &CudaView<K::Bits>,
    (row_len, k, select): (usize, usize, Select),
    values: &mut CudaViewMut<K::Bits>,
    indices: &mut CudaViewMut<u32>,
) -> Result<()> {
    let n = keys.len();
    let stream = t.gpu.stream();
    let mut sorted = stream
        .clone_dtod(keys)
        .during(|| format!("copying {n} keys to select from"))?;
    let mut all = run::alloc_indices(t.gpu, n)?;
    {
        let mut words = sorted.as_view_mut();
        let mut positions = all.as_view_mut();
        let order = select.order();
        run::sort_with_indices::<K>(t, strategy, &mut words, row_len, &mut positions, order)?;
    }
    let module = module(K::DTYPE.size());
    let take_keys_name = super::kernel_name::<K::Bits>("topk_take");
    let take_keys = t.gpu.function(module, &take_keys_name)?;
    let take_indices = t.gpu.function(module, "topk_take_u32")?;
    let cfg = t.gpu.elementwise(values.len());
    let shape = (row_len as u64, k as u64);
    launch::topk_take(t.gpu, &take_keys, cfg, &sorted.as_view(), shape, values)
        .during(|| format!("launching {take_keys_name}"))?;
    launch::topk_take(t.gpu, &take_indices, cfg, &all.as_view(), shape, indices)
        .during(|| "launching topk_take_u32".into())
}

#[cfg(test)]
mod tests {
    use super::*;

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
                        let passes = plan(rows, row_len, k, key_bytes, 132);
                        let what = format!("{rows}x{row_len} k {k} {key_bytes}-byte keys");
                        assert_eq!(passes[0].row_len, row_len, "{what}");
                        assert_eq!(passes.last().unwrap().chunks, 1, "{what}");
                        assert!(passes.len() <= 4, "{what}: {passes:?}");
                        for (i, p) in passes.iter().enumerate() {
                            let element = if i == 0 { key_bytes } else { composite_bytes };
                            assert!(p.chunks * p.chunk_len >= p.row_len, "{what}");
                            assert!((p.chunks - 1) * p.chunk_len < p.row_len, "{what}");
                            assert!(p.chunks == 1 || p.chunk_len % CHUNK_ALIGN == 0, "{what}");
                            assert!(p.slots.is_power_of_two(), "{what}");
                            let capacity = p.slots - k;
                            assert!(capacity >= p.chunk_len.min(2 * tile(element)), "{what}");
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
        Policy {
            topk_radix_per_thread: per_thread,
            topk_radix_stream_chunks: stream_chunks,
            topk_sampled_max_k: 0,
            ..Policy::HOPPER
        }
    }

    /// A policy that streams every k it can (the GPU tests'): no row cut for the grid's sake,
    /// segments of up to `stream_chunks` chunks.
    fn unspread(stream_chunks: usize) -> Policy {
        Policy {
            topk_radix_blocks_per_sm: 0,
            topk_radix_stream_min_k: 1,
            topk_radix_stream_max_k: 1024,
            ..radix_policy(32, stream_chunks)
        }
    }

    /// Every radix pass fits a block's registers (a segment: whole blocks of registers, at
    /// most the policy's many), the chunks cover the row, each pass reads the k best of every
    /// chunk of the one before and shrinks the row, and the last has one chunk.
    #[test]
    fn radix_plans_reduce_to_one_chunk_a_row() {
        use crate::dispatch::{TOPK_RADIX_CHUNK, TOPK_RADIX_MAX_K};
        let most = THREADS as usize * RADIX_PER_THREAD[2];
        assert_eq!(most, TOPK_RADIX_CHUNK);
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
            Policy {
                topk_radix_blocks_per_sm: 0,
                ..Policy::HOPPER
            },
        ];
        for policy in &policies {
            for (rows, key_bytes) in [1, 3, 64, 100_000]
                .into_iter()
                .flat_map(|r| [(r, 2), (r, 8)])
            {
                for &row_len in &lens {
                    for &k in ks.iter().filter(|&&k| k <= row_len) {
                        if rows * row_len > 1 << 31 || (row_len > most && k > TOPK_RADIX_MAX_K) {
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
                            let merge =
                                i == 1 && sorted_runs && passes[0].chunks <= MERGE_RUNS_MOST;
                            assert_eq!(p.kind == RadixKind::Merge, merge, "{what}");
                            match p.kind {
                                RadixKind::Merge => {
                                    // A row's runs in one block, in the first pass's module.
                                    assert_eq!((p.chunks, p.chunk_len), (1, p.row_len), "{what}");
                                    assert_eq!(p.per_thread, passes[0].per_thread, "{what}");
                                }
                                RadixKind::Segments => {
                                    // The first pass: segments of whole blocks of 32 a thread,
                                    // at least STREAM_MIN_CHUNKS, as many as the policy allows,
                                    // for the policy's k whose threshold a block of registers
                                    // can give; below the policy's k, segments of exactly
                                    // STREAM_MIN_CHUNKS, a pass fewer than chunks, and enough
                                    // of them to fill the GPU.
                                    assert_eq!((i, p.per_thread), (0, 32), "{what}");
                                    assert!(8 * k <= most, "{what}");
                                    assert!(k <= policy.topk_radix_stream_max_k, "{what}");
                                    if k < policy.topk_radix_stream_min_k {
                                        assert_eq!(p.chunk_len, STREAM_MIN_CHUNKS * most, "{what}");
                                        assert!(
                                            rows * p.chunks >= STREAM_BLOCKS_PER_SM * 132,
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
                                    assert!(p.chunk_len >= STREAM_MIN_CHUNKS * most, "{what}");
                                    assert!(
                                        p.chunk_len <= most * policy.topk_radix_stream_chunks,
                                        "{what}"
                                    );
                                }
                                RadixKind::Sampled => {
                                    // The first pass, for the policy's k and 2- or 4-byte
                                    // keys, chunks of 16-byte multiples, each but a row's last
                                    // at least SAMPLED_MIN_LEN and 8 k.
                                    assert_eq!(i, 0, "{what}");
                                    assert!(key_bytes <= 4, "{what}");
                                    let long = row_len > policy.topk_filter_above;
                                    assert!(long || k >= policy.topk_sampled_min_k, "{what}");
                                    assert!(k <= policy.topk_sampled_max_k, "{what}");
                                    assert!(p.chunks == 1 || p.chunk_len % CHUNK_ALIGN == 0);
                                    assert!(p.chunk_len >= sampled_chunk(k, policy), "{what}");
                                }
                                RadixKind::Chunks => {
                                    assert!(
                                        p.chunk_len <= p.per_thread * THREADS as usize,
                                        "{what}"
                                    );
                                    assert!(
                                        p.chunks == 1
                                            || p.chunk_len == p.per_thread * THREADS as usize,
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
                    let (stream, merge) =
                        (p.kind == RadixKind::Segments, p.kind == RadixKind::Merge);
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
        let short = &Policy {
            topk_sampled_min_k: 1,
            topk_sampled_min_chunk: 0,
            ..Policy::HOPPER
        };
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
        let plan =
            |rows, row_len, k, key_bytes| spread_plan(rows, row_len, k, key_bytes, 132, hopper);
        let chunks = |rows, row_len, k| plan(rows, row_len, k, 4).map(|p| (p.chunks, p.chunk_len));
        for k in [1, 8, 50, 256, 1024] {
            for key_bytes in [2, 4] {
                // 1,056 blocks: 16 chunks a row of 128,256, the last of 5,376.
                let logits = plan(64, 128_256, k, key_bytes);
                let (chunks, chunk_len) = (16, 8192);
                let sample_blocks = 1;
                let rank = sample_rank(k, SPREAD_SAMPLES, 128_256);
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
        let every_k = &Policy {
            topk_spread_min_rows: 1,
            ..Policy::HOPPER
        };
        for (rows, row_len) in [(1, 65_536), (2, 65_537), (3, 9 * 8192 - 1), (4, 128_256)] {
            for k in [1, 2, 8, 50, 129, 256, 1000, 1024] {
                let plan = spread_plan(rows, row_len, k, 4, 132, every_k);
                let SpreadPlan {
                    chunks, chunk_len, ..
                } = plan.expect("the GPU test's");
                assert_eq!(chunk_len % SPREAD_TILE, 0);
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
        let off = Policy {
            topk_spread_min_len: usize::MAX,
            ..Policy::HOPPER
        };
        assert_eq!(spread_plan(64, 128_256, 50, 4, 132, &off), None);
        // Rows the dispatch gives the filter take it too (tests/topk.rs `gpu_spread_select`).
        let filtered = Policy {
            topk_filter_above: 1 << 20,
            ..Policy::HOPPER
        };
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
        let many = plan(10_000, 1000, 10, 4, 132);
        assert_eq!(many.len(), 1);
        assert_eq!((many[0].chunk_len, many[0].slots), (1000, 1024));
        let long = plan(1, 1 << 24, 64, 4, 132);
        assert_eq!(long[0].chunks, 4 * 132);
        // 528 x 64 partials in 5 chunks of at least 2^13, then the 5 x 64 best in one.
        assert_eq!(
            long.iter().map(|p| p.chunks).collect::<Vec<_>>(),
            [528, 5, 1]
        );
        // The largest k the filter takes: 32 KiB of u64 composites, 64 KiB of 16-byte ones.
        let wide = plan(1, 1 << 24, 2048, 8, 132);
        assert_eq!(wide[0].slots, 4096);
    }
}
