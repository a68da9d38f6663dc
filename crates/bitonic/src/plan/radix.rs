//! The stable radix sorts (kernels/radix.cu, run by src/cuda/radix.rs): argsorts of rows, and
//! the top-k of rows by sorting, whose first k keys a row they write with their indices;
//! key-value sorts of 4-byte values, which the passes carry in the indices' place; and long rows
//! of keys alone, which the passes sort with no index ([`RadixPlan::indices`]).
//! A row of at most [`RadixPolicy::one_block_most`] keys sorts in one block in shared memory
//! ([`RadixShape::OneBlockARow`]); a longer row, or one that does not fit, in a pass a digit
//! over tiles of the rows ([`RadixShape::Passes`]).
//!
//! Bytes a key moves, keys of W bytes and u32 indices: one block a row reads the key once and
//! writes it and its index once. The passes move, for each of W digits, the key twice (counted,
//! then read to be stored) and once its index, and store both: (3W + 8) bytes a digit, less
//! the first digit's index read (which makes the index, or reads a value), the last one's
//! stores only for the first k. Keys alone move the key alone: 3W bytes a digit.

use super::workspace::{Scratch, Workspace};
use super::Strategy;
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::policy::RadixPolicy;

/// Where a radix sort's keys stay between digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RadixShape {
    /// One block a row, in shared memory, with 16-bit indices: one launch.
    OneBlockARow {
        /// Threads a block.
        threads: u32,
        /// Dynamic shared memory a block.
        shared_bytes: u32,
    },
    /// A pass a digit over tiles of the rows, one launch each: a store of each tile's keys in
    /// order of the digit, between two arrays of the workspace, each tile learning where its
    /// keys go by looking back at the row's earlier tiles (rows of several tiles, after one
    /// launch that counts every digit of every row).
    Passes {
        /// Keys a tile (a block's).
        tile: usize,
        /// Threads a block.
        threads: u32,
        /// Tiles a row.
        tiles_a_row: usize,
        /// Dynamic shared memory of a storing block.
        shared_bytes: u32,
        /// Arrays of keys (and of indices, unless keys alone) between passes: one for two
        /// digits, else two.
        buffers: usize,
        /// The look-back's words ([`LookBack`]), where rows span several tiles.
        look_back: Option<LookBack>,
    },
}

/// A radix sort's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixPlan {
    /// Rows.
    pub rows: usize,
    /// Keys a row.
    pub row_len: usize,
    /// Keys a row written (the row's length for an argsort).
    pub k: usize,
    /// Bytes of a key: a digit a byte.
    pub key_bytes: usize,
    /// One block a row, or passes over tiles.
    pub shape: RadixShape,
    /// The keys carry a key-value sort's 4-byte values in place of their indices: the first
    /// digit reads them from the values' array, the last writes them back there in order
    /// (passes only, in place, k the whole row).
    pub values: bool,
    /// The passes carry and write indices; false for keys alone (passes only, in place, k the
    /// whole row), which move nothing but their keys.
    pub indices: bool,
}

/// The words of the passes' look-back over rows of several tiles (kernels/radix.cu
/// `radix_scatter`), zeroed before the first pass, in one array of u64 of the workspace
/// ([`Scratch::RadixLookBack`]): for each digit, a status word for each tile and value (256),
/// then each row's count of each value of each digit (u32) and each digit's next tile (u32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookBack {
    /// Status words of one digit's pass: tiles × 256.
    pub status: usize,
    /// Row counts: rows × digits × 256 (u32).
    pub row_counts: usize,
}

impl LookBack {
    /// The u64 words of the whole array, for `digits` digits.
    pub fn words(&self, digits: usize) -> usize {
        digits * self.status + (self.row_counts + digits).div_ceil(2)
    }
}

/// Values of one radix digit.
const DIGITS: usize = 256;

/// Shared memory of a block that sorts a row of `row_len` keys of `key_bytes` alone with
/// `threads`: the u16 counts of each warp, two arrays of keys and two of u16 indices.
pub(crate) fn one_block_shared_bytes(row_len: usize, key_bytes: usize, threads: u32) -> usize {
    (threads as usize / 32) * DIGITS * 2 + 2 * row_len * key_bytes + 2 * row_len * 2
}

