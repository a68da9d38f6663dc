//! Copies between host slices and the device: small ones directly, large ones through the
//! pinned staging buffers, chunk by chunk (src/cuda/staging.rs).

use super::{staging, Gpu};
use crate::error::{CudaContext as _, Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr};

/// A device copy of `host`.
pub(crate) fn upload<T: bytemuck::Pod + DeviceRepr>(gpu: &Gpu, host: &[T]) -> Result<CudaSlice<T>> {
    let stream = gpu.stream();
    if std::mem::size_of_val(host) < staging::MIN_STAGED_BYTES {
        return stream
            .clone_htod(host)
            .during(|| format!("copying {} keys to the GPU", host.len()));
    }
    // SAFETY: the staged copy below writes every element before anything reads it.
    let mut device = unsafe { stream.alloc::<T>(host.len()) }
        .during(|| format!("allocating {} keys on the GPU", host.len()))?;
    let (ptr, record_write) = device.device_ptr_mut(stream);
    gpu.with_staging(|stage| stage.upload(gpu, bytemuck::cast_slice(host), ptr))?;
    drop(record_write);
    Ok(device)
}

/// Copies `device` (a slice or a view of one) into `host` (same length) and waits for the copy.
pub(crate) fn download<T: bytemuck::Pod + DeviceRepr>(
    gpu: &Gpu,
    device: &impl DevicePtr<T>,
    host: &mut [T],
) -> Result<()> {
    let stream = gpu.stream();
    if std::mem::size_of_val(host) < staging::MIN_STAGED_BYTES {
        stream
            .memcpy_dtoh(device, host)
            .during(|| "copying the results back".into())?;
    } else {
        let (ptr, _record_read) = device.device_ptr(stream);
        gpu.with_staging(|stage| stage.download(gpu, ptr, bytemuck::cast_slice_mut(host)))?;
    }
    stream.synchronize().during(|| "waiting for the GPU".into())
}

/// Copies `words` to the device, runs `work` on them there, and copies them back. If the GPU
/// fails while the results are being copied back, the slice may hold a mix of sorted and
/// original words; the error says so.
pub(crate) fn round_trip<T: bytemuck::Pod + DeviceRepr>(
    gpu: &Gpu,
    words: &mut [T],
    work: impl FnOnce(&mut CudaSlice<T>) -> Result<()>,
) -> Result<()> {
    let mut device = upload(gpu, words)?;
    work(&mut device)?;
    download(gpu, &device, words).map_err(|e| match e {
        Error::Cuda { context, cause } => Error::Cuda {
            context: format!("{context} (the slice may now mix sorted and original keys)"),
            cause,
        },
        other => other,
    })
}
