//! What runs for an input: the one place a reader opens to learn it.
//!
//! [`choose`] is a pure function from the request (its length, its rows or segments, its key
//! width, whether values or indices travel with the keys, the backend and version asked for)
//! and the GPU's [`Policy`] (when a GPU works) to the backend and [`Strategy`] that run. The
//! CPU and CUDA backends then carry the strategy out (src/cpu, src/cuda/run.rs); the table of
//! tests at the bottom says, case by case, what runs.

use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::{Backend, Version};

/// Below this many keys [`Backend::Auto`] sorts on the CPU: copying to and from the GPU and
/// launching kernels costs more than the sort there.
pub const AUTO_GPU_MIN_LEN: usize = 1 << 16;

/// The most keys a row's top-k selection keeps that [`Strategy::TopkFilter`] selects on the
/// GPU (its best keys live in shared memory); a larger k selects with the stable argsort of the
/// rows ([`Strategy::PairPasses`], or [`Strategy::KeyValueMerge`] for one row).
pub const TOPK_FILTER_MAX_K: usize = 2048;

/// Elements one block of [`Strategy::TopkRadix`] holds in registers (256 threads, 32 a
/// thread): a row up to this long is selected by one block in one launch.
pub const TOPK_RADIX_CHUNK: usize = 8192;

/// The largest k that [`Strategy::TopkRadix`] takes for rows longer than
/// [`TOPK_RADIX_CHUNK`]: each pass keeps k of every chunk, so a larger k would shrink the
/// candidates by less than 8× a pass.
pub const TOPK_RADIX_MAX_K: usize = TOPK_RADIX_CHUNK / 8;

/// The longest row [`Strategy::TopkWarpSort`] takes: 32 keys a lane of one warp.
pub const TOPK_WARP_SORT_MOST: usize = 1024;

/// What a request asks of the keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Operation {
    /// Sort them (or argsort them, with `with_values`).
    #[default]
    Sort,
    /// Select each row's `k` largest or smallest keys, sorted, with their indices
    /// ([`crate::Sorter::topk_rows`]).
    Topk {
        /// Keys kept a row.
        k: usize,
    },
}

/// How the keys of a request are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One array.
    Whole,
    /// Rows of `row_len` keys, each sorted on its own (`row_len` divides the length).
    Rows {
        /// Keys in each row.
        row_len: usize,
    },
    /// Segments of any lengths, each sorted on its own.
    Segments,
}

/// One sort request, as [`choose`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Keys in all.
    pub len: usize,
    /// The size of a key in bytes (2, 4 or 8).
    pub key_bytes: usize,
    /// One array, rows or segments.
    pub layout: Layout,
    /// Whether values or indices follow the keys (key-value sorts and argsorts: stable).
    pub with_values: bool,
    /// The backend asked for.
    pub backend: Backend,
    /// The GPU algorithm asked for; `None` lets the library choose.
    pub version: Option<Version>,
    /// A sort or a top-k selection.
    pub operation: Operation,
}

