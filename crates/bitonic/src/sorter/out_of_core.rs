//! Host sorts past the GPU's memory (issue 54): [`Sorter::sort_large`] carries out the plan of
//! src/plan/out_of_core.rs. Runs are sorted on the GPU; then the merge of every run kept on the
//! GPU (two streams: copies on one, sorts on the other), the backward merge of two runs with
//! the last kept on the GPU, or the forward merge of many runs in blocks, whose blocks are put
//! in order on the host at the end. Every merge piece or block is sorted on the GPU (its keys
//! are a few sorted slices: any sort merges them). Copies go through the pinned staging of
//! src/cuda/staging.rs.

use super::resident::Resident;
use super::{check_index_width, during_merge, Sorter};
use crate::cuda::exec::Exec;
use crate::cuda::staging::parallel_copy;
use crate::cuda::{memory, run, transfer};
use crate::error::{check_same_len, CudaContext as _, Error, Result};
use crate::key::ordered_bits;
use crate::options::Backend;
use crate::plan::merge::co_rank_with;
use crate::plan::out_of_core::{
    block_merge_by, merge_pieces, order_blocks, plan_out_of_core, plan_out_of_core_pairs, Merge,
    OutOfCorePlan, Slot,
};
use crate::plan::{Layout, Operation, Plan};
use crate::{SortIndex, SortKey};
use cudarc::driver::{CudaSlice, CudaViewMut};
use rayon::prelude::*;
use std::collections::HashMap;

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

    /// [`Sorter::sort_pairs`] past one GPU sort: `values` (of 4 or 8 bytes) follow their keys,
    /// stably, through the schedule that keeps every run on the GPU
    /// ([`crate::plan::out_of_core::Merge::Resident`]), so for keys and values within the GPU's
    /// memory (or [`Sorter::device_memory`]); past it, [`Error::DeviceMemory`] (key-value
    /// sorts larger than the GPU are not built yet). Pairs that one sort takes get it.
    pub fn sort_pairs_large<K: SortKey, V: bytemuck::Pod + Send + Sync>(
        &self,
        keys: &mut [K],
        values: &mut [V],
    ) -> Result<OutOfCorePlan> {
        check_same_len(keys.len(), values.len())?;
        let n = keys.len();
        match self.route_pairs::<K>(n, std::mem::size_of::<V>())? {
            PairsRoute::Resident(x, plan, shape) => {
                self.resident_with_values(&x, (&plan, shape), (None, Some(keys)), values)?;
                Ok(plan)
            }
            PairsRoute::InMemory(plan) => {
                self.sort_pairs(keys, values)?;
                Ok(plan)
            }
        }
    }

    /// [`Sorter::argsort`] past one GPU sort, through the schedule that keeps every run on the
    /// GPU, as [`Sorter::sort_pairs_large`]: the indices are numbered on the host and travel as
    /// the keys' values; `keys` are left as they are.
    pub fn argsort_large<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        indices: &mut [I],
    ) -> Result<OutOfCorePlan> {
        check_same_len(keys.len(), indices.len())?;
        check_index_width::<I>(keys.len())?;
        let n = keys.len();
        match self.route_pairs::<K>(n, std::mem::size_of::<I>())? {
            PairsRoute::Resident(x, plan, shape) => {
                indices
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(i, index)| *index = I::from_usize(i));
                self.resident_with_values(&x, (&plan, shape), (Some(keys), None), indices)?;
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
            Merge::Resident {
                piece_len,
                sample_gap,
            } => PairsRoute::Resident(self.exec(gpu, policy), plan, (piece_len, sample_gap)),
            _ => PairsRoute::InMemory(plan),
        })
    }

    /// The resident schedule of `plan` (`shape`: piece length and sample gap) on keys (read
    /// from the input, or from the output in place) with `values` of 4 or 8 bytes, moved as
    /// words of their size.
    fn resident_with_values<K: SortKey, V: bytemuck::Pod>(
        &self,
        x: &Exec,
        (plan, shape): (&OutOfCorePlan, (usize, usize)),
        (keys_in, keys_out): (Option<&[K]>, Option<&mut [K]>),
        values: &mut [V],
    ) -> Result<()> {
        if std::mem::size_of::<V>() == 4 {
            let values = Some(words_of::<V, u32>(values)?);
            let job = Resident {
                keys_in,
                keys_out,
                values,
            };
            return self.merge_every_run(x, plan, shape, job);
        }
        let values = Some(words_of::<V, u64>(values)?);
        let job = Resident {
            keys_in,
            keys_out,
            values,
        };
        self.merge_every_run(x, plan, shape, job)
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
            Merge::Resident {
                piece_len,
                sample_gap,
            } => {
                let job = Resident::<K, u32> {
                    keys_in: input,
                    keys_out: Some(out),
                    values: None,
                };
                self.merge_every_run(&x, &plan, (piece_len, sample_gap), job)?
            }
            Merge::ResidentRun { piece_len } => {
                self.merge_resident(&x, &plan, piece_len, input, out)?
            }
            Merge::Blocks { block_len } => self.merge_blocks(&x, &plan, block_len, input, out)?,
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
        self.sort_run(x, input.map(|keys| &keys[a.clone()]), &mut out[a.clone()])?;
        let mut resident = transfer::upload(x, input.map_or(&out[b.clone()], |keys| &keys[b]))?;
        let nb = plan.len - a.len();
        self.sort_on_gpu(x, resident.slice_mut(0..nb))?;
        let order = self.key_order();
        let word = |key: K| -> u64 { ordered_bits(key, order).into() };
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

    /// The many-run schedule: every run sorted into its place in `out`, then each output block
    /// made on the GPU from its slices of the runs and written to a block of `out` already read
    /// or to a spare host block, then the blocks put in order on the host.
    fn merge_blocks<K: SortKey>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        block_len: usize,
        input: Option<&[K]>,
        out: &mut [K],
    ) -> Result<()> {
        for run in &plan.runs {
            let from = input.map(|keys| &keys[run.clone()]);
            self.sort_run(x, from, &mut out[run.clone()])?;
        }
        let order = self.key_order();
        let views: Vec<&[K]> = plan.runs.iter().map(|run| &out[run.clone()]).collect();
        let blocks = block_merge_by(&views, block_len, |&key| ordered_bits(key, order).into());
        let n = out.len();
        let block_range = |b: usize| b * block_len..((b + 1) * block_len).min(n);
        // Every host block the merge and the ordering use, allocated before anything is
        // written: the spares the schedule names and two for staging.
        let spare_count = blocks
            .iter()
            .filter(|block| matches!(block.slot, Slot::Spare(_)))
            .count();
        let mut spares = Spares::allocate(spare_count + 2, block_len.min(n))?;
        let mut block_keys = memory::alloc::<K>(x.stream, block_len, || "a merge block".into())?;
        for (b, block) in blocks.iter().enumerate() {
            let len = block_range(b).len();
            let merged = (|| -> Result<()> {
                let mut at = 0;
                for (run, slice) in plan.runs.iter().zip(&block.from_runs) {
                    let keys = &out[run.start + slice.start..run.start + slice.end];
                    let to = block_keys.slice_mut(at..at + keys.len());
                    transfer::upload_into(x, keys, to)?;
                    at += keys.len();
                }
                debug_assert_eq!(at, len, "a block's slices fill it");
                self.sort_on_gpu(x, block_keys.slice_mut(0..len))?;
                let sorted = block_keys.slice(0..len);
                match block.slot {
                    Slot::Buffer(f) => transfer::download(x, &sorted, &mut out[block_range(f)]),
                    spare => {
                        let mut keys = spares.take(len);
                        transfer::download(x, &sorted, &mut keys)?;
                        spares.held.insert(spare, keys);
                        Ok(())
                    }
                }
            })();
            merged.map_err(during_merge)?;
        }
        drop(block_keys);
        let slots: Vec<Slot> = blocks.iter().map(|block| block.slot).collect();
        for (from, to) in order_blocks(&slots) {
            match (from, to) {
                (Slot::Buffer(f), to) => {
                    let keys = &out[block_range(f)];
                    let mut staged = spares.take(keys.len());
                    parallel_copy(&mut staged, keys);
                    spares.held.insert(to, staged);
                }
                (from, Slot::Buffer(t)) => {
                    let staged = spares.held.remove(&from).expect("a held block");
                    parallel_copy(&mut out[block_range(t)], &staged);
                    spares.free.push(staged);
                }
                // Between host blocks: a block changes hands, no copy.
                (from, to) => {
                    let staged = spares.held.remove(&from).expect("a held block");
                    spares.held.insert(to, staged);
                }
            }
        }
        Ok(())
    }

    /// Sorts `from` (or `to` itself, when none) on the GPU into `to`.
    fn sort_run<K: SortKey>(&self, x: &Exec, from: Option<&[K]>, to: &mut [K]) -> Result<()> {
        let n = to.len();
        let mut keys: CudaSlice<K> = transfer::upload(x, from.unwrap_or(to))?;
        self.sort_on_gpu(x, keys.slice_mut(0..n))?;
        transfer::download(x, &keys.slice(0..n), to)
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

impl<K: SortKey> Spares<K> {
    /// `count` free blocks of `block_len` keys, allocated fallibly.
    fn allocate(count: usize, block_len: usize) -> Result<Spares<K>> {
        let mut free = Vec::with_capacity(count);
        for _ in 0..count {
            let mut keys = Vec::new();
            keys.try_reserve_exact(block_len)
                .map_err(|_| Error::HostMemory {
                    bytes: count * block_len * std::mem::size_of::<K>(),
                    what: "the spare blocks of an out-of-core merge",
                })?;
            keys.resize(block_len, K::zeroed());
            free.push(keys);
        }
        Ok(Spares {
            held: HashMap::new(),
            free,
        })
    }

    /// A free block, as `len` keys (at most a block's): the schedule never holds more blocks
    /// than were allocated.
    fn take(&mut self, len: usize) -> Vec<K> {
        let mut keys = self.free.pop().expect("the schedule's blocks suffice");
        keys.truncate(len);
        keys
    }
}

/// Where a key-value sort past one GPU sort runs.
enum PairsRoute<'a> {
    /// One in-memory sort (the sorter's `sort_pairs` or `argsort`): on the GPU when one sort
    /// takes the pairs, else on the CPU (the sorter's backend, or no GPU; `device_bytes` 0).
    InMemory(OutOfCorePlan),
    /// Every run resident: the call's device and stream, the plan, and its piece length and
    /// sample gap.
    Resident(Exec<'a>, OutOfCorePlan, (usize, usize)),
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
