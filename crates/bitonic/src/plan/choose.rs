//! Which backend and strategy run a request: the first half of a plan, decided before any
//! shape is worked out. The table of tests in src/plan/tests.rs says, case by case, what runs.

use super::{radix, topk};
use super::{Layout, Operation, Request, Strategy, AUTO_GPU_MIN_LEN};
use crate::device::DeviceInfo;
use crate::error::{Error, GpuUnavailable, Result};
use crate::options::{Backend, Version};
use crate::policy::{Policy, TopkPolicy};

/// The backend and strategy for `request`; `gpu` is the device and policy when a GPU works.
///
/// * [`Backend::Auto`] takes the GPU from [`AUTO_GPU_MIN_LEN`] keys, or whenever a version is
///   pinned, and the fastest CPU sort otherwise.
/// * A pinned version other than [`Version::Tuned`] sorts the keys of one array only; asked of
///   rows, segments, argsorts, key-value sorts or top-k selections, or of a CPU backend, it is
///   an error rather than being ignored.
/// * A top-k selection runs [`Strategy::CpuTopk`] on every CPU backend. On the GPU, rows of at
///   most [`TopkPolicy::WARP_SORT_MOST`] keys of 2 or 4 bytes take the warp sort (where the
///   policy says); up to [`TopkPolicy::FILTER_MAX_K`] and half a row, the spread select, the
///   radix select or the filter ([`topk::variant`]); past it, the rows' stable argsort, of
///   which the first k are kept.
/// * One array of keys alone longer than [`crate::policy::MergePolicy::above_of`] its key width
///   sorts as a merge sort; shorter ones, and rows, by the network's passes, except rows of
///   2- or 4-byte keys from [`crate::policy::RadixPolicy::keys_from_row_len`] keys (from
///   `keys_pow2_from_row_len` for rows of a power of two): the radix passes. Argsorts and
///   key-value sorts of one array run the key-value merge sort, of rows the key-index pairs.
pub(crate) fn choose(
    request: &Request,
    gpu: Option<(&DeviceInfo, &Policy)>,
) -> Result<(Backend, Strategy)> {
    let no_gpu = || Error::NoGpu(GpuUnavailable::NotGiven);
    let backend = match (request.backend, gpu) {
        (Backend::Cuda, None) => return Err(no_gpu()),
        (Backend::Auto, Some(_)) if request.version.is_some() => Backend::Cuda,
        (Backend::Auto, Some(_)) if request.len >= AUTO_GPU_MIN_LEN => Backend::Cuda,
        (Backend::Auto, None) if request.version.is_some() => return Err(no_gpu()),
        (Backend::Auto, _) => Backend::Cpu,
        (chosen, _) => chosen,
    };
    let strategy = match backend {
        Backend::Cpu | Backend::CpuNetwork | Backend::CpuNetworkSerial => {
            if let Some(version) = request.version {
                return Err(Error::VersionNeedsGpu(version));
            }
            match backend {
                _ if matches!(request.operation, Operation::Topk { .. }) => Strategy::CpuTopk,
                Backend::Cpu => Strategy::CpuSort,
                Backend::CpuNetwork => Strategy::CpuNetwork,
                _ => Strategy::CpuNetworkSerial,
            }
        }
        Backend::Cuda | Backend::Auto => {
            let (info, policy) = gpu.expect("a GPU backend has a device");
            gpu_strategy(request, info, policy)?
        }
    };
    Ok((backend, strategy))
}

