//! The whole network, one comparator at a time, on one thread.

use super::{stage_below, Word};
use crate::network::stage_sizes;

/// Sorts `data` ascending with the bitonic network on the calling thread. Any length.
///
/// ```
/// let mut v = vec![5u32, 1, 4, 2, 3];
/// bitonic::cpu::sort_serial(&mut v);
/// assert_eq!(v, [1, 2, 3, 4, 5]);
/// ```
pub fn sort_serial<B: Word>(data: &mut [B]) {
    for size in stage_sizes(data.len()) {
        stage_below(data, size, usize::MAX);
    }
}
