//! The out-of-core schedule with every run resident ([`Merge::Resident`]), for keys alone and
//! for keys with values (key-value sorts and argsorts, whose indices are the values). The keys
//! (and values) go up run by run, each run sorting while the next goes up; splitters from
//! regular samples of the sorted runs cut the output into pieces; each piece (its runs'
//! slices, sorted together: stably, so that equal keys keep their runs' order) goes down while
//! the next one sorts. Two streams: copies on one, sorts on the other. docs/design/out-of-core.md
//! tells the steps.
//!
//! [`Merge::Resident`]: crate::plan::out_of_core::Merge::Resident

use super::schedule::{
    join, merge_word, two_buffer_sets, two_streams, HostItems, ItemBuffers, Settle,
};
use super::{during_merge, Sorter};
use crate::cuda::exec::Exec;
use crate::cuda::multi::take;
use crate::cuda::{memory, run, transfer};
use crate::error::{CudaContext as _, Error, Result};
use crate::plan::out_of_core::{piece_capacity, OutOfCorePlan};
use crate::plan::{Layout, Operation, Plan};
use crate::SortKey;
use cudarc::driver::{CudaEvent, CudaSlice, CudaViewMut, DeviceRepr};
use std::ops::Range;

impl Sorter<'_> {
    /// Runs the schedule of `plan` (`piece_len` keys a piece on average, samples `sample_gap`
    /// keys apart) on `job`.
    pub(super) fn merge_every_run<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
        &self,
        x: &Exec,
        plan: &OutOfCorePlan,
        (piece_len, sample_gap): (usize, usize),
        job: HostItems<K, V>,
    ) -> Result<()> {
        let n = plan.len;
        let (copy_stream, sort_stream) = two_streams(x)?;
        let (copies, sorts) = (x.on(&copy_stream), x.on(&sort_stream));
        let HostItems {
            keys_in,
            mut keys_out,
            mut values,
        } = job;
        // The keys, as words of their width (what the sample kernel reads), their values, and
        // the pieces' buffers later: all allocated, and freed, on the sort stream, which waits
        // for the copies before anything is freed (`Settle`, dropped first), even on an error.
        let mut words = memory::alloc::<K::Bits>(&sort_stream, n, || "the keys".into())?;
        let mut on_gpu_values = match values {
            Some(_) => Some(memory::alloc::<V>(&sort_stream, n, || "the values".into())?),
            None => None,
        };
        let mut buffers: Vec<ItemBuffers<K, V>> = Vec::new();
        let _settle = Settle(&sort_stream, &copy_stream);
        join(&copy_stream, &sort_stream)?;
        let source: &[K] = match (keys_in, keys_out.as_deref()) {
            (Some(keys), _) => keys,
            (None, Some(keys)) => keys,
            (None, None) => unreachable!("the keys come from the input or the output"),
        };
        for run in &plan.runs {
            let keys: &[K::Bits] = bytemuck::cast_slice(&source[run.clone()]);
            transfer::upload_into(&copies, keys, words.slice_mut(run.clone()))?;
            if let (Some(host), Some(device)) = (values.as_deref(), on_gpu_values.as_mut()) {
                transfer::upload_into(&copies, &host[run.clone()], device.slice_mut(run.clone()))?;
            }
            join(&sort_stream, &copy_stream)?;
            let run_keys = memory::reinterpret::<_, K>(words.slice_mut(run.clone()), run.len());
            let run_values = on_gpu_values.as_mut().map(|v| v.slice_mut(run.clone()));
            self.sort_items(&sorts, run_keys, run_values)?;
        }
        // Keys compare as the sort compared them: with values, keys equal by value (±0.0,
        // NaNs in numeric order) tie, and ties keep their runs' order.
        let with_values = values.is_some();
        let word = merge_word::<K>(self.key_order(), with_values);
        let bounds = self.cuts(&sorts, plan, (piece_len, sample_gap), &words, word)?;
        // The pieces, two sets of buffers taking turns: piece j + 1 sorts while piece j goes
        // down.
        let capacity = piece_capacity(plan.runs.len(), piece_len, sample_gap);
        let sets = two_buffer_sets::<K, V>(&sort_stream, capacity, with_values, "a merge piece")?;
        buffers.extend(sets);
        let pieces = bounds[0].len() - 1;
        let piece_ranges = |j: usize| -> Vec<Range<usize>> {
            let runs = plan.runs.iter().zip(&bounds);
            runs.map(|(run, b)| run.start + b[j]..run.start + b[j + 1])
                .collect()
        };
        // Queues piece j's gather and sort into `buffer`: its length, and an event after it.
        let sort_piece = |j: usize, buffer: &mut ItemBuffers<K, V>| -> Result<(usize, CudaEvent)> {
            let mut at = 0;
            for range in piece_ranges(j) {
                let len = range.len();
                if len > capacity - at {
                    return Err(Error::Unsupported("an out-of-core piece past its buffer"));
                }
                let from = memory::reinterpret_ref::<_, K>(&words.slice(range.clone()), len);
                sort_stream
                    .memcpy_dtod(&from, &mut buffer.keys.slice_mut(at..at + len))
                    .during(|| "gathering a merge piece".into())?;
                if let (Some(all), Some(to)) = (on_gpu_values.as_ref(), buffer.values.as_mut()) {
                    sort_stream
                        .memcpy_dtod(&all.slice(range), &mut to.slice_mut(at..at + len))
                        .during(|| "gathering a merge piece".into())?;
                }
                at += len;
            }
            let piece_values = buffer.values.as_mut().map(|v| v.slice_mut(0..at));
            self.sort_items(&sorts, buffer.keys.slice_mut(0..at), piece_values)?;
            let sorted = sort_stream
                .record_event(None)
                .during(|| "recording a piece's sort".into())?;
            Ok((at, sorted))
        };
        let mut sorted = vec![sort_piece(0, &mut buffers[0]).map_err(during_merge)?];
        let mut output_start = 0;
        for j in 0..pieces {
            if j + 1 < pieces {
                sorted.push(sort_piece(j + 1, &mut buffers[(j + 1) % 2]).map_err(during_merge)?);
            }
            let (len, ref done) = sorted[j];
            copy_stream
                .wait(done)
                .during(|| "waiting for a piece's sort".into())
                .map_err(during_merge)?;
            let output = output_start..output_start + len;
            let buffer = &buffers[j % 2];
            if let Some(out) = keys_out.as_deref_mut() {
                let piece = buffer.keys.slice(0..len);
                transfer::download(&copies, &piece, &mut out[output.clone()])
                    .map_err(during_merge)?;
            }
            if let (Some(out), Some(piece)) = (values.as_deref_mut(), buffer.values.as_ref()) {
                transfer::download(&copies, &piece.slice(0..len), &mut out[output])
                    .map_err(during_merge)?;
            }
            output_start += len;
        }
        debug_assert_eq!(output_start, n, "the pieces fill the output");
        join(x.stream, &sort_stream)
    }

    /// Where each run is cut into the pieces: for each run, the piece bounds from 0 to its
    /// length (`pieces + 1` of them, about `n / piece_len` pieces). Every `sample_gap`-th key
    /// of each sorted run comes down, as (word, run, position): their order is the stable
    /// merge's, and every (S / pieces)-th is a splitter. A run's cut at a splitter is the
    /// splitter itself in its own run; elsewhere the samples bound it to a window of
    /// `sample_gap` keys, which comes down to be searched (keys at or below the splitter's word
    /// in earlier runs, below it in later ones).
    fn cuts<K: SortKey>(
        &self,
        sorts: &Exec,
        plan: &OutOfCorePlan,
        (piece_len, sample_gap): (usize, usize),
        words: &CudaSlice<K::Bits>,
        word: impl Fn(K) -> u64,
    ) -> Result<Vec<Vec<usize>>> {
        let key_of = |bits: K::Bits| -> K {
            bytemuck::cast_slice::<K::Bits, K>(std::slice::from_ref(&bits))[0]
        };
        let mut run_samples: Vec<Vec<u64>> = Vec::with_capacity(plan.runs.len());
        let mut samples: Vec<(u64, usize, usize)> = Vec::new();
        for (r, run) in plan.runs.iter().enumerate() {
            let at: Vec<usize> = run.clone().step_by(sample_gap).collect();
            let taken = take(sorts, words, &at)?;
            let taken: Vec<u64> = taken.into_iter().map(|bits| word(key_of(bits))).collect();
            samples.extend(taken.iter().zip(&at).map(|(&w, &p)| (w, r, p - run.start)));
            run_samples.push(taken);
        }
        samples.sort_unstable();
        let pieces = plan.len.div_ceil(piece_len);
        let mut bounds: Vec<Vec<usize>> = plan.runs.iter().map(|_| vec![0]).collect();
        for t in 1..pieces {
            let (v, r0, p0) = samples[t * samples.len() / pieces];
            for (s, run) in plan.runs.iter().enumerate() {
                let before = |w: u64| if s < r0 { w <= v } else { w < v };
                let i = run_samples[s].partition_point(|&w| before(w));
                let cut = match (s == r0, i) {
                    (true, _) => p0,
                    (false, 0) => 0,
                    (false, i) => {
                        let from = (i - 1) * sample_gap + 1;
                        let to = (i * sample_gap).min(run.len());
                        let mut window = vec![K::zeroed(); to - from];
                        let view = memory::reinterpret_ref::<_, K>(
                            &words.slice(run.start + from..run.start + to),
                            to - from,
                        );
                        transfer::download(sorts, &view, &mut window)?;
                        from + window.partition_point(|&k| before(word(k)))
                    }
                };
                bounds[s].push(cut);
            }
        }
        for (bound, run) in bounds.iter_mut().zip(&plan.runs) {
            bound.push(run.len());
        }
        Ok(bounds)
    }

    /// Sorts keys on the GPU in one in-memory sort, with their values when there are some
    /// (stably: equal keys keep their order).
    pub(super) fn sort_items<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
        &self,
        x: &Exec,
        keys: CudaViewMut<K>,
        values: Option<CudaViewMut<V>>,
    ) -> Result<Plan> {
        let Some(mut values) = values else {
            return self.sort_on_gpu(x, keys);
        };
        let n = keys.len();
        let value_bytes = std::mem::size_of::<V>();
        let request = self
            .request(
                Operation::SortPairs { value_bytes },
                K::DTYPE,
                n,
                Layout::Whole,
            )
            .backend(crate::options::Backend::Cuda);
        self.run_with_workspace(x, &request, |x, plan, workspace| {
            run::sort_with_values(x, plan, keys, &mut values, n, workspace)
        })
    }
}
