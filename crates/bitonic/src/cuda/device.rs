//! The device handle: probing the driver, NVRTC and a GPU without panicking, the device's
//! facts, its stream, and its kernels (compiled once, cached on disk, looked up once).

use super::kernels::KernelModule;
use super::launch::config;
use super::{driver, graph, nvrtc, staging};
use crate::error::{CudaContext as _, GpuUnavailable, Result};
use crate::policy::{KernelVariant, Policy};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// What the probe learnt about the device and the CUDA libraries.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The device number (CUDA ordinal).
    pub ordinal: usize,
    /// The device's name, such as "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// The architecture as (major, minor): (9, 0) is sm_90.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors (SMs).
    pub multiprocessors: i32,
    /// The most threads a block may have.
    pub max_threads_per_block: i32,
    /// Threads a warp (32 on every NVIDIA GPU so far).
    pub warp_size: i32,
    /// Shared memory a block gets without opting in.
    pub shared_per_block: usize,
    /// Shared memory a block can get after raising its dynamic limit.
    pub shared_per_block_optin: usize,
    /// Bytes of L2 cache.
    pub l2_bytes: usize,
    /// Bytes of device memory.
    pub total_memory: usize,
    /// The driver's CUDA version, as (major, minor).
    pub driver_version: (i32, i32),
    /// NVRTC's version, as (major, minor).
    pub nvrtc_version: (i32, i32),
}

impl DeviceInfo {
    /// The `sm_XY` architecture NVRTC compiles for.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// One GPU with its context, its stream and its loaded kernel modules.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    /// The architecture's tuning ([`Policy::for_device`]).
    policy: Policy,
    /// Loaded modules by module and policy variant ([`Policy::kernel_variant`]).
    modules: Mutex<HashMap<(ModuleId, KernelVariant), Arc<CudaModule>>>,
    /// Pinned buffers for host transfers, made on first use of a large host sort.
    pub(super) staging: Mutex<Option<staging::Staging>>,
    /// Kernels already looked up, by module and name: a small sort's host time counts.
    functions: Mutex<HashMap<(ModuleId, KernelVariant, String), CudaFunction>>,
    /// The dynamic shared memory each kernel was allowed, so that it is set once.
    shared_allowed: Mutex<HashMap<usize, u32>>,
    /// Whether clusters of a kernel and shape fit the device (launch.rs asks once per shape).
    pub(super) cluster_fits: Mutex<HashMap<(usize, u32, u32, u32), bool>>,
    /// Multi-launch calls as CUDA graphs, built on first use (graph.rs).
    pub(super) graphs: Mutex<graph::GraphCache>,
    /// Device memory for a call's intermediate results ([`Gpu::scratch`]).
    scratch: Mutex<Option<CudaSlice<u8>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

/// A kernel module's file, part and tile.
type ModuleId = (&'static str, Option<&'static str>, Option<u32>);

fn id(module: &KernelModule) -> ModuleId {
    (module.file, module.part, module.tile_bits)
}

static GPU: OnceLock<std::result::Result<Gpu, GpuUnavailable>> = OnceLock::new();

impl Gpu {
    /// The process's shared handle of GPU 0 (its default stream), probed on first use; the
    /// reason when there is none. [`Gpu::new`] opens any device with a stream of its own.
    pub fn get() -> std::result::Result<&'static Gpu, GpuUnavailable> {
        GPU.get_or_init(Gpu::probe).as_ref().map_err(Clone::clone)
    }

    fn probe() -> std::result::Result<Gpu, GpuUnavailable> {
        Gpu::open_checked(0, false)
    }

    /// A `Gpu` of its own for device `ordinal`, with its own stream (the multi-GPU sorter holds
    /// one per device). Kernels compile once per process and architecture (cached on disk).
    pub fn new(ordinal: usize) -> std::result::Result<Gpu, GpuUnavailable> {
        Gpu::open_checked(ordinal, true)
    }

    /// How many CUDA devices there are, or why none can be used.
    pub fn device_count() -> std::result::Result<usize, GpuUnavailable> {
        check_libraries()?;
        std::panic::catch_unwind(|| {
            let count = CudaContext::device_count().map_err(|e| match e.0 {
                cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => GpuUnavailable::NoDevice,
                _ => GpuUnavailable::InitFailed(e.to_string()),
            })?;
            match count {
                0 => Err(GpuUnavailable::NoDevice),
                n => Ok(n as usize),
            }
        })
        .unwrap_or_else(|_| Err(panicked()))
    }

    fn open_checked(ordinal: usize, own_stream: bool) -> std::result::Result<Gpu, GpuUnavailable> {
        let count = Gpu::device_count()?;
        if ordinal >= count {
            return Err(GpuUnavailable::BadOrdinal { ordinal, count });
        }
        std::panic::catch_unwind(|| Gpu::open(ordinal, own_stream))
            .unwrap_or_else(|_| Err(panicked()))
    }

