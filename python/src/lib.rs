//! `bitonic._native`: the Rust half of the Python package. It sorts flat, C-contiguous,
//! native-byte-order numpy arrays holding rows of `row_len` keys (this file), and CUDA arrays
//! of torch or cupy through DLPack, in place on the caller's stream (dlpack.rs); the Python
//! half (python/bitonic/) turns shapes, `dim`, array-likes and tensors into that and back.
//! Every numpy call copies its input (inputs are never written); every call releases the GIL
//! while it sorts and raises `bitonic.BitonicError` (a `RuntimeError`) with the library's
//! message when a sort fails. Floats compare as numpy and torch compare them
//! ([`FloatOrder::Numeric`]): every NaN is the largest key and `-0.0` ties with `+0.0`; keys
//! come back bit for bit (values of an argsort are gathered from the input by their indices).
//!
//! The key types are listed once a table: [`bitonic::with_key_type`] (DType to Rust type), [`key_dtype`]
//! (numpy), `dlpack::key_dtype` (DLPack codes) and python/bitonic/_dtypes.py; a new key type
//! of the library is one line in each.

use bitonic::{Backend, DType, FloatOrder, Gpu, Order, SortKey, Sorter};
use numpy::{
    dtype, Element, PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

mod distributed;
mod dlpack;
mod sample;

create_exception!(
    _native,
    BitonicError,
    PyRuntimeError,
    "A sort failed in the library (no GPU when `backend=\"cuda\"`, a CUDA error, ...); the message says why."
);

fn sort_error(e: bitonic::Error) -> PyErr {
    BitonicError::new_err(e.to_string())
}

fn unavailable(why: bitonic::GpuUnavailable) -> PyErr {
    sort_error(bitonic::Error::NoGpu(why))
}

/// The sorter of a call, in numpy's and torch's float order: `backend` by the library's names
/// (`auto`, `cpu`, `cpu-network`, `cpu-network-serial`, `cuda`); an unknown name is a
/// `ValueError`. `descending` also picks the largest keys of a top-k.
fn sorter(backend: &str, descending: bool) -> PyResult<Sorter<'static>> {
    let backend: Backend = backend
        .parse()
        .map_err(|e: bitonic::UnknownName| PyValueError::new_err(e.to_string()))?;
    Ok(Sorter::new()
        .backend(backend)
        .order(order(descending))
        .float_order(FloatOrder::Numeric))
}

/// The order `descending` asks for.
fn order(descending: bool) -> Order {
    if descending {
        Order::Descending
    } else {
        Order::Ascending
    }
}

/// The key type of `x`, or a `TypeError` naming the ones there are. bfloat16 is not numpy's
/// own: an array of it comes from a package that registers the dtype (ml_dtypes), so it is
/// told by name and `dtype::<bf16>` (which needs that package) is only asked once it is seen.
fn key_dtype(x: &Bound<'_, PyUntypedArray>) -> PyResult<DType> {
    let py = x.py();
    let d = x.dtype();
    let known = [
        (DType::U32, dtype::<u32>(py)),
        (DType::I32, dtype::<i32>(py)),
        (DType::U64, dtype::<u64>(py)),
        (DType::I64, dtype::<i64>(py)),
        (DType::F32, dtype::<f32>(py)),
        (DType::F64, dtype::<f64>(py)),
        (DType::F16, dtype::<bitonic::half::f16>(py)),
    ];
    if let Some((t, _)) = known.into_iter().find(|(_, k)| d.is_equiv_to(k)) {
        return Ok(t);
    }
    let named_bf16 = d.itemsize() == 2 && d.str()?.to_cow()? == "bfloat16";
    if named_bf16 && d.is_equiv_to(&dtype::<bitonic::half::bf16>(py)) {
        return Ok(DType::BF16);
    }
    Err(PyTypeError::new_err(format!(
        "bitonic sorts keys of dtype uint32, int32, uint64, int64, float32, float64, float16 \
         or bfloat16 (native byte order), not {d}"
    )))
}

/// The keys of a flat array of `K`, which must be 1-D and C-contiguous.
fn keys_of<'py, K: Element>(
    x: &Bound<'py, PyUntypedArray>,
) -> PyResult<numpy::PyReadonlyArray1<'py, K>> {
    if x.ndim() != 1 || !x.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "bitonic._native takes flat C-contiguous arrays (bitonic.sort reshapes for it)",
        ));
    }
    let typed = x
        .cast::<PyArray1<K>>()
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    Ok(typed.readonly())
}

/// (sorted keys or None, int64 indices or None) as numpy arrays.
type Sorted = (Option<Py<PyAny>>, Option<Py<PyAny>>);

/// (sorted keys or None, int64 indices or None) before they become numpy arrays.
type SortedVecs<K> = (Option<Vec<K>>, Option<Vec<i64>>);

