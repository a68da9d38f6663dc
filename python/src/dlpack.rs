//! Arrays already on a CUDA GPU (torch, cupy), taken through DLPack: the caller's library
//! allocates and copies (python/bitonic/_tensors.py), and this sorts its buffers in place or
//! selects into them, zero copy. The capsules are read, not consumed: their producer keeps
//! ownership, and the caller keeps the arrays alive across the call. A torch tensor comes as
//! five integers that say what its capsule would ([`read`]), from torch's public calls.
//!
//! Streams: every call queues its work, its workspace's allocation and freeing included, on
//! the caller's stream (wrapped, not owned: [`CudaContext::wrap_borrowed_stream`]), as a torch
//! kernel would: in order with the work before and after it, without events or any wait on the
//! host, and capturable into a CUDA graph while that stream captures.

use bitonic::half;
use bitonic::sample::{DeviceFilters, DeviceRow};
use bitonic::{DType, Gpu, GpuUnavailable, Sorter};
use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

use crate::unavailable;

/// DLPack's device types of host memory (kDLCPU) and of CUDA device memory (kDLCUDA).
const DL_CPU: i32 = 1;
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
    /// Elements.
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

    /// The key type of the elements: DLPack's (code, bits) of each, one line a key type.
    pub fn key_dtype(&self) -> PyResult<DType> {
        Ok(match (self.code, self.bits) {
            (1, 32) => DType::U32,
            (0, 32) => DType::I32,
            (1, 64) => DType::U64,
            (0, 64) => DType::I64,
            (2, 32) => DType::F32,
            (2, 64) => DType::F64,
            (2, 16) => DType::F16,
            (4, 16) => DType::BF16,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "bitonic sorts keys of dtype uint32, int32, uint64, int64, float32, \
                     float64, float16 or bfloat16, not {}",
                    self.dtype_name()
                )))
            }
        })
    }

    /// The checked buffer, or a `ValueError` unless it is in CUDA device memory.
    pub fn on_cuda(&self, what: &str) -> PyResult<Buffer> {
        if self.device.0 != DL_CUDA {
            return Err(PyValueError::new_err(format!(
                "{what} are not in CUDA device memory (DLPack device type {})",
                self.device.0
            )));
        }
        Ok(Buffer {
            address: self.address,
            len: self.len,
            ordinal: self.device.1 as usize,
            bytes: self.bits as usize / 8,
        })
    }
}

/// Reads what the Python half passes for an array: an unconsumed "dltensor" capsule (from
/// `__dlpack__()`; a `ValueError` unless it is compact row-major with one lane an element), or
/// torch's plain description (python/bitonic/_tensors.py `_Torch.describe`).
pub fn read(array: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(description) = array.cast::<PyTuple>() {
        return read_description(description);
    }
    read_capsule(array)
}

/// A C-contiguous tensor's `(address, elements, CUDA device, DLPack type code, bits)`: five
/// integers from torch's public calls (`data_ptr()`, `numel()`, `get_device()`, a table of its
/// dtypes), at the host cost of a capsule from the private `torch._C._to_dlpack` (0.6 µs
/// against 0.5 on an H100, bench/peers/host_cost_parts.py) and without its DLManagedTensor.
/// Nothing here can check it: the Python half vouches for it as a capsule's producer would
/// (it describes a live, C-contiguous tensor of the caller's, which the caller holds across
/// the call), and `_native`'s calls are the package's private ones.
fn read_description(description: &Bound<'_, PyTuple>) -> PyResult<Tensor> {
    let (address, len, device, code, bits): (u64, usize, i32, u8, u8) =
        description.extract().map_err(|_| {
            PyTypeError::new_err("expected (address, elements, CUDA device, type code, bits)")
        })?;
    Ok(Tensor {
        address,
        len,
        device: (if device >= 0 { DL_CUDA } else { DL_CPU }, device.max(0)),
        code,
        bits,
    })
}