    fn open(ordinal: usize, own_stream: bool) -> std::result::Result<Gpu, GpuUnavailable> {
        let init = |e: cudarc::driver::DriverError| GpuUnavailable::InitFailed(e.to_string());
        let ctx = CudaContext::new(ordinal).map_err(init)?;
        let attr = |a: Attr| ctx.attribute(a).map_err(init);
        let driver = driver::driver_version().map_err(init)?;
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().map_err(init)?,
            compute_capability: ctx.compute_capability().map_err(init)?,
            multiprocessors: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            warp_size: attr(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as usize,
            shared_per_block_optin: attr(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as usize,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            total_memory: ctx.total_mem().map_err(init)?,
            driver_version: (driver / 1000, (driver % 1000) / 10),
            nvrtc_version: nvrtc::version().map_err(|_| GpuUnavailable::NoNvrtc)?,
        };
        if info.warp_size != 32 {
            return Err(GpuUnavailable::UnsupportedWarpSize(info.warp_size));
        }
        keep_freed_memory(&ctx, info.total_memory);
        // cudarc's event tracking gives every buffer two events, created at its allocation and
        // destroyed at its drop, and (once a context has a second stream) records and waits on
        // them at every launch: tens of microseconds of host time in a top-k of four launches
        // and four scratch buffers, more than its kernels take. The library needs none of it:
        // every buffer and launch of this `Gpu` is ordered by its one stream.
        // SAFETY: all work of this context handle is queued on `stream` (see `Gpu::context`).
        unsafe { ctx.disable_event_tracking() };
        let stream = if own_stream {
            ctx.new_stream().map_err(init)?
        } else {
            ctx.default_stream()
        };
        Ok(Gpu {
            stream,
            policy: Policy::for_device(&info),
            info,
            modules: Mutex::new(HashMap::new()),
            staging: Mutex::new(None),
            functions: Mutex::new(HashMap::new()),
            shared_allowed: Mutex::new(HashMap::new()),
            cluster_fits: Mutex::new(HashMap::new()),
            graphs: Mutex::new(graph::GraphCache::new(ctx.clone())),
            scratch: Mutex::new(None),
            ctx,
        })
    }

    /// What the probe learnt about the device and the CUDA libraries.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's CUDA context (cudarc's), for interop: allocating device buffers to sort.
    /// cudarc's event tracking is off on this handle: buffers allocated through it carry no
    /// events, and work on them is ordered by the stream it is queued on ([`Gpu::stream`]).
    /// A caller who uses them on a stream of their own orders it with the GPU's stream
    /// themselves (an event recorded on one and waited on by the other).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every sort of this `Gpu` is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The tuning this device's architecture gets by default ([`Policy::for_device`]).
    pub fn policy(&self) -> Policy {
        self.policy.clone()
    }

    /// [`Gpu::policy`], borrowed.
    pub(crate) fn default_policy(&self) -> &Policy {
        &self.policy
    }

    /// A grid for a kernel with one grid-stride loop over `n` elements.
    pub(crate) fn elementwise(&self, n: usize) -> LaunchConfig {
        let threads = 256u32;
        let blocks = (n as u32)
            .div_ceil(threads)
            .clamp(1, self.info.multiprocessors as u32 * 32);
        config(blocks, threads, 0)
    }

    /// The pinned staging buffers of large host transfers, made on first use.
    pub(crate) fn with_staging<R>(
        &self,
        f: impl FnOnce(&mut staging::Staging) -> Result<R>,
    ) -> Result<R> {
        let mut guard = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(staging::Staging::new(self)?);
        }
        f(guard.as_mut().expect("made above"))
    }

    /// A kernel of one of the embedded modules compiled for this GPU's own policy.
    pub(crate) fn function(
        &self,
        module: &'static KernelModule,
        name: &str,
    ) -> Result<CudaFunction> {
        self.function_for(&self.policy, module, name)
    }

