//! `bitonic bench`: measure; `bitonic report`: merge CSVs (ours and the peers') into the
//! Markdown report and the figures.

use crate::ui::Usage;
use anyhow::{Context, Result};
use bitonic::multi::Algorithm;
use bitonic::{DType, Version};
use bitonic_bench::{self as bench, figure, gpus, measure, table, Metric, Row};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The tuning override of `bench` and `bench-rows`.
#[derive(clap::Args)]
pub struct PolicyArg {
    /// Tuning overrides for an A/B run, e.g. tile_bytes=32768,max_cluster_blocks=8 (the GPU
    /// architecture's own policy otherwise).
    #[arg(long, default_value = "")]
    pub(crate) policy: String,
}

/// A CSV of `header` and `lines`, written as every output ([`crate::io::write_text`]:
/// atomically, with the usual permissions).
pub(crate) fn write_csv(
    path: &Path,
    header: &str,
    lines: impl Iterator<Item = String>,
) -> Result<()> {
    let mut text = format!("{header}\n");
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    crate::io::write_text(path, &text)?;
    Ok(())
}

/// A benchmark's progress bar: one step a measurement, the step's name as its message.
pub(crate) struct StepBar(ProgressBar);

impl StepBar {
    pub(crate) fn new(steps: usize) -> StepBar {
        let bar = ProgressBar::new(steps as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed}]")
                .expect("valid template"),
        );
        StepBar(bar)
    }

    /// One measurement begins: `what`.
    pub(crate) fn step(&self, what: &str) {
        self.0.inc(1);
        self.0.set_message(what.to_string());
    }

    pub(crate) fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// The GPU, or an error saying why there is none and what to do instead (`instead`).
