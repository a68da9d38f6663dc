//! Runs a [`PassPlan`]: the tuned network's passes (kernels/tuned.cu), as one CUDA graph, in
//! thread-block clusters, or one launch a pass. src/plan/passes.rs plans them.

use super::exec::{config, Exec};
use super::launch::passes::{tuned_pass, tuned_passes_graph};
use crate::error::{CudaContext as _, Result};
use crate::kernels::abi::RowLayout;
use crate::plan::PassPlan;
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr};

/// Runs `plan` over `keys`, its first pass reading `src` (the keys themselves when `None`; a
/// merge sort's tile sort reads the keys and writes the spare array). `layout` is the plan's,
/// with a segmented sort's device arrays.
pub(crate) fn run<T: DeviceRepr>(
    x: &Exec,
    plan: &PassPlan,
    layout: RowLayout,
    src: Option<&CudaView<T>>,
    keys: &mut CudaViewMut<T>,
) -> Result<()> {
    if plan.passes.is_empty() {
        // Rows of one key: sorted already.
        if let Some(src) = src {
            x.stream
                .memcpy_dtod(src, keys)
                .during(|| "copying rows of one key".into())?;
        }
        return Ok(());
    }
    let kernel = x.function_sharing(plan.module, plan.kernel.kernel_name(), plan.shared_bytes)?;
    let cfg = config(plan.blocks, plan.threads, plan.shared_bytes);
    if plan.graph {
        let fields: Vec<_> = plan.passes.iter().map(|(_, args)| *args).collect();
        let shape = (layout, plan.tile_bits);
        return tuned_passes_graph(x, &kernel, cfg, (src, keys), shape, &fields);
    }
    for (i, (pass, args)) in plan.passes.iter().enumerate() {
        let cluster_blocks = if pass.is_contiguous() {
            1 << plan.cluster_bits
        } else {
            1
        };
        // The first pass reads the source; the later ones what the pass before wrote.
        let source = if i == 0 { src } else { None };
        let args = (layout, plan.tile_bits, *args);
        tuned_pass(x, &kernel, cfg, cluster_blocks, (source, &mut *keys), args)
            .during(|| format!("launching tuned pass {pass:?} of {plan:?}"))?;
    }
    Ok(())
}
