//! `bitonic bench-large`: host slices in and out (issue 54): the in-memory host path and the
//! out-of-core sort beside the link's speed and a sort on every host core, in one run.

use crate::bench::{need_gpu, write_csv, PolicyArg, StepBar};
use anyhow::{Context, Result};
use bitonic::DType;
use bitonic_bench::{large, measure};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Keys (comma-separated, e.g. 2^29,2^32), each size in turn.
    #[arg(long, value_delimiter = ',', value_parser = crate::ui::parse_len, default_value = "2^29")]
    len: Vec<usize>,
    /// Key type: u32 or u64.
    #[arg(long, default_value = "u32",
          value_parser = crate::ui::named(&[DType::U32, DType::U64], DType::name))]
    dtype: DType,
    /// Device memory budgets (bytes, comma-separated) of extra out-of-core cases, which force
    /// more runs than the device's memory would.
    #[arg(long, value_delimiter = ',', value_parser = crate::ui::parse_len)]
    budgets: Vec<usize>,
    /// Also time `par_sort_unstable` on every host core, for sizes up to this many keys.
    #[arg(long, value_name = "LEN", value_parser = crate::ui::parse_len)]
    rayon_up_to: Option<usize>,
    /// Timed repeats, each on fresh keys; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeats: u32,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for large.csv and large.md.
    #[arg(short, long, default_value = "bench-results")]
    out: PathBuf,
    #[command(flatten)]
    policy: PolicyArg,
    /// Measure nothing: read this large.csv of an earlier run and write its table and figure
    /// into the output folder (no GPU needed).
    #[arg(long, value_name = "CSV")]
    redraw: Option<PathBuf>,
}

/// `bitonic bench-large`.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(csv) = &args.redraw {
        let text =
            std::fs::read_to_string(csv).with_context(|| format!("reading {}", csv.display()))?;
        let measured = text
            .lines()
            .skip(1)
            .filter(|line| !line.trim().is_empty())
            .map(large::Measured::from_csv)
            .collect::<Result<Vec<_>>>()?;
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        report(&measured, &args.out, args.dtype)?;
        return Ok(ExitCode::SUCCESS);
    }
    let most = args.len.iter().copied().max().unwrap_or(0);
    crate::ui::check_memory(
        most.checked_mul(args.dtype.size()),
        &format!("bench-large of {most} keys"),
    )?;
    need_gpu(
        "bench-large",
        "it times host slices through the GPU: run it on a GPU host",
    )?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let gpu = bitonic_bench::gpu()?;
    let policy = bitonic_bench::policy::with_overrides(gpu.policy(), &args.policy.policy)?;
    let who = measure::Provenance::here();
    eprintln!(
        "benchmarking {} keys through {} ({}), commit {}",
        args.dtype.name(),
        who.device,
        who.driver,
        who.commit
    );
    let rayon = |len: usize| args.rayon_up_to.is_some_and(|most| len <= most);
    let steps: usize = args
        .len
        .iter()
        .map(|&len| 3 + args.budgets.len() + rayon(len) as usize)
        .sum();
    let bar = StepBar::new(steps);
    let step = |what: &str| bar.step(what);
    let mut measured = Vec::new();
    for &len in &args.len {
        let cells = large::Cells {
            len,
            budgets: &args.budgets,
            rayon: rayon(len),
            repeats: args.repeats.max(1),
            seed: args.seed,
        };
        measured.extend(match args.dtype {
            DType::U64 => large::run::<u64>(&cells, &policy, &who, &step)?,
            _ => large::run::<u32>(&cells, &policy, &who, &step)?,
        });
    }
    bar.finish();
    let lines = measured.iter().map(large::Measured::to_csv);
    write_csv(&args.out.join("large.csv"), large::CSV_HEADER, lines)?;
    report(&measured, &args.out, args.dtype)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `measured`'s table (large.md, and on standard output) and, where it spans several
/// sizes, its figure (large.svg and large.png) into `out`.
fn report(measured: &[large::Measured], out: &std::path::Path, dtype: DType) -> Result<()> {
    let markdown = large::report(measured);
    crate::io::write_text(&out.join("large.md"), &markdown)?;
    let sizes: std::collections::BTreeSet<usize> = measured.iter().map(|m| m.len).collect();
    if let (Some(first), true) = (measured.first(), sizes.len() > 1) {
        let title = format!(
            "host {} keys in and out: {}, commit {}",
            dtype.name(),
            first.who.device,
            first.who.commit
        );
        let rows = large::rows(measured);
        let metric = bitonic_bench::Metric::EndToEnd;
        // A host without fonts still gets the data and the table.
        if let Err(why) = bitonic_bench::figure::time_vs_size(&rows, metric, &title, out, "large") {
            eprintln!("warning: no figure: {why}");
        }
    }
    println!("{markdown}");
    Ok(())
}
