//! Every raw CUDA driver call the crate makes that cudarc has no wrapper for: kernel-node
//! graphs and stream capture (graph.rs), cluster launches and their occupancy query
//! (launch/cluster.rs, device.rs), the default memory pool, the driver's version and whether
//! the driver library is there (device.rs).
//! As cudarc's own `result` layer does for its calls, each function here only makes one call
//! fallible (a `CUresult` becomes a [`DriverError`]); why a call is sound is argued at the call
//! site, against the `# Safety` section of the wrapper it calls.

use cudarc::driver::sys::{
    self, CUDA_KERNEL_NODE_PARAMS_v2, CUdevice, CUfunction, CUgraph, CUgraphExec, CUgraphNode,
    CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig, CUmemoryPool, CUstream,
};
use cudarc::driver::{CudaFunction, CudaStream, DriverError, LaunchConfig};
use std::ffi::c_void;

/// Whether the driver library (libcuda) can be loaded. cudarc's bindings panic on their first
/// call when it cannot, so ask this first.
pub(crate) fn library_present() -> bool {
    // SAFETY: only tries to load the driver library, which cudarc's first driver call loads
    // anyway; nothing is called through it.
    unsafe { sys::is_culib_present() }
}

/// The CUDA version of the installed driver, as the driver encodes it (1000 × major + 10 ×
/// minor: 12020 is CUDA 12.2).
pub(crate) fn driver_version() -> Result<i32, DriverError> {
    let mut version = 0;
    // SAFETY: an out-pointer to a local.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    Ok(version)
}

/// The default memory pool of `device`.
///
/// # Safety
/// `device` is a device handle the driver gave out (`CudaContext::cu_device`), and the driver
/// is initialised.
pub(crate) unsafe fn default_mem_pool(device: CUdevice) -> Result<CUmemoryPool, DriverError> {
    let mut pool: CUmemoryPool = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local; the caller vouches for the device.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device) }.result()?;
    Ok(pool)
}

/// Sets how many bytes of freed memory `pool` keeps instead of handing them back to the
/// driver at synchronisation (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
///
/// # Safety
/// `pool` is a live memory pool (such as [`default_mem_pool`]'s).
pub(crate) unsafe fn mem_pool_set_release_threshold(
    pool: CUmemoryPool,
    bytes: u64,
) -> Result<(), DriverError> {
    let mut threshold = bytes;
    // SAFETY: the attribute's value is a u64, read from a local that outlives the call; the
    // caller vouches for the pool.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
}

/// How many bytes of freed memory `pool` keeps (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
///
/// # Safety
/// `pool` is a live memory pool (such as [`default_mem_pool`]'s).
unsafe fn mem_pool_release_threshold(pool: CUmemoryPool) -> Result<u64, DriverError> {
    let mut threshold = 0u64;
    // SAFETY: the attribute's value is a u64, written to a local that outlives the call; the
    // caller vouches for the pool.
    unsafe {
        sys::cuMemPoolGetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()?;
    Ok(threshold)
}

/// How many bytes of freed memory the default pool of `ctx`'s device keeps.
pub(crate) fn default_pool_threshold(
    ctx: &cudarc::driver::CudaContext,
) -> Result<u64, DriverError> {
    // SAFETY: a live context's device, and that device's default pool, which lives as long as
    // the device does.
    unsafe { mem_pool_release_threshold(default_mem_pool(ctx.cu_device())?) }
}

/// Releases freed memory of `pool` until it holds at most `bytes`.
///
/// # Safety
/// `pool` is a live memory pool.
pub(crate) unsafe fn mem_pool_trim_to(pool: CUmemoryPool, bytes: usize) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the pool.
    unsafe { sys::cuMemPoolTrimTo(pool, bytes) }.result()
}

/// Sets how much freed memory the default pool of `ctx`'s device keeps, trimming it to that
/// when `trim`.
pub(crate) fn set_default_pool_threshold(
    ctx: &cudarc::driver::CudaContext,
    bytes: usize,
    trim: bool,
) -> Result<(), DriverError> {
    // SAFETY: a live context's device, and that device's default pool, which lives as long as
    // the device does.
    unsafe {
        let pool = default_mem_pool(ctx.cu_device())?;
        mem_pool_set_release_threshold(pool, bytes as u64)?;
        if trim {
            mem_pool_trim_to(pool, bytes)?;
        }
    }
    Ok(())
}

