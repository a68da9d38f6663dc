//! What the host shares with the kernels: structs passed by value, laid out as their CUDA
//! twins (kernels/common/, kernels/merge/multiway.cuh), and the key-map flags. Each size is
//! checked here at compile time and, through the `-D` defines of [`defines`], by a
//! `static_assert` in the kernels, so a struct that differs fails to compile instead of
//! reading garbage.

use crate::key::{KeyOrder, MapKind};
use crate::network::padded_len;
use crate::options::{FloatOrder, Order};
use crate::DType;

/// Where the keys of the tuned passes' slots live: kernels/common/layout.cuh's `RowLayout`,
/// field for field. The passes sort rows of 2^row_bits slots; a row's slots past its length
/// are padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowLayout {
    /// Device arrays of each row's first key and length (segments), or 0: uniform rows.
    pub(crate) segment_start: u64,
    pub(crate) segment_len: u64,
    pub(crate) n: u32,
    pub(crate) row_bits: u32,
    pub(crate) row_len: u32,
    pub(crate) rows: u32,
    pub(crate) contiguous: u32,
}

impl RowLayout {
    /// `n` keys in rows of `row_len` (`n` a multiple of it; a plain sort is one row of `n`).
    pub(crate) fn rows(n: usize, row_len: usize) -> RowLayout {
        let row_bits = padded_len(row_len.max(1)).trailing_zeros();
        let rows = n.checked_div(row_len).unwrap_or(0) as u32;
        RowLayout {
            segment_start: 0,
            segment_len: 0,
            n: n as u32,
            row_bits,
            row_len: row_len as u32,
            rows,
            contiguous: (rows <= 1 || row_len == 1 << row_bits) as u32,
        }
    }

    /// `n` keys cut into runs of 2^`run_bits` (the last may be shorter), each sorted on its own.
    pub(crate) fn runs(n: usize, run_bits: u32) -> RowLayout {
        RowLayout {
            segment_start: 0,
            segment_len: 0,
            n: n as u32,
            row_bits: run_bits,
            row_len: 1 << run_bits,
            rows: n.div_ceil(1 << run_bits) as u32,
            contiguous: 1,
        }
    }

    /// `rows` segments of at most 2^row_bits keys; their starts and lengths are device arrays
    /// that [`RowLayout::with_segments`] names when they are on the device.
    pub(crate) fn segments(n: usize, row_bits: u32, rows: usize) -> RowLayout {
        RowLayout {
            segment_start: 0,
            segment_len: 0,
            n: n as u32,
            row_bits,
            row_len: 0,
            rows: rows as u32,
            contiguous: 0,
        }
    }

    /// This layout of segments with their starts and lengths at device addresses `starts` and
    /// `lens` (`rows` u32 each).
    pub(crate) fn with_segments(self, starts: u64, lens: u64) -> RowLayout {
        RowLayout {
            segment_start: starts,
            segment_len: lens,
            ..self
        }
    }

    /// Whether rows are segments with their own starts and lengths.
    pub(crate) fn is_segmented(&self) -> bool {
        self.row_len == 0 && self.contiguous == 0
    }

    /// Slots of all rows: the passes' index space: under 2^32 for at most `MAX_LEN` keys,
    /// since padding less than doubles each row.
    pub(crate) fn slots(&self) -> usize {
        (self.rows as usize) << self.row_bits
    }
}

/// Where the tuned passes over key-index pairs read the caller's keys and write each sorted
/// row's first `k`: kernels/common/layout.cuh's `Packing`, field for field. The first pass of a
/// plan packs as it loads ([`PACK_ON_LOAD`]), the last unpacks as it stores
/// ([`UNPACK_ON_STORE`]); every other pass, and every pass of keys alone, has no flags.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Packing {
    /// Device address of the caller's keys, `key_bytes` each, in the layout's rows.
    pub(crate) keys: u64,
    /// Device address of `k` keys a row: those that sort first, the caller's own bits; or the
    /// keys themselves (an argsort in place, `k` the whole row), then written back from their
    /// words (canonical where the map ties keys).
    pub(crate) values: u64,
    /// Device address of their `k` indices a row (u32, or u64 with [`MAP_INDEX64`]).
    pub(crate) indices: u64,
    pub(crate) k: u32,
    /// 2 or 4 (a u64 pair) or 8 (a [`KeyIndex`]).
    pub(crate) key_bytes: u32,
    /// The keys' map, with [`MAP_INDEX64`] for 8-byte indices.
    pub(crate) map: u32,
    /// [`PACK_ON_LOAD`], [`UNPACK_ON_STORE`], both or neither.
    pub(crate) flags: u32,
}