/// An algorithm that sorts a request: the answer of [`choose`], and what a sort reports in
/// [`crate::Ran`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// A parallel sort of the keys' ordered words on all cores (rayon's `par_sort_unstable`): the
    /// fastest CPU sort.
    CpuSort,
    /// The bitonic network on all CPU cores.
    CpuNetwork,
    /// The bitonic network on one CPU core: the report's serial baseline.
    CpuNetworkSerial,
    /// One of the report's GPU versions V0–V5, keys of one array only (src/cuda/seed.rs).
    Seed(Version),
    /// The tuned network's passes over one array or its rows: a tile sort in shared memory
    /// and registers, then the later stages in few passes (src/cuda/passes.rs). Its memory
    /// accesses do not depend on the keys (it is data-oblivious); a policy whose
    /// `merge_sort_above` is `usize::MAX` keeps every array on it.
    NetworkPasses,
    /// The tuned passes over segments, grouped by their padded length.
    SegmentPasses,
    /// Tuned tile sorts, then merge levels that merge [`Policy::merge_ways_of`] the word size
    /// runs at once (src/cuda/merge.rs): keys of one array longer than [`Policy::merge_sort_above`]. The
    /// merge paths read addresses that depend on the keys.
    MergeSort,
    /// The key-value merge sort (src/cuda/kv.rs): the keys and their values or indices of one
    /// array, stable, in their own arrays.
    KeyValueMerge,
    /// Key-index pairs through the tuned passes over rows (src/cuda/rows.rs): argsorts and
    /// key-value sorts of rows, stable.
    PairPasses,
    /// Top-k selection on the GPU (src/cuda/topk.rs): each block keeps the best k of one chunk
    /// of a row in shared memory, filtering keys against the k-th best and sorting the
    /// survivors in with a bitonic network; the chunks' results reduce the same way.
    TopkFilter,
    /// Top-k selection on the GPU (src/cuda/topk.rs) of rows of at most
    /// [`TOPK_WARP_SORT_MOST`] keys of 2 or 4 bytes: each warp sorts one row in registers, a
    /// bitonic network over its keys and their indices, and keeps the first k.
    TopkWarpSort,
    /// Top-k selection on the GPU (src/cuda/topk.rs): each block holds a chunk of a row in
    /// registers and finds its k-th best by a radix select, digit by digit; the chunks' k best
    /// reduce the same way, and a row's last block sorts its k with a bitonic network.
    TopkRadix,
    /// Top-k selection on the CPU: a selection and a sort of the k best per row (rayon).
    CpuTopk,
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::CpuSort => f.write_str("parallel sort"),
            Strategy::CpuNetwork => f.write_str("bitonic network"),
            Strategy::CpuNetworkSerial => f.write_str("serial bitonic network"),
            Strategy::Seed(version) => write!(f, "{version}"),
            Strategy::NetworkPasses => f.write_str("tuned network passes"),
            Strategy::SegmentPasses => f.write_str("tuned segment passes"),
            Strategy::MergeSort => f.write_str("tuned merge sort"),
            Strategy::KeyValueMerge => f.write_str("tuned key-value merge sort"),
            Strategy::PairPasses => f.write_str("tuned key-index pair passes"),
            Strategy::TopkFilter => f.write_str("top-k threshold filter"),
            Strategy::TopkRadix => f.write_str("top-k radix select"),
            Strategy::TopkWarpSort => f.write_str("top-k warp sort"),
            Strategy::CpuTopk => f.write_str("CPU top-k selection"),
        }
    }
}

impl Strategy {
    /// Whether the strategy is a GPU top-k over composites of the keys and their indices
    /// (src/cuda/topk.rs), which reads 16-bit keys as they are.
    pub fn selects_by_composites(self) -> bool {
        matches!(
            self,
            Strategy::TopkRadix | Strategy::TopkFilter | Strategy::TopkWarpSort
        )
    }

    /// Whether the strategy runs on the GPU.
    pub fn on_gpu(self) -> bool {
        !matches!(
            self,
            Strategy::CpuSort
                | Strategy::CpuNetwork
                | Strategy::CpuNetworkSerial
                | Strategy::CpuTopk
        )
    }
}

