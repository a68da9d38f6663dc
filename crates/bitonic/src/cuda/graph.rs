//! CUDA graphs for the tuned sort's multi-pass plans, built with the driver's graph calls
//! (cudarc has no kernel-node graphs).
//!
//! Enqueuing a kernel costs the host more time than a pass of a medium sort takes on the GPU,
//! so the GPU would wait for the host; one graph of all the passes is enqueued in about the
//! time of one launch (docs/notes/tuned.md and bench/launch_cost.cu measure it). A graph is
//! built once per plan (kernel, launch shape, layout, passes) and kept in the `Gpu`; sorting
//! another buffer with the same plan re-points the graph's kernel nodes instead of building it
//! again.

use super::driver;
use super::launch::{PassArgs, PASS_ARG_COUNT};
use super::layout::RowLayout;
use super::Gpu;
use crate::error::{CudaContext as _, Result};
use cudarc::driver::sys::{self, CUdeviceptr, CUfunction, CUgraph, CUgraphExec, CUgraphNode};
use cudarc::driver::{CudaContext, LaunchConfig};
use std::ffi::c_void;
use std::sync::Arc;

/// Plans kept per `Gpu`; the least recently used goes first.
const CAPACITY: usize = 16;

/// Everything a graph's launches depend on, except the keys' address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PassPlan {
    pub kernel: CUfunction,
    /// (grid, block, shared bytes) of every launch.
    pub shape: (u32, u32, u32),
    pub layout: RowLayout,
    pub tile_bits: u32,
    /// Each pass's last kernel arguments.
    pub passes: Vec<PassArgs>,
}

impl PassPlan {
    pub fn new(
        kernel: CUfunction,
        cfg: LaunchConfig,
        layout: RowLayout,
        tile_bits: u32,
        passes: Vec<PassArgs>,
    ) -> PassPlan {
        PassPlan {
            kernel,
            shape: (cfg.grid_dim.0, cfg.block_dim.0, cfg.shared_mem_bytes),
            layout,
            tile_bits,
            passes,
        }
    }

    /// The kernel node of pass `i` on the keys at `keys`. The driver copies the arguments that
    /// `args` points at, so they only need to live across the call that takes the result.
    fn node(&self, i: usize, args: &mut NodeArgs) -> sys::CUDA_KERNEL_NODE_PARAMS_v2 {
        args.layout = self.layout;
        args.tile_bits = self.tile_bits;
        args.fields = self.passes[i];
        args.pointers[0] = &mut args.keys as *mut CUdeviceptr as *mut c_void;
        args.pointers[1] = &mut args.layout as *mut RowLayout as *mut c_void;
        args.pointers[2] = &mut args.tile_bits as *mut u32 as *mut c_void;
        for (slot, field) in args.pointers[3..].iter_mut().zip(&mut args.fields) {
            *slot = field as *mut u32 as *mut c_void;
        }
        let (grid, block, shared) = self.shape;
        sys::CUDA_KERNEL_NODE_PARAMS_v2 {
            func: self.kernel,
            gridDimX: grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: shared,
            kernelParams: args.pointers.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        }
    }
}

/// The argument values of one kernel node and the pointer array the driver reads them through.
struct NodeArgs {
    keys: CUdeviceptr,
    layout: RowLayout,
    tile_bits: u32,
    fields: PassArgs,
    /// kernels/tuned.cu's parameters in order: keys, layout, tile_bits, then the fields.
    pointers: [*mut c_void; 3 + PASS_ARG_COUNT],
}

impl NodeArgs {
    /// Arguments for kernel nodes on the keys at `keys`; `PassPlan::node` fills in the rest.
    /// The pointer array points into the struct, so it must stay in place (a local that is not
    /// moved) between `node` and the driver call that reads it.
    fn new(keys: CUdeviceptr, layout: RowLayout) -> NodeArgs {
        NodeArgs {
            keys,
            layout,
            tile_bits: 0,
            fields: Default::default(),
            pointers: [std::ptr::null_mut(); 3 + PASS_ARG_COUNT],
        }
    }
}

/// One built and instantiated graph of a plan, and the keys' address its nodes point at.
struct CachedGraph {
    plan: PassPlan,
    keys: CUdeviceptr,
    nodes: Vec<CUgraphNode>,
    exec: Exec,
    _graph: Graph,
}

