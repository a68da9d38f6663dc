//! [`Sorter`]: the options of a call (backend, device, stream, GPU version, order, float
//! order, tuning) and every call, on host slices (host.rs) and on device buffers (device.rs).
//! Each call makes its [`Plan`] ([`crate::plan`]), runs it on the CPU backend (src/cpu) or the
//! CUDA backend (src/cuda/run.rs), and returns it.

mod device;
mod host;
mod out_of_core;
mod resident;
mod schedule;

pub use device::DeviceWorkspace;

use crate::cuda::exec::Exec;
use crate::cuda::memory;
use crate::cuda::Gpu;
use crate::device::DeviceFacts;
use crate::error::{Error, GpuUnavailable, Result};
use crate::key::KeyOrder;
use crate::options::{Backend, FloatOrder, Order, Version};
use crate::plan::{self, Layout, Operation, Plan, Request};
use crate::policy::Policy;
use crate::{DType, SortIndex};
use cudarc::driver::{CudaStream, CudaViewMut};
use std::sync::Arc;

/// The options of a call, and the calls. Cheap to copy; build one per call or keep it.
///
/// Arguments come in one order: the keys, then the values or indices (outputs last among
/// them), then the shape (row length, k).
///
/// ```
/// use bitonic::{Backend, Order, Sorter, Strategy};
/// let mut v: Vec<i32> = (0..1000).map(|i| (i * 7919) % 1013 - 500).collect();
/// let plan = Sorter::new().backend(Backend::Cpu).order(Order::Descending).sort(&mut v)?;
/// assert!(v.windows(2).all(|w| w[0] >= w[1]));
/// assert_eq!((plan.backend, plan.strategy), (Backend::Cpu, Strategy::CpuSort));
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// A GPU of your choice ([`Gpu::new`]), on a stream of yours:
///
/// ```no_run
/// let gpu = bitonic::Gpu::new(1)?; // the second GPU, with a stream of its own
/// let stream = gpu.context().new_stream()?;
/// let mut keys = stream.clone_htod(&[3u64, 1, 2])?;
/// bitonic::Sorter::new().gpu(&gpu).stream(&stream).sort_device(&mut keys)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Sorter<'g> {
    backend: Backend,
    version: Option<Version>,
    order: Order,
    float_order: FloatOrder,
    gpu: Option<&'g Gpu>,
    stream: Option<&'g Arc<CudaStream>>,
    workspace: Option<&'g DeviceWorkspace>,
    policy: Option<Policy>,
    device_memory: Option<usize>,
}

