//! `bitonic gen OUTPUT -n N`: seeded test and benchmark data.

use crate::io::{check_npy_dtype, check_output, write_keys, Format};
use crate::ui;
use anyhow::Result;
use bitonic::{with_key_type, DType};
use bitonic_bench::gen::{fill, Pattern};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("out").required(true).args(["output", "output_option"]))]
pub struct Args {
    /// Output: .npy when the name ends in .npy, raw little-endian keys otherwise; - writes
    /// raw keys to standard output. The same as -o OUTPUT.
    output: Option<PathBuf>,
    /// Output, as the positional OUTPUT (as sort takes it).
    #[arg(short = 'o', long = "output", value_name = "OUTPUT")]
    output_option: Option<PathBuf>,
    /// Number of keys: 1000, 2^20, 16M or 1G (K, M and G are powers of 1024).
    #[arg(short = 'n', long, value_parser = ui::parse_len)]
    len: usize,
    /// Key type.
    #[arg(long, value_parser = ui::named(&DType::ALL, DType::name), default_value = "u32")]
    dtype: DType,
    /// How the keys are ordered: random (integers over their whole range, floats in [-1, 1)),
    /// sorted (ascending), reversed (descending), few-distinct (five values) or all-equal.
    #[arg(long, value_parser = ui::named(&Pattern::ALL, Pattern::name), default_value = "random")]
    pattern: Pattern,
    /// Seed of the random keys: the same seed writes the same file.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Overwrite OUTPUT if it exists.
    #[arg(long)]
    force: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let output = args
        .output
        .or(args.output_option)
        .expect("clap requires one output");
    check_output(&output, None, args.force)?;
    check_npy_dtype(&output, args.dtype)?;
    let format = Format::from_path(&output);
    let bytes = with_key_type!(args.dtype, K => {
        let what = format!("{} {} keys", args.len, args.dtype);
        let mut keys = ui::alloc_keys::<K>(args.len, &what)?;
        fill(&mut keys, args.pattern, args.seed);
        write_keys(&output, format, &keys, &[keys.len()])?;
        std::mem::size_of_val(keys.as_slice())
    });
    eprintln!(
        "wrote {} {} {} keys ({} of keys) to {}",
        args.len,
        args.pattern.name(),
        args.dtype,
        ui::human_bytes(bytes as u64),
        ui::output_name(&output)
    );
    Ok(ExitCode::SUCCESS)
}
