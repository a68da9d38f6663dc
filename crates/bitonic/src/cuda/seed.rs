//! Runs a [`SeedPlan`]: the report's GPU versions V0–V5 (kernels/v0_naive.cu …
//! kernels/v5_conflict_free.cu), which of their kernels run in what order.
//!
//! V0 launches one kernel per network step. V1–V5 share one shape and differ only in their
//! kernels and in how many keys a thread owns:
//!
//! 1. `block_sort`: every block sorts its chunk of `chunk` keys (stages 2 … chunk);
//! 2. for each larger stage: its steps of stride ≥ `chunk` as single global launches, then
//!    `block_merge`, which runs the stage's remaining steps (stride < chunk) inside each chunk.
//!
//! They sort words ascending; the key map runs before and after them when the plan says.

use super::exec::{config, Exec};
use super::keymap::map_words;
use super::launch::keys::seed_kernel;
use crate::error::{CudaContext as _, Result};
use crate::kernels::kernel_width;
use crate::network::{padded_len, stage_sizes, stage_steps, steps};
use crate::plan::SeedPlan;
use cudarc::driver::{CudaFunction, CudaViewMut, DeviceRepr, LaunchConfig};

/// Sorts `keys` (at least 2) with the plan's version, mapping them before and back after.
pub(crate) fn run<B: DeviceRepr>(
    x: &Exec,
    plan: &SeedPlan,
    keys: &mut CudaViewMut<B>,
) -> Result<()> {
    if let Some(map) = plan.map {
        map_words(x, keys, map, false)?;
    }
    if plan.prefix == "v0" {
        naive(x, plan, keys)?;
    } else {
        blocked(x, plan, keys)?;
    }
    if let Some(map) = plan.map {
        map_words(x, keys, map, true)?;
    }
    Ok(())
}

/// V0: one launch a network step.
fn naive<B: DeviceRepr>(x: &Exec, plan: &SeedPlan, keys: &mut CudaViewMut<B>) -> Result<()> {
    let n = keys.len() as u32;
    let step_kernel = x.function(plan.module, &format!("v0_step_{}", kernel_width::<B>()))?;
    let cfg = config(n.div_ceil(plan.threads), plan.threads, 0);
    for step in steps(n as usize) {
        launch_step(
            x,
            &step_kernel,
            keys,
            (step.size as u32, step.stride as u32),
            cfg,
        )?;
    }
    Ok(())
}

/// V1–V5: a block's chunk sorted, then each larger stage's global steps and block merge.
fn blocked<B: DeviceRepr>(x: &Exec, plan: &SeedPlan, keys: &mut CudaViewMut<B>) -> Result<()> {
    let n = keys.len() as u32;
    let threads = plan.threads;
    let chunk = threads * plan.keys_per_thread;
    let shared = if plan.shared_tile {
        chunk * std::mem::size_of::<B>() as u32
    } else {
        0
    };
    let name = |kernel: &str| format!("{}_{kernel}_{}", plan.prefix, kernel_width::<B>());
    let block_sort = x.function(plan.module, &name("block_sort"))?;
    let block_merge = x.function(plan.module, &name("block_merge"))?;
    let step_kernel = x.function(plan.module, &name("step"))?;

    let block_cfg = config(n.div_ceil(chunk), threads, shared);
    // A thread per key, or (V4, V5) a thread per comparator of the padded network.
    let step_threads = if plan.keys_per_thread == 1 {
        n
    } else {
        padded_len(n as usize) as u32 / 2
    };
    let step_cfg = config(step_threads.div_ceil(threads), threads, 0);
    seed_kernel(x, &block_sort, block_cfg, keys, &[])
        .during(|| format!("launching {}", name("block_sort")))?;
    for size in stage_sizes(n as usize).filter(|&s| s > chunk as usize) {
        for step in stage_steps(size).take_while(|s| s.stride >= chunk as usize) {
            launch_step(
                x,
                &step_kernel,
                keys,
                (size as u32, step.stride as u32),
                step_cfg,
            )?;
        }
        seed_kernel(x, &block_merge, block_cfg, keys, &[size as u32])
            .during(|| format!("launching {}", name("block_merge")))?;
    }
    Ok(())
}

fn launch_step<B: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    keys: &mut CudaViewMut<B>,
    (size, stride): (u32, u32),
    cfg: LaunchConfig,
) -> Result<()> {
    seed_kernel(x, kernel, cfg, keys, &[size, stride])
        .during(|| format!("launching a global step (size {size}, stride {stride})"))
}