fn read_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err("expected a DLPack capsule (from __dlpack__())"))?;
    let pointer = capsule.pointer_checked(Some(c"dltensor"))?;
    // SAFETY: a "dltensor" capsule points at a DLManagedTensor, which starts with a DLTensor,
    // alive while the capsule is (the caller holds it).
    let t = unsafe { &*(pointer.as_ptr() as *const DLTensor) };
    if t.dtype.lanes != 1 || t.ndim < 0 {
        return Err(PyValueError::new_err(
            "DLPack tensor with vector lanes or negative ndim",
        ));
    }
    let ndim = t.ndim as usize;
    let (shape, strides) = unsafe {
        let shape = if ndim == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(t.shape, ndim)
        };
        let strides =
            (!t.strides.is_null() && ndim > 0).then(|| std::slice::from_raw_parts(t.strides, ndim));
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
                    "DLPack tensor is not C-contiguous (bitonic copies it first: this is a bug)",
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

/// (device type, device id, dtype name, elements, address) of a capsule or a description, as
/// the calls read it: for tests.
#[pyfunction]
pub fn dlpack_describe(array: &Bound<'_, PyAny>) -> PyResult<(i32, i32, String, usize, u64)> {
    let t = read(array)?;
    Ok((t.device.0, t.device.1, t.dtype_name(), t.len, t.address))
}

/// A checked buffer of a capsule or description, as plain numbers that can cross `detach`.
#[derive(Clone, Copy)]
pub struct Buffer {
    address: u64,
    /// Elements.
    pub len: usize,
    /// The CUDA device.
    pub ordinal: usize,
    /// Bytes an element.
    pub bytes: usize,
}

impl Buffer {
    /// The buffer as a `CudaSlice` of `T` on `stream`, never freed.
    ///
    /// SAFETY: the buffer is device memory of the stream's device holding `len` elements of
    /// `T`'s size, alive while the value is (the caller holds the described array).
    pub unsafe fn slice<T>(self, stream: &Arc<CudaStream>) -> Foreign<T> {
        debug_assert_eq!(self.bytes, std::mem::size_of::<T>());
        Foreign(ManuallyDrop::new(
            stream.upgrade_device_ptr(self.address, self.len),
        ))
    }
}

/// Someone else's device memory as a `CudaSlice` that is never freed: dropped, it is leaked.
pub struct Foreign<T>(pub ManuallyDrop<CudaSlice<T>>);

impl<T> Drop for Foreign<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here.
        unsafe { ManuallyDrop::take(&mut self.0) }.leak();
    }
}

/// The process's `Gpu` of each ordinal, opened on first use and kept: it holds the compiled
/// kernels. Its memory pool keeps up to a sixteenth of the GPU's memory once freed, so that
/// the workspace of a call in a loop is not given back to the driver and asked for again.
fn device(ordinal: usize) -> Result<&'static Gpu, GpuUnavailable> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, &'static Gpu>>> = OnceLock::new();
    let mut devices = DEVICES.get_or_init(Default::default).lock().unwrap();
    if let Some(gpu) = devices.get(&ordinal) {
        return Ok(gpu);
    }
    let gpu = Gpu::new(ordinal)?;
    // At least a sixteenth of the device kept, never less than another part of the process
    // (`bitonic.distributed.keep_freed_memory`, say) asked of the same pool.
    let keep = gpu.info().total_memory / 16;
    let kept = gpu
        .freed_memory_kept()
        .map_err(|e| GpuUnavailable::InitFailed(e.to_string()))?;
    if kept < keep {
        gpu.keep_freed_memory(keep)
            .map_err(|e| GpuUnavailable::InitFailed(e.to_string()))?;
    }
    let gpu: &'static Gpu = Box::leak(Box::new(gpu));
    devices.insert(ordinal, gpu);
    Ok(gpu)
}

/// The caller's stream (a `CUstream` as an integer; DLPack's 1 and 2 are CUDA's legacy and
/// per-thread default streams, whose handles are those numbers) as a cudarc stream of
/// `context`, borrowed: dropping it leaves the stream alone.
fn borrowed_stream(context: &Arc<CudaContext>, caller: usize) -> Arc<CudaStream> {
    // SAFETY: the caller's array library gave a live stream of this device's primary context
    // (the one `Gpu::new` retains), and keeps it alive across the call, which is all the
    // wrapper lives; the call queues everything on it, so nothing needs ordering with it.
    unsafe { context.wrap_borrowed_stream(caller as sys::CUstream) }
}

/// The device ordinal of `keys`, checking that every other buffer is on the same device.
fn target(keys: Buffer, others: &[Buffer]) -> PyResult<usize> {
    if let Some(b) = others.iter().find(|b| b.ordinal != keys.ordinal) {
        return Err(PyValueError::new_err(format!(
            "arrays on CUDA devices {} and {}: bitonic sorts arrays of one device",
            keys.ordinal, b.ordinal
        )));
    }
    Ok(keys.ordinal)
}

