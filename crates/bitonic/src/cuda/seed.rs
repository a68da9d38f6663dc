//! The report's GPU versions V0–V5 (kernels/v0_naive.cu … kernels/v5_conflict_free.cu):
//! which of their kernels run, with which launch shapes, in what order.
//!
//! V0 launches one kernel per network step. V1–V5 share one plan shape and differ only in
//! their kernels and in how many keys a thread owns:
//!
//! 1. `block_sort`: every block sorts its chunk of `chunk` keys (stages 2 … chunk);
//! 2. for each larger stage: its steps of stride ≥ `chunk` as single global launches, then
//!    `block_merge`, which runs the stage's remaining steps (stride < chunk) inside each chunk.
//!
//! They sort words ascending; src/cuda/run.rs maps keys to words and back around them.

use super::kernels::{self, KernelModule};
use super::launch::{self, config};
use super::{kernel_name, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::key::Bits;
use crate::network::{padded_len, stage_sizes, stage_steps, steps};
use crate::Version;
use cudarc::driver::{CudaFunction, CudaViewMut, LaunchConfig};

/// How one of V1–V5 uses the common blocked plan.
struct Blocked {
    module: &'static KernelModule,
    prefix: &'static str,
    /// 1 (V1–V3: a thread per key) or 2 (V4, V5: a thread per compare-exchange).
    keys_per_thread: u32,
    /// Whether the block kernels keep their chunk in shared memory.
    shared_tile: bool,
}

const fn blocked_spec(
    module: &'static KernelModule,
    prefix: &'static str,
    keys_per_thread: u32,
    shared_tile: bool,
) -> Blocked {
    Blocked {
        module,
        prefix,
        keys_per_thread,
        shared_tile,
    }
}

const V1: Blocked = blocked_spec(&kernels::V1, "v1", 1, false);
const V2: Blocked = blocked_spec(&kernels::V2, "v2", 1, true);
const V3: Blocked = blocked_spec(&kernels::V3, "v3", 1, true);
const V4: Blocked = blocked_spec(&kernels::V4, "v4", 2, true);
const V5: Blocked = blocked_spec(&kernels::V5, "v5", 2, true);

/// The blocked-plan description of V1–V5 (`None` for V0 and the tuned version).
fn blocked_version(version: Version) -> Option<&'static Blocked> {
    match version {
        Version::V0 | Version::Tuned => None,
        Version::V1 => Some(&V1),
        Version::V2 => Some(&V2),
        Version::V3 => Some(&V3),
        Version::V4 => Some(&V4),
        Version::V5 => Some(&V5),
    }
}

/// The kernel module of `version` (V0–V5).
pub(crate) fn module(version: Version) -> &'static KernelModule {
    match blocked_version(version) {
        Some(v) => v.module,
        None => &kernels::V0,
    }
}

/// Sorts `keys` (at least 2, at most `MAX_LEN`) ascending with one of the seed's versions
/// V0–V5. The tuned version goes through [`tuned`], which also maps the keys.
pub(crate) fn run<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>, version: Version) -> Result<()> {
    match blocked_version(version) {
        Some(v) => blocked::<B>(gpu, keys, v),
        None => {
            assert_eq!(version, Version::V0, "plan::run runs V0–V5");
            naive::<B>(gpu, keys)
        }
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

/// V0's block size: its small-stride launches leave half the threads idle, and a big block
/// holds its SM slot until its slowest warp is done, so 256 beats both larger and smaller
/// blocks (docs/notes/seed-comparison.md has the measurements).
const NAIVE_THREADS: u32 = 256;

fn naive<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>) -> Result<()> {
    let n = keys.len() as u32;
    let threads = NAIVE_THREADS.min(block_threads::<B>(gpu, 1, false));
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

    launch::seed_kernel(gpu, &block_sort, block_cfg, keys, &[])
        .during(|| format!("launching {}_block_sort", v.prefix))?;
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
        launch::seed_kernel(gpu, &block_merge, block_cfg, keys, &[size as u32])
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
    launch::seed_kernel(gpu, kernel, cfg, keys, &[size, stride])
        .during(|| format!("launching a global step (size {size}, stride {stride})"))
}

/// How many times `version` (V0–V5) reads and writes the whole array of `n` words: one per
/// launch that covers it (block kernels and global steps alike), not counting the key maps.
pub(crate) fn passes<B: Bits>(gpu: &Gpu, version: Version, n: usize) -> usize {
    let Some(v) = blocked_version(version) else {
        return crate::network::step_count(n);
    };
    let chunk =
        (block_threads::<B>(gpu, v.keys_per_thread, v.shared_tile) * v.keys_per_thread) as usize;
    let later_stages = stage_sizes(n).filter(|&s| s > chunk);
    1 + later_stages
        .map(|size| stage_steps(size).filter(|s| s.stride >= chunk).count() + 1)
        .sum::<usize>()
}
