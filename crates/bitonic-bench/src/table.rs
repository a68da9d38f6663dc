//! Markdown tables in the shape of the report's: time, step speed-up and cumulative
//! speed-up over the serial baseline, plus throughput and achieved bandwidth; and one table per
//! metric of time against size.

use super::{Metric, Row};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The serial baseline, as in the report.
pub const BASELINE: &str = "cpu-serial-bitonic";
/// The bandwidth yardstick measured beside the sorts.
pub const COPY: &str = "memcpy-d2d";

/// Implementations in reading order: our versions in order, then CPU sorts, then peers.
pub fn names(rows: &[Row]) -> Vec<String> {
    let rank = |name: &str| {
        if name.starts_with("bitonic-v") {
            0
        } else if name.starts_with("bitonic-") {
            1
        } else if name.starts_with("cpu-") || name.starts_with("std-") || name.starts_with("rayon-")
        {
            2
        } else {
            3
        }
    };
    let set: BTreeSet<(u8, String)> = rows
        .iter()
        .filter(|r| r.name != COPY)
        .map(|r| (rank(&r.name), r.name.clone()))
        .collect();
    set.into_iter().map(|(_, n)| n).collect()
}

fn find<'a>(rows: &'a [Row], name: &str, n: u64, metric: Metric) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.name == name && r.n == n && r.metric == metric)
}

fn ms(row: Option<&Row>) -> String {
    match row {
        Some(r) if r.extrapolated => format!("{:.3}*", r.median_ms),
        Some(r) => format!("{:.3}", r.median_ms),
        None => "–".into(),
    }
}

fn ratio(a: Option<&Row>, b: Option<&Row>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", a.median_ms / b.median_ms),
        _ => "–".into(),
    }
}

/// Device-to-device copy bandwidth in GB/s (bytes read + written over time).
pub fn copy_bandwidth(rows: &[Row]) -> Option<f64> {
    rows.iter()
        .find(|r| r.name == COPY)
        .and_then(Row::bandwidth_gbs)
}

/// The report's table at size `n`.
pub fn speedup_table(rows: &[Row], n: u64) -> String {
    let serial = find(rows, BASELINE, n, Metric::EndToEnd);
    let copy = copy_bandwidth(rows);
    let mut out = String::new();
    out.push_str("| implementation | device ms | step × | total × | end-to-end ms | step × | total × | Gkeys/s | GB/s moved | % of copy |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let _ = writeln!(
        out,
        "| {BASELINE} (baseline) | – | – | – | {} | – | 1.00 | – | – | – |",
        ms(serial)
    );
    let (mut prev_dev, mut prev_e2e) = (serial, serial);
    for name in names(rows).iter().filter(|n| n.as_str() != BASELINE) {
        let dev = find(rows, name, n, Metric::Device);
        let e2e = find(rows, name, n, Metric::EndToEnd);
        if dev.is_none() && e2e.is_none() {
            continue;
        }
        let ours = name.starts_with("bitonic-v");
        let fastest = dev.or(e2e).unwrap();
        let gbs = dev.and_then(Row::bandwidth_gbs);
        // Step speed-ups only along our versions' progression.
        let step = |prev, cur| if ours { ratio(prev, cur) } else { "–".into() };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} |",
            ms(dev),
            step(prev_dev, dev),
            ratio(serial, dev),
            ms(e2e),
            step(prev_e2e, e2e),
            ratio(serial, e2e),
            fastest.keys_per_second() / 1e9,
            gbs.map(|g| format!("{g:.0}")).unwrap_or("–".into()),
            match (gbs, copy) {
                (Some(g), Some(c)) => format!("{:.0}%", 100.0 * g / c),
                _ => "–".into(),
            },
        );
        if ours {
            prev_dev = dev.or(prev_dev);
            prev_e2e = e2e.or(prev_e2e);
        }
    }
    out
}

/// Median times (ms) of every implementation at every size, for one metric.
pub fn size_table(rows: &[Row], metric: Metric) -> String {
    let names: Vec<String> = names(rows)
        .into_iter()
        .filter(|n| rows.iter().any(|r| &r.name == n && r.metric == metric))
        .collect();
    let sizes: BTreeSet<u64> = rows
        .iter()
        .filter(|r| r.metric == metric && r.name != COPY)
        .map(|r| r.n)
        .collect();
    let mut out = format!(
        "| n | {} |\n|---:|{}\n",
        names.join(" | "),
        "---:|".repeat(names.len())
    );
    for n in sizes {
        let label = if n.is_power_of_two() {
            format!("2^{}", n.trailing_zeros())
        } else {
            n.to_string()
        };
        let cells: Vec<String> = names
            .iter()
            .map(|name| ms(find(rows, name, n, metric)))
            .collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    out
}

/// The whole Markdown report: provenance, the speed-up table at the largest size, and the
/// per-size tables.
pub fn report(rows: &[Row]) -> String {
    let mut out = String::new();
    let provenance: BTreeSet<String> = rows
        .iter()
        .map(|r| match r.driver.as_str() {
            "" => format!("{}, commit {}, {}", r.device, r.commit, r.date),
            driver => format!("{} ({driver}), commit {}, {}", r.device, r.commit, r.date),
        })
        .collect();
    out.push_str("Measured on:\n");
    for p in provenance {
        let _ = writeln!(out, "- {p}");
    }
    if let Some(c) = copy_bandwidth(rows) {
        let _ = writeln!(
            out,
            "\nDevice-to-device copy bandwidth (read + write): {c:.0} GB/s."
        );
    }
    out.push_str("\nTimes are medians in milliseconds; `*` marks a time extrapolated from a smaller size, not measured.\n");
    let dtypes: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.name != COPY)
        .map(|r| r.dtype.as_str())
        .collect();
    let _ = writeln!(
        out,
        "Key types: {}.",
        dtypes.into_iter().collect::<Vec<_>>().join(", ")
    );
    if let Some(n) = rows
        .iter()
        .filter(|r| r.name.starts_with("bitonic-"))
        .map(|r| r.n)
        .max()
    {
        let _ = writeln!(out, "\n### Speed-up at n = 2^{}\n", n.trailing_zeros());
        out.push_str(&speedup_table(rows, n));
    }
    for (metric, heading) in [
        (Metric::Device, "Device-resident time (ms)"),
        (Metric::EndToEnd, "End-to-end time from host memory (ms)"),
    ] {
        if rows.iter().any(|r| r.metric == metric && r.name != COPY) {
            let _ = write!(out, "\n### {heading}\n\n{}", size_table(rows, metric));
        }
    }
    out
}
