//! The host-path and out-of-core benchmark behind `bitonic bench-large` (issue 54): a host slice
//! in, the sorted slice out, timed by the host clock (the copies are the point), beside the
//! link's own speed and a sort on every host core, in the same run.
//!
//! Cases, each on fresh keys (uniform random words, made on all cores before the clock starts):
//! - `link-htod`, `link-dtoh`: one copy of the keys' bytes between pinned host memory and the
//!   GPU, each way: the ceiling a host sort's copies can reach (a sort moves the bytes once
//!   each way at least).
//! - `sort`: [`Sorter::sort`] of the host slice, when one in-memory GPU sort takes it.
//! - `sort_large`: [`Sorter::sort_large`] with the device's free memory, and `sort_large@B`
//!   with a budget of B bytes (forcing more runs).
//! - `rayon`: `par_sort_unstable` on every host core.
//!
//! Every sort is checked: sorted, and the same keys (a sum and an xor of them before and after).

use super::measure::Provenance;
use super::summarize;
use anyhow::{bail, Result};
use bitonic::plan::out_of_core::Merge;
use bitonic::{Backend, Gpu, SortKey, Sorter};
use cudarc::driver::{CudaContext, CudaSlice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use std::time::Instant;

pub const CSV_HEADER: &str =
    "name,device,driver,commit,date,dtype,len,case,runs,merge,device_bytes,median_ms,min_ms,max_ms,repeats,gb_per_s";

/// One case's times.
pub struct Measured {
    pub who: Provenance,
    pub dtype: &'static str,
    pub len: usize,
    pub case: String,
    /// Runs and how they merged (out-of-core cases only).
    pub runs: usize,
    pub merge: String,
    /// Device memory the plan took at most (out-of-core cases only).
    pub device_bytes: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub repeats: u32,
    /// The keys' bytes over the median time: for sorts, bytes sorted a second (each crosses the
    /// link twice); for the link cases, the copy's rate.
    pub gb_per_s: f64,
}

impl Measured {
    /// A line of [`CSV_HEADER`]'s columns, as [`Measured::to_csv`] writes it.
    pub fn from_csv(line: &str) -> Result<Measured> {
        let cells: Vec<&str> = line.trim_end().split(',').collect();
        let [_, device, driver, commit, date, dtype, len, case, runs, merge, device_bytes, median, min, max, repeats, gb] =
            cells[..]
        else {
            bail!(
                "{line:?} does not have the {} columns of a bench-large CSV",
                16
            );
        };
        let number = |text: &str| -> Result<f64> {
            text.parse()
                .map_err(|_| anyhow::anyhow!("{text:?} is not a number in {line:?}"))
        };
        let dtype = bitonic::DType::ALL
            .into_iter()
            .find(|d| d.name() == dtype)
            .ok_or_else(|| anyhow::anyhow!("{dtype:?} is not a key type"))?;
        Ok(Measured {
            who: Provenance {
                device: device.into(),
                driver: driver.into(),
                commit: commit.into(),
                date: date.into(),
            },
            dtype: dtype.name(),
            len: number(len)? as usize,
            case: case.into(),
            runs: number(runs)? as usize,
            merge: merge.into(),
            device_bytes: number(device_bytes)? as usize,
            median_ms: number(median)?,
            min_ms: number(min)?,
            max_ms: number(max)?,
            repeats: number(repeats)? as u32,
            gb_per_s: number(gb)?,
        })
    }

    pub fn to_csv(&self) -> String {
        let w = &self.who;
        format!(
            "bitonic,{},{},{},{},{},{},{},{},{},{},{:.3},{:.3},{:.3},{},{:.2}",
            w.device,
            w.driver,
            w.commit,
            w.date,
            self.dtype,
            self.len,
            self.case,
            self.runs,
            self.merge,
            self.device_bytes,
            self.median_ms,
            self.min_ms,
            self.max_ms,
            self.repeats,
            self.gb_per_s
        )
    }
}

/// Keys the benchmark sorts: words made from random bits.
pub trait LargeKey: SortKey + Default + Ord {
    fn from_bits(bits: u64) -> Self;
    fn as_u64(self) -> u64;
}

impl LargeKey for u32 {
    fn from_bits(bits: u64) -> Self {
        bits as u32
    }
    fn as_u64(self) -> u64 {
        self as u64
    }
}

impl LargeKey for u64 {
    fn from_bits(bits: u64) -> Self {
        bits
    }
    fn as_u64(self) -> u64 {
        self
    }
}

/// What [`run`] measures.
pub struct Cells<'a> {
    pub len: usize,
    /// Budgets (bytes) of extra `sort_large` cases.
    pub budgets: &'a [usize],
    pub rayon: bool,
    pub repeats: u32,
    pub seed: u64,
}

