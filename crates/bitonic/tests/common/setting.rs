//! One sampling setting for every row, as the host's `Filters` and the GPU's `DeviceFilters`
//! (tests/sample.rs, tests/sample_gpu.rs).

use bitonic::sample::{DeviceFilters, DeviceRow, Filters, PerRow};

/// One setting for all rows, `None` where off.
#[derive(Clone, Copy, Debug, Default)]
pub struct Setting {
    pub temperature: Option<f32>,
    pub min_p: Option<f32>,
    pub top_k: Option<i64>,
    pub top_p: Option<f32>,
}

impl Setting {
    pub fn host(&self) -> Filters<'static> {
        let mut f = Filters::new();
        if let Some(t) = self.temperature {
            f = f.temperature(PerRow::All(t));
        }
        if let Some(p) = self.min_p {
            f = f.min_p(PerRow::All(p));
        }
        if let Some(k) = self.top_k {
            f = f.top_k(PerRow::All(k));
        }
        if let Some(p) = self.top_p {
            f = f.top_p(PerRow::All(p));
        }
        f
    }

    pub fn device(&self) -> DeviceFilters<'static> {
        let mut f = DeviceFilters::new();
        if let Some(t) = self.temperature {
            f = f.temperature(DeviceRow::All(t));
        }
        if let Some(p) = self.min_p {
            f = f.min_p(DeviceRow::All(p));
        }
        if let Some(k) = self.top_k {
            f = f.top_k(DeviceRow::All(k));
        }
        if let Some(p) = self.top_p {
            f = f.top_p(DeviceRow::All(p));
        }
        f
    }
}
