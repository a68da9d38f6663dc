//! The benchmark harness behind `bitonic bench` and `bitonic report`: timing (CUDA events for
//! device work, host clocks for host-to-host sorts), one CSV format shared with the peer
//! programs under `bench/peers/`, the report's Markdown tables, and time-vs-size figures.

pub mod figure;
pub mod gen;
pub mod gpus;
pub mod large;
pub mod measure;
pub mod policy;
pub mod rows;
pub mod sample;
pub mod table;
pub mod topk;

use std::path::Path;

/// The process's GPU 0 as the benchmarks time it: its memory pool keeps a quarter of the
/// device's memory after it is freed, as a program that sorts in a loop asks
/// ([`bitonic::Gpu::keep_freed_memory`]), so that a call's workspace and scratch come from the
/// pool instead of freshly mapped pages. Asked once; best effort (a device without memory
/// pools keeps the driver's setting).
pub fn gpu() -> anyhow::Result<&'static bitonic::Gpu> {
    static KEPT: std::sync::Once = std::sync::Once::new();
    let gpu = bitonic::Gpu::get()?;
    KEPT.call_once(|| {
        let _ = gpu.keep_freed_memory(gpu.info().total_memory / 4);
    });
    Ok(gpu)
}

/// The git commit the harness was built from (`-dirty` with uncommitted changes), for the
/// provenance of every result.
pub const COMMIT: &str = env!("BITONIC_GIT_COMMIT");

/// What a time covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Keys already on the GPU: CUDA events around the sort alone.
    Device,
    /// A host slice in, the sorted host slice out: allocation, copies and sort (host clock).
    /// CPU sorts are timed this way too.
    EndToEnd,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Device => "device",
            Metric::EndToEnd => "end_to_end",
        }
    }

    fn parse(text: &str) -> Option<Metric> {
        match text {
            "device" => Some(Metric::Device),
            "end_to_end" => Some(Metric::EndToEnd),
            _ => None,
        }
    }
}

/// One measurement: an implementation at one size, summarised over its repeats.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Short label, unique per implementation: `bitonic-v5`, `cub-radix`, `torch.sort`, …
    pub name: String,
    pub device: String,
    pub driver: String,
    pub commit: String,
    pub date: String,
    pub dtype: String,
    pub n: u64,
    pub metric: Metric,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub repeats: u32,
    /// Bytes the implementation must move through device memory (ours only), for bandwidth.
    pub bytes_moved: Option<u64>,
    /// The time is a model's estimate from a smaller measured size, not a measurement.
    pub extrapolated: bool,
}

pub const CSV_HEADER: &str =
    "name,device,driver,commit,date,dtype,n,metric,median_ms,min_ms,max_ms,repeats,bytes_moved,extrapolated";

impl Row {
    pub fn to_csv(&self) -> String {
        let clean = |s: &str| s.replace(',', ";");
        format!(
            "{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{},{},{}",
            clean(&self.name),
            clean(&self.device),
            clean(&self.driver),
            clean(&self.commit),
            clean(&self.date),
            self.dtype,
            self.n,
            self.metric.name(),
            self.median_ms,
            self.min_ms,
            self.max_ms,
            self.repeats,
            self.bytes_moved.map(|b| b.to_string()).unwrap_or_default(),
            self.extrapolated,
        )
    }

    fn from_csv(line: &str) -> Result<Row, String> {
        let f = Fields::split(line, 14)?;
        Ok(Row {
            name: f.text(0),
            device: f.text(1),
            driver: f.text(2),
            commit: f.text(3),
            date: f.text(4),
            dtype: f.text(5),
            n: f.parse(6)?,
            metric: Metric::parse(f.0[7]).ok_or_else(|| format!("unknown metric {:?}", f.0[7]))?,
            median_ms: f.parse(8)?,
            min_ms: f.parse(9)?,
            max_ms: f.parse(10)?,
            repeats: f.parse(11)?,
            bytes_moved: f.optional(12)?,
            extrapolated: f.0[13] == "true",
        })
    }

    /// Achieved bandwidth over `bytes_moved`, in GB/s.
    pub fn bandwidth_gbs(&self) -> Option<f64> {
        Some(self.bytes_moved? as f64 / (self.median_ms / 1e3) / 1e9)
    }

    pub fn keys_per_second(&self) -> f64 {
        self.n as f64 / (self.median_ms / 1e3)
    }
}

/// Writes rows as CSV (atomically).
pub fn write_csv(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    write_table(path, CSV_HEADER, rows.iter().map(Row::to_csv))
}

/// Reads rows from a CSV written by `write_csv` or a peer program.
pub fn read_csv(path: &Path) -> Result<Vec<Row>, String> {
    read_table(path, CSV_HEADER, "bench", Row::from_csv)
}

