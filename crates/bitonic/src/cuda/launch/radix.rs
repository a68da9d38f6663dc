//! The radix sorts with indices (kernels/radix.cu): one block a row, and the passes over tiles
//! (a count of every row's digits, then a store of each tile in order a digit).

use super::launch;
use crate::cuda::exec::Exec;
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtr, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg,
};

/// Where the one-block radix sort reads the keys: their own array, or the array it writes the
/// sorted keys to (an argsort of device keys sorts them in place).
pub(crate) enum RadixInput<'a, 'b, W> {
    /// The keys, left as they are.
    Keys(&'a CudaView<'b, W>),
    /// The output array holds them.
    InPlace,
}

/// The tiles of the passes: keys a row, keys a tile, tiles a row.
pub(crate) type Tiles = (u32, u32, u32);

/// kernels/radix.cu `row_radix_sort_W(keys, sorted_keys, indices, row_len, k, map)`: one block a
/// row (`cfg`: a block a row, the plan's threads and shared memory), the first `k` keys of each
/// row and their indices to `sorted` and `indices` in rows of `k`.
pub(crate) fn row_radix_sort<W: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    input: RadixInput<W>,
    (sorted, indices): (&mut CudaViewMut<W>, &mut CudaViewMut<I>),
    (row_len, k, map): (u32, u32, u32),
) -> Result<(), DriverError> {
    let rows = cfg.grid_dim.0 as usize;
    assert!(sorted.len() >= rows * k as usize && indices.len() >= rows * k as usize);
    // In place, the kernel's `keys` is the output's address: each block loads its whole row
    // into shared memory before it stores any of it.
    let in_place = match input {
        RadixInput::Keys(keys) => {
            assert!(keys.len() >= rows * row_len as usize);
            None
        }
        RadixInput::InPlace => {
            // (rows of k at row × k would overwrite rows other blocks still read)
            assert!(k == row_len, "an in-place sort writes whole rows");
            assert!(sorted.len() >= rows * row_len as usize);
            Some(sorted.device_ptr(x.stream).0)
        }
    };
    // SAFETY: row_radix_sort_W(const W *keys, W *sorted_keys, u32 *indices, u32 row_len, u32 k,
    // u32 map): block b reads row b of `keys` (rows × row_len words, asserted) and writes k
    // keys and indices (u32, or u64 with MAP_INDEX64 in `map`, which the caller sets from I) of
    // row b; the shared memory of `cfg` is the plan's for this row length.
    unsafe {
        launch(x, kernel, cfg, |l| {
            match (&input, &in_place) {
                (RadixInput::Keys(keys), _) => l.arg(*keys),
                (RadixInput::InPlace, Some(at)) => l.arg(at),
                (RadixInput::InPlace, None) => unreachable!("an in-place address"),
            };
            l.arg(sorted).arg(indices).arg(&row_len).arg(&k).arg(&map);
        })
    }
}

/// kernels/radix.cu `radix_digit_counts_W(keys, row_counts, row_len, tile, tiles_a_row,
/// key_map)`: a block a tile adds its keys' count of each value of each digit (the keys mapped by
/// `key_map`, the call's map) to its row's counts ([row][digit][value], zeroed before).
pub(crate) fn radix_digit_counts<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    row_counts: &mut CudaViewMut<u32>,
    (row_len, tile, tiles_a_row): Tiles,
    key_map: u32,
) -> Result<(), DriverError> {
    let tiles = cfg.grid_dim.0 as usize;
    let rows = tiles / tiles_a_row as usize;
    let counts = rows * std::mem::size_of::<W>() * 256;
    assert!(keys.len() >= rows * row_len as usize && row_counts.len() >= counts);
    // SAFETY: radix_digit_counts_W(const W *keys, u32 *row_counts, u32 row_len, u32 tile,
    // u32 tiles_a_row, u32 key_map): block b reads its tile of the rows (asserted) and adds to
    // its row's W × 256 counts (asserted).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys)
                .arg(row_counts)
                .arg(&row_len)
                .arg(&tile)
                .arg(&tiles_a_row)
                .arg(&key_map);
        })
    }
}

/// The arrays of one store pass: the keys and indices it reads (the input's keys for the first
/// digit, whose indices are made from their columns where `index_in` is `None`, or else are a
/// key-value sort's 4-byte values in `index_in`; sortable words and u32 indices after), and the
/// ones it writes (u32 indices, or for the last digit the caller's, u64 where its map has
/// MAP_INDEX64); `input`, the input's keys, which the last digit stores by index where
/// `from_input`.
pub(crate) struct ScatterArrays<'v, 'a, 'b, 'c, W, I> {
    pub(crate) keys: &'v CudaView<'a, W>,
    pub(crate) input: &'v CudaView<'a, W>,
    pub(crate) from_input: bool,
    pub(crate) index_in: Option<&'v CudaView<'a, u32>>,
    pub(crate) keys_out: &'v mut CudaViewMut<'b, W>,
    /// None for a sort of keys alone: no index is stored (nor read).
    pub(crate) index_out: Option<&'v mut CudaViewMut<'c, I>>,
}

