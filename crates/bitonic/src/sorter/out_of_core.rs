//! Host sorts past the GPU's memory (issue 54): [`Sorter::sort_large`] carries out the plan of
//! src/plan/out_of_core.rs. Runs are sorted on the GPU; then the merge of every run kept on the
//! GPU (two streams: copies on one, sorts on the other), the backward merge of two runs with
//! the last kept on the GPU, or the forward merge of many runs in blocks, whose blocks are put
//! in order on the host at the end. Every merge piece or block is sorted on the GPU (its keys
//! are a few sorted slices: any sort merges them). Copies go through the pinned staging of
//! src/cuda/staging.rs.

use super::schedule::{
    join, merge_word, two_buffer_sets, two_streams, HostItems, ItemBuffers, Settle, Word,
};
use super::{check_index_width, during_merge, Sorter};
use crate::cuda::exec::Exec;
use crate::cuda::staging::parallel_copy;
use crate::cuda::{memory, run, transfer};
use crate::error::{check_same_len, CudaContext as _, Error, Result};
use crate::options::Backend;
use crate::plan::merge::co_rank_with;
use crate::plan::out_of_core::{
    block_merge_by, merge_pieces, order_blocks, plan_out_of_core, plan_out_of_core_pairs, Merge,
    OutOfCorePlan, Slot,
};
use crate::plan::{Layout, Operation, Plan};
use crate::{SortIndex, SortKey};
use cudarc::driver::{CudaEvent, CudaSlice, CudaView, CudaViewMut, DeviceRepr};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;

