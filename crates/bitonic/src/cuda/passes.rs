//! Runs a [`PassPlan`]: the tuned network's passes (kernels/tuned.cu), as one CUDA graph, in
//! thread-block clusters, or one launch a pass. src/plan/passes.rs plans them.

use super::exec::{config, Exec};
use super::launch::passes::{tuned_pass, tuned_passes_graph, PackedRows, PassPacking};
use crate::error::{CudaContext as _, Result};
use crate::kernels::abi::{RowLayout, PACK_ON_LOAD, UNPACK_ON_STORE};
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
    launch_all(x, plan, layout, src, keys, None)
}

/// Runs `plan` (at least one pass) over key-index pairs in `pairs` (empty where the plan has one
/// pass): its first pass packs the keys of `rows` as it loads, and its last writes the first `k`
/// of each row to their outputs as it stores.
pub(crate) fn run_packed<P: DeviceRepr>(
    x: &Exec,
    plan: &PassPlan,
    pairs: &mut CudaViewMut<P>,
    rows: &PackedRows<'_>,
) -> Result<()> {
    assert!(
        !plan.passes.is_empty(),
        "a packed plan sorts rows of two keys or more"
    );
    launch_all(x, plan, plan.layout, None, pairs, Some(rows))
}

/// Every pass of `plan`: the first reads `src` (or the keys). With packed `rows`, the first packs
/// ([`PACK_ON_LOAD`]) and the last unpacks ([`UNPACK_ON_STORE`]).
fn launch_all<T: DeviceRepr>(
    x: &Exec,
    plan: &PassPlan,
    layout: RowLayout,
    src: Option<&CudaView<T>>,
    keys: &mut CudaViewMut<T>,
    rows: Option<&PackedRows<'_>>,
) -> Result<()> {
    let last = plan.passes.len() - 1;
    let packing_of = |i: usize| -> PassPacking<'_> {
        let first = if i == 0 { PACK_ON_LOAD } else { 0 };
        let end = if i == last { UNPACK_ON_STORE } else { 0 };
        rows.map(|rows| (rows, first | end))
    };
    let kernel = x.function_sharing(plan.module, plan.kernel.kernel_name(), plan.shared_bytes)?;
    let cfg = config(plan.blocks, plan.threads, plan.shared_bytes);
    if plan.graph {
        let passes: Vec<_> = (plan.passes.iter().enumerate())
            .map(|(i, (_, args))| (*args, packing_of(i)))
            .collect();
        let shape = (layout, plan.tile_bits);
        return tuned_passes_graph(x, &kernel, cfg, (src, keys), shape, &passes);
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
        let arrays = (source, &mut *keys);
        tuned_pass(x, &kernel, cfg, cluster_blocks, arrays, args, packing_of(i))
            .during(|| format!("launching tuned pass {pass:?} of {plan:?}"))?;
    }
    Ok(())
}
