//! `bitonic verify FILE`: is it sorted, and is it a permutation of another file?

use crate::io::KeyFile;
use anyhow::{bail, Result};
use bitonic::key::cmp_keys;
use bitonic::{with_key_type, DType, Order};
use bitonic_bench::gen::first_unsorted;
use rayon::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The file to check (raw or .npy).
    file: PathBuf,
    /// Key type of raw input.
    #[arg(long, value_parser = crate::ui::named(&DType::ALL, DType::name))]
    dtype: Option<DType>,
    /// Check for descending order.
    #[arg(long)]
    desc: bool,
    /// Also check that FILE holds exactly the keys of this file (in any order).
    #[arg(long, value_name = "ORIGINAL")]
    permutation_of: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let file = KeyFile::open(&args.file, args.dtype)?;
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
                    "{} holds {} keys but {} holds {}",
                    path.display(),
                    other.dtype,
                    args.file.display(),
                    file.dtype
                );
            }
            Some(other)
        }
        None => None,
    };
    let verdict = with_key_type!(file.dtype, K => {
        let keys = file.keys::<K>();
        if let Some(at) = first_unsorted(&keys, order) {
            Some(format!("not sorted: key {at} ({:?}) and key {} ({:?}) are out of order", keys[at], at + 1, keys[at + 1]))
        } else if let Some(original) = &original {
            let mut want = original.keys::<K>();
            want.par_sort_unstable_by(cmp_keys);
            if order == Order::Descending {
                want.reverse();
            }
            let same = want.len() == keys.len()
                && bytemuck::cast_slice::<K, u8>(&want) == bytemuck::cast_slice::<K, u8>(&keys);
            (!same).then(|| format!("sorted, but not a permutation of {}", original.path.display()))
        } else {
            None
        }
    });
    match verdict {
        None => {
            println!(
                "{}: {} {} keys, sorted{}",
                args.file.display(),
                file.len(),
                file.dtype,
                if original.is_some() {
                    ", a permutation of the original"
                } else {
                    ""
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(why) => {
            println!("{}: {why}", args.file.display());
            Ok(ExitCode::from(1))
        }
    }
}
