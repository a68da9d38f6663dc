//! One rank a process: the partition sort ([`crate::multi::Algorithm::Partition`]) driven by
//! each process for its own GPU, over an NCCL communicator that the job made (torchrun, MPI,
//! Slurm hand every process an id, a rank and a world size), where [`super::MultiGpu`] drives
//! every rank from one thread over communicators it makes itself.
//!
//! The steps are partition.rs's, run by each rank on its own shard; what one host thread knew
//! of every rank, each rank now learns through small all-gathers:
//!
//! 1. the shard lengths (every rank's sample count and positions follow from them);
//! 2. the sampled keys, padded to the most any rank offers: every rank chooses the same
//!    splitters from the same samples (`choose_splitters`);
//! 3. every rank's bucket bounds: every rank lays out the all-to-all alike ([`Buckets`]) and
//!    knows every rank's result length;
//! 4. that every rank has its receive buffers;
//!
//! then one NCCL group of sends and receives, and this rank's merge of the runs it received.
//! Each gather carries every rank's status, so that a failure on one rank before the exchange
//! stops every rank at the same gather, with an error and no hang.

use super::gathers::{
    call_fingerprint, decode, most_sent, read_gathered, status_message, FIRST_GATHER_PAYLOAD,
};
use super::nccl::{check_nccl, id_of_bytes, nccl_error, receive_words, send_words, NCCL_ID_BYTES};
use super::partition::{
    check_buckets, find_bucket_bounds, first_receive_buffers, make_room, sampled_keys,
    sort_locally, RunMerge,
};
use super::shards::{
    alloc, check_pair_count, check_shard, keys_of_words, unpack_pairs, value_halves, words_of_keys,
    words_of_pairs, DeviceShard, Shard, Word,
};
use crate::cuda::Gpu;
use crate::error::{check_same_len, CudaContext as _, Error, Result};
use crate::kernels::abi::map_flags;
use crate::key::KeyOrder;
use crate::multi::{choose_splitters, gathered_samples, widest_sample, Buckets};
use crate::{Order, SortKey};
use cudarc::driver::{CudaSlice, CudaView, DeviceRepr};
use cudarc::nccl::result::{group_end, group_start};
use cudarc::nccl::safe::Comm;
use std::cell::{Cell, RefCell};

/// This process's rank of a sort across processes, one GPU each, over an NCCL communicator.
///
/// The contract:
/// * **Collective.** Every rank of the communicator makes its `ProcessRank` (making one from an
///   id blocks until all ranks have joined) and calls the same sorts in the same order, with
///   the same key (and value) type and order, each with its own shard: any length, empty
///   too. A rank that skips a call leaves the others waiting.
/// * **Result.** Each rank gets its part of the global order (rank 0 the smallest keys) and
///   every rank's part length. The parts joined in rank order are, bit for bit, what
///   [`super::MultiGpu::sort_shards`] with [`crate::multi::Algorithm::Partition`] returns
///   for the same shards on as many ranks.
/// * **Streams.** Kernels and copies run on the sorter's own stream ([`ProcessRank::gpu`]);
///   NCCL calls on the communicator's, which is the same stream for
///   [`ProcessRank::from_unique_id`], and the caller's for [`ProcessRank::from_comm`], ordered
///   with the sorter's by events. Each sort waits on the host four times for a small
///   all-gather (lengths, samples, bucket bounds, readiness) and returns when this rank's part
///   is done (its stream synchronized). The input is read on the sorter's stream: work on it
///   queued elsewhere must be complete, or ordered by cudarc's events.
/// * **Failures.** A failure on any rank before the exchange (a shard on the wrong GPU, no
///   memory for the buffers, a bucket longer than one sort takes) ends the sort on every rank
///   at the same all-gather: that rank returns its error, the others [`Error::PeerFailed`], and
///   the communicator stays usable. The gathers allocate nothing (their buffers are made with
///   the rank), so no rank fails inside one for want of memory. A failing NCCL call, or a
///   failing CUDA copy inside a collective, aborts the communicator (`ncclCommAbort`): this
///   sorter refuses later sorts, and the other ranks may wait in theirs for ever (no watchdog
///   of torch's sees this communicator), so the job must end them, or make new communicators
///   on every rank. A failure after the exchange (the merges) is this rank's alone
///   ([`ProcessRank::failed_alone`]); in a key-value sort of two passes it is reported at the
///   second pass's first gather, so no rank waits for it. A rank that fails before it can
///   call a sort the others call (preparing its input) calls [`ProcessRank::abstain`] in its
///   place, and they return [`Error::PeerFailed`]. Before the communicator exists, a rank
///   that cannot join leaves the others waiting in the join: check
///   [`ProcessRank::check_can_join`] on every rank, and agree, first.
/// * **Checked.** Ranks that call with different key types, value types or orders would send
///   messages of different sizes, which NCCL does not check: the first gather (whose size is
///   the same for every call) carries each rank's call, and every rank returns
///   [`Error::RanksDisagree`] there when they differ.
///
/// Neither `Send` nor `Sync`, as cudarc's NCCL communicator (a raw handle) is not: the thread
/// that makes it sorts with it. Several ranks in one process (one thread each, one GPU each)
/// work, as NCCL allows one communicator a thread.
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<bitonic::cuda::multi::ProcessRank>();
/// ```
pub struct ProcessRank {
    gpu: Gpu,
    /// `None` once a failing NCCL call aborted it.
    comm: RefCell<Option<Comm>>,
    rank: usize,
    world_size: usize,
    /// The device buffers of every all-gather (what this rank sends, and what every rank
    /// sent), made with the rank: a gather allocates nothing, since a rank that failed to
    /// allocate inside one would leave its peers waiting in it.
    gather_buffers: RefCell<GatherBuffers>,
    /// Whether the last sort failed after its exchange, on this rank alone.
    failed_alone: Cell<bool>,
}

