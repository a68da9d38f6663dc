//! The row-sort benchmark behind `bitonic bench-rows` (issue 6): independent rows of u32 keys,
//! device-resident, sorted keys-only, argsorted, and sorted with u32 values, beside
//! `torch.sort(dim=-1)`, `torch.argsort` and CUB's `DeviceSegmentedSort` (bench/peers/).
//! Its CSV has a shape (rows × row length) and a task instead of the size of `Row`.

use super::measure::{check_sorted, time_on_stream, FreshKeys, Provenance};
use super::summarize;
use anyhow::{Context as _, Result};
use bitonic::Sorter;
use std::fmt::Write;
use std::path::Path;

pub const CSV_HEADER: &str =
    "name,device,driver,commit,date,dtype,rows,row_len,task,median_ms,min_ms,max_ms,repeats";

/// The shapes of issue 6's table, then the key-value case (one row of 2^24 keys).
pub const SHAPES: [(usize, usize); 5] = [
    (16384, 1024),
    (65536, 256),
    (4096, 4096),
    (1024, 16384),
    (1, 1 << 24),
];

/// What was timed: keys only, the permutation (keys sorted too), or keys moving u32 values.
pub const TASKS: [&str; 3] = ["sort", "argsort", "sort_by_key"];

/// One measurement of one implementation on one shape; `case` is the task.
pub type Measured = super::ShapeTiming<String>;

/// Times every task on every shape: each repeat's keys the next of `FreshKeys`' sets, other
/// random keys than the repeat's before, one warm-up, CUDA events around the sort call alone
/// (allocations of its scratch buffers included).
pub fn run(
    shapes: &[(usize, usize)],
    repeats: u32,
    seed: u64,
    policy: &str,
    who: &Provenance,
    progress: &dyn Fn(&str),
) -> Result<Vec<Measured>> {
    let gpu = crate::gpu()?;
    let stream = gpu.stream();
    let policy = crate::policy::with_overrides(gpu.policy(), policy)?;
    let sorter = Sorter::new().gpu(gpu).policy(policy);
    let mut out = Vec::new();
    for &(rows, row_len) in shapes {
        let n = rows * row_len;
        let mut fresh = FreshKeys::<u32>::new(gpu, n, seed)?;
        let values_host: Vec<u32> = (0..n as u32).collect();
        let mut values = stream
            .clone_htod(&values_host)
            .with_context(|| format!("allocating {n} values"))?;
        for task in TASKS {
            progress(&format!("{task} {rows}x{row_len}"));
            let mut times = Vec::new();
            for r in 0..=repeats {
                fresh.draw(gpu, r as usize)?;
                let t = time_on_stream(gpu, || {
                    match task {
                        "sort" => sorter.sort_rows_device(&mut fresh.keys, row_len)?,
                        "argsort" => {
                            // Allocated inside the timing, as a caller that argsorts would.
                            // SAFETY: the sort writes every index.
                            let mut indices = unsafe { stream.alloc::<u32>(n) }
                                .context("allocating the indices")?;
                            sorter.argsort_rows_device(&mut fresh.keys, &mut indices, row_len)?
                        }
                        _ => {
                            sorter.sort_pairs_rows_device(&mut fresh.keys, &mut values, row_len)?
                        }
                    };
                    Ok(())
                })?;
                if r > 0 {
                    times.push(t);
                }
            }
            check_sorted(
                gpu,
                &fresh.keys,
                row_len,
                &format!("{task} {rows}x{row_len}"),
            )?;
            let (median_ms, min_ms, max_ms) = summarize(&mut times);
            out.push(Measured {
                name: "bitonic-tuned".into(),
                who: who.clone(),
                dtype: "u32".into(),
                rows,
                row_len,
                case: task.into(),
                median_ms,
                min_ms,
                max_ms,
                repeats,
            });
        }
    }
    Ok(out)
}

pub fn write_csv(path: &Path, rows: &[Measured]) -> std::io::Result<()> {
    super::write_table(path, CSV_HEADER, rows.iter().map(Measured::to_csv))
}

pub fn read_csv(path: &Path) -> std::result::Result<Vec<Measured>, String> {
    super::read_table(path, CSV_HEADER, "row-bench", Measured::from_csv)
}

