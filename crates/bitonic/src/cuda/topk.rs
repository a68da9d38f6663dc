//! Runs a [`TopkPlan`] (kernels/topk/): the warp sort's, the radix select's or the filter's
//! passes as one graph through the workspace's partial results, or the spread select's
//! launches. src/plan/topk/ plans them. Keys are read as their words (16-bit keys as they
//! are), and the indices written 4 or 8 bytes wide, as the plan's map says.

use super::exec::{config, Exec};
use super::launch::topk::{topk_passes, topk_spread, SpreadKernels};
use super::memory::Scratchpad;
use crate::error::Result;
use crate::plan::topk::{TopkPlan, TopkSteps};
use crate::plan::Scratch;
use crate::policy::TopkPolicy;
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr};

/// Selects each row's best k of `keys` into `values` and `indices` (k a row) as `plan` says.
pub(crate) fn run<B: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    plan: &TopkPlan,
    keys: &CudaView<B>,
    (values, indices): (&mut CudaViewMut<B>, &mut CudaViewMut<I>),
    pad: &mut Scratchpad,
) -> Result<()> {
    assert!(values.len() == plan.rows * plan.k && indices.len() == plan.rows * plan.k);
    let threads = TopkPolicy::THREADS;
    match &plan.steps {
        TopkSteps::Passes {
            passes,
            composite_bytes,
            half,
        } => {
            let mut launches = Vec::with_capacity(passes.len());
            for pass in passes {
                let f = x.function_sharing(pass.module, &pass.kernel, pass.shared)?;
                launches.push((f, config(pass.blocks, threads, pass.shared), pass.args));
            }
            let mut partials = pad.take::<u8>(Scratch::Partials, 2 * half);
            let scratch = (&mut partials, *half, *composite_bytes);
            topk_passes(x, &launches, keys, scratch, (values, indices))
        }
        TopkSteps::Spread(s) => {
            let function = |step: &str| {
                let name = format!("topk_spread_{step}_{}", s.width);
                x.function(s.module, &name)
            };
            let (sample, gather) = (function("sample")?, function("gather")?);
            let select = function("select")?;
            x.gpu.allow_shared(&select, s.select_shared)?;
            // The threshold's launch only where several blocks sample a row.
            let threshold = match s.args.sample_blocks {
                1 => None,
                _ => Some(function("threshold")?),
            };
            let [sample_blocks, threshold_blocks, gather_blocks, select_blocks] = s.blocks;
            let kernels = SpreadKernels {
                sample: (&sample, config(sample_blocks, threads, 0)),
                threshold: threshold
                    .as_ref()
                    .map(|f| (f, config(threshold_blocks, threads, 0))),
                gather: (&gather, config(gather_blocks, threads, 0)),
                select: (&select, config(select_blocks, threads, s.select_shared)),
            };
            let mut scratch = pad.take::<u8>(Scratch::Spread, s.scratch.end);
            let capacity = TopkPolicy::SPREAD_CAPACITY;
            let scratch = (&mut scratch, s.scratch, capacity);
            topk_spread(x, kernels, keys, s.args, scratch, (values, indices))
        }
    }
}
