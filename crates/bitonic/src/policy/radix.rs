//! The radix sorts with indices (kernels/radix.cu; their plan in src/plan/radix.rs): which rows
//! take them, and their blocks.

/// The tuning of the stable radix sorts of rows with indices: argsorts, the top-k of rows by
/// sorting (the stable sort with indices where k is the whole row), and key-value sorts of
/// 4-byte values; and of long rows of keys alone, which the same passes sort without indices.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RadixPolicy {
    /// Rows of at least this many keys take a radix sort; shorter ones the pair passes of the
    /// tuned network (and one shorter array the key-value merge sort). `usize::MAX`: never.
    pub from_row_len: usize,
    /// Rows of 2- or 4-byte keys alone of at least this many keys, of a length that is not a
    /// power of two, take the radix passes too, with no index: the network's passes pad such
    /// rows to a power of two and address them slot by slot. Shorter rows, 8-byte keys and
    /// one array take the network or the merge sort. `usize::MAX`: never.
    pub keys_from_row_len: usize,
    /// Rows of 2- or 4-byte keys alone whose length is a power of two take the radix passes
    /// from this many keys (the network's passes read such rows whole, without padding).
    /// `usize::MAX`: never.
    pub keys_pow2_from_row_len: usize,
    /// Rows of at most this many keys (and at most 2^16, whose indices fit 16 bits) sort in one
    /// block a row in shared memory, where they fit; longer ones in a pass a digit over tiles.
    pub one_block_most: usize,
    /// Keys of a tile of the passes over tiles: a block's.
    pub tile: usize,
    /// Threads of a block of the passes over tiles (a multiple of 32 from 256 to 512, a warp
    /// at least each 512 keys of a tile).
    pub tile_threads: u32,
}

impl RadixPolicy {
    /// Hopper's numbers, measured on an H200 (docs/notes/radix.md; u32 argsorts of rows in the
    /// kernels' harness beside `bitonic bench-rows` of the pair passes). Rows from
    /// [`RadixPolicy::MEASURED_FROM`] keys take them. One block a row up to 2^14 keys (0.53 ms against the
    /// passes' 1.07 at 1024 × 16384); 16 keys a lane ([`RadixPolicy::ROUNDS`]) beat 8 on every
    /// row shape but one (65536 × 256, which the pair passes take). Tiles of 8,192 keys in 512
    /// threads beat 4,096 in 256 and 2,048 in 256 on every long row measured (one row of 2^26:
    /// 2.57 ms against 2.97 and 4.22; of 2^24: 0.73 against 0.78 and 1.08; 64 × 128,256: 0.39
    /// against 0.41 and 0.50), since the passes read their tiles into registers and keep one
    /// shared array (362da7d).
    pub const HOPPER: RadixPolicy = RadixPolicy {
        from_row_len: Self::MEASURED_FROM,
        keys_from_row_len: Self::KEYS_MEASURED_FROM,
        keys_pow2_from_row_len: usize::MAX,
        one_block_most: 1 << 14,
        tile: 8192,
        tile_threads: 512,
    };

    /// The shortest rows the radix sorts won on, against the pair passes (4,096: 0.44 ms against
    /// 0.57 at 4096 × 4096, 0.53 against 0.90 at 1024 × 16384; they lost at 1,024: 0.54 against
    /// 0.47 at 16384 × 1024; 2,048 not measured).
    pub const MEASURED_FROM: usize = 4096;

    /// Where rows of keys alone, of a length that is not a power of two, start to take the radix
    /// passes. The radix passes won on both such rows measured (u32: 64 × 128,256 0.333 ms
    /// against the network's 0.377, 256 × 151,936 1.42 against 3.56); rows of a power of two
    /// from 2^12 to 2^18 keys the network won (0.155 against 0.678 to 0.560 against 0.648).
    /// 2^16 is the power of two below the shorter measured row, not itself measured: rows from
    /// 2^16 to 128,255 keys are an extrapolation (docs/notes/rows.md "Keys alone of long rows").
    pub const KEYS_MEASURED_FROM: usize = 1 << 16;

    /// The most keys of a row one block could sort: its 16-bit indices' limit. (The block's
    /// threads limit it further: a warp each [`RadixPolicy::KEYS_A_WARP`] keys, so 2^14 keys of
    /// 2 or 4 bytes and 2^13 of 8.)
    pub const ONE_BLOCK_LIMIT: usize = 1 << 16;

    /// Rounds of 32 keys a warp holds in registers (`KERNEL_RADIX_ROUNDS`): a block has a warp
    /// each [`RadixPolicy::KEYS_A_WARP`] keys it orders.
    pub const ROUNDS: usize = 16;

    /// Keys a warp of the radix kernels holds.
    pub const KEYS_A_WARP: usize = Self::ROUNDS * 32;

    /// The `-D` defines the radix kernels are compiled with.
    pub(crate) fn defines(&self) -> Vec<(&'static str, String)> {
        vec![("KERNEL_RADIX_ROUNDS", Self::ROUNDS.to_string())]
    }

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.one_block_most > Self::ONE_BLOCK_LIMIT {
            return Err(format!(
                "radix.one_block_most is at most 2^16 (16-bit indices), not {}",
                self.one_block_most
            ));
        }
        // (a multiple of 32 keeps the shared index array after 2-byte keys 4-byte aligned)
        if !(256..=1 << 16).contains(&self.tile) || self.tile % 32 != 0 {
            return Err(format!(
                "radix.tile is a multiple of 32 from 256 to 65536 keys, not {}",
                self.tile
            ));
        }
        if self.tile_threads % 32 != 0 || !(256..=512).contains(&self.tile_threads) {
            return Err(format!(
                "radix.tile_threads is a multiple of 32 from 256 to 512, not {}",
                self.tile_threads
            ));
        }
        if self.tile > self.tile_threads as usize / 32 * Self::KEYS_A_WARP {
            return Err(format!(
                "radix.tile of {} keys is more than the {} warps of radix.tile_threads hold (512 each)",
                self.tile,
                self.tile_threads / 32
            ));
        }
        Ok(())
    }
}
