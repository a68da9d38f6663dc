//! The multi-GPU sort's kernels (kernels/multi.cu): key-value words, padding, samples, cuts,
//! and the benchmark's random keys and checks.

use super::launch;
use crate::cuda::exec::Exec;
use crate::kernels::abi::KeyIndex;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaView, CudaViewMut, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg,
};

/// kernels/multi.cu `pack_kv*(keys, values, out, n, first, map[, half])`: key-value words for
/// the multi-GPU sort (keys given as their words).
pub(crate) fn pack_key_values<B: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, values): (&CudaView<B>, &CudaView<V>),
    out: &mut CudaSlice<KeyIndex>,
    (first, map, half): (u64, u32, Option<u32>),
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(values.len() == keys.len() && out.len() >= keys.len());
    // SAFETY: pack_kv*(const K *keys, const V *values, KeyIndex *out, u64 n, u64 first,
    // u32 map) and, for the kernels of 8-byte values, u32 half.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys)
                .arg(values)
                .arg(out)
                .arg(&n)
                .arg(&first)
                .arg(&map);
            if let Some(half) = &half {
                l.arg(half);
            }
        })
    }
}

/// kernels/multi.cu `unpack_kv*(words, keys, values, n, map[, half])`: sorted key-value words
/// back into keys and values.
pub(crate) fn unpack_key_values<K: DeviceRepr, V: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &CudaView<KeyIndex>,
    (keys, values): (&mut CudaSlice<K>, &mut CudaSlice<V>),
    (map, half): (u32, Option<u32>),
) -> Result<(), DriverError> {
    let n = words.len() as u64;
    assert!(keys.len() >= words.len() && values.len() >= words.len());
    // SAFETY: unpack_kv*(const KeyIndex *words, K *keys, V *values, u64 n, u32 map) and, for
    // the kernels of 8-byte values, u32 half.
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(words).arg(keys).arg(values).arg(&n).arg(&map);
            if let Some(half) = &half {
                l.arg(half);
            }
        })
    }
}

/// kernels/multi.cu `fill_largest_W(keys, n)`: padding words.
pub(crate) fn fill_largest<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    words: &mut CudaViewMut<W>,
) -> Result<(), DriverError> {
    let n = words.len() as u64;
    // SAFETY: fill_largest_W(W *keys, u64 n).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(words).arg(&n);
        })
    }
}

/// kernels/multi.cu `take_W(keys, positions, out, count)`: the words at `positions`.
pub(crate) fn take<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaSlice<W>,
    positions: &CudaSlice<u64>,
    out: &mut CudaSlice<W>,
) -> Result<(), DriverError> {
    let count = positions.len() as u32;
    assert!(out.len() >= positions.len(), "a word a position");
    // SAFETY: take_W(const W *keys, const u64 *positions, W *out, u32 count); the positions
    // are inside `keys` (the caller's sample positions).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(positions).arg(out).arg(&count);
        })
    }
}

/// kernels/multi.cu `count_below_W(keys, n, queries, upper, out, count)`: for each query, how
/// many of the first `n` sorted words lie below it (or at most it, where `upper` says so).
pub(crate) fn count_below<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    (keys, n): (&CudaSlice<W>, u64),
    (queries, upper): (&CudaSlice<W>, &CudaSlice<u32>),
    out: &mut CudaSlice<u64>,
) -> Result<(), DriverError> {
    let count = queries.len() as u32;
    assert!(keys.len() as u64 >= n && upper.len() == queries.len() && out.len() >= queries.len());
    // SAFETY: count_below_W(const W *keys, u64 n, const W *queries, const u32 *upper,
    // u64 *out, u32 count).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys)
                .arg(&n)
                .arg(queries)
                .arg(upper)
                .arg(out)
                .arg(&count);
        })
    }
}

#[cfg(feature = "bench")]
/// kernels/multi.cu `fill_random_W(keys, n, first, seed)`: the random words of global
/// positions `first ..`.
pub(crate) fn fill_random<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &mut CudaViewMut<W>,
    (first, seed): (u64, u64),
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    // SAFETY: fill_random_W(W *keys, u64 n, u64 first, u64 seed).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(&first).arg(&seed);
        })
    }
}

#[cfg(feature = "bench")]
/// kernels/multi.cu `check_sorted_W(keys, n, sums)`: a hash sum of the words and a count of
/// descents, added into `sums[0..2]`.
pub(crate) fn check_sorted<W: DeviceRepr>(
    x: &Exec,
    kernel: &CudaFunction,
    cfg: LaunchConfig,
    keys: &CudaView<W>,
    sums: &mut CudaSlice<u64>,
) -> Result<(), DriverError> {
    let n = keys.len() as u64;
    assert!(sums.len() >= 2, "two sums");
    // SAFETY: check_sorted_W(const W *keys, u64 n, u64 *sums).
    unsafe {
        launch(x, kernel, cfg, |l| {
            l.arg(keys).arg(&n).arg(sums);
        })
    }
}
