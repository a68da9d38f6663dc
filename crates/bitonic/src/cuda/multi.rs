//! Sorting across the GPUs of one host, through NCCL.
//!
//! Each *rank* holds one shard on one GPU. Every rank sorts its shard with the tuned version;
//! then the shards are merged across ranks by one of the two algorithms of [`crate::multi`],
//! which also runs them over simulated ranks on the CPU with the same schedule
//! ([`merge_split_rounds`]) and the same splitter rules ([`choose_splitters`], [`cut_for`]):
//!
//! * merge-split: in each round of the bitonic network over ranks, each pair keeps the
//!   elementwise min (lower rank) or max (upper) of its shard and the partner's read backwards,
//!   its half of the two. The host finds where the kept keys *turn* from one shard to the
//!   other, so only the keys that change sides cross (`ncclSend`/`ncclRecv` in one group), and
//!   each rank merges the two sorted runs it keeps;
//! * partition: sample, p-1 splitters, one all-to-all, then each rank merges the p sorted runs
//!   it received, pairwise in ⌈log p⌉ levels, each merge one pass in which a block merges one
//!   tile of the output in shared memory (src/multi/mod.rs says how).
//!
//! Both run on *words*: sortable u32/u64 words for keys alone, 16-byte (key, position, value)
//! words for key-value pairs (`sort_by_key_shards`), which makes that sort stable.
//!
//! One host thread drives all GPUs: NCCL wants every rank's sends and receives of a round in one
//! group when one thread owns several GPUs, and the kernels of all GPUs run concurrently since
//! every launch is asynchronous. Several ranks may share a GPU (an input larger than one sort's
//! [`MAX_LEN`] on one GPU is sorted as two ranks there); they swap shards with device copies.
//!
//! Failures: every allocation of a round is made before any of its transfers is queued, and
//! any error aborts the communicators (`ncclCommAbort`), so a failing GPU turns into this
//! library's error for the whole sort — no hang, and no partial result returned as sorted.

use super::merge::{merge_two_runs, search_grid};
use super::device::set_pool_threshold;
use super::layout::{map_flags, KeyIndex};
use super::run::{self, check_len, MAX_LEN};
use super::{kernel_name, kernels, Gpu};
use crate::error::{check_same_len, CudaContext as _, Error, GpuUnavailable, Result};
use crate::key::Bits;
use crate::multi::{
    bucket_bounds, choose_splitters, cut_for, merge_level, merge_split_rounds, merge_split_share,
    sample_positions, Algorithm, Cut, Splitter,
};
use crate::{Order, SortKey};
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, DeviceSlice, PushKernelArg};
use cudarc::nccl::{result as nccl, safe::Comm};
use std::cell::RefCell;

/// Sorts keys spread over several GPUs (or several ranks of one GPU). Not `Sync`: one thread
/// drives all of its GPUs.
pub struct MultiGpu {
    /// One per distinct device, in the order first named.
    gpus: Vec<Gpu>,
    /// Rank r's shard lives on `gpus[device_of[r]]`.
    device_of: Vec<usize>,
    /// One NCCL communicator per GPU when there are several; `None` once a failure aborted
    /// them (a new `MultiGpu` makes new ones).
    comms: RefCell<Option<Vec<Comm>>>,
}

impl std::fmt::Debug for MultiGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ordinals: Vec<usize> = self
            .device_of
            .iter()
            .map(|&d| self.gpus[d].info().ordinal)
            .collect();
        f.debug_struct("MultiGpu")
            .field("rank_devices", &ordinals)
            .finish()
    }
}

impl Drop for MultiGpu {
    fn drop(&mut self) {
        // Hand back what the pools kept beyond the usual quarter.
        for gpu in &self.gpus {
            set_pool_threshold(gpu.context(), gpu.info().total_memory / 4, true);
        }
    }
}

/// Whether libnccl can be loaded (cudarc panics on first use when it cannot).
pub fn nccl_present() -> bool {
    std::panic::catch_unwind(|| unsafe { cudarc::nccl::sys::is_culib_present() }).unwrap_or(false)
}

fn nccl_error(context: &str) -> impl FnOnce(nccl::NcclError) -> Error + '_ {
    move |e| Error::Nccl {
        context: context.to_string(),
        cause: format!("{:?}", e.0),
    }
}

