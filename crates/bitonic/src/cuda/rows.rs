//! Segments, and key-index pairs over rows (kernels/tuned/packing.cuh): the strategies
//! [`Strategy::SegmentPasses`](crate::Strategy::SegmentPasses) and
//! [`Strategy::PairPasses`](crate::Strategy::PairPasses). Uniform rows of keys alone are a
//! shorter plan of the tuned passes (src/cuda/passes.rs).
//!
//! **Rows.** The tuned passes sort rows of 2^b slots: the stages of a network on 2^b keys sort
//! every aligned block of 2^b independently, so a row sort is a shorter plan over the same
//! index space. A row shorter than 2^b is padded with +inf slots that no key ever lands in.
//! Segments of different lengths are grouped by their padded length, one plan per group, so
//! the padding never costs more than the segments themselves.
//!
//! **Stability.** Argsorts and key-value sorts of rows sort (key, index-in-row) pairs: equal
//! keys keep index order. A key of 2 or 4 bytes packs with its index into one u64 word; a
//! 64-bit key and its index make a 16-byte `KeyIndex`; values follow the indices (`gather`).
//!
//! **Packed in the passes.** No launch of its own packs or unpacks (kernels/tuned/packing.cuh):
//! the first pass reads the caller's keys and makes their pairs, the last writes the keys and
//! their indices. An argsort in place ([`sort_pairs`]) writes each key back from its pair (the
//! canonical key where the map ties keys); a top-k by sorting ([`select_rows`]) writes each
//! row's first k indices and the caller's keys they name, bit for bit, into outputs of its
//! own. With k the whole row, that is a stable sort with indices that leaves its input alone.

use super::exec::Exec;
use super::launch::keys::gather;
use super::launch::passes::PackedRows;
use super::memory::{self, Scratchpad};
use super::passes;
use crate::error::{CudaContext as _, Result};
use crate::kernels::abi::KeyIndex;
use crate::kernels::kernel_width;
use crate::kernels::{self};
use crate::network::padded_len;
use crate::plan::{PairPlan, PassPlan, Scratch};
use cudarc::driver::{CudaView, CudaViewMut, DevicePtr, DeviceRepr};

/// Sorts each segment `words[offsets[i]..offsets[i + 1]]`: one of `plans` a group of
/// segments with the same padded length (2, 4, 8, … keys), in the plan's order; their starts
/// and lengths go to the workspace.
pub(crate) fn sort_segments<B: DeviceRepr>(
    x: &Exec,
    plans: &[PassPlan],
    words: &mut CudaViewMut<B>,
    offsets: &[usize],
    pad: &mut Scratchpad,
) -> Result<()> {
    let mut groups: Vec<(Vec<u32>, Vec<u32>)> = vec![Default::default(); 65];
    for w in offsets.windows(2) {
        let len = w[1] - w[0];
        if len >= 2 {
            let (starts, lens) = &mut groups[padded_len(len).trailing_zeros() as usize];
            starts.push(w[0] as u32);
            lens.push(len as u32);
        }
    }
    let bounds: Vec<u32> = groups
        .iter()
        .flat_map(|(starts, lens)| starts.iter().chain(lens).copied())
        .collect();
    let mut on_device = pad.take::<u32>(Scratch::SegmentBounds, bounds.len());
    x.stream
        .memcpy_htod(&bounds, &mut on_device)
        .during(|| format!("copying {} segment bounds", bounds.len() / 2))?;
    let groups = groups.iter().filter(|(starts, _)| !starts.is_empty());
    let mut rest = on_device;
    for (plan, (starts, _)) in plans.iter().zip(groups) {
        assert_eq!(
            plan.layout.rows as usize,
            starts.len(),
            "the plan's segments"
        );
        let (starts_d, tail) = memory::split(rest, starts.len());
        let (lens_d, tail) = memory::split(tail, starts.len());
        rest = tail;
        let (starts_at, _s) = starts_d.device_ptr(x.stream);
        let (lens_at, _l) = lens_d.device_ptr(x.stream);
        let layout = plan.layout.with_segments(starts_at, lens_at);
        passes::run(x, plan, layout, None, words)?;
    }
    Ok(())
}

