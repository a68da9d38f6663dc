//! The calls on host slices: each makes its plan, then sorts on the CPU, or copies the keys to
//! the GPU, runs the plan there on the sorter's stream, and copies the results back.

use super::{
    check_index_width, check_rows, check_segments, check_topk, plan_with_workspace, rows_layout,
    Sorter,
};
use crate::cpu;
use crate::cuda::exec::Exec;
use crate::cuda::{memory, run, transfer, Gpu};
use crate::error::{check_same_len, Result};
use crate::plan::{Layout, Operation, Plan, Request, Strategy};
use crate::policy::Policy;
use crate::{SortIndex, SortKey};
use cudarc::driver::DeviceRepr;
use rayon::prelude::*;

impl<'g> Sorter<'g> {
    /// Sorts `keys` in place. On error the slice holds the same keys, possibly reordered.
    ///
    /// ```
    /// let mut keys = vec![3.5f32, -1.0, f32::NAN, 0.0, -0.0, f32::NEG_INFINITY];
    /// bitonic::Sorter::new().sort(&mut keys)?;
    /// assert_eq!(keys[0], f32::NEG_INFINITY);
    /// assert!(keys[5].is_nan());
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort<K: SortKey>(&self, keys: &mut [K]) -> Result<Plan> {
        self.sort_rows(keys, keys.len())
    }

