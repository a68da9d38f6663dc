//! `bitonic verify FILE`: is it sorted (each row of a 2-D .npy, or of `--rows R`), and is it
//! a permutation of another file (row by row)?

use crate::io::{Format, KeyFile};
use crate::ui;
use anyhow::{bail, Result};
use bitonic::key::cmp_keys;
use bitonic::{with_key_type, DType, Order};
use bitonic_bench::gen::first_unsorted;
use rayon::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The file to check (raw or .npy); - reads standard input. A name ending in .npy must
    /// hold a valid .npy; any other input is read as .npy when it starts with NumPy's magic,
    /// as raw keys otherwise.
    file: PathBuf,
    /// Key type of raw input (a .npy header names its own; u32 when not given).
    #[arg(long, value_parser = ui::named(&DType::ALL, DType::name))]
    dtype: Option<DType>,
    /// Check for descending order.
    #[arg(long)]
    desc: bool,
    /// Check each of R equal rows on its own, as sort --rows R sorted them. A 2-D .npy is
    /// checked row by row without this: R must then equal its number of rows.
    #[arg(long, value_name = "R")]
    rows: Option<usize>,
    /// Also check that FILE holds exactly the keys of this file (in any order; row by row
    /// when FILE has rows).
    #[arg(long, value_name = "ORIGINAL")]
    permutation_of: Option<PathBuf>,
}

/// What verify found wrong.
enum Problem {
    NotSorted(String),
    NotAPermutation(String),
}

/// A raw file has no type of its own and is read as u32 without --dtype: keys of another
/// type (floats, signed integers, wider keys) then look unsorted. Said on stderr beside the
/// verdict, with the option that fixes it.
fn dtype_hint(name: &str) -> String {
    let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    format!(
        "hint: {name} is a raw file, so its keys were read as u32, the default; if it holds \
         another type, name it with --dtype ({})",
        names.join(", ")
    )
}

pub fn run(args: Args) -> Result<ExitCode> {
    let file = KeyFile::open(&args.file, args.dtype)?;
    let name = ui::input_name(&args.file);
    let shape = crate::sort::output_shape(&file, args.rows)?;
    // Rows of at least one key: a (R, 0) array has nothing to check.
    let row_len = shape.get(1).copied().unwrap_or(file.len()).max(1);
    let order = if args.desc {
        Order::Descending
    } else {
        Order::Ascending
    };
    let original = match &args.permutation_of {
        Some(path) => {
            let other = KeyFile::open(path, Some(file.dtype).filter(|_| args.dtype.is_some()))?;
            if other.dtype != file.dtype {
                bail!(
                    "{} holds {} keys but {name} holds {}",
                    ui::input_name(path),
                    other.dtype,
                    file.dtype
                );
            }
            Some(other)
        }
        None => None,
    };
    let verdict = with_key_type!(file.dtype, K => {
        let keys = file.keys::<K>()?;
        let unsorted = keys
            .chunks(row_len)
            .enumerate()
            .find_map(|(row, keys)| first_unsorted(keys, order).map(|at| (row, at)));
        if let Some((row, at)) = unsorted {
            let (a, b) = (row * row_len + at, row * row_len + at + 1);
            let row = if shape.len() == 2 { format!("row {row}: ") } else { String::new() };
            Some(Problem::NotSorted(format!("not sorted: {row}key {a} ({:?}) and key {b} ({:?}) are out of order", keys[a], keys[b])))
        } else if let Some(original) = &original {
            let mut want = original.keys::<K>()?;
            let same = want.len() == keys.len() && {
                if want.len() <= row_len {
                    want.par_sort_unstable_by(cmp_keys);
                } else {
                    want.par_chunks_mut(row_len).for_each(|row| row.sort_unstable_by(cmp_keys));
                }
                if order == Order::Descending {
                    want.par_chunks_mut(row_len).for_each(|row| row.reverse());
                }
                bytemuck::cast_slice::<K, u8>(&want) == bytemuck::cast_slice::<K, u8>(&keys)
            };
            let per_row = if shape.len() == 2 { " row by row" } else { "" };
            (!same).then(|| Problem::NotAPermutation(format!("sorted, but not a permutation of {}{per_row}", ui::input_name(&original.path))))
        } else {
            None
        }
    });
    let what = match shape[..] {
        [rows, len] => format!("{rows} rows of {len} {} keys, each row sorted", file.dtype),
        _ => format!("{} {} keys, sorted", file.len(), file.dtype),
    };
    match verdict {
        None => {
            println!(
                "{name}: {what}{}",
                if original.is_some() {
                    ", a permutation of the original"
                } else {
                    ""
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Problem::NotAPermutation(why)) => {
            println!("{name}: {why}");
            Ok(ExitCode::from(1))
        }
        Some(Problem::NotSorted(why)) => {
            println!("{name}: {why}");
            if file.format == Format::Raw && args.dtype.is_none() {
                eprintln!("{}", dtype_hint(&name));
            }
            Ok(ExitCode::from(1))
        }
    }
}
