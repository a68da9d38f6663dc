//! The tuned network's passes (kernels/tuned.cu `tuned_pass_*`): one launch, all of a plan's
//! as one graph, or in thread-block clusters (cluster.rs). A pass over key-index pairs may pack
//! the caller's keys as it loads and unpack them as it stores ([`PackedRows`]).

use super::{cluster, launch};
use crate::cuda::exec::Exec;
use crate::cuda::graph::{self, KernelNode};
use crate::kernels::abi::{Packing, RowLayout, MAP_INDEX64, PACK_ON_LOAD, UNPACK_ON_STORE};
use crate::plan::pair_bytes_of;
use crate::plan::passes::PassArgs;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DriverError,
    LaunchConfig, PushKernelArg, SyncOnDrop,
};

/// The caller's buffers that the packing passes of a plan read and write
/// (kernels/tuned/packing.cuh): keys in rows, and `k` values and indices a row, or for an
/// argsort in place the keys themselves and every index. Made only from typed views whose
/// lengths it checks, and holding their borrows until it is dropped (after the passes are
/// queued): what makes a packing launch safe.
pub(crate) struct PackedRows<'a> {
    /// The kernels' struct, its flags 0 (each pass gets its own: [`PackedRows::packing`]).
    packing: Packing,
    keys: usize,
    row_len: usize,
    _borrows: Vec<SyncOnDrop<'a>>,
}

impl<'a> PackedRows<'a> {
    /// `keys` (2, 4 or 8 bytes each) in rows of `row_len`, the first `k` of each sorted row to
    /// `values` and their indices (4 or 8 bytes) to `indices`, the keys mapped by `map`.
    /// Panics where the lengths disagree (the sorter checked the caller's shapes).
    pub(crate) fn new<K: DeviceRepr, I: DeviceRepr>(
        x: &'a Exec,
        keys: &'a CudaView<'_, K>,
        (values, indices): (&'a mut CudaViewMut<'_, K>, &'a mut CudaViewMut<'_, I>),
        (row_len, k): (usize, usize),
        map: u32,
    ) -> PackedRows<'a> {
        let rows = check_rows::<K, I>(keys.len(), row_len);
        assert!((1..=row_len).contains(&k), "k of a row");
        assert_eq!(
            (values.len(), indices.len()),
            (rows * k, rows * k),
            "k a row"
        );
        let (keys_at, read) = keys.device_ptr(x.stream);
        let (values_at, values_write) = values.device_ptr_mut(x.stream);
        let (indices_at, indices_write) = indices.device_ptr_mut(x.stream);
        PackedRows {
            packing: packing::<K, I>((keys_at, values_at, indices_at), k, map),
            keys: keys.len(),
            row_len,
            _borrows: vec![read, values_write, indices_write],
        }
    }

    /// `keys` in rows of `row_len` sorted in place, each key's index in its row before the
    /// sort to `indices` (as many): the kernels see values that are the keys, and write each
    /// key back from its word (the canonical key where `map` ties keys) rather than reading
    /// the input again. Panics where the lengths disagree.
    pub(crate) fn in_place<K: DeviceRepr, I: DeviceRepr>(
        x: &'a Exec,
        keys: &'a mut CudaViewMut<'_, K>,
        indices: &'a mut CudaViewMut<'_, I>,
        row_len: usize,
        map: u32,
    ) -> PackedRows<'a> {
        check_rows::<K, I>(keys.len(), row_len);
        assert_eq!(indices.len(), keys.len(), "an index a key");
        let len = keys.len();
        let (keys_at, write) = keys.device_ptr_mut(x.stream);
        let (indices_at, indices_write) = indices.device_ptr_mut(x.stream);
        PackedRows {
            packing: packing::<K, I>((keys_at, keys_at, indices_at), row_len, map),
            keys: len,
            row_len,
            _borrows: vec![write, indices_write],
        }
    }

    /// The packing of a pass with `flags` over pairs of type `P` (u64 words for keys of 2 or 4
    /// bytes, 16-byte key-index pairs for 8) laid out as `layout`: panics where the pairs or
    /// the layout are not those of these keys.
    fn packing<P>(&self, layout: &RowLayout, flags: u32) -> Packing {
        let pair_bytes = pair_bytes_of(self.packing.key_bytes as usize);
        assert_eq!(
            std::mem::size_of::<P>(),
            pair_bytes,
            "pairs of the keys' width"
        );
        let rows = (
            layout.n as usize,
            layout.row_len as usize,
            layout.is_segmented(),
        );
        assert_eq!(rows, (self.keys, self.row_len, false), "the keys' rows");
        Packing {
            flags,
            ..self.packing
        }
    }
}

