//! The tuned network's passes (kernels/tuned.cu `tuned_pass_*`): one launch, all of a plan's
//! as one graph, or in thread-block clusters (cluster.rs).

use super::{cluster, launch};
use crate::cuda::exec::Exec;
use crate::cuda::graph::{self, KernelNode};
use crate::kernels::abi::{Packing, RowLayout, PACK_ON_LOAD, UNPACK_ON_STORE};
use crate::plan::passes::PassArgs;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DriverError, LaunchConfig,
    PushKernelArg,
};

/// One launch of kernels/tuned.cu's `tuned_pass_*(src, keys, layout, tile_bits, pass args…,
/// packing)`, reading `src` (the keys themselves when `None`, or another array as long) and
/// writing `keys`, in clusters of `cluster_blocks` blocks when that is more than 1. A
/// `packing` with flags reads the caller's keys it names instead of `src`, or writes its
/// outputs instead of `keys`; with both, `keys` may be empty (a one-pass packed plan has no
/// pairs between passes), since the pass then touches neither array.
///
/// # Safety
/// `packing`'s addresses, where its flags use them, are device buffers of the stream's device
/// that hold what it says (its keys in the layout's rows, `key_bytes` each, which must be the
/// width the kernel packs: 2 or 4 for the u64 kernel, 8 for the kv64 one; `k` values and
/// indices a row), alive until the launch has run.
pub(crate) unsafe fn tuned_pass<T>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    cluster_blocks: u32,
    (src, keys): (Option<&CudaView<T>>, &mut CudaViewMut<T>),
    args: (RowLayout, u32, PassArgs),
    packing: Packing,
) -> Result<(), DriverError> {
    if cluster_blocks > 1 {
        // SAFETY: the caller's contract.
        return unsafe {
            cluster::tuned_pass_in_clusters(
                x,
                kernel,
                cfg,
                cluster_blocks,
                (src, keys),
                args,
                packing,
            )
        };
    }
    let (layout, tile_bits, fields) = args;
    assert!(layout.slots() <= cfg.grid_dim.0 as usize * (1 << tile_bits));
    assert!(
        covers(keys.len(), &layout, &packing),
        "the keys the layout addresses"
    );
    let (src_at, keys_at, _records) = addresses(x, (src, keys));
    // SAFETY: tuned_pass_*(const T *src, T *keys, RowLayout layout, u32 tile_bits, seven u32
    // fields, Packing packing), the addresses of the two arrays (held by their borrows across
    // the launch); the layout addresses only slots of them (RowLayout::slots, keys below n),
    // both as long (or, in a pass that packs and unpacks, neither touched: `covers`), and
    // padding slots are neither read nor stored; `packing`: the caller's.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(&src_at).arg(&keys_at).arg(&layout).arg(&tile_bits);
            for value in &fields {
                l.arg(value);
            }
            l.arg(&packing);
        })
    }
}

/// The tuned passes of `passes` (each one's fields and packing), each a launch of
/// kernels/tuned.cu's `tuned_pass_*` as [`tuned_pass`] makes it (no clusters), as one CUDA
/// graph (graph.rs): the first reads `src` (the keys when `None`), every later one the keys
/// the pass before wrote.
///
/// # Safety
/// As [`tuned_pass`]'s, for every packing.
pub(crate) unsafe fn tuned_passes_graph<T>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, keys): (Option<&CudaView<T>>, &mut CudaViewMut<T>),
    (layout, tile_bits): (RowLayout, u32),
    passes: &[(PassArgs, Packing)],
) -> crate::Result<()> {
    assert!(
        passes.iter().all(|(_, p)| covers(keys.len(), &layout, p)),
        "the keys the layout addresses"
    );
    let (src_at, keys_at, _records) = addresses(x, (src, keys));
    let launches = passes
        .iter()
        .enumerate()
        .map(|(i, (values, packing))| {
            let mut node = KernelNode::new(kernel, cfg);
            let read = if i == 0 { src_at } else { keys_at };
            node.arg(&read).arg(&keys_at).arg(&layout).arg(&tile_bits);
            for value in values {
                node.arg(value);
            }
            node.arg(packing);
            node
        })
        .collect();
    // SAFETY: as for `tuned_pass`: each node's arguments are tuned_pass_*'s, the addresses
    // are the two arrays' (held by the borrows above until the launch is queued), the
    // layout addresses only their slots, and the packings are the caller's.
    unsafe { graph::launch(&x.gpu.graphs, x.stream, launches, "the tuned passes") }
}

/// Whether `keys` holds the keys the layout addresses, or need not: a pass that both packs and
/// unpacks reads and writes only its packing's buffers.
pub(super) fn covers(keys: usize, layout: &RowLayout, packing: &Packing) -> bool {
    keys >= layout.n as usize || packing.flags == PACK_ON_LOAD | UNPACK_ON_STORE
}

/// The device addresses of a pass's source (the keys when `None`, else an array as long) and
/// keys, and the guards that hold their borrows while a launch takes them.
fn addresses<'s, T>(
    x: &'s Exec,
    (src, keys): (Option<&'s CudaView<T>>, &'s mut CudaViewMut<T>),
) -> (u64, u64, impl Sized + 's) {
    if let Some(src) = src {
        assert_eq!(src.len(), keys.len(), "a source as long as the keys");
    }
    let (keys_at, write) = keys.device_ptr_mut(x.stream);
    let (src_at, read) = match src {
        Some(src) => {
            let (at, read) = src.device_ptr(x.stream);
            (at, Some(read))
        }
        None => (keys_at, None),
    };
    (src_at, keys_at, (write, read))
}