impl Sorter<'static> {
    /// Ascending, floats in total order, [`Backend::Auto`], on the process's GPU 0
    /// ([`Gpu::get`]) and its stream when a GPU runs.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<'g> Sorter<'g> {
    /// Where the call runs.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Pins the GPU algorithm. A version the call cannot honour (V0–V5 for rows, argsorts,
    /// key-value sorts or top-k; any version on a CPU backend) is an error; with
    /// [`Backend::Auto`] a pinned version sorts on the GPU whatever the length.
    pub fn version(mut self, version: Version) -> Self {
        self.version = Some(version);
        self
    }

    /// The order: of a sort, and of the sort whose first k a top-k keeps (descending keeps
    /// the largest).
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// How floats compare ([`FloatOrder::Total`] unless asked).
    pub fn float_order(mut self, float_order: FloatOrder) -> Self {
        self.float_order = float_order;
        self
    }

    /// Runs GPU calls on `gpu` (instead of [`Gpu::get`]'s GPU 0).
    pub fn gpu<'h>(self, gpu: &'h Gpu) -> Sorter<'h>
    where
        'g: 'h,
    {
        Sorter {
            gpu: Some(gpu),
            stream: self.stream,
            workspace: self.workspace,
            ..self
        }
    }

    /// Queues GPU calls on `stream` (a stream of the GPU's context: one of the caller's, or one
    /// wrapped with [`cudarc::driver::CudaContext::wrap_borrowed_stream`]) instead of the
    /// GPU's own ([`Gpu::stream`]). Calls on device buffers then return without waiting for
    /// the GPU, allocate their workspace on that stream (or take the caller's:
    /// [`Sorter::workspace`]), and can be captured into a CUDA graph there (with a workspace,
    /// so that the graph allocates nothing; compile the kernels before, with
    /// [`Sorter::prepare`] or one call).
    pub fn stream<'h>(self, stream: &'h Arc<CudaStream>) -> Sorter<'h>
    where
        'g: 'h,
    {
        Sorter {
            stream: Some(stream),
            gpu: self.gpu,
            workspace: self.workspace,
            ..self
        }
    }

    /// Tunes the GPU calls with `policy` instead of the GPU architecture's own
    /// ([`Policy::for_device`]): for benchmarks that compare settings. A policy that does not
    /// [`Policy::validate`] makes every GPU call an error.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The most device memory, in bytes, that [`Sorter::sort_large`] takes (its runs' sorts and
    /// its merge), instead of what the device has free when the call starts less a sixteenth.
    /// Smaller budgets make more runs: tests use it to go out of core on any GPU.
    pub fn device_memory(mut self, bytes: usize) -> Self {
        self.device_memory = Some(bytes);
        self
    }

    /// The plan of `operation` on `len` keys of `dtype` in `layout` with this sorter's
    /// options, without running it: what would run ([`Plan::strategy`]), the kernels it
    /// compiles, and the workspace a caller's buffer must hold for the `*_in` calls
    /// ([`Plan::workspace_bytes`]). The GPU is probed only when it could be chosen.
    ///
    /// ```
    /// use bitonic::plan::{Layout, Operation};
    /// use bitonic::{Backend, DType, Sorter, Strategy};
    /// let plan = Sorter::new().backend(Backend::Cpu).plan(Operation::Sort, DType::F32, 1 << 20, Layout::Whole)?;
    /// assert_eq!((plan.strategy, plan.workspace_bytes()), (Strategy::CpuSort, 0));
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn plan(
        &self,
        operation: Operation,
        dtype: DType,
        len: usize,
        layout: Layout,
    ) -> Result<Plan> {
        let request = self.request(operation, dtype, len, layout);
        self.plan_of(&request).map(|(plan, _)| plan)
    }

    /// Compiles and loads the GPU kernels of the plan of `operation` on `len` keys of `dtype`
    /// in `layout` ([`Sorter::plan`]), so that the first call's time is the call's. Kernels
    /// compile once a machine (seconds, cached on disk: [`crate::cuda::on_compile`] tells of
    /// it); nothing happens when the call would run on the CPU. Returns the plan.
    ///
    /// ```no_run
    /// use bitonic::plan::{Layout, Operation};
    /// use bitonic::{DType, Sorter};
    /// let sorter = Sorter::new();
    /// sorter.prepare(Operation::Sort, DType::F32, 1 << 24, Layout::Whole)?; // compiles here
    /// let mut keys: Vec<f32> = (0..1 << 24).map(|i| (i % 1000) as f32).collect();
    /// let plan = sorter.sort(&mut keys)?; // the sort alone
    /// # Ok::<(), bitonic::Error>(())
    /// ```
    pub fn prepare(
        &self,
        operation: Operation,
        dtype: DType,
        len: usize,
        layout: Layout,
    ) -> Result<Plan> {
        let request = self.request(operation, dtype, len, layout);
        let (plan, gpu) = self.plan_of(&request)?;
        if let Some((gpu, policy)) = gpu {
            gpu.prepare(policy, &plan.modules)?;
        }
        Ok(plan)
    }

    /// The request of a call with this sorter's options.
    fn request(&self, operation: Operation, dtype: DType, len: usize, layout: Layout) -> Request {
        Request::new(operation, dtype, len)
            .layout(layout)
            .order(self.order)
            .float_order(self.float_order)
            .backend(self.backend)
            .version(self.version)
    }

    /// The plan of `request`, and the GPU and policy when it runs there. The GPU is probed
    /// only when it could be chosen; a request that needs it without one says why
    /// ([`Error::NoGpu`]).
    fn plan_of(&self, request: &Request) -> Result<(Plan, Option<(&Gpu, &Policy)>)> {
        let may_use_gpu = match request.backend {
            Backend::Cuda => true,
            Backend::Auto => request.version.is_some() || request.len >= plan::AUTO_GPU_MIN_LEN,
            _ => false,
        };
        let probed = if may_use_gpu {
            Some(self.device())
        } else {
            None
        };
        let gpu = match &probed {
            Some(Ok(gpu)) => Some((*gpu, self.policy_ref(gpu))),
            _ => None,
        };
        let facts = gpu.map(|(g, p)| (g as &dyn DeviceFacts, p));
        let plan = plan::plan(request, facts).map_err(|e| match (e, probed) {
            // The plan had no GPU to give: the probe says why.
            (Error::NoGpu(_), Some(Err(why))) => Error::NoGpu(why),
            (e, _) => e,
        })?;
        let on_gpu = gpu.filter(|_| plan.strategy.on_gpu());
        Ok((plan, on_gpu))
    }

    /// The sorter's GPU: the one given, else the process's GPU 0.
    fn device(&self) -> std::result::Result<&Gpu, GpuUnavailable> {
        match self.gpu {
            Some(gpu) => Ok(gpu),
            None => Gpu::get(),
        }
    }

    /// The sorter's policy, else `gpu`'s architecture's (kept for the life of `gpu`).
    fn policy_ref<'a>(&'a self, gpu: &'a Gpu) -> &'a Policy {
        match &self.policy {
            Some(policy) => policy,
            None => gpu.default_policy(),
        }
    }

    /// The stream a GPU call on `gpu` runs on: the caller's, else the GPU's own.
    fn stream_of<'a>(&'a self, gpu: &'a Gpu) -> &'a Arc<CudaStream> {
        self.stream.unwrap_or_else(|| gpu.stream())
    }

    /// Bytes the GPU sort of `n` keys of `dtype` in one array moves through device memory: a
    /// read and a write of every word a pass over the array, the key maps around a seed
    /// version, and the widening and narrowing of 16-bit keys. The benchmarks' yardstick of
    /// achieved bandwidth (the `bench` feature).
    #[cfg(feature = "bench")]
    pub fn bytes_moved(&self, n: usize, dtype: DType) -> Result<u64> {
        let request = self
            .request(Operation::Sort, dtype, n, Layout::Whole)
            .backend(Backend::Cuda);
        let (plan, _) = self.plan_of(&request)?;
        let word = if plan.widen.is_some() {
            4
        } else {
            dtype.size()
        };
        let (passes, maps) = match &plan.steps {
            plan::Steps::Seed(s) => (s.passes(n), if s.map.is_some() { 2 } else { 0 }),
            plan::Steps::Merge(m) => (1 + m.levels.levels.len(), 0),
            plan::Steps::Passes(p) => (p.pass_count(), 0),
            plan::Steps::Nothing => (0, 0),
            _ => {
                return Err(Error::Unsupported(
                    "byte counts of other plans than sorts of keys",
                ))
            }
        };
        // Widening reads a key and writes a word; narrowing the reverse.
        let widen = if plan.widen.is_some() {
            2 * n * (dtype.size() + word)
        } else {
            0
        };
        Ok(((passes + maps) * 2 * n * word + widen) as u64)
    }

    fn key_order(&self) -> KeyOrder {
        KeyOrder {
            order: self.order,
            float: self.float_order,
        }
    }
}