/// The rows of `keys` keys of type `K` with indices of type `I`: panics where `row_len` does
/// not cut them into whole rows or a width is not the kernels'.
fn check_rows<K, I>(keys: usize, row_len: usize) -> usize {
    let (key_bytes, index_bytes) = (std::mem::size_of::<K>(), std::mem::size_of::<I>());
    assert!(matches!(key_bytes, 2 | 4 | 8), "keys of 2, 4 or 8 bytes");
    assert!(matches!(index_bytes, 4 | 8), "indices of 4 or 8 bytes");
    assert!(row_len > 0 && keys % row_len == 0, "whole rows");
    keys / row_len
}

/// The kernels' `Packing` (flags 0) of keys of type `K` at `keys`, `k` values a row at
/// `values` and indices of type `I` at `indices`.
fn packing<K, I>((keys, values, indices): (u64, u64, u64), k: usize, map: u32) -> Packing {
    let index64 = if std::mem::size_of::<I>() == 8 {
        MAP_INDEX64
    } else {
        0
    };
    Packing {
        keys,
        values,
        indices,
        k: k as u32,
        key_bytes: std::mem::size_of::<K>() as u32,
        map: (map & !MAP_INDEX64) | index64,
        flags: 0,
    }
}

/// What one pass packs: nothing, or with the caller's buffers, [`PACK_ON_LOAD`],
/// [`UNPACK_ON_STORE`] or both.
pub(crate) type PassPacking<'r> = Option<(&'r PackedRows<'r>, u32)>;

/// The kernels' `Packing` of a pass over pairs of type `P` laid out as `layout`.
fn packing_of<P>(pass: PassPacking<'_>, layout: &RowLayout) -> Packing {
    match pass {
        None => Packing::default(),
        Some((rows, flags)) => rows.packing::<P>(layout, flags),
    }
}

/// One launch of kernels/tuned.cu's `tuned_pass_*(src, keys, layout, tile_bits, pass args…,
/// packing)`, reading `src` (the keys themselves when `None`, or another array as long) and
/// writing `keys`, in clusters of `cluster_blocks` blocks when that is more than 1. A pass
/// that packs reads the caller's keys instead of `src`, one that unpacks writes the caller's
/// outputs instead of `keys`; with both, `keys` may be empty (a one-pass packed plan has no
/// pairs between passes), since the pass then touches neither array.
pub(crate) fn tuned_pass<T>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    cluster_blocks: u32,
    (src, keys): (Option<&CudaView<T>>, &mut CudaViewMut<T>),
    args: (RowLayout, u32, PassArgs),
    packed: PassPacking<'_>,
) -> Result<(), DriverError> {
    let packing = packing_of::<T>(packed, &args.0);
    let addressed = covers(keys.len(), &args.0, &packing);
    assert!(addressed, "the keys the layout addresses");
    if cluster_blocks > 1 {
        return cluster::tuned_pass_in_clusters(
            x,
            kernel,
            cfg,
            cluster_blocks,
            (src, keys),
            args,
            packing,
        );
    }
    let (layout, tile_bits, fields) = args;
    assert!(layout.slots() <= cfg.grid_dim.0 as usize * (1 << tile_bits));
    let (src_at, keys_at, _records) = addresses(x, (src, keys));
    // SAFETY: tuned_pass_*(const T *src, T *keys, RowLayout layout, u32 tile_bits, seven u32
    // fields, Packing packing), the addresses of the two arrays (held by their borrows across
    // the launch); the layout addresses only slots of them (RowLayout::slots, keys below n),
    // both as long (or, in a pass that packs and unpacks, neither touched: `covers`), and
    // padding slots are neither read nor stored; the packing's buffers are a PackedRows',
    // checked against the layout and the pairs, and borrowed by it across the launch.
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
pub(crate) fn tuned_passes_graph<T>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (src, keys): (Option<&CudaView<T>>, &mut CudaViewMut<T>),
    (layout, tile_bits): (RowLayout, u32),
    passes: &[(PassArgs, PassPacking<'_>)],
) -> crate::Result<()> {
    let packings: Vec<Packing> = passes
        .iter()
        .map(|(_, packed)| packing_of::<T>(*packed, &layout))
        .collect();
    assert!(
        packings.iter().all(|p| covers(keys.len(), &layout, p)),
        "the keys the layout addresses"
    );
    let (src_at, keys_at, _records) = addresses(x, (src, keys));
    let launches = passes
        .iter()
        .zip(&packings)
        .enumerate()
        .map(|(i, ((values, _), packing))| {
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
    // layout addresses only their slots, and the packings are PackedRows', checked and
    // borrowed by their owner until the graph is queued.
    unsafe { graph::launch(&x.gpu.graphs, x.stream, launches, "the tuned passes") }
}

/// Whether `keys` holds the keys the layout addresses, or need not: a pass that both packs and
/// unpacks reads and writes only its packing's buffers.
fn covers(keys: usize, layout: &RowLayout, packing: &Packing) -> bool {
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
