//! CUDA graphs of a call's kernel launches, built with the driver's graph calls (cudarc has
//! no kernel-node graphs): the tuned sort's multi-pass plans and the top-k's multi-pass selections.
//!
//! Enqueuing a kernel costs the host more time than a pass of a medium sort takes on the GPU,
//! so the GPU would wait for the host; one graph of all the launches is enqueued in about the
//! time of one launch (docs/notes/tuned.md and bench/launch_cost.cu measure it). A graph is
//! built on its launches' first use and kept in the `Gpu`; a later call of the same kernels
//! and launch shapes on other buffers gives the changed nodes their new arguments instead of
//! building it again.

use super::driver;
use crate::error::{CudaContext as _, Result};
use cudarc::driver::sys::{self, CUfunction, CUgraph, CUgraphExec, CUgraphNode};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DeviceRepr, LaunchConfig};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// Graphs kept per `Gpu`; the least recently used goes first.
const CAPACITY: usize = 16;

/// One kernel launch of a graph: the kernel, its 1-D launch shape, and its parameters' values.
/// Each parameter starts at an 8-byte word of `words` (no kernel parameter here is aligned to
/// more), the bytes past its size zero, so two nodes of equal fields launch alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelNode {
    kernel: CUfunction,
    /// (grid, block, dynamic shared bytes).
    shape: (u32, u32, u32),
    words: Vec<u64>,
    /// Where each parameter starts in `words`.
    starts: Vec<usize>,
}

impl KernelNode {
    /// A launch of `kernel` with `cfg` (1-D) and no parameters yet.
    pub fn new(kernel: &CudaFunction, cfg: LaunchConfig) -> KernelNode {
        assert!(
            cfg.grid_dim.1 == 1
                && cfg.grid_dim.2 == 1
                && cfg.block_dim.1 == 1
                && cfg.block_dim.2 == 1
        );
        KernelNode {
            kernel: kernel.cu_function(),
            shape: (cfg.grid_dim.0, cfg.block_dim.0, cfg.shared_mem_bytes),
            words: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// Appends the next parameter's value (a device pointer is a `u64`).
    pub fn arg<T: DeviceRepr>(&mut self, value: &T) -> &mut Self {
        let bytes = std::mem::size_of::<T>();
        assert!(
            std::mem::align_of::<T>() <= 8,
            "parameters aligned to at most 8 bytes"
        );
        let start = self.words.len();
        self.words.resize(start + bytes.div_ceil(8), 0);
        // SAFETY: `DeviceRepr` values are passed to kernels as their bytes; the words from
        // `start` hold at least `bytes` of them and do not overlap `value`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                value as *const T as *const u8,
                self.words[start..].as_mut_ptr() as *mut u8,
                bytes,
            )
        };
        self.starts.push(start);
        self
    }

    /// Whether `other` launches the same kernel in the same shape with parameters of the same
    /// sizes: its node can be given `other`'s values.
    fn same_launch(&self, other: &KernelNode) -> bool {
        self.kernel == other.kernel && self.shape == other.shape && self.starts == other.starts
    }

    /// The driver's parameters of this launch, through `pointers` (one a parameter, into
    /// `words`). The driver copies the values, so both only need to live across the call that
    /// takes the result.
    fn params(&mut self, pointers: &mut Vec<*mut c_void>) -> sys::CUDA_KERNEL_NODE_PARAMS_v2 {
        let base = self.words.as_mut_ptr();
        pointers.clear();
        pointers.extend(self.starts.iter().map(|&i| {
            // SAFETY: every start lies within `words` (where `arg` put it).
            unsafe { base.add(i) as *mut c_void }
        }));
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
            kernelParams: pointers.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        }
    }
}

/// One built and instantiated graph: its launches as last given, and their nodes.
struct CachedGraph {
    launches: Vec<KernelNode>,
    nodes: Vec<CUgraphNode>,
    exec: Instance,
    _graph: Graph,
}

/// Owned driver handles, destroyed on drop (a graph still running finishes first: the driver
/// frees an executable graph in flight when it completes).
struct Graph(CUgraph);
struct Instance(CUgraphExec);

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: a graph this module created and nothing else holds. Nothing to report an
        // error to in drop; the handle is gone either way.
        let _ = unsafe { driver::graph_destroy(self.0) };
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: as for `Graph`.
        let _ = unsafe { driver::graph_exec_destroy(self.0) };
    }
}