/// Writes `header` and then one line each (atomically: a temporary file beside `path`,
/// renamed over it), the CSV files of both benchmarks.
fn write_table(
    path: &Path,
    header: &str,
    lines: impl Iterator<Item = String>,
) -> std::io::Result<()> {
    let mut text = String::from(header);
    text.push('\n');
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Reads a CSV whose first non-empty line must be `header` (the `what` CSV header), parsing
/// every further non-empty line; errors name the file and line.
fn read_table<T>(
    path: &Path,
    header: &str,
    what: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    if lines.next().map(str::trim) != Some(header) {
        return Err(format!(
            "{}: the first line is not the {what} CSV header",
            path.display()
        ));
    }
    lines
        .enumerate()
        .map(|(i, l)| parse(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 2)))
        .collect()
}

/// The fields of one CSV line, with parsers that name the field in their errors: shared by
/// the three CSV formats (bench, rows, multi-GPU).
struct Fields<'a>(Vec<&'a str>);

impl<'a> Fields<'a> {
    /// Splits `line`, which must have `count` fields.
    fn split(line: &'a str, count: usize) -> Result<Fields<'a>, String> {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != count {
            return Err(format!("expected {count} fields, found {}", f.len()));
        }
        Ok(Fields(f))
    }

    fn text(&self, i: usize) -> String {
        self.0[i].to_string()
    }

    fn parse<T: std::str::FromStr>(&self, i: usize) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        self.0[i]
            .parse::<T>()
            .map_err(|e| format!("field {}: {e}", i + 1))
    }

    /// A number, or `None` for an empty field.
    fn optional<T: std::str::FromStr>(&self, i: usize) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        if self.0[i].is_empty() {
            Ok(None)
        } else {
            self.parse(i).map(Some)
        }
    }
}

/// One measurement of one implementation on one shape of keys (rows × row length): the rows
/// of the row-sort and top-k benchmarks' CSVs, which differ only in their `case` column (the
/// task timed, or k).
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeTiming<C> {
    pub name: String,
    pub who: measure::Provenance,
    pub dtype: String,
    pub rows: usize,
    pub row_len: usize,
    pub case: C,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub repeats: u32,
}

impl<C: std::fmt::Display + std::str::FromStr<Err: std::fmt::Display>> ShapeTiming<C> {
    /// The CSV line, in the column order of `rows::CSV_HEADER` and `topk::CSV_HEADER`.
    pub fn to_csv(&self) -> String {
        let clean = |s: &str| s.replace(',', ";");
        format!(
            "{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{}",
            clean(&self.name),
            clean(&self.who.device),
            clean(&self.who.driver),
            clean(&self.who.commit),
            clean(&self.who.date),
            self.dtype,
            self.rows,
            self.row_len,
            self.case,
            self.median_ms,
            self.min_ms,
            self.max_ms,
            self.repeats
        )
    }

    /// A line of [`ShapeTiming::to_csv`] read back.
    pub fn from_csv(line: &str) -> Result<Self, String> {
        let f = Fields::split(line, 13)?;
        Ok(ShapeTiming {
            name: f.text(0),
            who: measure::Provenance {
                device: f.text(1),
                driver: f.text(2),
                commit: f.text(3),
                date: f.text(4),
            },
            dtype: f.text(5),
            rows: f.parse(6)?,
            row_len: f.parse(7)?,
            case: f.parse(8)?,
            median_ms: f.parse(9)?,
            min_ms: f.parse(10)?,
            max_ms: f.parse(11)?,
            repeats: f.parse(12)?,
        })
    }
}

/// Median, min and max of a non-empty sample of times.
pub fn summarize(times_ms: &mut [f64]) -> (f64, f64, f64) {
    times_ms.sort_by(f64::total_cmp);
    let n = times_ms.len();
    let median = if n % 2 == 1 {
        times_ms[n / 2]
    } else {
        (times_ms[n / 2 - 1] + times_ms[n / 2]) / 2.0
    };
    (median, times_ms[0], times_ms[n - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trip() {
        let row = Row {
            name: "bitonic-v5".into(),
            device: "NVIDIA H100, 80GB".into(),
            driver: "13.0".into(),
            commit: "abc".into(),
            date: "2026-11-22".into(),
            dtype: "u32".into(),
            n: 1 << 20,
            metric: Metric::Device,
            median_ms: 1.5,
            min_ms: 1.25,
            max_ms: 2.0,
            repeats: 5,
            bytes_moved: Some(123),
            extrapolated: false,
        };
        let back = Row::from_csv(&row.to_csv()).unwrap();
        assert_eq!(back.device, "NVIDIA H100; 80GB");
        assert_eq!(
            Row {
                device: row.device.clone(),
                ..back
            },
            row
        );
        assert_eq!(summarize(&mut [3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(summarize(&mut [4.0, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0));
    }
}
