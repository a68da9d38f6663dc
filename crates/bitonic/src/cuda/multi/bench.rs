//! The multi-GPU benchmark's device-side helpers: random shards and their checks, so that a
//! benchmark of many GiB never copies its keys through the host.

use crate::cuda::exec::Exec;
use crate::cuda::launch::multi as launch;
use crate::cuda::Gpu;
use crate::error::{CudaContext as _, Result};
use crate::kernels;
use crate::kernels::kernel_width;
use crate::key::Bits;
use crate::plan::MAX_LEN;
use cudarc::driver::{CudaView, CudaViewMut};

/// Fills `keys` with the random words of global positions `first ..`: the same data
/// whatever the split.
pub fn fill_random<B: Bits>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<B>,
    first: u64,
    seed: u64,
) -> Result<()> {
    let n = keys.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let f = gpu.function(
        &kernels::MULTI,
        &format!("fill_random_{}", kernel_width::<B>()),
    )?;
    let x = Exec::of(gpu);
    launch::fill_random(&x, &f, x.elementwise(n as usize), keys, (first, seed))
        .during(|| "launching fill_random".into())
}

/// (sum of a hash of every word, count of descents) of `keys`: the hash sum is the same
/// for any order of the same words; a sorted shard has no descent.
pub fn checksum<B: Bits>(gpu: &Gpu, keys: &CudaView<B>) -> Result<(u64, u64)> {
    let stream = gpu.stream();
    let mut sums = stream
        .alloc_zeros::<u64>(2)
        .during(|| "allocating a checksum".into())?;
    let n = keys.len() as u64;
    if n > 0 {
        let f = gpu.function(
            &kernels::MULTI,
            &format!("check_sorted_{}", kernel_width::<B>()),
        )?;
        let x = Exec::of(gpu);
        launch::check_sorted(&x, &f, x.elementwise(n as usize), keys, &mut sums)
            .during(|| "launching check_sorted".into())?;
    }
    let sums = stream
        .clone_dtoh(&sums)
        .during(|| "copying a checksum back".into())?;
    Ok((sums[0], sums[1]))
}

/// The first and last word of a non-empty shard.
pub fn ends<B: Bits>(gpu: &Gpu, keys: &CudaView<B>) -> Result<Option<(B, B)>> {
    if keys.is_empty() {
        return Ok(None);
    }
    let read = |at: usize| {
        gpu.stream()
            .clone_dtoh(&keys.slice(at..at + 1))
            .during(|| "reading a shard's ends".into())
    };
    Ok(Some((read(0)?[0], read(keys.len() - 1)?[0])))
}

/// The most keys a rank sorts.
pub const RANK_MAX: usize = MAX_LEN;