impl std::fmt::Debug for ProcessRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRank")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("device", &self.gpu.info().ordinal)
            .finish()
    }
}

/// This rank's part of a sort across processes ([`ProcessRank::sort`]).
#[derive(Debug)]
pub struct RankSorted<K> {
    /// This rank's keys of the global order, on its GPU.
    pub keys: DeviceShard<K>,
    /// Every rank's part length, in rank order (`sizes[rank]` is `keys.len()`).
    pub sizes: Vec<usize>,
}

/// This rank's part of a key-value sort across processes ([`ProcessRank::sort_pairs`]).
#[derive(Debug)]
pub struct RankSortedPairs<K, V> {
    /// This rank's keys of the global order, on its GPU.
    pub keys: DeviceShard<K>,
    /// Their values.
    pub values: DeviceShard<V>,
    /// Every rank's part length, in rank order.
    pub sizes: Vec<usize>,
}

impl ProcessRank {
    /// Joins the communicator that `id` names ([`super::new_unique_id`], made by one process
    /// of the job and sent to all) as rank `rank` of `world_size`, on device `ordinal`
    /// (`ncclCommInitRank`): blocks until every rank has joined. Errors: a rank outside
    /// `0..world_size` ([`Error::BadRank`]), no such GPU, no NCCL ([`Error::NoGpu`]), NCCL's.
    pub fn from_unique_id(
        id: &[u8; NCCL_ID_BYTES],
        rank: usize,
        world_size: usize,
        ordinal: usize,
    ) -> Result<ProcessRank> {
        check_rank(rank, world_size)?;
        let (gpu, gather_buffers) = ready_to_join(ordinal, world_size)?;
        // ncclCommInitRank makes the communicator on the calling thread's current device.
        gpu.context()
            .bind_to_thread()
            .during(|| format!("making GPU {ordinal} current"))?;
        let stream = gpu.stream().clone();
        let comm = Comm::from_rank(stream, rank, world_size, id_of_bytes(id))
            .map_err(nccl_error("joining the NCCL communicator"))?;
        Ok(ProcessRank::with(gpu, comm, gather_buffers))
    }

    /// Whether this process could join a communicator of `world_size` ranks on device
    /// `ordinal`: the GPU opens, NCCL loads, and the rank's gather buffers can be allocated
    /// now. [`ProcessRank::from_unique_id`] blocks until every rank has joined, so a rank that
    /// fails before it joins leaves the others waiting for ever: a job checks this on every
    /// rank and agrees on the outcome (through its own channel) before any rank joins. (Memory
    /// another thread takes between the check and the join can still fail the join.)
    pub fn check_can_join(ordinal: usize, world_size: usize) -> Result<()> {
        ready_to_join(ordinal, world_size).map(drop)
    }