/// Issue 6's targets in ms for keys-only row sorts: (rows, row_len, must reach, aim).
const TARGETS: [(usize, usize, f64, f64); 4] = [
    (16384, 1024, 0.20, 0.10),
    (65536, 256, 0.20, 0.08),
    (4096, 4096, 0.25, 0.15),
    (1024, 16384, 0.35, 0.20),
];

/// The Markdown report: one table per task with every implementation's median per shape, the
/// targets beside the keys-only sort, and the key-value to keys-only ratio.
pub fn report(rows: &[Measured]) -> String {
    let mut md = String::new();
    if let Some(r) = rows.iter().find(|r| r.name.starts_with("bitonic")) {
        let _ = writeln!(
            md,
            "Row sorts, u32 keys, device-resident, median of {} (CUDA events) — {}, {}, commit {}, {}.\n",
            r.repeats, r.who.device, r.who.driver, r.who.commit, r.who.date
        );
    }
    let mut names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    names.sort_by_key(|n| (!n.starts_with("bitonic"), n.to_string()));
    names.dedup();
    let mut shapes: Vec<(usize, usize)> = rows.iter().map(|r| (r.rows, r.row_len)).collect();
    shapes.dedup();
    shapes.sort_by_key(|&(r, l)| (r == 1, std::cmp::Reverse(r), l));
    shapes.dedup();
    let time = |name: &str, shape: (usize, usize), task: &str| {
        rows.iter()
            .find(|r| r.name == name && (r.rows, r.row_len) == shape && r.case == task)
            .map(|r| format!("{:.3}", r.median_ms))
            .unwrap_or_else(|| "–".into())
    };
    for task in TASKS {
        let present: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| rows.iter().any(|r| r.name == *n && r.case == task))
            .collect();
        if present.is_empty() {
            continue;
        }
        let _ = writeln!(md, "### {task} (ms)\n");
        let targets = task == "sort";
        let mut header = String::from("| rows × len |");
        for n in &present {
            let _ = write!(header, " {n} |");
        }
        if targets {
            header.push_str(" must reach | aim |");
        }
        let _ = writeln!(md, "{header}");
        let columns = present.len() + 1 + if targets { 2 } else { 0 };
        let _ = writeln!(md, "|{}", "---|".repeat(columns));
        for &shape in &shapes {
            let mut line = format!("| {} × {} |", shape.0, shape.1);
            for n in &present {
                let _ = write!(line, " {} |", time(n, shape, task));
            }
            if targets {
                match TARGETS.iter().find(|t| (t.0, t.1) == shape) {
                    Some(t) => {
                        let _ = write!(line, " ≤ {:.2} | ≤ {:.2} |", t.2, t.3);
                    }
                    None => line.push_str(" | |"),
                }
            }
            let _ = writeln!(md, "{line}");
        }
        md.push('\n');
    }
    let ours = |task: &str| {
        rows.iter()
            .find(|r| {
                r.name == "bitonic-tuned" && (r.rows, r.row_len) == (1, 1 << 24) && r.case == task
            })
            .map(|r| r.median_ms)
    };
    if let (Some(keys), Some(kv)) = (ours("sort"), ours("sort_by_key")) {
        let _ = writeln!(
            md,
            "Key-value 2^24 (u32 → u32): {kv:.3} ms against {keys:.3} ms keys-only = **{:.2}×** (must reach ≤ 2×, aim ≤ 1.5×).",
            kv / keys
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_file_round_trip_and_header_check() {
        let row = Measured {
            name: "bitonic-tuned".into(),
            who: Provenance {
                device: "NVIDIA H100, 80GB".into(),
                driver: "CUDA 13.0".into(),
                commit: "abc".into(),
                date: "2026-11-22".into(),
            },
            dtype: "u32".into(),
            rows: 16384,
            row_len: 1024,
            case: "argsort".into(),
            median_ms: 0.625,
            min_ms: 0.5,
            max_ms: 0.75,
            repeats: 10,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        write_csv(&path, &[row.clone(), row.clone()]).unwrap();
        let back = read_csv(&path).unwrap();
        let mut want = row;
        want.who.device = "NVIDIA H100; 80GB".into(); // commas cannot live in a CSV field
        assert_eq!(back, [want.clone(), want]);

        let other = dir.path().join("bench.csv");
        super::super::write_csv(&other, &[]).unwrap();
        let err = read_csv(&other).unwrap_err();
        assert!(
            err.ends_with("the first line is not the row-bench CSV header"),
            "{err}"
        );
    }
}