/// [`Packing`]'s flag: the pass reads the caller's keys and makes each one's pair.
pub(crate) const PACK_ON_LOAD: u32 = 1;
/// [`Packing`]'s flag: the pass writes the first `k` of each row's sorted pairs as indices and
/// the caller's keys they name.
pub(crate) const UNPACK_ON_STORE: u32 = 2;

/// kernels/common/types.cuh's `KeyIndex`: a sortable 64-bit key, its index in its row, and a
/// 32-bit value that travels with it. Key-index pairs are one of the library's two ways of
/// carrying values with keys (docs/design/key-value.md): the pair passes over rows, and the
/// multi-GPU key-value sort's words (a position and a value). Elsewhere `value` is 0.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, bytemuck::Pod, bytemuck::Zeroable,
)]
pub(crate) struct KeyIndex {
    key: u64,
    index: u32,
    value: u32,
}

/// How a multiway level cuts each group of its runs into tiles (kernels/merge/multiway.cuh's
/// `MultiwayTiling`): every 2^`sample_bits`-th word of each run is a sample, and tile t of a
/// group starts at the first sample past `tile_samples` t samples of the group's stable
/// merge; a full group has `group_tiles` tiles. [`crate::plan`] makes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiwayTiling {
    /// log2 of the words between samples.
    pub sample_bits: u32,
    /// Samples a tile spans.
    pub tile_samples: u32,
    /// Tiles of a full group.
    pub group_tiles: u32,
}

const _: () = assert!(std::mem::size_of::<RowLayout>() == 40);
const _: () = assert!(std::mem::size_of::<KeyIndex>() == 16);
const _: () = assert!(std::mem::size_of::<Packing>() == 40);
const _: () = assert!(std::mem::size_of::<MultiwayTiling>() == 12);

/// Key-map flags of the kernels, beside a `MapKind` in the low two bits
/// (kernels/common/keys.cuh): descending order; the tuned passes' map on the first pass's
/// loads and its undoing on the last pass's stores; numeric float order (NaNs rotated above
/// +inf, losslessly), for the sorts that keep positions also ties of keys equal by value
/// (canonical keys), and for 16-bit floats bfloat16's layout (f16's otherwise).
pub(crate) const MAP_DESCENDING: u32 = 4;
pub(crate) const MAP_ON_LOAD: u32 = 8;
pub(crate) const MAP_ON_STORE: u32 = 16;
pub(crate) const MAP_NUMERIC: u32 = 32;
pub(crate) const MAP_BFLOAT16: u32 = 64;
pub(crate) const MAP_TIED: u32 = 256;
/// Beside the key map: the top-k and pair kernels write 8-byte indices (4-byte without it).
pub(crate) const MAP_INDEX64: u32 = 128;

/// The key-map argument of the kernels for keys of `dtype` sorted in `order`: the map kind,
/// the descending flag and, for floats in numeric order, the numeric flags.
pub(crate) fn map_flags(dtype: DType, order: KeyOrder) -> u32 {
    let descending = match order.order {
        Order::Descending => MAP_DESCENDING,
        Order::Ascending => 0,
    };
    let kind = dtype.map_kind();
    let numeric = match (kind, order.float) {
        (MapKind::Float, FloatOrder::Numeric) if dtype == DType::BF16 => MAP_NUMERIC | MAP_BFLOAT16,
        (MapKind::Float, FloatOrder::Numeric) => MAP_NUMERIC,
        _ => 0,
    };
    kind as u32 | descending | numeric
}

/// `map` for a sort that keeps positions (argsorts, key-value sorts, top-k): in numeric float
/// order, keys equal by value (`-0.0` and `+0.0`, NaNs) also get one word, so that they tie
/// and keep their input order. The keys an argsort or key-value sort writes are then the
/// canonical ones (a top-k reads its values back from the input).
pub(crate) fn tied(map: u32) -> u32 {
    if map & MAP_NUMERIC != 0 {
        map | MAP_TIED
    } else {
        map
    }
}

/// The sampling kernel (kernels/sample.cu): threads a block, the fixed point of its weights
/// (a weight `w` in `[0, 1]` is summed as `w × 2^SAMPLE_WEIGHT_BITS`, so a row of fewer than
/// [`SAMPLE_MOST_VOCAB`] logits sums to under 2^63) and the most static shared memory a block
/// of it takes (the rest of the block's shared memory can hold its slice of the row).
pub(crate) const SAMPLE_THREADS: u32 = 512;
pub(crate) const SAMPLE_WEIGHT_BITS: u32 = 40;
pub(crate) const SAMPLE_STATIC_SHARED: usize = 34 << 10;
/// The most blocks that share a row (a cluster; 8 is the size every sm_90 device runs).
pub(crate) const SAMPLE_MOST_BLOCKS: u32 = 8;
/// Rows longer than this are refused by the sampling kernel: their fixed-point sums could
/// overflow 64 bits.
pub(crate) const SAMPLE_MOST_VOCAB: usize = 1 << (63 - SAMPLE_WEIGHT_BITS);

