//! Sampling one token from each row of logits, after temperature, min-p, top-k and top-p
//! filtering: the last step of a language model's decode step.
//!
//! # What is drawn
//! For each row of `vocab` logits (f32, f16 or bf16, read as f32) and its uniform number `u`:
//!
//! 1. **Temperature.** `s = logit / t`. A row whose temperature is not above 0 is *greedy*:
//!    its token is the first index of its largest logit, and the filters and `u` are unused.
//!    A NaN logit (or a NaN that the division makes, `inf / inf`) counts as `-inf`.
//! 2. **Weights.** `w = exp(s - max)`, so the largest weight is 1 (where the largest `s` is
//!    `+inf`, each `+inf` token weighs 1 and every other token 0). A token of `s = -inf` can
//!    never be drawn. A row with no token above `-inf` draws `-1`.
//! 3. **The order.** The tokens above `-inf` sorted by `s` descending, ties by index
//!    ascending: the stable descending order. Every filter keeps a prefix of it.
//! 4. **min-p** (`0 < p_min`): keeps the tokens of `w >= min(p_min, 1)`, that is of
//!    probability at least `p_min` times the largest probability.
//! 5. **top-k** (`1 <= k <` the tokens left): keeps the tokens whose `s` is at least the k-th
//!    largest left; tokens tied with the k-th are all kept.
//! 6. **top-p** (`p < 1`, or NaN): keeps the shortest prefix of the order whose weights sum
//!    to at least `p` times the sum of the weights left; of tokens tied at the boundary, the
//!    smaller indices come first. A `p` not above 0 (or NaN) keeps the first token alone.
//! 7. **The draw.** In index order, the first kept token at which the running sum of kept
//!    weights passes `u` times their total. `u` is clamped to `[0, 1)` (NaN reads as 0).
//!
//! This is the order and the semantics of vLLM's reference sampler (temperature, min-p, top-k,
//! top-p, then a draw from what is left, renormalised); its draw is an exponential race where
//! ours is the inverse of the distribution function at `u`, the same distribution. Running sums
//! are in f64 on the CPU. A token outside the filtered set is never drawn, whatever the
//! rounding: only the draw's position among kept tokens depends on it.
//!
//! # Settings
//! Each setting is given for every row alike ([`PerRow::All`], checked: a temperature finite
//! and not negative, `0 <= p_min <= 1`, `k >= 1`, `0 < p <= 1`) or one value a row
//! ([`PerRow::Each`], where serving stacks mix requests). Values a row are not checked, as a
//! GPU could not check them without waiting; each has a meaning instead: a temperature not
//! above 0 (NaN included) is greedy, a `p_min` not above 0 (or NaN) or a `k` not above 0 turns
//! that filter off for the row, a `p` of 1 or more turns top-p off, and one not above 0 (or
//! NaN) keeps the first token alone.

mod device;
mod host;

pub use device::{DeviceFilters, DeviceRow};
pub use host::sample_host;

use crate::{Error, Result};

/// A sampling setting: one value for every row, or one value a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PerRow<'a, T> {
    /// The same value for every row.
    All(T),
    /// One value a row, as many as there are rows.
    Each(&'a [T]),
}

impl<T: Copy> PerRow<'_, T> {
    /// The value of `row`.
    fn of(&self, row: usize) -> T {
        match self {
            PerRow::All(value) => *value,
            PerRow::Each(values) => values[row],
        }
    }

    /// Checks that an [`PerRow::Each`] has one value a row and that an [`PerRow::All`]
    /// passes `in_range`, else says so for `name`.
    fn check(
        &self,
        name: &str,
        rows: usize,
        in_range: impl Fn(T) -> bool,
        range: &str,
    ) -> Result<()>
    where
        T: std::fmt::Debug,
    {
        match self {
            PerRow::All(value) if !in_range(*value) => Err(Error::BadSampling(format!(
                "{name} is {value:?}; it must be {range}"
            ))),
            PerRow::Each(values) if values.len() != rows => Err(Error::BadSampling(format!(
                "{} values of {name} for {rows} rows: give one a row",
                values.len()
            ))),
            _ => Ok(()),
        }
    }
}

/// The filters of a draw, each off until set. Built by its methods:
///
/// ```
/// use bitonic::sample::{Filters, PerRow};
/// let filters = Filters::new().temperature(PerRow::All(0.7)).top_k(PerRow::All(50)).top_p(PerRow::All(0.9));
/// # let _ = filters;
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Filters<'a> {
    temperature: Option<PerRow<'a, f32>>,
    min_p: Option<PerRow<'a, f32>>,
    top_k: Option<PerRow<'a, i64>>,
    top_p: Option<PerRow<'a, f32>>,
}