    /// Sorts over the caller's communicator, as its rank, on its device. Its NCCL calls are
    /// queued on `comm`'s stream; [`ProcessRank::into_comm`] hands it back. On an error (the
    /// device cannot be opened, or the gathers' buffers not allocated) the communicator is
    /// dropped, which in cudarc aborts it.
    pub fn from_comm(comm: Comm) -> Result<ProcessRank> {
        let (rank, world_size) = (comm.rank(), comm.world_size());
        check_rank(rank, world_size)?;
        let gpu = Gpu::new(comm.ordinal())?;
        let gather_buffers = gather_buffers(&gpu, world_size)?;
        Ok(ProcessRank::with(gpu, comm, gather_buffers))
    }

    /// The rank of `comm` (its rank and size), on `gpu`.
    fn with(gpu: Gpu, comm: Comm, gather_buffers: GatherBuffers) -> ProcessRank {
        ProcessRank {
            gpu,
            rank: comm.rank(),
            world_size: comm.world_size(),
            comm: RefCell::new(Some(comm)),
            gather_buffers: RefCell::new(gather_buffers),
            failed_alone: Cell::new(false),
        }
    }

    /// The communicator, unless a failure aborted it.
    pub fn into_comm(self) -> Option<Comm> {
        self.comm.into_inner()
    }

    /// This process's rank, from 0.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks sort together.
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// The GPU this rank sorts on, and whose stream its kernels run on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Sorts this rank's shard `keys` (on this rank's GPU, left as it is) together with the
    /// other ranks' shards, and returns this rank's part of the global order and every rank's
    /// part length. Floats sort in [`crate::FloatOrder::Total`], as in
    /// [`super::MultiGpu`]. Collective: see [`ProcessRank`]. 16-bit keys are refused
    /// ([`Error::Unsupported`]) at the first gather, so every rank returns there.
    pub fn sort<K: SortKey>(&self, keys: &CudaView<K>, order: Order) -> Result<RankSorted<K>> {
        let checked = if crate::key::is_narrow::<K>() {
            Err(Error::Unsupported("16-bit keys in multi-GPU sorts"))
        } else {
            check_shard(keys, &self.gpu)
        };
        let call = call_fingerprint::<K>(0, order);
        self.failed_alone.set(false);
        let lens = self.gather_lens(checked, keys.len(), call)?;
        let words = words_of_keys(&self.gpu, keys, keys.len(), order);
        let (merged, sizes) = self.partition(words, &lens)?;
        self.alone(merged.and_then(|merged| {
            let keys = keys_of_words(&self.gpu, merged, order)?;
            self.synchronize()?;
            Ok(RankSorted { keys, sizes })
        }))
    }

