//! Partition across ranks: sample sort ([`crate::multi::Algorithm::Partition`]). Every rank
//! sorts locally, the ranks agree on p-1 splitters from a regular sample, one all-to-all sends
//! each key to its rank, and each rank merges the p sorted runs that arrived, pairwise.
//!
//! The steps of one rank are functions here, shared by the two drivers of the algorithm:
//! [`sort`], one host thread driving every rank ([`MultiGpu`]), and the one-rank-a-process
//! sorter ([`super::ProcessRank`], process.rs), which runs the same steps between NCCL
//! all-gathers. Same samples, splitters, buckets and merge tree: the same result, bit for bit.

use super::shards::{alloc, count_below, pool_friendly, take, Shard, Transfer, Word};
use super::MultiGpu;
use crate::cuda::exec::Exec;
use crate::cuda::merge::merge_two_runs;
use crate::cuda::{run, Gpu};
use crate::error::{Error, Result};
use crate::multi::{
    bucket_bounds, choose_splitters, merge_level, rank_samples, sample_positions, Buckets, Splitter,
};
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
        sort_locally(multi.gpu(rank), buf, lens[rank])?;
    }
    if p == 1 {
        let len = lens[0];
        let buf = words.pop().expect("one rank");
        return Ok(vec![Shard { buf, start: 0, len }]);
    }
    // Made while the GPUs sort ([`first_receive_buffers`]).
    let mut buffers = Vec::with_capacity(p);
    for rank in 0..p {
        buffers.push(first_receive_buffers::<W>(multi.gpu(rank), total, p)?);
    }
    let mut samples = Vec::new();
    for (rank, &len) in lens.iter().enumerate() {
        let keys = sampled_keys(multi.gpu(rank), &words[rank], len, total, p)?;
        samples.extend(rank_samples(rank, len, total, p, keys));
    }
    let splitters = choose_splitters(samples, p);
    let mut bounds = Vec::with_capacity(p);
    for (rank, &len) in lens.iter().enumerate() {
        let gpu = multi.gpu(rank);
        let shard = (&words[rank], len);
        bounds.push(find_bucket_bounds(gpu, shard, &splitters, (rank, p))?);
    }
    let buckets = Buckets::new(bounds);
    check_buckets(&buckets)?;
    for (rank, (received, spare)) in buffers.iter_mut().enumerate() {
        make_room(multi.gpu(rank), received, spare, buckets.arriving(rank))?;
    }
    // Rank j's buffer takes the senders' parts in rank order. All p^2 messages go in one
    // NCCL group, so every GPU sends to and receives from all others at once.
    let transfers: Vec<Transfer<W>> = (0..p)
        .flat_map(|to| (0..p).map(move |from| (from, to)))
        .map(|(from, to)| Transfer {
            from,
            to,
            src: words[from].slice(buckets.run(from, to)),
            at: buckets.offset(from, to),
        })
        .collect();
    let (mut received, spares): (Vec<_>, Vec<_>) = buffers.into_iter().unzip();
    multi.transfer(&transfers, &mut received)?;
    drop(transfers);
    drop(words);
    // The merge tree level by level, every rank's merges of a level queued before the next
    // level's, so that no GPU waits on the host queuing another's. Every rank has p runs, so
    // all finish at the same level.
    let mut merges: Vec<RunMerge<W>> = received
        .into_iter()
        .zip(spares)
        .enumerate()
        .map(|(rank, (received, spare))| RunMerge::new(received, spare, buckets.runs_to(rank)))
        .collect();
    while !merges[0].is_done() {
        for (rank, merge) in merges.iter_mut().enumerate() {
            merge.queue_level(multi.gpu(rank))?;
        }
    }
    Ok(merges.into_iter().map(RunMerge::finish).collect())
}

/// Sorts a rank's first `len` words ascending, on its GPU's stream: partition's first step.
pub(super) fn sort_locally<W: Word>(gpu: &Gpu, words: &mut CudaSlice<W>, len: usize) -> Result<()> {
    run::sort_words(&Exec::of(gpu), &mut words.slice_mut(0..len))
}

