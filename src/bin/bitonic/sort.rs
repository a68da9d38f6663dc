//! `bitonic sort IN -o OUT`: read (memory-mapped), sort, write atomically.

use crate::ui::{self, SortOptions};
use anyhow::Result;
use bitonic::io::{check_output, write_keys, Format, KeyFile};
use bitonic::{with_key_type, DType};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Input: raw little-endian keys or .npy; `-` reads raw keys from stdin.
    input: PathBuf,
    /// Output: .npy when the name ends in .npy, raw otherwise; `-` writes raw keys to stdout.
    #[arg(short, long)]
    output: PathBuf,
    /// Key type of raw input (a .npy header names its own; u32 when not given).
    #[arg(long, value_enum)]
    dtype: Option<DType>,
    #[command(flatten)]
    options: SortOptions,
    /// Overwrite OUTPUT if it exists, even when it is the input.
    #[arg(long)]
    force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    check_output(&args.output, Some(&args.input), args.force)?;
    let progress = ui::spinner(args.quiet);
    progress.set_message(format!("reading {}", args.input.display()));
    let file = KeyFile::open(&args.input, args.dtype)?;
    // Resolve the backend before touching the output, so a refused `--backend cuda` writes nothing.
    args.options.sorter().resolve_backend(file.len())?;
    let format = Format::from_path(&args.output);
    let started = Instant::now();
    let (ran, sort_time) = with_key_type!(file.dtype, K => {
        let mut keys = file.keys::<K>();
        progress.set_message(format!("sorting {} {} keys", keys.len(), file.dtype));
        let sort_start = Instant::now();
        let ran = args.options.sorter().sort(&mut keys)?;
        let sort_time = sort_start.elapsed();
        progress.set_message(format!("writing {}", args.output.display()));
        write_keys(&args.output, format, &keys)?;
        (ran, sort_time)
    });
    progress.finish_and_clear();
    if !args.quiet {
        eprintln!(
            "sorted {} {} keys in {:.2} ms ({}) with {}; {:.2} ms with file input and output",
            file.len(),
            file.dtype,
            ui::millis(sort_time),
            ui::rate(file.len(), sort_time),
            ui::describe(&ran),
            ui::millis(started.elapsed()),
        );
    }
    Ok(ExitCode::SUCCESS)
}
