//! Launches in thread-block clusters, which cudarc's launch builder cannot express (cudarc
//! 0.19 has no cluster launch): the raw driver call, wrapped in driver.rs.

use crate::cuda::driver;
use crate::cuda::exec::Exec;
use crate::kernels::abi::{Packing, RowLayout};
use crate::plan::passes::PassArgs;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DriverError, LaunchConfig,
};
use std::ffi::c_void;

/// One tuned pass in clusters of `blocks` blocks: kernels/tuned.cu's `tuned_pass_*` reading
/// `src` (the keys themselves when `None`) and writing `keys`, with `(layout, tile_bits,
/// [col_bits, lo, b_first, b_last, hi_first, stop, map])` and `packing`, whose buffers, and
/// the keys against the layout, [`super::passes::tuned_pass`] checked.
pub(super) fn tuned_pass_in_clusters<T>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    blocks: u32,
    (src, keys): (Option<&CudaView<T>>, &mut CudaViewMut<T>),
    args: (RowLayout, u32, PassArgs),
    mut packing: Packing,
) -> Result<(), DriverError> {
    let (mut layout, mut tile_bits, mut fields) = args;
    if let Some(src) = src {
        assert_eq!(src.len(), keys.len(), "a source as long as the keys");
    }
    let (mut keys_at, _write) = keys.device_ptr_mut(x.stream);
    let (mut src_at, _read) = match src {
        Some(src) => {
            let (at, read) = src.device_ptr(x.stream);
            (at, Some(read))
        }
        None => (keys_at, None),
    };
    x.gpu.context().bind_to_thread()?;
    let mut params: Vec<*mut c_void> = vec![
        &mut src_at as *mut _ as *mut c_void,
        &mut keys_at as *mut _ as *mut c_void,
        &mut layout as *mut _ as *mut c_void,
        &mut tile_bits as *mut _ as *mut c_void,
    ];
    params.extend(fields.iter_mut().map(|f| f as *mut u32 as *mut c_void));
    params.push(&mut packing as *mut _ as *mut c_void);
    let mut attribute = driver::no_attribute();
    let raw = driver::cluster_config(cfg, blocks, x.stream, &mut attribute);
    // SAFETY: the parameters match tuned_pass_*(const T *src, T *keys, RowLayout layout, u32
    // tile_bits, seven u32 fields, Packing packing) and live until the call returns (the
    // driver copies them); the layout addresses only slots of the two arrays, both as long
    // (or, in a pass that packs and unpacks, neither touched: `covers`), held by the borrows
    // above across the launch; `packing`'s buffers are a PackedRows', checked against the
    // layout and borrowed across the launch (tuned_pass); `attribute` outlives `raw`.
    unsafe { driver::launch_kernel_ex(&raw, kernel.cu_function(), &mut params) }
}
