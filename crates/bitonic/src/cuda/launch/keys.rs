//! The small kernels around the sorts: the key map of the seed versions and the widening of
//! 16-bit keys (kernels/map_keys.cu), the seed versions' launches (kernels/v*.cu), and the
//! values of a key-value sort of rows, gathered by their indices (kernels/pairs.cu).

use super::launch;
use crate::cuda::exec::Exec;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
};

/// kernels/map_keys.cu `map_keys_{u32,u64}(keys, n, map, inverse)`: keys to
/// ascending-sortable words with the key map `map`, or back.
pub(crate) fn map_keys<B: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &mut CudaViewMut<B>,
    (map, inverse): (u32, bool),
) -> Result<(), DriverError> {
    let (n, inverse) = (words.len() as u32, inverse as u32);
    // SAFETY: map_keys_W(W *keys, u32 n, u32 map, u32 inverse) over n words.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(words).arg(&n).arg(&map).arg(&inverse);
        })
    }
}

/// kernels/map_keys.cu `map_keys_into_{u32,u64}(keys, words, n, map)`: `keys` mapped into
/// `words` (as many) with the key map `map`, out of place.
pub(crate) fn map_keys_into<B: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<B>,
    words: &mut CudaViewMut<B>,
    map: u32,
) -> Result<(), DriverError> {
    assert_eq!(keys.len(), words.len(), "a word for every key");
    let n = keys.len() as u32;
    // SAFETY: map_keys_into_W(const W *keys, W *words, u32 n, u32 map) reads n keys and writes
    // n words, both buffers that long (asserted).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(words).arg(&n).arg(&map);
        })
    }
}

/// kernels/map_keys.cu `widen_16(keys, words, n, map)` and `narrow_16(words, keys, n,
/// map)`: 16-bit keys to the `u32` words the GPU sorts in their place, or back, with the
/// float map `map`; `S` and `D` are the 2- and 4-byte element types, either way round.
pub(crate) fn convert_16<S: DeviceRepr, D: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    src: &CudaView<S>,
    dst: &mut CudaViewMut<D>,
    map: u32,
) -> Result<(), DriverError> {
    let sizes = (std::mem::size_of::<S>(), std::mem::size_of::<D>());
    assert!(
        matches!(sizes, (2, 4) | (4, 2)) && src.len() == dst.len(),
        "16-bit keys and as many u32 words"
    );
    let n = src.len() as u32;
    // SAFETY: widen_16(const u16 *, u32 *, u32 n, u32 map) and narrow_16(const u32 *, u16 *,
    // u32 n, u32 map) read n elements of `src` and write n of `dst`, of the sizes asserted.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(src).arg(dst).arg(&n).arg(&map);
        })
    }
}

/// kernels/v1 … v5 `vX_block_sort_W(keys, n)`, `vX_block_merge_W(keys, n, size)` and
/// `vX_step_W(keys, n, size, stride)` (V0's `v0_step_W` too): the seed versions' launches,
/// `sizes` the stage and stride a kernel takes after `n` (none, one or two of them).
pub(crate) fn seed_kernel<B: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &mut CudaViewMut<B>,
    sizes: &[u32],
) -> Result<(), DriverError> {
    let n = keys.len() as u32;
    // SAFETY: every seed kernel takes (W *keys, u32 n) and then the stage size and the stride
    // its kind needs, which the caller passes; the kernels index below n.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(&n);
            for size in sizes {
                l.arg(size);
            }
        })
    }
}

/// kernels/pairs.cu `gather_{u32,u64}(values, values_out, indices, n, row_len)`: each row's
/// values in the order of its indices.
pub(crate) fn gather<V: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    sources: &CudaViewMut<V>,
    values: &mut CudaViewMut<V>,
    indices: &CudaViewMut<u32>,
    row_len: u32,
) -> Result<(), DriverError> {
    let n = values.len() as u32;
    assert!(sources.len() == values.len() && indices.len() >= values.len());
    let (sources, indices) = (sources.as_view(), indices.as_view());
    // SAFETY: gather_V(const V *values, V *values_out, const u32 *indices, u32 n,
    // u32 row_len); each index is below row_len, inside its row.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(&sources)
                .arg(values)
                .arg(&indices)
                .arg(&n)
                .arg(&row_len);
        })
    }
}
