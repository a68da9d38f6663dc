//! The runner of a sampling plan (src/plan/sample.rs): the kernel of the logits' type,
//! allowed the plan's shared memory, in one launch on the call's stream.

use super::exec::Exec;
use super::launch::sample::{sample_rows, Settings};
use crate::error::{CudaContext, Error, Result};
use crate::kernels;
use crate::plan::{SamplePlan, SAMPLE_PORTABLE_BLOCKS_A_ROW};
use crate::DType;
use cudarc::driver::{CudaView, CudaViewMut};

/// The kernel of logits of `dtype`.
fn kernel_name(dtype: DType) -> Result<&'static str> {
    match dtype {
        DType::F32 => Ok("sample_rows_f32"),
        DType::F16 => Ok("sample_rows_f16"),
        DType::BF16 => Ok("sample_rows_bf16"),
        _ => Err(Error::Unsupported("logits other than f32, f16 and bf16")),
    }
}

/// Whether the device runs `plan`'s clusters of the kernel for `dtype`: always up to the
/// portable size; past it, as the driver says (asked once a kernel and shape), the kernel
/// then opted into such clusters for its launch.
pub(crate) fn clusters_fit(x: &Exec, plan: &SamplePlan, dtype: DType) -> Result<bool> {
    if plan.blocks_a_row <= SAMPLE_PORTABLE_BLOCKS_A_ROW || plan.rows == 0 {
        return Ok(true);
    }
    let kernel = x.function_sharing(&kernels::SAMPLE, kernel_name(dtype)?, plan.shared_bytes)?;
    x.gpu.kernel_clusters_fit(
        &kernel,
        plan.blocks_a_row,
        SamplePlan::THREADS,
        plan.shared_bytes,
    )
}

/// Queues `plan` on `x`'s stream: a token of each row of `logits` (of `dtype`, f32, f16 or
/// bf16) into `tokens`, at the row's number of `uniform`, after `settings`.
pub(crate) fn run<L>(
    x: &Exec,
    plan: &SamplePlan,
    dtype: DType,
    logits: &CudaView<L>,
    settings: &Settings,
    uniform: &CudaView<f32>,
    tokens: &mut CudaViewMut<i64>,
) -> Result<()> {
    let name = kernel_name(dtype)?;
    assert_eq!(std::mem::size_of::<L>(), dtype.size(), "the logits' type");
    if plan.rows == 0 {
        return Ok(());
    }
    let kernel = x.function_sharing(&kernels::SAMPLE, name, plan.shared_bytes)?;
    sample_rows(x, &kernel, plan, logits, settings, uniform, tokens).during(|| {
        format!(
            "sampling {} rows of {} logits ({} blocks a row)",
            plan.rows, plan.vocab, plan.blocks_a_row
        )
    })
}
