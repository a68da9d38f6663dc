//! Carries out a [`Plan`] on device buffers: the one entry from the sorter into the runners.
//! Each function cuts the call's workspace into the plan's parts, sees the keys as the words
//! the plan sorts (16-bit keys widened into the workspace and narrowed back after where the
//! plan says, others, and the 16-bit keys of the radix sorts and the pair passes,
//! reinterpreted in place), and calls the runner of the plan's steps. Nothing here decides
//! what runs: the plan did.

use super::exec::Exec;
use super::keymap::convert;
use super::launch::radix::RadixInput;
use super::launch::topk::{topk_gather, topk_take};
use super::memory::{self, with_word_of_width, Scratchpad};
use super::{kv, merge, passes, radix, rows, seed, topk};
use crate::error::{CudaContext as _, Error, Result};
use crate::kernels::kernel_width;
use crate::plan::{self, Plan, Scratch, Steps};
use crate::SortKey;
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr};

/// Sorts `keys` in place as `plan` (of keys alone) says; `offsets` cut a segmented sort's
/// segments. `workspace` holds at least the plan's bytes.
pub(crate) fn sort<K: SortKey>(
    x: &Exec,
    plan: &Plan,
    keys: CudaViewMut<K>,
    offsets: &[usize],
    workspace: CudaViewMut<u8>,
) -> Result<()> {
    let mut pad = Scratchpad::new(workspace, &plan.workspace)?;
    if let Steps::Radix(radix) = &plan.steps {
        // Long rows: the keys as they are (16-bit ones too), sorted in place, no index.
        let n = keys.len();
        return with_word_of_width!(K, W => {
            let mut words = memory::reinterpret::<K, W>(keys, n);
            let outputs = (&mut words, None::<&mut CudaViewMut<u32>>);
            radix::run(x, radix, RadixInput::InPlace, outputs, plan.map, &mut pad)
        });
    }
    with_words(x, plan, keys, &mut pad, |words, pad| match &plan.steps {
        Steps::Nothing => Ok(()),
        Steps::Seed(s) => seed::run(x, s, words),
        Steps::Passes(p) => passes::run(x, p, p.layout, None, words),
        Steps::Segments(groups) => rows::sort_segments(x, groups, words, offsets, pad),
        Steps::Merge(m) => merge::run(x, m, words, pad),
        other => unreachable!("{other:?} is not a sort of keys alone"),
    })
}

/// Sorts every row of `row_len` keys stably in place as `plan` says, moving `values` (4- or
/// 8-byte elements, one a key) with them, or, for an argsort, writing each sorted key's index
/// in its row to them.
pub(crate) fn sort_with_values<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    plan: &Plan,
    keys: CudaViewMut<K>,
    values: &mut CudaViewMut<V>,
    row_len: usize,
    workspace: CudaViewMut<u8>,
) -> Result<()> {
    check_width::<V>()?;
    let mut pad = Scratchpad::new(workspace, &plan.workspace)?;
    let (map, n) = (plan.map, keys.len());
    match &plan.steps {
        // An argsort (every index written) or a key-value sort of 4-byte values (the values
        // read and written back in order): the keys as they are (16-bit ones too), sorted in
        // place.
        Steps::Radix(radix) => with_word_of_width!(K, W => {
            let mut words = memory::reinterpret::<K, W>(keys, n);
            let outputs = (&mut words, Some(&mut *values));
            radix::run(x, radix, RadixInput::InPlace, outputs, map, &mut pad)
        }),
        // The pair passes pack the keys as they are (16-bit ones too) and write them back in
        // place; a key-value sort then gathers its values.
        Steps::Pairs(pairs) => with_word_of_width!(K, W => {
            let mut words = memory::reinterpret::<K, W>(keys, n);
            let shape = (row_len, map);
            match pairs.gather {
                Some(_) => rows::sort_pairs_with_values(x, pairs, &mut words, values, shape, &mut pad),
                None => rows::sort_pairs(x, pairs, &mut words, values, shape, &mut pad),
            }
        }),
        _ => with_words(x, plan, keys, &mut pad, |words, pad| {
            sorting_steps(x, &plan.steps, words, values, map, pad)
        }),
    }
}

