//! The whole network, one comparator at a time, on one thread.

use super::{stage_below, Word};
use crate::network::stage_sizes;

/// Sorts `data` ascending with the bitonic network on the calling thread. Any length.
pub fn sort_serial<B: Word>(data: &mut [B]) {
    for size in stage_sizes(data.len()) {
        stage_below(data, size, usize::MAX);
    }
}