/// Runs `f` with the GIL released on `ordinal`'s device, with a sorter in torch's float order
/// queued on `caller_stream`.
fn run_on(
    py: Python<'_>,
    ordinal: usize,
    caller_stream: usize,
    descending: bool,
    f: impl FnOnce(&Sorter<'_>, &Arc<CudaStream>) -> bitonic::Result<()> + Send,
) -> PyResult<()> {
    let sorter = crate::sorter("cuda", descending)?;
    py.detach(|| {
        let gpu = device(ordinal).map_err(unavailable)?;
        let stream = borrowed_stream(gpu.context(), caller_stream);
        let sorter = sorter.gpu(gpu).stream(&stream);
        f(&sorter, &stream).map_err(crate::sort_error)
    })
}

/// The buffer of `indices` (a capsule or description, [`read`]): `len` int32 or int64
/// elements in CUDA device memory.
fn index_buffer(indices: &Bound<'_, PyAny>, len: usize) -> PyResult<Buffer> {
    let t = read(indices)?;
    let b = t.on_cuda("indices")?;
    if b.len != len || t.code != 0 || !(b.bytes == 4 || b.bytes == 8) {
        return Err(PyValueError::new_err(format!(
            "indices must be {len} elements of int32 or int64, not {} of {}",
            b.len,
            t.dtype_name()
        )));
    }
    Ok(b)
}

/// The key type and buffer of `keys` (a capsule or description, [`read`]), which must be in
/// CUDA device memory.
fn keys_on_cuda(keys: &Bound<'_, PyAny>) -> PyResult<(DType, Buffer)> {
    let k = read(keys)?;
    Ok((k.key_dtype()?, k.on_cuda("keys")?))
}

/// Sorts in place each row of `row_len` keys of the CUDA array `keys` (a capsule or
/// description, [`read`]); with `indices` (as many int32 or int64 elements), stably, writing
/// for each sorted key its index in its row before the sort. Queued on `caller_stream` (a CUstream as an
/// integer, 1 and 2 DLPack's legacy and per-thread default streams): later work on that
/// stream sees the results, and the call returns without waiting.
#[pyfunction]
#[pyo3(signature = (keys, indices, row_len, descending, caller_stream))]
pub fn cuda_sort(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    indices: Option<&Bound<'_, PyAny>>,
    row_len: usize,
    descending: bool,
    caller_stream: usize,
) -> PyResult<()> {
    let (dtype, kb) = keys_on_cuda(keys)?;
    let ib = match indices {
        None => None,
        Some(i) => {
            let i = index_buffer(i, kb.len)?;
            Some(i)
        }
    };
    let ordinal = target(kb, ib.as_slice())?;
    run_on(py, ordinal, caller_stream, descending, |sorter, stream| {
        bitonic::with_key_type!(dtype, K => {
            // SAFETY: described by live capsules or descriptions of C-contiguous arrays of this
            // device (read), held by the caller.
            let mut keys = unsafe { kb.slice::<K>(stream) };
            match ib {
                None => sorter.sort_rows_device(&mut keys.0, row_len),
                Some(ib) if ib.bytes == 8 => {
                    // SAFETY: as the keys'; 8-byte indices (index_buffer).
                    let mut idx = unsafe { ib.slice::<i64>(stream) };
                    sorter.argsort_rows_device(&mut keys.0, &mut idx.0, row_len)
                }
                Some(ib) => {
                    // SAFETY: as the keys'; 4-byte indices (index_buffer).
                    let mut idx = unsafe { ib.slice::<i32>(stream) };
                    sorter.argsort_rows_device(&mut keys.0, &mut idx.0, row_len)
                }
            }
            .map(drop)
        })
    })
}

/// Sorts in place each row of `row_len` keys of the CUDA array `keys` and moves the 4- or
/// 8-byte elements of `values` (as many) with them, stably; streams as [`cuda_sort`].
#[pyfunction]
#[pyo3(signature = (keys, values, row_len, descending, caller_stream))]
pub fn cuda_sort_pairs(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    row_len: usize,
    descending: bool,
    caller_stream: usize,
) -> PyResult<()> {
    let (dtype, kb) = keys_on_cuda(keys)?;
    let vb = read(values)?.on_cuda("values")?;
    if vb.len != kb.len || !(vb.bytes == 4 || vb.bytes == 8) {
        return Err(PyValueError::new_err(format!(
            "values must be {} elements of 4 or 8 bytes on the GPU",
            kb.len
        )));
    }
    let ordinal = target(kb, &[vb])?;
    run_on(py, ordinal, caller_stream, descending, |sorter, stream| {
        bitonic::with_key_type!(dtype, K => {
            // SAFETY: described by live capsules or descriptions of C-contiguous arrays of this
            // device (read), held by the caller.
            let mut keys = unsafe { kb.slice::<K>(stream) };
            if vb.bytes == 4 {
                let mut v = unsafe { vb.slice::<u32>(stream) };
                sorter.sort_pairs_rows_device(&mut keys.0, &mut v.0, row_len)
            } else {
                let mut v = unsafe { vb.slice::<u64>(stream) };
                sorter.sort_pairs_rows_device(&mut keys.0, &mut v.0, row_len)
            }
            .map(drop)
        })
    })
}

/// Writes the `k` largest (or smallest) keys of each row of `row_len` keys of the CUDA array
/// `keys` (left as it is) to `values`, best first, and their int32 or int64 indices in the
/// row to `indices` (`rows × k` each; ties: the smaller index first); streams as
/// [`cuda_sort`]. The values are the keys' own, bit for bit. With `k = row_len` this is each
/// row's stable sort into outputs of their own, which the package's `sort` and `argsort` of a
/// CUDA tensor call.
#[pyfunction]
#[pyo3(signature = (keys, values, indices, row_len, k, largest, caller_stream))]
#[allow(clippy::too_many_arguments)]
pub fn cuda_topk(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    row_len: usize,
    k: usize,
    largest: bool,
    caller_stream: usize,
) -> PyResult<()> {
    let (dtype, kb) = keys_on_cuda(keys)?;
    let values = read(values)?;
    if values.key_dtype()? != dtype {
        return Err(PyTypeError::new_err(
            "top-k values must have the keys' dtype",
        ));
    }
    let vb = values.on_cuda("values")?;
    let ib = index_buffer(indices, vb.len)?;
    let ordinal = target(kb, &[vb, ib])?;
    run_on(py, ordinal, caller_stream, largest, |sorter, stream| {
        bitonic::with_key_type!(dtype, K => {
            // SAFETY: described by live capsules or descriptions of C-contiguous arrays of this
            // device (read), held by the caller; the
            // indices of the width index_buffer checked.
            let keys = unsafe { kb.slice::<K>(stream) };
            let mut v = unsafe { vb.slice::<K>(stream) };
            if ib.bytes == 8 {
                let mut i = unsafe { ib.slice::<i64>(stream) };
                sorter.topk_rows_device(&keys.0, &mut v.0, &mut i.0, row_len, k)
            } else {
                let mut i = unsafe { ib.slice::<i32>(stream) };
                sorter.topk_rows_device(&keys.0, &mut v.0, &mut i.0, row_len, k)
            }
            .map(drop)
        })
    })
}

/// The buffer of a sampling call's array of one value a row (a capsule or description,
/// [`read`]): `rows` elements of float32, or of int64 where `integer` (`top_k`, the tokens), in
/// CUDA device memory.
fn per_row_buffer(
    setting: Option<&Bound<'_, PyAny>>,
    name: &str,
    integer: bool,
    rows: usize,
) -> PyResult<Option<Buffer>> {
    let Some(setting) = setting else {
        return Ok(None);
    };
    let t = read(setting)?;
    let b = t.on_cuda(name)?;
    let (code, bits, kind) = if integer {
        (0, 64, "int64")
    } else {
        (2, 32, "float32")
    };
    if b.len != rows || t.code != code || t.bits != bits {
        return Err(PyValueError::new_err(format!(
            "{name} must be {rows} elements of {kind}, not {} of {}",
            b.len,
            t.dtype_name()
        )));
    }
    Ok(Some(b))
}

/// Draws a token from each row of `vocab` logits of the CUDA array `logits` (float32, float16
/// or bfloat16) at its number of `uniform` (float32, one a row) into `tokens` (int64, one a
/// row), after the settings: each one a row (`temperature`, ...: a CUDA array, float32 or
/// int64 for `top_k`) or one for all (`temperature_all`, ...), or neither (off). One launch of
/// the library's sampling kernel, queued on `caller_stream` as [`cuda_sort`] is.
#[pyfunction]
#[pyo3(signature = (logits, vocab, uniform, tokens, temperature, temperature_all, min_p,
    min_p_all, top_k, top_k_all, top_p, top_p_all, caller_stream))]
