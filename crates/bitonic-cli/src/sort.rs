//! `bitonic sort IN -o OUT`: read (memory-mapped), sort, write atomically.

use crate::io::{check_output, write_keys, Format, KeyFile};
use crate::ui::{self, SortOptions};
use anyhow::Result;
use bitonic::dispatch::Layout;
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
    #[arg(long, value_parser = ui::named(&DType::ALL, DType::name))]
    dtype: Option<DType>,
    #[command(flatten)]
    options: SortOptions,
    /// Sort each of R equal rows independently (a 2-D .npy input is sorted along its last axis
    /// without this).
    #[arg(long, value_name = "R")]
    rows: Option<usize>,
    /// Write the sorting permutation (u32 indices, u64 past 2^32 keys; per row with rows)
    /// instead of the sorted keys. Ties keep their original order.
    #[arg(long)]
    argsort: bool,
    /// Overwrite OUTPUT if it exists, even when it is the input.
    #[arg(long)]
    force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.quiet {
        ui::quiet();
    }
    check_output(&args.output, Some(&args.input), args.force)?;
    let progress = ui::spinner(args.quiet);
    progress.set_message(format!("reading {}", args.input.display()));
    let file = KeyFile::open(&args.input, args.dtype)?;
    let sorter = args.options.sorter();
    // Resolve the backend before touching the output, so a refused `--backend cuda` writes nothing.
    sorter.what_runs(file.len())?;
    let format = Format::from_path(&args.output);
    let shape = output_shape(&file, args.rows)?;
    let started = Instant::now();
    let (ran, sort_time) = with_key_type!(file.dtype, K => {
        let mut keys = file.keys::<K>();
        progress.set_message(format!("sorting {} {} keys", keys.len(), file.dtype));
        let row_len = shape.get(1).copied();
        // A first GPU use compiles the kernels this sort runs: before the clock starts.
        let layout = match row_len {
            Some(row_len) => Layout::Rows { row_len },
            None => Layout::Whole,
        };
        if args.argsort {
            sorter.prepare::<K, u32>(keys.len(), layout)?;
        } else {
            sorter.prepare::<K, ()>(keys.len(), layout)?;
        }
        let sort_start = Instant::now();
        if args.argsort {
            let len = row_len.unwrap_or(keys.len()).max(1);
            let out = Output { path: &args.output, format, shape: &shape, progress: &progress };
            // u32 indices while rows fit them, u64 past that.
            if len <= u32::MAX as usize {
                argsort_to_file::<K, u32>(&sorter, &keys, len, &out)?
            } else {
                argsort_to_file::<K, u64>(&sorter, &keys, len, &out)?
            }
        } else {
            let ran = match row_len {
                Some(len) => sorter.sort_rows(&mut keys, len)?,
                None => sorter.sort(&mut keys)?,
            };
            let sort_time = sort_start.elapsed();
            progress.set_message(format!("writing {}", args.output.display()));
            write_keys(&args.output, format, &keys, &shape)?;
            (ran, sort_time)
        }
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

/// Where an argsort's indices go.
struct Output<'a> {
    path: &'a std::path::Path,
    format: Format,
    shape: &'a [usize],
    progress: &'a indicatif::ProgressBar,
}

/// Each row's stable argsort of `keys` as indices of type `I`, written to `out`; what ran and
/// how long the argsort took.
fn argsort_to_file<K: bitonic::SortKey, I: bitonic::SortIndex + bitonic::SortKey + Default>(
    sorter: &bitonic::Sorter,
    keys: &[K],
    row_len: usize,
    out: &Output,
) -> Result<(bitonic::Ran, std::time::Duration)> {
    let started = Instant::now();
    let mut indices = vec![I::default(); keys.len()];
    let ran = sorter.argsort_rows(keys, row_len, &mut indices)?;
    let sort_time = started.elapsed();
    out.progress
        .set_message(format!("writing {}", out.path.display()));
    write_keys(out.path, out.format, &indices, out.shape)?;
    Ok((ran, sort_time))
}

/// `[len]` for one sort, `[rows, keys per row]` for independent rows: from `--rows`, else from a
/// 2-D .npy input.
fn output_shape(file: &KeyFile, rows: Option<usize>) -> Result<Vec<usize>> {
    let len = file.len();
    match rows {
        Some(0) => anyhow::bail!("--rows must be at least 1"),
        Some(r) if len % r != 0 => anyhow::bail!("{len} keys do not split into {r} equal rows"),
        Some(r) => Ok(vec![r, len / r]),
        None => Ok(file.shape.clone()),
    }
}