impl<'a> Filters<'a> {
    /// No filter: a draw from the softmax of the logits as they are.
    pub fn new() -> Self {
        Self::default()
    }

    /// Divides the logits by `temperature` (a row's temperature of 0 is greedy).
    pub fn temperature(mut self, temperature: PerRow<'a, f32>) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Keeps the tokens of probability at least `min_p` times the largest.
    pub fn min_p(mut self, min_p: PerRow<'a, f32>) -> Self {
        self.min_p = Some(min_p);
        self
    }

    /// Keeps the `k` most likely tokens, and those tied with the k-th.
    pub fn top_k(mut self, k: PerRow<'a, i64>) -> Self {
        self.top_k = Some(k);
        self
    }

    /// Keeps the most likely tokens whose probabilities sum to at least `p`.
    pub fn top_p(mut self, p: PerRow<'a, f32>) -> Self {
        self.top_p = Some(p);
        self
    }

    /// Checks the settings for `rows` rows (see the module's "Settings").
    pub fn validate(&self, rows: usize) -> Result<()> {
        if let Some(t) = &self.temperature {
            t.check(
                "temperature",
                rows,
                |t| t.is_finite() && t >= 0.0,
                "finite and >= 0",
            )?;
        }
        if let Some(p) = &self.min_p {
            p.check("min_p", rows, |p| (0.0..=1.0).contains(&p), "from 0 to 1")?;
        }
        if let Some(k) = &self.top_k {
            k.check("top_k", rows, |k| k >= 1, ">= 1")?;
        }
        if let Some(p) = &self.top_p {
            p.check(
                "top_p",
                rows,
                |p| p > 0.0 && p <= 1.0,
                "above 0 and at most 1",
            )?;
        }
        Ok(())
    }

    /// The settings of `row`, each filter `None` where it is off for that row.
    fn of_row(&self, row: usize) -> RowFilters {
        let temperature = self.temperature.map_or(1.0, |t| t.of(row));
        RowFilters {
            // Not above 0, NaN included.
            greedy: temperature.is_nan() || temperature <= 0.0,
            temperature,
            min_p: self
                .min_p
                .map(|p| p.of(row))
                .filter(|&p| p > 0.0)
                .map(|p| p.min(1.0)),
            top_k: self.top_k.map(|k| k.of(row)).filter(|&k| k > 0),
            top_p: self
                .top_p
                .map(|p| p.of(row))
                .filter(|&p| p.is_nan() || p < 1.0),
        }
    }
}

/// One row's filters, as they apply to it.
#[derive(Clone, Copy, Debug)]
struct RowFilters {
    greedy: bool,
    temperature: f32,
    /// `0 < p <= 1`.
    min_p: Option<f32>,
    /// `k >= 1`.
    top_k: Option<i64>,
    /// `p < 1`, or not a number (the first token alone).
    top_p: Option<f32>,
}

/// A logit type: f32, f16 or bf16, read as f32.
pub trait Logit: Copy + Send + Sync + crate::key::Sealed + 'static {
    /// The type's name in the key table.
    const DTYPE: crate::DType;
    /// The value as f32 (exact).
    fn to_f32(self) -> f32;
}

impl Logit for f32 {
    const DTYPE: crate::DType = crate::DType::F32;
    fn to_f32(self) -> f32 {
        self
    }
}

impl Logit for half::f16 {
    const DTYPE: crate::DType = crate::DType::F16;
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
}

impl Logit for half::bf16 {
    const DTYPE: crate::DType = crate::DType::BF16;
    fn to_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
}

/// The rows of a sampling call of `logits` logits in rows of `vocab`, with `uniform` numbers
/// and room for `tokens`: one of each a row, else what is wrong.
pub(crate) fn rows_of(logits: usize, vocab: usize, uniform: usize, tokens: usize) -> Result<usize> {
    if vocab == 0 || logits % vocab != 0 {
        return Err(Error::BadSampling(format!(
            "{logits} logits do not split into rows of a vocabulary of {vocab}"
        )));
    }
    let rows = logits / vocab;
    for (name, len) in [("uniform numbers", uniform), ("tokens", tokens)] {
        if len != rows {
            return Err(Error::BadSampling(format!(
                "{len} {name} for {rows} rows: one a row"
            )));
        }
    }
    Ok(rows)
}

/// `u` as the draw reads it: in `[0, 1)`, NaN as 0.
fn clamp_uniform(u: f32) -> f64 {
    /// The largest f32 below 1.
    const BELOW_ONE: f32 = 1.0 - f32::EPSILON / 2.0;
    if u.is_nan() {
        0.0
    } else {
        f64::from(u.clamp(0.0, BELOW_ONE))
    }
}
