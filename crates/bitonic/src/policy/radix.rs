//! The radix sorts with indices (kernels/radix.cu; their plan in src/plan/radix.rs): which rows
//! take them, and their blocks.

/// The tuning of the stable radix sorts of rows with indices: argsorts, and the top-k of rows
/// by sorting (the stable sort with indices where k is the whole row).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RadixPolicy {
    /// Rows of at least this many keys take a radix sort; shorter ones the pair passes of the
    /// tuned network. `usize::MAX`: never (the network's pairs, by name, for an A/B run).
    pub from_row_len: usize,
    /// Rows of at most this many keys (and at most 2^16, whose indices fit 16 bits) sort in one
    /// block a row in shared memory, where they fit; longer ones in a pass a digit over tiles.
    pub one_block_most: usize,
    /// Keys of a tile of the passes over tiles: a block's.
    pub tile: usize,
    /// Threads of a block of the passes over tiles (a multiple of 32, at least 256).
    pub tile_threads: u32,
}

impl RadixPolicy {
    /// Hopper's numbers: not yet measured against each other (docs/notes/radix.md).
    pub const HOPPER: RadixPolicy = RadixPolicy {
        from_row_len: 0,
        one_block_most: 1 << 14,
        tile: 4096,
        tile_threads: 256,
    };

    /// The most keys of a row one block sorts: its 16-bit indices' limit.
    pub const ONE_BLOCK_LIMIT: usize = 1 << 16;

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.one_block_most > Self::ONE_BLOCK_LIMIT {
            return Err(format!(
                "radix.one_block_most is at most 2^16 (16-bit indices), not {}",
                self.one_block_most
            ));
        }
        if !(256..=1 << 16).contains(&self.tile) {
            return Err(format!(
                "radix.tile is 256 to 65536 keys, not {}",
                self.tile
            ));
        }
        if self.tile_threads % 32 != 0 || !(256..=1024).contains(&self.tile_threads) {
            return Err(format!(
                "radix.tile_threads is a multiple of 32 from 256 to 1024, not {}",
                self.tile_threads
            ));
        }
        Ok(())
    }
}