/// Turns cudarc's event tracking off for `ctx`'s handle (cudarc's `CudaContext` object, not
/// the driver's context: other handles of the device keep theirs).
///
/// Sound only because every call of the library queues all of its buffers' work on one
/// stream, which orders it, or, where a caller's NCCL communicator brings its own stream
/// (`ProcessRank::from_comm`), joins the two streams with events before and after the NCCL
/// calls, failed ones too, so that no buffer is freed ahead of them; the function is private
/// to that contract (crate::cuda::device).
pub(crate) fn disable_event_tracking(ctx: &cudarc::driver::CudaContext) {
    // SAFETY: cudarc asks that no buffer of the handle be used from two streams without the
    // caller ordering them; the library's calls each use one stream (see above).
    unsafe { ctx.disable_event_tracking() }
}

/// A new, empty graph (no flags), owned by the caller, who destroys it with [`graph_destroy`].
pub(crate) fn graph_create() -> Result<CUgraph, DriverError> {
    let mut graph: CUgraph = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local; the flags must be 0.
    unsafe { sys::cuGraphCreate(&mut graph, 0) }.result()?;
    Ok(graph)
}

/// Adds a kernel node to `graph` that runs after the nodes `dependencies` (none: a root node).
///
/// # Safety
/// `graph` is a live graph and `dependencies` are nodes of it. `params` names a live kernel and
/// its `kernelParams` points at one pointer a kernel parameter, each pointing at a value of the
/// parameter's type, all alive across the call (the driver copies the values); `extra` is null.
pub(crate) unsafe fn graph_add_kernel_node(
    graph: CUgraph,
    dependencies: &[CUgraphNode],
    params: &CUDA_KERNEL_NODE_PARAMS_v2,
) -> Result<CUgraphNode, DriverError> {
    let mut node: CUgraphNode = std::ptr::null_mut();
    let after = if dependencies.is_empty() {
        std::ptr::null()
    } else {
        dependencies.as_ptr()
    };
    // SAFETY: an out-pointer to a local and `dependencies.len()` nodes at `after` (null for
    // none); the caller vouches for the graph, the nodes and the parameters.
    unsafe { sys::cuGraphAddKernelNode_v2(&mut node, graph, after, dependencies.len(), params) }
        .result()?;
    Ok(node)
}

/// An executable graph of `graph` as it is now, owned by the caller, who destroys it with
/// [`graph_exec_destroy`].
///
/// # Safety
/// `graph` is a live graph whose nodes are complete (kernel nodes as
/// [`graph_add_kernel_node`] asks).
pub(crate) unsafe fn graph_instantiate(
    graph: CUgraph,
    flags: u64,
) -> Result<CUgraphExec, DriverError> {
    let mut exec: CUgraphExec = std::ptr::null_mut();
    // SAFETY: an out-pointer to a local; the caller vouches for the graph.
    unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags) }.result()?;
    Ok(exec)
}

/// Gives kernel node `node` of the executable graph `exec` new parameters, for its later
/// launches.
///
/// # Safety
/// `exec` is a live executable graph, instantiated from the graph that `node` belongs to, and
/// no launch of it is being enqueued meanwhile; `params` as [`graph_add_kernel_node`] asks,
/// for the same kernel.
pub(crate) unsafe fn graph_exec_kernel_node_set_params(
    exec: CUgraphExec,
    node: CUgraphNode,
    params: &CUDA_KERNEL_NODE_PARAMS_v2,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handles and the parameters.
    unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, params) }.result()
}

/// Enqueues one run of the executable graph `exec` on `stream`.
///
/// # Safety
/// `exec` is a live executable graph and `stream` a live stream of the current context; the
/// device memory its kernel nodes point at stays allocated until the run completes.
pub(crate) unsafe fn graph_launch(exec: CUgraphExec, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handles and the memory.
    unsafe { sys::cuGraphLaunch(exec, stream) }.result()
}

/// Launches one kernel with the shape and parameters of a graph node's `params` on `stream`
/// (a kernel launch that stream capture records, where a graph launch is not wanted).
///
/// # Safety
/// `params` names a live kernel of the stream's context and exactly its parameters, which
/// live across the call; every buffer they point at holds what the kernel reads and writes.
pub(crate) unsafe fn launch_kernel(
    params: &CUDA_KERNEL_NODE_PARAMS_v2,
    stream: CUstream,
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the kernel, its parameters and the stream.
    unsafe {
        sys::cuLaunchKernel(
            params.func,
            params.gridDimX,
            params.gridDimY,
            params.gridDimZ,
            params.blockDimX,
            params.blockDimY,
            params.blockDimZ,
            params.sharedMemBytes,
            stream,
            params.kernelParams,
            std::ptr::null_mut(),
        )
    }
    .result()
}