impl MultiGpu {
    /// One rank per entry of `ordinals`, on that device. A device may appear more than once:
    /// its ranks then exchange shards by device copies.
    pub fn new(ordinals: &[usize]) -> Result<MultiGpu> {
        if ordinals.is_empty() {
            return Err(Error::NoRanks);
        }
        let mut distinct: Vec<usize> = Vec::new();
        let device_of = ordinals
            .iter()
            .map(|o| match distinct.iter().position(|d| d == o) {
                Some(i) => i,
                None => {
                    distinct.push(*o);
                    distinct.len() - 1
                }
            })
            .collect();
        let gpus = distinct
            .iter()
            .map(|&o| Gpu::new(o))
            .collect::<std::result::Result<Vec<_>, GpuUnavailable>>()?;
        // A large sort's buffers outgrow the quarter of memory a Gpu's pool keeps; each sort
        // would map them afresh (~50 ms for 2^32 keys on one GPU). Keep them while this lives.
        for gpu in &gpus {
            set_pool_threshold(gpu.context(), gpu.info().total_memory, false);
        }
        let comms = if gpus.len() > 1 {
            if !nccl_present() {
                return Err(GpuUnavailable::NoNccl.into());
            }
            let streams = gpus.iter().map(|g| g.stream().clone()).collect();
            Some(
                Comm::from_devices(streams)
                    .map_err(nccl_error("creating the NCCL communicators"))?,
            )
        } else {
            None
        };
        Ok(MultiGpu {
            gpus,
            device_of,
            comms: RefCell::new(comms),
        })
    }

    /// One rank on each visible device.
    pub fn all() -> Result<MultiGpu> {
        let count = Gpu::device_count()?;
        MultiGpu::new(&(0..count).collect::<Vec<_>>())
    }

    pub fn ranks(&self) -> usize {
        self.device_of.len()
    }

    /// The GPU of rank `rank`.
    pub fn gpu(&self, rank: usize) -> &Gpu {
        &self.gpus[self.device_of[rank]]
    }

    /// Copies `keys` to the ranks, split as evenly as possible.
    pub fn upload<K: DeviceRepr>(&self, keys: &[K]) -> Result<Vec<DeviceShard<K>>> {
        even_split(keys.len(), self.ranks())
            .into_iter()
            .enumerate()
            .map(|(rank, range)| {
                let gpu = self.gpu(rank);
                let mut buf = alloc::<K>(gpu, range.len())?;
                if !range.is_empty() {
                    gpu.stream()
                        .memcpy_htod(&keys[range.clone()], &mut buf.slice_mut(0..range.len()))
                        .during(|| format!("copying rank {rank}'s keys to its GPU"))?;
                }
                Ok(DeviceShard {
                    buf,
                    start: 0,
                    len: range.len(),
                })
            })
            .collect()
    }

    /// Copies shards back into `out` (their total length), one after the other.
    pub fn download<K: DeviceRepr>(&self, shards: &[DeviceShard<K>], out: &mut [K]) -> Result<()> {
        let total: usize = shards.iter().map(DeviceShard::len).sum();
        assert_eq!(total, out.len(), "the shards hold {total} keys");
        let mut at = 0;
        for (rank, shard) in shards.iter().enumerate() {
            if !shard.is_empty() {
                self.gpu(rank)
                    .stream()
                    .memcpy_dtoh(&shard.view(), &mut out[at..at + shard.len()])
                    .during(|| format!("copying rank {rank}'s keys back"))?;
            }
            at += shard.len();
        }
        self.synchronize()
    }

    /// Sorts a host slice across the ranks: split, copied over, sorted, copied back.
    pub fn sort_host<K: SortKey>(
        &self,
        keys: &mut [K],
        order: Order,
        algorithm: Algorithm,
    ) -> Result<()> {
        let shards = self.upload(keys)?;
        let sorted = self.sort_shards(&DeviceShard::views(&shards), order, algorithm)?;
        drop(shards);
        self.download(&sorted, keys)
    }

    /// Sorts keys already on the GPUs, one shard per rank (any lengths, empty ones too), and
    /// returns new shards in global order: rank 0 holds the smallest keys. The inputs are left
    /// as they are. Merge-split returns `m` keys on each rank (`m` the longest input shard) but
    /// fewer on the last ones ([`merge_split_share`]); partition returns each rank its bucket.
    /// Returns when the sort is done (all GPUs synchronized).
    pub fn sort_shards<K: SortKey>(
        &self,
        shards: &[CudaView<K>],
        order: Order,
        algorithm: Algorithm,
    ) -> Result<Vec<DeviceShard<K>>> {
        self.check_shards(shards)?;
        self.guarded(|| {
            let lens: Vec<usize> = shards.iter().map(CudaView::len).collect();
            let capacity = capacities(&lens, algorithm);
            let mut words = Vec::with_capacity(self.ranks());
            for (rank, input) in shards.iter().enumerate() {
                let gpu = self.gpu(rank);
                let mut buf = alloc::<K::Bits>(gpu, capacity[rank])?;
                copy_in(gpu, input, &mut buf)?;
                map_to_words::<K>(gpu, &mut buf.slice_mut(0..input.len()), order, false)?;
                words.push(buf);
            }
            let sorted = self.sort_words(words, &lens, algorithm)?;
            sorted
                .into_iter()
                .enumerate()
                .map(|(rank, mut shard)| {
                    let gpu = self.gpu(rank);
                    let range = shard.start..shard.start + shard.len;
                    map_to_words::<K>(gpu, &mut shard.buf.slice_mut(range), order, true)?;
                    Ok(DeviceShard::of_words::<K::Bits>(
                        gpu,
                        shard.buf,
                        shard.start,
                        shard.len,
                    ))
                })
                .collect()
        })
    }