/// A GPU call's plan on `x`'s device, its kernels loaded, and its workspace: the caller's
/// (the plan then fits it: a merge sort, or a radix sort of keys alone, without room gives way
/// to the network's passes), or
/// allocated on the call's stream (on failure, the plan within the memory that allocation
/// failed to get, or [`Error::DeviceMemory`]).
fn plan_with_workspace<'w>(
    x: &Exec,
    request: &Request,
    workspace: Option<CudaViewMut<'w, u8>>,
    owned: &'w mut Option<memory::OwnedWorkspace>,
) -> Result<(Plan, CudaViewMut<'w, u8>)> {
    let facts = Some((x.gpu as &dyn DeviceFacts, x.policy));
    let plan = match &workspace {
        Some(given) => {
            plan::plan_within(request, facts, Some(given.len())).map_err(|e| match e {
                Error::DeviceMemory { bytes, .. } => Error::WorkspaceTooSmall {
                    needed: bytes,
                    given: given.len(),
                },
                other => other,
            })?
        }
        None => plan::plan(request, facts)?,
    };
    if let Some(given) = workspace {
        x.gpu.prepare(x.policy, &plan.modules)?;
        return Ok((plan, given));
    }
    let what = || "a call's workspace".to_string();
    let (plan, buffer) = match memory::OwnedWorkspace::new(x.stream, plan.workspace_bytes(), what) {
        Ok(buffer) => (plan, buffer),
        Err(Error::DeviceMemory { bytes, .. }) => {
            let smaller = plan::plan_within(request, facts, Some(bytes.saturating_sub(1)))?;
            let buffer = memory::OwnedWorkspace::new(x.stream, smaller.workspace_bytes(), what)?;
            (smaller, buffer)
        }
        Err(other) => return Err(other),
    };
    x.gpu.prepare(x.policy, &plan.modules)?;
    Ok((plan, owned.insert(buffer).view_mut()))
}

