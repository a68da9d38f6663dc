//! The sampling benchmark behind `bitonic bench-sample`: [`Sorter::sample_rows_device`] of
//! normal logits (× 3, as bench/peers/sample_python_calls.py draws them) as a decode loop calls
//! it: `calls` calls back to back on one set of logits, CUDA events around all of them, the
//! time a call their mean; the median over repeats, each on fresh logits, after one warm-up.
//! The same cells as the Python peers' script, so that the kernel's time can be set beside the
//! Python numbers (which add the host's cost of a call) and beside FlashInfer; and an A/B run
//! of a [`crate::policy::with_overrides`] policy names its rows `bitonic-sample[policy]`.

use super::measure::{time_on_stream, Provenance};
use super::summarize;
use anyhow::{bail, Context as _, Result};
use bitonic::half::bf16;
use bitonic::sample::{DeviceFilters, DeviceRow, Logit};
use bitonic::{DType, Gpu, Sorter};
use cudarc::driver::{CudaSlice, DeviceRepr};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub const CSV_HEADER: &str =
    "name,device,driver,commit,date,dtype,rows,row_len,filters,median_ms,min_ms,max_ms,repeats";

/// The batches and vocabularies.
pub const BATCHES: [usize; 4] = [1, 8, 64, 256];
pub const VOCABS: [usize; 2] = [128_256, 151_936];

/// The three settings, as the peers' script names them.
pub const FILTERS: [&str; 3] = ["top_k=50 top_p=0.9", "top_p=0.9", "min_p=0.1"];

/// One measurement of one setting on one shape; `case` is the filters' name.
pub type Measured = super::ShapeTiming<String>;

/// The filters named `name`: `top_k=K`, `top_p=P`, `min_p=P` and `temperature=T`, separated
/// by spaces, each one value for all rows.
pub fn filters_of(name: &str) -> Result<DeviceFilters<'static>> {
    let mut filters = DeviceFilters::new();
    for part in name.split_whitespace() {
        let (key, value) = part
            .split_once('=')
            .with_context(|| format!("filter {part:?} is not name=value"))?;
        let number = |v: &str| -> Result<f32> {
            v.parse::<f32>()
                .with_context(|| format!("filter {part:?}: {v:?} is not a number"))
        };
        filters = match key {
            "top_k" => filters.top_k(DeviceRow::All(
                value
                    .parse::<i64>()
                    .with_context(|| format!("filter {part:?}: not an integer"))?,
            )),
            "top_p" => filters.top_p(DeviceRow::All(number(value)?)),
            "min_p" => filters.min_p(DeviceRow::All(number(value)?)),
            "temperature" => filters.temperature(DeviceRow::All(number(value)?)),
            other => bail!("unknown filter {other:?} (top_k, top_p, min_p, temperature)"),
        };
    }
    Ok(filters)
}

/// What [`run`] measures.
pub struct Cells<'a> {
    pub batches: &'a [usize],
    pub vocabs: &'a [usize],
    pub dtypes: &'a [DType],
    pub filters: &'a [String],
    /// Calls back to back in one timing.
    pub calls: u32,
    pub repeats: u32,
    pub seed: u64,
}

