//! Runs a [`MergePlan`]: the tile sort makes sorted runs, then the merge levels
//! (src/cuda/levels.rs) merge them into one, through the spare array of the workspace.
//! Also the merge of two runs from anywhere, for the multi-GPU sort.

use super::exec::{config, Exec};
use super::launch::merge::{co_ranks, merge_tiles};
use super::levels::{self, search_grid, LevelKernels, Side};
use super::memory::{self, Scratchpad};
use super::passes;
use crate::error::{CudaContext as _, Result};
use crate::kernels;
use crate::kernels::kernel_width;
use crate::plan::{MergePlan, Scratch};
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr};

/// Sorts `keys` (words of the plan's width) as `plan` says: the tile sort maps the keys on
/// its loads and leaves them mapped, into the spare array when the levels are odd (so that
/// the last level writes the keys), then the levels merge the runs and unmap on the last
/// level's stores.
pub(crate) fn run<W: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    plan: &MergePlan,
    keys: &mut CudaViewMut<W>,
    pad: &mut Scratchpad,
) -> Result<()> {
    let n = keys.len();
    let levels = &plan.levels;
    let mut spare = pad.take::<W>(Scratch::Spare, n);
    let mut ranks = pad.take::<u64>(Scratch::Ranks, levels.splits);
    let mut samples = pad.take::<W>(Scratch::Samples, levels.samples);
    let layout = plan.runs.layout;
    if levels.runs_in_spare() {
        passes::run(x, &plan.runs, layout, Some(&keys.as_view()), &mut spare)?;
    } else {
        passes::run(x, &plan.runs, layout, None, keys)?;
    }
    let main = Side::<W, W> {
        keys: keys.slice_mut(..),
        values: None,
    };
    let spare = Side {
        keys: spare,
        values: None,
    };
    let kernels = LevelKernels::words::<W>(levels.tile);
    let in_spare = levels.runs_in_spare();
    levels::run(
        x,
        levels,
        &kernels,
        main,
        spare,
        in_spare,
        &mut ranks,
        &mut samples,
    )
}

/// Merges the sorted runs `a` and `b` into `out` (`a.len() + b.len()` words): the merge path
/// at every tile boundary (`co_ranks`), then one block a tile (`merge_tiles`). Among equal
/// words, `a`'s go first. src/multi/mod.rs's `merge_by_tiles` does the same on the CPU.
pub(crate) fn merge_two_runs<W: DeviceRepr>(
    x: &Exec,
    a: &CudaView<W>,
    b: &CudaView<W>,
    out: &mut CudaViewMut<W>,
) -> Result<()> {
    let total = a.len() + b.len();
    assert_eq!(out.len(), total, "a merge writes every word of both runs");
    if a.is_empty() || b.is_empty() {
        let run = if a.is_empty() { b } else { a };
        if total > 0 {
            x.stream
                .memcpy_dtod(run, out)
                .during(|| "copying a run that has no partner".into())?;
        }
        return Ok(());
    }
    let tiles = total.div_ceil(x.policy.merge.tile_of(std::mem::size_of::<W>())) as u32;
    let count = tiles + 1;
    let mut ranks =
        memory::alloc::<u64>(x.stream, count as usize, || format!("{count} merge paths"))?;
    let mut ranks = ranks.as_view_mut();
    let w = kernel_width::<W>();
    let f = x.function(&kernels::MERGE_WORDS, &format!("co_ranks_{w}"))?;
    co_ranks(x, &f, search_grid(count), (a, b), &mut ranks, count)
        .during(|| "launching co_ranks".into())?;
    let f = x.function(&kernels::MERGE_WORDS, &format!("merge_tiles_{w}"))?;
    let cfg = config(tiles, x.policy.merge.threads, 0);
    merge_tiles(x, &f, cfg, (a, b), &ranks, out).during(|| "launching merge_tiles".into())
}
