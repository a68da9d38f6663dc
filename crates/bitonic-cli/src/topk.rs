//! `bitonic topk IN -k K -o OUT`: the k largest (or smallest) keys of an array, or of every row
//! of a 2-D .npy, sorted, and optionally their indices.

use crate::io::{check_npy_dtype, check_output, write_keys, Format, KeyFile};
use crate::ui::{self, named};
use anyhow::Result;
use bitonic::{with_key_type, Backend, DType, Order, Sorter};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Input: raw little-endian keys or .npy (2-D: every row); - reads standard input. A name
    /// ending in .npy must hold a valid .npy; any other input is read as .npy when it starts
    /// with NumPy's magic, as raw keys otherwise.
    input: PathBuf,
    /// How many keys to keep from each row: 0 to the row's length (0 keeps none and writes
    /// empty outputs, of shape (R, 0), as torch.topk(x, 0) does).
    #[arg(short, long)]
    k: usize,
    /// Output for the kept keys, best first: .npy when the name ends in .npy, raw otherwise;
    /// - writes raw keys to standard output. Shape (R, K) for R rows.
    #[arg(short, long)]
    output: PathBuf,
    /// Also write each kept key's index in its row (u32), in the same shape and format rules.
    #[arg(long, value_name = "FILE")]
    indices: Option<PathBuf>,
    /// Keep the k smallest keys instead of the largest.
    #[arg(long)]
    smallest: bool,
    /// Key type of raw input (a .npy header names its own; u32 when not given).
    #[arg(long, value_parser = named(&DType::ALL, DType::name))]
    dtype: Option<DType>,
    /// Treat raw or 1-D input as R equal rows (a 2-D .npy gives its own rows).
    #[arg(long, value_name = "R")]
    rows: Option<usize>,
    /// Where to select: auto (the GPU when one works and the input is large), cpu (the CPU
    /// selection; cpu-network and cpu-network-serial run it too, a network having no top-k),
    /// or cuda.
    #[arg(long, value_parser = named(&Backend::ALL, Backend::name), default_value = "auto")]
    backend: Backend,
    /// Overwrite the outputs if they exist.
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
    if let Some(indices) = &args.indices {
        check_output(indices, Some(&args.input), args.force)?;
        if indices == &args.output {
            anyhow::bail!(ui::Usage(
                "--indices and --output name the same file".into()
            ));
        }
    }
    let file = KeyFile::open(&args.input, args.dtype)?;
    check_npy_dtype(&args.output, file.dtype)?;
    let shape = crate::sort::output_shape(&file, args.rows)?;
    let (rows, row_len) = match shape[..] {
        [rows, row_len] => (rows, row_len),
        _ => (1, file.len()),
    };
    if args.k > row_len {
        anyhow::bail!("-k {} must be from 0 to the row length, {row_len}", args.k);
    }
    // The first k of a sort in this order: ascending keeps the smallest.
    let order = if args.smallest {
        Order::Ascending
    } else {
        Order::Descending
    };
    let sorter = Sorter::new().backend(args.backend).order(order);
    let out_shape = if shape.len() == 2 {
        vec![rows, args.k]
    } else {
        vec![args.k]
    };
    let started = Instant::now();
    let selected = with_key_type!(file.dtype, K => {
        if rows * args.k == 0 {
            // Nothing to select (-k 0, or no rows): empty outputs of their shape, as
            // torch.topk(x, 0) and the Python package give, without choosing a backend (so
            // that `--backend cuda` needs no GPU to select nothing).
            write_keys::<K>(&args.output, Format::from_path(&args.output), &[], &out_shape)?;
            if let Some(path) = &args.indices {
                write_keys::<u32>(path, Format::from_path(path), &[], &out_shape)?;
            }
            None
        } else {
            let keys = file.keys::<K>()?;
            let what = |w: &str| format!("{} {w} of the top-{}", rows * args.k, args.k);
            let mut values = ui::alloc_keys::<K>(rows * args.k, &what("keys"))?;
            let mut indices = ui::alloc_keys::<u32>(rows * args.k, &what("indices"))?;
            let start = Instant::now();
            let ran = sorter.topk_rows(&keys, &mut values, &mut indices, row_len, args.k)?;
            let select_time = start.elapsed();
            write_keys(&args.output, Format::from_path(&args.output), &values, &out_shape)?;
            if let Some(path) = &args.indices {
                write_keys(path, Format::from_path(path), &indices, &out_shape)?;
            }
            Some((ran, select_time))
        }
    });
    let in_rows = if rows > 1 {
        format!(" in each of {rows} rows")
    } else {
        String::new()
    };
    match selected {
        _ if args.quiet => {}
        None => {
            let why = if args.k == 0 { "-k 0" } else { "no rows" };
            let of = match shape[..] {
                [_, _] => format!("{rows} rows of {row_len}"),
                _ => row_len.to_string(),
            };
            eprintln!(
                "nothing to select ({why}) from {of} {} keys: wrote empty outputs",
                file.dtype
            )
        }
        Some((ran, select_time)) => eprintln!(
            "kept the {} {} of {} {} keys{in_rows} in {:.2} ms with {}; {:.2} ms with file input and output",
            args.k,
            if args.smallest { "smallest" } else { "largest" },
            row_len,
            file.dtype,
            ui::millis(select_time),
            ui::describe(&ran),
            ui::millis(started.elapsed()),
        ),
    }
    Ok(ExitCode::SUCCESS)
}
