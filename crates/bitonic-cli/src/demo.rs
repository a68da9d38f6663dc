//! `bitonic demo`: the thing to run first on a new machine.

use crate::ui::{self, SortOptions};
use anyhow::{bail, Result};
use bitonic::plan::{Layout, Operation};
use bitonic::{with_key_type, Backend, DType};
use bitonic_bench::gen::{fill, first_unsorted, Pattern};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Number of keys: 1000, 2^20, 16M or 1G (K, M and G are powers of 1024).
    #[arg(short = 'n', long, value_parser = ui::parse_len, default_value = "2^24")]
    len: usize,
    /// Key type.
    #[arg(long, value_parser = ui::named(&DType::ALL, DType::name), default_value = "u32")]
    dtype: DType,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    options: SortOptions,
}

pub fn run(args: Args) -> Result<ExitCode> {
    args.options.check()?;
    let sorter = args.options.sorter();
    // What runs, decided before any work: a GPU asked for and missing is an error now.
    let planned = sorter
        .plan(Operation::Sort, args.dtype, args.len, Layout::Whole)
        .map_err(|e| match bitonic::Gpu::get() {
            Err(why) => {
                let instead = if args.options.backend == Backend::Cuda {
                    "choose --backend auto or cpu to sort on the CPU"
                } else {
                    "leave out --algo to sort on the CPU"
                };
                let mut message = e.to_string();
                if !message.contains(&why.to_string()) {
                    message = format!("{message} ({why})");
                }
                anyhow::anyhow!(
                    "{message}; {instead}, or run it where an NVIDIA GPU, its driver and NVRTC are"
                )
            }
            Ok(_) => e.into(),
        })?;
    if planned.backend != Backend::Cuda && args.options.backend == Backend::Auto {
        if let Err(why) = bitonic::Gpu::get() {
            eprintln!("no GPU here ({why}); the CPU sorts instead");
        }
    }
    with_key_type!(args.dtype, K => {
        println!("generating {} random {} keys (seed {})", args.len, args.dtype, args.seed);
        let what = format!("{} {} keys", args.len, args.dtype);
        let mut keys = ui::alloc_keys::<K>(args.len, &what)?;
        fill(&mut keys, Pattern::Random, args.seed);
        // A first GPU use compiles the kernels this sort runs (once a machine): before the
        // clock starts.
        sorter.prepare(Operation::Sort, args.dtype, keys.len(), Layout::Whole)?;
        let started = Instant::now();
        let ran = sorter.sort(&mut keys)?;
        let took = started.elapsed();
        if let Some(at) = first_unsorted(&keys, args.options.order()) {
            bail!("the result is not sorted at index {at}: this is a bug, please report it");
        }
        println!("sorted and verified on {}", ui::describe(&ran));
        println!("{:.2} ms, {} (host slice in, sorted host slice out)", ui::millis(took), ui::rate(args.len, took));
    });
    Ok(ExitCode::SUCCESS)
}
