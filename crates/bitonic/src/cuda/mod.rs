//! The CUDA backend: device probe, kernel modules, and the sorts on host or device data.
//!
//! Nothing here panics when CUDA is missing: [`Gpu::get`] probes for the driver, NVRTC and a
//! device once per process and says why it cannot run. The device is ordinal 0 unless
//! `BITONIC_DEVICE` names another.

mod graph;
pub mod kernels;
mod merge;
pub mod multi;
pub mod nvrtc;
mod pairs;
mod plan;
mod staging;

pub use cudarc;

use crate::error::{CudaContext as _, Error, GpuUnavailable, Result};
use crate::key::{Bits, MapKind};
use crate::{Order, SortKey, Version};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaViewMut, DevicePtr,
    DevicePtrMut, PushKernelArg,
};
use kernels::KernelModule;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The most keys one sort takes: the kernels index with 32-bit integers over the padded length.
pub const MAX_LEN: usize = 1 << 31;

/// What the probe learnt about the device and the CUDA libraries.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub max_threads_per_block: i32,
    pub warp_size: i32,
    /// Shared memory a block gets without opting in.
    pub shared_per_block: usize,
    /// Shared memory a block can get after raising its dynamic limit.
    pub shared_per_block_optin: usize,
    pub l2_bytes: usize,
    pub total_memory: usize,
    /// The driver's CUDA version, as (major, minor).
    pub driver_version: (i32, i32),
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
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    /// Pinned buffers for host transfers, made on first use of a large host sort.
    staging: Mutex<Option<staging::Staging>>,
    /// Kernels already looked up, by module and name: a small sort's host time counts.
    functions: Mutex<HashMap<(&'static str, String), CudaFunction>>,
    /// The dynamic shared memory each kernel was allowed, so that it is set once.
    shared_allowed: Mutex<HashMap<usize, u32>>,
    /// Whether clusters of a kernel and shape fit the device (plan.rs asks once per shape).
    cluster_fits: Mutex<HashMap<(usize, u32, u32, u32), bool>>,
    /// The tuned sort's multi-pass plans as CUDA graphs, built on first use (graph.rs).
    graphs: Mutex<graph::GraphCache>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

static GPU: OnceLock<std::result::Result<Gpu, GpuUnavailable>> = OnceLock::new();

impl Gpu {
    /// The process's GPU, probed on first use; the reason when there is none.
    pub fn get() -> std::result::Result<&'static Gpu, GpuUnavailable> {
        GPU.get_or_init(Gpu::probe).as_ref().map_err(Clone::clone)
    }

    fn probe() -> std::result::Result<Gpu, GpuUnavailable> {
        let ordinal = std::env::var("BITONIC_DEVICE")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        Gpu::open_checked(ordinal, false)
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
        let mut driver = 0;
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }
            .result()
            .map_err(init)?;
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
        let stream = if own_stream {
            ctx.new_stream().map_err(init)?
        } else {
            ctx.default_stream()
        };
        Ok(Gpu {
            stream,
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

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every sort of this `Gpu` is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A kernel of one of the embedded modules, compiling and loading the module on first use.
    pub(crate) fn function(
        &self,
        module: &'static KernelModule,
        name: &str,
    ) -> Result<CudaFunction> {
        let key = (module.name, name.to_string());
        if let Some(f) = self
            .functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(f.clone());
        }
        let loaded = {
            let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            match modules.get(module.name) {
                Some(m) => m.clone(),
                None => {
                    let cubin = nvrtc::compile(module, &self.info.arch())?;
                    let m = self
                        .ctx
                        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
                        .during(|| format!("loading kernels/{}", module.name))?;
                    modules.insert(module.name, m.clone());
                    m
                }
            }
        };
        let f = loaded
            .load_function(name)
            .during(|| format!("finding kernel {name} in kernels/{}", module.name))?;
        self.functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, f.clone());
        Ok(f)
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

    /// Sorts a host slice: copies it to the device, sorts there, copies it back. Large slices
    /// go through pinned staging buffers, chunk by chunk (see `staging.rs`). If the GPU fails
    /// while the sorted keys are being copied back, the slice may hold a mix of sorted and
    /// original keys; the error says so.
    pub fn sort_host<K: SortKey>(
        &self,
        keys: &mut [K],
        version: Version,
        order: Order,
    ) -> Result<()> {
        check_len(keys.len())?;
        self.on_device(keys, |words| self.sort_words::<K>(words, version, order))
    }

    /// Copies `keys` to the device, runs `work` on them there, and copies them back.
    fn on_device<K: SortKey>(
        &self,
        keys: &mut [K],
        work: impl FnOnce(&mut CudaViewMut<K::Bits>) -> Result<()>,
    ) -> Result<()> {
        if keys.len() < 2 {
            return Ok(());
        }
        let words: &mut [K::Bits] = bytemuck::cast_slice_mut(keys);
        let mut device = self.upload(words)?;
        work(&mut device.as_view_mut())?;
        self.download(&device, words).map_err(|e| match e {
            Error::Cuda { context, cause } => Error::Cuda {
                context: format!("{context} (the slice may now mix sorted and original keys)"),
                cause,
            },
            other => other,
        })
    }

    /// A device copy of `host`. Large slices stream through the pinned staging buffers.
    fn upload<T: bytemuck::Pod + cudarc::driver::DeviceRepr>(
        &self,
        host: &[T],
    ) -> Result<CudaSlice<T>> {
        let bytes = std::mem::size_of_val(host);
        if bytes < staging::MIN_STAGED_BYTES {
            return self
                .stream
                .clone_htod(host)
                .during(|| format!("copying {} keys to the GPU", host.len()));
        }
        let mut device = unsafe { self.stream.alloc::<T>(host.len()) }
            .during(|| format!("allocating {} keys on the GPU", host.len()))?;
        let (ptr, _sync) = device.device_ptr_mut(&self.stream);
        self.with_staging(|stage| stage.upload(self, bytemuck::cast_slice(host), ptr))?;
        drop(_sync);
        Ok(device)
    }

    /// Copies `device` into `host` (same length) and waits for the copy.
    fn download<T: bytemuck::Pod + cudarc::driver::DeviceRepr>(
        &self,
        device: &CudaSlice<T>,
        host: &mut [T],
    ) -> Result<()> {
        if std::mem::size_of_val(host) < staging::MIN_STAGED_BYTES {
            self.stream
                .memcpy_dtoh(device, host)
                .during(|| "copying the results back".into())?;
        } else {
            let (ptr, _sync) = device.device_ptr(&self.stream);
            self.with_staging(|stage| stage.download(self, ptr, bytemuck::cast_slice_mut(host)))?;
        }
        self.stream
            .synchronize()
            .during(|| "waiting for the GPU".into())
    }

    /// The pinned staging buffers, made on first use.
    fn with_staging<R>(&self, f: impl FnOnce(&mut staging::Staging) -> Result<R>) -> Result<R> {
        let mut guard = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(staging::Staging::new(self)?);
        }
        f(guard.as_mut().expect("made above"))
    }

    /// Sorts keys already on this GPU, in place, queued on [`Gpu::stream`]. Returns when the
    /// work is queued; errors raised by the kernels surface at the next synchronizing call.
    pub fn sort_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        version: Version,
        order: Order,
    ) -> Result<()> {
        let mut words = self.words_of(keys)?;
        self.sort_words::<K>(&mut words, version, order)
    }

    /// Bytes `version` moves through device memory to sort `n` keys of `dtype`: a read and a
    /// write of every key per pass over the array, plus the two key-map passes when the type
    /// or the order needs them. The yardstick for achieved bandwidth.
    pub fn bytes_moved(
        &self,
        version: Version,
        n: usize,
        dtype: crate::DType,
        order: Order,
    ) -> Result<u64> {
        let passes = if dtype.size() == 4 {
            plan::passes::<u32>(self, version, n)?
        } else {
            plan::passes::<u64>(self, version, n)?
        };
        // The tuned passes fold the key map into their first load and last store.
        let needs_map = dtype.needs_map(order);
        let maps = if needs_map && version != Version::Tuned {
            2
        } else {
            0
        };
        Ok(((passes + maps) * 2 * n * dtype.size()) as u64)
    }

    fn sort_words<K: SortKey>(
        &self,
        words: &mut CudaViewMut<K::Bits>,
        version: Version,
        order: Order,
    ) -> Result<()> {
        let n = words.len() as u32;
        if n < 2 {
            return Ok(());
        }
        if version == Version::Tuned {
            // The tuned passes fold the key map into their first load and last store.
            return self.sort_rows_words::<K>(words, words.len(), order);
        }
        let map = K::DTYPE.needs_map(order);
        if map {
            self.map_keys(words, K::DTYPE.map_kind(), order, false)?;
        }
        plan::run(self, words, version)?;
        if map {
            self.map_keys(words, K::DTYPE.map_kind(), order, true)?;
        }
        Ok(())
    }

    /// Turns keys into ascending-sortable words (`inverse` false) or back.
    fn map_keys<B: Bits>(
        &self,
        words: &mut CudaViewMut<B>,
        kind: MapKind,
        order: Order,
        inverse: bool,
    ) -> Result<()> {
        let f = self.function(&kernels::MAP_KEYS, &kernel_name::<B>("map_keys"))?;
        let n = words.len() as u32;
        let (kind, desc, inverse) = (
            kind as u32,
            (order == Order::Descending) as u32,
            inverse as u32,
        );
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(words)
            .arg(&n)
            .arg(&kind)
            .arg(&desc)
            .arg(&inverse);
        unsafe { launch.launch(self.elementwise(n as usize)) }
            .map(drop)
            .during(|| "launching map_keys".into())
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
fn set_pool_threshold(ctx: &CudaContext, bytes: usize, trim: bool) {
    use cudarc::driver::sys;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: plain driver calls on a valid device, with pointers to live locals.
    unsafe {
        if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .is_ok()
        {
            let mut threshold = bytes as u64;
            let _ = sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
            .result();
            if trim {
                let _ = sys::cuMemPoolTrimTo(pool, bytes).result();
            }
        }
    }
}

/// cudarc panics when a library is missing: ask first, and contain any other panic.
fn check_libraries() -> std::result::Result<(), GpuUnavailable> {
    let driver_present =
        std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() });
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

fn check_len(len: usize) -> Result<()> {
    if len > MAX_LEN {
        Err(Error::TooLong { len, max: MAX_LEN })
    } else {
        Ok(())
    }
}

/// Kernels come in a `_u32` and a `_u64` flavour (and the tuned pass in `_kv64`, for the
/// 16-byte key-index pairs), named by the width of the words they sort.
fn kernel_name<T>(base: &str) -> String {
    let width = match std::mem::size_of::<T>() {
        4 => "u32",
        8 => "u64",
        _ => "kv64",
    };
    format!("{base}_{width}")
}
