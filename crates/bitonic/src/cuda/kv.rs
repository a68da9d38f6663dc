//! Runs a [`KeyValuePlan`]: the key-value merge sort, how argsorts and key-value sorts of one
//! array run (kernels/merge.cu's placement and key-value levels). Stable: after the tuned tile
//! sort of the keys alone, each value moves to its key's rank in the tile (equal keys by
//! index), and the levels give each key a *tag*, its rank in the stable order of the block's
//! inputs, so equal keys keep that order and each value follows its key's tag. Keys and values
//! stay in two arrays; no pass packs, unpacks or gathers them.

use super::exec::{config, Exec};
use super::launch::merge::{place_values, Values};
use super::levels::{self, LevelKernels, Side};
use super::memory::Scratchpad;
use super::passes;
use crate::error::{CudaContext as _, Result};
use crate::kernels;
use crate::plan::{KeyValuePlan, Scratch};
use crate::policy::MergePolicy;
use cudarc::driver::{CudaViewMut, DeviceRepr};

/// Sorts `keys` (4- or 8-byte words) and moves `values` (4- or 8-byte words) with them,
/// stably, in place, as `plan` says; with the plan's `positions`, `values` is output only:
/// each key's value is its position. `map` maps the keys for the whole sort and back on the
/// last store.
pub(crate) fn run<K, V>(
    x: &Exec,
    plan: &KeyValuePlan,
    keys: &mut CudaViewMut<K>,
    values: &mut CudaViewMut<V>,
    map: u32,
    pad: &mut Scratchpad,
) -> Result<()>
where
    K: DeviceRepr + bytemuck::Pod,
    V: DeviceRepr + bytemuck::Pod,
{
    let n = keys.len();
    assert_eq!(values.len(), n, "a value for every key");
    if n < 2 {
        // Sorted already (the tuned sort would not even map a single key).
        if plan.positions && n == 1 {
            super::memory::zero(x.stream, values)
                .during(|| "writing the position of a single key".into())?;
        }
        return Ok(());
    }
    let levels = &plan.levels;
    let level_count = levels.levels.len();
    let mut spare_keys = pad.take::<K>(Scratch::Spare, n);
    let spare_len = if level_count > 0 { n } else { 0 };
    let mut spare_values = pad.take::<V>(Scratch::SpareValues, spare_len);
    let runs = n.div_ceil(1 << plan.tile_bits);
    let mut equal_tiles = pad.take::<u32>(Scratch::EqualTiles, runs);
    let mut ranks = pad.take::<u64>(Scratch::Ranks, levels.splits);
    let mut samples = pad.take::<K>(Scratch::Samples, levels.samples);

    // The runs go to the spare arrays when the levels are odd, so that the last level ends in
    // the caller's; the tile sort reads the keys and writes the spare, so the keys keep the
    // order the values are in. With even levels the runs stay in the keys, sorted in place
    // after a copy of them keeps that order in the spare.
    let in_spare = levels.runs_in_spare();
    let layout = plan.runs.layout;
    if in_spare {
        passes::run(
            x,
            &plan.runs,
            layout,
            Some(&keys.as_view()),
            &mut spare_keys,
        )?;
    } else {
        x.stream
            .memcpy_dtod(&*keys, &mut spare_keys)
            .during(|| "copying the keys".into())?;
        passes::run(x, &plan.runs, layout, None, keys)?;
    }

    let unmap = if level_count == 0 { map } else { 0 };
    let k = crate::kernels::kernel_width::<K>();
    let v = crate::kernels::kernel_width::<V>();
    let place_threads = (1u32 << plan.tile_bits) / MergePolicy::PLACE_KEYS_PER_THREAD as u32;
    let cfg = config(runs as u32, place_threads, plan.place_shared);
    let module = kernels::merge_kv(plan.key_bytes, plan.value_bytes);
    for name in ["place_values", "place_equal_values"] {
        let name = format!("{name}_kv_{k}_{v}");
        let f = x.function_sharing(module, &name, plan.place_shared)?;
        let launched = if in_spare {
            let (original, from) = (keys.as_view(), values.as_view());
            let values = match plan.positions {
                true => Values::Positions,
                false => Values::From(&from),
            };
            let arrays = ((&original, &mut spare_keys), (values, &mut spare_values));
            place_values(
                x,
                &f,
                cfg,
                arrays.0,
                arrays.1,
                (map, unmap),
                &mut equal_tiles,
            )
        } else {
            let original = spare_keys.as_view();
            let values_in = match plan.positions {
                true => Values::Positions,
                false => Values::InPlace,
            };
            let keys_arrays = (&original, &mut *keys);
            let value_arrays = (values_in, &mut *values);
            place_values(
                x,
                &f,
                cfg,
                keys_arrays,
                value_arrays,
                (map, unmap),
                &mut equal_tiles,
            )
        };
        launched.during(|| format!("launching {name}"))?;
    }

    let main = Side {
        keys: keys.slice_mut(..),
        values: Some(values.slice_mut(..)),
    };
    let spare = Side {
        keys: spare_keys,
        values: Some(spare_values),
    };
    let kernels = LevelKernels::key_value(plan);
    levels::run(
        x,
        levels,
        &kernels,
        main,
        spare,
        in_spare,
        &mut ranks,
        &mut samples,
    )
}
