//! The top-k kernels (kernels/topk.cu): a plan's passes (several as one graph), the spread
//! select, and the take of a sorted row's first k indices and the gather of the keys they
//! name.

use super::launch;
use crate::cuda::exec::Exec;
use crate::cuda::graph::{self, KernelNode};
use crate::plan::topk::{SpreadArgs, SpreadScratch, TopkArgs};
use cudarc::driver::{
    CudaFunction, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DriverError,
    LaunchConfig, PushKernelArg,
};

/// The passes of the filter, the radix select or the warp sort, kernels/topk.cu `topk_keys_W`,
/// `topk_partials_W`, `topk_radix_keys_W_R`, `topk_radix_partials_W_R`, `topk_radix_stream_W`,
/// `topk_sampled_W`, `topk_merge_W`, `topk_warp_sort_W_P` and `topk_warp_filter_W(input,
/// row_len, rows, chunks, chunk_len, k, slots, map, partials, values, indices, keys,
/// keys_row_len)`, several as one CUDA graph (graph.rs), each after the one before: the first
/// reads `input` (rows of keys `In`), each later one the partial results of the one before,
/// composites of `composite_bytes`, k a chunk, which alternate between the two halves of
/// `scratch` (`half` bytes each); the last, one chunk a row, writes `values` (the keys it
/// selected, mapped back from their words, or read back from `input` where a tied map's word
/// stands for several keys; every pass gets `input` as `keys`, rows of the first pass's
/// `row_len`) and `indices` (of `I`: 8-byte ones where the map has `MAP_INDEX64`).
pub(crate) fn topk_passes<In: DeviceRepr, B: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    passes: &[(CudaFunction, LaunchConfig, TopkArgs)],
    input: &CudaView<In>,
    (scratch, half, composite_bytes): (&mut CudaViewMut<u8>, usize, usize),
    (values, indices): (&mut CudaViewMut<B>, &mut CudaViewMut<I>),
) -> crate::Result<()> {
    assert!(scratch.len() >= 2 * half && !passes.is_empty());
    let wide = passes[0].2.map & crate::kernels::abi::MAP_INDEX64 != 0;
    assert_eq!(
        std::mem::size_of::<I>(),
        if wide { 8 } else { 4 },
        "the indices' width"
    );
    let (values_len, indices_len) = (values.len(), indices.len());
    let stream = x.stream;
    let (keys, _record_read) = input.device_ptr(stream);
    let (values_at, _record_values) = values.device_ptr_mut(stream);
    let (indices_at, _record_indices) = indices.device_ptr_mut(stream);
    let (base, _record_scratch) = scratch.device_ptr_mut(stream);
    let (null, last) = (0u64, passes.len() - 1);
    let keys_row_len = passes[0].2.row_len;
    let mut readable = input.len(); // elements the pass's input holds
    let mut launches = Vec::with_capacity(passes.len());
    for (i, (kernel, cfg, a)) in passes.iter().enumerate() {
        let (rows, k) = (a.rows as usize, a.k as usize);
        assert!(
            readable >= rows * a.row_len as usize,
            "rows of row_len elements"
        );
        assert!(a.slots as usize * composite_bytes <= cfg.shared_mem_bytes as usize);
        assert!(k >= 1 && (a.slots as usize).is_power_of_two() && a.slots >= a.k);
        let from = match i {
            0 => keys,
            _ => base + ((i - 1) % 2 * half) as u64,
        };
        let mut node = KernelNode::new(kernel, *cfg);
        node.arg(&from).arg(&a.row_len).arg(&a.rows).arg(&a.chunks);
        node.arg(&a.chunk_len).arg(&a.k).arg(&a.slots).arg(&a.map);
        if i < last {
            assert!(a.chunks > 1);
            node.arg(&(base + (i % 2 * half) as u64))
                .arg(&null)
                .arg(&null);
            readable = rows * a.chunks as usize * k;
            assert!(
                readable * composite_bytes <= half,
                "a pass's partials fit their half"
            );
        } else {
            assert!(a.chunks == 1 && values_len >= rows * k && indices_len >= rows * k);
            node.arg(&null).arg(&values_at).arg(&indices_at);
        }
        node.arg(&keys).arg(&keys_row_len);
        launches.push(node);
    }
    // SAFETY: each node's arguments are its kernel's, in order and type (above): it reads
    // rows x row_len elements of its input (the keys, or the partial results of the pass
    // before: checked above), writes chunks x k partials a row to its half of the scratch (at
    // most `half` bytes: checked above), or, the last pass, k values and indices a row of the
    // width its map says (checked above), the other outputs null and unused, the values read
    // from the keys (rows x keys_row_len of them: the first pass's check); and keeps `slots`
    // composites in its dynamic shared memory (checked above; src/plan/topk sizes it).
    unsafe { graph::launch(&x.gpu.graphs, x.stream, launches, "the top-k's passes") }
}

