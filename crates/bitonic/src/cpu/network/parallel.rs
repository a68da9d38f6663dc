//! The network on all cores with rayon, organised like the GPU's block kernels: tiles small
//! enough for the L2 cache run all their steps locally; only steps whose stride spans tiles
//! are done as a parallel sweep over the whole array.

use super::{compare_exchange, stage_below, Word};
use crate::network::{padded_len, stage_sizes, stage_steps};
use rayon::prelude::*;

/// Keys per cache-resident tile (128 KiB of u64).
const TILE: usize = 1 << 14;
/// Pairs per rayon task in a global step.
const GRAIN: usize = 1 << 12;

/// Sorts `data` ascending with the bitonic network on rayon's thread pool. Any length.
pub fn sort_parallel<B: Word>(data: &mut [B]) {
    let n = data.len();
    let tile = TILE.min(padded_len(n));
    // Stages that fit a tile: every tile runs them on its own. Tiles start at multiples of
    // `tile`, hence are aligned to every block of these stages.
    data.par_chunks_mut(tile).for_each(|t| {
        for size in stage_sizes(tile) {
            stage_below(t, size, usize::MAX);
        }
    });
    for size in stage_sizes(n).filter(|&s| s > tile) {
        for step in stage_steps(size).take_while(|s| s.stride >= tile) {
            if step.is_flip() {
                data.par_chunks_mut(size).for_each(|b| flip_par(b, size));
            } else {
                data.par_chunks_mut(2 * step.stride)
                    .for_each(|b| half_par(b, step.stride));
            }
        }
        data.par_chunks_mut(tile)
            .for_each(|t| stage_below(t, size, tile));
    }
}

fn flip_par<B: Word>(block: &mut [B], size: usize) {
    let half = size / 2;
    if block.len() <= half {
        return;
    }
    let (lo, hi) = block.split_at_mut(half);
    // Only the last hi.len() keys of lo have partners: lo[half-1-m] meets hi[m].
    let lo = &mut lo[half - hi.len()..];
    lo.par_rchunks_mut(GRAIN)
        .zip(hi.par_chunks_mut(GRAIN))
        .for_each(|(l, h)| {
            for (a, b) in l.iter_mut().rev().zip(h.iter_mut()) {
                compare_exchange(a, b);
            }
        });
}

fn half_par<B: Word>(block: &mut [B], stride: usize) {
    if block.len() <= stride {
        return;
    }
    let (lo, hi) = block.split_at_mut(stride);
    lo[..hi.len()]
        .par_chunks_mut(GRAIN)
        .zip(hi.par_chunks_mut(GRAIN))
        .for_each(|(l, h)| {
            for (a, b) in l.iter_mut().zip(h.iter_mut()) {
                compare_exchange(a, b);
            }
        });
}
