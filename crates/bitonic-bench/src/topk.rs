//! The top-k benchmark behind `bitonic bench-topk`: the k largest f32, bf16 or f16 keys of every row,
//! sorted, with their indices, device-resident, beside `torch.topk(sorted=True)`
//! (bench/peers/torch_topk.py), and the time to read the input once at the copy ceiling.

use super::measure::{time_on_stream, FreshKeys, GpuBusy, Provenance};
use super::summarize;
use crate::gen::RandomKey;
use anyhow::{bail, ensure, Context as _, Result};
use bitonic::half::{bf16, f16};
use bitonic::plan::{Layout, Operation};
use bitonic::{Backend, DType, DeviceWorkspace, Gpu, Order, SortKey, Sorter};
use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

pub const CSV_HEADER: &str =
    "name,device,driver,commit,date,dtype,rows,row_len,k,median_ms,min_ms,max_ms,repeats";

/// The shapes of the top-k issue's table: logits of a batch (vocabularies of 128,256 and
/// 151,936), many medium rows, many short ones, and one long array.
pub const SHAPES: [(usize, usize); 6] = [
    (64, 128_256),
    (256, 151_936),
    (4096, 32_768),
    (16_384, 1024),
    (1, 1 << 24),
    (1, 1 << 28),
];

/// The values of k.
pub const KS: [usize; 5] = [1, 8, 50, 256, 1024];

/// The copy ceiling the read-once time is counted against, bytes a second.
pub const COPY_CEILING: f64 = 3.0e12;

/// One measurement of one implementation on one shape; `case` is k.
pub type Measured = super::ShapeTiming<usize>;

/// Times `topk_rows_device` (largest) of keys of every type in `dtypes` (f32, bf16, f16) on
/// every shape and k not above the row length: each repeat's keys the next of `FreshKeys`'
/// sets, other random keys than the repeat's before, one warm-up, CUDA events around the call
/// alone (its scratch allocations included). The last repeat's first row is checked against
/// the CPU's top-k. `policy` is
/// [`crate::policy::with_overrides`]'s text: an A/B run names its rows `bitonic-topk[policy]`.
/// With `gpu_only` (a diagnostic) each call is queued behind a device copy long enough for
/// every launch to be queued before the GPU reaches them, so that the events time the GPU's
/// work without the host's; those rows are named `bitonic-topk(gpu-only)`. Each cell's
/// median host time to queue the call is printed to stderr.
#[allow(clippy::too_many_arguments)]
pub fn run(
    shapes: &[(usize, usize)],
    dtypes: &[DType],
    ks: &[usize],
    repeats: u32,
    seed: u64,
    policy: &str,
    gpu_only: bool,
    who: &Provenance,
    progress: &dyn Fn(&str),
) -> Result<Vec<Measured>> {
    let gpu = crate::gpu()?;
    let (policy, mut name) = crate::policy::for_rows(gpu, "bitonic-topk", policy)?;
    let sorter = Sorter::new()
        .gpu(gpu)
        .order(Order::Descending)
        .policy(policy);
    let mut busy = None;
    if gpu_only {
        name.push_str("(gpu-only)");
        busy = Some(GpuBusy::new(gpu)?);
    }
    let mut out = Vec::new();
    for &(rows, row_len) in shapes {
        for &dtype in dtypes {
            let each = Shape {
                rows,
                row_len,
                repeats,
                seed,
            };
            let measured = match dtype {
                DType::F32 => time_shape::<f32>(gpu, &sorter, each, ks, &mut busy, progress)?,
                DType::BF16 => time_shape::<bf16>(gpu, &sorter, each, ks, &mut busy, progress)?,
                DType::F16 => time_shape::<f16>(gpu, &sorter, each, ks, &mut busy, progress)?,
                other => bail!("bench-topk times f32, bf16 and f16 keys, not {other}"),
            };
            out.extend(
                measured
                    .into_iter()
                    .map(|(k, (median_ms, min_ms, max_ms))| Measured {
                        name: name.clone(),
                        who: who.clone(),
                        dtype: dtype.name().into(),
                        rows,
                        row_len,
                        case: k,
                        median_ms,
                        min_ms,
                        max_ms,
                        repeats,
                    }),
            );
        }
    }
    Ok(out)
}