impl<'g> Sorter<'g> {
    /// Sorts `keys` in place like [`Sorter::sort`], also when they do not fit in the GPU's
    /// memory: the keys are sorted on the GPU in runs, and the runs are merged on the GPU back
    /// into `keys` (docs/design/out-of-core.md). Keys the GPU holds stay there while they merge
    /// (each crosses the link once each way); past that, runs go back to the host between the
    /// sort and the merge. Host memory beyond `keys` stays bounded: staging, and for more than
    /// two runs past the GPU's memory spare blocks of about a sixteenth of the keys
    /// ([`OutOfCorePlan::host_bytes`]). The device memory it takes is what the device has free
    /// when the call starts less a sixteenth, or [`Sorter::device_memory`]. Keys that one
    /// in-memory sort takes get it, but from [`crate::policy::HostPolicy::pipeline_from`] keys
    /// the runs' schedule pipelines the copies with the sorts. Returns the plan that ran.
    ///
    /// If the GPU fails during a merge, `keys` may have lost the keys that were on the GPU or
    /// in host staging (the error says so); [`Sorter::sort_large_into`] never writes its input.
    ///
    /// ```no_run
    /// let mut keys: Vec<u32> = (0..1u32 << 24).map(|i| i.wrapping_mul(2654435761)).collect();
    /// // A budget of 16 MiB of device memory: runs of a few million keys, merged.
    /// let plan = bitonic::Sorter::new().device_memory(16 << 20).sort_large(&mut keys)?;
    /// assert!(plan.runs.len() > 1 && keys.windows(2).all(|w| w[0] <= w[1]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_large<K: SortKey>(&self, keys: &mut [K]) -> Result<OutOfCorePlan> {
        self.large(None, keys)
    }

    /// [`Sorter::sort_large`] of `keys` into `out` (as long), `keys` left as they are: the runs
    /// are read from `keys` and written to `out`, where they merge.
    pub fn sort_large_into<K: SortKey>(&self, keys: &[K], out: &mut [K]) -> Result<OutOfCorePlan> {
        check_same_len(keys.len(), out.len())?;
        self.large(Some(keys), out)
    }

    /// [`Sorter::sort_pairs`] past one GPU sort and past the GPU's memory: `values` (of 4 or 8
    /// bytes) follow their keys, stably (equal keys keep their order). Pairs that one sort
    /// takes get it; pairs within the GPU's memory (or [`Sorter::device_memory`]) go through
    /// the schedule that keeps every run there
    /// ([`crate::plan::out_of_core::Merge::Resident`]); past it, runs merged in blocks through
    /// the host ([`crate::plan::out_of_core::Merge::Blocks`]: spare host blocks of keys and
    /// values, [`OutOfCorePlan::host_bytes`]). [`Error::DeviceMemory`] when not even one
    /// block's sort fits.
    pub fn sort_pairs_large<K: SortKey, V: bytemuck::Pod + Send + Sync>(
        &self,
        keys: &mut [K],
        values: &mut [V],
    ) -> Result<OutOfCorePlan> {
        check_same_len(keys.len(), values.len())?;
        let n = keys.len();
        match self.route_pairs::<K>(n, std::mem::size_of::<V>())? {
            PairsRoute::Runs(x, plan) => {
                self.runs_with_values(&x, &plan, (None, Some(keys)), values)?;
                Ok(plan)
            }
            PairsRoute::InMemory(plan) => {
                self.sort_pairs(keys, values)?;
                Ok(plan)
            }
        }
    }

    /// [`Sorter::argsort`] past one GPU sort and past the GPU's memory, as
    /// [`Sorter::sort_pairs_large`]: the indices are numbered on the host and travel as the
    /// keys' values; `keys` are left as they are (merged in blocks, the sorted runs' keys are
    /// read from `keys` through the runs' indices, a block at a time).
    pub fn argsort_large<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        indices: &mut [I],
    ) -> Result<OutOfCorePlan> {
        check_same_len(keys.len(), indices.len())?;
        check_index_width::<I>(keys.len())?;
        let n = keys.len();
        match self.route_pairs::<K>(n, std::mem::size_of::<I>())? {
            PairsRoute::Runs(x, plan) => {
                indices
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(i, index)| *index = I::from_usize(i));
                self.runs_with_values(&x, &plan, (Some(keys), None), indices)?;
                Ok(plan)
            }
            PairsRoute::InMemory(plan) => {
                self.argsort(keys, indices)?;
                Ok(plan)
            }
        }
    }

    /// Where a key-value sort (or argsort) of `n` keys `K` with values of `value_bytes` runs.
    fn route_pairs<K: SortKey>(&self, n: usize, value_bytes: usize) -> Result<PairsRoute<'_>> {
        let Some(gpu) = self.large_gpu()? else {
            return Ok(PairsRoute::InMemory(OutOfCorePlan::in_memory(
                n,
                K::DTYPE,
                0,
            )));
        };
        if !matches!(value_bytes, 4 | 8) {
            return Err(Error::Unsupported(
                "values of 4 or 8 bytes in out-of-core key-value sorts on the GPU",
            ));
        }
        let policy = self.policy_ref(gpu);
        let budget = self.budget(gpu)?;
        let plan = plan_out_of_core_pairs(gpu, policy, (K::DTYPE, value_bytes), n, budget)?;
        Ok(match plan.merge {
            Merge::None => PairsRoute::InMemory(plan),
            _ => PairsRoute::Runs(self.exec(gpu, policy), plan),
        })
    }

    /// The runs' schedule of `plan` on keys (read from the input, or from the output in
    /// place) with `values` of 4 or 8 bytes, moved as words of their size.
    fn runs_with_values<K: SortKey, V: bytemuck::Pod>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        (keys_in, keys_out): (Option<&[K]>, Option<&mut [K]>),
        values: &mut [V],
    ) -> Result<()> {
        if std::mem::size_of::<V>() == 4 {
            let values = Some(words_of::<V, u32>(values)?);
            let job = HostItems {
                keys_in,
                keys_out,
                values,
            };
            return self.merge_runs(x, plan, job);
        }
        let values = Some(words_of::<V, u64>(values)?);
        let job = HostItems {
            keys_in,
            keys_out,
            values,
        };
        self.merge_runs(x, plan, job)
    }

    /// Sorts the runs of `plan` and merges them, by its schedule of many runs: every run
    /// resident, or blocks.
    fn merge_runs<K: SortKey, V: Word>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        job: HostItems<K, V>,
    ) -> Result<()> {
        match plan.merge {
            Merge::Resident {
                piece_len,
                sample_gap,
            } => self.merge_every_run(x, plan, (piece_len, sample_gap), job),
            Merge::Blocks { block_len } => self.merge_blocks(x, plan, block_len, job),
            other => unreachable!("{other:?} is not a schedule of many runs"),
        }
    }

    /// The GPU of a large sort: the sorter's, or `None` where it runs on the CPU (a CPU
    /// backend, or no GPU with [`Backend::Auto`]).
    fn large_gpu(&self) -> Result<Option<&crate::cuda::Gpu>> {
        match self.backend {
            Backend::Cuda | Backend::Auto => match self.device() {
                Ok(gpu) => Ok(Some(gpu)),
                Err(why) if self.backend == Backend::Cuda => Err(Error::NoGpu(why)),
                Err(_) => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// The device memory a large sort may take: [`Sorter::device_memory`], else what `gpu`
    /// has free now less a sixteenth.
    fn budget(&self, gpu: &crate::cuda::Gpu) -> Result<usize> {
        match self.device_memory {
            Some(bytes) => Ok(bytes),
            None => {
                let free = gpu.free_memory()?;
                Ok(free - free / 16)
            }
        }
    }

    /// Sorts `input` (or `out` itself, when none) into `out`.
    fn large<K: SortKey>(&self, input: Option<&[K]>, out: &mut [K]) -> Result<OutOfCorePlan> {
        let n = out.len();
        let Some(gpu) = self.large_gpu()? else {
            copy_input(input, out);
            self.sort(out)?;
            return Ok(OutOfCorePlan::in_memory(n, K::DTYPE, 0));
        };
        let policy = self.policy_ref(gpu);
        let plan = plan_out_of_core(gpu, policy, K::DTYPE, n, self.budget(gpu)?)?;
        let x = self.exec(gpu, policy);
        match plan.merge {
            Merge::None => {
                copy_input(input, out);
                self.sort(out)?;
            }
            Merge::ResidentRun { piece_len } => {
                self.merge_resident(&x, &plan, piece_len, input, out)?
            }
            _ => {
                let job = HostItems::<K, u32> {
                    keys_in: input,
                    keys_out: Some(out),
                    values: None,
                };
                self.merge_runs(&x, &plan, job)?
            }
        }
        Ok(plan)
    }

    /// The two-run schedule: run A sorted into its place in `out`, run B sorted and kept on the
    /// GPU, then the pieces of the backward merge, last first, each written where every key of
    /// A has been read.
    fn merge_resident<K: SortKey>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        piece_len: usize,
        input: Option<&[K]>,
        out: &mut [K],
    ) -> Result<()> {
        let (a, b) = (plan.runs[0].clone(), plan.runs[1].clone());
        let run_a = input.map(|keys| &keys[a.clone()]);
        self.sort_run::<K, u32>(x, run_a, Some(&mut out[a.clone()]), None)?;
        let mut resident = transfer::upload(x, input.map_or(&out[b.clone()], |keys| &keys[b]))?;
        let nb = plan.len - a.len();
        self.sort_on_gpu(x, resident.slice_mut(0..nb))?;
        let word = merge_word::<K>(self.key_order(), false);
        // The merge path of each piece's start: A's words from the host, B's read from the GPU
        // one at a time (a bisection reads about 31 of them).
        let resident_word = |j: usize| -> Result<u64> {
            let mut one = [K::zeroed()];
            transfer::download(x, &resident.slice(j..j + 1), &mut one)?;
            Ok(word(one[0]))
        };
        let run_a = &out[a.clone()];
        let lens = (run_a.len(), nb);
        let pieces = merge_pieces(plan, |at| {
            co_rank_with(lens, at, |i, j| Ok(word(run_a[i]) <= resident_word(j)?))
        })?;
        let mut piece_keys = memory::alloc::<K>(x.stream, piece_len, || "a merge piece".into())?;
        for piece in pieces {
            let (from_a, from_b) = (piece.from_a.len(), piece.from_b.len());
            let len = from_a + from_b;
            let merged = (|| -> Result<()> {
                transfer::upload_into(x, &out[piece.from_a], piece_keys.slice_mut(0..from_a))?;
                if from_b > 0 {
                    let from = resident.slice(piece.from_b);
                    let mut to = piece_keys.slice_mut(from_a..len);
                    x.stream
                        .memcpy_dtod(&from, &mut to)
                        .during(|| "moving a piece of the resident run".into())?;
                }
                self.sort_on_gpu(x, piece_keys.slice_mut(0..len))?;
                transfer::download(x, &piece_keys.slice(0..len), &mut out[piece.output])
            })();
            merged.map_err(during_merge)?;
        }
        Ok(())
    }

    /// The many-run schedule: every run sorted into its place in the output (an argsort's
    /// runs: their indices alone), then each output block made on the GPU from its slices of
    /// the runs and written to a block of the output already read or to a spare host block,
    /// then the blocks put in order on the host. With values, the blocks sort stably and the
    /// cuts take ties in run order: equal keys keep their order.
    fn merge_blocks<K: SortKey, V: Word>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        block_len: usize,
        job: HostItems<K, V>,
    ) -> Result<()> {
        let HostItems {
            keys_in,
            mut keys_out,
            mut values,
        } = job;
        for run in &plan.runs {
            let run_in = keys_in.map(|keys| &keys[run.clone()]);
            let run_out = keys_out.as_deref_mut().map(|out| &mut out[run.clone()]);
            let run_values = values.as_deref_mut().map(|v| &mut v[run.clone()]);
            self.sort_run(x, run_in, run_out, run_values)?;
        }
        let with_values = values.is_some();
        let word = merge_word::<K>(self.key_order(), with_values);
        // The sorted runs: the output's keys, or an argsort's keys found through its indices.
        let blocks = match BlockSource::of(keys_in, keys_out.as_deref(), values.as_deref()) {
            BlockSource::Keys(sorted, _) => {
                block_merge_by(&parts_of(sorted, &plan.runs), block_len, |&key| word(key))
            }
            BlockSource::ThroughIndices { keys, indices } => {
                block_merge_by(&parts_of(indices, &plan.runs), block_len, |&i| {
                    word(keys[i.index()])
                })
            }
        };
        let n = plan.len;
        let block_range = |b: usize| b * block_len..((b + 1) * block_len).min(n);
        // Every host block the merge and the ordering use, allocated before anything is
        // written: the spares the schedule names and one for staging, for the keys and for
        // the values; an argsort's keys, gathered from the input, stage in one more.
        let spare_count = blocks
            .iter()
            .filter(|block| matches!(block.slot, Slot::Spare(_)))
            .count();
        let blocks_of = |present: bool| if present { spare_count + 1 } else { 0 };
        let shortest = block_len.min(n);
        let mut key_spares = Spares::<K>::allocate(blocks_of(keys_out.is_some()), shortest)?;
        let mut value_spares = Spares::<V>::allocate(blocks_of(with_values), shortest)?;
        let mut gathered = Spares::<K>::allocate(usize::from(keys_out.is_none()), shortest)?;
        // Two sets of block buffers taking turns on two streams: block b + 1 goes up while
        // block b sorts, then block b goes down. Allocated, and freed, on the sort stream,
        // which waits for the copies first (`Settle`, dropped first), even on an error.
        let (copy_stream, sort_stream) = two_streams(x)?;
        let (copies, sorts) = (x.on(&copy_stream), x.on(&sort_stream));
        let mut buffers =
            two_buffer_sets::<K, V>(&sort_stream, block_len, with_values, "a merge block")?;
        let _settle = Settle(&sort_stream, &copy_stream);
        join(&copy_stream, &sort_stream)?;
        // Block b's slices of the runs, as ranges of the host arrays.
        let slices_of = |b: usize| -> Vec<Range<usize>> {
            let slices = plan.runs.iter().zip(&blocks[b].from_runs);
            slices
                .map(|(run, slice)| run.start + slice.start..run.start + slice.end)
                .collect()
        };
        // Queues block b's sort after its upload, with an event after it.
        let sort_block = |b: usize, buffer: &mut ItemBuffers<K, V>| -> Result<CudaEvent> {
            join(&sort_stream, &copy_stream)?;
            let len = block_range(b).len();
            let sorted_values = buffer.values.as_mut().map(|v| v.slice_mut(0..len));
            self.sort_items(&sorts, buffer.keys.slice_mut(0..len), sorted_values)?;
            sort_stream
                .record_event(None)
                .during(|| "recording a block's sort".into())
        };
        let merged = (|| -> Result<()> {
            if blocks.is_empty() {
                return Ok(());
            }
            let source = BlockSource::of(keys_in, keys_out.as_deref(), values.as_deref());
            source.upload(&copies, &slices_of(0), &mut gathered, &mut buffers[0])?;
            let mut sorted = sort_block(0, &mut buffers[0])?;
            for (b, block) in blocks.iter().enumerate() {
                let len = block_range(b).len();
                // Block b + 1 goes up while block b sorts (into the buffers whose block went
                // down last), and sorts while block b goes down.
                let next_sorted = match b + 1 < blocks.len() {
                    true => {
                        let source =
                            BlockSource::of(keys_in, keys_out.as_deref(), values.as_deref());
                        let next = &mut buffers[(b + 1) % 2];
                        source.upload(&copies, &slices_of(b + 1), &mut gathered, next)?;
                        Some(sort_block(b + 1, next)?)
                    }
                    false => None,
                };
                copy_stream
                    .wait(&sorted)
                    .during(|| "waiting for a block's sort".into())?;
                let buffer = &buffers[b % 2];
                if let Some(out) = keys_out.as_deref_mut() {
                    let sorted = buffer.keys.slice(0..len);
                    put_block(
                        &copies,
                        &sorted,
                        block.slot,
                        (out, &mut key_spares),
                        block_len,
                    )?;
                }
                if let (Some(out), Some(device)) = (values.as_deref_mut(), buffer.values.as_ref()) {
                    let sorted = device.slice(0..len);
                    put_block(
                        &copies,
                        &sorted,
                        block.slot,
                        (out, &mut value_spares),
                        block_len,
                    )?;
                }
                if let Some(next) = next_sorted {
                    sorted = next;
                }
            }
            Ok(())
        })();
        merged.map_err(during_merge)?;
        join(x.stream, &sort_stream)?;
        let slots: Vec<Slot> = blocks.iter().map(|block| block.slot).collect();
        if let Some(out) = keys_out {
            key_spares.put_in_order(out, &slots, block_len);
        }
        if let Some(out) = values {
            value_spares.put_in_order(out, &slots, block_len);
        }
        Ok(())
    }

    /// Sorts one run on the GPU: its keys, read from `keys_in` (or from `keys_out` itself, in
    /// place), with their `values` if any (stably); the sorted keys go back into `keys_out`
    /// (an argsort keeps none) and the values into `values`. A failure while they are copied
    /// back says that the caller's slices may have lost keys.
    fn sort_run<K: SortKey, V: Word>(
        &self,
        x: &Exec,
        keys_in: Option<&[K]>,
        keys_out: Option<&mut [K]>,
        values: Option<&mut [V]>,
    ) -> Result<()> {
        let from = match (keys_in, keys_out.as_deref()) {
            (Some(keys), _) | (None, Some(keys)) => keys,
            (None, None) => unreachable!("the keys come from the input or the output"),
        };
        let n = from.len();
        let mut keys: CudaSlice<K> = transfer::upload(x, from)?;
        let mut on_gpu_values = match values.as_deref() {
            Some(host) => Some(transfer::upload(x, host)?),
            None => None,
        };
        let device_values = on_gpu_values.as_mut().map(|v| v.slice_mut(0..n));
        self.sort_items(x, keys.slice_mut(0..n), device_values)?;
        if let Some(out) = keys_out {
            transfer::download(x, &keys.slice(0..n), out).map_err(during_merge)?;
        }
        if let (Some(device), Some(host)) = (on_gpu_values, values) {
            transfer::download(x, &device.slice(0..n), host).map_err(during_merge)?;
        }
        Ok(())
    }

    /// Sorts keys on the GPU with this sorter's order, in one in-memory sort.
    pub(super) fn sort_on_gpu<K: SortKey>(&self, x: &Exec, keys: CudaViewMut<K>) -> Result<Plan> {
        let request = self
            .request(Operation::Sort, K::DTYPE, keys.len(), Layout::Whole)
            .backend(Backend::Cuda);
        self.run_with_workspace(x, &request, |x, plan, workspace| {
            run::sort(x, plan, keys, &[], workspace)
        })
    }
}

