//! The spread select's plan: a sample's threshold for few long rows, the gather of the keys
//! that reach it, and one select a row (kernels/topk/spread.cuh).

use super::radix::radix_blocks;
use crate::policy::{Policy, TopkPolicy as T};

/// How many of `samples` keys spread evenly over `len` a sample's threshold for `need` of the
/// `len` is reached by: the sample's share of `need` and four standard deviations of it
/// (kernels/topk.cu `sample_rank`).
pub(crate) fn sample_rank(need: usize, samples: usize, len: usize) -> usize {
    let expected = (need * samples).div_ceil(len);
    samples.min(expected + (4.0 * (expected as f32).sqrt()) as usize + 1)
}

/// The spread select's plan: each row sampled by `sample_blocks` blocks, its threshold reached
/// by `rank` of their samples, and its gather cut into `chunks` chunks of `chunk_len` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpreadPlan {
    pub(crate) sample_blocks: usize,
    pub(crate) rank: usize,
    pub(crate) chunks: usize,
    pub(crate) chunk_len: usize,
}

/// Whether the spread select (kernels/topk.cu `topk.spread_*`) takes `rows` rows of `row_len`
/// keys of `key_bytes` keeping `k`, and its plan: keys of 2 or 4 bytes, k up to
/// [`TopkPolicy::SAMPLED_MOST_K`] (below `topk.sampled_min_k` only for at least
/// `topk.spread_min_rows` rows), rows of at least `topk.spread_min_len` keys (and two samples)
/// and at most half as many as the grid's blocks (`topk.radix_blocks_per_sm`), where a
/// sample's threshold leaves candidates that fit [`TopkPolicy::SPREAD_CAPACITY`] with three standard
/// deviations to spare: rank (1 + 3 / sqrt(rank)) x row_len / the samples (a row past it,
/// about one in 700, costs time: its select filters the whole row). A row is sampled by one
/// block where that fits, else by the power of two blocks (up to the policy's
/// `topk.spread_sample_blocks`, [`TopkPolicy::SPREAD_SAMPLE_BLOCKS_MOST`] and the grid's
/// blocks over the rows, each with a slice of at least two samples) that leaves the fewest
/// candidates, listing `rank` words each, at most [`TopkPolicy::SPREAD_LISTED_MOST`] a row. The gather
/// cuts each row into as many chunks as fill the grid, multiples of [`TopkPolicy::SPREAD_TILE`].
pub(crate) fn spread_plan(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
    policy: &Policy,
) -> Option<SpreadPlan> {
    let blocks = radix_blocks(policy, multiprocessors);
    let long = row_len >= policy.topk.spread_min_len.max(2 * T::SPREAD_SAMPLES);
    let enough_rows = k >= policy.topk.sampled_min_k || rows >= policy.topk.spread_min_rows;
    if key_bytes > 4 || k > T::SAMPLED_MOST_K || !long || !enough_rows || 2 * rows > blocks {
        return None;
    }
    // The rank of `sample_blocks` blocks' samples and the candidates it leaves, where they fit.
    let fits = |sample_blocks: usize| {
        let samples = sample_blocks * T::SPREAD_SAMPLES;
        let rank = sample_rank(k, samples, row_len);
        let r = rank as f64;
        let candidates = (r + 3.0 * r.sqrt()) * (row_len as f64 / samples as f64);
        let listed = sample_blocks == 1 || sample_blocks * rank <= T::SPREAD_LISTED_MOST;
        (candidates <= T::SPREAD_CAPACITY as f64 && listed).then_some((
            sample_blocks,
            rank,
            candidates,
        ))
    };
    // One block where its sample does; else the number of blocks that leaves the fewest
    // candidates (more sample blocks cost little: they run side by side, and fewer candidates
    // make the select shorter).
    let most_blocks = T::SPREAD_SAMPLE_BLOCKS_MOST
        .min(policy.topk.spread_sample_blocks)
        .min(blocks / rows)
        .min(row_len / (2 * T::SPREAD_SAMPLES));
    let (sample_blocks, rank, _) = fits(1).or_else(|| {
        std::iter::successors(Some(2usize), |b| Some(2 * b))
            .take_while(|&b| b <= most_blocks)
            .filter_map(fits)
            .min_by(|a, b| a.2.total_cmp(&b.2))
    })?;
    // At most 2 x T::SPREAD_CAPACITY chunks: the select's places of their ties (u32) fit its
    // shared tile (kernels/topk.cu `put_ties_in_order`).
    let chunks = blocks
        .div_ceil(rows)
        .min(row_len.div_ceil(T::SPREAD_TILE))
        .min(2 * T::SPREAD_CAPACITY);
    let chunk_len = row_len.div_ceil(chunks).next_multiple_of(T::SPREAD_TILE);
    Some(SpreadPlan {
        sample_blocks,
        rank,
        chunks: row_len.div_ceil(chunk_len),
        chunk_len,
    })
}
