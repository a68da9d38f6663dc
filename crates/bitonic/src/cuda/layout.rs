//! The structs and flags the host shares with the kernels, each laid out as its CUDA twin
//! (kernels/common/). Their sizes are checked at compile time here and, through the
//! `-D` defines of [`shared_defines`], by a `static_assert` in the kernels.

use crate::key::MapKind;
use crate::network::padded_len;
use cudarc::driver::DeviceRepr;

/// Where the keys of the tuned passes' slots live: kernels/tuned.cu's `RowLayout`, field for
/// field. The passes sort rows of 2^row_bits slots; a row's slots past its length are padding.
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

// SAFETY: a plain C struct of integers, laid out as the kernel's.
unsafe impl DeviceRepr for RowLayout {}

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

    /// `rows` segments of at most 2^row_bits keys, their starts and lengths in device arrays.
    pub(crate) fn segments(
        n: usize,
        row_bits: u32,
        rows: usize,
        starts: u64,
        lens: u64,
    ) -> RowLayout {
        RowLayout {
            segment_start: starts,
            segment_len: lens,
            n: n as u32,
            row_bits,
            row_len: 0,
            rows: rows as u32,
            contiguous: 0,
        }
    }

    /// Whether rows are segments with their own starts and lengths.
    pub(crate) fn is_segmented(&self) -> bool {
        self.segment_start != 0
    }

    /// Slots of all rows: the passes' index space: under 2^32 for at most `MAX_LEN` keys,
    /// since padding less than doubles each row.
    pub(crate) fn slots(&self) -> usize {
        (self.rows as usize) << self.row_bits
    }
}

/// kernels/common/types.cuh's `KeyIndex`: a sortable 64-bit key and its index in its row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct KeyIndex {
    key: u64,
    index: u32,
    unused: u32,
}

// SAFETY: plain integers, laid out as the kernel's struct.
unsafe impl DeviceRepr for KeyIndex {}

const _: () = assert!(std::mem::size_of::<RowLayout>() == 40);
const _: () = assert!(std::mem::size_of::<KeyIndex>() == 16);

/// Key-map flags of the kernels, beside a `MapKind` (kernels/common/keys.cuh): descending order,
/// and (the tuned passes) the map applied on the first pass's loads and undone on the last
/// pass's stores.
pub(crate) const MAP_DESCENDING: u32 = 4;
pub(crate) const MAP_ON_LOAD: u32 = 8;
pub(crate) const MAP_ON_STORE: u32 = 16;

/// The `-D` defines that tell the kernels the sizes and flags above, so that a kernel whose
/// struct differs fails to compile (`static_assert`) instead of reading garbage.
pub(crate) fn shared_defines() -> Vec<super::nvrtc::Define> {
    vec![
        (
            "KERNEL_ROW_LAYOUT_BYTES",
            std::mem::size_of::<RowLayout>().to_string(),
        ),
        (
            "KERNEL_KEY_INDEX_BYTES",
            std::mem::size_of::<KeyIndex>().to_string(),
        ),
        ("KERNEL_MAP_SIGNED", (MapKind::Signed as u32).to_string()),
        ("KERNEL_MAP_FLOAT", (MapKind::Float as u32).to_string()),
        ("KERNEL_MAP_DESCENDING", MAP_DESCENDING.to_string()),
        ("KERNEL_MAP_ON_LOAD", MAP_ON_LOAD.to_string()),
        ("KERNEL_MAP_ON_STORE", MAP_ON_STORE.to_string()),
    ]
}

/// The key-map argument of the kernels for keys `K` in `order`: its `MapKind` and the
/// descending flag.
pub(crate) fn map_flags<K: crate::SortKey>(order: crate::Order) -> u32 {
    let descending = match order {
        crate::Order::Descending => MAP_DESCENDING,
        crate::Order::Ascending => 0,
    };
    K::DTYPE.map_kind() as u32 | descending
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
    }
}
