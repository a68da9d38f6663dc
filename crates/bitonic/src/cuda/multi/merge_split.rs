//! Merge-split across ranks: the bitonic network over ranks, each comparator a merge-split
//! ([`crate::multi::Algorithm::MergeSplit`]). The host finds where the kept keys turn from one
//! shard to the other, so only the keys that change sides cross, and each rank merges the two
//! sorted runs it keeps with the tile merge.

use super::shards::{alloc, launch_fill_largest, take, Shard, Transfer, Word};
use super::MultiGpu;
use crate::cuda::exec::Exec;
use crate::cuda::merge::merge_two_runs;
use crate::cuda::{run, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::multi::{merge_split_rounds, merge_split_share};
use cudarc::driver::CudaSlice;

/// The bitonic network over ranks with merge-split comparators. Each buffer holds at
/// least M words (M = the longest shard rounded up to a power of two).
pub(super) fn sort<W: Word>(
    multi: &MultiGpu,
    words: Vec<CudaSlice<W>>,
    lens: &[usize],
) -> Result<Vec<Shard<W>>> {
    let p = multi.ranks();
    let n: usize = lens.iter().sum();
    let m = lens.iter().copied().max().unwrap_or(0);
    if m == 0 {
        return Ok(words
            .into_iter()
            .map(|buf| Shard {
                buf,
                start: 0,
                len: 0,
            })
            .collect());
    }
    // Every rank's shard of m words: its keys, then +inf padding.
    let mut shards: Vec<Shard<W>> = Vec::with_capacity(p);
    for (rank, mut buf) in words.into_iter().enumerate() {
        let gpu = multi.gpu(rank);
        launch_fill_largest(gpu, &mut buf.slice_mut(lens[rank]..m))?;
        run::sort_words(&Exec::of(gpu), &mut buf.slice_mut(0..m))?;
        shards.push(Shard {
            buf,
            start: 0,
            len: m,
        });
    }
    // Receive and output buffers, all made before the first transfer.
    let mut received = Vec::with_capacity(p);
    let mut spare = Vec::with_capacity(p);
    for rank in 0..p {
        let gpu = multi.gpu(rank);
        received.push(alloc::<W>(gpu, m)?);
        spare.push(alloc::<W>(gpu, m)?);
    }
    for round in merge_split_rounds(p) {
        // Where each pair's halves turn: the lower rank keeps its first `turn` keys and the
        // upper's first m - turn; the upper keeps the rest. Only those move.
        let turns: Vec<usize> = round
            .iter()
            .map(|&(lower, upper)| {
                find_turn(multi, &shards[lower], &shards[upper], lower, upper, m)
            })
            .collect::<Result<_>>()?;
        let moving: Vec<(usize, usize, usize)> = round
            .iter()
            .zip(&turns)
            .filter(|&(_, &turn)| turn < m) // turn == m: each keeps its own keys
            .map(|(&(lower, upper), &turn)| (lower, upper, turn))
            .collect();
        exchange_round(multi, &moving, &shards, m, &mut received)?;
        // Each keeps two sorted runs and merges them: the lower rank its first `turn` keys
        // and the upper's first m - turn (received); the upper the lower's last m - turn
        // (received) and its own from `turn` on.
        for &(lower, upper, turn) in &moving {
            let kept = m - turn;
            let (lo, up) = (&shards[lower], &shards[upper]);
            let lower_runs = (
                lo.buf.slice(lo.start..lo.start + turn),
                received[lower].slice(0..kept),
            );
            let upper_runs = (
                received[upper].slice(0..kept),
                up.buf.slice(up.start + kept..up.start + m),
            );
            for (rank, (a, b)) in [(lower, lower_runs), (upper, upper_runs)] {
                merge_two_runs(
                    &Exec::of(multi.gpu(rank)),
                    &a,
                    &b,
                    &mut spare[rank].slice_mut(0..m),
                )?;
            }
            for rank in [lower, upper] {
                std::mem::swap(&mut shards[rank].buf, &mut spare[rank]);
                shards[rank].start = 0;
            }
        }
    }
    drop((received, spare));
    // Rank r keeps global positions r m .. (r + 1) m; the padding is at the top.
    Ok(shards
        .into_iter()
        .enumerate()
        .map(|(rank, shard)| Shard {
            len: merge_split_share(rank, m, n),
            ..shard
        })
        .collect())
}

/// Every moving pair `(lower, upper, turn)` swaps the keys that change sides: the lower
/// rank gets the upper's first m - turn keys, the upper the lower's last m - turn, each at
/// the front of its `received` buffer.
fn exchange_round<B: Word>(
    multi: &MultiGpu,
    moving: &[(usize, usize, usize)],
    shards: &[Shard<B>],
    m: usize,
    received: &mut [CudaSlice<B>],
) -> Result<()> {
    let mut transfers = Vec::new();
    for &(lower, upper, turn) in moving {
        let count = m - turn;
        let (lo, up) = (&shards[lower], &shards[upper]);
        transfers.push(Transfer {
            from: upper,
            to: lower,
            src: up.buf.slice(up.start..up.start + count),
            at: 0,
        });
        transfers.push(Transfer {
            from: lower,
            to: upper,
            src: lo.buf.slice(lo.start + turn..lo.start + m),
            at: 0,
        });
    }
    multi.transfer(&transfers, received)
}

/// The turn of a merge-split of two sorted shards A (lower rank) and B (upper), m keys
/// each: the first j with B[m-1-j] < A[j] (m if none), found on the host from a sample
/// of both shards and then the window of keys between two samples. A few small copies
/// instead of moving whole shards: in later rounds the turn is often at an end.
fn find_turn<B: Word>(
    multi: &MultiGpu,
    a: &Shard<B>,
    b: &Shard<B>,
    lower: usize,
    upper: usize,
    m: usize,
) -> Result<usize> {
    let (gpu_a, gpu_b) = (multi.gpu(lower), multi.gpu(upper));
    let samples = m.min(4096);
    let at: Vec<usize> = (0..samples).map(|t| t * m / samples).collect();
    let a_at = take(
        &Exec::of(gpu_a),
        &a.buf,
        &at.iter().map(|&j| a.start + j).collect::<Vec<_>>(),
    )?;
    let b_at = take(
        &Exec::of(gpu_b),
        &b.buf,
        &at.iter().map(|&j| b.start + m - 1 - j).collect::<Vec<_>>(),
    )?;
    // The turn lies after the last sample where B's key is not below A's, at or before
    // the next sample (or m).
    let first_true = (0..samples).find(|&t| b_at[t] < a_at[t]);
    let (lo, hi) = match first_true {
        Some(0) => return Ok(0),
        Some(t) => (at[t - 1] + 1, at[t]),
        None => (at[samples - 1] + 1, m),
    };
    if lo >= hi {
        return Ok(hi);
    }
    // A[lo .. hi] against B[m-1-j] for j in lo .. hi, that is B[m-hi .. m-lo] backwards.
    let read = |gpu: &Gpu, buf: &CudaSlice<B>, from: usize, to: usize| {
        gpu.stream()
            .clone_dtoh(&buf.slice(from..to))
            .during(|| "reading a window of keys for a merge-split".into())
    };
    let a_window = read(gpu_a, &a.buf, a.start + lo, a.start + hi)?;
    let b_window = read(gpu_b, &b.buf, b.start + m - hi, b.start + m - lo)?;
    let len = hi - lo;
    let offset = (0..len)
        .position(|i| b_window[len - 1 - i] < a_window[i])
        .unwrap_or(len);
    Ok(lo + offset)
}