/// Shared memory of a storing block of tiles of `tile` keys: the digits' u32 bases, the u16
/// counts of each warp, the ordered tile's keys and their u32 indices (the keys come to it
/// from registers, not from a second array).
pub(crate) fn tile_shared_bytes(tile: usize, key_bytes: usize, threads: u32) -> usize {
    DIGITS * 4 + (threads as usize / 32) * DIGITS * 2 + tile * key_bytes + tile * 4
}

/// Whether rows of `row_len` keys of `key_bytes` sort one block a row
/// ([`Strategy::RowRadix`](super::Strategy::RowRadix)): at most the policy's
/// [`RadixPolicy::one_block_most`] and 2^16 keys, in the device's shared memory of a block.
pub(crate) fn one_block_a_row(
    info: &DeviceInfo,
    policy: &RadixPolicy,
    row_len: usize,
    key_bytes: usize,
) -> bool {
    let threads = one_block_threads(row_len);
    let shared = one_block_shared_bytes(row_len, key_bytes, threads);
    // 8-byte keys take at most 512 threads (the kernel's launch bounds: registers).
    let most_threads = if key_bytes == 8 { 512 } else { 1024 };
    row_len <= policy.one_block_most.min(RadixPolicy::ONE_BLOCK_LIMIT)
        && shared + STATIC_SHARED <= info.shared_per_block_optin
        && threads <= most_threads
}

/// Static shared memory of a radix block beside the dynamic part, at most: the digit sort's
/// scalars (36 bytes), the scan's warp sums, the dynamic part's 16-byte alignment.
const STATIC_SHARED: usize = 256;

/// Threads of a block that sorts a row of `row_len` keys: a warp each 512 keys, at least 256
/// (the scan of the digits' counts takes a thread a digit).
fn one_block_threads(row_len: usize) -> u32 {
    (row_len.div_ceil(RadixPolicy::KEYS_A_WARP) * 32).max(256) as u32
}

