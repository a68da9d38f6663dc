//! The radix select's passes: chunks of rows held in a block's registers, streamed segments,
//! the sampled first pass, and the merge of sorted runs (kernels/topk/radix.cuh,
//! kernels/topk/sampled.cuh).

use crate::policy::{Policy, TopkPolicy as T};

/// What one launch of the radix select runs (kernels/topk.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RadixKind {
    /// A chunk a block, held in registers (`topk.radix`): over the keys in the first pass,
    /// over the k best of every chunk of the pass before in a later one.
    Chunks,
    /// The first pass in *segments*, several blocks of registers that a block takes one after
    /// the other against one running threshold (`topk.radix` STREAM, 32 a thread).
    Segments,
    /// The first pass by the sampled select (`topk.sampled`): a chunk a block, of any length,
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
/// [`TopkPolicy::RADIX_TOURNAMENT_MOST`], whose chunks mostly come out sorted (the merge sorts the others:
/// a radix select's, on ties or a row's short last chunk).
pub(crate) fn merges(key_bytes: usize, k: usize) -> bool {
    key_bytes <= 4 && k <= T::RADIX_TOURNAMENT_MOST
}

/// The fewest keys a chunk of the sampled select has under `policy` for `k`: the policy's
/// least chunk, and 8 k, so that the sample's threshold keeps a small part of it.
pub(crate) fn sampled_chunk(k: usize, policy: &Policy) -> usize {
    policy
        .topk
        .sampled_min_chunk
        .max(T::SAMPLED_MIN_LEN)
        .max(8 * k)
}

/// Whether the first pass of a radix select of `k` of `key_bytes` keys is the sampled select
/// under `policy`, for rows of `row_len`: k from the policy's least (from 1 on rows past
/// `topk.filter_above`) to its largest, rows of at least one chunk.
fn samples(row_len: usize, k: usize, key_bytes: usize, policy: &Policy) -> bool {
    let most_k = policy.topk.sampled_max_k.min(T::SAMPLED_MOST_K);
    let least_k = if row_len > policy.topk.filter_above {
        1
    } else {
        policy.topk.sampled_min_k
    };
    key_bytes <= 4 && (least_k..=most_k).contains(&k) && row_len >= sampled_chunk(k, policy)
}

/// The blocks that the radix and the spread select cut rows to fill: the policy's
/// `topk.radix_blocks_per_sm` on each of `multiprocessors`.
pub(crate) fn radix_blocks(policy: &Policy, multiprocessors: usize) -> usize {
    policy
        .topk
        .radix_blocks_per_sm
        .saturating_mul(multiprocessors.max(1))
}