/// Whether `stream` is being captured into a graph: a capturing stream records launches and
/// must not synchronise or launch graphs of the library's own.
pub(crate) fn stream_is_capturing(stream: CUstream) -> Result<bool, DriverError> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: an out-pointer to a local; a stream handle of a live context (the legacy
    // stream, null, is one too).
    unsafe { sys::cuStreamIsCapturing(stream, &mut status) }.result()?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Destroys a graph ([`graph_exec_destroy`] destroys its executable graphs).
///
/// # Safety
/// `graph` is a live graph that nothing uses afterwards.
pub(crate) unsafe fn graph_destroy(graph: CUgraph) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { sys::cuGraphDestroy(graph) }.result()
}

/// Destroys an executable graph; a run of it still in flight completes first.
///
/// # Safety
/// `exec` is a live executable graph that nothing uses afterwards (a run already enqueued
/// may still be in flight).
pub(crate) unsafe fn graph_exec_destroy(exec: CUgraphExec) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the handle.
    unsafe { sys::cuGraphExecDestroy(exec) }.result()
}

/// How many clusters of `function` the device can run at once with `config`'s launch shape
/// and cluster dimension.
///
/// # Safety
/// `function` is a live kernel of the current context; `config`'s `attrs` points at
/// `numAttrs` valid launch attributes, alive across the call, and its stream is live.
pub(crate) unsafe fn occupancy_max_active_clusters(
    function: CUfunction,
    config: &CUlaunchConfig,
) -> Result<i32, DriverError> {
    let mut clusters = 0;
    // SAFETY: an out-pointer to a local; the caller vouches for the kernel and the config.
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, function, config) }.result()?;
    Ok(clusters)
}

/// Enqueues `function` with the launch shape, stream and attributes of `config` (clusters,
/// say), with the parameters at `params` and no `extra` options.
///
/// # Safety
/// As for any kernel launch: `function` is a live kernel of the current context; `params`
/// holds one pointer a kernel parameter, in order, each pointing at a value of the parameter's
/// type, alive across the call (the driver copies the values); the device memory the kernel
/// reads and writes stays allocated until it completes and nothing else touches it meanwhile.
/// `config` as [`occupancy_max_active_clusters`] asks.
pub(crate) unsafe fn launch_kernel_ex(
    config: &CUlaunchConfig,
    function: CUfunction,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller vouches for the config, the kernel and its parameters.
    unsafe { sys::cuLaunchKernelEx(config, function, params.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
}

/// A launch configuration of `cfg`'s shape on `stream` in clusters of `blocks` blocks, its
/// one attribute in `attribute` (which must outlive every use of the configuration).
pub(crate) fn cluster_config(
    cfg: LaunchConfig,
    blocks: u32,
    stream: &CudaStream,
    attribute: &mut CUlaunchAttribute,
) -> CUlaunchConfig {
    attribute.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = blocks;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = 1;
    CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attribute,
        numAttrs: 1,
    }
}

/// An empty launch attribute, for [`cluster_config`] to fill.
pub(crate) fn no_attribute() -> CUlaunchAttribute {
    // SAFETY: the attribute is a plain C struct and union of integers, for which all zeros
    // is a valid value (the "ignore" attribute).
    unsafe { std::mem::zeroed() }
}

/// How many clusters of `blocks` blocks of `kernel` in `query`'s block shape and shared
/// memory the device runs at once (its context must be current).
pub(crate) fn max_active_clusters(
    kernel: &CudaFunction,
    query: LaunchConfig,
    blocks: u32,
    stream: &CudaStream,
) -> Result<i32, DriverError> {
    let mut attribute = no_attribute();
    let raw = cluster_config(query, blocks, stream, &mut attribute);
    // SAFETY: a live kernel of the stream's context (current, the caller says), a
    // configuration whose one attribute lives across the call, and a live stream.
    unsafe { occupancy_max_active_clusters(kernel.cu_function(), &raw) }
}

/// Whether libnccl can be loaded: cudarc's NCCL bindings panic on first use when it cannot.
pub(crate) fn nccl_present() -> bool {
    // SAFETY: only tries to load the library; nothing is called through it.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}
