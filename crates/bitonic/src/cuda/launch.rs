//! Launch configurations and the launches cudarc's launch builder cannot express.
//!
//! Most kernels are launched with cudarc's launch builder where they are used; the tuned pass
//! (in clusters or not) and its cluster-occupancy query live here, since clusters need the
//! driver's extended launch.

use super::layout::RowLayout;
use super::Gpu;
use cudarc::driver::{CudaFunction, CudaViewMut, DriverError, LaunchConfig, PushKernelArg};

/// A 1-D launch: `blocks` blocks of `threads` threads with `shared_bytes` of dynamic shared
/// memory.
pub(crate) fn config(blocks: u32, threads: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// The arguments of one tuned pass after the keys, the layout and the tile bits:
/// `[col_bits, lo, b_first, b_last, hi_first, stop, map]` (kernels/tuned.cu's `tuned_pass_*`).
pub(crate) type PassArgs = [u32; PASS_ARG_COUNT];
/// How many [`PassArgs`] there are.
pub(crate) const PASS_ARG_COUNT: usize = 7;

/// One launch of kernels/tuned.cu's `tuned_pass_*(keys, layout, tile_bits, pass args…)`, in
/// clusters of `cluster_blocks` blocks when that is more than 1.
pub(crate) fn tuned_pass<T>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    cluster_blocks: u32,
    keys: &mut CudaViewMut<T>,
    args: (RowLayout, u32, PassArgs),
) -> Result<(), DriverError> {
    if cluster_blocks > 1 {
        return cluster::launch_pass(gpu, kernel, cfg, cluster_blocks, keys, args);
    }
    let (layout, tile_bits, fields) = args;
    let mut launch = gpu.stream().launch_builder(kernel);
    launch.arg(&mut *keys).arg(&layout).arg(&tile_bits);
    for value in &fields {
        launch.arg(value);
    }
    // SAFETY: the arguments match tuned_pass_*'s signature (keys, RowLayout by value, tile
    // bits, seven u32 fields), and `keys` is a live buffer of the words the kernel sorts.
    unsafe { launch.launch(cfg) }.map(drop)
}

/// Launches in thread-block clusters, which cudarc's launch builder cannot express (cudarc
/// 0.19.10, the newest, has no cluster launch, and its cluster occupancy query passes no
/// cluster dimension): the raw driver calls, each with its safety argument.
pub(crate) mod cluster {
    use super::super::layout::RowLayout;
    use super::super::Gpu;
    use crate::error::Result;
    use crate::error::CudaContext as _;
    use cudarc::driver::sys::{self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
    use cudarc::driver::{CudaFunction, CudaViewMut, DevicePtrMut, DriverError, LaunchConfig};
    use std::ffi::c_void;
    use super::PassArgs;

    fn raw_config(
        gpu: &Gpu,
        cfg: LaunchConfig,
        attribute: &mut CUlaunchAttribute,
    ) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: gpu.stream().cu_stream(),
            attrs: attribute,
            numAttrs: 1,
        }
    }

    fn cluster_attribute(blocks: u32) -> CUlaunchAttribute {
        // SAFETY: an all-zero attribute is valid; the union's cluster field is set below.
        let mut attribute: CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attribute.value.clusterDim.x = blocks;
        attribute.value.clusterDim.y = 1;
        attribute.value.clusterDim.z = 1;
        attribute
    }

    /// Whether the device can run clusters of `blocks` blocks of this shape (the answer is
    /// cached per kernel and shape: the query costs more than a small sort's launch).
    pub(crate) fn fits(
        gpu: &Gpu,
        kernel: &CudaFunction,
        cfg: LaunchConfig,
        blocks: u32,
    ) -> Result<bool> {
        let key = (
            kernel.cu_function() as usize,
            cfg.block_dim.0,
            cfg.shared_mem_bytes,
            blocks,
        );
        if let Some(&known) = gpu
            .cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(known);
        }
        if blocks > 8 {
            // Beyond the portable 8 a kernel must opt in.
            kernel
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
                .during(|| format!("allowing clusters of {blocks} blocks"))?;
        }
        let mut attribute = cluster_attribute(blocks);
        let query = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            ..cfg
        };
        let raw = raw_config(gpu, query, &mut attribute);
        let mut clusters = 0;
        gpu.context()
            .bind_to_thread()
            .during(|| "binding the CUDA context".into())?;
        // SAFETY: valid function and config; `attribute` outlives the call.
        let status =
            unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, kernel.cu_function(), &raw) };
        // An error here (a driver without clusters, say) means: do not use them.
        let fits = status == sys::CUresult::CUDA_SUCCESS && clusters > 0;
        gpu.cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, fits);
        Ok(fits)
    }

    /// One tuned pass in clusters of `blocks` blocks: kernels/tuned.cu's `tuned_pass_*` with
    /// `(layout, tile_bits, [col_bits, lo, b_first, b_last, hi_first, stop, map])`.
    pub(crate) fn launch_pass<T>(
        gpu: &Gpu,
        kernel: &CudaFunction,
        cfg: LaunchConfig,
        blocks: u32,
        keys: &mut CudaViewMut<T>,
        args: (RowLayout, u32, PassArgs),
    ) -> std::result::Result<(), DriverError> {
        let (mut layout, mut tile_bits, mut fields) = args;
        gpu.context().bind_to_thread()?;
        let (mut pointer, _record_write) = keys.device_ptr_mut(gpu.stream());
        let mut params: Vec<*mut c_void> = vec![
            &mut pointer as *mut _ as *mut c_void,
            &mut layout as *mut _ as *mut c_void,
            &mut tile_bits as *mut _ as *mut c_void,
        ];
        params.extend(fields.iter_mut().map(|f| f as *mut u32 as *mut c_void));
        let mut attribute = cluster_attribute(blocks);
        let raw = raw_config(gpu, cfg, &mut attribute);
        // SAFETY: the parameters match the kernel's signature and live until the call returns
        // (the driver copies them); the keys' buffer outlives the launch through `keys`.
        unsafe {
            sys::cuLaunchKernelEx(
                &raw,
                kernel.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
            .result()
        }
    }
}
