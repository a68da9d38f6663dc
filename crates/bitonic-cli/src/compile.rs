//! `bitonic compile`: every GPU kernel compiled ahead of time into the kernel cache (for
//! deployment images), with NVRTC's time per module; or, with `--pack`, into one file of
//! kernels for several architectures that a program hands the library at start-up
//! (`bitonic::cuda::use_pack`).

use anyhow::{bail, Context, Result};
use bitonic::cuda::{self, Gpu, Origin};
use bitonic::Policy;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Architecture to compile for, such as sm_90 (default: this machine's GPU). Needs NVRTC,
    /// not a GPU.
    #[arg(long)]
    arch: Option<String>,
    /// Compile the modules one after another, not side by side: each module's time alone.
    #[arg(long)]
    one_at_a_time: bool,
    /// Also write the table as CSV to this file.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write every kernel, compiled for each architecture that --arch lists (comma-separated,
    /// such as sm_80,sm_90), to this file as a kernel pack, which a program hands the library
    /// at start-up (bitonic::cuda::use_pack).
    #[arg(long, value_name = "FILE", requires = "arch")]
    pack: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if let (Some(path), Some(archs)) = (&args.pack, &args.arch) {
        return write_pack(path, archs);
    }
    let (arch, policy) = match (&args.arch, Gpu::get()) {
        (Some(arch), _) => (arch.clone(), policy_of(arch)?),
        (None, Ok(gpu)) => (gpu.info().arch(), gpu.policy()),
        (None, Err(why)) => {
            bail!("no GPU to compile for ({why}); name the architecture, such as --arch sm_90")
        }
    };
    cuda::nvrtc_version().context("compiling the kernels needs NVRTC")?;
    let cache = cuda::cache_dir();
    match &cache {
        Some(dir) => eprintln!(
            "compiling every GPU kernel for {arch} into {}",
            dir.display()
        ),
        None => eprintln!("compiling every GPU kernel for {arch} (the kernel cache is off)"),
    }
    let started = Instant::now();
    let modules = if args.one_at_a_time {
        let compile = |m: &&cuda::KernelModule| cuda::compile(m, &arch, &policy);
        cuda::kernel_modules()
            .iter()
            .map(compile)
            .collect::<bitonic::Result<Vec<_>>>()?
    } else {
        cuda::compile_all(cuda::kernel_modules(), &arch, &policy)?
    };
    let wall = started.elapsed().as_secs_f64();
    let mut csv = String::from("module,arch,origin,seconds,cubin_bytes\n");
    println!(
        "{:<24} {:>10} {:>10} {:>12}",
        "module", "origin", "seconds", "CUBIN KiB"
    );
    for m in &modules {
        let origin = match m.origin {
            Origin::Compiled => "compiled",
            Origin::DiskCache => "cache",
            Origin::Process => "process",
            Origin::Precompiled => "pack",
            _ => "other",
        };
        let kib = m.cubin.len() / 1024;
        println!("{:<24} {origin:>10} {:>10.2} {kib:>12}", m.name, m.seconds);
        writeln!(
            csv,
            "{},{arch},{origin},{:.3},{}",
            m.name,
            m.seconds,
            m.cubin.len()
        )?;
    }
    let mode = if args.one_at_a_time {
        "one at a time"
    } else {
        "side by side"
    };
    println!(
        "{} modules in {wall:.2} s of wall time ({mode})",
        modules.len()
    );
    if let Some(path) = &args.csv {
        crate::io::write_text(path, &csv)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bitonic compile --arch sm_80,sm_90 --pack FILE`.
fn write_pack(path: &std::path::Path, archs: &str) -> Result<ExitCode> {
    let archs: Vec<&str> = archs.split(',').map(str::trim).collect();
    for arch in &archs {
        policy_of(arch)?;
    }
    cuda::nvrtc_version().context("compiling the kernels needs NVRTC")?;
    eprintln!(
        "compiling every GPU kernel for {} into the pack {}",
        archs.join(", "),
        path.display()
    );
    let started = Instant::now();
    let pack = cuda::build_pack(&archs)?;
    crate::io::write_atomically(path, |out| out.write_all(&pack))?;
    println!(
        "{} kernel modules for {} in {:.1} MiB, {:.1} s",
        cuda::kernel_modules().len() * archs.len(),
        archs.join(", "),
        pack.len() as f64 / (1u64 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// The policy of an `sm_XY` architecture.
fn policy_of(arch: &str) -> Result<Policy> {
    Policy::for_arch(arch).ok_or_else(|| {
        crate::ui::Usage(format!("{arch:?} is not an architecture such as sm_90")).into()
    })
}