/// Measures every case of `cells` on `keys` of `K` (allocated once, `len` keys).
pub fn run<K: LargeKey>(
    cells: &Cells,
    policy: &bitonic::Policy,
    who: &Provenance,
    step: &dyn Fn(&str),
) -> Result<Vec<Measured>> {
    let gpu = super::gpu()?;
    let mut keys: Vec<K> = Vec::new();
    keys.try_reserve_exact(cells.len)?;
    keys.resize(cells.len, K::default());
    let bytes = std::mem::size_of_val(keys.as_slice());
    let mut measured = Vec::new();
    let mut record = |case: &str, plan: Option<(usize, Merge, usize)>, mut times: Vec<f64>| {
        let (median_ms, min_ms, max_ms) = summarize(&mut times);
        let (runs, merge, device_bytes) = plan.unwrap_or((1, Merge::None, 0));
        measured.push(Measured {
            who: who.clone(),
            dtype: K::DTYPE.name(),
            len: cells.len,
            case: case.into(),
            runs,
            merge: merge_name(merge).into(),
            device_bytes,
            median_ms,
            min_ms,
            max_ms,
            repeats: times.len() as u32,
            gb_per_s: bytes as f64 / median_ms / 1e6,
        });
    };
    let repeats = cells.repeats.max(1);

    step("link");
    let (htod, dtoh) = link_times(gpu, bytes.min(4 << 30), repeats)?;
    // The link's rate, scaled to the keys' bytes (the copy is at most 4 GiB).
    let scale = bytes as f64 / bytes.min(4 << 30) as f64;
    record("link-htod", None, htod.iter().map(|t| t * scale).collect());
    record("link-dtoh", None, dtoh.iter().map(|t| t * scale).collect());

    let sorter = Sorter::new()
        .gpu(gpu)
        .backend(Backend::Cuda)
        .policy(policy.clone());
    if cells.len <= bitonic::plan::MAX_LEN {
        step("sort");
        let times = timed(&mut keys, cells, |keys| {
            sorter.sort(keys)?;
            Ok(())
        })?;
        record("sort", None, times);
    }
    let budgets: Vec<Option<usize>> = std::iter::once(None)
        .chain(cells.budgets.iter().map(|&b| Some(b)))
        .collect();
    for budget in budgets {
        let case = match budget {
            None => "sort_large".to_string(),
            Some(b) => format!("sort_large@{b}"),
        };
        step(&case);
        let sorter = match budget {
            Some(b) => sorter.clone().device_memory(b),
            None => sorter.clone(),
        };
        let mut plan = None;
        let times = timed(&mut keys, cells, |keys| {
            let ran = sorter.sort_large(keys)?;
            plan = Some((ran.runs.len(), ran.merge, ran.device_bytes));
            Ok(())
        })?;
        record(&case, plan, times);
    }
    if cells.rayon {
        step("rayon");
        let times = timed(&mut keys, cells, |keys| {
            keys.par_sort_unstable();
            Ok(())
        })?;
        record("rayon", None, times);
    }
    Ok(measured)
}

/// `sort` timed `cells.repeats` times on fresh keys, each result checked.
fn timed<K: LargeKey>(
    keys: &mut [K],
    cells: &Cells,
    mut sort: impl FnMut(&mut [K]) -> Result<()>,
) -> Result<Vec<f64>> {
    let mut times = Vec::new();
    for repeat in 0..cells.repeats.max(1) {
        fill(keys, cells.seed.wrapping_add(repeat as u64));
        let before = fingerprint(keys);
        let start = Instant::now();
        sort(keys)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        if !keys.par_windows(2).all(|w| w[0] <= w[1]) || fingerprint(keys) != before {
            bail!("a sort of {} keys gave a wrong result", keys.len());
        }
    }
    Ok(times)
}

