//! The bitonic network on the CPU: serially (the reference, and the analogue of the report's
//! serial baseline) and in parallel with rayon. Both sort words ascending (the `u32`/`u64`
//! words of [`crate::key`], or `(word, index)` pairs); src/cpu/mod.rs maps keys to words.

mod parallel;
mod serial;

pub use parallel::sort_parallel;
pub use serial::sort_serial;

#[cfg(any(test, feature = "bench"))]
/// Sorts a bitonic sequence ascending: the half-cleaners of one stage, stride `P / 2` down to
/// 1 (`P` the length rounded up to a power of two), with no flip. A length that is not a power
/// of two counts as padded with `+inf` (pairs past the end are skipped, as in the sort), so such
/// a sequence must fall, then rise; one of a power-of-two length may be any bitonic sequence.
pub fn merge_bitonic<B: Word>(data: &mut [B]) {
    let mut stride = data.len().next_power_of_two() / 2;
    while stride >= 1 {
        half_step(data, stride);
        stride /= 2;
    }
}

/// What the CPU networks sort: any totally ordered plain value (the `u32`/`u64` words of
/// [`crate::key`], or `(word, index)` pairs for stable key-value sorts).
pub trait Word: Copy + Ord + Send + Sync {}
impl<T: Copy + Ord + Send + Sync> Word for T {}

/// Compare-exchange: the smaller word goes to `lo`.
#[inline(always)]
fn compare_exchange<B: Word>(lo: &mut B, hi: &mut B) {
    let (a, b) = (*lo, *hi);
    *lo = a.min(b);
    *hi = a.max(b);
}

/// The first step of a stage on `data`, whose start is aligned to `size`: each index meets its
/// mirror in its block. Pairs whose upper index is past the end are skipped (virtual `+inf`).
fn flip_step<B: Word>(data: &mut [B], size: usize) {
    for block in data.chunks_mut(size) {
        let half = size / 2;
        if block.len() <= half {
            continue;
        }
        let (lo, hi) = block.split_at_mut(half);
        // lo[half-1-m] meets hi[m]: walk hi forwards and lo backwards.
        for (a, b) in lo.iter_mut().rev().zip(hi.iter_mut()) {
            compare_exchange(a, b);
        }
    }
}

/// A later step of a stage on `data`, whose start is aligned to `2 * stride`: index `i` meets
/// `i + stride` in each block of `2 * stride`.
fn half_step<B: Word>(data: &mut [B], stride: usize) {
    for block in data.chunks_mut(2 * stride) {
        if block.len() <= stride {
            continue;
        }
        let (lo, hi) = block.split_at_mut(stride);
        for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
            compare_exchange(a, b);
        }
    }
}

/// Runs the steps of stage `size` whose stride is below `max_stride` (all of them when
/// `max_stride > size / 2`).
fn stage_below<B: Word>(data: &mut [B], size: usize, max_stride: usize) {
    for step in crate::network::stage_steps(size) {
        if step.stride >= max_stride {
            continue;
        }
        if step.is_flip() {
            flip_step(data, size);
        } else {
            half_step(data, step.stride);
        }
    }
}