/// A rank's receive buffer and the spare its merges write into, of the length a bucket has
/// when it is its share plus 1/64, made before the bucket sizes are known, while the GPU
/// sorts: a pool that must map new memory takes ~10 ms a few GiB. A larger bucket (rare with
/// regular samples) gets larger buffers once its size is known ([`make_room`]).
pub(super) fn first_receive_buffers<W: Word>(
    gpu: &Gpu,
    total: usize,
    p: usize,
) -> Result<(CudaSlice<W>, CudaSlice<W>)> {
    let share = total.div_ceil(p);
    let expected = pool_friendly(share + share / 64);
    Ok((alloc::<W>(gpu, expected)?, alloc::<W>(gpu, expected)?))
}

/// Makes the receive buffer and the spare hold at least `len` words.
pub(super) fn make_room<W: Word>(
    gpu: &Gpu,
    received: &mut CudaSlice<W>,
    spare: &mut CudaSlice<W>,
    len: usize,
) -> Result<()> {
    if len > received.len() {
        *received = alloc::<W>(gpu, pool_friendly(len))?;
        *spare = alloc::<W>(gpu, pool_friendly(len))?;
    }
    Ok(())
}

/// The words a rank offers as samples (at its [`sample_positions`] in its sorted `len`
/// words), on the host: [`rank_samples`] makes them splitter candidates.
pub(super) fn sampled_keys<W: Word>(
    gpu: &Gpu,
    words: &CudaSlice<W>,
    len: usize,
    total: usize,
    p: usize,
) -> Result<Vec<W>> {
    take(&Exec::of(gpu), words, &sample_positions(len, total, p))
}

/// Where the splitters cut rank `rank`'s sorted `len` words into p buckets
/// ([`bucket_bounds`]: fewer than p - 1 splitters when there were fewer samples).
pub(super) fn find_bucket_bounds<W: Word>(
    gpu: &Gpu,
    (words, len): (&CudaSlice<W>, usize),
    splitters: &[Splitter<W>],
    (rank, p): (usize, usize),
) -> Result<Vec<usize>> {
    let found = count_below(gpu, words, len, splitters, rank)?;
    Ok(bucket_bounds(found, len, p))
}

/// A bucket can outgrow its rank's share (by up to twice it, with regular samples): refuses
/// one that one sort cannot take. Every rank sees every bucket, so all refuse alike, before
/// anything moves.
pub(super) fn check_buckets(buckets: &Buckets) -> Result<()> {
    match buckets.sizes().into_iter().find(|&len| len > MAX_LEN) {
        Some(len) => Err(Error::TooLong { len, max: MAX_LEN }),
        None => Ok(()),
    }
}

/// One rank's merge of the sorted runs that arrived, lying one after the other in its receive
/// buffer: pairwise, one level of the tree ([`merge_level`]) at a time, each level from one
/// buffer into the other.
pub(super) struct RunMerge<W> {
    received: CudaSlice<W>,
    spare: CudaSlice<W>,
    runs: Vec<usize>,
}

impl<W: Word> RunMerge<W> {
    /// The merge of `runs` (their lengths, in buffer order) in `received`, through `spare`
    /// (at least as long).
    pub(super) fn new(received: CudaSlice<W>, spare: CudaSlice<W>, runs: Vec<usize>) -> Self {
        RunMerge {
            received,
            spare,
            runs,
        }
    }

    /// Whether one run is left (or none).
    pub(super) fn is_done(&self) -> bool {
        self.runs.len() <= 1
    }

    /// Queues one level's merges on `gpu`'s stream.
    pub(super) fn queue_level(&mut self, gpu: &Gpu) -> Result<()> {
        let level = merge_level(&self.runs);
        for &(offset, a, b) in &level {
            let src = &self.received;
            merge_two_runs(
                &Exec::of(gpu),
                &src.slice(offset..offset + a),
                &src.slice(offset + a..offset + a + b),
                &mut self.spare.slice_mut(offset..offset + a + b),
            )?;
        }
        std::mem::swap(&mut self.received, &mut self.spare);
        self.runs = level.iter().map(|&(_, a, b)| a + b).collect();
        Ok(())
    }

    /// The merged words (the spare is freed).
    pub(super) fn finish(self) -> Shard<W> {
        let len = self.runs.iter().sum();
        Shard {
            buf: self.received,
            start: 0,
            len,
        }
    }
}
