//! Sorting across the GPUs of one host, through NCCL.
//!
//! Each *rank* holds one shard on one GPU. Every rank sorts its shard with the tuned version;
//! then the shards are merged across ranks by one of the two algorithms of [`crate::multi`],
//! which also runs them over simulated ranks on the CPU with the same schedule
//! (`merge_split_rounds`) and the same splitter rules (`choose_splitters`, `cut_for`):
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
//! words for key-value pairs (`sort_pairs_shards`), which makes that sort stable.
//!
//! One host thread drives all GPUs: NCCL wants every rank's sends and receives of a round in one
//! group when one thread owns several GPUs, and the kernels of all GPUs run concurrently since
//! every launch is asynchronous. Several ranks may share a GPU (an input larger than one sort's
//! [`crate::plan::MAX_LEN`] on one GPU is sorted as two ranks there); they swap shards with device copies.
//!
//! Failures: every allocation of a round is made before any of its transfers is queued, and
//! any error aborts the communicators (`ncclCommAbort`), so a failing GPU turns into this
//! library's error for the whole sort — no hang, and no partial result returned as sorted.

#[cfg(feature = "bench")]
pub mod bench;
mod gathers;
mod merge_split;
mod nccl;
mod partition;
mod process;
mod shards;

pub(crate) use shards::take;

pub use nccl::{nccl_present, new_unique_id, NCCL_ID_BYTES};
pub use process::{ProcessRank, RankSorted, RankSortedPairs};
pub use shards::{even_split, DeviceShard, SortedPairs};

use super::driver::set_default_pool_threshold;
use super::Gpu;
use crate::error::{check_same_len, CudaContext as _, Error, GpuUnavailable, Result};
use crate::kernels::abi::map_flags;
use crate::key::KeyOrder;
use crate::multi::Algorithm;
use crate::{Order, SortKey};
use cudarc::driver::{CudaSlice, CudaView, DeviceRepr};
use cudarc::nccl::result::{group_end, group_start};
use cudarc::nccl::safe::Comm;
use nccl::{check_nccl, nccl_error, receive_words, send_words};
use shards::{
    alloc, capacities, check_pair_count, check_shard, keys_of_words, unpack_pairs, value_halves,
    words_of_keys, words_of_pairs, Shard, Transfer, Word,
};
use std::cell::RefCell;

