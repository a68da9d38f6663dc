//! `bitonic bench-sample`: the sampling kernel's time a call (issue 52), the same cells as
//! bench/peers/sample_python_calls.py, for A/B runs of the sampling policy.

use crate::bench::{need_gpu, write_csv, PolicyArg, StepBar};
use anyhow::{Context, Result};
use bitonic::DType;
use bitonic_bench::{measure, sample};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Rows of logits a call (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = sample::BATCHES)]
    batches: Vec<usize>,
    /// Logits a row (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = sample::VOCABS)]
    vocabs: Vec<usize>,
    /// Logit types (comma-separated): f32, bf16.
    #[arg(long, value_delimiter = ',', default_value = "f32",
          value_parser = crate::ui::named(&[DType::F32, DType::BF16], DType::name))]
    dtypes: Vec<DType>,
    /// Settings, separated by ';', each as name=value pairs separated by spaces (top_k,
    /// top_p, min_p, temperature); default: the three.
    #[arg(long, value_delimiter = ';')]
    filters: Vec<String>,
    /// Calls back to back in one timing (as a decode loop makes them).
    #[arg(long, default_value_t = 50)]
    calls: u32,
    /// Timed repeats (after one warm-up), each on fresh logits; the median is reported.
    #[arg(long, default_value_t = 7)]
    repeats: u32,
    /// Seed of the random logits.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for sample.csv and sample.md.
    #[arg(short, long, default_value = "bench-results")]
    out: PathBuf,
    #[command(flatten)]
    policy: PolicyArg,
}

/// `bitonic bench-sample`.
pub fn run(args: Args) -> Result<ExitCode> {
    let filters: Vec<String> = if args.filters.is_empty() {
        sample::FILTERS.iter().map(|f| f.to_string()).collect()
    } else {
        args.filters.clone()
    };
    for f in &filters {
        sample::filters_of(f)?; // a bad name fails before the GPU work
    }
    for &rows in &args.batches {
        for &vocab in &args.vocabs {
            crate::ui::check_memory(
                rows.checked_mul(vocab).and_then(|n| n.checked_mul(8)),
                &format!("bench-sample at {rows}x{vocab} logits"),
            )?;
        }
    }
    need_gpu(
        "bench-sample",
        "it times the GPU's sampling kernel and has no CPU mode: run it on a GPU host",
    )?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let who = measure::Provenance::here();
    eprintln!(
        "benchmarking sampling on {} ({}), commit {}",
        who.device, who.driver, who.commit
    );
    let cells = sample::Cells {
        batches: &args.batches,
        vocabs: &args.vocabs,
        dtypes: &args.dtypes,
        filters: &filters,
        calls: args.calls,
        repeats: args.repeats.max(1),
        seed: args.seed,
    };
    let count = args.batches.len() * args.vocabs.len() * args.dtypes.len() * filters.len();
    let bar = StepBar::new(count);
    let measured = sample::run(&cells, &args.policy.policy, &who, &|what| bar.step(what))?;
    bar.finish();
    let lines = measured.iter().map(sample::Measured::to_csv);
    write_csv(&args.out.join("sample.csv"), sample::CSV_HEADER, lines)?;
    let markdown = sample::report(&measured);
    crate::io::write_text(&args.out.join("sample.md"), &markdown)?;
    println!("{markdown}");
    Ok(ExitCode::SUCCESS)
}