/// The spread select's kernels (kernels/topk.cu `topk_spread_*_W`): the sample, the threshold
/// (where several blocks sample a row, else `None`), the gather and the select, each with its
/// launch shape.
pub(crate) struct SpreadKernels<'k> {
    pub sample: (&'k CudaFunction, LaunchConfig),
    pub threshold: Option<(&'k CudaFunction, LaunchConfig)>,
    pub gather: (&'k CudaFunction, LaunchConfig),
    pub select: (&'k CudaFunction, LaunchConfig),
}

/// The spread select of `input`'s rows into `values` and `indices` (k a row, of the width the
/// map says), its intermediate results in `scratch` (laid out as `layout`, with `capacity`
/// u64 candidates a row), as one CUDA graph of three or four launches (graph.rs), each after
/// the one before:
/// - `topk_spread_sample_W(input, row_len, rows, rank, map, sample_blocks, spread, lists)`: each
///   row's threshold from a sample of it, its count and ties zeroed; or, where several blocks
///   sample a row, their lists;
/// - `topk_spread_threshold_W(rows, rank, sample_blocks, lists, spread)`: each row's threshold
///   from its sample blocks' lists, its count and ties zeroed;
/// - `topk_spread_gather_W(input, row_len, rows, chunks, chunk_len, map, spread, candidates,
///   chunk_ties)`: the keys of every chunk better than their row's threshold to the row's
///   candidates, those equal to it to its ties, and each chunk's count of ties;
/// - `topk_spread_select_W(input, row_len, rows, chunks, chunk_len, k, slots, map, spread,
///   candidates, chunk_ties, values, indices)`: each row's k best of its candidates and ties
///   (the ties placed in order where they overflowed, or the row filtered where the gather
///   missed), sorted.
pub(crate) fn topk_spread<W: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    kernels: SpreadKernels,
    input: &CudaView<W>,
    a: SpreadArgs,
    (scratch, layout, capacity): (&mut CudaViewMut<u8>, SpreadScratch, usize),
    (values, indices): (&mut CudaViewMut<W>, &mut CudaViewMut<I>),
) -> crate::Result<()> {
    const C: usize = 8; // u64 composites
    let wide = a.map & crate::kernels::abi::MAP_INDEX64 != 0;
    assert_eq!(
        std::mem::size_of::<I>(),
        if wide { 8 } else { 4 },
        "the indices' width"
    );
    let (rows, k) = (a.rows as usize, a.k as usize);
    assert!(input.len() >= rows * a.row_len as usize);
    assert!(values.len() >= rows * k && indices.len() >= rows * k);
    assert!(k >= 1 && (a.slots as usize).is_power_of_two() && a.slots >= a.k);
    assert!(a.rank >= 1 && a.sample_blocks >= 1);
    assert!(kernels.threshold.is_some() == (a.sample_blocks > 1));
    let shared = kernels.select.1.shared_mem_bytes as usize;
    assert!(a.slots as usize * C <= shared);
    assert!(capacity * C <= shared && a.chunks as usize * 4 <= shared);
    assert!(scratch.len() >= layout.end);
    let stream = x.stream;
    let (input, _record_read) = input.device_ptr(stream);
    let (values, _record_values) = values.device_ptr_mut(stream);
    let (indices, _record_indices) = indices.device_ptr_mut(stream);
    let (base, _record_scratch) = scratch.device_ptr_mut(stream);
    let (candidates, spread) = (base, base + layout.rows as u64);
    let (chunk_ties, lists) = (base + layout.chunk_ties as u64, base + layout.lists as u64);

    let mut launches = Vec::with_capacity(4);
    // Where the sample's, the gather's and the select's parameters begin: the rows of keys.
    let rows_of_keys = |(kernel, cfg): (&CudaFunction, LaunchConfig)| {
        let mut node = KernelNode::new(kernel, cfg);
        node.arg(&input).arg(&a.row_len).arg(&a.rows);
        node
    };
    let mut sample = rows_of_keys(kernels.sample);
    sample.arg(&a.rank).arg(&a.map).arg(&a.sample_blocks);
    sample.arg(&spread).arg(&lists);
    launches.push(sample);
    if let Some((kernel, cfg)) = kernels.threshold {
        let mut threshold = KernelNode::new(kernel, cfg);
        threshold.arg(&a.rows).arg(&a.rank).arg(&a.sample_blocks);
        threshold.arg(&lists).arg(&spread);
        launches.push(threshold);
    }
    let mut gather = rows_of_keys(kernels.gather);
    gather.arg(&a.chunks).arg(&a.chunk_len).arg(&a.map);
    gather.arg(&spread).arg(&candidates).arg(&chunk_ties);
    launches.push(gather);
    let mut select = rows_of_keys(kernels.select);
    select.arg(&a.chunks).arg(&a.chunk_len).arg(&a.k);
    select.arg(&a.slots).arg(&a.map).arg(&spread);
    select.arg(&candidates).arg(&chunk_ties);
    select.arg(&values).arg(&indices);
    launches.push(select);
    // SAFETY: each node's arguments are its kernel's, in order and type (above). The sample
    // reads samples of rows x row_len keys (checked above) and writes a SpreadRow a row, or,
    // with several sample blocks, rank words a block a row of the lists; the threshold reads
    // those lists (at most its SPREAD_LISTED words a row, which src/plan/topk/spread.rs
    // `spread_plan` keeps to) and writes a SpreadRow a row; the gather reads the keys and a
    // SpreadRow a row, counts in it, and writes at most the kernel's SPREAD_CAPACITY
    // (`capacity`) better candidates and as many ties a row and a count of ties a chunk; the
    // select reads all those and writes k values and indices a row (checked above), keeping
    // its candidates, the filter's slots, `slots` composites and a u32 a chunk in its dynamic
    // shared memory (checked above; src/plan/topk sizes it). The scratch holds every part
    // (`layout`, checked above).
    unsafe { graph::launch(&x.gpu.graphs, x.stream, launches, "the spread select") }
}

/// kernels/topk.cu `topk_take_W(src, row_len, dst, k, count)`: the first k elements of each
/// row of `row_len` of `src`, k a row into `dst`.
pub(crate) fn topk_take<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    src: &CudaView<W>,
    (row_len, k): (u64, u64),
    dst: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let count = dst.len() as u64;
    assert!(k <= row_len && count % k == 0 && src.len() as u64 >= count / k * row_len);
    // SAFETY: topk_take_W(const W *src, u64 row_len, W *dst, u64 k, u64 count): reads the
    // first k of count / k rows of src (checked above), writes count elements of dst.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(src).arg(&row_len).arg(dst).arg(&k).arg(&count);
        })
    }
}

/// kernels/topk.cu `topk_gather_W_I(keys, row_len, indices, values, k, count)`: the key of
/// each of the `rows × k` results, `values[i] = keys[(i / k) * row_len + indices[i]]`.
pub(crate) fn topk_gather<W: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    (row_len, k): (u64, u64),
    indices: &CudaView<I>,
    values: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let count = values.len() as u64;
    assert!(k <= row_len && count % k == 0 && keys.len() as u64 >= count / k * row_len);
    assert!(indices.len() as u64 >= count);
    // SAFETY: topk_gather_W_I(const W *keys, u64 row_len, const I *indices, W *values, u64 k,
    // u64 count): reads count indices (checked above), each below row_len (the take wrote
    // them from a row's argsort), and so keys of count / k rows (checked above); writes count
    // elements of values.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys)
                .arg(&row_len)
                .arg(indices)
                .arg(values)
                .arg(&k)
                .arg(&count);
        })
    }
}
