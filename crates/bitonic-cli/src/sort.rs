//! `bitonic sort IN -o OUT`: read (memory-mapped), sort, write atomically.

use crate::io::{
    check_npy_dtype, check_output, header_of, write_keys, write_mapped, Format, KeyFile,
};
use crate::ui::{self, SortOptions};
use anyhow::Result;
use bitonic::plan::out_of_core::OutOfCorePlan;
use bitonic::plan::{Layout, Operation};
use bitonic::{with_key_type, DType};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Input: raw little-endian keys or .npy; - reads standard input. A name ending in .npy
    /// must hold a valid .npy; any other input is read as .npy when it starts with NumPy's
    /// magic, as raw keys otherwise.
    input: PathBuf,
    /// Output: .npy when the name ends in .npy, raw otherwise; - writes raw keys to standard
    /// output.
    #[arg(short, long)]
    output: PathBuf,
    /// Key type of raw input (a .npy header names its own; u32 when not given).
    #[arg(long, value_parser = ui::named(&DType::ALL, DType::name))]
    dtype: Option<DType>,
    #[command(flatten)]
    options: SortOptions,
    /// Sort each of R equal rows independently; a .npy output then has shape (R, N/R). A 2-D
    /// .npy input is sorted row by row and keeps its shape without this: R must then equal
    /// its number of rows.
    #[arg(long, value_name = "R")]
    rows: Option<usize>,
    /// Write the sorting permutation (u32 indices, u64 from 2^32 keys; per row with rows)
    /// instead of the sorted keys. Ties keep their original order.
    #[arg(long)]
    argsort: bool,
    /// The most GPU memory (bytes; 2^30 and 1G work too) that sorting or argsorting one whole
    /// array on the GPU may take (not rows or a pinned --algo, which sort in one GPU sort);
    /// what the GPU has free when not given. An array that does not fit sorts in runs that
    /// are merged on the GPU, as an array larger than the GPU's memory does.
    #[arg(long, value_name = "BYTES", value_parser = ui::parse_len)]
    gpu_memory: Option<usize>,
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
    args.options.check()?;
    check_output(&args.output, Some(&args.input), args.force)?;
    let progress = ui::spinner(args.quiet);
    progress.set_message(format!("reading {}", ui::input_name(&args.input)));
    let file = KeyFile::open(&args.input, args.dtype)?;
    if !args.argsort {
        check_npy_dtype(&args.output, file.dtype)?;
    }
    let shape = output_shape(&file, args.rows)?;
    let sorter = match args.gpu_memory {
        Some(bytes) => args.options.sorter().device_memory(bytes),
        None => args.options.sorter(),
    };
    // Resolve the backend before touching the output, so a refused `--backend cuda` writes
    // nothing. (Past one GPU sort's keys, the plan of one such sort: on the GPU, a whole array
    // sorts in runs of it.)
    let planned_len = file.len().min(bitonic::plan::MAX_LEN);
    let whole = sorter.plan(Operation::Sort, file.dtype, planned_len, Layout::Whole)?;
    let format = Format::from_path(&args.output);
    let output_name = ui::output_name(&args.output);
    let started = Instant::now();
    // Rows only when there are keys: a (R, 0) or (0, N) array has nothing to sort.
    let row_len = shape.get(1).copied().filter(|_| file.len() > 0);
    // A pinned --algo sorts the whole array in one sort of that algorithm.
    let tuned = args.options.algo.is_none();
    let gpu = whole.backend == bitonic::Backend::Cuda;
    let whole_on_gpu = row_len.is_none() && tuned && gpu && file.len() > 0;
    let (ran, sort_time) = if whole_on_gpu {
        let out = Output {
            path: &args.output,
            format,
            shape: &shape,
            progress: &progress,
        };
        with_key_type!(file.dtype, K => {
            // u32 indices while the keys fit them, u64 past that.
            let argsort = |index_bytes| Operation::Argsort { index_bytes };
            match (args.argsort, file.len() <= u32::MAX as usize) {
                (false, _) => sort_whole_on_gpu::<K, K>(&sorter, &file, &out, Operation::Sort,
                    |keys, sorted| sorter.sort_large_into(keys, sorted))?,
                (true, true) => sort_whole_on_gpu::<K, u32>(&sorter, &file, &out, argsort(4),
                    |keys, indices| sorter.argsort_large(keys, indices))?,
                (true, false) => sort_whole_on_gpu::<K, u64>(&sorter, &file, &out, argsort(8),
                    |keys, indices| sorter.argsort_large(keys, indices))?,
            }
        })
    } else {
        with_key_type!(file.dtype, K => {
            let mut keys = file.keys::<K>()?;
            progress.set_message(format!("sorting {} {} keys", keys.len(), file.dtype));
            // A first GPU use compiles the kernels this sort runs: before the clock starts.
            let layout = match row_len {
                Some(row_len) => Layout::Rows { row_len },
                None => Layout::Whole,
            };
            if args.argsort {
                let argsort = Operation::Argsort { index_bytes: 4 };
                let ran = sorter.prepare(argsort, file.dtype, keys.len(), layout)?;
                if ran.backend != bitonic::Backend::Cuda {
                    // The CPU argsort pairs each key's ordered word with its index.
                    let pair = std::mem::size_of::<(<K as bitonic::SortKey>::Bits, usize)>();
                    let what = format!("the argsort of {} {} keys", keys.len(), file.dtype);
                    ui::check_memory(keys.len().checked_mul(pair), &what)?;
                }
            } else {
                sorter.prepare(Operation::Sort, file.dtype, keys.len(), layout)?;
            }
            if args.argsort {
                let len = row_len.unwrap_or(keys.len()).max(1);
                let out = Output { path: &args.output, format, shape: &shape, progress: &progress };
                // u32 indices while rows fit them, u64 past that.
                let (ran, time) = if len <= u32::MAX as usize {
                    argsort_to_file::<K, u32>(&sorter, &keys, len, &out)?
                } else {
                    argsort_to_file::<K, u64>(&sorter, &keys, len, &out)?
                };
                (ui::describe(&ran), time)
            } else {
                let sort_start = Instant::now();
                let ran = match row_len {
                    Some(len) => sorter.sort_rows(&mut keys, len)?,
                    None => sorter.sort(&mut keys)?,
                };
                let sort_time = sort_start.elapsed();
                progress.set_message(format!("writing {output_name}"));
                write_keys(&args.output, format, &keys, &shape)?;
                (ui::describe(&ran), sort_time)
            }
        })
    };
    progress.finish_and_clear();
    if !args.quiet {
        eprintln!(
            "sorted {} {} keys in {:.2} ms ({}) with {ran}; {:.2} ms with file input and output",
            file.len(),
            file.dtype,
            ui::millis(sort_time),
            ui::rate(file.len(), sort_time),
            ui::millis(started.elapsed()),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One whole array on the GPU, read from the mapped input file (copied first only where the
/// file's keys are not aligned for `K`) and sorted (`operation` by `fill`:
/// `Sorter::sort_large_into`, or `Sorter::argsort_large` into indices `O`) straight into the map of the output file
/// ([`write_mapped`]: atomic as every output): in one GPU sort, or in runs merged on the GPU
/// when the keys do not fit one (more keys than one sort takes, more bytes than the GPU's
/// memory or `--gpu-memory`). Files larger than the host's memory work: the system pages both
/// maps. What ran, and the sort's time.
fn sort_whole_on_gpu<K: bitonic::SortKey, O: bitonic::SortKey>(
    sorter: &bitonic::Sorter,
    file: &KeyFile,
    out: &Output,
    operation: Operation,
    fill: impl FnOnce(&[K], &mut [O]) -> bitonic::Result<OutOfCorePlan>,
) -> Result<(String, std::time::Duration)> {
    let copied;
    let keys: &[K] = match bytemuck::try_cast_slice(file.data()) {
        Ok(mapped) => mapped,
        Err(_) => {
            copied = file.keys::<K>()?;
            &copied
        }
    };
    // A first GPU use compiles the kernels of one run's sort: before the clock starts.
    let run_len = keys.len().min(bitonic::plan::MAX_LEN);
    let one_sort = sorter.prepare(operation, file.dtype, run_len, Layout::Whole)?;
    let doing = match operation {
        Operation::Sort => "sorting",
        _ => "argsorting",
    };
    let progress = out.progress;
    progress.set_message(format!("{doing} {} {} keys", keys.len(), file.dtype));
    let header = header_of(out.format, O::DTYPE, out.shape);
    let mut sorted = None;
    let bytes = keys.len() * std::mem::size_of::<O>();
    // The sorted keys (or the indices) go straight into the output file's map.
    write_mapped(out.path, &header, bytes, |bytes| {
        let to: &mut [O] = bytemuck::try_cast_slice_mut(bytes)
            .map_err(|e| anyhow::anyhow!("the output's words are not aligned: {e}"))?;
        let sort_start = Instant::now();
        let plan = fill(keys, to)?;
        sorted = Some((plan, sort_start.elapsed()));
        progress.set_message(format!("writing {}", ui::output_name(out.path)));
        Ok(())
    })?;
    let (plan, sort_time) = sorted.expect("the fill ran");
    let described = match plan.runs.len() {
        1 => ui::describe(&one_sort),
        runs => format!(
            "cuda ({} in {runs} runs, merged {}) on {}",
            one_sort.strategy,
            merge_name(plan.merge),
            ui::gpu_name()
        ),
    };
    Ok((described, sort_time))
}

/// How the runs of an out-of-core sort merged, in words.
fn merge_name(merge: bitonic::plan::out_of_core::Merge) -> &'static str {
    use bitonic::plan::out_of_core::Merge;
    match merge {
        Merge::Resident { .. } => "with all of them on the GPU",
        Merge::ResidentRun { .. } => "with the last one on the GPU",
        Merge::Blocks { .. } => "in blocks",
        _ => "on the GPU",
    }
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
) -> Result<(bitonic::Plan, std::time::Duration)> {
    let what = format!("{} argsort indices", keys.len());
    let mut indices = crate::ui::alloc_keys::<I>(keys.len(), &what)?;
    let started = Instant::now();
    let ran = sorter.argsort_rows(keys, &mut indices, row_len)?;
    let sort_time = started.elapsed();
    out.progress
        .set_message(format!("writing {}", crate::ui::output_name(out.path)));
    write_keys(out.path, out.format, &indices, out.shape)?;
    Ok((ran, sort_time))
}

/// The shape of the output and of the rows sorted: a 2-D .npy input keeps its own (`--rows`,
/// when given, must agree with it); another input is `[len]`, or `[R, len / R]` with
/// `--rows R`.
pub fn output_shape(file: &KeyFile, rows: Option<usize>) -> Result<Vec<usize>> {
    let len = file.len();
    match (rows, &file.shape[..]) {
        (Some(0), _) => anyhow::bail!(ui::Usage("--rows must be at least 1".into())),
        (Some(r), &[have, row_len]) if r != have => anyhow::bail!(
            "--rows {r} disagrees with {}, a 2-D .npy of shape ({have}, {row_len}) whose rows \
             are sorted as they are: leave --rows out, or give --rows {have}",
            ui::input_name(&file.path)
        ),
        (Some(r), &[_]) if len % r != 0 => {
            anyhow::bail!("{len} keys do not split into {r} equal rows")
        }
        (Some(r), &[_]) => Ok(vec![r, len / r]),
        _ => Ok(file.shape.clone()),
    }
}
