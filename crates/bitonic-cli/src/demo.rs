//! `bitonic demo`: the thing to run first on a new machine.

use crate::ui::{self, SortOptions};
use anyhow::{bail, Result};
use bitonic::dispatch::Layout;
use bitonic::{with_key_type, DType};
use bitonic_bench::gen::{first_unsorted, generate, Pattern};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Number of keys: 1000, 2^20, 16M …
    #[arg(short = 'n', long, value_parser = ui::parse_len, default_value = "2^24")]
    len: usize,
    #[arg(long, value_parser = crate::ui::named(&DType::ALL, DType::name), default_value = "u32")]
    dtype: DType,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    options: SortOptions,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let sorter = args.options.sorter();
    if let Err(why) = bitonic::cuda::Gpu::get() {
        eprintln!("no GPU here ({why}); the CPU backend sorts instead");
    }
    with_key_type!(args.dtype, K => {
        println!("generating {} random {} keys (seed {})", args.len, args.dtype, args.seed);
        let mut keys = generate::<K>(args.len, Pattern::Random, args.seed);
        // A first GPU use compiles the kernels this sort runs (once a machine): before the
        // clock starts.
        sorter.prepare::<K, ()>(keys.len(), Layout::Whole)?;
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