/// Host blocks of the many-run merge: those holding an output block, by slot, and the free
/// ones.
struct Spares<K> {
    held: HashMap<Slot, Vec<K>>,
    free: Vec<Vec<K>>,
}

impl<K: bytemuck::Pod + Send + Sync> Spares<K> {
    /// `count` free blocks of `block_len` keys, allocated fallibly (and filled on all
    /// cores, a block each).
    fn allocate(count: usize, block_len: usize) -> Result<Spares<K>> {
        let free = (0..count)
            .into_par_iter()
            .map(|_| {
                let mut keys = Vec::new();
                keys.try_reserve_exact(block_len)
                    .map_err(|_| Error::HostMemory {
                        bytes: count * block_len * std::mem::size_of::<K>(),
                        what: "the spare blocks of an out-of-core merge",
                    })?;
                keys.resize(block_len, K::zeroed());
                Ok(keys)
            })
            .collect::<Result<Vec<Vec<K>>>>()?;
        Ok(Spares {
            held: HashMap::new(),
            free,
        })
    }

    /// A free block, as `len` keys (at most a block's): the schedule never holds more blocks
    /// than were allocated.
    fn take(&mut self, len: usize) -> Vec<K> {
        let mut keys = self.free.pop().expect("the schedule's blocks suffice");
        keys.resize(len, K::zeroed());
        keys
    }