/// Sorts keys spread over several GPUs (or several ranks of one GPU).
///
/// Neither `Send` nor `Sync`: the thread that makes a `MultiGpu` drives all of its GPUs,
/// because NCCL wants every rank's sends and receives of a round in one group from one thread,
/// and cudarc's NCCL communicators (raw handles) are not `Send`. A program that sorts from
/// several threads makes one `MultiGpu` in each, or sends the keys to the thread that owns it.
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<bitonic::cuda::multi::MultiGpu>();
/// ```
pub struct MultiGpu {
    /// One per distinct device, in the order first named.
    gpus: Vec<Gpu>,
    /// Rank r's shard lives on `gpus[device_of[r]]`.
    device_of: Vec<usize>,
    /// One NCCL communicator per GPU when there are several; `None` once a failure aborted
    /// them (a new `MultiGpu` makes new ones).
    comms: RefCell<Option<Vec<Comm>>>,
    /// Whether the GPUs' memory pools keep freed memory at the caller's request
    /// ([`MultiGpu::keep_freed_memory`]), to be handed back when this is dropped.
    keeps_memory: std::cell::Cell<bool>,
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
        // Hand back what the pools kept at the caller's request: the driver's setting keeps
        // none. Nothing to report an error to in drop.
        if self.keeps_memory.get() {
            for gpu in &self.gpus {
                let _ = set_default_pool_threshold(gpu.context(), 0, true);
            }
        }
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
        let comms = if gpus.len() > 1 {
            check_nccl()?;
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
            keeps_memory: std::cell::Cell::new(false),
        })
    }

    /// Lets every GPU's memory pool keep the memory a sort frees until this `MultiGpu` is
    /// dropped: a large sort's buffers would otherwise be mapped afresh each sort (~50 ms for
    /// 2^32 keys on one GPU). This changes the devices' default pools for the whole process
    /// while it lasts, which is why it is asked for, not done by default.
    pub fn keep_freed_memory(&self) -> Result<()> {
        for gpu in &self.gpus {
            set_default_pool_threshold(gpu.context(), gpu.info().total_memory, false).during(
                || {
                    format!(
                        "letting GPU {}'s memory pool keep memory",
                        gpu.info().ordinal
                    )
                },
            )?;
        }
        self.keeps_memory.set(true);
        Ok(())
    }

    /// One rank on each visible device.
    pub fn all() -> Result<MultiGpu> {
        let count = Gpu::device_count()?;
        MultiGpu::new(&(0..count).collect::<Vec<_>>())
    }

    /// How many ranks (one a device given) sort together.
    pub fn ranks(&self) -> usize {
        self.device_of.len()
    }

    /// The GPU of rank `rank`.
    pub fn gpu(&self, rank: usize) -> &Gpu {
        &self.gpus[self.device_of[rank]]
    }

    /// Copies `keys` to the ranks, split as evenly as possible.
    pub fn upload<K: DeviceRepr + bytemuck::Pod>(&self, keys: &[K]) -> Result<Vec<DeviceShard<K>>> {
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
    pub fn download<K: DeviceRepr + bytemuck::Pod>(
        &self,
        shards: &[DeviceShard<K>],
        out: &mut [K],
    ) -> Result<()> {
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
    /// fewer on the last ones (`merge_split_share`); partition returns each rank its bucket.
    /// Returns when the sort is done (all GPUs synchronized). 16-bit keys are refused
    /// ([`Error::Unsupported`]).
    pub fn sort_shards<K: SortKey>(
        &self,
        shards: &[CudaView<K>],
        order: Order,
        algorithm: Algorithm,
    ) -> Result<Vec<DeviceShard<K>>> {
        if crate::key::is_narrow::<K>() {
            return Err(Error::Unsupported("16-bit keys in multi-GPU sorts"));
        }
        self.check_shards(shards)?;
        self.guarded(|| {
            let lens: Vec<usize> = shards.iter().map(CudaView::len).collect();
            let capacity = capacities(&lens, algorithm);
            let mut words = Vec::with_capacity(self.ranks());
            for (rank, input) in shards.iter().enumerate() {
                words.push(words_of_keys(self.gpu(rank), input, capacity[rank], order)?);
            }
            let sorted = self.sort_words(words, &lens, algorithm)?;
            sorted
                .into_iter()
                .enumerate()
                .map(|(rank, shard)| keys_of_words(self.gpu(rank), shard, order))
                .collect()
        })
    }

    /// Sorts (key, value) pairs spread one shard of each per rank: the values follow their
    /// keys, and equal keys keep their order of input (rank by rank), so the sort is stable.
    /// Keys and values of 4 or 8 bytes; each pair travels as one 16-byte word
    /// (kernels/multi.cu), and 8-byte values with 64-bit keys take two sorts, half a value
    /// each. At most 2^32 - 1 pairs in all.
    pub fn sort_pairs_shards<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
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
        let halves = value_halves::<K, V>()?;
        let lens: Vec<usize> = keys.iter().map(CudaView::len).collect();
        check_pair_count(lens.iter().sum())?;
        self.guarded(|| {
            let capacity = capacities(&lens, algorithm);
            let map = map_flags(K::DTYPE, KeyOrder::of(order));
            let mut out: Vec<Option<(DeviceShard<K>, DeviceShard<V>)>> =
                (0..self.ranks()).map(|_| None).collect();
            for &half in halves {
                let mut words = Vec::with_capacity(self.ranks());
                let mut first = 0u64;
                for rank in 0..self.ranks() {
                    let (gpu, pairs) = (self.gpu(rank), (&keys[rank], &values[rank]));
                    let packed = words_of_pairs(gpu, pairs, capacity[rank], first, (map, half))?;
                    words.push(packed);
                    first += lens[rank] as u64;
                }
                let sorted = self.sort_words(words, &lens, algorithm)?;
                for (rank, shard) in sorted.iter().enumerate() {
                    unpack_pairs(self.gpu(rank), shard, &mut out[rank], (map, half))?;
                }
            }
            Ok(out
                .into_iter()
                .map(|pair| pair.expect("at least one sort"))
                .unzip())
        })
    }

    /// Sorts host keys and values across the ranks ([`MultiGpu::sort_pairs_shards`]).
    pub fn sort_pairs_host<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        order: Order,
        algorithm: Algorithm,
    ) -> Result<()> {
        check_same_len(keys.len(), values.len())?;
        let (key_shards, value_shards) = (self.upload(keys)?, self.upload(values)?);
        let (sorted_keys, sorted_values) = self.sort_pairs_shards(
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
            check_shard(shard, self.gpu(rank))?;
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
            Algorithm::MergeSplit => merge_split::sort(self, words, lens),
            Algorithm::Partition => partition::sort(self, words, lens),
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
                    group_start().map_err(nccl_error("starting an NCCL group"))?;
                    grouped = true;
                }
                // NCCL matches the k-th send from one GPU to another with the k-th receive
                // there: both are queued here in the same order.
                result = send_words(&comms[from_dev], &t.src, to_dev)
                    .and_then(|()| receive_words(&comms[to_dev], dst, from_dev));
            }
            if result.is_err() {
                break;
            }
        }
        if grouped {
            let ended = group_end()
                .map(drop)
                .map_err(nccl_error("ending an NCCL group"));
            result = result.and(ended);
        }
        result
    }
}
