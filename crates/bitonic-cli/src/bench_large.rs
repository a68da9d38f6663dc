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
    /// Keys (e.g. 2^29).
    #[arg(long, value_parser = crate::ui::parse_len, default_value = "2^29")]
    len: usize,
    /// Key type: u32 or u64.
    #[arg(long, default_value = "u32",
          value_parser = crate::ui::named(&[DType::U32, DType::U64], DType::name))]
    dtype: DType,
    /// Device memory budgets (bytes, comma-separated) of extra out-of-core cases, which force
    /// more runs than the device's memory would.
    #[arg(long, value_delimiter = ',', value_parser = crate::ui::parse_len)]
    budgets: Vec<usize>,
    /// Also time `par_sort_unstable` on every host core.
    #[arg(long)]
    rayon: bool,
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
}

/// `bitonic bench-large`.
pub fn run(args: Args) -> Result<ExitCode> {
    crate::ui::check_memory(
        args.len.checked_mul(args.dtype.size()),
        &format!("bench-large of {} keys", args.len),
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
        "benchmarking {} {} keys through {} ({}), commit {}",
        args.len,
        args.dtype.name(),
        who.device,
        who.driver,
        who.commit
    );
    let cells = large::Cells {
        len: args.len,
        budgets: &args.budgets,
        rayon: args.rayon,
        repeats: args.repeats.max(1),
        seed: args.seed,
    };
    let bar = StepBar::new(3 + args.budgets.len() + args.rayon as usize);
    let step = |what: &str| bar.step(what);
    let measured = match args.dtype {
        DType::U64 => large::run::<u64>(&cells, &policy, &who, &step)?,
        _ => large::run::<u32>(&cells, &policy, &who, &step)?,
    };
    bar.finish();
    let lines = measured.iter().map(large::Measured::to_csv);
    write_csv(&args.out.join("large.csv"), large::CSV_HEADER, lines)?;
    let markdown = large::report(&measured);
    crate::io::write_text(&args.out.join("large.md"), &markdown)?;
    println!("{markdown}");
    Ok(ExitCode::SUCCESS)
}