/// Owned driver handles, destroyed on drop (a graph still running finishes first: the driver
/// frees an executable graph in flight when it completes).
struct Graph(CUgraph);
struct Exec(CUgraphExec);

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: a graph this module created and nothing else holds. Nothing to report an
        // error to in drop; the handle is gone either way.
        let _ = unsafe { driver::graph_destroy(self.0) };
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // SAFETY: as for `Graph`.
        let _ = unsafe { driver::graph_exec_destroy(self.0) };
    }
}

/// The graphs of one `Gpu`, least recently used first.
pub(super) struct GraphCache {
    ctx: Arc<CudaContext>,
    graphs: Vec<CachedGraph>,
}

// SAFETY: the raw handles are driver objects, usable from any thread; the `Gpu` keeps the cache
// behind a mutex, so one thread at a time updates and launches a graph.
unsafe impl Send for GraphCache {}

impl GraphCache {
    pub fn new(ctx: Arc<CudaContext>) -> GraphCache {
        GraphCache {
            ctx,
            graphs: Vec::new(),
        }
    }
}

impl Drop for GraphCache {
    fn drop(&mut self) {
        // The handles belong to this context: make it current before they are destroyed.
        if self.ctx.bind_to_thread().is_ok() {
            self.graphs.clear();
        }
    }
}

/// Enqueues the passes of `plan` on the keys at `keys` as one graph launch on the `Gpu`'s
/// stream, building the graph on the plan's first use.
pub(super) fn launch(gpu: &Gpu, plan: PassPlan, keys: CUdeviceptr) -> Result<()> {
    let mut cache = gpu.graphs.lock().unwrap_or_else(|e| e.into_inner());
    gpu.context()
        .bind_to_thread()
        .during(|| "binding the CUDA context".into())?;
    let found = cache.graphs.iter().position(|g| g.plan == plan);
    let mut entry = match found {
        Some(i) => cache.graphs.remove(i),
        None => build(plan, keys)?,
    };
    if entry.keys != keys {
        repoint(&mut entry, keys)?;
    }
    // SAFETY: a live executable graph and the Gpu's live stream, its context bound above; the
    // keys' buffer outlives the run through the caller's view of it, as for any launch.
    let launched =
        unsafe { driver::graph_launch(entry.exec.0, gpu.stream().cu_stream()) }.during(|| {
            format!(
                "launching the graph of {} tuned passes",
                entry.plan.passes.len()
            )
        });
    cache.graphs.push(entry);
    if cache.graphs.len() > CAPACITY {
        cache.graphs.remove(0);
    }
    launched
}

/// A graph of one kernel node per pass, each depending on the one before.
fn build(plan: PassPlan, keys: CUdeviceptr) -> Result<CachedGraph> {
    let raw: CUgraph = driver::graph_create().during(|| "creating a CUDA graph".into())?;
    let graph = Graph(raw);
    let mut nodes: Vec<CUgraphNode> = Vec::with_capacity(plan.passes.len());
    let mut args = NodeArgs::new(keys, plan.layout);
    for i in 0..plan.passes.len() {
        let params = plan.node(i, &mut args);
        let after = nodes.last().map_or(&[][..], std::slice::from_ref);
        // SAFETY: `params` points at `args`, alive across the call (the driver copies the
        // values); the dependency is a node of this graph.
        let node = unsafe { driver::graph_add_kernel_node(graph.0, after, &params) }
            .during(|| format!("adding tuned pass {i} to a graph"))?;
        nodes.push(node);
    }
    // SAFETY: a complete graph.
    let exec: CUgraphExec = unsafe { driver::graph_instantiate(graph.0, 0) }
        .during(|| "instantiating the tuned passes' graph".into())?;
    Ok(CachedGraph {
        plan,
        keys,
        nodes,
        exec: Exec(exec),
        _graph: graph,
    })
}

/// Points every kernel node of an instantiated graph at the keys at `keys`.
fn repoint(entry: &mut CachedGraph, keys: CUdeviceptr) -> Result<()> {
    let mut args = NodeArgs::new(keys, entry.plan.layout);
    for (i, &node) in entry.nodes.iter().enumerate() {
        let params = entry.plan.node(i, &mut args);
        // SAFETY: a node of this executable graph's graph; `params` as in `build`.
        unsafe { driver::graph_exec_kernel_node_set_params(entry.exec.0, node, &params) }
            .during(|| format!("re-pointing tuned pass {i} of a graph"))?;
    }
    entry.keys = keys;
    Ok(())
}
