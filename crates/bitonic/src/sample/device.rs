//! The settings of a sampling call on the GPU ([`crate::Sorter::sample_rows_device`]): the
//! host's [`Filters`](super::Filters) with values a row in device memory.

use super::{Filters, PerRow};
use crate::cuda::launch::sample::{Setting, Settings};
use crate::error::{Error, Result};
use cudarc::driver::CudaSlice;

/// One setting of a sampling call on the GPU: one value for every row (checked as
/// [`PerRow::All`] is), or one a row in the GPU's memory (not read on the host: see the
/// [module](super)'s meanings of each value).
#[derive(Clone, Copy)]
pub enum DeviceRow<'a, T> {
    /// The same value for every row.
    All(T),
    /// One value a row, on the device of the logits.
    Each(&'a CudaSlice<T>),
}

/// The filters of a sampling call on the GPU, as [`Filters`] gives them for the host.
///
/// ```no_run
/// use bitonic::sample::{DeviceFilters, DeviceRow};
/// # let gpu = bitonic::Gpu::get()?;
/// let temperatures = gpu.stream().clone_htod(&[0.7f32, 1.0, 0.0])?; // the third row greedy
/// let filters = DeviceFilters::new()
///     .temperature(DeviceRow::Each(&temperatures))
///     .top_k(DeviceRow::All(50))
///     .top_p(DeviceRow::All(0.9));
/// # let _ = filters;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Default)]
pub struct DeviceFilters<'a> {
    temperature: Option<DeviceRow<'a, f32>>,
    min_p: Option<DeviceRow<'a, f32>>,
    top_k: Option<DeviceRow<'a, i64>>,
    top_p: Option<DeviceRow<'a, f32>>,
}

impl<'a> DeviceFilters<'a> {
    /// No filter: a draw from the softmax of the logits as they are.
    pub fn new() -> Self {
        Self::default()
    }

    /// Divides the logits by `temperature` (a row's temperature of 0 is greedy).
    pub fn temperature(mut self, temperature: DeviceRow<'a, f32>) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Keeps the tokens of probability at least `min_p` times the largest.
    pub fn min_p(mut self, min_p: DeviceRow<'a, f32>) -> Self {
        self.min_p = Some(min_p);
        self
    }

    /// Keeps the `k` most likely tokens, and those tied with the k-th.
    pub fn top_k(mut self, k: DeviceRow<'a, i64>) -> Self {
        self.top_k = Some(k);
        self
    }

    /// Keeps the most likely tokens whose probabilities sum to at least `p`.
    pub fn top_p(mut self, p: DeviceRow<'a, f32>) -> Self {
        self.top_p = Some(p);
        self
    }

    /// Checks the settings for `rows` rows as [`Filters::validate`] does: one value for all
    /// in its range, values a row one a row.
    pub(crate) fn validate(&self, rows: usize) -> Result<()> {
        fn on_host<T: Copy>(
            setting: Option<DeviceRow<'_, T>>,
            name: &str,
            rows: usize,
        ) -> Result<Option<PerRow<'static, T>>> {
            match setting {
                None => Ok(None),
                Some(DeviceRow::All(value)) => Ok(Some(PerRow::All(value))),
                Some(DeviceRow::Each(values)) if values.len() != rows => {
                    Err(Error::BadSampling(format!(
                        "{} values of {name} for {rows} rows: give one a row",
                        values.len()
                    )))
                }
                Some(DeviceRow::Each(_)) => Ok(None), // not read on the host
            }
        }
        let mut host = Filters::new();
        if let Some(t) = on_host(self.temperature, "temperature", rows)? {
            host = host.temperature(t);
        }
        if let Some(p) = on_host(self.min_p, "min_p", rows)? {
            host = host.min_p(p);
        }
        if let Some(k) = on_host(self.top_k, "top_k", rows)? {
            host = host.top_k(k);
        }
        if let Some(p) = on_host(self.top_p, "top_p", rows)? {
            host = host.top_p(p);
        }
        host.validate(rows)
    }

    /// The devices of the values a row.
    pub(crate) fn devices(&self) -> Vec<usize> {
        fn of<T>(setting: Option<DeviceRow<'_, T>>) -> Option<usize> {
            match setting {
                Some(DeviceRow::Each(values)) => Some(values.context().ordinal()),
                _ => None,
            }
        }
        [
            of(self.temperature),
            of(self.min_p),
            of(self.top_k),
            of(self.top_p),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The settings as the kernel takes them, a filter that is not given at its "off" value.
    pub(crate) fn settings(&self) -> Settings<'a> {
        fn setting<'a, T: Copy>(given: Option<DeviceRow<'a, T>>, off: T) -> Setting<'a, T> {
            match given {
                None => (None, off),
                Some(DeviceRow::All(value)) => (None, value),
                Some(DeviceRow::Each(values)) => (Some(values.as_view()), off),
            }
        }
        Settings {
            temperature: setting(self.temperature, 1.0),
            min_p: setting(self.min_p, 0.0),
            top_k: setting(self.top_k, 0),
            top_p: setting(self.top_p, 1.0),
        }
    }
}