pub(crate) fn need_gpu(command: &str, instead: &str) -> Result<()> {
    match bitonic::Gpu::get() {
        Ok(_) => Ok(()),
        Err(why) => {
            anyhow::bail!("{command} needs a GPU and there is none here ({why}); {instead}")
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Key type.
    #[arg(long, value_parser = crate::ui::named(&DType::ALL, DType::name), default_value = "u32")]
    dtype: DType,
    /// Smallest size, as a power of two.
    #[arg(long, default_value_t = 15)]
    min_exp: u32,
    /// Largest size, as a power of two.
    #[arg(long, default_value_t = 29)]
    max_exp: u32,
    /// GPU versions to time (comma-separated); none with --no-gpu.
    #[arg(long, value_parser = crate::ui::named(&Version::ALL, Version::name), value_delimiter = ',', default_values_t = Version::ALL)]
    versions: Vec<Version>,
    /// Skip the GPU.
    #[arg(long)]
    no_gpu: bool,
    /// Skip the host-to-host timings of the GPU versions.
    #[arg(long)]
    no_end_to_end: bool,
    /// Skip the CPU sorts.
    #[arg(long)]
    no_cpu: bool,
    /// Timed repeats per GPU measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    repeats: u32,
    /// Timed repeats per CPU measurement.
    #[arg(long, default_value_t = 1)]
    cpu_repeats: u32,
    /// Largest size at which the serial network is measured; larger ones are extrapolated.
    #[arg(long, default_value_t = 22)]
    serial_max_exp: u32,
    /// Largest size at which the other CPU sorts are measured.
    #[arg(long, default_value_t = 29)]
    cpu_max_exp: u32,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Peer CSVs (bench/peers/) to merge into the report.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<PathBuf>,
    /// Folder for bitonic.csv, report.md and the figures.
    #[arg(short, long, default_value = "bench-results")]
    out: PathBuf,
    /// Multi-GPU scaling instead of the version sweep: the GPU counts to compare, e.g. 1,2,4
    /// (writes multi_gpu.csv and the scaling figure).
    #[arg(long, value_delimiter = ',')]
    gpus: Vec<usize>,
    /// Keys sorted by each --gpus measurement (u32, made on the GPUs).
    #[arg(long, value_parser = crate::ui::parse_len, default_value = "2^32")]
    gpus_len: usize,
    /// Algorithms for --gpus.
    #[arg(long, value_parser = crate::ui::named(&Algorithm::ALL, Algorithm::name), value_delimiter = ',', default_values_t = Algorithm::ALL)]
    algorithms: Vec<Algorithm>,
    /// Ranks on each GPU at least, for --gpus (more when one rank would hold too many keys).
    #[arg(long, default_value_t = 1)]
    ranks_per_gpu: usize,
    #[command(flatten)]
    policy: PolicyArg,
}

pub fn run(args: Args) -> Result<ExitCode> {
    // Before any work or any file: a GPU run without a GPU fails now.
    if !args.gpus.is_empty() {
        need_gpu("bench --gpus", "run it on a host with the GPUs to compare")?;
        return run_gpus(args);
    }
    // Sizes first: a size past what one sort takes, or past the host's memory (the keys, a
    // copy to sort and the reference the check compares with), fails now.
    if args.min_exp > args.max_exp {
        anyhow::bail!(Usage(format!(
            "--min-exp {} is above --max-exp {}",
            args.min_exp, args.max_exp
        )));
    }
    let most = bitonic::plan::MAX_LEN.trailing_zeros();
    if args.max_exp > most {
        anyhow::bail!(Usage(format!(
            "--max-exp {}: one sort takes at most 2^{most} keys",
            args.max_exp
        )));
    }
    let largest = 1usize << args.max_exp;
    crate::ui::check_memory(
        largest.checked_mul(3 * args.dtype.size()),
        &format!("bench at 2^{} {} keys", args.max_exp, args.dtype),
    )?;
    if !args.no_gpu && !args.versions.is_empty() {
        need_gpu(
            "bench",
            "pass --no-gpu to time the CPU sorts alone, or run it on a GPU host",
        )?;
    }
    let plan = measure::Plan {
        dtype: args.dtype,
        exps: (args.min_exp..=args.max_exp).collect(),
        versions: if args.no_gpu {
            Vec::new()
        } else {
            args.versions.clone()
        },
        end_to_end: !args.no_end_to_end,
        cpu: !args.no_cpu,
        repeats: args.repeats.max(1),
        cpu_repeats: args.cpu_repeats.max(1),
        serial_max_exp: args.serial_max_exp,
        cpu_max_exp: args.cpu_max_exp,
        seed: args.seed,
        policy: args.policy.policy.clone(),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let who = measure::Provenance::here();
    eprintln!(
        "benchmarking on {} ({}), commit {}",
        who.device, who.driver, who.commit
    );
    let bar = StepBar::new(measure::count(&plan));
    let rows = measure::run(&plan, &who, &|what| bar.step(what))?;
    bar.finish();
    let csv = args.out.join("bitonic.csv");
    write_csv(&csv, bench::CSV_HEADER, rows.iter().map(Row::to_csv))?;
    eprintln!("wrote {}", csv.display());
    let mut all = rows;
    for peer in &args.peers {
        all.extend(bench::read_csv(peer).map_err(anyhow::Error::msg)?);
    }
    write_report(&all, &args.out)?;
    Ok(ExitCode::SUCCESS)
}

/// `bitonic bench --gpus 1,2,4`: the multi-GPU scaling table and figure.
fn run_gpus(args: Args) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let plan = gpus::ScalingPlan {
        gpu_counts: args.gpus.clone(),
        n: args.gpus_len,
        algorithms: args.algorithms.clone(),
        repeats: args.repeats.max(1),
        seed: args.seed,
        min_ranks_per_gpu: args.ranks_per_gpu,
    };
    let who = measure::Provenance::here();
    eprintln!(
        "multi-GPU benchmark of {} keys, commit {}",
        plan.n, who.commit
    );
    let rows = gpus::measure(&plan, &who.commit, &who.date, |line| eprintln!("  {line}"))?;
    let csv = args.out.join("multi_gpu.csv");
    gpus::write_scaling_csv(&csv, &rows).with_context(|| format!("writing {}", csv.display()))?;
    print_scaling(&rows);
    // The figure needs a font, which GPU hosts may lack: `bitonic report --scaling` draws it
    // from the CSV anywhere else.
    if let Err(e) = draw_scaling(&rows, &args.out) {
        eprintln!(
            "no figure: {e:#} (draw it with `bitonic report --scaling {}`)",
            csv.display()
        );
    }
    eprintln!("wrote {}", csv.display());
    Ok(ExitCode::SUCCESS)
}

fn print_scaling(rows: &[gpus::ScalingRow]) {
    println!("| GPUs | ranks | algorithm | median ms | min ms | speed-up over 1 GPU |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        let speedup = r.speedup.map(|s| format!("{s:.2}x")).unwrap_or_default();
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {speedup} |",
            r.gpus, r.ranks, r.algorithm, r.median_ms, r.min_ms
        );
    }
}

fn draw_scaling(rows: &[gpus::ScalingRow], out: &Path) -> Result<()> {
    let title = format!(
        "bitonic across GPUs: 2^{} u32 keys, {}, commit {}",
        rows[0].n.trailing_zeros(),
        rows[0]
            .device
            .trim_end_matches(|c: char| c == 'x' || c.is_ascii_digit())
            .trim(),
        rows[0].commit.get(..7).unwrap_or(&rows[0].commit)
    );
    let stem = "multi_gpu_scaling";
    if let Err(why) = figure::scaling(rows, &title, out, stem) {
        // A figure that failed half-way is not left behind.
        for ext in ["svg", "png"] {
            std::fs::remove_file(out.join(format!("{stem}.{ext}"))).ok();
        }
        anyhow::bail!(why);
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Bench CSVs to merge (ours and the peers').
    #[arg(required_unless_present_any = ["csv_header", "scaling"])]
    csv: Vec<PathBuf>,
    /// Only print the CSV header line (for the peer programs' output) and exit.
    #[arg(long)]
    csv_header: bool,
    /// A multi_gpu.csv from bench --gpus to draw as the scaling figure (instead of CSVs).
    #[arg(long, conflicts_with = "csv")]
    scaling: Option<PathBuf>,
    /// Folder for results.csv, report.md and the figures.
    #[arg(short, long, default_value = "bench-results")]
    out: PathBuf,
}

pub fn report(args: ReportArgs) -> Result<ExitCode> {
    if args.csv_header {
        println!("{}", bench::CSV_HEADER);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(csv) = &args.scaling {
        let rows = gpus::read_scaling_csv(csv).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(!rows.is_empty(), "{} has no rows", csv.display());
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        print_scaling(&rows);
        draw_scaling(&rows, &args.out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut rows = Vec::new();
    for path in &args.csv {
        rows.extend(bench::read_csv(path).map_err(anyhow::Error::msg)?);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let merged = args.out.join("results.csv");
    write_csv(&merged, bench::CSV_HEADER, rows.iter().map(Row::to_csv))?;
    write_report(&rows, &args.out)?;
    Ok(ExitCode::SUCCESS)
}

/// report.md and the two figures; prints the report too.
fn write_report(rows: &[Row], out: &Path) -> Result<()> {
    let markdown = table::report(rows);
    let path = out.join("report.md");
    crate::io::write_text(&path, &markdown)?;
    println!("{markdown}");
    let device = rows
        .iter()
        .find(|r| r.name.starts_with("bitonic-"))
        .map(|r| r.device.clone())
        .unwrap_or_default();
    for (metric, stem, what) in [
        (Metric::Device, "device_time", "keys already on the GPU"),
        (
            Metric::EndToEnd,
            "end_to_end_time",
            "host memory in and out",
        ),
    ] {
        let title = format!("Sort time vs size, {what} ({device})");
        match figure::time_vs_size(rows, metric, &title, out, stem) {
            Ok(files) => files
                .iter()
                .for_each(|f| eprintln!("wrote {}", f.display())),
            Err(why) => {
                // A figure that failed half-way is not left behind.
                for ext in ["svg", "png"] {
                    std::fs::remove_file(out.join(format!("{stem}.{ext}"))).ok();
                }
                eprintln!("no {stem} figure: {why}")
            }
        }
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct RowsArgs {
    /// Shapes as ROWSxLEN (comma-separated); default: issue 6's table and one row of 2^24.
    #[arg(long, value_delimiter = ',', value_parser = parse_shape)]
    shapes: Vec<(usize, usize)>,
    /// Timed repeats per measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 10)]
    repeats: u32,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Peer CSVs in the row-bench format (bench/peers/) to merge into the report.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<PathBuf>,
    /// Folder for rows.csv and rows.md.
    #[arg(short, long, default_value = "bench-results")]
    out: PathBuf,
    /// Only print the CSV header line (for the peer programs' output) and exit.
    #[arg(long)]
    csv_header: bool,
    #[command(flatten)]
    policy: PolicyArg,
}

fn parse_shape(text: &str) -> std::result::Result<(usize, usize), String> {
    let (rows, len) = text
        .split_once('x')
        .ok_or_else(|| format!("{text:?} is not ROWSxLEN"))?;
    let int = |s: &str| s.trim().parse::<usize>().map_err(|e| format!("{s:?}: {e}"));
    let (rows, len) = (int(rows)?, int(len)?);
    rows.checked_mul(len)
        .ok_or_else(|| format!("{text:?}: {rows} rows of {len} keys are too many to address"))?;
    Ok((rows, len))
}

/// `bitonic bench-rows`: row sorts, argsorts and key-value sorts on the GPU, beside the peers.
pub fn rows(args: RowsArgs) -> Result<ExitCode> {
    if args.csv_header {
        println!("{}", bench::rows::CSV_HEADER);
        return Ok(ExitCode::SUCCESS);
    }
    let shapes = if args.shapes.is_empty() {
        bench::rows::SHAPES.to_vec()
    } else {
        args.shapes.clone()
    };
    // The largest shape's keys, values, indices and their copies (u32 each), on the host.
    for &(rows, row_len) in &shapes {
        let keys = rows.checked_mul(row_len);
        crate::ui::check_memory(
            keys.and_then(|k| k.checked_mul(4 * 4)),
            &format!("bench-rows at {rows}x{row_len} keys"),
        )?;
    }
    need_gpu(
        "bench-rows",
        "it times the GPU's row sorts and has no CPU mode: run it on a GPU host",
    )?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let who = measure::Provenance::here();
    eprintln!(
        "benchmarking rows on {} ({}), commit {}",
        who.device, who.driver, who.commit
    );
    let bar = StepBar::new(shapes.len() * bench::rows::TASKS.len());
    let mut measured = bench::rows::run(
        &shapes,
        args.repeats.max(1),
        args.seed,
        &args.policy.policy,
        &who,
        &|what| bar.step(what),
    )?;
    bar.finish();
    let csv = args.out.join("rows.csv");
    let lines = measured.iter().map(bench::rows::Measured::to_csv);
    write_csv(&csv, bench::rows::CSV_HEADER, lines)?;
    for peer in &args.peers {
        measured.extend(bench::rows::read_csv(peer).map_err(anyhow::Error::msg)?);
    }
    let markdown = bench::rows::report(&measured);
    let path = args.out.join("rows.md");
    crate::io::write_text(&path, &markdown)?;
    println!("{markdown}");
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args)]
pub struct TopkArgs {
    /// Shapes as ROWSxLEN (comma-separated); default: the top-k issue's table.
    #[arg(long, value_delimiter = ',', value_parser = parse_shape)]
    shapes: Vec<(usize, usize)>,
    /// Values of k (comma-separated); default 1,8,50,256,1024. A k above a row's length is
    /// skipped.
    #[arg(long, value_delimiter = ',')]
    ks: Vec<usize>,
    /// Key types (comma-separated): f32, bf16, f16.
    #[arg(long, value_delimiter = ',', default_value = "f32",
          value_parser = crate::ui::named(&[DType::F32, DType::BF16, DType::F16], DType::name))]
    dtypes: Vec<DType>,
    /// Timed repeats per measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 20)]
    repeats: u32,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Peer CSVs in the top-k format (bench/peers/torch_topk.py) to merge into the report.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<PathBuf>,
    /// Folder for topk.csv and topk.md.
    #[arg(short, long, default_value = "bench-results")]
    out: PathBuf,
    /// Only print the CSV header line (for the peer programs' output) and exit.
    #[arg(long)]
    csv_header: bool,
    /// Measure nothing: redraw topk.md and the figure from OUT/topk.csv and the --peers CSVs
    /// (no GPU needed).
    #[arg(long)]
    replot: bool,
    /// A diagnostic: queue each call behind a device copy, so that the events time the GPU's
    /// work without the host's time to queue it (rows named bitonic-topk(gpu-only)).
    #[arg(long)]
    gpu_only: bool,
    #[command(flatten)]
    policy: PolicyArg,
}

/// `bitonic bench-topk`: the top-k of f32, bf16 or f16 rows on the GPU beside torch.topk.
pub fn topk(args: TopkArgs) -> Result<ExitCode> {
    if args.csv_header {
        println!("{}", bench::topk::CSV_HEADER);
        return Ok(ExitCode::SUCCESS);
    }
    if args.replot {
        let ours = args.out.join("topk.csv");
        let mut measured = bench::topk::read_csv(&ours).map_err(anyhow::Error::msg)?;
        for peer in &args.peers {
            measured.extend(bench::topk::read_csv(peer).map_err(anyhow::Error::msg)?);
        }
        return topk_report(&measured, &args.out);
    }
    let shapes = if args.shapes.is_empty() {
        bench::topk::SHAPES.to_vec()
    } else {
        args.shapes.clone()
    };
    let ks = if args.ks.is_empty() {
        bench::topk::KS.to_vec()
    } else {
        args.ks.clone()
    };
    // The largest shape's keys on the host, checked before the work.
    for &(rows, row_len) in &shapes {
        crate::ui::check_memory(
            rows.checked_mul(row_len).and_then(|n| n.checked_mul(4)),
            &format!("bench-topk at {rows}x{row_len} keys"),
        )?;
    }
    need_gpu(
        "bench-topk",
        "it times the GPU's top-k and has no CPU mode: run it on a GPU host",
    )?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let who = measure::Provenance::here();
    eprintln!(
        "benchmarking top-k on {} ({}), commit {}",
        who.device, who.driver, who.commit
    );
    let bar = StepBar::new(shapes.len() * ks.len());
    let mut measured = bench::topk::run(
        &shapes,
        &args.dtypes,
        &ks,
        args.repeats.max(1),
        args.seed,
        &args.policy.policy,
        args.gpu_only,
        &who,
        &|what| bar.step(what),
    )?;
    bar.finish();
    let csv = args.out.join("topk.csv");
    write_csv(
        &csv,
        bench::topk::CSV_HEADER,
        measured.iter().map(bench::topk::Measured::to_csv),
    )?;
    for peer in &args.peers {
        measured.extend(bench::topk::read_csv(peer).map_err(anyhow::Error::msg)?);
    }
    topk_report(&measured, &args.out)
}

/// topk.md and the speed-up figure (topk.svg, topk.png) in `out`; a figure that cannot be
/// drawn (no font, no torch rows) is reported and skipped.
fn topk_report(measured: &[bench::topk::Measured], out: &Path) -> Result<ExitCode> {
    let markdown = bench::topk::report(measured);
    crate::io::write_text(&out.join("topk.md"), &markdown)?;
    println!("{markdown}");
    let title = match measured.iter().find(|r| r.name == "bitonic-topk") {
        Some(r) => format!(
            "top-k beside torch.topk, {}, commit {}",
            r.who.device, r.who.commit
        ),
        None => "top-k beside torch.topk".to_string(),
    };
    if let Err(why) = figure::topk_speedups(measured, &title, out, "topk") {
        eprintln!("warning: no top-k figure: {why}");
    }
    Ok(ExitCode::SUCCESS)
}