fn sort_typed<'py, K: SortKey + Element>(
    x: &Bound<'py, PyUntypedArray>,
    row_len: usize,
    sorter: Sorter<'static>,
    want_values: bool,
    want_indices: bool,
) -> PyResult<Sorted> {
    let py = x.py();
    let keys = keys_of::<K>(x)?;
    let keys = keys.as_slice()?;
    let n = keys.len();
    let (values, indices) = py
        .detach(|| -> bitonic::Result<SortedVecs<K>> {
            if !want_indices {
                let mut v = keys.to_vec();
                if row_len == n {
                    sorter.sort(&mut v)?;
                } else {
                    sorter.sort_rows(&mut v, row_len)?;
                }
                return Ok((Some(v), None));
            }
            let mut idx = vec![0i64; n];
            sorter.argsort_rows(keys, &mut idx, row_len)?;
            let values = want_values.then(|| {
                idx.par_iter()
                    .enumerate()
                    .map(|(j, &i)| keys[j - j % row_len + i as usize])
                    .collect()
            });
            Ok((values, Some(idx)))
        })
        .map_err(sort_error)?;
    Ok((
        values.map(|v| PyArray1::from_vec(py, v).into_any().unbind()),
        indices.map(|v| PyArray1::from_vec(py, v).into_any().unbind()),
    ))
}

/// Sorts each row of `row_len` keys of the flat array `x` into new arrays: (values, indices),
/// each None unless asked for. Indices are int64, counted from each row's start; with indices
/// the sort is stable (equal keys keep their index order, in both orders).
#[pyfunction]
#[pyo3(signature = (x, row_len, descending=false, backend="auto", values=true, indices=true))]
fn sort_rows<'py>(
    x: &Bound<'py, PyUntypedArray>,
    row_len: usize,
    descending: bool,
    backend: &str,
    values: bool,
    indices: bool,
) -> PyResult<Sorted> {
    let sorter = sorter(backend, descending)?;
    bitonic::with_key_type!(key_dtype(x)?, K => sort_typed::<K>(x, row_len, sorter, values || !indices, indices))
}

fn pairs_sized<K: SortKey, const N: usize>(
    sorter: Sorter<'static>,
    keys: &mut [K],
    bytes: &[u8],
    row_len: usize,
) -> bitonic::Result<Vec<u8>> {
    let mut values: Vec<[u8; N]> = bytes
        .chunks_exact(N)
        .map(|c| c.try_into().expect("chunks of N bytes"))
        .collect();
    sorter.sort_pairs_rows(keys, &mut values, row_len)?;
    Ok(values.as_flattened().to_vec())
}

fn pairs_typed<'py, K: SortKey + Element>(
    keys: &Bound<'py, PyUntypedArray>,
    values: &Bound<'py, PyUntypedArray>,
    (itemsize, row_len): (usize, usize),
    sorter: Sorter<'static>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let py = keys.py();
    let k = keys_of::<K>(keys)?;
    let k = k.as_slice()?;
    let v = keys_of::<u8>(values)?;
    let v = v.as_slice()?;
    if v.len() != k.len() * itemsize {
        return Err(PyValueError::new_err(format!(
            "{} keys but {} bytes of values of {itemsize} bytes",
            k.len(),
            v.len()
        )));
    }
    let (k, v) = py
        .detach(|| -> bitonic::Result<(Vec<K>, Vec<u8>)> {
            let mut k = k.to_vec();
            let v = match itemsize {
                1 => pairs_sized::<K, 1>(sorter, &mut k, v, row_len),
                2 => pairs_sized::<K, 2>(sorter, &mut k, v, row_len),
                4 => pairs_sized::<K, 4>(sorter, &mut k, v, row_len),
                8 => pairs_sized::<K, 8>(sorter, &mut k, v, row_len),
                16 => pairs_sized::<K, 16>(sorter, &mut k, v, row_len),
                _ => unreachable!("itemsize checked by the caller"),
            }?;
            Ok((k, v))
        })
        .map_err(sort_error)?;
    Ok((
        PyArray1::from_vec(py, k).into_any().unbind(),
        PyArray1::from_vec(py, v).into_any().unbind(),
    ))
}

/// Sorts each row of `row_len` keys of the flat array `keys` and moves the values with them,
/// stably: `values` is a flat uint8 array holding one value of `itemsize` bytes (1, 2, 4, 8
/// or 16) a key. Returns new arrays (keys, value bytes).
#[pyfunction]
#[pyo3(signature = (keys, values, itemsize, row_len, descending=false, backend="auto"))]
fn sort_pairs<'py>(
    keys: &Bound<'py, PyUntypedArray>,
    values: &Bound<'py, PyUntypedArray>,
    itemsize: usize,
    row_len: usize,
    descending: bool,
    backend: &str,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    if ![1, 2, 4, 8, 16].contains(&itemsize) {
        return Err(PyValueError::new_err(format!(
            "values of {itemsize} bytes: bitonic._native moves values of 1, 2, 4, 8 or 16 bytes"
        )));
    }
    let sorter = sorter(backend, descending)?;
    bitonic::with_key_type!(key_dtype(keys)?, K => pairs_typed::<K>(keys, values, (itemsize, row_len), sorter))
}