/// Whether indices of `I` can number every key of a row of `row_len` keys.
fn check_index_width<I: SortIndex>(row_len: usize) -> Result<()> {
    if row_len.saturating_sub(1) > I::MAX {
        return Err(Error::IndexTooNarrow {
            row_len,
            max: I::MAX,
        });
    }
    Ok(())
}

/// Whether `len` keys split into rows of `row_len`: a length that divides them (no keys split
/// into rows of any length, 0 included).
fn check_rows(len: usize, row_len: usize) -> Result<()> {
    if len > 0 && (row_len == 0 || len % row_len != 0) {
        return Err(Error::BadRows { len, row_len });
    }
    Ok(())
}

/// The rows of a top-k of `len` keys in rows of `row_len` keeping `k` into outputs of
/// `values` and `indices` elements: `k` from 0 to `row_len`, `rows × k` of each output.
fn check_topk(
    len: usize,
    row_len: usize,
    k: usize,
    values: usize,
    indices: usize,
) -> Result<usize> {
    check_rows(len, row_len)?;
    if k > row_len {
        return Err(Error::BadK { k, row_len });
    }
    let rows = len.checked_div(row_len).unwrap_or(0);
    for (what, len) in [("values", values), ("indices", indices)] {
        if len != rows * k {
            return Err(Error::TopkOutputLength { what, len, rows, k });
        }
    }
    Ok(rows)
}

/// Whether `offsets` cut `len` keys into segments: from 0, never decreasing, to `len`.
fn check_segments(len: usize, offsets: &[usize]) -> Result<()> {
    let valid = offsets.first() == Some(&0)
        && offsets.last() == Some(&len)
        && offsets.windows(2).all(|w| w[0] <= w[1]);
    if valid {
        Ok(())
    } else {
        Err(Error::BadSegments { len })
    }
}

/// The layout of `len` keys in rows of `row_len`: one array when a row holds them all.
fn rows_layout(len: usize, row_len: usize) -> Layout {
    if row_len >= len {
        Layout::Whole
    } else {
        Layout::Rows { row_len }
    }
}

/// An error of an out-of-core sort after it began to write the caller's slices, which may have
/// cost keys (and their values) held on the GPU or in host blocks: the error says so.
fn during_merge(error: Error) -> Error {
    const LOST: &str = "during an out-of-core sort: the output now holds part of the sort, and \
                        keys (with their values) that were on the GPU or in host blocks may be \
                        lost";
    match error {
        Error::Cuda { context, cause } => Error::Cuda {
            context: format!("{context} ({LOST})"),
            cause,
        },
        Error::DeviceMemory { bytes, what } => Error::DeviceMemory {
            bytes,
            what: format!("{what} ({LOST})"),
        },
        other => other,
    }
}
