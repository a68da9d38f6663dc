//! A call's scratch device memory as its plan lays it out: named parts of one buffer, each
//! aligned, so that a call allocates once (or not at all, given the caller's workspace) and
//! its runners take their parts by name.

/// What a part of a workspace holds.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scratch {
    /// 16-bit keys widened to the u32 words the strategy sorts.
    Words,
    /// A merge sort's second array of words, as long as the keys.
    Spare,
    /// A key-value merge sort's second array of values.
    SpareValues,
    /// The merge paths or multiway splits of a merge level (u64).
    Ranks,
    /// A multiway level's samples of its runs.
    Samples,
    /// The value placement's flags of tiles with many equal keys (u32).
    EqualTiles,
    /// Key-index pairs of the pair passes.
    Pairs,
    /// Indices that a key-value sort of rows computes before it moves the values (u32).
    Indices,
    /// A copy of the values the gather reads from.
    ValuesCopy,
    /// A top-k's partial results, two halves that its passes alternate between.
    Partials,
    /// The spread select's candidates, thresholds and lists.
    Spread,
    /// A segmented sort's segment starts and lengths (u32).
    SegmentBounds,
    /// A top-k by sorting: the sorted copy of the keys.
    SortedKeys,
    /// A top-k by sorting: every key's index.
    SortedIndices,
    /// The radix passes over tiles: the keys between passes, one or two arrays as long as the
    /// keys.
    RadixKeys,
    /// Their indices (u32), as many arrays.
    RadixIndices,
    /// The look-back of passes over rows of several tiles (u64 words, zeroed each call):
    /// [`crate::plan::LookBack`].
    RadixLookBack,
}

/// One part: `bytes` at `offset` from the workspace's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// What it holds.
    pub scratch: Scratch,
    /// Bytes from the workspace's start (a multiple of [`Workspace::ALIGN`]).
    pub offset: usize,
    /// Its length in bytes.
    pub bytes: usize,
}

/// The layout of a call's scratch memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workspace {
    parts: Vec<Part>,
    bytes: usize,
}

impl Workspace {
    /// Every part starts at a multiple of this many bytes: the driver's allocation alignment,
    /// so that a part is aligned for any word and for 16-byte vector loads.
    pub const ALIGN: usize = 256;

    /// No scratch.
    pub fn none() -> Workspace {
        Workspace::default()
    }

    /// Adds a part of `count` elements of `element_bytes`; a part of no elements takes no
    /// bytes but is still named.
    pub(crate) fn add(&mut self, scratch: Scratch, count: usize, element_bytes: usize) {
        debug_assert!(self.part(scratch).is_none(), "{scratch:?} twice");
        let offset = self.bytes.next_multiple_of(Self::ALIGN);
        let bytes = count * element_bytes;
        self.parts.push(Part {
            scratch,
            offset,
            bytes,
        });
        self.bytes = offset + bytes;
    }

    /// The workspace with `other`'s parts after its own.
    pub(crate) fn with(mut self, other: &Workspace) -> Workspace {
        for part in &other.parts {
            self.add(part.scratch, part.bytes, 1);
        }
        self
    }

    /// Bytes in all (0: the call needs no scratch).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The part that holds `scratch`, if the plan has one.
    pub fn part(&self, scratch: Scratch) -> Option<Part> {
        self.parts.iter().copied().find(|p| p.scratch == scratch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_aligned_and_disjoint() {
        let mut w = Workspace::none();
        assert_eq!(w.bytes(), 0);
        w.add(Scratch::Ranks, 3, 8);
        w.add(Scratch::Samples, 0, 4);
        w.add(Scratch::Spare, 1000, 4);
        let parts = w.parts();
        assert_eq!(
            parts[0],
            Part {
                scratch: Scratch::Ranks,
                offset: 0,
                bytes: 24
            }
        );
        assert_eq!((parts[1].offset, parts[1].bytes), (256, 0));
        assert_eq!((parts[2].offset, w.bytes()), (256, 256 + 4000));
        assert_eq!(w.part(Scratch::Spare), Some(parts[2]));
        assert_eq!(w.part(Scratch::Pairs), None);
        let both = Workspace::none().with(&w);
        assert_eq!(both, w);
    }
}
