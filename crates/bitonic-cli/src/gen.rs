//! `bitonic gen OUT --len N`: seeded test and benchmark data.

use crate::io::{check_output, write_keys, Format};
use crate::ui;
use anyhow::Result;
use bitonic::{with_key_type, DType};
use bitonic_bench::gen::{generate, Pattern};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Output: .npy when the name ends in .npy, raw otherwise; `-` for stdout.
    output: PathBuf,
    /// Number of keys: 1000, 2^20, 16M …
    #[arg(short = 'n', long, value_parser = ui::parse_len)]
    len: usize,
    /// Key type.
    #[arg(long, value_parser = crate::ui::named(&DType::ALL, DType::name), default_value = "u32")]
    dtype: DType,
    /// How the keys are ordered.
    #[arg(long, value_parser = crate::ui::named(&Pattern::ALL, Pattern::name), default_value = "random")]
    pattern: Pattern,
    /// Seed of the random keys: the same seed writes the same file.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Overwrite OUTPUT if it exists.
    #[arg(long)]
    force: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    check_output(&args.output, None, args.force)?;
    let format = Format::from_path(&args.output);
    with_key_type!(args.dtype, K => {
        let keys = generate::<K>(args.len, args.pattern, args.seed);
        write_keys(&args.output, format, &keys, &[keys.len()])?;
    });
    if args.output.as_os_str() != "-" {
        eprintln!(
            "wrote {} {} {} keys to {}",
            args.len,
            args.pattern.name(),
            args.dtype,
            args.output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
