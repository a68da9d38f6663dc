//! `bitonic info`: what this machine can sort with.

use anyhow::Result;
use bitonic::cuda::{self, Gpu};
use std::process::ExitCode;

pub fn run() -> Result<ExitCode> {
    println!("bitonic {}", env!("CARGO_PKG_VERSION"));
    println!("cpu: {} threads (rayon)", rayon::current_num_threads());
    match cuda::nvrtc_version() {
        Ok((major, minor)) => println!("nvrtc: {major}.{minor}"),
        Err(why) => println!("nvrtc: unavailable ({why})"),
    }
    match Gpu::get() {
        Ok(gpu) => {
            let i = gpu.info();
            println!("cuda: available");
            println!("  device {}: {}", i.ordinal, i.name);
            println!(
                "  compute capability {}.{} ({})",
                i.compute_capability.0,
                i.compute_capability.1,
                i.arch()
            );
            println!(
                "  {} multiprocessors, {:.1} GiB memory, {} MiB L2",
                i.multiprocessors,
                i.total_memory as f64 / (1u64 << 30) as f64,
                i.l2_bytes >> 20
            );
            println!(
                "  shared memory per block: {} KiB ({} KiB opt-in); {} threads per block",
                i.shared_per_block >> 10,
                i.shared_per_block_optin >> 10,
                i.max_threads_per_block
            );
            println!(
                "  driver CUDA version {}.{}",
                i.driver_version.0, i.driver_version.1
            );
        }
        Err(why) => println!("cuda: unavailable: {why}"),
    }
    let policy = match Gpu::get() {
        Ok(gpu) => gpu.policy(),
        Err(_) => bitonic::Policy::HOPPER,
    };
    let defines: Vec<String> = cuda::kernel_defines(&policy)
        .iter()
        .map(|(name, value)| format!("-D{name}={value}"))
        .collect();
    println!("kernel defines: {}", defines.join(" "));
    Ok(ExitCode::SUCCESS)
}