    /// Sorts (key, value) pairs spread one shard of each per rank: the values follow their
    /// keys, and equal keys keep their order of input (rank by rank), so the sort is stable.
    /// Keys and values of 4 or 8 bytes; each pair travels as one 16-byte word
    /// (kernels/multi.cu), and 8-byte values with 64-bit keys take two sorts, half a value
    /// each. At most 2^32 - 1 pairs in all.
    pub fn sort_by_key_shards<K: SortKey, V: DeviceRepr>(
        &self,
        keys: &[CudaView<K>],
        values: &[CudaView<V>],
        order: Order,
        algorithm: Algorithm,
    ) -> Result<SortedPairs<K, V>> {
        self.check_shards(keys)?;
        self.check_shards(values)?;
        for (k, v) in keys.iter().zip(values) {
            check_same_len(k.len(), v.len())?;
        }
        let (key_bytes, value_bytes) = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
        if !matches!(key_bytes, 4 | 8) || !matches!(value_bytes, 4 | 8) {
            return Err(Error::UnsupportedKeyValue {
                key_bytes,
                value_bytes,
            });
        }
        // A 64-bit key leaves a word 4 bytes for the value: an 8-byte value travels in two
        // sorts, its low half in the first, its high half in the second. The words order by
        // (key, position) alone, so both sorts put every pair in the same place.
        let halves: &[Option<u32>] = if (key_bytes, value_bytes) == (8, 8) {
            &[Some(0), Some(1)]
        } else {
            &[None]
        };
        let lens: Vec<usize> = keys.iter().map(CudaView::len).collect();
        let total: usize = lens.iter().sum();
        if total > u32::MAX as usize {
            return Err(Error::TooLong {
                len: total,
                max: u32::MAX as usize,
            });
        }
        self.guarded(|| {
            let capacity = capacities(&lens, algorithm);
            let map = map_flags::<K>(order);
            let mut out_keys: Vec<DeviceShard<K>> = Vec::with_capacity(self.ranks());
            let mut out_values: Vec<DeviceShard<V>> = Vec::with_capacity(self.ranks());
            for &half in halves {
                let mut words = Vec::with_capacity(self.ranks());
                let mut first = 0u64;
                for rank in 0..self.ranks() {
                    let gpu = self.gpu(rank);
                    let mut buf = alloc::<KeyIndex>(gpu, capacity[rank])?;
                    let (k, v) = (&keys[rank], &values[rank]);
                    launch_pack::<K, V>(gpu, k, v, &mut buf, first, map, half)?;
                    first += lens[rank] as u64;
                    words.push(buf);
                }
                let sorted = self.sort_words(words, &lens, algorithm)?;
                for (rank, shard) in sorted.iter().enumerate() {
                    let gpu = self.gpu(rank);
                    if out_keys.len() == rank {
                        out_keys.push(DeviceShard::alloc(gpu, shard.len)?);
                        out_values.push(DeviceShard::alloc(gpu, shard.len)?);
                    }
                    let (k, v) = (&mut out_keys[rank], &mut out_values[rank]);
                    assert_eq!(k.len, shard.len, "both halves' sorts split alike");
                    let words = shard.view(shard.len);
                    launch_unpack::<K, V>(gpu, &words, &mut k.buf, &mut v.buf, map, half)?;
                }
            }
            Ok((out_keys, out_values))
        })
    }

