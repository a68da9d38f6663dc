//! The radix sorts with indices (kernels/radix.cu): one block a row, and the passes over tiles
//! (a count of each tile's digits, the scan of the counts, a store of each tile in order).

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

/// kernels/radix.cu `radix_histogram_W(keys, counts, row_len, tile, tiles_a_row, shift,
/// key_map)`: a block a tile counts its keys' digits at `shift` into `counts` ([row][digit][tile]),
/// the keys mapped by `key_map` (the call's map for the input, 0 for sortable words).
pub(crate) fn radix_histogram<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    counts: &mut CudaViewMut<u32>,
    (row_len, tile, tiles_a_row): Tiles,
    (shift, key_map): (u32, u32),
) -> Result<(), DriverError> {
    let tiles = cfg.grid_dim.0 as usize;
    let rows = tiles / tiles_a_row as usize;
    assert!(keys.len() >= rows * row_len as usize && counts.len() >= tiles * 256);
    // SAFETY: radix_histogram_W(const W *keys, u32 *counts, u32 row_len, u32 tile,
    // u32 tiles_a_row, u32 shift, u32 key_map): block b reads its tile of the rows (asserted) and
    // writes its 256 counts.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys)
                .arg(counts)
                .arg(&row_len)
                .arg(&tile)
                .arg(&tiles_a_row)
                .arg(&shift)
                .arg(&key_map);
        })
    }
}

/// The arrays of one store pass: the keys and indices it reads (the input's keys for the first
/// digit, whose indices are made from their columns where `index_from_columns`, `index_in`
/// unread, or else are a key-value sort's 4-byte values in `index_in`; sortable words and u32
/// indices after), and the ones it writes (u32 indices, or for the last digit the caller's,
/// u64 where its map has MAP_INDEX64); `input`, the input's keys, which the last digit stores
/// by index where `from_input`.
pub(crate) struct ScatterArrays<'v, 'a, 'b, 'c, W, I> {
    pub(crate) keys: &'v CudaView<'a, W>,
    pub(crate) input: &'v CudaView<'a, W>,
    pub(crate) from_input: bool,
    pub(crate) index_in: &'v CudaView<'a, u32>,
    pub(crate) index_from_columns: bool,
    pub(crate) keys_out: &'v mut CudaViewMut<'b, W>,
    pub(crate) index_out: &'v mut CudaViewMut<'c, I>,
}

/// kernels/radix.cu `radix_scatter_W(keys, index_in, keys_out, index_out, offsets, input,
/// row_len, tile, tiles_a_row, shift, map, first, last, k, from_input, index_from_columns)`: a
/// block a tile orders its keys by the digit
/// at `shift` and stores each where `offsets` (the counts' exclusive scan) says; the `last`
/// digit's stores the first `k` of each row in rows of k.
pub(crate) fn radix_scatter<W: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    arrays: ScatterArrays<W, I>,
    offsets: &CudaView<u32>,
    (row_len, tile, tiles_a_row): Tiles,
    (shift, map, first, last, k): (u32, u32, bool, bool, u32),
) -> Result<(), DriverError> {
    let tiles = cfg.grid_dim.0 as usize;
    let n = tiles / tiles_a_row as usize * row_len as usize;
    let ScatterArrays {
        keys,
        input,
        from_input,
        index_in,
        index_from_columns,
        keys_out,
        index_out,
    } = arrays;
    let kept = if last {
        n / row_len as usize * k as usize
    } else {
        n
    };
    assert!(keys.len() >= n && keys_out.len() >= kept && index_out.len() >= kept);
    assert!(index_from_columns || index_in.len() >= n);
    assert!(
        first || !index_from_columns,
        "only the first digit makes its indices"
    );
    assert!(offsets.len() >= tiles * 256);
    assert!(!from_input || input.len() >= n);
    let (first, last, from_input) = (first as u32, last as u32, from_input as u32);
    let index_from_columns = index_from_columns as u32;
    // SAFETY: radix_scatter_W(const W *keys, const u32 *index_in, W *keys_out, u32 *index_out,
    // const u32 *offsets, const W *input, u32 row_len, u32 tile, u32 tiles_a_row, u32 shift,
    // u32 map, u32 first, u32 last, u32 k, u32 from_input, u32 index_from_columns): block b
    // reads its tile of `keys` and (unless `index_from_columns`) of `index_in`, its 256
    // offsets, (where `from_input`) the input's keys its indices name, and writes each key and
    // index at its offset, below n (the offsets are a scan of counts that add up to n), or for
    // the last digit the first k of each row (the lengths asserted above; u64 indices only
    // where the caller's I is).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys)
                .arg(index_in)
                .arg(keys_out)
                .arg(index_out)
                .arg(offsets)
                .arg(input)
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

/// kernels/radix.cu `radix_scan_sums(data, sums, len)`, `radix_scan_of_sums(sums, count)` and
/// `radix_scan_chunks(data, sums, len)`: the exclusive scan of `data` in place, through the sum
/// of each chunk of 4,096 in `sums`. `kernels` in that order.
pub(crate) fn radix_scan(
    x: &Exec,
    kernels: [&CudaFunction; 3],
    data: &mut CudaViewMut<u32>,
    sums: &mut CudaViewMut<u32>,
) -> Result<(), DriverError> {
    let len = u32::try_from(data.len()).expect("the plan keeps the counts below 2^32");
    let chunks = len.div_ceil(4096);
    assert!(sums.len() >= chunks as usize);
    let cfg = crate::cuda::exec::config(chunks, 256, 0);
    {
        let read = data.as_view();
        // SAFETY: radix_scan_sums(const u32 *data, u32 *sums, u32 len): block b sums data's
        // chunk b (below len) into sums[b], one a chunk (asserted).
        unsafe {
            launch(x, kernels[0], cfg, |l| {
                l.arg(&read).arg(&mut *sums).arg(&len);
            })?;
        }
    }
    // SAFETY: radix_scan_of_sums(u32 *sums, u32 count): one block scans the `chunks` sums.
    unsafe {
        launch(x, kernels[1], crate::cuda::exec::config(1, 1024, 0), |l| {
            l.arg(&mut *sums).arg(&chunks);
        })?;
    }
    // SAFETY: radix_scan_chunks(u32 *data, const u32 *sums, u32 len): block b scans its chunk of
    // data (below len) from sums[b].
    unsafe {
        let sums = sums.as_view();
        launch(x, kernels[2], cfg, |l| {
            l.arg(data).arg(&sums).arg(&len);
        })
    }
}