/// The backend and strategy for `request`; `gpu` is the GPU's policy when a GPU works.
///
/// ```
/// use bitonic::dispatch::{choose, Layout, Operation, Request};
/// use bitonic::{Backend, Policy, Strategy};
/// let request = Request {
///     len: 1 << 24,
///     key_bytes: 4,
///     layout: Layout::Rows { row_len: 1024 },
///     with_values: false,
///     backend: Backend::Auto,
///     version: None,
///     operation: Operation::Sort,
/// };
/// let hopper = Policy::for_compute_capability(9, 0);
/// assert_eq!(choose(&request, Some(&hopper))?, (Backend::Cuda, Strategy::NetworkPasses));
/// assert_eq!(choose(&request, None)?, (Backend::Cpu, Strategy::CpuSort));
/// # Ok::<(), bitonic::Error>(())
/// ```
///
/// * [`Backend::Auto`] takes the GPU from [`AUTO_GPU_MIN_LEN`] keys, or whenever a version is
///   pinned, and the fastest CPU sort otherwise.
/// * A pinned version other than [`Version::Tuned`] sorts the keys of one array only; asked of
///   rows, segments, argsorts or key-value sorts, or of a CPU backend, it is an error rather
///   than being ignored.
/// * A top-k selection runs [`Strategy::CpuTopk`] on every CPU backend (the network has no
///   selection of its own). On the GPU, up to [`TOPK_FILTER_MAX_K`], a row that one block holds
///   ([`TOPK_RADIX_CHUNK`]), or a longer one up to [`Policy::topk_filter_above`] with k up to
///   [`TOPK_RADIX_MAX_K`], or any row with k up to [`Policy::topk_long_radix_max_k`] (capped
///   at [`TOPK_RADIX_MAX_K`]), runs [`Strategy::TopkRadix`], and other rows
///   [`Strategy::TopkFilter`] (for both, few rows long enough for a sample go through their
///   *spread select*, src/cuda/topk.rs `spread_plan`, which depends on the GPU's size); past
///   [`TOPK_FILTER_MAX_K`], or for a k above half the row, the GPU sorts the rows stably and
///   keeps their first k. Rows of at most [`TOPK_WARP_SORT_MOST`] keys of 2 or 4 bytes take
///   [`Strategy::TopkWarpSort`] instead: up to [`Policy::topk_warp_sort_rows_up_to`] keys for
///   every k, longer ones for k up to [`Policy::topk_warp_filter_max_k`] (past 256 keys by the
///   warp filter), from [`Policy::topk_warp_sort_min_k`] (by key width) and for any k above
///   half the row.
pub fn choose(request: &Request, gpu: Option<&Policy>) -> Result<(Backend, Strategy)> {
    let backend = match (request.backend, gpu) {
        (Backend::Cuda, None) => return Err(Error::NoGpu),
        (Backend::Auto, Some(_)) if request.version.is_some() => Backend::Cuda,
        (Backend::Auto, Some(_)) if request.len >= AUTO_GPU_MIN_LEN => Backend::Cuda,
        (Backend::Auto, None) if request.version.is_some() => return Err(Error::NoGpu),
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
            gpu_strategy(request, gpu.expect("a GPU backend has a policy"))?
        }
    };
    Ok((backend, strategy))
}

/// The keys of one row of `len` keys laid out as `layout`.
fn row_len_of(len: usize, layout: Layout) -> usize {
    match layout {
        Layout::Rows { row_len } => row_len,
        _ => len,
    }
}

/// `strategy`, a merge sort's, if the policy's ways are ones the merge kernels have a form for:
/// another number is an error, not a compile failure or a kernel out of its bounds.
fn merging(policy: &Policy, strategy: Strategy) -> Result<Strategy> {
    if policy.merge_ways_supported() {
        Ok(strategy)
    } else {
        Err(Error::Unsupported(
            "a policy's merge_ways or wide_merge_ways other than 2, 4, 8, 16 or 32",
        ))
    }
}

