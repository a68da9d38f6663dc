//! Copies between host slices and the device on a call's stream: small ones directly, large
//! ones through the pinned staging buffers, chunk by chunk (src/cuda/staging.rs).

use super::exec::Exec;
use super::memory;
use super::staging::MIN_STAGED_BYTES;
use crate::error::{CudaContext as _, Error, Result};
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr};

/// A device copy of `host`.
pub(crate) fn upload<T: bytemuck::Pod + DeviceRepr>(x: &Exec, host: &[T]) -> Result<CudaSlice<T>> {
    let n = host.len();
    let mut device = memory::alloc::<T>(x.stream, n, || format!("{n} keys on the GPU"))?;
    upload_into(x, host, device.slice_mut(0..n))?;
    Ok(device)
}

/// Copies `host` into `device` (same length), queued on the call's stream; `host` may be
/// written again when this returns.
pub(crate) fn upload_into<T: bytemuck::Pod + DeviceRepr>(
    x: &Exec,
    host: &[T],
    mut device: CudaViewMut<T>,
) -> Result<()> {
    let n = host.len();
    if std::mem::size_of_val(host) < MIN_STAGED_BYTES {
        return x
            .stream
            .memcpy_htod(host, &mut device)
            .during(|| format!("copying {n} keys to the GPU"));
    }
    upload_parts_into(x, &[host], device)
}

/// Copies the host `parts`, one after another, into `device` (as long as they are together),
/// queued on the call's stream, through the pinned staging whatever their size: a gather of
/// many short slices would otherwise take as many of the driver's slower pageable copies.
pub(crate) fn upload_parts_into<T: bytemuck::Pod + DeviceRepr>(
    x: &Exec,
    parts: &[&[T]],
    device: CudaViewMut<T>,
) -> Result<()> {
    let bytes = device.len() * std::mem::size_of::<T>();
    let mut view = memory::reinterpret::<T, u8>(device, bytes);
    let parts: Vec<&[u8]> = parts
        .iter()
        .map(|part| bytemuck::cast_slice(part))
        .collect();
    x.gpu
        .with_staging(|stage| stage.upload(x.stream, &parts, &mut view))
}

/// Copies `device` into `host` (same length) and waits for the copy.
pub(crate) fn download<T: bytemuck::Pod + DeviceRepr>(
    x: &Exec,
    device: &CudaView<T>,
    host: &mut [T],
) -> Result<()> {
    if std::mem::size_of_val(host) >= MIN_STAGED_BYTES {
        return download_staged(x, device, host);
    }
    x.stream
        .memcpy_dtoh(device, host)
        .during(|| "copying the results back".into())?;
    x.stream
        .synchronize()
        .during(|| "waiting for the GPU".into())
}

/// [`download`] through the pinned staging whatever the size: for the many blocks of a few
/// MiB of an out-of-core merge, which the driver's pageable copies move at a fraction of the
/// link's speed.
pub(crate) fn download_staged<T: bytemuck::Pod + DeviceRepr>(
    x: &Exec,
    device: &CudaView<T>,
    host: &mut [T],
) -> Result<()> {
    let bytes = std::mem::size_of_val(host);
    let view = memory::reinterpret_ref::<T, u8>(device, bytes);
    let host = bytemuck::cast_slice_mut(host);
    x.gpu
        .with_staging(|stage| stage.download(x.stream, &view, host))?;
    x.stream
        .synchronize()
        .during(|| "waiting for the GPU".into())
}

/// Copies `keys` to the device, runs `work` on them there, and copies them back. If the GPU
/// fails while the results are being copied back, the slice may hold a mix of sorted and
/// original keys; the error says so.
pub(crate) fn round_trip<T: bytemuck::Pod + DeviceRepr>(
    x: &Exec,
    keys: &mut [T],
    work: impl FnOnce(&mut CudaSlice<T>) -> Result<()>,
) -> Result<()> {
    let mut device = upload(x, keys)?;
    work(&mut device)?;
    let n = keys.len();
    download(x, &device.slice(0..n), keys).map_err(|e| match e {
        Error::Cuda { context, cause } => Error::Cuda {
            context: format!("{context} (the slice may now mix sorted and original keys)"),
            cause,
        },
        other => other,
    })
}
