//! The calls on device buffers: each makes its plan and queues it on the sorter's stream (the
//! caller's, or the GPU's own), in place, with no copy to or from the host and no
//! synchronisation: a call returns when its work is queued. Errors raised by the kernels
//! surface at the next synchronizing call. The scratch memory comes from the caller's
//! [`DeviceWorkspace`] when the sorter has one (then a call allocates nothing), else from the
//! stream's memory pool.

use super::{check_index_width, check_rows, check_segments, check_topk, rows_layout, Sorter};
use crate::cuda::exec::Exec;
use crate::cuda::run;
use crate::error::{check_same_len, Error, Result};
use crate::plan::{plan_sample, Layout, Operation, Plan, Request, SamplePlan};
use crate::sample::{DeviceFilters, Logit};
use crate::{SortIndex, SortKey};
use cudarc::driver::{CudaSlice, CudaViewMut, DeviceRepr};
use std::sync::Mutex;

/// A caller's device memory for the scratch of GPU calls (CUB's temporary storage), so that a
/// call allocates nothing: size it with [`crate::Plan::workspace_bytes`] of the call's plan
/// ([`Sorter::plan`]) and give it with [`Sorter::workspace`]. One call at a time uses it (a
/// second call from another thread waits), and calls on one stream may share it: a call's
/// scratch is dead when its work is done, and the stream orders the next call after it.
///
/// ```no_run
/// use bitonic::plan::{Layout, Operation};
/// use bitonic::{DType, DeviceWorkspace, Gpu, Sorter};
/// let gpu = Gpu::get()?;
/// let n = 1 << 24;
/// let plan = Sorter::new().plan(Operation::Sort, DType::U32, n, Layout::Whole)?;
/// let workspace = DeviceWorkspace::new(gpu.stream().alloc_zeros::<u8>(plan.workspace_bytes().max(1))?);
/// let mut keys = gpu.stream().alloc_zeros::<u32>(n)?;
/// Sorter::new().workspace(&workspace).sort_device(&mut keys)?; // allocates nothing
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DeviceWorkspace {
    buffer: Mutex<CudaSlice<u8>>,
}

impl DeviceWorkspace {
    /// `buffer` (of the GPU the calls run on) as the calls' scratch memory.
    pub fn new(buffer: CudaSlice<u8>) -> DeviceWorkspace {
        DeviceWorkspace {
            buffer: Mutex::new(buffer),
        }
    }

    /// Bytes it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer back.
    pub fn into_inner(self) -> CudaSlice<u8> {
        self.buffer.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, CudaSlice<u8>> {
        self.buffer.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<'g> Sorter<'g> {
    /// Takes the scratch memory of GPU calls from `workspace` instead of allocating it: the
    /// calls then allocate nothing (on device buffers), and a plan that needs more than it
    /// holds gives way to one that fits where there is one (the merge sort to the network's
    /// passes: [`crate::plan::Fallback`]), else is [`Error::WorkspaceTooSmall`].
    pub fn workspace<'h>(self, workspace: &'h DeviceWorkspace) -> Sorter<'h>
    where
        'g: 'h,
    {
        Sorter {
            workspace: Some(workspace),
            gpu: self.gpu,
            stream: self.stream,
            ..self
        }
    }

    /// Sorts keys already on the GPU, in place, queued on the sorter's stream. Device buffers
    /// are cudarc's [`CudaSlice`] of the sorter's GPU ([`crate::Gpu::context`]).
    pub fn sort_device<K: SortKey>(&self, keys: &mut CudaSlice<K>) -> Result<Plan> {
        let len = keys.len();
        self.sort_rows_device(keys, len)
    }

    /// [`Sorter::sort_rows`] of keys on the GPU.
    pub fn sort_rows_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        row_len: usize,
    ) -> Result<Plan> {
        check_rows(keys.len(), row_len)?;
        let layout = rows_layout(keys.len(), row_len);
        let request = self.request(Operation::Sort, K::DTYPE, keys.len(), layout);
        self.on_device(&request, &[keys.context().ordinal()], |x, plan, ws| {
            run::sort(x, plan, keys.as_view_mut(), &[], ws)
        })
    }

    /// [`Sorter::sort_segments`] of keys on the GPU (the offsets on the host).
    pub fn sort_segments_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        offsets: &[usize],
    ) -> Result<Plan> {
        check_segments(keys.len(), offsets)?;
        let layout = Layout::segments(offsets);
        let request = self.request(Operation::Sort, K::DTYPE, keys.len(), layout);
        self.on_device(&request, &[keys.context().ordinal()], |x, plan, ws| {
            run::sort(x, plan, keys.as_view_mut(), offsets, ws)
        })
    }

