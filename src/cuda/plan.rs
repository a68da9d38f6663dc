//! Host plans: for each version, which kernels run, with which launch shapes, in what order.
//!
//! V0 launches one kernel per network step. V1–V5 share one plan shape and differ only in
//! their kernels (see `kernels/v*.cu`) and in how many keys a thread owns:
//!
//! 1. `block_sort`: every block sorts its chunk of `chunk` keys (stages 2 … chunk);
//! 2. for each larger stage: its steps of stride ≥ `chunk` as single global launches, then
//!    `block_merge`, which runs the stage's remaining steps (stride < chunk) inside each chunk.

use super::kernels::{self, KernelModule};
use super::{kernel_name, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::key::Bits;
use crate::network::{padded_len, stage_sizes, stage_steps, steps};
use crate::Version;
use cudarc::driver::{CudaFunction, CudaViewMut, LaunchConfig, PushKernelArg};

pub(super) fn config(blocks: u32, threads: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// How one of V1–V5 uses the common blocked plan.
struct Blocked {
    module: &'static KernelModule,
    prefix: &'static str,
    /// 1 (V1–V3: a thread per key) or 2 (V4, V5: a thread per compare-exchange).
    keys_per_thread: u32,
    /// Whether the block kernels keep their chunk in shared memory.
    shared_tile: bool,
}

const V1: Blocked = Blocked {
    module: &kernels::V1,
    prefix: "v1",
    keys_per_thread: 1,
    shared_tile: false,
};
const V2: Blocked = Blocked {
    module: &kernels::V2,
    prefix: "v2",
    keys_per_thread: 1,
    shared_tile: true,
};
const V3: Blocked = Blocked {
    module: &kernels::V3,
    prefix: "v3",
    keys_per_thread: 1,
    shared_tile: true,
};
const V4: Blocked = Blocked {
    module: &kernels::V4,
    prefix: "v4",
    keys_per_thread: 2,
    shared_tile: true,
};
const V5: Blocked = Blocked {
    module: &kernels::V5,
    prefix: "v5",
    keys_per_thread: 2,
    shared_tile: true,
};

/// Sorts `keys` (at least 2, at most `MAX_LEN`) ascending with `version`.
pub(super) fn run<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>, version: Version) -> Result<()> {
    match version {
        Version::V0 => naive::<B>(gpu, keys),
        Version::V1 => blocked::<B>(gpu, keys, &V1),
        Version::V2 => blocked::<B>(gpu, keys, &V2),
        Version::V3 => blocked::<B>(gpu, keys, &V3),
        Version::V4 => blocked::<B>(gpu, keys, &V4),
        Version::V5 => blocked::<B>(gpu, keys, &V5),
    }
}

/// Threads per block: the device's limit (a power of two, at most 1024), halved until the
/// chunk fits the shared memory a block gets without opting in.
fn block_threads<B: Bits>(gpu: &Gpu, keys_per_thread: u32, shared_tile: bool) -> u32 {
    let info = gpu.info();
    let mut threads = 1024u32.min(info.max_threads_per_block as u32);
    threads = 1 << (31 - threads.leading_zeros()); // round down to a power of two
    let bytes = |t: u32| t as usize * keys_per_thread as usize * std::mem::size_of::<B>();
    while shared_tile && threads > 32 && bytes(threads) > info.shared_per_block {
        threads /= 2;
    }
    threads
}

fn naive<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>) -> Result<()> {
    let n = keys.len() as u32;
    let threads = block_threads::<B>(gpu, 1, false);
    let step_kernel = gpu.function(&kernels::V0, &kernel_name::<B>("v0_step"))?;
    let cfg = config(n.div_ceil(threads), threads, 0);
    for step in steps(n as usize) {
        launch_step(
            gpu,
            &step_kernel,
            keys,
            step.size as u32,
            step.stride as u32,
            cfg,
        )?;
    }
    Ok(())
}

fn blocked<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>, v: &Blocked) -> Result<()> {
    let n = keys.len() as u32;
    let threads = block_threads::<B>(gpu, v.keys_per_thread, v.shared_tile);
    let chunk = threads * v.keys_per_thread;
    let shared = if v.shared_tile {
        chunk * std::mem::size_of::<B>() as u32
    } else {
        0
    };
    let name = |kernel: &str| kernel_name::<B>(&format!("{}_{kernel}", v.prefix));
    let block_sort = gpu.function(v.module, &name("block_sort"))?;
    let block_merge = gpu.function(v.module, &name("block_merge"))?;
    let step_kernel = gpu.function(v.module, &name("step"))?;

    let block_cfg = config(n.div_ceil(chunk), threads, shared);
    // A thread per key, or (V4, V5) a thread per comparator of the padded network.
    let step_threads = if v.keys_per_thread == 1 {
        n
    } else {
        padded_len(n as usize) as u32 / 2
    };
    let step_cfg = config(step_threads.div_ceil(threads), threads, 0);

    let mut launch = gpu.stream().launch_builder(&block_sort);
    launch.arg(&mut *keys).arg(&n);
    unsafe { launch.launch(block_cfg) }.during(|| format!("launching {}_block_sort", v.prefix))?;
    for size in stage_sizes(n as usize).filter(|&s| s > chunk as usize) {
        for step in stage_steps(size).take_while(|s| s.stride >= chunk as usize) {
            launch_step(
                gpu,
                &step_kernel,
                keys,
                size as u32,
                step.stride as u32,
                step_cfg,
            )?;
        }
        let size = size as u32;
        let mut launch = gpu.stream().launch_builder(&block_merge);
        launch.arg(&mut *keys).arg(&n).arg(&size);
        unsafe { launch.launch(block_cfg) }
            .during(|| format!("launching {}_block_merge", v.prefix))?;
    }
    Ok(())
}

fn launch_step<B: Bits>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    keys: &mut CudaViewMut<B>,
    size: u32,
    stride: u32,
    cfg: LaunchConfig,
) -> Result<()> {
    let n = keys.len() as u32;
    let mut launch = gpu.stream().launch_builder(kernel);
    launch.arg(&mut *keys).arg(&n).arg(&size).arg(&stride);
    unsafe { launch.launch(cfg) }
        .map(drop)
        .during(|| format!("launching a global step (size {size}, stride {stride})"))
}

/// How many times `version` reads and writes the whole array for `n` keys: one per launch that
/// covers it (block kernels and global steps alike), not counting the key maps.
pub(super) fn passes<B: Bits>(gpu: &Gpu, version: Version, n: usize) -> usize {
    let v = match version {
        Version::V0 => return crate::network::step_count(n),
        Version::V1 => &V1,
        Version::V2 => &V2,
        Version::V3 => &V3,
        Version::V4 => &V4,
        Version::V5 => &V5,
    };
    let chunk =
        (block_threads::<B>(gpu, v.keys_per_thread, v.shared_tile) * v.keys_per_thread) as usize;
    let later_stages = stage_sizes(n).filter(|&s| s > chunk);
    1 + later_stages
        .map(|size| stage_steps(size).filter(|s| s.stride >= chunk).count() + 1)
        .sum::<usize>()
}