/// One digit's look-back words of a store pass over rows of several tiles: its status words
/// (tiles × 256, zeroed), every row's count of each value of each digit, and its next tile
/// (one u32, zeroed).
pub(crate) struct LookBackArrays<'a> {
    pub(crate) status: CudaViewMut<'a, u64>,
    pub(crate) row_counts: CudaView<'a, u32>,
    pub(crate) next_tile: CudaViewMut<'a, u32>,
}

/// kernels/radix.cu `radix_scatter_W(keys, index_in, keys_out, index_out, row_counts, status,
/// next_tile, input, row_len, tile, tiles_a_row, shift, map, first, last, k, from_input,
/// index_from_columns)`: a block a tile orders its keys by the digit at `shift` and stores each
/// at its place in its row (rows of several tiles learn it through `look_back`, which the
/// others go without); the `last` digit's stores the first `k` of each row in rows of k.
pub(crate) fn radix_scatter<W: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    arrays: ScatterArrays<W, I>,
    mut look_back: Option<LookBackArrays>,
    (row_len, tile, tiles_a_row): Tiles,
    (shift, map, first, last, k): (u32, u32, bool, bool, u32),
) -> Result<(), DriverError> {
    let tiles = cfg.grid_dim.0 as usize;
    let rows = tiles / tiles_a_row as usize;
    let n = rows * row_len as usize;
    let ScatterArrays {
        keys,
        input,
        from_input,
        index_in,
        keys_out,
        index_out,
    } = arrays;
    let kept = if last { rows * k as usize } else { n };
    assert!(keys.len() >= n && keys_out.len() >= kept);
    assert!(index_out.as_ref().map_or(true, |index| index.len() >= kept));
    assert!(index_in.map_or(true, |index| index.len() >= n));
    assert!(
        first || index_in.is_some() || index_out.is_none(),
        "only the first digit makes its indices (or keys alone, which store none)"
    );
    assert!(!from_input || input.len() >= n);
    // Rows of one tile read no look-back word: null pointers stand in.
    assert_eq!(
        look_back.is_some(),
        tiles_a_row > 1,
        "rows of several tiles look back"
    );
    if let Some(l) = &look_back {
        let counts = rows * std::mem::size_of::<W>() * 256;
        assert!(l.status.len() >= tiles * 256 && l.row_counts.len() >= counts);
        assert!(!l.next_tile.is_empty());
    }
    let (first, last, from_input) = (first as u32, last as u32, from_input as u32);
    let index_from_columns = index_in.is_none() as u32;
    let null = 0u64;
    // SAFETY: radix_scatter_W(const W *keys, const u32 *index_in, W *keys_out, u32 *index_out,
    // const u32 *row_counts, u64 *status, u32 *next_tile, const W *input, u32 row_len, u32 tile,
    // u32 tiles_a_row, u32 shift, u32 map, u32 first, u32 last, u32 k, u32 from_input,
    // u32 index_from_columns): block b reads its tile of `keys` and (unless
    // `index_from_columns`, when the null pointer stands in) of `index_in`, (where
    // `from_input`) the input's keys its indices name, and, over rows of several tiles, its
    // row's counts, its row's earlier tiles' status words, and the next tile's number, which
    // it increments, and writes its own status words; it writes each key and (unless
    // `index_out` is the null pointer: keys alone) its index at its
    // place in its row, below n (each row's places are its own), or for the last digit the
    // first k of each row (the lengths asserted above; u64 indices only where the caller's I
    // is). Rows of one tile read no look-back word (null pointers).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys);
            match index_in {
                Some(index) => l.arg(index),
                None => l.arg(&null),
            };
            l.arg(keys_out);
            match index_out {
                Some(index) => l.arg(index),
                None => l.arg(&null),
            };
            match &mut look_back {
                Some(looked) => l
                    .arg(&looked.row_counts)
                    .arg(&mut looked.status)
                    .arg(&mut looked.next_tile),
                None => l.arg(&null).arg(&null).arg(&null),
            };
            l.arg(input)
                .arg(&row_len)
                .arg(&tile)
                .arg(&tiles_a_row)
                .arg(&shift)
                .arg(&map)
                .arg(&first)
                .arg(&last)
                .arg(&k)
                .arg(&from_input)
                .arg(&index_from_columns);
        })
    }
}