    /// Puts the blocks of `out` (of `block_len` keys, the last maybe shorter) in order: the
    /// block at `slots[b]` (in `out`, or held here) goes to block b of `out`
    /// ([`order_blocks`]'s moves: within `out`, or through one more of these blocks).
    fn put_in_order(&mut self, out: &mut [K], slots: &[Slot], block_len: usize) {
        let n = out.len();
        let block_range = |b: usize| b * block_len..((b + 1) * block_len).min(n);
        for (from, to) in order_blocks(slots) {
            match (from, to) {
                (Slot::Buffer(f), Slot::Buffer(t)) => {
                    let (from, to) = (block_range(f), block_range(t));
                    if from.start < to.start {
                        let (before, after) = out.split_at_mut(to.start);
                        parallel_copy(&mut after[..to.len()], &before[from]);
                    } else {
                        let (before, after) = out.split_at_mut(from.start);
                        parallel_copy(&mut before[to], &after[..from.len()]);
                    }
                }
                (from, Slot::Buffer(t)) => {
                    let staged = self.held.remove(&from).expect("a held block");
                    parallel_copy(&mut out[block_range(t)], &staged);
                    self.free.push(staged);
                }
                // A block of a cycle lifted into staging (the only move to the host).
                (from, staging) => {
                    let Slot::Buffer(f) = from else {
                        unreachable!("order_blocks lifts only buffer blocks into staging")
                    };
                    let keys = &out[block_range(f)];
                    let mut staged = self.take(keys.len());
                    parallel_copy(&mut staged, keys);
                    self.held.insert(staging, staged);
                }
            }
        }
    }
}