    /// Sorts (key, value) pairs, this rank's shard of each, with the other ranks': the values
    /// follow their keys, and equal keys keep their order of input (rank by rank, then within
    /// the shard), as [`super::MultiGpu::sort_pairs_shards`] does. Keys and values of 4 or 8
    /// bytes, at most 2^32 - 1 pairs in all. Collective: see [`ProcessRank`].
    pub fn sort_pairs<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
        &self,
        keys: &CudaView<K>,
        values: &CudaView<V>,
        order: Order,
    ) -> Result<RankSortedPairs<K, V>> {
        // Every check of this rank's call, the types' too, is its status at the first gather:
        // a rank that returned before it would leave the others waiting there.
        let (halves, checked) = match value_halves::<K, V>() {
            Ok(halves) => (
                halves,
                check_shard(keys, &self.gpu)
                    .and_then(|()| check_shard(values, &self.gpu))
                    .and_then(|()| check_same_len(keys.len(), values.len())),
            ),
            Err(refused) => (&[][..], Err(refused)),
        };
        let call = call_fingerprint::<K>(std::mem::size_of::<V>(), order);
        self.failed_alone.set(false);
        let lens = self.gather_lens(checked, keys.len(), call)?;
        check_pair_count(lens.iter().sum())?;
        let first = lens[..self.rank].iter().sum::<usize>() as u64;
        let map = map_flags(K::DTYPE, KeyOrder::of(order));
        let mut out = None;
        let mut sizes = Vec::new();
        // A failure after one sort's exchange (merging or unpacking, this rank's alone) is
        // reported in the next sort's gathers, so that no rank waits in a sort this one left.
        let mut unpacked = Ok(());
        for &half in halves {
            let words = unpacked.and_then(|()| {
                words_of_pairs(&self.gpu, (keys, values), keys.len(), first, (map, half))
            });
            let (merged, all_sizes) = self.partition(words, &lens)?;
            unpacked =
                merged.and_then(|sorted| unpack_pairs(&self.gpu, &sorted, &mut out, (map, half)));
            sizes = all_sizes;
        }
        self.alone(unpacked.and_then(|()| {
            self.synchronize()?;
            let (keys, values) = out.expect("at least one sort");
            Ok(RankSortedPairs {
                keys,
                values,
                sizes,
            })
        }))
    }

    /// Whether the last sort failed on this rank alone, after its exchange (merging its runs,
    /// or copying them out): the other ranks returned their parts, and go on to whatever the
    /// job calls next. Every other failure ends the sort on every rank at the same collective.
    /// A caller that makes several sorts for one task of its own (one a column of values, say)
    /// uses it to know whether the others will call the next one, from which it then
    /// [abstains](ProcessRank::abstain).
    pub fn failed_alone(&self) -> bool {
        self.failed_alone.get()
    }

    /// `result`, the steps of a sort after its exchange, noted as this rank's alone.
    fn alone<T>(&self, result: Result<T>) -> Result<T> {
        self.failed_alone.set(result.is_err());
        result
    }

    /// Stands out of the sort that the other ranks are calling now, because this rank failed
    /// before it could call it (preparing its input, say): it takes part in that sort's first
    /// gather with a failed status, so that every other rank returns [`Error::PeerFailed`]
    /// there instead of waiting for it. `Ok` once the gather is done; the caller then reports
    /// its own failure. Collective, in place of one sort call.
    pub fn abstain(&self) -> Result<()> {
        self.failed_alone.set(false);
        let failed: Result<()> = Err(Error::PeerFailed);
        let sent = status_message(&failed, FIRST_GATHER_PAYLOAD, |()| Vec::new());
        self.all_gather_bytes(&sent).map(drop)
    }

    /// Partition's steps for this rank, from its unsorted words (or the error of making them)
    /// and every rank's length: its merged words, and every rank's result length. An error
    /// of the whole is every rank's (they all left at the same collective); the merged words'
    /// own error is this rank's alone, after the exchange, which the caller reports at its
    /// next collective, if any.
    fn partition<W: Word>(
        &self,
        words: Result<CudaSlice<W>>,
        lens: &[usize],
    ) -> Result<(Result<Shard<W>>, Vec<usize>)> {
        let (gpu, p, me) = (&self.gpu, self.world_size, self.rank);
        let (len, total) = (lens[me], lens.iter().sum::<usize>());
        let sorted = words.and_then(|mut words| sort_locally(gpu, &mut words, len).map(|()| words));
        if p == 1 {
            let merged = sorted.map(|buf| Shard { buf, start: 0, len });
            return Ok((merged, vec![len]));
        }
        // The samples, each rank's padded to the most any rank offers.
        let width = widest_sample(lens);
        let sampled = sorted.and_then(|words| {
            let buffers = first_receive_buffers::<W>(gpu, total, p)?;
            let mut keys = sampled_keys(gpu, &words, len, total, p)?;
            keys.resize(width, <W as bytemuck::Zeroable>::zeroed());
            Ok((words, buffers, keys))
        });
        let payload = width * std::mem::size_of::<W>();
        let ((words, buffers, _), gathered) = self.gather(sampled, payload, |(_, _, keys)| {
            bytemuck::cast_slice(keys).to_vec()
        })?;
        let gathered: Vec<W> = gathered.iter().flat_map(|bytes| decode(bytes)).collect();
        let splitters = choose_splitters(gathered_samples(&gathered, width, lens), p);
        // Every rank's bucket bounds, so that every rank lays out the exchange alike.
        let bounds = find_bucket_bounds(gpu, (&words, len), &splitters, (me, p));
        let (_, gathered) = self.gather(bounds, (p + 1) * 8, |bounds| {
            let bounds: Vec<u64> = bounds.iter().map(|&b| b as u64).collect();
            bytemuck::cast_slice(&bounds).to_vec()
        })?;
        let buckets = Buckets::new(
            gathered
                .iter()
                .map(|bytes| {
                    decode::<u64>(bytes)
                        .into_iter()
                        .map(|b| b as usize)
                        .collect()
                })
                .collect(),
        );
        check_buckets(&buckets)?;
        let (mut received, mut spare) = buffers;
        let room = make_room(gpu, &mut received, &mut spare, buckets.arriving(me));
        self.gather(room, 0, |()| Vec::new())?;
        self.exchange(&words, &buckets, &mut received)?;
        let merged = (|| {
            copy_own_bucket(gpu, &words, &buckets, me, &mut received)?;
            drop(words);
            let mut merge = RunMerge::new(received, spare, buckets.runs_to(me));
            while !merge.is_done() {
                merge.queue_level(gpu)?;
            }
            Ok(merge.finish())
        })();
        Ok((merged, buckets.sizes()))
    }

    /// Every rank's shard length, with `checked`, this rank's checks of its input, as its
    /// status ([`ProcessRank::gather`]), once every rank is seen to make the same `call`
    /// ([`call_fingerprint`]): the first gather's size does not depend on the call, so ranks
    /// that disagree all meet in it and all return [`Error::RanksDisagree`].
    fn gather_lens(&self, checked: Result<()>, len: usize, call: u64) -> Result<Vec<usize>> {
        let ((), gathered) = self.gather(checked, FIRST_GATHER_PAYLOAD, |()| {
            [len as u64, call]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect()
        })?;
        let messages: Vec<Vec<u64>> = gathered.iter().map(|bytes| decode::<u64>(bytes)).collect();
        let differ: Vec<usize> = (0..messages.len())
            .filter(|&r| messages[r][1] != messages[0][1])
            .collect();
        if !differ.is_empty() {
            return Err(Error::RanksDisagree { ranks: differ });
        }
        Ok(messages.iter().map(|m| m[0] as usize).collect())
    }

    /// One all-gather of a `payload`-byte message from every rank (`message` of the local
    /// steps' value), each behind its rank's status: whether its local steps since the last
    /// gather succeeded. A rank whose steps failed still takes part (its message all zeros)
    /// and then returns its error, and the others return [`Error::PeerFailed`]: every rank
    /// leaves the sort at the same collective, and none waits for one that left.
    fn gather<T>(
        &self,
        local: Result<T>,
        payload: usize,
        message: impl FnOnce(&T) -> Vec<u8>,
    ) -> Result<(T, Vec<Vec<u8>>)> {
        let sent = status_message(&local, payload, message);
        let gathered = self.all_gather_bytes(&sent)?;
        read_gathered(local, &gathered, sent.len())
    }

    /// `sent` from every rank, rank by rank (`ncclAllGather`), on the host, through the
    /// rank's gather buffers (no device allocation). `sent` is at most [`most_sent`] bytes.
    fn all_gather_bytes(&self, sent: &[u8]) -> Result<Vec<u8>> {
        let (n, p) = (sent.len(), self.world_size);
        debug_assert!(n <= most_sent(p), "a gather's message outgrew its buffer");
        let mut buffers = self.gather_buffers.borrow_mut();
        let (send, got) = &mut *buffers;
        self.collective(|comm| {
            let stream = self.gpu.stream();
            stream
                .memcpy_htod(sent, &mut send.slice_mut(0..n))
                .during(|| "copying a gather's message to the GPU".into())?;
            self.on_comm_stream(comm, || {
                comm.all_gather(&send.slice(0..n), &mut got.slice_mut(0..n * p))
                    .map(drop)
                    .map_err(nccl_error("gathering every rank's message"))
            })?;
            let mut gathered = vec![0u8; n * p];
            stream
                .memcpy_dtoh(&got.slice(0..n * p), &mut gathered)
                .and_then(|()| stream.synchronize())
                .during(|| "copying the gathered messages back".into())?;
            Ok(gathered)
        })
    }

    /// The all-to-all: this rank sends each other rank its bucket and receives its run from
    /// each, all in one NCCL group, every run at the place [`Buckets`] gives it (its own
    /// bucket is [`copy_own_bucket`]'s). Both ends of each message know its length, so empty
    /// ones are left out on both.
    fn exchange<W: Word>(
        &self,
        words: &CudaSlice<W>,
        buckets: &Buckets,
        received: &mut CudaSlice<W>,
    ) -> Result<()> {
        let me = self.rank;
        self.collective(|comm| {
            self.on_comm_stream(comm, || {
                group_start().map_err(nccl_error("starting an NCCL group"))?;
                let mut queued = Ok(());
                for peer in (0..self.world_size).filter(|&peer| peer != me) {
                    let (out, into) = (buckets.run(me, peer), buckets.run(peer, me));
                    if !out.is_empty() {
                        queued = send_words(comm, &words.slice(out.clone()), peer);
                    }
                    if queued.is_ok() && !into.is_empty() {
                        let at = buckets.offset(peer, me);
                        queued = receive_words(comm, received.slice_mut(at..at + into.len()), peer);
                    }
                    if queued.is_err() {
                        break;
                    }
                }
                let ended = group_end()
                    .map(drop)
                    .map_err(nccl_error("ending an NCCL group"));
                queued.and(ended)
            })
        })
    }

    /// Runs NCCL calls on the communicator; when they fail, aborts it (dropping cudarc's
    /// communicator calls `ncclCommAbort`), since its peers' state is then unknown.
    fn collective<T>(&self, calls: impl FnOnce(&Comm) -> Result<T>) -> Result<T> {
        let result = match self.comm.borrow().as_ref() {
            Some(comm) => calls(comm),
            None => {
                return Err(Error::Nccl {
                    context: "starting a sort".into(),
                    cause: "the communicator was aborted after an earlier failure; every rank \
                            needs a new one"
                        .into(),
                })
            }
        };
        if result.is_err() {
            drop(self.comm.borrow_mut().take());
        }
        result
    }

    /// Queues `calls` on the communicator's stream after the work queued so far on the
    /// sorter's, and makes the sorter's stream wait for them: one stream, unless the caller's
    /// communicator brought its own.
    fn on_comm_stream(&self, comm: &Comm, calls: impl FnOnce() -> Result<()>) -> Result<()> {
        let (ours, theirs) = (self.gpu.stream(), comm.stream());
        let shared = ours.cu_stream() == theirs.cu_stream();
        if !shared {
            theirs
                .join(ours)
                .during(|| "ordering the communicator's stream after the sort's".into())?;
        }
        let called = calls();
        if !shared {
            // Even when the calls failed: the buffers they were given are freed on the sort's
            // stream, which must not run ahead of NCCL's work on them.
            ours.join(&theirs)
                .during(|| "ordering the sort's stream after the communicator's".into())?;
        }
        called
    }

    fn synchronize(&self) -> Result<()> {
        self.gpu
            .stream()
            .synchronize()
            .during(|| format!("waiting for GPU {}", self.gpu.info().ordinal))
    }
}

