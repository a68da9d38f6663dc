//! Arrays already on a CUDA GPU (torch, cupy), taken through DLPack: the caller's library
//! allocates and copies (python/bitonic/_cuda.py), and this sorts its buffers in place, zero
//! copy. The capsules are read, not consumed: their producer keeps ownership, and the caller
//! keeps the arrays alive across the call.

use bitonic::{DType, Gpu, GpuUnavailable, SortKey, Sorter};
use cudarc::driver::{result, sys, CudaSlice, CudaStream};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

/// DLPack's device type of CUDA device memory (kDLCUDA).
const DL_CUDA: i32 = 2;

#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// The first field of DLPack's `DLManagedTensor`, which a "dltensor" capsule points at.
#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// What a capsule describes: a compact row-major array of `len` elements.
pub struct Tensor {
    /// The first element's address.
    pub address: u64,
    pub len: usize,
    /// DLPack's (device type, device id).
    pub device: (i32, i32),
    /// DLPack's type code (0 int, 1 uint, 2 float, ...) and bits.
    pub code: u8,
    pub bits: u8,
}

impl Tensor {
    /// The dtype's name the numpy way (`float32`, `bfloat16`).
    pub fn dtype_name(&self) -> String {
        let kind = match self.code {
            0 => "int",
            1 => "uint",
            2 => "float",
            4 => "bfloat",
            5 => "complex",
            6 => "bool",
            _ => "code-",
        };
        format!("{kind}{}", self.bits)
    }

    pub fn key_dtype(&self) -> PyResult<DType> {
        Ok(match (self.code, self.bits) {
            (1, 32) => DType::U32,
            (0, 32) => DType::I32,
            (1, 64) => DType::U64,
            (0, 64) => DType::I64,
            (2, 32) => DType::F32,
            (2, 64) => DType::F64,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "bitonic sorts keys of dtype uint32, int32, uint64, int64, float32 or \
                     float64, not {}",
                    self.dtype_name()
                )))
            }
        })
    }
}

/// Reads an unconsumed "dltensor" capsule (from `__dlpack__()`); a `ValueError` unless it is
/// compact row-major with one lane an element.
pub fn read(capsule: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("expected a DLPack capsule (from __dlpack__())"))?;
    let pointer = capsule.pointer_checked(Some(c"dltensor"))?;
    // SAFETY: a "dltensor" capsule points at a DLManagedTensor, which starts with a DLTensor,
    // alive while the capsule is (the caller holds it).
    let t = unsafe { &*(pointer.as_ptr() as *const DLTensor) };
    if t.dtype.lanes != 1 || t.ndim < 0 {
        return Err(PyValueError::new_err("DLPack tensor with vector lanes or negative ndim"));
    }
    let ndim = t.ndim as usize;
    let (shape, strides) = unsafe {
        let shape = if ndim == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(t.shape, ndim)
        };
        let strides = (!t.strides.is_null() && ndim > 0)
            .then(|| std::slice::from_raw_parts(t.strides, ndim));
        (shape, strides)
    };
    let len = shape.iter().try_fold(1usize, |n, &d| {
        usize::try_from(d).ok().and_then(|d| n.checked_mul(d))
    });
    let len = len.ok_or_else(|| PyValueError::new_err("DLPack tensor with a bad shape"))?;
    if let (Some(strides), true) = (strides, len > 0) {
        // Row-major and compact: each dimension of more than one element steps over the
        // elements of the dimensions after it.
        let mut step = 1i64;
        for (&d, &s) in shape.iter().zip(strides).rev() {
            if d > 1 && s != step {
                return Err(PyValueError::new_err(
                    "DLPack tensor is not C-contiguous (bitonic copies it first; this is a bug)",
                ));
            }
            step *= d;
        }
    }
    Ok(Tensor {
        address: (t.data as u64).wrapping_add(t.byte_offset),
        len,
        device: (t.device.device_type, t.device.device_id),
        code: t.dtype.code,
        bits: t.dtype.bits,
    })
}

/// (device type, device id, dtype name, elements, address) of a capsule: for tests.
#[pyfunction]
pub fn dlpack_describe(capsule: &Bound<'_, PyAny>) -> PyResult<(i32, i32, String, usize, u64)> {
    let t = read(capsule)?;
    Ok((t.device.0, t.device.1, t.dtype_name(), t.len, t.address))
}

/// The process's `Gpu` of each device, opened on first use with a stream of its own.
fn gpu(ordinal: usize) -> Result<&'static Gpu, GpuUnavailable> {
    static GPUS: OnceLock<Mutex<HashMap<usize, &'static Gpu>>> = OnceLock::new();
    let mut gpus = GPUS.get_or_init(Default::default).lock().unwrap();
    if let Some(g) = gpus.get(&ordinal) {
        return Ok(g);
    }
    let g: &'static Gpu = Box::leak(Box::new(Gpu::new(ordinal)?));
    gpus.insert(ordinal, g);
    Ok(g)
}

