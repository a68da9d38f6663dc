//! Why a plan differs from the one its request gets with memory to spare.

/// Why a plan is not the one the request would get with memory to spare.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fallback {
    /// The merge sort's spare array and merge paths (`needed` bytes) did not fit the device
    /// memory there was: the network's passes, which sort in place, run instead.
    NoRoomForMergeSort {
        /// Bytes the merge sort's workspace takes.
        needed: usize,
    },
    /// The radix passes' arrays (`needed` bytes) for long rows of keys alone did not fit: the
    /// network's passes run instead, in place for 4-byte keys. (16-bit keys widen into 4 bytes
    /// a key for the network, more than their radix arrays take, so for them the fallback
    /// never fits where the radix sort did not: the call is then out of memory.)
    NoRoomForRadixSort {
        /// Bytes the radix passes' workspace takes.
        needed: usize,
    },
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fallback::NoRoomForMergeSort { needed } => write!(
                f,
                "no room for the merge sort's {needed} bytes of workspace: the network's passes"
            ),
            Fallback::NoRoomForRadixSort { needed } => write!(
                f,
                "no room for the radix sort's {needed} bytes of workspace: the network's passes"
            ),
        }
    }
}