/// Sorts every row of `row_len` words stably in place and writes each sorted word's index in
/// its row before the sort to `indices` (4- or 8-byte), in the plan's passes over key-index
/// pairs (the key mapped by `map`): the first packs the words as it loads, the last writes
/// them back from their pairs (canonical where `map` ties keys) with their indices.
pub(crate) fn sort_pairs<B: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    plan: &PairPlan,
    words: &mut CudaViewMut<B>,
    indices: &mut CudaViewMut<I>,
    (row_len, map): (usize, u32),
    pad: &mut Scratchpad,
) -> Result<()> {
    let n = words.len();
    if plan.passes.passes.is_empty() {
        // Rows of one key: each is sorted, its index 0.
        return memory::zero(x.stream, indices)
            .during(|| "zeroing the indices of rows of one key".into());
    }
    let between = plan.passes.pairs_between_passes(n);
    let rows = PackedRows::in_place(x, words, indices, row_len, map);
    run_packed::<B>(x, &plan.passes, &rows, between, pad)
}

/// Sorts every row of `row_len` words stably and moves `values` (4- or 8-byte elements) with
/// them: the rows' argsort into the workspace's indices, then each row's values gathered in
/// their order.
pub(crate) fn sort_pairs_with_values<B: DeviceRepr, V: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    plan: &PairPlan,
    words: &mut CudaViewMut<B>,
    values: &mut CudaViewMut<V>,
    (row_len, map): (usize, u32),
    pad: &mut Scratchpad,
) -> Result<()> {
    let n = words.len();
    let mut indices = pad.take::<u32>(Scratch::Indices, n);
    let mut sources = pad.take::<V>(Scratch::ValuesCopy, n);
    sort_pairs(x, plan, words, &mut indices, (row_len, map), pad)?;
    x.stream
        .memcpy_dtod(&*values, &mut sources)
        .during(|| format!("copying {n} values"))?;
    let name = format!("gather_{}", kernel_width::<V>());
    let f = x.function(&kernels::PAIRS, &name)?;
    gather(
        x,
        &f,
        x.elementwise(n),
        &sources,
        values,
        &indices,
        row_len as u32,
    )
    .during(|| format!("launching {name}"))
}

/// Each row's first `k` keys of a stable sort in the order of `map`, of `keys` (left as they
/// are, in rows of `row_len`): their indices in the row to `indices` and the keys themselves,
/// bit for bit, to `values` (`k` a row each), by the plan's passes over key-index pairs, which
/// pack as they first load and unpack as they last store; the pairs lie in the workspace's
/// [`Scratch::Pairs`] between passes.
pub(crate) fn select_rows<K: DeviceRepr, I: DeviceRepr>(
    x: &Exec,
    plan: &PassPlan,
    keys: &CudaView<K>,
    (values, indices): (&mut CudaViewMut<K>, &mut CudaViewMut<I>),
    (row_len, k, map): (usize, usize, u32),
    pad: &mut Scratchpad,
) -> Result<()> {
    let n = keys.len();
    if plan.passes.is_empty() {
        // Rows of one key (k is 1): each is its own first key, at index 0.
        x.stream
            .memcpy_dtod(keys, values)
            .during(|| format!("copying {n} rows of one key"))?;
        return memory::zero(x.stream, indices)
            .during(|| "zeroing the indices of rows of one key".into());
    }
    let between = plan.pairs_between_passes(n);
    let rows = PackedRows::new(x, keys, (values, indices), (row_len, k), map);
    run_packed::<K>(x, plan, &rows, between, pad)
}

/// Runs the packed `plan` over `rows` of keys of type `K`, the pairs between its passes
/// (`between` of them) in the workspace's [`Scratch::Pairs`]: u64 words for keys of 2 or 4
/// bytes, 16-byte key-index pairs for 8 (the launches check them against the kernel's words).
fn run_packed<K>(
    x: &Exec,
    plan: &PassPlan,
    rows: &PackedRows<'_>,
    between: usize,
    pad: &mut Scratchpad,
) -> Result<()> {
    if std::mem::size_of::<K>() <= 4 {
        let mut pairs = pad.take::<u64>(Scratch::Pairs, between);
        passes::run_packed(x, plan, &mut pairs, rows)
    } else {
        let mut pairs = pad.take::<KeyIndex>(Scratch::Pairs, between);
        passes::run_packed(x, plan, &mut pairs, rows)
    }
}