/// Where a merge block's keys and values come from: the sorted runs' keys on the host, or
/// an argsort's input keys read through the runs' indices; and the runs' values, if any.
#[derive(Clone, Copy)]
enum BlockSource<'a, K, V> {
    Keys(&'a [K], Option<&'a [V]>),
    ThroughIndices { keys: &'a [K], indices: &'a [V] },
}

impl<'a, K: SortKey, V: Word> BlockSource<'a, K, V> {
    /// The source of a merge whose sorted keys are in `keys_out`, or (an argsort) in
    /// `keys_in` through `values`.
    fn of(keys_in: Option<&'a [K]>, keys_out: Option<&'a [K]>, values: Option<&'a [V]>) -> Self {
        match (keys_out, keys_in, values) {
            (Some(sorted), _, values) => BlockSource::Keys(sorted, values),
            (None, Some(keys), Some(indices)) => BlockSource::ThroughIndices { keys, indices },
            _ => unreachable!("an argsort has its input and its indices"),
        }
    }

    /// Uploads a block's `slices` of the runs into `buffer`, queued on `x`'s stream: the keys
    /// (an argsort's gathered on the host into `gathered` first) and the values, each as one
    /// staged copy of all the slices.
    fn upload(
        self,
        x: &Exec,
        slices: &[Range<usize>],
        gathered: &mut Spares<K>,
        buffer: &mut ItemBuffers<K, V>,
    ) -> Result<()> {
        let len: usize = slices.iter().map(|slice| slice.len()).sum();
        let values = match self {
            BlockSource::Keys(sorted, values) => {
                let keys = buffer.keys.slice_mut(0..len);
                transfer::upload_parts_into(x, &parts_of(sorted, slices), keys)?;
                values
            }
            BlockSource::ThroughIndices { keys, indices } => {
                let mut staged = gathered.take(len);
                let mut at = 0;
                for slice in slices {
                    let to = &mut staged[at..at + slice.len()];
                    to.par_iter_mut()
                        .zip(indices[slice.clone()].par_iter())
                        .for_each(|(key, &i)| *key = keys[i.index()]);
                    at += slice.len();
                }
                // The staging copy has read `staged` when the upload returns.
                let uploaded =
                    transfer::upload_parts_into(x, &[&staged], buffer.keys.slice_mut(0..len));
                gathered.free.push(staged);
                uploaded?;
                Some(indices)
            }
        };
        if let (Some(values), Some(device)) = (values, buffer.values.as_mut()) {
            transfer::upload_parts_into(x, &parts_of(values, slices), device.slice_mut(0..len))?;
        }
        Ok(())
    }
}