/// One shape of [`run`].
#[derive(Clone, Copy)]
struct Shape {
    rows: usize,
    row_len: usize,
    repeats: u32,
    seed: u64,
}

/// (median, min, max) ms of one k.
type Times = (f64, f64, f64);

/// (k, times) of every k of `ks` up to the row length, keys `K`.
fn time_shape<K: RandomKey>(
    gpu: &Gpu,
    sorter: &Sorter,
    Shape {
        rows,
        row_len,
        repeats,
        seed,
    }: Shape,
    ks: &[usize],
    busy: &mut Option<GpuBusy>,
    progress: &dyn Fn(&str),
) -> Result<Vec<(usize, Times)>> {
    let stream = gpu.stream();
    let mut fresh = FreshKeys::<K>::new(gpu, rows * row_len, seed)?;
    let mut out = Vec::new();
    for &k in ks.iter().filter(|&&k| k <= row_len) {
        progress(&format!("top-{k} of {rows}x{row_len} {}", K::DTYPE));
        // SAFETY: the top-k writes every value and index before they are read.
        let mut values = unsafe { stream.alloc::<K>(rows * k) }.context("values")?;
        let mut indices = unsafe { stream.alloc::<u32>(rows * k) }.context("indices")?;
        // The call's scratch in a workspace of the caller's, as a serving loop keeps one: the
        // calls allocate nothing, and their graphs' nodes keep their addresses.
        let layout = match rows {
            1 => Layout::Whole,
            _ => Layout::Rows { row_len },
        };
        let operation = Operation::Topk { k, index_bytes: 4 };
        let plan = sorter.plan(operation, K::DTYPE, rows * row_len, layout)?;
        let scratch = stream.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
        let workspace = DeviceWorkspace::new(scratch);
        let sorter = sorter.clone().workspace(&workspace);
        let (mut times, mut host_times) = (Vec::new(), Vec::new());
        for r in 0..=repeats {
            fresh.draw(gpu, r as usize)?;
            if let Some(busy) = busy.as_mut() {
                busy.queue(gpu)?;
            }
            let mut host_ms = 0.0;
            let t = time_on_stream(gpu, || {
                let start = Instant::now();
                sorter.topk_rows_device(&fresh.keys, &mut values, &mut indices, row_len, k)?;
                host_ms = start.elapsed().as_secs_f64() * 1e3;
                Ok(())
            })?;
            if r > 0 {
                times.push(t);
                host_times.push(host_ms);
            }
        }
        eprintln!(
            "top-{k} of {rows}x{row_len} {}: {:.4} ms between the events, {:.4} ms to queue (medians)",
            K::DTYPE,
            summarize(&mut times).0,
            summarize(&mut host_times).0
        );
        check_first_row(
            &fresh.host()[..row_len],
            k,
            &stream.clone_dtoh(&values)?[..k],
        )
        .with_context(|| format!("top-{k} of {rows}x{row_len} {}", K::DTYPE))?;
        out.push((k, summarize(&mut times)));
    }
    Ok(out)
}

/// The GPU's first row against the CPU backend's top-k of the same keys.
fn check_first_row<K: SortKey>(row: &[K], k: usize, got: &[K]) -> Result<()> {
    let (mut want, mut at) = (vec![row[0]; k], vec![0u32; k]);
    Sorter::new()
        .backend(Backend::Cpu)
        .order(Order::Descending)
        .topk(row, &mut want, &mut at, k)?;
    let same = want
        .iter()
        .zip(got)
        .all(|(a, b)| a.to_bits_ordered() == b.to_bits_ordered());
    ensure!(same, "the GPU's top-k of row 0 differs from the CPU's");
    Ok(())
}

pub fn read_csv(path: &Path) -> std::result::Result<Vec<Measured>, String> {
    super::read_table(path, CSV_HEADER, "top-k bench", Measured::from_csv)
}

/// torch's row of the same dtype, shape and k as `ours`, if one was measured.
fn torch_row<'a>(rows: &'a [Measured], ours: &Measured) -> Option<&'a Measured> {
    rows.iter().find(|r| {
        r.name == "torch"
            && (r.dtype.as_str(), r.rows, r.row_len, r.case)
                == (ours.dtype.as_str(), ours.rows, ours.row_len, ours.case)
    })
}

