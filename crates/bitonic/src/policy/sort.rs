//! The tuned network's passes: tile sizes, clusters and the narrow kernel.

/// The tuning of the tuned network's passes (kernels/tuned.cu): the tile a block sorts in
/// shared memory and registers, when small inputs spread over clusters, and which kernel
/// small u32 inputs take. docs/design/network-passes.md tells how each number is used.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortPolicy {
    /// Bytes of one block's tile (a power of two). 64 KiB lets two blocks share an H100 SM.
    pub tile_bytes: usize,
    /// log2 of the smallest tile an input too small to fill every SM is spread over.
    pub spread_tile_bits: u32,
    /// The most blocks of a thread-block cluster that sorts one small row in one launch
    /// (a power of two; 1: clusters off). Above 8 is beyond the portable size: the plan asks
    /// the device whether such clusters fit.
    pub max_cluster_blocks: u32,
    /// Whether u32 inputs too small for full tiles take the narrow kernel (16 keys a thread in
    /// twice the threads), which hides more latency.
    pub narrow_small_u32: bool,
    /// Whether rows of 8-byte words half a tile long sort in tiles of their own, blocks of
    /// half the threads, instead of two to a tile.
    pub wide_half_tiles: bool,
}

impl SortPolicy {
    /// log2 of the u32 keys a thread of the wide tuned kernel holds (`KERNEL_E_BITS_U32`).
    pub const E_BITS_U32: u32 = 5;
    /// log2 of the u32 keys a thread of the narrow kernel holds (`KERNEL_E_BITS_U32_NARROW`).
    pub const E_BITS_U32_NARROW: u32 = 4;
    /// log2 of the u64 keys a thread holds (`KERNEL_E_BITS_U64`).
    pub const E_BITS_U64: u32 = 4;
    /// log2 of the 16-byte key-index pairs a thread holds (`KERNEL_E_BITS_PAIRS`).
    pub const E_BITS_PAIRS: u32 = 4;
    /// The most threads of a tuned block (`KERNEL_TUNED_THREADS`, its `__launch_bounds__`).
    pub const MAX_THREADS: u32 = 1024;
    /// The most threads of a block of 16-byte pairs, three registers a key
    /// (`KERNEL_TUNED_THREADS_PAIRS`).
    pub const MAX_THREADS_PAIRS: u32 = 256;

    /// Hopper's numbers (sm_90): measured on the H100 and the H200.
    pub const HOPPER: SortPolicy = SortPolicy {
        tile_bytes: 64 * 1024,
        spread_tile_bits: 12,
        max_cluster_blocks: 16,
        narrow_small_u32: true,
        wide_half_tiles: true,
    };

    /// log2 of the words of `word_bytes` in one full tile (2^14 u32, 2^13 u64 and 2^12
    /// 16-byte pairs at 64 KiB).
    pub fn tile_bits(&self, word_bytes: usize) -> u32 {
        (self.tile_bytes / word_bytes).ilog2()
    }

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !self.tile_bytes.is_power_of_two() || self.tile_bytes < 4 << 10 {
            return Err(format!(
                "sort.tile_bytes is {}: a power of two of at least 4 KiB",
                self.tile_bytes
            ));
        }
        if !self.max_cluster_blocks.is_power_of_two() || self.max_cluster_blocks > 16 {
            return Err(format!(
                "sort.max_cluster_blocks is {}: a power of two up to 16",
                self.max_cluster_blocks
            ));
        }
        Ok(())
    }

    /// The kernels' defines of the tuned passes' shapes.
    pub(crate) fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("KERNEL_E_BITS_U32", Self::E_BITS_U32.to_string()),
            (
                "KERNEL_E_BITS_U32_NARROW",
                Self::E_BITS_U32_NARROW.to_string(),
            ),
            ("KERNEL_E_BITS_U64", Self::E_BITS_U64.to_string()),
            ("KERNEL_E_BITS_PAIRS", Self::E_BITS_PAIRS.to_string()),
            ("KERNEL_TUNED_THREADS", Self::MAX_THREADS.to_string()),
            (
                "KERNEL_TUNED_THREADS_PAIRS",
                Self::MAX_THREADS_PAIRS.to_string(),
            ),
            ("KERNEL_TILE_BITS_32", self.tile_bits(4).to_string()),
            ("KERNEL_TILE_BITS_64", self.tile_bits(8).to_string()),
        ]
    }
}