/// The `slices` of `all`.
fn parts_of<'a, T>(all: &'a [T], slices: &[Range<usize>]) -> Vec<&'a [T]> {
    slices.iter().map(|slice| &all[slice.clone()]).collect()
}

/// Downloads a sorted block into its slot: block f of `out`, or a spare host block.
fn put_block<T: bytemuck::Pod + DeviceRepr + Send + Sync>(
    x: &Exec,
    sorted: &CudaView<T>,
    slot: Slot,
    (out, spares): (&mut [T], &mut Spares<T>),
    block_len: usize,
) -> Result<()> {
    match slot {
        Slot::Buffer(f) => {
            let to = f * block_len..(f * block_len + sorted.len()).min(out.len());
            transfer::download_staged(x, sorted, &mut out[to])
        }
        spare => {
            let mut keys = spares.take(sorted.len());
            transfer::download_staged(x, sorted, &mut keys)?;
            spares.held.insert(spare, keys);
            Ok(())
        }
    }
}

/// Where a key-value sort past one GPU sort runs.
enum PairsRoute<'a> {
    /// One in-memory sort (the sorter's `sort_pairs` or `argsort`): on the GPU when one sort
    /// takes the pairs, else on the CPU (the sorter's backend, or no GPU; `device_bytes` 0).
    InMemory(OutOfCorePlan),
    /// Runs, every one resident or merged in blocks: the call's device and stream, and the
    /// plan.
    Runs(Exec<'a>, OutOfCorePlan),
}

/// `values` as words of their size (`W`: u32 or u64), or an error when they are not aligned
/// for them.
fn words_of<V: bytemuck::Pod, W: bytemuck::Pod>(values: &mut [V]) -> Result<&mut [W]> {
    bytemuck::try_cast_slice_mut(values).map_err(|_| {
        Error::Unsupported("values not aligned to their size in an out-of-core key-value sort")
    })
}

/// `input` copied into `out`, when there is one.
fn copy_input<K: SortKey>(input: Option<&[K]>, out: &mut [K]) {
    if let Some(keys) = input {
        parallel_copy(out, keys);
    }
}