fn gpu_strategy(request: &Request, info: &DeviceInfo, policy: &Policy) -> Result<Strategy> {
    let layout = request.whole_layout();
    let with_values = request.operation.moves_values();
    if let Some(version) = request.version.filter(|&v| v != Version::Tuned) {
        let plain = layout == Layout::Whole && request.operation == Operation::Sort;
        return if plain {
            Ok(Strategy::Seed(version))
        } else {
            Err(Error::VersionUnsupported {
                version,
                operation: request.operation_name(),
            })
        };
    }
    let row_len = request.row_len();
    let key_bytes = request.dtype.size();
    if let Operation::Topk { k, .. } = request.operation {
        let rows = request.len.checked_div(row_len).unwrap_or(0);
        let warp_row = key_bytes <= 4 && row_len <= TopkPolicy::WARP_SORT_MOST;
        let selects = k <= TopkPolicy::FILTER_MAX_K && 2 * k <= row_len;
        return match layout {
            Layout::Segments { .. } => Err(Error::Unsupported("top-k of segments")),
            _ if warp_row || selects => {
                let variant = topk::variant(info, policy, (rows, row_len, k), key_bytes);
                if variant == Strategy::TopkWarpSort || selects {
                    Ok(variant)
                } else {
                    Ok(sorting(request, info, policy, &layout))
                }
            }
            // A large k, or one above half the row (the selection would keep most of the row
            // and sort it anyway): each row's stable argsort, of which the first k are kept.
            _ => Ok(sorting(request, info, policy, &layout)),
        };
    }
    // 4-byte values travel where the radix passes' u32 indices do.
    let radix_sorts = matches!(
        request.operation,
        Operation::Argsort { .. } | Operation::SortPairs { value_bytes: 4 }
    );
    if radix_sorts && !matches!(layout, Layout::Segments { .. }) {
        if let Some(radix) = radix(request, info, policy) {
            return Ok(radix);
        }
    }
    // Long rows of 2- and 4-byte keys alone: the radix passes, with no index.
    if let (Layout::Rows { row_len }, Operation::Sort) = (&layout, request.operation) {
        let from = if row_len.is_power_of_two() {
            policy.radix.keys_pow2_from_row_len
        } else {
            policy.radix.keys_from_row_len
        };
        if key_bytes <= 4 && *row_len >= from.max(2) {
            return Ok(Strategy::RadixSort);
        }
    }
    Ok(match (&layout, with_values) {
        (Layout::Whole, false) if request.len > policy.merge.above_of(key_bytes) => {
            Strategy::MergeSort
        }
        (Layout::Whole | Layout::Rows { .. }, false) => Strategy::NetworkPasses,
        (Layout::Segments { .. }, false) => Strategy::SegmentPasses,
        (Layout::Whole, true) => Strategy::KeyValueMerge,
        (Layout::Rows { .. }, true) => Strategy::PairPasses,
        (Layout::Segments { .. }, true) => {
            return Err(Error::Unsupported(
                "key-value sorts and argsorts of segments",
            ))
        }
    })
}

/// The stable sort of whole rows that a top-k by sorting runs: a radix sort from the policy's
/// row length, else the key-value merge sort of one array or the pair passes of rows.
fn sorting(request: &Request, info: &DeviceInfo, policy: &Policy, layout: &Layout) -> Strategy {
    match (radix(request, info, policy), layout) {
        (Some(radix), _) => radix,
        (None, Layout::Whole) => Strategy::KeyValueMerge,
        (None, _) => Strategy::PairPasses,
    }
}

/// The radix sort with indices of the request's rows, from [`crate::policy::RadixPolicy::from_row_len`]
/// keys a row: one block a row where it fits, else passes over tiles. A key-value sort's values
/// always take the passes: one block a row makes 16-bit indices in shared memory, and carries
/// no values.
fn radix(request: &Request, info: &DeviceInfo, policy: &Policy) -> Option<Strategy> {
    let (row_len, key_bytes) = (request.row_len(), request.dtype.size());
    if row_len < policy.radix.from_row_len.max(1) {
        return None;
    }
    let values = matches!(request.operation, Operation::SortPairs { .. });
    Some(
        if !values && radix::one_block_a_row(info, &policy.radix, row_len, key_bytes) {
            Strategy::RowRadix
        } else {
            Strategy::RadixSort
        },
    )
}