fn topk_typed<'py, K: SortKey + Element>(
    x: &Bound<'py, PyUntypedArray>,
    row_len: usize,
    k: usize,
    sorter: Sorter<'static>,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let py = x.py();
    let keys = keys_of::<K>(x)?;
    let keys = keys.as_slice()?;
    let rows = keys.len().checked_div(row_len).unwrap_or(0);
    let (values, indices) = py
        .detach(|| -> bitonic::Result<(Vec<K>, Vec<i64>)> {
            let mut values = vec![K::zeroed(); rows * k];
            let mut indices = vec![0i64; rows * k];
            // The values are the input's keys, bit for bit, on either backend.
            sorter.topk_rows(keys, &mut values, &mut indices, row_len, k)?;
            Ok((values, indices))
        })
        .map_err(sort_error)?;
    Ok((
        PyArray1::from_vec(py, values).into_any().unbind(),
        PyArray1::from_vec(py, indices).into_any().unbind(),
    ))
}

/// The `k` largest (or smallest) keys of each row of `row_len` keys of the flat array `x`,
/// best first, and their int64 indices in the row: new flat arrays of `rows × k`. Among equal
/// keys the smaller index wins: exactly the first `k` of a stable sort.
#[pyfunction]
#[pyo3(signature = (x, row_len, k, largest=true, backend="auto"))]
fn topk_rows(
    x: &Bound<'_, PyUntypedArray>,
    row_len: usize,
    k: usize,
    largest: bool,
    backend: &str,
) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    let sorter = sorter(backend, largest)?;
    bitonic::with_key_type!(key_dtype(x)?, K => topk_typed::<K>(x, row_len, k, sorter))
}

/// What the GPU probe found: `cuda` (whether sorts can run on the GPU), `reason` (why not, or
/// None), `device` (a dict about GPU 0, or None), `nvrtc_version` ((major, minor) or None) and
/// `kernel_pack_archs` (the architectures whose kernels came compiled with the module).
#[pyfunction]
fn info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let (gpu, nvrtc) = py.detach(|| {
        let gpu = Gpu::get().map(|g| g.info().clone());
        (gpu, bitonic::cuda::nvrtc_version().ok())
    });
    let out = PyDict::new(py);
    out.set_item("version", env!("CARGO_PKG_VERSION"))?;
    out.set_item("cuda", gpu.is_ok())?;
    out.set_item("nvrtc_version", nvrtc)?;
    // The architectures whose kernels came with the module (they compile nothing at first use).
    out.set_item(
        "kernel_pack_archs",
        PACK_ARCHS.get().cloned().unwrap_or_default(),
    )?;
    match gpu {
        Ok(d) => {
            let dev = PyDict::new(py);
            dev.set_item("ordinal", d.ordinal)?;
            dev.set_item("name", &d.name)?;
            dev.set_item("arch", d.arch())?;
            dev.set_item("compute_capability", d.compute_capability)?;
            dev.set_item("multiprocessors", d.multiprocessors)?;
            dev.set_item("total_memory", d.total_memory)?;
            dev.set_item("driver_version", d.driver_version)?;
            out.set_item("reason", py.None())?;
            out.set_item("device", dev)?;
        }
        Err(why) => {
            out.set_item("reason", why.to_string())?;
            out.set_item("device", py.None())?;
        }
    }
    Ok(out)
}

/// Every kernel compiled when the module was built, for the architectures build.rs packed
/// (empty when NVRTC was missing there).
static KERNEL_PACK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.pack"));

/// The architectures [`KERNEL_PACK`] holds, read when the module is imported.
static PACK_ARCHS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Only the pack's index is read now; a CUBIN is copied out when its module first runs. A
    // pack that cannot be read costs compiles at first use, not the import.
    let archs = match bitonic::cuda::use_pack(KERNEL_PACK) {
        Ok(pack) => pack.archs,
        Err(e) => {
            let why = std::ffi::CString::new(format!(
                "bitonic: the kernels built into the module are unusable ({e}); they will \
                 compile at first use"
            ))
            .unwrap_or_default();
            let category = m.py().get_type::<pyo3::exceptions::PyRuntimeWarning>();
            PyErr::warn(m.py(), &category, &why, 1)?;
            Vec::new()
        }
    };
    PACK_ARCHS.get_or_init(|| archs);
    m.add("BitonicError", m.py().get_type::<BitonicError>())?;
    // The longest rows the sampling kernel takes (bitonic.sample gives longer ones to torch).
    m.add(
        "SAMPLE_MOST_LOGITS_A_ROW",
        bitonic::plan::SAMPLE_MOST_LOGITS_A_ROW,
    )?;
    m.add_function(wrap_pyfunction!(sort_rows, m)?)?;
    m.add_function(wrap_pyfunction!(sort_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(topk_rows, m)?)?;
    m.add_function(wrap_pyfunction!(sample::sample_rows, m)?)?;
    m.add_function(wrap_pyfunction!(info, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::cuda_sort, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::cuda_sort_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::cuda_topk, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::cuda_sample, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::dlpack_describe, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::nccl_unique_id, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::check_can_join, m)?)?;
    m.add_class::<distributed::PyProcessRank>()?;
    Ok(())
}