    /// Sorts host keys and values across the ranks ([`MultiGpu::sort_by_key_shards`]).
    pub fn sort_by_key_host<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        order: Order,
        algorithm: Algorithm,
    ) -> Result<()> {
        check_same_len(keys.len(), values.len())?;
        let (key_shards, value_shards) = (self.upload(keys)?, self.upload(values)?);
        let (sorted_keys, sorted_values) = self.sort_by_key_shards(
            &DeviceShard::views(&key_shards),
            &DeviceShard::views(&value_shards),
            order,
            algorithm,
        )?;
        drop((key_shards, value_shards));
        self.download(&sorted_keys, keys)?;
        self.download(&sorted_values, values)
    }

    /// One shard per rank, each on its rank's GPU, none longer than one sort takes.
    fn check_shards<T>(&self, shards: &[CudaView<T>]) -> Result<()> {
        if shards.len() != self.ranks() {
            return Err(Error::ShardCount {
                shards: shards.len(),
                ranks: self.ranks(),
            });
        }
        for (rank, shard) in shards.iter().enumerate() {
            let (buffer, sorter) = (
                shard.stream().context().ordinal(),
                self.gpu(rank).info().ordinal,
            );
            if buffer != sorter {
                return Err(Error::WrongDevice { buffer, sorter });
            }
            check_len(shard.len())?;
        }
        Ok(())
    }

    /// Runs a sort and waits for every GPU; on any error, aborts the communicators, since peers
    /// may wait on transfers that will never come.
    fn guarded<T>(&self, sort: impl FnOnce() -> Result<T>) -> Result<T> {
        if self.comms.borrow().is_none() && self.gpus.len() > 1 {
            return Err(Error::Nccl {
                context: "starting a sort".into(),
                cause:
                    "the communicators were aborted after an earlier failure; make a new MultiGpu"
                        .into(),
            });
        }
        let result = sort().and_then(|sorted| self.synchronize().map(|()| sorted));
        if result.is_err() {
            drop(self.comms.borrow_mut().take());
        }
        result
    }

    /// Sorts the words of all ranks (rank r's first `lens[r]` words of `words[r]`, mapped to
    /// ascending order) into global order; returns each rank's part.
    fn sort_words<W: Word>(
        &self,
        words: Vec<CudaSlice<W>>,
        lens: &[usize],
        algorithm: Algorithm,
    ) -> Result<Vec<Shard<W>>> {
        match algorithm {
            Algorithm::MergeSplit => self.merge_split(words, lens),
            Algorithm::Partition => self.partition(words, lens),
        }
    }

    fn synchronize(&self) -> Result<()> {
        for gpu in &self.gpus {
            gpu.stream()
                .synchronize()
                .during(|| format!("waiting for GPU {}", gpu.info().ordinal))?;
        }
        Ok(())
    }

    /// The bitonic network over ranks with merge-split comparators. Each buffer holds at
    /// least M words (M = the longest shard rounded up to a power of two).
    fn merge_split<W: Word>(
        &self,
        words: Vec<CudaSlice<W>>,
        lens: &[usize],
    ) -> Result<Vec<Shard<W>>> {
        let p = self.ranks();
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
            let gpu = self.gpu(rank);
            launch_fill_largest(gpu, &mut buf.slice_mut(lens[rank]..m))?;
            run::sort_ascending_words(gpu, &gpu.policy(), &mut buf.slice_mut(0..m))?;
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
            let gpu = self.gpu(rank);
            received.push(alloc::<W>(gpu, m)?);
            spare.push(alloc::<W>(gpu, m)?);
        }
        for round in merge_split_rounds(p) {
            // Where each pair's halves turn: the lower rank keeps its first `turn` keys and the
            // upper's first m - turn; the upper keeps the rest. Only those move.
            let turns: Vec<usize> = round
                .iter()
                .map(|&(lower, upper)| {
                    self.find_turn(&shards[lower], &shards[upper], lower, upper, m)
                })
                .collect::<Result<_>>()?;
            let moving: Vec<(usize, usize, usize)> = round
                .iter()
                .zip(&turns)
                .filter(|&(_, &turn)| turn < m) // turn == m: each keeps its own keys
                .map(|(&(lower, upper), &turn)| (lower, upper, turn))
                .collect();
            self.exchange_round(&moving, &shards, m, &mut received)?;
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
                    merge_two_runs(self.gpu(rank), &self.gpu(rank).policy(), &a, &b, &mut spare[rank].slice_mut(0..m))?;
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
        &self,
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
        self.transfer(&transfers, received)
    }

    /// The turn of a merge-split of two sorted shards A (lower rank) and B (upper), m keys
    /// each: the first j with B[m-1-j] < A[j] (m if none), found on the host from a sample
    /// of both shards and then the window of keys between two samples. A few small copies
    /// instead of moving whole shards: in later rounds the turn is often at an end.
    fn find_turn<B: Word>(
        &self,
        a: &Shard<B>,
        b: &Shard<B>,
        lower: usize,
        upper: usize,
        m: usize,
    ) -> Result<usize> {
        let (gpu_a, gpu_b) = (self.gpu(lower), self.gpu(upper));
        let samples = m.min(4096);
        let at: Vec<usize> = (0..samples).map(|t| t * m / samples).collect();
        let a_at = take(
            gpu_a,
            &a.buf,
            &at.iter().map(|&j| a.start + j).collect::<Vec<_>>(),
        )?;
        let b_at = take(
            gpu_b,
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

    /// Queues `transfers` (each from a view on rank `from` into rank `to`'s `received` buffer):
    /// device copies between ranks of one GPU, and NCCL sends and receives, all in one group.
    fn transfer<B: Word>(
        &self,
        transfers: &[Transfer<B>],
        received: &mut [CudaSlice<B>],
    ) -> Result<()> {
        let comms = self.comms.borrow();
        let mut grouped = false;
        let mut result = Ok(());
        for t in transfers {
            if t.src.is_empty() {
                continue;
            }
            let mut dst = received[t.to].slice_mut(t.at..t.at + t.src.len());
            let (from_dev, to_dev) = (self.device_of[t.from], self.device_of[t.to]);
            if from_dev == to_dev {
                result = self.gpus[from_dev]
                    .stream()
                    .memcpy_dtod(&t.src, &mut dst)
                    .during(|| format!("copying rank {}'s shard to rank {}", t.from, t.to));
            } else {
                let comms = comms.as_ref().expect("several GPUs have communicators");
                if !grouped {
                    nccl::group_start().map_err(nccl_error("starting an NCCL group"))?;
                    grouped = true;
                }
                // NCCL matches the k-th send from one GPU to another with the k-th receive
                // there: both are queued here in the same order.
                let bytes = t.src.len() * std::mem::size_of::<B>();
                let src = unsafe { t.src.transmute::<u8>(bytes) }.expect("same bytes");
                let mut dst = unsafe { dst.transmute_mut::<u8>(bytes) }.expect("same bytes");
                result = comms[from_dev]
                    .send(&src, to_dev as i32)
                    .map_err(nccl_error("queuing a send"))
                    .and_then(|()| {
                        comms[to_dev]
                            .recv(&mut dst, from_dev as i32)
                            .map(drop)
                            .map_err(nccl_error("queuing a receive"))
                    });
            }
            if result.is_err() {
                break;
            }
        }
        if grouped {
            let ended = nccl::group_end()
                .map(drop)
                .map_err(nccl_error("ending an NCCL group"));
            result = result.and(ended);
        }
        result
    }

    /// Sample sort: local sorts, splitters, one all-to-all, a merge of the runs that arrived.
    fn partition<W: Word>(
        &self,
        mut words: Vec<CudaSlice<W>>,
        lens: &[usize],
    ) -> Result<Vec<Shard<W>>> {
        let p = self.ranks();
        let total: usize = lens.iter().sum();
        // All local sorts are queued before any sample is read, so that the GPUs sort at once.
        for (rank, buf) in words.iter_mut().enumerate() {
            let len = lens[rank];
            let gpu = self.gpu(rank);
            run::sort_ascending_words(gpu, &gpu.policy(), &mut buf.slice_mut(0..len))?;
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
            received.push(alloc::<W>(self.gpu(rank), expected)?);
            spare.push(alloc::<W>(self.gpu(rank), expected)?);
        }
        let mut samples = Vec::new();
        for (rank, &len) in lens.iter().enumerate() {
            let positions = sample_positions(len, total, p);
            let keys = take(self.gpu(rank), &words[rank], &positions)?;
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
            let found = count_below(self.gpu(rank), &words[rank], len, &splitters, rank)?;
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
                received[rank] = alloc::<W>(self.gpu(rank), pool_friendly(len))?;
                spare[rank] = alloc::<W>(self.gpu(rank), pool_friendly(len))?;
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
        self.transfer(&transfers, &mut received)?;
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
                        self.gpu(rank),
                        &self.gpu(rank).policy(),
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
}

/// The sorted keys and their values, one shard of each per rank.
pub type SortedPairs<K, V> = (Vec<DeviceShard<K>>, Vec<DeviceShard<V>>);

/// A rank's keys on its GPU: `len` of them from `start` in `buf`. The multi-GPU sort returns
/// its result so, without copying it out of its working buffers.
pub struct DeviceShard<K> {
    buf: CudaSlice<K>,
    start: usize,
    len: usize,
}

impl<K> std::fmt::Debug for DeviceShard<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceShard")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

impl<K: cudarc::driver::DeviceRepr> DeviceShard<K> {
    /// A new shard of `len` uninitialised values on `gpu`.
    fn alloc(gpu: &Gpu, len: usize) -> Result<DeviceShard<K>> {
        Ok(DeviceShard {
            buf: alloc::<K>(gpu, len)?,
            start: 0,
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn view(&self) -> CudaView<'_, K> {
        self.buf.slice(self.start..self.start + self.len)
    }

    /// The views of all shards, to sort them again, for instance.
    pub fn views(shards: &[DeviceShard<K>]) -> Vec<CudaView<'_, K>> {
        shards.iter().map(DeviceShard::view).collect()
    }

    /// The buffer and where the keys lie in it.
    pub fn into_parts(self) -> (CudaSlice<K>, std::ops::Range<usize>) {
        (self.buf, self.start..self.start + self.len)
    }

    /// Hands a buffer of sortable words over as a buffer of keys of the same width.
    fn of_words<B: Bits>(
        gpu: &Gpu,
        words: CudaSlice<B>,
        start: usize,
        len: usize,
    ) -> DeviceShard<K> {
        assert_eq!(std::mem::size_of::<B>(), std::mem::size_of::<K>());
        let count = words.len();
        // SAFETY: the allocation holds `count` words of K's size, and every bit pattern of a
        // word is a valid key (SortKey's contract).
        let buf = unsafe { gpu.stream().upgrade_device_ptr::<K>(words.leak(), count) };
        DeviceShard { buf, start, len }
    }
}

/// A rank's sorted words: `len` of them from `start` in `buf`.
struct Shard<W> {
    buf: CudaSlice<W>,
    start: usize,
    len: usize,
}

impl<W: Word> Shard<W> {
    /// The first `count` words.
    fn view(&self, count: usize) -> CudaView<'_, W> {
        self.buf.slice(self.start..self.start + count)
    }
}

/// What the passes of a multi-GPU sort move and compare: sortable u32 and u64 words, and the
/// 16-byte words of a key-value sort. The host compares them in the GPU's order.
pub(super) trait Word: Copy + Ord + DeviceRepr + 'static {}
impl<B: Bits> Word for B {}
impl Word for KeyIndex {}

/// Buffer lengths for each rank's words: merge-split pads every shard to the longest, m
/// words; partition sorts each shard where it is.
fn capacities(lens: &[usize], algorithm: Algorithm) -> Vec<usize> {
    let m = lens.iter().copied().max().unwrap_or(0);
    match algorithm {
        Algorithm::MergeSplit => vec![m; lens.len()],
        Algorithm::Partition => lens.to_vec(),
    }
}

/// Packs a rank's keys and values into key-value words (kernels/multi.cu); `first` is the
/// global position of its first pair.
fn launch_pack<K: SortKey, V: DeviceRepr>(
    gpu: &Gpu,
    keys: &CudaView<K>,
    values: &CudaView<V>,
    out: &mut CudaSlice<KeyIndex>,
    first: u64,
    map: u32,
    half: Option<u32>,
) -> Result<()> {
    let n = keys.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let name = pack_kernel::<K, V>("pack");
    let f = gpu.function(&kernels::MULTI, &name)?;
    let keys = unsafe { keys.transmute::<K::Bits>(keys.len()) }.expect("same size");
    let mut launch = gpu.stream().launch_builder(&f);
    launch
        .arg(&keys)
        .arg(values)
        .arg(out)
        .arg(&n)
        .arg(&first)
        .arg(&map);
    if let Some(half) = &half {
        launch.arg(half);
    }
    unsafe { launch.launch(gpu.elementwise(n as usize)) }
        .map(drop)
        .during(|| format!("launching {name}"))
}

/// Unpacks sorted key-value words into keys and values (with `half`, one half of each
/// 8-byte value).
fn launch_unpack<K: SortKey, V: DeviceRepr>(
    gpu: &Gpu,
    words: &CudaView<KeyIndex>,
    keys: &mut CudaSlice<K>,
    values: &mut CudaSlice<V>,
    map: u32,
    half: Option<u32>,
) -> Result<()> {
    let n = words.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let name = pack_kernel::<K, V>("unpack");
    let f = gpu.function(&kernels::MULTI, &name)?;
    let mut launch = gpu.stream().launch_builder(&f);
    launch.arg(words).arg(keys).arg(values).arg(&n).arg(&map);
    if let Some(half) = &half {
        launch.arg(half);
    }
    unsafe { launch.launch(gpu.elementwise(n as usize)) }
        .map(drop)
        .during(|| format!("launching {name}"))
}

/// `pack_kv32_u32`, `pack_kv32_u64`, `pack_kv64_u32`, `pack_kv64_u64` (and `unpack_…`): key
/// width, value width.
fn pack_kernel<K, V>(what: &str) -> String {
    let key = if std::mem::size_of::<K>() == 4 {
        "kv32"
    } else {
        "kv64"
    };
    format!("{what}_{key}_u{}", 8 * std::mem::size_of::<V>())
}

/// One message of a round: a view on rank `from` into rank `to`'s receive buffer.
struct Transfer<'a, B> {
    from: usize,
    to: usize,
    src: CudaView<'a, B>,
    /// Where the message goes in rank `to`'s receive buffer.
    at: usize,
}

/// `len` keys split into `parts` ranges as evenly as possible.
pub fn even_split(len: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    (0..parts)
        .map(|r| (r * len / parts)..((r + 1) * len / parts))
        .collect()
}

/// An uninitialised buffer of `len` values, or of one when `len` is 0 (CUDA makes no empty
/// allocation; an empty shard's buffer is then unused).
fn alloc<T: cudarc::driver::DeviceRepr>(gpu: &Gpu, len: usize) -> Result<CudaSlice<T>> {
    unsafe { gpu.stream().alloc::<T>(len.max(1)) }.during(|| {
        format!(
            "allocating {} MiB on GPU {}",
            (len * std::mem::size_of::<T>()) >> 20,
            gpu.info().ordinal
        )
    })
}

/// A buffer length of at least `len` from a few sizes only (a multiple of 1/32 to 1/64 of
/// `len`), so that buckets a little larger or smaller than last time reuse the buffers the
/// memory pool kept instead of mapping new memory.
fn pool_friendly(len: usize) -> usize {
    let granule = 1usize << (usize::BITS - len.leading_zeros()).saturating_sub(6);
    len.next_multiple_of(granule)
}

/// Copies a shard of keys into the front of a word buffer of the same GPU.
fn copy_in<K: SortKey>(gpu: &Gpu, input: &CudaView<K>, buf: &mut CudaSlice<K::Bits>) -> Result<()> {
    if input.is_empty() {
        return Ok(());
    }
    let src = unsafe { input.transmute::<K::Bits>(input.len()) }.expect("same size");
    gpu.stream()
        .memcpy_dtod(&src, &mut buf.slice_mut(0..input.len()))
        .during(|| "copying a shard".into())
}

fn map_to_words<K: SortKey>(
    gpu: &Gpu,
    words: &mut CudaViewMut<K::Bits>,
    order: Order,
    inverse: bool,
) -> Result<()> {
    if K::DTYPE.needs_map(order) && !words.is_empty() {
        run::map_keys(gpu, words, K::DTYPE.map_kind(), order, inverse)?;
    }
    Ok(())
}

fn launch_fill_largest<B: Word>(gpu: &Gpu, words: &mut CudaViewMut<B>) -> Result<()> {
    let n = words.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let f = gpu.function(&kernels::MULTI, &kernel_name::<B>("fill_largest"))?;
    let mut launch = gpu.stream().launch_builder(&f);
    launch.arg(words).arg(&n);
    unsafe { launch.launch(gpu.elementwise(n as usize)) }
        .map(drop)
        .during(|| "launching fill_largest".into())
}

/// The words of `buf` at `positions` (a few dozen), copied to the host.
fn take<B: Word>(gpu: &Gpu, buf: &CudaSlice<B>, positions: &[usize]) -> Result<Vec<B>> {
    if positions.is_empty() {
        return Ok(Vec::new());
    }
    let stream = gpu.stream();
    let at: Vec<u64> = positions.iter().map(|&p| p as u64).collect();
    let at = stream
        .clone_htod(&at)
        .during(|| "copying sample positions".into())?;
    let mut out = alloc::<B>(gpu, positions.len())?;
    let f = gpu.function(&kernels::MULTI, &kernel_name::<B>("take"))?;
    let count = positions.len() as u32;
    let mut launch = stream.launch_builder(&f);
    launch.arg(buf).arg(&at).arg(&mut out).arg(&count);
    unsafe { launch.launch(search_grid(count)) }.during(|| "launching take".into())?;
    stream
        .clone_dtoh(&out)
        .during(|| "copying samples back".into())
}

/// Where each splitter cuts rank `rank`'s sorted `len` words: `splitters.len()` positions.
fn count_below<B: Word>(
    gpu: &Gpu,
    buf: &CudaSlice<B>,
    len: usize,
    splitters: &[Splitter<B>],
    rank: usize,
) -> Result<Vec<usize>> {
    let cuts: Vec<Cut<B>> = splitters.iter().map(|s| cut_for(s, rank)).collect();
    let queries: Vec<(B, u32)> = cuts
        .iter()
        .filter_map(|c| match *c {
            Cut::Below { key, or_equal } => Some((key, or_equal as u32)),
            Cut::At(_) => None,
        })
        .collect();
    let mut found = Vec::new();
    if !queries.is_empty() {
        let stream = gpu.stream();
        let keys: Vec<B> = queries.iter().map(|q| q.0).collect();
        let upper: Vec<u32> = queries.iter().map(|q| q.1).collect();
        let keys = stream
            .clone_htod(&keys)
            .during(|| "copying splitters".into())?;
        let upper = stream
            .clone_htod(&upper)
            .during(|| "copying splitters".into())?;
        let mut out = alloc::<u64>(gpu, queries.len())?;
        let f = gpu.function(&kernels::MULTI, &kernel_name::<B>("count_below"))?;
        let (n, count) = (len as u64, queries.len() as u32);
        let mut launch = stream.launch_builder(&f);
        launch
            .arg(buf)
            .arg(&n)
            .arg(&keys)
            .arg(&upper)
            .arg(&mut out)
            .arg(&count);
        unsafe { launch.launch(search_grid(count)) }.during(|| "launching count_below".into())?;
        found = stream
            .clone_dtoh(&out)
            .during(|| "copying cuts back".into())?;
    }
    let mut found = found.into_iter();
    Ok(cuts
        .iter()
        .map(|c| match *c {
            Cut::At(index) => index,
            Cut::Below { .. } => found.next().expect("one answer a query") as usize,
        })
        .collect())
}

/// The multi-GPU benchmark's device-side helpers: random shards and their checks.
pub mod bench {
    use super::*;

    /// Fills `keys` with the random words of global positions `first ..`: the same data
    /// whatever the split.
    pub fn fill_random<B: Bits>(
        gpu: &Gpu,
        keys: &mut CudaViewMut<B>,
        first: u64,
        seed: u64,
    ) -> Result<()> {
        let n = keys.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let f = gpu.function(&kernels::MULTI, &kernel_name::<B>("fill_random"))?;
        let mut launch = gpu.stream().launch_builder(&f);
        launch.arg(keys).arg(&n).arg(&first).arg(&seed);
        unsafe { launch.launch(gpu.elementwise(n as usize)) }
            .map(drop)
            .during(|| "launching fill_random".into())
    }

    /// (sum of a hash of every word, count of descents) of `keys`: the hash sum is the same
    /// for any order of the same words; a sorted shard has no descent.
    pub fn checksum<B: Bits>(gpu: &Gpu, keys: &CudaView<B>) -> Result<(u64, u64)> {
        let stream = gpu.stream();
        let mut sums = stream
            .alloc_zeros::<u64>(2)
            .during(|| "allocating a checksum".into())?;
        let n = keys.len() as u64;
        if n > 0 {
            let f = gpu.function(&kernels::MULTI, &kernel_name::<B>("check_sorted"))?;
            let mut launch = stream.launch_builder(&f);
            launch.arg(keys).arg(&n).arg(&mut sums);
            unsafe { launch.launch(gpu.elementwise(n as usize)) }
                .during(|| "launching check_sorted".into())?;
        }
        let sums = stream
            .clone_dtoh(&sums)
            .during(|| "copying a checksum back".into())?;
        Ok((sums[0], sums[1]))
    }

    /// The first and last word of a non-empty shard.
    pub fn ends<B: Bits>(gpu: &Gpu, keys: &CudaView<B>) -> Result<Option<(B, B)>> {
        if keys.is_empty() {
            return Ok(None);
        }
        let read = |at: usize| {
            gpu.stream()
                .clone_dtoh(&keys.slice(at..at + 1))
                .during(|| "reading a shard's ends".into())
        };
        Ok(Some((read(0)?[0], read(keys.len() - 1)?[0])))
    }

    /// The most keys a rank sorts.
    pub const RANK_MAX: usize = MAX_LEN;
}

#[cfg(test)]
mod tests {
    use super::pool_friendly;

    #[test]
    fn buckets_near_one_size_share_a_few_buffer_lengths() {
        assert_eq!(pool_friendly(0), 0);
        assert_eq!(pool_friendly(1), 1);
        let share = 1usize << 30;
        let mut lengths: Vec<usize> = (0..1000)
            .map(|k| share - (1 << 22) + k * 8389)
            .map(pool_friendly)
            .collect();
        lengths.dedup();
        assert!(lengths.len() <= 2, "{lengths:?}");
        for len in [1usize, 63, 64, 65, 1000, 123_456_789, share + 1] {
            let capacity = pool_friendly(len);
            assert!(
                capacity >= len && capacity <= len + len / 32,
                "{len} -> {capacity}"
            );
        }
    }
}