/// What a rank of `world_size` on device `ordinal` needs before it joins a communicator: its
/// GPU, NCCL, and its gather buffers ([`ProcessRank::from_unique_id`], and
/// [`ProcessRank::check_can_join`], which tries the same steps).
fn ready_to_join(ordinal: usize, world_size: usize) -> Result<(Gpu, GatherBuffers)> {
    let gpu = Gpu::new(ordinal)?;
    check_nccl()?;
    let buffers = gather_buffers(&gpu, world_size)?;
    Ok((gpu, buffers))
}

/// A rank's gather buffers: what it sends, and what every rank sent.
type GatherBuffers = (CudaSlice<u8>, CudaSlice<u8>);

/// The gather buffers of a rank of `p` ([`ProcessRank`]'s `gather_buffers`).
fn gather_buffers(gpu: &Gpu, p: usize) -> Result<GatherBuffers> {
    let most = most_sent(p);
    let total = most.checked_mul(p).ok_or_else(|| Error::DeviceMemory {
        bytes: usize::MAX,
        what: format!("the gathers of {p} ranks"),
    })?;
    Ok((alloc::<u8>(gpu, most)?, alloc::<u8>(gpu, total)?))
}

/// This rank's own bucket of `words`, copied into its place in `received` (the exchange's
/// other runs arrive there from their ranks).
fn copy_own_bucket<W: Word>(
    gpu: &Gpu,
    words: &CudaSlice<W>,
    buckets: &Buckets,
    me: usize,
    received: &mut CudaSlice<W>,
) -> Result<()> {
    let own = buckets.run(me, me);
    if own.is_empty() {
        return Ok(());
    }
    let at = buckets.offset(me, me);
    gpu.stream()
        .memcpy_dtod(
            &words.slice(own.clone()),
            &mut received.slice_mut(at..at + own.len()),
        )
        .during(|| "copying this rank's own bucket".into())
}

/// `rank` of `world_size` ranks, a count NCCL takes (an `int`).
fn check_rank(rank: usize, world_size: usize) -> Result<()> {
    if rank < world_size && world_size <= i32::MAX as usize {
        Ok(())
    } else {
        Err(Error::BadRank { rank, world_size })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_outside_the_communicator_are_refused() {
        assert!(check_rank(0, 1).is_ok());
        assert!(check_rank(3, 4).is_ok());
        for (rank, world_size) in [(0, 0), (4, 4), (0, 1usize << 31)] {
            let err = check_rank(rank, world_size).unwrap_err();
            assert!(matches!(err, Error::BadRank { .. }), "{err}");
        }
    }
}