#[allow(clippy::too_many_arguments)]
pub fn cuda_sample(
    py: Python<'_>,
    logits: &Bound<'_, PyAny>,
    vocab: usize,
    uniform: &Bound<'_, PyAny>,
    tokens: &Bound<'_, PyAny>,
    temperature: Option<&Bound<'_, PyAny>>,
    temperature_all: Option<f32>,
    min_p: Option<&Bound<'_, PyAny>>,
    min_p_all: Option<f32>,
    top_k: Option<&Bound<'_, PyAny>>,
    top_k_all: Option<i64>,
    top_p: Option<&Bound<'_, PyAny>>,
    top_p_all: Option<f32>,
    caller_stream: usize,
) -> PyResult<()> {
    let l = read(logits)?;
    let dtype = match l.key_dtype() {
        Ok(d @ (DType::F32 | DType::F16 | DType::BF16)) => d,
        _ => {
            return Err(PyTypeError::new_err(format!(
                "logits of {}: bitonic samples float32, float16 and bfloat16",
                l.dtype_name()
            )))
        }
    };
    let lb = l.on_cuda("logits")?;
    let rows = lb.len.checked_div(vocab).unwrap_or(0);
    let ub = per_row_buffer(Some(uniform), "uniform", false, rows)?.expect("given");
    let tb = per_row_buffer(Some(tokens), "tokens", true, rows)?.expect("given");
    let tv = per_row_buffer(temperature, "temperature", false, rows)?;
    let mv = per_row_buffer(min_p, "min_p", false, rows)?;
    let kv = per_row_buffer(top_k, "top_k", true, rows)?;
    let pv = per_row_buffer(top_p, "top_p", false, rows)?;
    let others: Vec<Buffer> = [Some(ub), Some(tb), tv, mv, kv, pv]
        .into_iter()
        .flatten()
        .collect();
    let ordinal = target(lb, &others)?;
    run_on(py, ordinal, caller_stream, false, |sorter, stream| {
        // SAFETY: described by live capsules or descriptions of C-contiguous arrays of this
        // device (read), held by the caller, of the types checked above.
        let u = unsafe { ub.slice::<f32>(stream) };
        let mut t = unsafe { tb.slice::<i64>(stream) };
        let floats = |b: Option<Buffer>| b.map(|b| unsafe { b.slice::<f32>(stream) });
        let (tv, mv, pv) = (floats(tv), floats(mv), floats(pv));
        let kv = kv.map(|b| unsafe { b.slice::<i64>(stream) });
        fn row<'a, T: Copy>(
            each: &'a Option<Foreign<T>>,
            all: Option<T>,
        ) -> Option<DeviceRow<'a, T>> {
            match (each, all) {
                (Some(values), _) => Some(DeviceRow::Each(&values.0)),
                (None, Some(value)) => Some(DeviceRow::All(value)),
                (None, None) => None,
            }
        }
        let mut filters = DeviceFilters::new();
        if let Some(s) = row(&tv, temperature_all) {
            filters = filters.temperature(s);
        }
        if let Some(s) = row(&mv, min_p_all) {
            filters = filters.min_p(s);
        }
        if let Some(s) = row(&kv, top_k_all) {
            filters = filters.top_k(s);
        }
        if let Some(s) = row(&pv, top_p_all) {
            filters = filters.top_p(s);
        }
        match dtype {
            DType::F16 => {
                let x = unsafe { lb.slice::<half::f16>(stream) };
                sorter.sample_rows_device(&x.0, vocab, &filters, &u.0, &mut t.0)
            }
            DType::BF16 => {
                let x = unsafe { lb.slice::<half::bf16>(stream) };
                sorter.sample_rows_device(&x.0, vocab, &filters, &u.0, &mut t.0)
            }
            _ => {
                let x = unsafe { lb.slice::<f32>(stream) };
                sorter.sample_rows_device(&x.0, vocab, &filters, &u.0, &mut t.0)
            }
        }
        .map(drop)
    })
}