    /// Sorts every row of `row_len` keys on the GPU in place, stably, and writes for each
    /// sorted key its index in its row before the sort to `indices` (as many as keys, of any
    /// [`SortIndex`] type).
    pub fn argsort_rows_device<K: SortKey, I: SortIndex>(
        &self,
        keys: &mut CudaSlice<K>,
        indices: &mut CudaSlice<I>,
        row_len: usize,
    ) -> Result<Plan> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), indices.len())?;
        check_index_width::<I>(row_len)?;
        let operation = Operation::Argsort {
            index_bytes: std::mem::size_of::<I>(),
        };
        let request = self.request(
            operation,
            K::DTYPE,
            keys.len(),
            rows_layout(keys.len(), row_len),
        );
        let devices = [keys.context().ordinal(), indices.context().ordinal()];
        self.on_device(&request, &devices, |x, plan, ws| {
            let mut indices = indices.as_view_mut();
            run::sort_with_values(x, plan, keys.as_view_mut(), &mut indices, row_len, ws)
        })
    }

    /// Sorts every row of `row_len` keys on the GPU stably and moves `values` (4- or 8-byte
    /// elements, one a key) with them.
    pub fn sort_pairs_rows_device<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
        &self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
        row_len: usize,
    ) -> Result<Plan> {
        check_rows(keys.len(), row_len)?;
        check_same_len(keys.len(), values.len())?;
        let operation = Operation::SortPairs {
            value_bytes: std::mem::size_of::<V>(),
        };
        let request = self.request(
            operation,
            K::DTYPE,
            keys.len(),
            rows_layout(keys.len(), row_len),
        );
        let devices = [keys.context().ordinal(), values.context().ordinal()];
        self.on_device(&request, &devices, |x, plan, ws| {
            let mut values = values.as_view_mut();
            run::sort_with_values(x, plan, keys.as_view_mut(), &mut values, row_len, ws)
        })
    }

    /// [`Sorter::topk_rows`] of keys on the GPU, into device buffers of `rows × k` values and
    /// indices (of any [`SortIndex`] type), queued on the sorter's stream (the keys are left
    /// as they are). With `k == row_len` it is each row's stable sort with indices into
    /// buffers of their own, the values the input's keys bit for bit: what Python's `sort`
    /// of a CUDA tensor runs.
    ///
    /// ```no_run
    /// use bitonic::{Gpu, Order, Sorter};
    /// let gpu = Gpu::get()?;
    /// let keys = gpu.stream().clone_htod(&[4.0f32, 1.0, 8.0, 2.0])?;
    /// let mut values = gpu.stream().alloc_zeros::<f32>(2)?;
    /// let mut indices = gpu.stream().alloc_zeros::<i64>(2)?;
    /// let largest = Sorter::new().order(Order::Descending);
    /// largest.topk_rows_device(&keys, &mut values, &mut indices, 4, 2)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&indices)?, [2, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn topk_rows_device<K: SortKey, I: SortIndex>(
        &self,
        keys: &CudaSlice<K>,
        values: &mut CudaSlice<K>,
        indices: &mut CudaSlice<I>,
        row_len: usize,
        k: usize,
    ) -> Result<Plan> {
        check_topk(keys.len(), row_len, k, values.len(), indices.len())?;
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
        let devices = [
            keys.context().ordinal(),
            values.context().ordinal(),
            indices.context().ordinal(),
        ];
        self.on_device(&request, &devices, |x, plan, ws| {
            let outputs = (values.as_view_mut(), &mut indices.as_view_mut());
            run::select(x, plan, &keys.as_view(), outputs, (row_len, k), ws)
        })
    }

    /// Draws a token from each row of `vocab` logits of `logits` after `filters`, at the row's
    /// number of `uniform` (one a row), into `tokens` (one a row; `-1` for a row with no logit
    /// above `-inf`): what [`crate::sample::sample_host`] draws (see [`crate::sample`]), in one
    /// launch on the sorter's stream, which returns the plan it ran. Sums of weights are exact
    /// in fixed point (a weight is rounded to a multiple of `2^-40` of the largest), so a token
    /// can differ from the host's where a weight or a running sum sits on a boundary to its
    /// last bits, and a token of weight below `2^-41` (a logit more than about 28 below the
    /// largest, after temperature) is never drawn, where the host draws it with a probability
    /// below `2^-41` of the total. The sorter's order is not used; its policy's
    /// [`crate::policy::SamplePolicy`] shapes the plan.
    ///
    /// ```no_run
    /// use bitonic::sample::{DeviceFilters, DeviceRow};
    /// use bitonic::{Gpu, Sorter};
    /// let gpu = Gpu::get()?;
    /// let logits = gpu.stream().clone_htod(&[0.0f32, 5.0, 1.0, 4.0])?;
    /// let uniform = gpu.stream().clone_htod(&[0.0f32])?;
    /// let mut token = gpu.stream().alloc_zeros::<i64>(1)?;
    /// let top_2 = DeviceFilters::new().top_k(DeviceRow::All(2));
    /// Sorter::new().sample_rows_device(&logits, 4, &top_2, &uniform, &mut token)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&token)?, [1]); // tokens 1 and 3 kept; u = 0 draws the first
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample_rows_device<L: Logit + DeviceRepr>(
        &self,
        logits: &CudaSlice<L>,
        vocab: usize,
        filters: &DeviceFilters<'_>,
        uniform: &CudaSlice<f32>,
        tokens: &mut CudaSlice<i64>,
    ) -> Result<SamplePlan> {
        let rows = crate::sample::rows_of(logits.len(), vocab, uniform.len(), tokens.len())?;
        filters.validate(rows)?;
        let mut devices = vec![
            logits.context().ordinal(),
            uniform.context().ordinal(),
            tokens.context().ordinal(),
        ];
        devices.extend(filters.devices());
        let gpu = self.gpu_holding(&devices)?;
        let policy = self.policy_ref(gpu);
        let plan = plan_sample(rows, vocab, gpu.info(), &policy.sample)?;
        let x = self.exec(gpu, policy);
        let settings = filters.settings();
        crate::cuda::sample::run(
            &x,
            &plan,
            L::DTYPE,
            &logits.as_view(),
            &settings,
            &uniform.as_view(),
            &mut tokens.as_view_mut(),
        )?;
        Ok(plan)
    }

    /// Plans `request` on the sorter's GPU (always the GPU: device buffers), checks that the
    /// buffers of `devices` are on it, and runs the plan with `work` on the sorter's stream with
    /// its workspace: the caller's, or allocated on the stream.
    fn on_device(
        &self,
        request: &Request,
        devices: &[usize],
        work: impl FnOnce(&Exec, &Plan, CudaViewMut<u8>) -> Result<()>,
    ) -> Result<Plan> {
        let gpu = self.gpu_holding(devices)?;
        let request = request.clone().backend(crate::Backend::Cuda);
        let x = self.exec(gpu, self.policy_ref(gpu));
        self.run_with_workspace(&x, &request, work)
    }

    /// The sorter's GPU for a call on device buffers, which must be on it (`devices`: theirs);
    /// an error on a CPU backend.
    fn gpu_holding(&self, devices: &[usize]) -> Result<&crate::Gpu> {
        if !matches!(self.backend, crate::Backend::Auto | crate::Backend::Cuda) {
            return Err(Error::Unsupported("device buffers on a CPU backend"));
        }
        let gpu = self.device()?;
        let sorter = gpu.info().ordinal;
        if let Some(&buffer) = devices.iter().find(|&&d| d != sorter) {
            return Err(Error::WrongDevice { buffer, sorter });
        }
        Ok(gpu)
    }
}