/// Times every cell of `cells` with the device's policy changed by `policy`
/// ([`crate::policy::with_overrides`]'s text).
pub fn run(
    cells: &Cells,
    policy: &str,
    who: &Provenance,
    progress: &dyn Fn(&str),
) -> Result<Vec<Measured>> {
    let gpu = crate::gpu()?;
    let (policy, name) = crate::policy::for_rows(gpu, "bitonic-sample", policy)?;
    let sorter = Sorter::new().gpu(gpu).policy(policy);
    let mut out = Vec::new();
    for &vocab in cells.vocabs {
        for &rows in cells.batches {
            for &dtype in cells.dtypes {
                let times = match dtype {
                    DType::F32 => time_shape::<f32>(gpu, &sorter, cells, rows, vocab, progress)?,
                    DType::BF16 => time_shape::<bf16>(gpu, &sorter, cells, rows, vocab, progress)?,
                    other => bail!("bench-sample times f32 and bf16 logits, not {other}"),
                };
                for (filters, (median_ms, min_ms, max_ms)) in times {
                    out.push(Measured {
                        name: name.clone(),
                        who: who.clone(),
                        dtype: dtype.name().into(),
                        rows,
                        row_len: vocab,
                        case: filters,
                        median_ms,
                        min_ms,
                        max_ms,
                        repeats: cells.repeats,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Two sets of logits of `rows × vocab`, normal × 3, as `L`; a repeat takes the other set than
/// the one before, so that no repeat finds its logits in L2 from the last.
fn logit_sets<L: Logit + DeviceRepr>(
    gpu: &Gpu,
    rows: usize,
    vocab: usize,
    seed: u64,
    of_f32: fn(f32) -> L,
) -> Result<[CudaSlice<L>; 2]> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut set = || -> Result<CudaSlice<L>> {
        let host: Vec<L> = (0..rows * vocab)
            .map(|_| {
                // Box–Muller: a normal from two uniforms in (0, 1].
                let (a, b): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
                let normal = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
                of_f32((3.0 * normal) as f32)
            })
            .collect();
        gpu.stream()
            .clone_htod(&host)
            .with_context(|| format!("copying {rows}x{vocab} logits"))
    };
    Ok([set()?, set()?])
}

/// (median, min, max) ms.
type Times = (f64, f64, f64);

/// (filters, times) of every setting of `cells` on `rows × vocab` logits of type `L`.
fn time_shape<L: Logit + DeviceRepr + LogitOfF32>(
    gpu: &Gpu,
    sorter: &Sorter,
    cells: &Cells,
    rows: usize,
    vocab: usize,
    progress: &dyn Fn(&str),
) -> Result<Vec<(String, Times)>> {
    let stream = gpu.stream();
    let logits = logit_sets::<L>(gpu, rows, vocab, cells.seed, L::of_f32)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cells.seed ^ 0x5a5a);
    let uniform: Vec<f32> = (0..rows).map(|_| rng.random::<f32>()).collect();
    let uniform = stream.clone_htod(&uniform).context("the uniform numbers")?;
    let mut tokens = stream.alloc_zeros::<i64>(rows).context("the tokens")?;
    let mut out = Vec::new();
    for name in cells.filters {
        progress(&format!("{name} of {rows}x{vocab} {}", L::DTYPE));
        let filters = filters_of(name)?;
        let mut times = Vec::new();
        for r in 0..=cells.repeats {
            let these = &logits[r as usize % 2];
            let t = time_on_stream(gpu, || {
                for _ in 0..cells.calls.max(1) {
                    sorter.sample_rows_device(these, vocab, &filters, &uniform, &mut tokens)?;
                }
                Ok(())
            })?;
            if r > 0 {
                times.push(t / f64::from(cells.calls.max(1)));
            }
        }
        let drawn = stream.clone_dtoh(&tokens).context("the tokens")?;
        if let Some(bad) = drawn.iter().find(|&&t| t < 0 || t as usize >= vocab) {
            bail!("{name} of {rows}x{vocab}: token {bad} is not in the vocabulary");
        }
        out.push((name.clone(), summarize(&mut times)));
    }
    Ok(out)
}

/// A logit type made from an f32 (rounded to nearest).
pub trait LogitOfF32: Sized {
    fn of_f32(x: f32) -> Self;
}
impl LogitOfF32 for f32 {
    fn of_f32(x: f32) -> f32 {
        x
    }
}
impl LogitOfF32 for bf16 {
    fn of_f32(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
}

/// Every measurement of `rows` as a table: one line a cell, one column a name.
pub fn report(rows: &[Measured]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    let mut cells: Vec<(&str, usize, usize, &str)> = Vec::new();
    for r in rows {
        let cell = (r.dtype.as_str(), r.rows, r.row_len, r.case.as_str());
        if !cells.contains(&cell) {
            cells.push(cell);
        }
    }
    let mut text = format!(
        "| dtype | rows × vocab | filters | {} |\n",
        names.join(" | ")
    );
    text += &format!("|---|---|---|{}\n", "---:|".repeat(names.len()));
    for (dtype, batch, vocab, filters) in cells {
        let times: Vec<String> = names
            .iter()
            .map(|n| {
                rows.iter()
                    .find(|r| {
                        r.name == *n
                            && (r.dtype.as_str(), r.rows, r.row_len, r.case.as_str())
                                == (dtype, batch, vocab, filters)
                    })
                    .map_or("–".to_string(), |r| format!("{:.4}", r.median_ms))
            })
            .collect();
        text += &format!(
            "| {dtype} | {batch} × {vocab} | {filters} | {} |\n",
            times.join(" | ")
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_by_name() {
        for name in FILTERS {
            assert!(filters_of(name).is_ok(), "{name}");
        }
        assert!(filters_of("top_k=1.5").is_err());
        assert!(filters_of("top_q=0.5").is_err());
        assert!(filters_of("top_p").is_err());
        assert!(filters_of("").is_ok()); // no filter: a draw from the whole row
    }
}