fn gpu_strategy(request: &Request, policy: &Policy) -> Result<Strategy> {
    // Rows as long as the whole input are one array.
    let layout = match request.layout {
        Layout::Rows { row_len } if row_len >= request.len => Layout::Whole,
        other => other,
    };
    let topk = match request.operation {
        Operation::Topk { k } => Some((k, request.key_bytes)),
        Operation::Sort => None,
    };
    match request.version {
        Some(version) if version != Version::Tuned => {
            return if layout == Layout::Whole && !request.with_values && topk.is_none() {
                Ok(Strategy::Seed(version))
            } else {
                Err(Error::VersionUnsupported {
                    version,
                    operation: match topk {
                        Some(_) => "top-k selections",
                        None => operation_name(layout, request.with_values),
                    },
                })
            };
        }
        _ => {}
    }
    let row_len = row_len_of(request.len, layout);
    match (topk, layout) {
        // A row a warp holds: the warp sort, for every k on the shortest rows.
        (Some((k, key_bytes)), Layout::Whole | Layout::Rows { .. })
            if key_bytes <= 4
                && row_len <= TOPK_WARP_SORT_MOST
                && (row_len <= policy.topk_warp_sort_rows_up_to
                    || k <= policy.topk_warp_filter_max_k
                    || k >= policy.topk_warp_sort_min_k(key_bytes)
                    || 2 * k > row_len) =>
        {
            return Ok(Strategy::TopkWarpSort);
        }
        (Some((k, _)), Layout::Whole | Layout::Rows { .. })
            if k <= TOPK_FILTER_MAX_K && 2 * k <= row_len =>
        {
            let radix = row_len <= TOPK_RADIX_CHUNK
                || (k <= TOPK_RADIX_MAX_K && row_len <= policy.topk_filter_above)
                || k <= policy.topk_long_radix_max_k.min(TOPK_RADIX_MAX_K);
            return Ok(if radix {
                Strategy::TopkRadix
            } else {
                Strategy::TopkFilter
            });
        }
        // A large k, or one above half the row (the selection would keep most of the row and
        // sort it anyway): each row's stable argsort, of which the first k are kept.
        (Some(_), Layout::Whole) => return merging(policy, Strategy::KeyValueMerge),
        (Some(_), Layout::Rows { .. }) => return Ok(Strategy::PairPasses),
        (Some(_), Layout::Segments) => return Err(Error::Unsupported("top-k of segments")),
        (None, _) => {}
    }
    Ok(match (layout, request.with_values) {
        (Layout::Whole, false) if request.len > policy.merge_sort_above_of(request.key_bytes) => {
            merging(policy, Strategy::MergeSort)?
        }
        (Layout::Whole, false) | (Layout::Rows { .. }, false) => Strategy::NetworkPasses,
        (Layout::Segments, false) => Strategy::SegmentPasses,
        (Layout::Whole, true) => merging(policy, Strategy::KeyValueMerge)?,
        (Layout::Rows { .. }, true) => Strategy::PairPasses,
        (Layout::Segments, true) => {
            return Err(Error::Unsupported(
                "key-value sorts and argsorts of segments",
            ))
        }
    })
}