/// The stream that bitonic sorts device `ordinal`'s arrays on, as an integer: what
/// `__dlpack__(stream=...)` is given, so that the producer's work is ordered before the sort.
#[pyfunction]
pub fn cuda_stream(py: Python<'_>, ordinal: usize) -> PyResult<usize> {
    let g = py.detach(|| gpu(ordinal)).map_err(crate::unavailable)?;
    Ok(g.stream().cu_stream() as usize)
}

/// Someone else's device memory as a `CudaSlice` that is never freed: dropped, it is leaked.
struct Foreign<T>(ManuallyDrop<CudaSlice<T>>);

impl<T> Foreign<T> {
    /// SAFETY: `address` holds `len` elements of `T` on the stream's device, for the life of
    /// the value.
    unsafe fn new(stream: &Arc<CudaStream>, address: u64, len: usize) -> Self {
        Foreign(ManuallyDrop::new(stream.upgrade_device_ptr(address, len)))
    }
}

impl<T> Drop for Foreign<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here.
        unsafe { ManuallyDrop::take(&mut self.0) }.leak();
    }
}

/// A `Tensor` that was checked, as plain numbers that can cross `detach`.
#[derive(Clone, Copy)]
struct Buffer {
    address: u64,
    len: usize,
}

fn sort_on_gpu<K: SortKey>(
    sorter: Sorter<'static>,
    gpu: &'static Gpu,
    keys: Buffer,
    values: Option<(Buffer, u8)>,
    row_len: usize,
    caller_stream: usize,
) -> bitonic::Result<()> {
    let stream = gpu.stream();
    // SAFETY: the buffers were described by live DLPack capsules of this device, which the
    // caller holds across the call; the sort queued here is ordered before the caller's
    // later work by the event below.
    let mut k = unsafe { Foreign::<K>::new(stream, keys.address, keys.len) };
    match values {
        None => sorter.sort_rows_device(&mut k.0, row_len)?,
        Some((v, 32)) => {
            let mut v = unsafe { Foreign::<u32>::new(stream, v.address, v.len) };
            sorter.sort_rows_pairs_device(&mut k.0, &mut v.0, row_len)?
        }
        Some((v, _)) => {
            let mut v = unsafe { Foreign::<u64>::new(stream, v.address, v.len) };
            sorter.sort_rows_pairs_device(&mut k.0, &mut v.0, row_len)?
        }
    };
    let cuda = |context: &str| {
        let context = context.to_string();
        move |cause| bitonic::Error::Cuda { context, cause }
    };
    let event = gpu
        .context()
        .new_event(None)
        .map_err(cuda("making an event"))?;
    event.record(stream).map_err(cuda("recording an event"))?;
    // SAFETY: the caller's stream is live (its library gave it), the event is ours.
    unsafe {
        result::stream::wait_event(
            caller_stream as sys::CUstream,
            event.cu_event(),
            sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
        )
    }
    .map_err(cuda("making the caller's stream wait for the sort"))?;
    Ok(())
}

/// Sorts in place each row of `row_len` keys of the CUDA array that `keys` (a "dltensor"
/// capsule) holds, and, when given, moves the 4- or 8-byte `values` with them (stably). The
/// capsules must have been made with `stream=cuda_stream(device)`; the caller's stream
/// `caller_stream` waits for the sort, so later work on it sees sorted arrays.
#[pyfunction]
#[pyo3(signature = (keys, values, row_len, descending, caller_stream))]
pub fn sort_rows_cuda(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    values: Option<&Bound<'_, PyAny>>,
    row_len: usize,
    descending: bool,
    caller_stream: usize,
) -> PyResult<()> {
    let k = read(keys)?;
    if k.device.0 != DL_CUDA {
        return Err(PyValueError::new_err("keys are not in CUDA device memory"));
    }
    let dtype = k.key_dtype()?;
    let v = match values {
        None => None,
        Some(values) => {
            let v = read(values)?;
            if v.device != k.device || v.len != k.len || !(v.bits == 32 || v.bits == 64) {
                return Err(PyValueError::new_err(format!(
                    "values must be {} elements of 4 or 8 bytes on the keys' device",
                    k.len
                )));
            }
            Some((
                Buffer {
                    address: v.address,
                    len: v.len,
                },
                v.bits,
            ))
        }
    };
    let keys = Buffer {
        address: k.address,
        len: k.len,
    };
    let ordinal = k.device.1 as usize;
    let sorter = crate::sorter("cuda", descending)?;
    py.detach(|| -> PyResult<()> {
        let gpu = gpu(ordinal).map_err(crate::unavailable)?;
        let sorter = sorter.gpu(gpu);
        macro_rules! run {
            ($($t:ident => $k:ty),*) => {
                match dtype {
                    $(DType::$t => sort_on_gpu::<$k>(sorter, gpu, keys, v, row_len, caller_stream),)*
                }
            };
        }
        run!(U32 => u32, I32 => i32, U64 => u64, I64 => i64, F32 => f32, F64 => f64)
            .map_err(crate::sort_error)
    })
}
