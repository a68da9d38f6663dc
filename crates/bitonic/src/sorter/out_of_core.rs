//! Host sorts past the GPU's memory (issue 54): [`Sorter::sort_large`] carries out the plan of
//! src/plan/out_of_core.rs. Runs are sorted on the GPU; then the merge of every run kept on the
//! GPU (two streams: copies on one, sorts on the other), the backward merge of two runs with
//! the last kept on the GPU, or the forward merge of many runs in blocks, whose blocks are put
//! in order on the host at the end. Every merge piece or block is sorted on the GPU (its keys
//! are a few sorted slices: any sort merges them). Copies go through the pinned staging of
//! src/cuda/staging.rs.

use super::Sorter;
use crate::cuda::exec::Exec;
use crate::cuda::multi::take;
use crate::cuda::staging::parallel_copy;
use crate::cuda::{memory, run, transfer};
use crate::error::{check_same_len, Error, Result};
use crate::key::ordered_bits;
use crate::options::Backend;
use crate::plan::merge::co_rank_with;
use crate::plan::out_of_core::{
    block_merge_by, merge_pieces, order_blocks, piece_capacity, plan_out_of_core, Merge,
    OutOfCorePlan, Slot,
};
use crate::plan::{Layout, Operation, Plan};
use crate::SortKey;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, CudaViewMut};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

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

    /// Sorts `input` (or `out` itself, when none) into `out`.
    fn large<K: SortKey>(&self, input: Option<&[K]>, out: &mut [K]) -> Result<OutOfCorePlan> {
        let n = out.len();
        let gpu = match self.backend {
            Backend::Cuda | Backend::Auto => match self.device() {
                Ok(gpu) => Some(gpu),
                Err(why) if self.backend == Backend::Cuda => return Err(Error::NoGpu(why)),
                Err(_) => None,
            },
            _ => None,
        };
        let Some(gpu) = gpu else {
            copy_input(input, out);
            self.sort(out)?;
            return Ok(OutOfCorePlan::in_memory(n, K::DTYPE, 0));
        };
        let policy = self.policy_ref(gpu);
        let budget = match self.device_memory {
            Some(bytes) => bytes,
            None => {
                let free = gpu.free_memory()?;
                free - free / 16
            }
        };
        let plan = plan_out_of_core(gpu, policy, K::DTYPE, n, budget)?;
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
                let shape = (piece_len, sample_gap);
                self.merge_every_run(&x, &plan, shape, input, out)?
            }
            Merge::ResidentRun { piece_len } => {
                self.merge_resident(&x, &plan, piece_len, input, out)?
            }
            Merge::Blocks { block_len } => self.merge_blocks(&x, &plan, block_len, input, out)?,
        }
        Ok(plan)
    }

    /// The schedule with every run resident: the keys go up run by run, each run sorting while
    /// the next one goes up; splitters from regular samples of the sorted runs cut the output
    /// into pieces; each piece (its runs' slices, sorted together) goes down while the next one
    /// sorts. Two streams: copies on one, sorts on the other.
    fn merge_every_run<K: SortKey>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        (piece_len, sample_gap): (usize, usize),
        input: Option<&[K]>,
        out: &mut [K],
    ) -> Result<()> {
        let n = out.len();
        let context = x.gpu.context();
        let new_stream = || {
            context
                .new_stream()
                .map_err(|cause| cuda_error("making a stream", cause))
        };
        let (copy_stream, sort_stream) = (new_stream()?, new_stream()?);
        let copies = Exec {
            stream: &copy_stream,
            ..*x
        };
        let sorts = Exec {
            stream: &sort_stream,
            ..*x
        };
        // The keys, as words of their width (what the sample kernel reads), and the pieces'
        // buffers later: all allocated, and freed, on the sort stream, which waits for the
        // copies before anything is freed (`Settle`, dropped first), even on an error.
        let mut words = memory::alloc::<K::Bits>(&sort_stream, n, || "the keys".into())?;
        let mut buffers: Vec<CudaSlice<K>> = Vec::new();
        let _settle = Settle(&sort_stream, &copy_stream);
        join(&copy_stream, &sort_stream)?;
        let source: &[K] = input.unwrap_or(out);
        for run in &plan.runs {
            let keys: &[K::Bits] = bytemuck::cast_slice(&source[run.clone()]);
            transfer::upload_into(&copies, keys, words.slice_mut(run.clone()))?;
            join(&sort_stream, &copy_stream)?;
            let run_words = words.slice_mut(run.clone());
            self.sort_on_gpu(&sorts, memory::reinterpret::<_, K>(run_words, run.len()))?;
        }
        let order = self.key_order();
        let word = |bits: K::Bits| -> u64 {
            let key: K = bytemuck::cast_slice::<K::Bits, K>(std::slice::from_ref(&bits))[0];
            ordered_bits(key, order).into()
        };
        // Every `sample_gap`-th key of each sorted run: (word, run, position), in the order of
        // the stable merge of the runs.
        let mut run_samples: Vec<Vec<u64>> = Vec::with_capacity(plan.runs.len());
        let mut samples: Vec<(u64, usize, usize)> = Vec::new();
        for (r, run) in plan.runs.iter().enumerate() {
            let at: Vec<usize> = run.clone().step_by(sample_gap).collect();
            let taken: Vec<u64> = take(&sorts, &words, &at)?.into_iter().map(word).collect();
            samples.extend(taken.iter().zip(&at).map(|(&w, &p)| (w, r, p - run.start)));
            run_samples.push(taken);
        }
        samples.sort_unstable();
        let pieces = n.div_ceil(piece_len);
        // Each run's keys before each splitter: the samples bound it to a window of
        // `sample_gap` keys, which comes down to be searched.
        let mut bounds: Vec<Vec<usize>> = plan.runs.iter().map(|_| vec![0]).collect();
        for t in 1..pieces {
            let (v, r0, p0) = samples[t * samples.len() / pieces];
            for (s, run) in plan.runs.iter().enumerate() {
                let before = |w: u64| if s < r0 { w <= v } else { w < v };
                let cut = if s == r0 {
                    p0
                } else {
                    let i = run_samples[s].partition_point(|&w| before(w));
                    if i == 0 {
                        0
                    } else {
                        let from = (i - 1) * sample_gap + 1;
                        let to = (i * sample_gap).min(run.len());
                        let mut window = vec![K::zeroed(); to - from];
                        let view = memory::reinterpret_ref::<_, K>(
                            &words.slice(run.start + from..run.start + to),
                            to - from,
                        );
                        transfer::download(&sorts, &view, &mut window)?;
                        from + window.partition_point(|&k| before(ordered_bits(k, order).into()))
                    }
                };
                bounds[s].push(cut);
            }
        }
        for (bound, run) in bounds.iter_mut().zip(&plan.runs) {
            bound.push(run.len());
        }
        // The pieces, two buffers taking turns: piece j + 1 sorts while piece j goes down.
        let capacity = piece_capacity(plan.runs.len(), piece_len, sample_gap);
        for _ in 0..2 {
            buffers.push(memory::alloc::<K>(&sort_stream, capacity, || {
                "a merge piece".into()
            })?);
        }
        let piece_keys = |j: usize| -> Vec<Range<usize>> {
            let runs = plan.runs.iter().zip(&bounds);
            runs.map(|(run, b)| run.start + b[j]..run.start + b[j + 1])
                .collect()
        };
        let mut output_start = 0;
        // Queues piece j's gather and sort into `buffer`: its length, and an event after it.
        let sort_piece = |j: usize, buffer: &mut CudaSlice<K>| -> Result<(usize, CudaEvent)> {
            let mut at = 0;
            for keys in piece_keys(j) {
                let len = keys.len();
                if len > capacity - at {
                    return Err(Error::Unsupported("an out-of-core piece past its buffer"));
                }
                let from = memory::reinterpret_ref::<_, K>(&words.slice(keys), len);
                sort_stream
                    .memcpy_dtod(&from, &mut buffer.slice_mut(at..at + len))
                    .map_err(|cause| cuda_error("gathering a merge piece", cause))?;
                at += len;
            }
            self.sort_on_gpu(&sorts, buffer.slice_mut(0..at))?;
            let sorted = sort_stream
                .record_event(None)
                .map_err(|cause| cuda_error("recording a piece's sort", cause))?;
            Ok((at, sorted))
        };
        let mut sorted = vec![sort_piece(0, &mut buffers[0])?];
        for j in 0..pieces {
            if j + 1 < pieces {
                sorted.push(sort_piece(j + 1, &mut buffers[(j + 1) % 2])?);
            }
            let (len, ref done) = sorted[j];
            copy_stream
                .wait(done)
                .map_err(|cause| cuda_error("waiting for a piece's sort", cause))?;
            let piece = buffers[j % 2].slice(0..len);
            let output = output_start..output_start + len;
            transfer::download(&copies, &piece, &mut out[output]).map_err(during_merge)?;
            output_start += len;
        }
        debug_assert_eq!(output_start, n, "the pieces fill the output");
        Ok(())
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
                        .map_err(|cause| cuda_error("moving a piece of the resident run", cause))?;
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
    fn sort_on_gpu<K: SortKey>(&self, x: &Exec, keys: CudaViewMut<K>) -> Result<Plan> {
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

/// `input` copied into `out`, when there is one.
fn copy_input<K: SortKey>(input: Option<&[K]>, out: &mut [K]) {
    if let Some(keys) = input {
        parallel_copy(out, keys);
    }
}

/// Makes the first stream wait for the second's work when dropped, so that buffers freed on
/// the first after it (declared before it) are freed after the second is done with them.
struct Settle<'a>(&'a Arc<CudaStream>, &'a Arc<CudaStream>);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        // Best effort: a stream that cannot wait has failed, and the context with it.
        let _ = self.0.join(self.1);
    }
}

/// Makes `waiting` wait for the work queued on `on` so far.
fn join(waiting: &CudaStream, on: &CudaStream) -> Result<()> {
    waiting
        .join(on)
        .map_err(|cause| cuda_error("ordering two streams", cause))
}

/// A driver error of the merge, as the library's error.
fn cuda_error(context: &str, cause: cudarc::driver::DriverError) -> Error {
    Error::Cuda {
        context: context.into(),
        cause,
    }
}

/// An error of the merge, which may have cost keys held on the GPU or in host blocks.
fn during_merge(error: Error) -> Error {
    match error {
        Error::Cuda { context, cause } => Error::Cuda {
            context: format!(
                "{context} (during an out-of-core merge: the output now holds part of the \
                 merge, and keys that were on the GPU or in host blocks may be lost)"
            ),
            cause,
        },
        other => other,
    }
}