/// The `-D` defines that tell the kernels the sizes and flags above.
pub(crate) fn defines() -> Vec<(&'static str, String)> {
    let size = |name, bytes: usize| (name, bytes.to_string());
    let flag = |name, value: u32| (name, value.to_string());
    vec![
        size("KERNEL_ROW_LAYOUT_BYTES", std::mem::size_of::<RowLayout>()),
        size("KERNEL_KEY_INDEX_BYTES", std::mem::size_of::<KeyIndex>()),
        size("KERNEL_PACKING_BYTES", std::mem::size_of::<Packing>()),
        size(
            "KERNEL_MULTIWAY_TILING_BYTES",
            std::mem::size_of::<MultiwayTiling>(),
        ),
        flag("KERNEL_MAP_SIGNED", MapKind::Signed as u32),
        flag("KERNEL_MAP_FLOAT", MapKind::Float as u32),
        flag("KERNEL_MAP_DESCENDING", MAP_DESCENDING),
        flag("KERNEL_MAP_ON_LOAD", MAP_ON_LOAD),
        flag("KERNEL_MAP_ON_STORE", MAP_ON_STORE),
        flag("KERNEL_MAP_NUMERIC", MAP_NUMERIC),
        flag("KERNEL_MAP_BFLOAT16", MAP_BFLOAT16),
        flag("KERNEL_MAP_TIED", MAP_TIED),
        flag("KERNEL_MAP_INDEX64", MAP_INDEX64),
        flag("KERNEL_PACK_ON_LOAD", PACK_ON_LOAD),
        flag("KERNEL_UNPACK_ON_STORE", UNPACK_ON_STORE),
        flag("KERNEL_SAMPLE_THREADS", SAMPLE_THREADS),
        flag("KERNEL_SAMPLE_WEIGHT_BITS", SAMPLE_WEIGHT_BITS),
        size("KERNEL_SAMPLE_STATIC_SHARED", SAMPLE_STATIC_SHARED),
        flag("KERNEL_SAMPLE_MOST_BLOCKS", SAMPLE_MOST_BLOCKS),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_layouts() {
        // One row: slot g is key g, padded to a power of two.
        let plain = RowLayout::rows(1000, 1000);
        assert_eq!((plain.row_bits, plain.rows, plain.contiguous), (10, 1, 1));
        assert_eq!(plain.slots(), 1024);
        // Rows of a power-of-two length stay contiguous; others get padded slots per row.
        let pow2 = RowLayout::rows(64 * 256, 256);
        assert_eq!((pow2.row_bits, pow2.rows, pow2.contiguous), (8, 64, 1));
        let odd = RowLayout::rows(7 * 10_001, 10_001);
        assert_eq!((odd.row_bits, odd.rows, odd.contiguous), (14, 7, 0));
        assert_eq!(odd.slots(), 7 << 14);
        // Padding can almost double a large input's slots; they still fit 32-bit indices.
        let big = RowLayout::rows(3 * ((1 << 29) + 1), (1 << 29) + 1);
        assert_eq!((big.row_bits, big.rows), (30, 3));
        assert!(big.slots() <= u32::MAX as usize);
        assert_eq!(RowLayout::rows(0, 0).rows, 0);
        let segments = RowLayout::segments(100, 4, 30);
        assert!(segments.is_segmented() && !plain.is_segmented());
    }

    #[test]
    fn map_flags_of_each_order() {
        let up = KeyOrder::default();
        let down = KeyOrder::of(Order::Descending);
        let numeric = KeyOrder {
            order: Order::Ascending,
            float: FloatOrder::Numeric,
        };
        assert_eq!(map_flags(DType::U32, up), 0);
        assert_eq!(map_flags(DType::I64, down), 1 | MAP_DESCENDING);
        assert_eq!(map_flags(DType::F32, numeric), 2 | MAP_NUMERIC);
        assert_eq!(
            map_flags(DType::BF16, numeric),
            2 | MAP_NUMERIC | MAP_BFLOAT16
        );
        // Integers have no numeric order of their own.
        assert_eq!(map_flags(DType::U64, numeric), 0);
    }
}