    /// A kernel of one of the embedded modules compiled with `policy`'s numbers, compiling and
    /// loading the module on first use (a small sort's host time counts: a kernel already
    /// looked up costs one map lookup).
    pub(crate) fn function_for(
        &self,
        policy: &Policy,
        module: &'static KernelModule,
        name: &str,
    ) -> Result<CudaFunction> {
        let variant = policy.kernel_variant();
        let key = (id(module), variant, name.to_string());
        if let Some(f) = self
            .functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(f.clone());
        }
        let f = self
            .module(policy, module)?
            .load_function(name)
            .during(|| format!("finding kernel {name} in kernels/{}", module.name()))?;
        self.functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, f.clone());
        Ok(f)
    }

    /// `module` compiled with `policy`'s numbers and loaded, on first use.
    fn module(&self, policy: &Policy, module: &'static KernelModule) -> Result<Arc<CudaModule>> {
        let key = (id(module), policy.kernel_variant());
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(&key) {
            return Ok(m.clone());
        }
        let defines = super::kernel_defines(policy);
        let compiled = nvrtc::compile(module, &self.info.arch(), &defines)?;
        let cubin = compiled.cubin.as_ref().clone();
        let m = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .during(|| format!("loading kernels/{}", module.name()))?;
        modules.insert(key, m.clone());
        Ok(m)
    }

    /// Compiles (or reads from the cache) and loads every module of `modules` not loaded yet,
    /// each once however often `modules` names it, the compiles side by side on threads of
    /// their own: a first sort waits for its slowest module, not for their sum. Every later
    /// lookup of their kernels is a map lookup.
    pub(crate) fn prepare(&self, policy: &Policy, modules: &[&'static KernelModule]) -> Result<()> {
        let variant = policy.kernel_variant();
        let mut missing: Vec<&'static KernelModule> = Vec::new();
        {
            let loaded = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            for &m in modules {
                let named = missing.iter().any(|&n| id(n) == id(m));
                if !named && !loaded.contains_key(&(id(m), variant)) {
                    missing.push(m);
                }
            }
        }
        if missing.len() > 1 {
            let (arch, defines) = (self.info.arch(), super::kernel_defines(policy));
            nvrtc::compile_side_by_side(&missing, &arch, &defines)?;
        }
        missing
            .into_iter()
            .try_for_each(|m| self.module(policy, m).map(drop))
    }

    /// At least `bytes` of device memory for a call's intermediate results, kept from call to
    /// call so that a call allocates nothing and a cached graph's nodes keep pointing at it
    /// (a larger need replaces it; the memory pool keeps freed memory anyway). The caller holds
    /// the guard while it queues its work: work queued later on the stream, which may replace
    /// the buffer, runs after it.
    pub(super) fn scratch(&self, bytes: usize) -> Result<MutexGuard<'_, Option<CudaSlice<u8>>>> {
        let mut kept = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = bytes.max(256); // never an empty allocation
        if !kept.as_ref().is_some_and(|s| s.len() >= bytes) {
            // The old buffer is freed (in stream order) before its successor is allocated.
            *kept = None;
            // SAFETY: every call writes the scratch it reads first.
            let fresh = unsafe { self.stream.alloc::<u8>(bytes) }
                .during(|| format!("allocating {bytes} bytes of scratch"))?;
            *kept = Some(fresh);
        }
        Ok(kept)
    }

    /// Lets `kernel` take `bytes` of dynamic shared memory: above 48 KiB a block gets it only
    /// by asking (the device's opt-in limit caps it). Each new, larger amount is asked once.
    pub(crate) fn allow_shared(&self, kernel: &CudaFunction, bytes: u32) -> Result<()> {
        let mut allowed = self
            .shared_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let known = allowed.entry(kernel.cu_function() as usize).or_insert(0);
        if *known < bytes {
            kernel
                .set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as i32,
                )
                .during(|| format!("allowing {bytes} bytes of shared memory for a kernel"))?;
            *known = bytes;
        }
        Ok(())
    }
}

/// Lets the device's default memory pool keep up to a quarter of the device's memory after it
/// is freed, instead of handing it back to the driver at every synchronisation (the default).
/// Argsort and key-value sorts allocate scratch pairs each call; mapping fresh pages for them
/// cost more than the sort (docs/notes/rows.md). Best effort: a device without memory pools
/// simply keeps the driver's default, so failures here are ignored on purpose.
fn keep_freed_memory(ctx: &CudaContext, total_memory: usize) {
    set_pool_threshold(ctx, total_memory / 4, false);
}

/// Sets how much freed memory the device's default pool keeps, trimming it to that when
/// `trim`. Best effort, as [`keep_freed_memory`].
pub(crate) fn set_pool_threshold(ctx: &CudaContext, bytes: usize, trim: bool) {
    // SAFETY: plain driver calls on a valid device (a live context's) and on its default pool.
    unsafe {
        if let Ok(pool) = driver::default_mem_pool(ctx.cu_device()) {
            let _ = driver::mem_pool_set_release_threshold(pool, bytes as u64);
            if trim {
                let _ = driver::mem_pool_trim_to(pool, bytes);
            }
        }
    }
}

/// cudarc panics when a library is missing: ask first, and contain any other panic.
fn check_libraries() -> std::result::Result<(), GpuUnavailable> {
    let driver_present = std::panic::catch_unwind(driver::library_present);
    if !driver_present.unwrap_or(false) {
        return Err(GpuUnavailable::NoDriver);
    }
    if !nvrtc::nvrtc_present() {
        return Err(GpuUnavailable::NoNvrtc);
    }
    Ok(())
}

fn panicked() -> GpuUnavailable {
    GpuUnavailable::InitFailed("the CUDA bindings panicked".into())
}
