//! `bitonic._native.sample_rows`: sampling from rows of logits in a flat numpy array, on the
//! CPU ([`bitonic::sample::sample_host`]). The Python half (bitonic/_sampling.py) checks the
//! settings' kinds and shapes, draws the uniform numbers and shapes the result.

use bitonic::half::{bf16, f16};
use bitonic::sample::{sample_host, Filters, Logit, PerRow};
use numpy::{dtype, Element, PyArray1, PyArrayDescrMethods, PyReadonlyArray1, PyUntypedArray};
use numpy::{PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A setting as Python gives it: None, one number for every row, or a flat array of one a row.
enum Setting<'py, T: Element> {
    All(T),
    Each(PyReadonlyArray1<'py, T>),
}

impl<'py, T: Element + Copy + for<'a> FromPyObject<'a, 'py>> Setting<'py, T> {
    fn read(value: Option<&Bound<'py, PyAny>>, name: &str) -> PyResult<Option<Self>> {
        let Some(value) = value.filter(|v| !v.is_none()) else {
            return Ok(None);
        };
        if let Ok(array) = value.cast::<PyArray1<T>>() {
            return Ok(Some(Setting::Each(array.readonly())));
        }
        match value.extract::<T>() {
            Ok(one) => Ok(Some(Setting::All(one))),
            Err(_) => Err(PyTypeError::new_err(format!(
                "{name} must be a number or a flat array of {} (bitonic.sample converts it)",
                std::any::type_name::<T>()
            ))),
        }
    }

    fn per_row(&self) -> PyResult<PerRow<'_, T>> {
        Ok(match self {
            Setting::All(one) => PerRow::All(*one),
            Setting::Each(array) => PerRow::Each(array.as_slice()?),
        })
    }
}

/// The token drawn from each row of `vocab` logits of the flat array `logits` (float32,
/// float16 or bfloat16) at its uniform number: a new int64 array of one a row. Settings are
/// None, a number, or an array of one a row (float32; int64 for `top_k`).
#[pyfunction]
#[pyo3(signature = (logits, vocab, uniform, temperature=None, min_p=None, top_k=None, top_p=None))]
#[allow(clippy::too_many_arguments)]
pub fn sample_rows<'py>(
    logits: &Bound<'py, PyUntypedArray>,
    vocab: usize,
    uniform: PyReadonlyArray1<'py, f32>,
    temperature: Option<&Bound<'py, PyAny>>,
    min_p: Option<&Bound<'py, PyAny>>,
    top_k: Option<&Bound<'py, PyAny>>,
    top_p: Option<&Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let py = logits.py();
    let temperature = Setting::<f32>::read(temperature, "temperature")?;
    let min_p = Setting::<f32>::read(min_p, "min_p")?;
    let top_k = Setting::<i64>::read(top_k, "top_k")?;
    let top_p = Setting::<f32>::read(top_p, "top_p")?;
    let mut filters = Filters::new();
    if let Some(t) = &temperature {
        filters = filters.temperature(t.per_row()?);
    }
    if let Some(p) = &min_p {
        filters = filters.min_p(p.per_row()?);
    }
    if let Some(k) = &top_k {
        filters = filters.top_k(k.per_row()?);
    }
    if let Some(p) = &top_p {
        filters = filters.top_p(p.per_row()?);
    }
    let uniform = uniform.as_slice()?;
    let d = logits.dtype();
    let tokens = if d.is_equiv_to(&dtype::<f32>(py)) {
        draw::<f32>(logits, vocab, &filters, uniform)
    } else if d.is_equiv_to(&dtype::<f16>(py)) {
        draw::<f16>(logits, vocab, &filters, uniform)
    } else if d.itemsize() == 2 && d.str()?.to_cow()? == "bfloat16" {
        draw::<bf16>(logits, vocab, &filters, uniform)
    } else {
        Err(PyTypeError::new_err(format!(
            "bitonic.sample takes logits of dtype float32, float16 or bfloat16, not {d}"
        )))
    }?;
    Ok(PyArray1::from_vec(py, tokens).into_any().unbind())
}

fn draw<L: Logit + Element>(
    logits: &Bound<'_, PyUntypedArray>,
    vocab: usize,
    filters: &Filters<'_>,
    uniform: &[f32],
) -> PyResult<Vec<i64>> {
    if logits.ndim() != 1 || !logits.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "bitonic._native takes flat C-contiguous arrays (bitonic.sample reshapes for it)",
        ));
    }
    let typed = logits
        .cast::<PyArray1<L>>()
        .map_err(|e| PyTypeError::new_err(e.to_string()))?
        .readonly();
    let values = typed.as_slice()?;
    let mut tokens = vec![0i64; uniform.len()];
    logits
        .py()
        .detach(|| sample_host(values, vocab, filters, uniform, &mut tokens))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(tokens)
}
