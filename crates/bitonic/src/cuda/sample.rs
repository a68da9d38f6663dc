//! The runner of a sampling plan (src/plan/sample.rs): the kernel of the logits' type,
//! allowed the plan's shared memory, in one launch on the call's stream.

use super::exec::Exec;
use super::launch::sample::{sample_rows, Settings};
use crate::error::{CudaContext, Error, Result};
use crate::kernels;
use crate::plan::SamplePlan;
use crate::DType;
use cudarc::driver::{CudaView, CudaViewMut};

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
    let name = match dtype {
        DType::F32 => "sample_rows_f32",
        DType::F16 => "sample_rows_f16",
        DType::BF16 => "sample_rows_bf16",
        _ => return Err(Error::Unsupported("logits other than f32, f16 and bf16")),
    };
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