fn operation_name(layout: Layout, with_values: bool) -> &'static str {
    match (layout, with_values) {
        (Layout::Whole, true) => "argsorts and key-value sorts",
        (Layout::Rows { .. }, false) => "row sorts",
        (Layout::Rows { .. }, true) => "argsorts and key-value sorts of rows",
        (Layout::Segments, _) => "segmented sorts",
        (Layout::Whole, false) => "sorts",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Strategy::*;

    fn request(len: usize, layout: Layout, with_values: bool) -> Request {
        Request {
            len,
            key_bytes: 4,
            layout,
            with_values,
            backend: Backend::Auto,
            version: None,
            operation: Operation::Sort,
        }
    }

    const GPU: Option<&Policy> = Some(&Policy::HOPPER);

    #[test]
    fn what_runs_for_each_input() {
        let rows = |row_len| Layout::Rows { row_len };
        #[rustfmt::skip]
        let table = [
            // (keys, layout, values follow, GPU present) -> backend, strategy
            (1000, Layout::Whole, false, true, Backend::Cpu, CpuSort),
            (1 << 16, Layout::Whole, false, true, Backend::Cuda, NetworkPasses),
            (1 << 21, Layout::Whole, false, true, Backend::Cuda, NetworkPasses),
            ((1 << 21) + 1, Layout::Whole, false, true, Backend::Cuda, MergeSort),
            (1 << 29, Layout::Whole, false, false, Backend::Cpu, CpuSort),
            (1 << 24, rows(1 << 24), false, true, Backend::Cuda, MergeSort),
            (1 << 24, rows(1024), false, true, Backend::Cuda, NetworkPasses),
            (1 << 24, Layout::Segments, false, true, Backend::Cuda, SegmentPasses),
            (1 << 24, Layout::Whole, true, true, Backend::Cuda, KeyValueMerge),
            (1 << 20, rows(1 << 20), true, true, Backend::Cuda, KeyValueMerge),
            (1 << 24, rows(256), true, true, Backend::Cuda, PairPasses),
            (100, rows(10), true, false, Backend::Cpu, CpuSort),
        ];
        for (len, layout, values, has_gpu, backend, strategy) in table {
            let gpu = if has_gpu { GPU } else { None };
            let got = choose(&request(len, layout, values), gpu).unwrap();
            assert_eq!(
                got,
                (backend, strategy),
                "{len} keys, {layout:?}, values {values}"
            );
        }
    }

    #[test]
    fn backends_by_name() {
        let mut r = request(10, Layout::Whole, false);
        for (backend, strategy) in [
            (Backend::Cpu, CpuSort),
            (Backend::CpuNetwork, CpuNetwork),
            (Backend::CpuNetworkSerial, CpuNetworkSerial),
            (Backend::Cuda, NetworkPasses),
        ] {
            r.backend = backend;
            assert_eq!(choose(&r, GPU).unwrap(), (backend, strategy));
        }
        r.backend = Backend::Cuda;
        assert!(matches!(choose(&r, None), Err(Error::NoGpu)));
    }

    #[test]
    fn a_pinned_version_is_honoured_or_refused() {
        let mut r = request(10, Layout::Whole, false);
        r.version = Some(Version::V3);
        // Pinned, Auto takes the GPU even for 10 keys, and fails without one.
        assert_eq!(choose(&r, GPU).unwrap(), (Backend::Cuda, Seed(Version::V3)));
        assert!(matches!(choose(&r, None), Err(Error::NoGpu)));
        r.backend = Backend::Cpu;
        assert!(matches!(
            choose(&r, GPU),
            Err(Error::VersionNeedsGpu(Version::V3))
        ));
        r.backend = Backend::Cuda;
        for (layout, values) in [
            (Layout::Rows { row_len: 2 }, false),
            (Layout::Segments, false),
            (Layout::Whole, true),
        ] {
            let r = Request {
                layout,
                with_values: values,
                ..r
            };
            assert!(
                matches!(choose(&r, GPU), Err(Error::VersionUnsupported { .. })),
                "{layout:?} {values}"
            );
        }
        // The tuned version, pinned, is what runs anyway.
        r.version = Some(Version::Tuned);
        assert_eq!(choose(&r, GPU).unwrap(), (Backend::Cuda, NetworkPasses));
    }

    #[test]
    fn top_k_selections() {
        let rows = |row_len| Layout::Rows { row_len };
        let topk_of = |len, layout, k, key_bytes| Request {
            operation: Operation::Topk { k },
            key_bytes,
            ..request(len, layout, true)
        };
        let topk = |len, layout, k| topk_of(len, layout, k, 4);
        let max = TOPK_FILTER_MAX_K;
        let (chunk, radix_k) = (TOPK_RADIX_CHUNK, TOPK_RADIX_MAX_K);
        let long = Policy::HOPPER.topk_filter_above;
        let long_k = Policy::HOPPER.topk_long_radix_max_k;
        let (warp, warp_k) = (TOPK_WARP_SORT_MOST, Policy::HOPPER.topk_warp_sort_min_k_32);
        let warp_k16 = Policy::HOPPER.topk_warp_sort_min_k_16;
        let warp_all = Policy::HOPPER.topk_warp_sort_rows_up_to;
        let filter_k = Policy::HOPPER.topk_warp_filter_max_k;
        #[rustfmt::skip]
        let table = [
            // (keys, layout, k, key bytes, GPU present) -> backend, strategy
            (1000, Layout::Whole, 10, 4, true, Backend::Cpu, CpuTopk),
            (1 << 20, Layout::Whole, 10, 4, false, Backend::Cpu, CpuTopk),
            (1 << 20, Layout::Whole, 10, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, Layout::Whole, radix_k, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, Layout::Whole, radix_k + 1, 4, true, Backend::Cuda, TopkFilter),
            (1 << 20, Layout::Whole, max, 4, true, Backend::Cuda, TopkFilter),
            (long + 1, Layout::Whole, long_k, 4, true, Backend::Cuda, TopkRadix),
            (long + 1, Layout::Whole, long_k + 1, 4, true, Backend::Cuda, TopkFilter),
            (long + 1, rows(long), long_k + 1, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, Layout::Whole, max + 1, 4, true, Backend::Cuda, KeyValueMerge),
            (1 << 20, rows(1 << 20), max + 1, 4, true, Backend::Cuda, KeyValueMerge),
            (1 << 20, rows(4096), 100, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, rows(chunk), max, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, rows(chunk * 2), max, 4, true, Backend::Cuda, TopkFilter),
            (1 << 20, rows(4096), 4096, 4, true, Backend::Cuda, PairPasses),
            // Short rows of 2- and 4-byte keys: the warp sort for every k up to its length,
            // then from its k, and above half a row.
            (1 << 20, rows(warp_all), 1, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp_all), 1, 2, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp_all + 1), 1, 4, true, Backend::Cuda, TopkWarpSort),
            // (The filter's k reaches past the warp sort's: every k of both widths.)
            (1 << 20, rows(warp), filter_k, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp), filter_k + 1, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp + 1), 1, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, rows(warp), warp_k - 1, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp), warp_k, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp), warp_k16 - 1, 2, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp), warp_k16, 2, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp), warp, 2, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(1000), 501, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(1000), 100, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(1000), 200, 4, true, Backend::Cuda, TopkWarpSort),
            (1 << 20, rows(warp * 2), 513, 4, true, Backend::Cuda, TopkRadix),
            (1 << 20, rows(warp * 2), warp + 1, 4, true, Backend::Cuda, PairPasses),
            // 8-byte keys take the radix select or the rows' argsort.
            (1 << 20, rows(16), 1, 8, true, Backend::Cuda, TopkRadix),
            (1 << 20, rows(1024), 512, 8, true, Backend::Cuda, TopkRadix),
            (1 << 20, rows(1024), 513, 8, true, Backend::Cuda, PairPasses),
            (1 << 20, rows(1000), 501, 8, true, Backend::Cuda, PairPasses),
        ];
        // Under a policy whose warp filter stops at 128, the radix select keeps the k between
        // it and the warp sort's.
        let filter_128 = Policy {
            topk_warp_filter_max_k: 128,
            ..Policy::HOPPER
        };
        for (k, key_bytes, strategy) in [
            (128, 4, TopkWarpSort),
            (129, 4, TopkRadix),
            (warp_k - 1, 4, TopkRadix),
            (warp_k, 4, TopkWarpSort),
            (warp_k16 - 1, 2, TopkWarpSort),
            (warp_k16, 2, TopkWarpSort),
        ] {
            let got = choose(
                &topk_of(1 << 20, rows(warp), k, key_bytes),
                Some(&filter_128),
            );
            assert_eq!(
                got.unwrap(),
                (Backend::Cuda, strategy),
                "k {k}, {key_bytes}-byte keys"
            );
        }
        for (len, layout, k, key_bytes, has_gpu, backend, strategy) in table {
            let gpu = if has_gpu { GPU } else { None };
            let got = choose(&topk_of(len, layout, k, key_bytes), gpu).unwrap();
            assert_eq!(
                got,
                (backend, strategy),
                "{len} keys, {layout:?}, k {k}, {key_bytes}-byte keys"
            );
        }
        // Every CPU backend selects; a seed version is refused, the tuned one honoured.
        for backend in [Backend::Cpu, Backend::CpuNetwork, Backend::CpuNetworkSerial] {
            let r = Request {
                backend,
                ..topk(10, Layout::Whole, 3)
            };
            assert_eq!(choose(&r, GPU).unwrap(), (backend, CpuTopk));
        }
        let mut r = topk(10, Layout::Whole, 3);
        r.version = Some(Version::V5);
        assert!(matches!(
            choose(&r, GPU),
            Err(Error::VersionUnsupported {
                operation: "top-k selections",
                ..
            })
        ));
        r.version = Some(Version::Tuned);
        assert_eq!(choose(&r, GPU).unwrap(), (Backend::Cuda, TopkWarpSort));
        r.key_bytes = 8;
        assert_eq!(choose(&r, GPU).unwrap(), (Backend::Cuda, TopkRadix));
        assert!(choose(&topk(1 << 20, Layout::Segments, 3), GPU).is_err());
        assert!(TopkFilter.on_gpu() && TopkRadix.on_gpu() && TopkWarpSort.on_gpu());
        assert!(!CpuTopk.on_gpu());
    }

    #[test]
    fn the_merge_sort_starts_where_the_policy_says_for_the_key_width() {
        let of = |len, key_bytes| Request {
            key_bytes,
            ..request(len, Layout::Whole, false)
        };
        let hopper = &Policy::HOPPER;
        for (key_bytes, above) in [
            (2, hopper.merge_sort_above),
            (4, hopper.merge_sort_above),
            (8, hopper.wide_merge_sort_above),
        ] {
            assert_eq!(choose(&of(above, key_bytes), GPU).unwrap().1, NetworkPasses);
            assert_eq!(choose(&of(above + 1, key_bytes), GPU).unwrap().1, MergeSort);
        }
        assert!(hopper.wide_merge_sort_above < hopper.merge_sort_above);
    }

    #[test]
    fn the_policy_moves_the_merge_sort() {
        let policy = Policy {
            merge_sort_above: 1 << 20,
            ..Policy::HOPPER
        };
        let r = request((1 << 20) + 1, Layout::Whole, false);
        assert_eq!(choose(&r, Some(&policy)).unwrap().1, MergeSort);
        assert_eq!(choose(&r, GPU).unwrap().1, NetworkPasses);
        // A number of ways the merge kernels have no form for is an error, not a compile
        // failure or a panic.
        let three_ways = Policy {
            merge_ways: 3,
            ..policy.clone()
        };
        assert!(matches!(
            choose(&r, Some(&three_ways)),
            Err(Error::Unsupported(_))
        ));
        let sixty_four_wide = Policy {
            wide_merge_ways: 64,
            ..policy
        };
        assert!(matches!(
            choose(&r, Some(&sixty_four_wide)),
            Err(Error::Unsupported(_))
        ));
        // The key-value merge sort (argsorts, pairs, a top-k that sorts) merges as many runs.
        let pairs = request(1 << 20, Layout::Whole, true);
        let top_half = Request {
            operation: Operation::Topk { k: 600_000 },
            ..pairs
        };
        for r in [pairs, top_half] {
            assert_eq!(choose(&r, GPU).unwrap().1, KeyValueMerge);
            for bad in [&three_ways, &sixty_four_wide] {
                assert!(matches!(choose(&r, Some(bad)), Err(Error::Unsupported(_))));
            }
        }
    }
}