    /// Sorts every row of `row_len` keys of a row-major matrix, independently. `keys.len()`
    /// must be a multiple of `row_len`.
    ///
    /// ```
    /// let mut m = vec![3u32, 1, 2, /* next row */ 9, 7, 8];
    /// bitonic::Sorter::new().sort_rows(&mut m, 3)?;
    /// assert_eq!(m, [1, 2, 3, 7, 8, 9]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_rows<K: SortKey>(&self, keys: &mut [K], row_len: usize) -> Result<Plan> {
        check_rows(keys.len(), row_len)?;
        let layout = rows_layout(keys.len(), row_len);
        self.sort_keys(keys, layout, &[], |keys, strategy| {
            cpu::sort_each(
                keys.chunks_mut(row_len.max(1)).collect(),
                self.key_order(),
                strategy,
            )
        })
    }

    /// Sorts each segment `keys[offsets[i]..offsets[i + 1]]` independently. `offsets` must
    /// start at 0, never decrease, and end at `keys.len()`.
    ///
    /// ```
    /// let mut v = vec![2i64, 1, 5, 4, 3];
    /// bitonic::Sorter::new().sort_segments(&mut v, &[0, 2, 2, 5])?;
    /// assert_eq!(v, [1, 2, 3, 4, 5]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_segments<K: SortKey>(&self, keys: &mut [K], offsets: &[usize]) -> Result<Plan> {
        check_segments(keys.len(), offsets)?;
        self.sort_keys(
            keys,
            Layout::segments(offsets),
            offsets,
            |keys, strategy| cpu::sort_each(segments(keys, offsets), self.key_order(), strategy),
        )
    }

    /// Writes to `indices` the permutation that sorts `keys` (left as they are):
    /// `keys[indices[0]], keys[indices[1]], …` is sorted, equal keys in index order. The
    /// index type is the caller's ([`SortIndex`]).
    ///
    /// ```
    /// let mut p = vec![0u32; 4];
    /// bitonic::Sorter::new().argsort(&[2.5f32, -1.0, 2.5, 0.0], &mut p)?;
    /// assert_eq!(p, [1, 3, 0, 2]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn argsort<K: SortKey, I: SortIndex>(&self, keys: &[K], indices: &mut [I]) -> Result<Plan> {
        self.argsort_rows(keys, indices, keys.len())
    }

    /// Writes each row's stable argsort of a row-major matrix of rows of `row_len` keys to
    /// `indices`, each row's indices counted from its start.
    ///
    /// ```
    /// let mut p = vec![0u64; 6];
    /// bitonic::Sorter::new().argsort_rows(&[3u32, 1, 2, 9, 7, 8], &mut p, 3)?;
    /// assert_eq!(p, [1, 2, 0, 1, 2, 0]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn argsort_rows<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        indices: &mut [I],
        row_len: usize,
    ) -> Result<Plan> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), indices.len())?;
        check_index_width::<I>(row_len)?;
        let index_bytes = std::mem::size_of::<I>();
        let operation = Operation::Argsort { index_bytes };
        let request = self.request(
            operation,
            K::DTYPE,
            keys.len(),
            rows_layout(keys.len(), row_len),
        );
        let (plan, gpu) = self.plan_of(&request)?;
        if keys.is_empty() {
            return Ok(plan);
        }
        match gpu {
            Some((gpu, policy)) => {
                let x = self.exec(gpu, policy);
                // The keys are copied to the GPU and sorted there with their indices; the
                // sorted copy is dropped.
                let mut device = transfer::upload(&x, keys)?;
                let mut on_gpu = memory::alloc::<I>(x.stream, keys.len(), || "indices".into())?;
                let mut view = on_gpu.slice_mut(0..keys.len());
                let ran = self.run_with_workspace(&x, &request, |x, plan, ws| {
                    let keys = device.slice_mut(0..keys.len());
                    run::sort_with_values(x, plan, keys, &mut view, row_len, ws)
                })?;
                transfer::download(&x, &on_gpu.slice(0..keys.len()), indices)?;
                return Ok(ran);
            }
            None => {
                let rows = keys
                    .par_chunks(row_len)
                    .zip(indices.par_chunks_mut(row_len));
                rows.for_each(|(row, out)| {
                    let pairs = cpu::sorted_pairs(row, self.key_order(), serial(plan.strategy));
                    for (o, &(_, i)) in out.iter_mut().zip(&pairs) {
                        *o = I::from_usize(i);
                    }
                });
            }
        }
        Ok(plan)
    }

    /// Sorts `keys` and applies the same permutation to `values`, stably: equal keys keep
    /// their values' original order. The key-value sort of CUB's `SortPairs`. Values are plain
    /// data ([`bytemuck::Pod`]): row ids, indices, or structs of them.
    ///
    /// ```
    /// let mut keys = vec![3u32, 1, 3, 2];
    /// let mut ids = vec![0u64, 1, 2, 3];
    /// bitonic::Sorter::new().sort_pairs(&mut keys, &mut ids)?;
    /// assert_eq!((keys, ids), (vec![1, 2, 3, 3], vec![1, 3, 0, 2]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_pairs<K: SortKey, V: bytemuck::Pod + Send + Sync>(
        &self,
        keys: &mut [K],
        values: &mut [V],
    ) -> Result<Plan> {
        let n = keys.len();
        self.sort_pairs_rows(keys, values, n)
    }

    /// [`Sorter::sort_pairs`] of every row of `row_len` keys and values. Values of 4 or 8
    /// bytes move with their keys on the GPU (the key-value merge sort, or the rows' key-index
    /// pairs); values of other sizes follow the GPU's argsort, applied on the CPU.
    ///
    /// ```
    /// let mut keys = vec![2u32, 1, /* next row */ 9, 8];
    /// let mut ids = vec![[1u8; 3], [0; 3], [3; 3], [2; 3]];
    /// bitonic::Sorter::new().sort_pairs_rows(&mut keys, &mut ids, 2)?;
    /// assert_eq!(ids, [[0; 3], [1; 3], [2; 3], [3; 3]]);
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn sort_pairs_rows<K: SortKey, V: bytemuck::Pod + Send + Sync>(
        &self,
        keys: &mut [K],
        values: &mut [V],
        row_len: usize,
    ) -> Result<Plan> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), values.len())?;
        let value_bytes = std::mem::size_of::<V>();
        // Values the GPU moves as words of their size (aligned for them).
        let words = match value_bytes {
            4 => bytemuck::try_cast_slice::<V, u32>(values).is_ok(),
            8 => bytemuck::try_cast_slice::<V, u64>(values).is_ok(),
            _ => false,
        };
        // Values the GPU cannot move follow the permutation of an argsort (u32 indices).
        let operation = match words {
            true => Operation::SortPairs { value_bytes },
            false => Operation::Argsort { index_bytes: 4 },
        };
        let layout = rows_layout(keys.len(), row_len);
        let request = self.request(operation, K::DTYPE, keys.len(), layout);
        let (plan, gpu) = self.plan_of(&request)?;
        if keys.len() < 2 {
            return Ok(plan);
        }
        let permutation: Vec<usize> = match gpu {
            Some((gpu, policy)) if words => {
                let x = self.exec(gpu, policy);
                return match value_bytes {
                    4 => {
                        let words = bytemuck::cast_slice_mut::<V, u32>(values);
                        self.pairs_on_gpu(&x, &request, keys, words, row_len)
                    }
                    _ => {
                        let words = bytemuck::cast_slice_mut::<V, u64>(values);
                        self.pairs_on_gpu(&x, &request, keys, words, row_len)
                    }
                };
            }
            Some((gpu, policy)) => {
                let mut indices = vec![0u32; keys.len()];
                let x = self.exec(gpu, policy);
                let mut device = transfer::upload(&x, keys)?;
                let mut on_gpu = memory::alloc::<u32>(x.stream, keys.len(), || "indices".into())?;
                let mut view = on_gpu.slice_mut(0..keys.len());
                let ran = self.run_with_workspace(&x, &request, |x, plan, ws| {
                    let device = device.slice_mut(0..keys.len());
                    run::sort_with_values(x, plan, device, &mut view, row_len, ws)
                })?;
                transfer::download(&x, &on_gpu.slice(0..keys.len()), &mut indices)?;
                let permutation: Vec<usize> = indices.into_par_iter().map(|i| i as usize).collect();
                apply_rows(keys, &permutation, row_len);
                apply_rows(values, &permutation, row_len);
                return Ok(ran);
            }
            None => keys
                .par_chunks(row_len)
                .flat_map_iter(|row| {
                    cpu::sorted_pairs(row, self.key_order(), serial(plan.strategy))
                })
                .map(|(_, i)| i)
                .collect(),
        };
        apply_rows(keys, &permutation, row_len);
        apply_rows(values, &permutation, row_len);
        Ok(plan)
    }

    /// Writes each row's first `k` keys of a stable sort of `keys` (left as they are) in the
    /// sorter's [`crate::Order`] to `values` and their indices to `indices` (`k` of each):
    /// descending, the largest `k`; among equal keys the smaller index comes first. `k` may be
    /// 0 (nothing selected) up to `keys.len()` ([`crate::Error::BadK`]).
    ///
    /// ```
    /// use bitonic::{Order, Sorter};
    /// let keys = [0.5f32, 2.0, -1.0, 2.0, f32::NAN];
    /// let (mut values, mut indices) = (vec![0.0f32; 3], vec![0usize; 3]);
    /// Sorter::new().order(Order::Descending).topk(&keys, &mut values, &mut indices, 3)?;
    /// assert!(values[0].is_nan()); // NaN is the largest key in total order
    /// assert_eq!((&values[1..], indices), (&[2.0, 2.0][..], vec![4, 1, 3]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn topk<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        values: &mut [K],
        indices: &mut [I],
        k: usize,
    ) -> Result<Plan> {
        self.topk_rows(keys, values, indices, keys.len(), k)
    }

    /// [`Sorter::topk`] of every row of `row_len` keys of a row-major matrix: `values` and
    /// `indices` hold `k` a row (`rows × k`), each index counted from its row's start.
    ///
    /// ```
    /// use bitonic::{Order, Sorter};
    /// let m = [3u32, 1, 2, /* next row */ 7, 9, 7];
    /// let (mut values, mut indices) = (vec![0u32; 4], vec![0u32; 4]);
    /// Sorter::new().order(Order::Descending).topk_rows(&m, &mut values, &mut indices, 3, 2)?;
    /// assert_eq!((values, indices), (vec![3, 2, 9, 7], vec![0, 2, 1, 0]));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn topk_rows<K: SortKey, I: SortIndex>(
        &self,
        keys: &[K],
        values: &mut [K],
        indices: &mut [I],
        row_len: usize,
        k: usize,
    ) -> Result<Plan> {
        let rows = check_topk(keys.len(), row_len, k, values.len(), indices.len())?;
        check_index_width::<I>(row_len)?;
        let operation = Operation::Topk {
            k,
            index_bytes: std::mem::size_of::<I>(),
        };
        let request = self.request(
            operation,
            K::DTYPE,
            keys.len(),
            rows_layout(keys.len(), row_len),
        );
        let (plan, gpu) = self.plan_of(&request)?;
        if rows == 0 || k == 0 {
            return Ok(plan);
        }
        match gpu {
            Some((gpu, policy)) => {
                let x = self.exec(gpu, policy);
                let device = transfer::upload(&x, keys)?;
                let len = rows * k;
                let mut best = memory::alloc::<K>(x.stream, len, || "top-k values".into())?;
                let mut at = memory::alloc::<I>(x.stream, len, || "top-k indices".into())?;
                let mut at_view = at.slice_mut(0..len);
                let ran = self.run_with_workspace(&x, &request, |x, plan, ws| {
                    let outputs = (best.slice_mut(0..len), &mut at_view);
                    let keys = device.slice(0..keys.len());
                    run::select(x, plan, &keys, outputs, (row_len, k), ws)
                })?;
                transfer::download(&x, &best.slice(0..len), values)?;
                transfer::download(&x, &at.slice(0..len), indices)?;
                return Ok(ran);
            }
            None => {
                let outputs = (values, indices);
                cpu::topk::topk_rows(keys, outputs, (row_len, k), self.key_order())
            }
        }
        Ok(plan)
    }

    /// Sorts host keys in `layout` (`offsets` cut segments): on the GPU as the plan says, or
    /// on the CPU with `on_cpu`.
    fn sort_keys<K: SortKey>(
        &self,
        keys: &mut [K],
        layout: Layout,
        offsets: &[usize],
        on_cpu: impl FnOnce(&mut [K], Strategy) -> Result<()>,
    ) -> Result<Plan> {
        let request = self.request(Operation::Sort, K::DTYPE, keys.len(), layout);
        let (plan, gpu) = self.plan_of(&request)?;
        match gpu {
            Some((gpu, policy)) if keys.len() >= 2 => {
                let x = self.exec(gpu, policy);
                let n = keys.len();
                let mut ran = None;
                transfer::round_trip(&x, keys, |device| {
                    let plan = self.run_with_workspace(&x, &request, |x, plan, ws| {
                        run::sort(x, plan, device.slice_mut(0..n), offsets, ws)
                    })?;
                    ran = Some(plan);
                    Ok(())
                })?;
                Ok(ran.expect("the GPU ran a plan"))
            }
            Some(_) => Ok(plan),
            None => {
                on_cpu(keys, plan.strategy)?;
                Ok(plan)
            }
        }
    }

    /// Copies keys and 4- or 8-byte values (as words `W`) to the GPU, sorts them there with
    /// the plan of `request`, and copies both back; returns the plan that ran.
    fn pairs_on_gpu<K: SortKey, W: DeviceRepr + bytemuck::Pod>(
        &self,
        x: &Exec,
        request: &Request,
        keys: &mut [K],
        values: &mut [W],
        row_len: usize,
    ) -> Result<Plan> {
        let n = keys.len();
        let mut on_gpu = transfer::upload(x, values)?;
        let mut view = on_gpu.slice_mut(0..n);
        let mut ran = None;
        transfer::round_trip(x, keys, |device| {
            let plan = self.run_with_workspace(x, request, |x, plan, ws| {
                run::sort_with_values(x, plan, device.slice_mut(0..n), &mut view, row_len, ws)
            })?;
            ran = Some(plan);
            Ok(())
        })?;
        transfer::download(x, &on_gpu.slice(0..n), values)?;
        Ok(ran.expect("the GPU ran a plan"))
    }

    /// The call's device, policy and stream.
    pub(super) fn exec<'a>(&'a self, gpu: &'a Gpu, policy: &'a Policy) -> Exec<'a> {
        Exec {
            gpu,
            policy,
            stream: self.stream_of(gpu),
        }
    }

    /// Plans `request` on `x`'s device with the sorter's workspace, or one of its own (a
    /// smaller plan when the device has not the memory), and runs it with `work`; returns the
    /// plan that ran.
    pub(super) fn run_with_workspace(
        &self,
        x: &Exec,
        request: &Request,
        work: impl FnOnce(&Exec, &Plan, cudarc::driver::CudaViewMut<u8>) -> Result<()>,
    ) -> Result<Plan> {
        let mut guard = self.workspace.map(|w| w.lock());
        let given = guard.as_mut().map(|buffer| buffer.as_view_mut());
        let mut owned = None;
        let (plan, workspace) = plan_with_workspace(x, request, given, &mut owned)?;
        work(x, &plan, workspace)?;
        Ok(plan)
    }
}

/// The strategy of one row's sort inside a parallel loop over rows.
fn serial(strategy: Strategy) -> Strategy {
    match strategy {
        Strategy::CpuNetwork => Strategy::CpuNetworkSerial,
        other => other,
    }
}

/// The segments of `keys` cut at `offsets` (checked by [`check_segments`]).
fn segments<'a, K>(keys: &'a mut [K], offsets: &[usize]) -> Vec<&'a mut [K]> {
    let mut segments = Vec::with_capacity(offsets.len().saturating_sub(1));
    let mut rest = keys;
    for w in offsets.windows(2) {
        let (segment, tail) = rest.split_at_mut(w[1] - w[0]);
        segments.push(segment);
        rest = tail;
    }
    segments
}

/// Each row's elements in the order of `permutation` (indices within the row).
fn apply_rows<T: Copy + Send + Sync>(items: &mut [T], permutation: &[usize], row_len: usize) {
    let old = items.to_vec();
    items
        .par_iter_mut()
        .zip(permutation.par_iter())
        .enumerate()
        .for_each(|(j, (item, &i))| *item = old[j - j % row_len.max(1) + i]);
}