/// The radix sort of `rows` rows of `row_len` keys of `key_bytes`, keeping `k` a row (with
/// `values`, carrying a key-value sort's values instead of indices), one
/// block a row where `strategy` (chosen by [`one_block_a_row`]) is
/// [`Strategy::RowRadix`](super::Strategy::RowRadix), else in passes; its scratch goes to
/// `workspace`. [`Error::Unsupported`] where no tile of the passes fits the
/// device's shared memory, or the passes' counts (256 a tile) pass 2^32 (rows far shorter
/// than a tile, under a policy that sends them to the passes).
pub(crate) fn plan_radix(
    info: &DeviceInfo,
    policy: &RadixPolicy,
    strategy: Strategy,
    (rows, row_len, k): (usize, usize, usize),
    (key_bytes, values, indices): (usize, bool, bool),
    workspace: &mut Workspace,
) -> Result<RadixPlan> {
    // One block a row makes 16-bit indices in shared memory: values and keys alone take the
    // passes.
    assert!(!values || (strategy == Strategy::RadixSort && k == row_len));
    assert!(indices || (!values && strategy == Strategy::RadixSort && k == row_len));
    let shape = if strategy == Strategy::RowRadix {
        let threads = one_block_threads(row_len);
        let shared = one_block_shared_bytes(row_len, key_bytes, threads);
        RadixShape::OneBlockARow {
            threads,
            shared_bytes: shared as u32,
        }
    } else {
        let threads = policy.tile_threads;
        // The policy's tile, or a shorter row's; halved until it fits a block's shared memory
        // (8-byte keys on sm_86/89's 99 KiB).
        let fits = |tile| {
            tile_shared_bytes(tile, key_bytes, threads) + STATIC_SHARED
                <= info.shared_per_block_optin
        };
        let mut tile = policy.tile.min(row_len.next_power_of_two().max(256));
        while tile > 256 && !fits(tile) {
            tile /= 2;
        }
        if !fits(tile) {
            return Err(Error::Unsupported(
                "a radix tile in this device's shared memory",
            ));
        }
        let tiles_a_row = row_len.div_ceil(tile);
        if rows * tiles_a_row > u32::MAX as usize {
            return Err(Error::Unsupported(
                "radix passes over rows this short: more than 2^32 tiles",
            ));
        }
        // Digits 0 … W-1: the input to array 0, then between the arrays, the last to the output.
        let buffers = if key_bytes <= 2 { 1 } else { 2 };
        let n = rows * row_len;
        workspace.add(Scratch::RadixKeys, buffers * n, key_bytes);
        if indices {
            workspace.add(Scratch::RadixIndices, buffers * n, 4);
        }
        // A row of one tile is its ordered tile: nothing to count or look back at.
        let look_back = (tiles_a_row > 1).then(|| LookBack {
            status: rows * tiles_a_row * DIGITS,
            row_counts: rows * key_bytes * DIGITS,
        });
        if let Some(look_back) = look_back {
            workspace.add(Scratch::RadixLookBack, look_back.words(key_bytes), 8);
        }
        RadixShape::Passes {
            tile,
            threads,
            tiles_a_row,
            shared_bytes: tile_shared_bytes(tile, key_bytes, threads) as u32,
            buffers,
            look_back,
        }
    };
    Ok(RadixPlan {
        rows,
        row_len,
        k,
        key_bytes,
        shape,
        values,
        indices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of the strategy that the choice (`one_block_a_row`) gives these rows.
    fn plan(
        info: &DeviceInfo,
        policy: &RadixPolicy,
        shape: (usize, usize, usize),
        key_bytes: usize,
        workspace: &mut Workspace,
    ) -> RadixPlan {
        let strategy = match one_block_a_row(info, policy, shape.1, key_bytes) {
            true => Strategy::RowRadix,
            false => Strategy::RadixSort,
        };
        plan_radix(
            info,
            policy,
            strategy,
            shape,
            (key_bytes, false, true),
            workspace,
        )
        .unwrap()
    }

    #[test]
    fn short_rows_sort_in_one_block_and_long_ones_in_passes() {
        let info = DeviceInfo::h100();
        let policy = RadixPolicy::HOPPER;
        let mut w = Workspace::none();
        let p = plan(&info, &policy, (4096, 4096, 4096), 4, &mut w);
        assert_eq!(
            p.shape,
            RadixShape::OneBlockARow {
                threads: 256,
                shared_bytes: 4 * 1024 + 2 * 4096 * 6
            }
        );
        assert_eq!(w.bytes(), 0, "one block a row needs no scratch");
        // A row of 2^24: 2048 tiles of 8192 keys, two arrays between passes, and the look-back's
        // status words (2048 × 256 a digit), row counts (4 × 256) and next tiles (4).
        let p = plan(&info, &policy, (1, 1 << 24, 1 << 24), 4, &mut w);
        let RadixShape::Passes {
            tiles_a_row,
            buffers,
            look_back,
            ..
        } = p.shape
        else {
            panic!("{p:?}")
        };
        let look_back = look_back.expect("rows of several tiles look back");
        assert_eq!((tiles_a_row, buffers), (2048, 2));
        assert_eq!((look_back.status, look_back.row_counts), (1 << 19, 1024));
        assert_eq!(w.part(Scratch::RadixKeys).unwrap().bytes, 2 << 26);
        let words = 4 * (1 << 19) + (1024 + 4) / 2;
        assert_eq!(w.part(Scratch::RadixLookBack).unwrap().bytes, 8 * words);
        // Rows of one tile each (1024 × 4096 with values, say) need no look-back.
        let mut w = Workspace::none();
        let p = plan_radix(
            &info,
            &policy,
            Strategy::RadixSort,
            (1024, 4096, 4096),
            (4, true, true),
            &mut w,
        )
        .unwrap();
        assert!(matches!(
            p.shape,
            RadixShape::Passes {
                tiles_a_row: 1,
                look_back: None,
                ..
            }
        ));
        assert!(w.part(Scratch::RadixLookBack).is_none());
        // Keys alone: their arrays, no index array.
        let mut w = Workspace::none();
        let p = plan_radix(
            &info,
            &policy,
            Strategy::RadixSort,
            (256, 151_936, 151_936),
            (4, false, false),
            &mut w,
        )
        .unwrap();
        assert!(!p.indices);
        assert_eq!(
            w.part(Scratch::RadixKeys).unwrap().bytes,
            2 * 4 * 256 * 151_936
        );
        assert!(w.part(Scratch::RadixIndices).is_none());
        // 16-bit keys: two digits, one array between them; 8-byte keys of 2^14 do not fit a
        // block (2^14 × 20 bytes > 227 KiB).
        let mut w = Workspace::none();
        let p = plan(&info, &policy, (64, 128_256, 128_256), 2, &mut w);
        assert!(matches!(p.shape, RadixShape::Passes { buffers: 1, .. }));
        let mut w = Workspace::none();
        let p = plan(&info, &policy, (8, 1 << 14, 1 << 14), 8, &mut w);
        assert!(matches!(p.shape, RadixShape::Passes { .. }));
    }
}