/// Uniform random keys on every core, reproducible from `seed`.
fn fill<K: LargeKey>(keys: &mut [K], seed: u64) {
    keys.par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (i as u64) << 20);
            chunk
                .iter_mut()
                .for_each(|k| *k = K::from_bits(rng.random()));
        });
}

/// A sum and an xor of the keys: equal before and after a sort that lost or made none.
fn fingerprint<K: LargeKey>(keys: &[K]) -> (u64, u64) {
    keys.par_iter()
        .map(|&k| (k.as_u64(), k.as_u64()))
        .reduce(|| (0, 0), |a, b| (a.0.wrapping_add(b.0), a.1 ^ b.1))
}

/// Times (ms) of a copy of `bytes` from pinned host memory to the GPU and back.
fn link_times(gpu: &Gpu, bytes: usize, repeats: u32) -> Result<(Vec<f64>, Vec<f64>)> {
    let ctx: &std::sync::Arc<CudaContext> = gpu.context();
    let stream = ctx.new_stream()?;
    // SAFETY: plain bytes, written by the first copy before any is read.
    let mut pinned = unsafe { ctx.alloc_pinned::<u8>(bytes)? };
    // SAFETY: as above, on the device.
    let mut device: CudaSlice<u8> = unsafe { stream.alloc::<u8>(bytes)? };
    let (mut htod, mut dtoh) = (Vec::new(), Vec::new());
    for _ in 0..repeats + 1 {
        let start = Instant::now();
        stream.memcpy_htod(&pinned, &mut device)?;
        stream.synchronize()?;
        htod.push(start.elapsed().as_secs_f64() * 1e3);
        let start = Instant::now();
        stream.memcpy_dtoh(&device, &mut pinned)?;
        stream.synchronize()?;
        dtoh.push(start.elapsed().as_secs_f64() * 1e3);
    }
    // The first of each warms up.
    Ok((htod.split_off(1), dtoh.split_off(1)))
}

fn merge_name(merge: Merge) -> &'static str {
    match merge {
        Merge::None => "none",
        Merge::Resident { .. } => "resident",
        Merge::ResidentRun { .. } => "two-runs",
        Merge::Blocks { .. } => "blocks",
        _ => "other",
    }
}

/// The measurements as the figures' rows: each case a line, time against the keys.
pub fn rows(measured: &[Measured]) -> Vec<super::Row> {
    measured
        .iter()
        .map(|m| super::Row {
            // Ours drawn thicker than the link's and rayon's lines.
            name: match m.case.starts_with("sort") {
                true => format!("bitonic-{}", m.case),
                false => m.case.clone(),
            },
            device: m.who.device.clone(),
            driver: m.who.driver.clone(),
            commit: m.who.commit.clone(),
            date: m.who.date.clone(),
            dtype: m.dtype.into(),
            n: m.len as u64,
            metric: super::Metric::EndToEnd,
            median_ms: m.median_ms,
            min_ms: m.min_ms,
            max_ms: m.max_ms,
            repeats: m.repeats,
            bytes_moved: None,
            extrapolated: false,
        })
        .collect()
}

/// The Markdown table of `measured`.
pub fn report(measured: &[Measured]) -> String {
    let mut out = String::new();
    if let Some(first) = measured.first() {
        out += &format!(
            "Host slices of {} keys in and out, on {} ({}), commit {}; medians (ms).\n\n",
            first.dtype, first.who.device, first.who.driver, first.who.commit
        );
    }
    out += "| keys | case | runs | merge | ms | GB/s of keys | repeats |\n";
    out += "|---:|---|---:|---|---:|---:|---:|\n";
    for m in measured {
        out += &format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} |\n",
            m.len, m.case, m.runs, m.merge, m.median_ms, m.gb_per_s, m.repeats
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_line_reads_back() {
        let line = "bitonic,NVIDIA H200,CUDA 13.0,cf7e803598,2026-11-29,u32,17179869184,sort_large,8,resident,77613498368,3284.500,3200.000,3300.000,3,20.92";
        let m = Measured::from_csv(line).unwrap();
        assert_eq!((m.len, m.runs, m.repeats), (1 << 34, 8, 3));
        assert_eq!(
            (m.case.as_str(), m.merge.as_str(), m.dtype),
            ("sort_large", "resident", "u32")
        );
        assert_eq!(m.to_csv(), line);
        assert!(Measured::from_csv("bitonic,too,few").is_err());
    }
}