/// Selects each row's first `k` keys of a stable sort in the plan's order into `values` and
/// their indices into `indices` (`k` a row), the keys left as they are.
pub(crate) fn select<K: SortKey, I: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    plan: &Plan,
    keys: &CudaView<K>,
    (values, indices): (CudaViewMut<K>, &mut CudaViewMut<I>),
    (row_len, k): (usize, usize),
    workspace: CudaViewMut<u8>,
) -> Result<()> {
    check_width::<I>()?;
    let mut pad = Scratchpad::new(workspace, &plan.workspace)?;
    match &plan.steps {
        Steps::Nothing => Ok(()),
        // The keys as they are, as words of their own width.
        Steps::Topk(t) => with_word_of_width!(K, W => {
            let words = memory::reinterpret_ref::<K, W>(keys, keys.len());
            let mut best = memory::reinterpret::<K, W>(values, indices.len());
            topk::run(x, t, &words, (&mut best, indices), &mut pad)
        }),
        // The keys as they are, as words of their own width; k a row.
        Steps::Radix(r) => with_word_of_width!(K, W => {
            let words = memory::reinterpret_ref::<K, W>(keys, keys.len());
            let mut best = memory::reinterpret::<K, W>(values, indices.len());
            radix::run(x, r, RadixInput::Keys(&words), (&mut best, Some(indices)), plan.map, &mut pad)
        }),
        Steps::TopkByPairPasses(passes) => {
            let mut values = values;
            let outputs = (&mut values, &mut *indices);
            let shape = (row_len, k, plan.map);
            rows::select_rows(x, passes, keys, outputs, shape, &mut pad)
        }
        Steps::TopkBySorting {
            sort,
            take_indices,
            gather,
        } => {
            let n = keys.len();
            let mut sorted = pad.take::<K::Bits>(Scratch::SortedKeys, n);
            match plan.widen {
                Some(map) => convert(x, keys, &mut sorted, map)?,
                None => {
                    let words = memory::reinterpret_ref::<K, K::Bits>(keys, n);
                    x.stream
                        .memcpy_dtod(&words, &mut sorted)
                        .during(|| format!("copying {n} keys to select from"))?;
                }
            }
            let shape = (row_len as u64, k as u64);
            let cfg = x.elementwise(indices.len());
            match take_indices {
                // k is the whole row: the sort writes the caller's indices.
                None => sorting_steps(x, sort, &mut sorted, indices, plan.map, &mut pad)?,
                Some(take_indices) => {
                    let mut all = pad.take::<I>(Scratch::SortedIndices, n);
                    sorting_steps(x, sort, &mut sorted, &mut all, plan.map, &mut pad)?;
                    let name = format!("topk_take_{}", kernel_width::<I>());
                    let f = x.function(take_indices, &name)?;
                    topk_take(x, &f, cfg, &all.as_view(), shape, indices)
                        .during(|| format!("launching {name}"))?;
                }
            }
            // The input's own keys, by the indices just taken (the sorted copy's are words),
            // moved as plain words of the keys' width.
            let name = format!(
                "topk_gather_{}_{}",
                kernel_width::<K>(),
                kernel_width::<I>()
            );
            let f = x.function(gather, &name)?;
            with_word_of_width!(K, W => {
                let words = memory::reinterpret_ref::<K, W>(keys, n);
                let mut best = memory::reinterpret::<K, W>(values, indices.len());
                topk_gather(x, &f, cfg, &words, shape, &indices.as_view(), &mut best)
            })
            .during(|| format!("launching {name}"))
        }
        other => unreachable!("{other:?} is not a top-k"),
    }
}

/// The stable sort of words: the key-value merge sort (values, or positions for an argsort).
fn sorting_steps<W: DeviceRepr + bytemuck::Pod, V: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    steps: &Steps,
    words: &mut CudaViewMut<W>,
    values: &mut CudaViewMut<V>,
    map: u32,
    pad: &mut Scratchpad,
) -> Result<()> {
    match steps {
        Steps::Nothing => Ok(()),
        Steps::KeyValue(plan) => kv::run(x, plan, words, values, map, pad),
        other => unreachable!("{other:?} is not a key-value merge sort"),
    }
}

/// Runs `work` on the words the plan sorts `keys` as: 16-bit keys widened into the
/// workspace's words (and narrowed back after), other keys in place as their words.
fn with_words<K: SortKey>(
    x: &Exec,
    plan: &Plan,
    keys: CudaViewMut<K>,
    pad: &mut Scratchpad,
    work: impl FnOnce(&mut CudaViewMut<K::Bits>, &mut Scratchpad) -> Result<()>,
) -> Result<()> {
    let n = keys.len();
    match plan.widen {
        Some(map) if n > 0 => {
            let mut keys = keys;
            let mut words = pad.take::<K::Bits>(Scratch::Words, n);
            convert(x, &keys.as_view(), &mut words, map)?;
            work(&mut words, pad)?;
            convert(x, &words.as_view(), &mut keys, map)
        }
        _ => work(&mut memory::reinterpret::<K, K::Bits>(keys, n), pad),
    }
}

/// Sorts one array of words that already sort ascending (no key map), as the tuned version
/// sorts keys alone of their width: the multi-GPU sort's local sorts (4- and 8-byte words, and
/// the 16-byte words of its key-value sort).
pub(crate) fn sort_words<W: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    words: &mut CudaViewMut<W>,
) -> Result<()> {
    let n = words.len();
    let plan = plan::plan_words(x.gpu, x.policy, std::mem::size_of::<W>(), n)?;
    x.gpu.prepare(x.policy, &plan.modules)?;
    let bytes = plan.workspace_bytes();
    let mut workspace =
        memory::OwnedWorkspace::new(x.stream, bytes, || "a sort's workspace".into())?;
    let mut pad = Scratchpad::new(workspace.view_mut(), &plan.workspace)?;
    match &plan.steps {
        Steps::Nothing => Ok(()),
        Steps::Passes(p) => passes::run(x, p, p.layout, None, words),
        Steps::Merge(m) => merge::run(x, m, words, &mut pad),
        other => unreachable!("{other:?} is not a sort of words"),
    }
}

/// Indices and values of 4 or 8 bytes: what the kernels write.
fn check_width<V>() -> Result<()> {
    match std::mem::size_of::<V>() {
        4 | 8 => Ok(()),
        other => Err(Error::UnsupportedValue(other)),
    }
}