/// The passes of the radix select over `rows` rows of `row_len` elements keeping `k`
/// (1 ≤ k ≤ row_len, and k ≤ [`TopkPolicy::RADIX_MAX_K`] when a row is longer than
/// [`TopkPolicy::RADIX_CHUNK`]) of `key_bytes`, with `policy`'s
/// `topk.radix_per_thread` (16 or 32), `topk.radix_blocks_per_sm` and
/// `topk.radix_stream_chunks`: the first over the keys, each later one over the k best of
/// every chunk of the pass before, the last with one chunk a row.
///
/// Rows are cut into chunks no longer than a block holds, and into more (down to
/// [`TopkPolicy::RADIX_MIN_CHUNK`] and 8k elements) while the grid has fewer than `topk.radix_blocks_per_sm`
/// blocks a multiprocessor. A chunk is then a whole block's registers, `per_thread` x THREADS
/// elements, only a row's last shorter, so that every other chunk loads without bounds checks.
/// The first pass at 32 a thread, for k from `topk.radix_stream_min_k` to `_max_k` (and at
/// most an eighth of a block's registers), cuts rows into *segments* of up to
/// `topk.radix_stream_chunks` such chunks instead, as many as the grid wants, and a block
/// streams each ([`RadixKind::Segments`]) where a segment has at least [`TopkPolicy::STREAM_MIN_CHUNKS`].
/// A k below that range streams segments of [`TopkPolicy::STREAM_MIN_CHUNKS`] chunks where they make the
/// plan a pass shorter and still fill the GPU ([`TopkPolicy::STREAM_BLOCKS_PER_SM`]): one row of 2^24 at
/// k = 8 leaves 4,096 partial results, which one block selects from, instead of 16,384, which
/// take two more passes (docs/notes/topk.md, step 17).
/// Where [`samples`] says so (`topk.sampled_min_k` to `_max_k`), the first pass is the sampled
/// select instead ([`RadixKind::Sampled`]), over as many chunks as the grid wants of at least
/// [`TopkPolicy::SAMPLED_MIN_LEN`] and 8 k keys, whatever a block's registers hold.
/// Where the first pass's results are sorted runs ([`merges`], or sampled) and it leaves at
/// most [`TopkPolicy::MERGE_RUNS_MOST`] chunks a row, the second and last pass merges them.
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
    let most = T::THREADS as usize * policy.topk.radix_per_thread;
    let can_stream = policy.topk.radix_stream_chunks >= T::STREAM_MIN_CHUNKS
        && policy.topk.radix_per_thread == T::RADIX_PER_THREAD[2]
        && 8 * k <= most
        && !samples(row_len, k, key_bytes, policy);
    if !can_stream {
        return plan(Streaming::Off);
    }
    if (policy.topk.radix_stream_min_k..=policy.topk.radix_stream_max_k).contains(&k) {
        return plan(Streaming::FillGrid);
    }
    let plain = plan(Streaming::Off);
    let segments = rows.saturating_mul(row_len.div_ceil(T::STREAM_MIN_CHUNKS * most));
    if k < policy.topk.radix_stream_min_k && segments >= T::STREAM_BLOCKS_PER_SM * multiprocessors {
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
pub(crate) enum Streaming {
    /// Chunks only.
    Off,
    /// As many segments as the grid wants, of up to `topk.radix_stream_chunks` chunks, where
    /// they have at least [`TopkPolicy::STREAM_MIN_CHUNKS`].
    FillGrid,
    /// Segments of [`TopkPolicy::STREAM_MIN_CHUNKS`] chunks: the fewest partial results a block of
    /// registers streams to.
    Fewest,
}

/// [`radix_plan`] with its first pass cut as `streaming` says.
pub(crate) fn radix_passes(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
    policy: &Policy,
    streaming: Streaming,
) -> Vec<RadixPass> {
    let most_per_thread = policy.topk.radix_per_thread;
    assert!(T::RADIX_PER_THREAD[1..].contains(&most_per_thread));
    let most = T::THREADS as usize * most_per_thread;
    let blocks = radix_blocks(policy, multiprocessors);
    let wanted = blocks.div_ceil(rows.max(1)).max(1);
    let min_chunk = T::RADIX_MIN_CHUNK.max(8 * k).min(most);
    let stream_chunks = policy.topk.radix_stream_chunks.max(1);
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
            Streaming::Fewest => T::STREAM_MIN_CHUNKS * most,
        };
        let pass = if passes.is_empty() && sampled {
            let chunks = wanted.min(len / sampled_chunk(k, policy)).max(1);
            let chunk_len = len
                .div_ceil(chunks)
                .next_multiple_of(T::CHUNK_ALIGN)
                .min(len);
            RadixPass {
                row_len: len,
                chunks: len.div_ceil(chunk_len),
                chunk_len,
                per_thread: most_per_thread,
                kind: RadixKind::Sampled,
            }
        } else if segment >= T::STREAM_MIN_CHUNKS * most {
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
            let per_thread = T::RADIX_PER_THREAD
                .into_iter()
                .find(|&r| r * T::THREADS as usize >= len.div_ceil(chunks) && r <= most_per_thread)
                .expect("a chunk is at most a block's registers");
            let chunk_len = (per_thread * T::THREADS as usize).min(len);
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
        if passes.len() == 1 && sorted_runs && pass.chunks <= T::MERGE_RUNS_MOST {
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