/// The graphs of one `Gpu`, least recently used first.
pub(crate) struct GraphCache {
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

/// Enqueues `launches`, each after the one before, on `stream` (`what` names them in errors):
/// as one graph launch, from `cache`, or, while `stream` is being captured into a graph of the
/// caller's, and for a single launch, one launch a node (the caller's graph holds them; a
/// graph of one node costs the host more than the launch: an update of its node, then the
/// graph's launch). A graph of the same launches is launched as it is; one of the same kernels
/// and shapes (other buffers, say) gets the new values in the nodes that differ; otherwise a
/// graph is built.
///
/// # Safety
/// Each launch's parameters are its kernel's, in order and type, and every buffer they point
/// at holds what the kernel reads and writes under its shape, until the run completes.
pub(super) unsafe fn launch(
    cache: &Mutex<GraphCache>,
    stream: &Arc<CudaStream>,
    mut launches: Vec<KernelNode>,
    what: &str,
) -> Result<()> {
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .ctx
        .bind_to_thread()
        .during(|| "binding the CUDA context".into())?;
    if launches.len() == 1
        || driver::stream_is_capturing(stream.cu_stream())
            .during(|| format!("asking whether {what} are captured"))?
    {
        let mut pointers = Vec::new();
        for node in &mut launches {
            let params = node.params(&mut pointers);
            // SAFETY: the caller vouches for the launch; its parameters live across the call.
            unsafe { driver::launch_kernel(&params, stream.cu_stream()) }
                .during(|| format!("launching {what}"))?;
        }
        return Ok(());
    }
    let same = |g: &CachedGraph| {
        g.launches.len() == launches.len()
            && g.launches
                .iter()
                .zip(&launches)
                .all(|(a, b)| a.same_launch(b))
    };
    let entry = match cache.graphs.iter().position(|g| g.launches == launches) {
        Some(i) => cache.graphs.remove(i),
        None => match cache.graphs.iter().position(same) {
            Some(i) => {
                let mut entry = cache.graphs.remove(i);
                update(&mut entry, launches).during(|| format!("updating the graph of {what}"))?;
                entry
            }
            None => build(launches).during(|| format!("building the graph of {what}"))?,
        },
    };
    // SAFETY: a live executable graph and a live stream of its context, bound above; the
    // caller vouches for the launches and their buffers.
    let launched = unsafe { driver::graph_launch(entry.exec.0, stream.cu_stream()) }
        .during(|| format!("launching the graph of {what}"));
    cache.graphs.push(entry);
    if cache.graphs.len() > CAPACITY {
        cache.graphs.remove(0);
    }
    launched
}

/// A graph of one kernel node a launch, each depending on the one before.
fn build(
    mut launches: Vec<KernelNode>,
) -> std::result::Result<CachedGraph, cudarc::driver::DriverError> {
    let graph = Graph(driver::graph_create()?);
    let mut nodes: Vec<CUgraphNode> = Vec::with_capacity(launches.len());
    let mut pointers = Vec::new();
    for launch in &mut launches {
        let params = launch.params(&mut pointers);
        let after = nodes.last().map_or(&[][..], std::slice::from_ref);
        // SAFETY: `params` points at `pointers` and the launch's words, alive across the call
        // (the driver copies the values); the dependency is a node of this graph.
        nodes.push(unsafe { driver::graph_add_kernel_node(graph.0, after, &params) }?);
    }
    // SAFETY: a complete graph.
    let exec = Instance(unsafe { driver::graph_instantiate(graph.0, 0) }?);
    Ok(CachedGraph {
        launches,
        nodes,
        exec,
        _graph: graph,
    })
}

/// Gives the nodes of `entry` whose values differ from `launches` (the same kernels and
/// shapes) the new ones.
fn update(
    entry: &mut CachedGraph,
    launches: Vec<KernelNode>,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    let mut pointers = Vec::new();
    for ((old, mut new), &node) in entry.launches.iter_mut().zip(launches).zip(&entry.nodes) {
        if *old != new {
            let params = new.params(&mut pointers);
            // SAFETY: a node of this executable graph's graph, for the same kernel; `params`
            // as in `build`.
            unsafe { driver::graph_exec_kernel_node_set_params(entry.exec.0, node, &params) }?;
            *old = new;
        }
    }
    Ok(())
}
