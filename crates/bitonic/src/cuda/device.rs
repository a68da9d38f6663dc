//! The device handle: probing the driver, NVRTC and a GPU without panicking, the device's
//! facts, its default stream, and its kernels (compiled once, cached on disk, looked up once).
//!
//! Opening a `Gpu` changes nothing outside it: the memory pool keeps the driver's settings
//! unless the caller asks ([`Gpu::keep_freed_memory`]), and cudarc's event tracking is turned
//! off on the library's own context handle only (see [`Gpu::context`]).

use super::{driver, graph, nvrtc, staging};
use crate::device::{DeviceFacts, DeviceInfo};
use crate::error::{CudaContext as _, GpuUnavailable, Result};
use crate::kernels::KernelModule;
use crate::policy::{KernelVariant, Policy};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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
    /// Whether clusters of a kernel and shape fit the device (asked once a shape).
    cluster_fits: Mutex<HashMap<(usize, u32, u32, u32), bool>>,
    /// Multi-launch calls as CUDA graphs, built on first use (graph.rs).
    pub(super) graphs: Mutex<graph::GraphCache>,
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
        // cudarc's event tracking gives every buffer two events, created at its allocation and
        // destroyed at its drop, and (once a context has a second stream) records and waits on
        // them at every launch: tens of microseconds of host time in a top-k of four launches,
        // more than its kernels take. The library needs none of it: each call's buffers and
        // launches are ordered by the one stream it runs on. The flag belongs to this handle
        // (cudarc's `CudaContext` object), not to the driver's context: other handles of the
        // same device, the caller's included, keep their own.
        driver::disable_event_tracking(&ctx);
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
            ctx,
        })
    }

    /// What the probe learnt about the device and the CUDA libraries.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's CUDA context (cudarc's handle of the device's primary context), for interop:
    /// allocating device buffers to sort, wrapping a caller's stream
    /// ([`cudarc::driver::CudaContext::wrap_borrowed_stream`]) to run calls on. cudarc's
    /// event tracking is off on this handle: buffers allocated through it carry no events, and
    /// work on them is ordered by the stream it is queued on. A caller who uses them on
    /// several streams orders those themselves (an event recorded on one and waited on by the
    /// other), as with any CUDA buffer.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream calls of this `Gpu` are queued on when the caller gives none
    /// ([`crate::Sorter::stream`]): the legacy default stream for [`Gpu::get`], a stream of
    /// its own for [`Gpu::new`].
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Lets the device's default memory pool keep up to `bytes` of freed memory instead of
    /// handing it back to the driver at every synchronisation (the driver's default keeps
    /// none). A call's workspace comes from that pool: mapping fresh pages for it costs more
    /// than a small sort, so a program that sorts in a loop keeps some. This changes the pool
    /// for the whole process (every user of the device's default pool), which is why the
    /// library never does it unasked. Best effort: a device without memory pools keeps the
    /// driver's setting, and the error is returned.
    pub fn keep_freed_memory(&self, bytes: usize) -> Result<()> {
        driver::set_default_pool_threshold(&self.ctx, bytes, false)
            .during(|| format!("letting the memory pool keep {bytes} bytes"))
    }

    /// How much freed memory the device's default memory pool keeps now
    /// ([`Gpu::keep_freed_memory`]; the driver's default is 0): a caller that wants at least
    /// some kept reads it first, so as not to lower what another part of the process asked.
    pub fn freed_memory_kept(&self) -> Result<usize> {
        driver::default_pool_threshold(&self.ctx)
            .map(|bytes| bytes as usize)
            .during(|| "reading how much freed memory the memory pool keeps".into())
    }

    /// Bytes of device memory free now (the driver's count: memory that pools keep for reuse
    /// counts as taken).
    pub fn free_memory(&self) -> Result<usize> {
        let (free, _total) = self
            .ctx
            .mem_get_info()
            .during(|| "reading the free device memory".into())?;
        Ok(free)
    }

    /// The tuning this device's architecture gets by default ([`Policy::for_device`]).
    pub fn policy(&self) -> Policy {
        self.policy.clone()
    }

    /// [`Gpu::policy`], borrowed.
    pub(crate) fn default_policy(&self) -> &Policy {
        &self.policy
    }

    /// The pinned staging buffers of large host transfers, made on first use.
    pub(crate) fn with_staging<R>(
        &self,
        f: impl FnOnce(&mut staging::Staging) -> Result<R>,
    ) -> Result<R> {
        let mut guard = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(staging::Staging::new(&self.ctx)?);
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
        let (arch, defines) = (self.info.arch(), crate::kernels::defines(policy));
        let compiled = nvrtc::compile(module, &arch, &defines)?;
        let load = |cubin: Vec<u8>| {
            self.ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
                .during(|| format!("loading kernels/{}", module.name()))
        };
        let m = match load(compiled.cubin.as_ref().clone()) {
            // A packed CUBIN this driver refuses (made by an NVRTC newer than the driver
            // takes): compiled here instead, as without a pack.
            Err(_) if compiled.origin == nvrtc::Origin::Precompiled => {
                load(nvrtc::compile_unpacked(module, &arch, &defines)?)?
            }
            loaded => loaded?,
        };
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
            let (arch, defines) = (self.info.arch(), crate::kernels::defines(policy));
            nvrtc::compile_side_by_side(&missing, &arch, &defines)?;
        }
        missing
            .into_iter()
            .try_for_each(|m| self.module(policy, m).map(drop))
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

impl DeviceFacts for Gpu {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Asks the driver (the module of `module` compiled with the device's policy, once a
    /// shape: the query costs more than a small sort's launch). An error of the query (a
    /// driver without clusters, say) means: do not use them.
    fn clusters_fit(
        &self,
        module: &'static KernelModule,
        cluster_blocks: u32,
        threads: u32,
        shared_bytes: u32,
    ) -> Result<bool> {
        let kernel = self.function(module, tuned_kernel_name(module))?;
        let key = (
            kernel.cu_function() as usize,
            threads,
            shared_bytes,
            cluster_blocks,
        );
        let known = self.cluster_fits.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&fits) = known.get(&key) {
            return Ok(fits);
        }
        drop(known);
        self.allow_shared(&kernel, shared_bytes)?;
        if cluster_blocks > 8 {
            // Beyond the portable 8 a kernel must opt in.
            kernel
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
                .during(|| format!("allowing clusters of {cluster_blocks} blocks"))?;
        }
        let query = LaunchConfig {
            grid_dim: (cluster_blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: shared_bytes,
        };
        self.ctx
            .bind_to_thread()
            .during(|| "binding the CUDA context".into())?;
        let clusters = driver::max_active_clusters(&kernel, query, cluster_blocks, &self.stream);
        let fits = matches!(clusters, Ok(n) if n > 0);
        self.cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, fits);
        Ok(fits)
    }
}

/// The tuned pass kernel of a tuned module.
fn tuned_kernel_name(module: &KernelModule) -> &'static str {
    match module.part {
        Some("u32") => "tuned_pass_u32",
        Some("u32_narrow") => "tuned_pass_u32_narrow",
        Some("u64") => "tuned_pass_u64",
        _ => "tuned_pass_kv64",
    }
}