/// torch's time over ours against k, one series per dtype and shape of ours (the rows named
/// `bitonic-topk`) that has torch's rows beside it: the top-k figure's lines.
pub fn speedups(rows: &[Measured]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for ours in rows.iter().filter(|r| r.name == "bitonic-topk") {
        let theirs = torch_row(rows, ours);
        let Some(theirs) = theirs else { continue };
        let label = format!("{} {}×{}", ours.dtype, ours.rows, ours.row_len);
        let point = (ours.case as f64, theirs.median_ms / ours.median_ms);
        match series.iter_mut().find(|(name, _)| *name == label) {
            Some((_, points)) => points.push(point),
            None => series.push((label, vec![point])),
        }
    }
    series
}

/// Milliseconds to read `rows × row_len` keys of `bytes` each once at [`COPY_CEILING`].
pub fn read_once_ms(rows: usize, row_len: usize, bytes: usize) -> f64 {
    (rows * row_len * bytes) as f64 / COPY_CEILING * 1e3
}

/// The Markdown report: for each dtype, shape and k, ours, torch's, the speed-up over torch
/// and our time over the read-once time.
pub fn report(rows: &[Measured]) -> String {
    let mut md = String::new();
    if let Some(r) = rows.iter().find(|r| r.name.starts_with("bitonic")) {
        let _ = writeln!(
            md,
            "Top-k, the k largest of every row, sorted, with indices; device-resident, median \
             of {} (CUDA events) — {}, {}, commit {}, {}.\n",
            r.repeats, r.who.device, r.who.driver, r.who.commit, r.who.date
        );
    }
    md.push_str("| dtype | rows × length | k | bitonic ms | torch.topk ms | speed-up | read once ms | bitonic / read once |\n");
    md.push_str("|---|---|---:|---:|---:|---:|---:|---:|\n");
    for ours in rows.iter().filter(|r| r.name.starts_with("bitonic")) {
        let theirs = torch_row(rows, ours);
        let bytes = DType::ALL
            .iter()
            .find(|d| d.name() == ours.dtype)
            .map_or(4, |d| d.size());
        let floor = read_once_ms(ours.rows, ours.row_len, bytes);
        let (torch, speedup) = match theirs {
            Some(t) => (
                format!("{:.3}", t.median_ms),
                format!("{:.1}×", t.median_ms / ours.median_ms),
            ),
            None => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            md,
            "| {} | {} × {} | {} | {:.3} | {torch} | {speedup} | {floor:.3} | {:.1}× |",
            ours.dtype,
            ours.rows,
            ours.row_len,
            ours.case,
            ours.median_ms,
            ours.median_ms / floor
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, dtype: &str, k: usize, ms: f64) -> Measured {
        Measured {
            name: name.into(),
            who: Provenance {
                device: "GPU".into(),
                driver: "CUDA 13.0".into(),
                commit: "abc".into(),
                date: "2026-11-24".into(),
            },
            dtype: dtype.into(),
            rows: 4,
            row_len: 1024,
            case: k,
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            repeats: 3,
        }
    }

    /// A series a dtype and shape, a point a k that torch was timed at too; A/B rows and rows
    /// without torch's beside them draw nothing. The CSV reads back what it wrote.
    #[test]
    fn speed_ups_pair_ours_with_torch() {
        let rows = [
            row("bitonic-topk", "f32", 1, 0.5),
            row("bitonic-topk", "f32", 8, 0.25),
            row("bitonic-topk", "bf16", 1, 1.0),
            row("bitonic-topk[topk_filter_above=0]", "f32", 1, 2.0),
            row("torch", "f32", 1, 1.5),
            row("torch", "f32", 8, 1.0),
        ];
        let series = speedups(&rows);
        assert_eq!(
            series,
            [("f32 4×1024".to_string(), vec![(1.0, 3.0), (8.0, 4.0)])]
        );
        assert_eq!(Measured::from_csv(&rows[3].to_csv()).unwrap(), rows[3]);
    }
}
