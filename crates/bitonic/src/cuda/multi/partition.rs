//! Partition across ranks: sample sort ([`crate::multi::Algorithm::Partition`]). Every rank
//! sorts locally, the ranks agree on p-1 splitters from a regular sample, one all-to-all sends
//! each key to its rank, and each rank merges the p sorted runs that arrived, pairwise.

use super::shards::{alloc, count_below, pool_friendly, take, Shard, Transfer, Word};
use super::MultiGpu;
use crate::cuda::exec::Exec;
use crate::cuda::merge::merge_two_runs;
use crate::cuda::run;
use crate::error::{Error, Result};
use crate::multi::{bucket_bounds, choose_splitters, merge_level, sample_positions, Splitter};
use crate::plan::MAX_LEN;
use cudarc::driver::CudaSlice;

/// Sample sort: local sorts, splitters, one all-to-all, a merge of the runs that arrived.
pub(super) fn sort<W: Word>(
    multi: &MultiGpu,
    mut words: Vec<CudaSlice<W>>,
    lens: &[usize],
) -> Result<Vec<Shard<W>>> {
    let p = multi.ranks();
    let total: usize = lens.iter().sum();
    // All local sorts are queued before any sample is read, so that the GPUs sort at once.
    for (rank, buf) in words.iter_mut().enumerate() {
        let len = lens[rank];
        let gpu = multi.gpu(rank);
        run::sort_words(&Exec::of(gpu), &mut buf.slice_mut(0..len))?;
    }
    if p == 1 {
        let len = lens[0];
        let buf = words.pop().expect("one rank");
        return Ok(vec![Shard { buf, start: 0, len }]);
    }
    // Each bucket's runs, one from every rank in rank order, merge through a spare buffer.
    // Both are made while the GPUs sort: a pool that must map new memory takes ~10 ms a
    // few GiB. A bucket larger than its share by more than 1/64 (rare with regular
    // samples) gets larger buffers once its size is known.
    let share = total.div_ceil(p);
    let expected = pool_friendly(share + share / 64);
    let mut received = Vec::with_capacity(p);
    let mut spare = Vec::with_capacity(p);
    for rank in 0..p {
        received.push(alloc::<W>(multi.gpu(rank), expected)?);
        spare.push(alloc::<W>(multi.gpu(rank), expected)?);
    }
    let mut samples = Vec::new();
    for (rank, &len) in lens.iter().enumerate() {
        let positions = sample_positions(len, total, p);
        let keys = take(multi.gpu(rank), &words[rank], &positions)?;
        samples.extend(
            keys.into_iter()
                .zip(positions)
                .map(|(key, index)| Splitter { key, rank, index }),
        );
    }
    let splitters = choose_splitters(samples, p);
    // cuts[r][j] .. cuts[r][j + 1]: the keys rank r sends to rank j.
    let mut cuts = Vec::with_capacity(p);
    for (rank, &len) in lens.iter().enumerate() {
        let found = count_below(multi.gpu(rank), &words[rank], len, &splitters, rank)?;
        cuts.push(bucket_bounds(found, len, p));
    }
    let arriving: Vec<usize> = (0..p)
        .map(|j| (0..p).map(|r| cuts[r][j + 1] - cuts[r][j]).sum())
        .collect();
    // A bucket can outgrow its rank's share (by up to twice it, with regular samples):
    // refuse one that one sort cannot take, before anything moves.
    if let Some(&len) = arriving.iter().find(|&&len| len > MAX_LEN) {
        return Err(Error::TooLong { len, max: MAX_LEN });
    }
    for (rank, &len) in arriving.iter().enumerate() {
        if len > received[rank].len() {
            received[rank] = alloc::<W>(multi.gpu(rank), pool_friendly(len))?;
            spare[rank] = alloc::<W>(multi.gpu(rank), pool_friendly(len))?;
        }
    }
    // Rank j's buffer takes the senders' parts in rank order. All p^2 messages go in one
    // NCCL group, so every GPU sends to and receives from all others at once.
    let transfers: Vec<Transfer<W>> = (0..p)
        .flat_map(|to| (0..p).map(move |from| (from, to)))
        .map(|(from, to)| Transfer {
            from,
            to,
            src: words[from].slice(cuts[from][to]..cuts[from][to + 1]),
            at: (0..from).map(|r| cuts[r][to + 1] - cuts[r][to]).sum(),
        })
        .collect();
    multi.transfer(&transfers, &mut received)?;
    drop(words);
    // The merge tree level by level, every rank's merges of a level queued before the next
    // level's, so that no GPU waits on the host queuing another's.
    let mut runs: Vec<Vec<usize>> = (0..p)
        .map(|to| {
            (0..p)
                .map(|from| cuts[from][to + 1] - cuts[from][to])
                .collect()
        })
        .collect();
    while runs[0].len() > 1 {
        for rank in 0..p {
            let level = merge_level(&runs[rank]);
            for &(offset, a, b) in &level {
                let src = &received[rank];
                merge_two_runs(
                    &Exec::of(multi.gpu(rank)),
                    &src.slice(offset..offset + a),
                    &src.slice(offset + a..offset + a + b),
                    &mut spare[rank].slice_mut(offset..offset + a + b),
                )?;
            }
            std::mem::swap(&mut received[rank], &mut spare[rank]);
            runs[rank] = level.iter().map(|&(_, a, b)| a + b).collect();
        }
    }
    drop(spare);
    Ok(received
        .into_iter()
        .zip(arriving)
        .map(|(buf, len)| Shard { buf, start: 0, len })
        .collect())
}
