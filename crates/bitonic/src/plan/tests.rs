//! What runs for each input: the plan's tables, on the CPU, for an H100 and Hopper's policy.

use super::*;
use crate::policy::{RadixPolicy, TopkPolicy};
use Strategy::*;

const H100: fn() -> DeviceInfo = DeviceInfo::h100;

/// The backend and strategy of `request` on an H100 (`gpu`) or without a GPU.
fn chosen(request: &Request, gpu: bool) -> Result<(Backend, Strategy)> {
    chosen_under(request, gpu, &Policy::HOPPER)
}

fn chosen_under(request: &Request, gpu: bool, policy: &Policy) -> Result<(Backend, Strategy)> {
    let info = H100();
    let device = gpu.then_some((&info as &dyn DeviceFacts, policy));
    plan(request, device).map(|p| (p.backend, p.strategy))
}

fn sort(len: usize) -> Request {
    Request::new(Operation::Sort, DType::U32, len)
}

fn sort_of(len: usize, dtype: DType) -> Request {
    Request::new(Operation::Sort, dtype, len)
}

fn argsort(len: usize) -> Request {
    Request::new(Operation::Argsort { index_bytes: 4 }, DType::U32, len)
}

fn pairs(len: usize, value_bytes: usize) -> Request {
    Request::new(Operation::SortPairs { value_bytes }, DType::U32, len)
}

fn topk(len: usize, k: usize, dtype: DType) -> Request {
    Request::new(Operation::Topk { k, index_bytes: 4 }, dtype, len)
}

fn h100_plan(request: &Request) -> Plan {
    h100_plan_under(request, &Policy::HOPPER)
}

fn h100_plan_under(request: &Request, policy: &Policy) -> Plan {
    plan(request, Some((&H100(), policy))).unwrap()
}

/// Hopper's policy with the radix sorts with indices off: the network's and the merge's
/// stable sorts, by name.
fn no_radix() -> Policy {
    let mut p = Policy::HOPPER;
    p.radix.from_row_len = usize::MAX;
    p
}

/// Hopper's policy with the radix sorts on from the rows they won on (Hopper's own now; named
/// so that the test keeps its meaning if Hopper's changes).
fn radix_on() -> Policy {
    let mut p = Policy::HOPPER;
    p.radix.from_row_len = crate::policy::RadixPolicy::MEASURED_FROM;
    p
}

#[test]
fn what_runs_for_each_input() {
    let segments = Layout::Segments {
        groups: vec![(10, 1 << 14)],
    };
    #[rustfmt::skip]
    let table = [
        // (request, GPU present) -> backend, strategy
        (sort(1000), true, Backend::Cpu, CpuSort),
        (sort(1 << 16), true, Backend::Cuda, NetworkPasses),
        (sort(1 << 21), true, Backend::Cuda, NetworkPasses),
        (sort((1 << 21) + 1), true, Backend::Cuda, MergeSort),
        (sort(1 << 29), false, Backend::Cpu, CpuSort),
        (sort(1 << 24).rows(1 << 24), true, Backend::Cuda, MergeSort),
        (sort(1 << 24).rows(1024), true, Backend::Cuda, NetworkPasses),
        // Long rows of keys alone not a power of two: the radix passes from the policy's row
        // length (of a power of two, and of 8-byte keys, the network's passes).
        (sort(1 << 24).rows(RadixPolicy::KEYS_MEASURED_FROM - 1), true, Backend::Cuda, NetworkPasses),
        (sort(1 << 24).rows(RadixPolicy::KEYS_MEASURED_FROM + 1), true, Backend::Cuda, RadixSort),
        (sort(1 << 24).rows(RadixPolicy::KEYS_MEASURED_FROM), true, Backend::Cuda, NetworkPasses),
        (sort(1 << 24).rows(1 << 18), true, Backend::Cuda, NetworkPasses),
        (sort(1 << 24).rows(151_936), true, Backend::Cuda, RadixSort),
        (sort_of(1 << 24, DType::BF16).rows(128_256), true, Backend::Cuda, RadixSort),
        (sort_of(1 << 24, DType::U64).rows(151_936), true, Backend::Cuda, NetworkPasses),
        (sort(1 << 24).layout(segments), true, Backend::Cuda, SegmentPasses),
        // Argsorts: radix sorts from rows of 4,096 keys (see radix_sorts_by_policy), the pair
        // passes below.
        (argsort(1 << 24), true, Backend::Cuda, RadixSort),
        (argsort(1 << 20).rows(1 << 20), true, Backend::Cuda, RadixSort),
        (argsort(1 << 24).rows(256), true, Backend::Cuda, PairPasses),
        (argsort(1 << 24).rows(4096), true, Backend::Cuda, RowRadix),
        (argsort(100).rows(10), false, Backend::Cpu, CpuSort),
        // Key-value sorts: 4-byte values ride the radix passes (at every row length from
        // 4,096: one block a row makes 16-bit indices); 8-byte ones the merge and pair passes.
        (pairs(1 << 24, 4), true, Backend::Cuda, RadixSort),
        (pairs(1 << 24, 4).rows(4096), true, Backend::Cuda, RadixSort),
        (pairs(1 << 24, 4).rows(4095), true, Backend::Cuda, PairPasses),
        (pairs(1 << 24, 8), true, Backend::Cuda, KeyValueMerge),
        (pairs(1 << 24, 8).rows(4096), true, Backend::Cuda, PairPasses),
    ];
    for (request, has_gpu, backend, strategy) in table {
        let got = chosen(&request, has_gpu).unwrap();
        assert_eq!(got, (backend, strategy), "{request:?}");
    }
}

#[test]
fn backends_by_name() {
    for (backend, strategy) in [
        (Backend::Cpu, CpuSort),
        (Backend::CpuNetwork, CpuNetwork),
        (Backend::CpuNetworkSerial, CpuNetworkSerial),
        (Backend::Cuda, NetworkPasses),
    ] {
        let r = sort(10).backend(backend);
        assert_eq!(chosen(&r, true).unwrap(), (backend, strategy));
    }
    let refused = chosen(&sort(10).backend(Backend::Cuda), false).unwrap_err();
    assert!(matches!(refused, Error::NoGpu(_)), "{refused}");
}

#[test]
fn a_pinned_version_is_honoured_or_refused() {
    let r = sort(10).version(Some(Version::V3));
    // Pinned, Auto takes the GPU even for 10 keys, and fails without one.
    assert_eq!(
        chosen(&r, true).unwrap(),
        (Backend::Cuda, Seed(Version::V3))
    );
    assert!(matches!(chosen(&r, false), Err(Error::NoGpu(_))));
    assert!(matches!(
        chosen(&r.clone().backend(Backend::Cpu), true),
        Err(Error::VersionNeedsGpu(Version::V3))
    ));
    let cuda = r.backend(Backend::Cuda);
    for other in [
        cuda.clone().rows(2).layout(Layout::Rows { row_len: 2 }),
        cuda.clone().layout(Layout::segments(&[0, 5, 10])),
        Request {
            operation: Operation::Argsort { index_bytes: 4 },
            ..cuda.clone()
        },
        Request {
            operation: Operation::Topk {
                k: 3,
                index_bytes: 4,
            },
            ..cuda.clone()
        },
    ] {
        let refused = chosen(&other, true);
        assert!(
            matches!(refused, Err(Error::VersionUnsupported { .. })),
            "{other:?}"
        );
    }
    // The tuned version, pinned, is what runs anyway.
    let tuned = cuda.version(Some(Version::Tuned));
    assert_eq!(
        chosen(&tuned, true).unwrap(),
        (Backend::Cuda, NetworkPasses)
    );
}

#[test]
fn top_k_selections() {
    let p = &Policy::HOPPER.topk;
    let (max, chunk, radix_k) = (
        TopkPolicy::FILTER_MAX_K,
        TopkPolicy::RADIX_CHUNK,
        TopkPolicy::RADIX_MAX_K,
    );
    let (long, long_k) = (p.filter_above, p.long_radix_max_k);
    let (warp, warp_k, warp_k16) = (
        TopkPolicy::WARP_SORT_MOST,
        p.warp_sort_min_k_32,
        p.warp_sort_min_k_16,
    );
    let (warp_all, filter_k) = (p.warp_sort_rows_up_to, p.warp_filter_max_k);
    let rows = |len: usize, row_len: usize, k, dtype| topk(len, k, dtype).rows(row_len);
    let (u32_, u16_, u64_) = (DType::U32, DType::F16, DType::U64);
    #[rustfmt::skip]
    let table = [
        // (request, GPU present) -> backend, strategy
        (topk(1000, 10, u32_), true, Backend::Cpu, CpuTopk),
        (topk(1 << 20, 10, u32_), false, Backend::Cpu, CpuTopk),
        // One row of 2^20: few rows whose sample leaves few candidates take the spread select
        // for k of the sampled select's (100 up); below it, with one row, the radix select.
        (topk(1 << 20, 10, u32_), true, Backend::Cuda, TopkRadix),
        (topk(1 << 20, 100, u32_), true, Backend::Cuda, TopkSpread),
        (topk(1 << 20, radix_k, u32_), true, Backend::Cuda, TopkSpread),
        (topk(1 << 20, radix_k + 1, u32_), true, Backend::Cuda, TopkFilter),
        (topk(1 << 20, max, u32_), true, Backend::Cuda, TopkFilter),
        // Rows past the filter's length: the radix select up to its k, then the filter (8-byte
        // keys, which the spread select does not take); 4-byte keys, the spread select.
        (topk(long + 1, long_k, u64_), true, Backend::Cuda, TopkRadix),
        (topk(long + 1, long_k + 1, u64_), true, Backend::Cuda, TopkFilter),
        (rows(2 * long, long, long_k + 1, u64_), true, Backend::Cuda, TopkRadix),
        (topk(long + 1, long_k + 1, u32_), true, Backend::Cuda, TopkSpread),
        (topk(long + 1, 2000, u32_), true, Backend::Cuda, TopkFilter),
        (topk(1 << 20, max + 1, u32_), true, Backend::Cuda, RadixSort),
        (rows(1 << 20, 1 << 20, max + 1, u32_), true, Backend::Cuda, RadixSort),
        (rows(1 << 20, 4096, 100, u32_), true, Backend::Cuda, TopkRadix),
        (rows(1 << 20, chunk, max, u32_), true, Backend::Cuda, TopkRadix),
        (rows(1 << 20, chunk * 2, max, u32_), true, Backend::Cuda, TopkFilter),
        (rows(1 << 20, 4096, 4096, u32_), true, Backend::Cuda, RowRadix),
        // Short rows of 2- and 4-byte keys: the warp sort for every k up to its length, then
        // from its k, and above half a row.
        (rows(1 << 20, warp_all, 1, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp_all, 1, u16_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp_all + 1, 1, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp, filter_k, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp, filter_k + 1, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp + 1, 1, u32_), true, Backend::Cuda, TopkRadix),
        (rows(1 << 20, warp, warp_k - 1, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp, warp_k, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp, warp_k16 - 1, u16_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp, warp_k16, u16_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp, warp, u16_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, 1000, 501, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, 1000, 100, u32_), true, Backend::Cuda, TopkWarpSort),
        (rows(1 << 20, warp * 2, 513, u32_), true, Backend::Cuda, TopkRadix),
        (rows(1 << 20, warp * 2, warp + 1, u32_), true, Backend::Cuda, PairPasses),
        // 8-byte keys take the radix select or the rows' radix sort.
        (rows(1 << 20, 16, 1, u64_), true, Backend::Cuda, TopkRadix),
        (rows(1 << 20, 1024, 512, u64_), true, Backend::Cuda, TopkRadix),
        (rows(1 << 20, 1024, 513, u64_), true, Backend::Cuda, PairPasses),
        (rows(1 << 20, 1000, 501, u64_), true, Backend::Cuda, PairPasses),
        // The spread select: 64 rows of 128,256 (the sampler's shape) for every k it takes.
        (rows(64 * 128_256, 128_256, 1, u32_), true, Backend::Cuda, TopkSpread),
        (rows(64 * 128_256, 128_256, 1024, u16_), true, Backend::Cuda, TopkSpread),
        (rows(4096 * 32_768, 32_768, 50, u32_), true, Backend::Cuda, TopkRadix),
    ];
    for (request, has_gpu, backend, strategy) in table {
        let got = chosen(&request, has_gpu).unwrap();
        assert_eq!(got, (backend, strategy), "{request:?}");
    }
    // Under a policy whose warp filter stops at 128, the radix select keeps the k between it
    // and the warp sort's.
    let mut filter_128 = Policy::HOPPER;
    filter_128.topk.warp_filter_max_k = 128;
    for (k, dtype, strategy) in [
        (128, u32_, TopkWarpSort),
        (129, u32_, TopkRadix),
        (warp_k - 1, u32_, TopkRadix),
        (warp_k, u32_, TopkWarpSort),
        (warp_k16 - 1, u16_, TopkWarpSort),
        (warp_k16, u16_, TopkWarpSort),
    ] {
        let r = rows(1 << 20, warp, k, dtype);
        let got = chosen_under(&r, true, &filter_128).unwrap();
        assert_eq!(got, (Backend::Cuda, strategy), "k {k}, {dtype}");
    }
    // Every CPU backend selects; a seed version is refused, the tuned one honoured.
    for backend in [Backend::Cpu, Backend::CpuNetwork, Backend::CpuNetworkSerial] {
        let r = topk(10, 3, u32_).backend(backend);
        assert_eq!(chosen(&r, true).unwrap(), (backend, CpuTopk));
    }
    let r = topk(10, 3, u32_).version(Some(Version::Tuned));
    assert_eq!(chosen(&r, true).unwrap(), (Backend::Cuda, TopkWarpSort));
    let r = topk(10, 3, u64_).version(Some(Version::Tuned));
    assert_eq!(chosen(&r, true).unwrap(), (Backend::Cuda, TopkRadix));
    let segments = topk(1 << 20, 3, u32_).layout(Layout::segments(&[0, 1 << 19, 1 << 20]));
    assert!(chosen(&segments, true).is_err());
    assert!(TopkFilter.on_gpu() && TopkSpread.on_gpu() && !CpuTopk.on_gpu());
}

#[test]
fn the_merge_sort_starts_where_the_policy_says_for_the_key_width() {
    let merge = &Policy::HOPPER.merge;
    for (dtype, above) in [
        (DType::BF16, merge.above),
        (DType::F32, merge.above),
        (DType::U64, merge.wide_above),
    ] {
        let at = |len| {
            chosen(&Request::new(Operation::Sort, dtype, len), true)
                .unwrap()
                .1
        };
        assert_eq!(at(above), NetworkPasses, "{dtype}");
        assert_eq!(at(above + 1), MergeSort, "{dtype}");
    }
    assert!(merge.wide_above < merge.above);
}

#[test]
fn the_policy_moves_the_merge_sort_and_an_invalid_one_is_refused() {
    let mut policy = Policy::HOPPER;
    policy.merge.above = 1 << 20;
    let r = sort((1 << 20) + 1);
    assert_eq!(chosen_under(&r, true, &policy).unwrap().1, MergeSort);
    assert_eq!(chosen(&r, true).unwrap().1, NetworkPasses);
    // A number of ways the merge kernels have no form for is an error, not a compile failure
    // or a panic, for every GPU plan (validate() runs first).
    for bad in [3, 64] {
        let mut p = policy.clone();
        p.merge.ways = bad;
        for r in [&r, &argsort(1 << 20), &topk(1 << 20, 600_000, DType::U32)] {
            let refused = chosen_under(r, true, &p).unwrap_err();
            assert!(matches!(refused, Error::InvalidPolicy(_)), "{refused}");
        }
    }
}

/// What each plan compiles, and where it keeps its scratch: the modules and workspace parts
/// of every GPU strategy.
#[test]
fn modules_and_workspaces_of_each_strategy() {
    let names = |p: &Plan| p.modules.iter().map(|m| m.name()).collect::<Vec<_>>();
    let parts = |p: &Plan| {
        p.workspace
            .parts()
            .iter()
            .map(|part| (part.scratch, part.bytes))
            .collect::<Vec<_>>()
    };
    let n = 1 << 24;
    // The merge sort: the tile sort's module and the merge levels'; its spare array, the merge
    // paths of its widest level and the samples.
    let merge = h100_plan(&sort(n));
    assert_eq!(names(&merge), ["tuned.cu[u32, 2^14]", "merge.cu[words]"]);
    let Steps::Merge(m) = &merge.steps else {
        panic!("{merge:?}")
    };
    assert_eq!((m.run_bits, m.levels.ways()), (14, vec![16, 8, 8]));
    assert!(m.levels.runs_in_spare());
    assert_eq!(parts(&merge)[0], (Scratch::Spare, 4 * n));
    assert_eq!(
        merge.workspace.part(Scratch::Ranks).unwrap().bytes,
        8 * m.levels.splits
    );
    // 16-bit keys: widened into words first, with the key map's module.
    let half = h100_plan(&Request::new(Operation::Sort, DType::BF16, n));
    assert_eq!(parts(&half)[0], (Scratch::Words, 4 * n));
    assert!(names(&half).contains(&"map_keys.cu".to_string()));
    assert!(half.widen.is_some() && half.map == 0);
    // A descending sort of f32 maps and complements in its passes.
    let down = h100_plan(
        &Request::new(Operation::Sort, DType::F32, 1000)
            .order(Order::Descending)
            .backend(Backend::Cuda),
    );
    assert_eq!((down.map, down.widen), (2 | MAP_DESCENDING, None));
    assert_eq!(down.workspace_bytes(), 0);
    // The key-value merge sort of an argsort: positions as 8-byte values.
    let kv = h100_plan_under(
        &Request::new(Operation::Argsort { index_bytes: 8 }, DType::U32, n),
        &no_radix(),
    );
    assert_eq!(names(&kv), ["tuned.cu[u32, 2^14]", "merge.cu[kv_u32_u64]"]);
    let spare_values = kv.workspace.part(Scratch::SpareValues).unwrap();
    assert_eq!(spare_values.bytes, 8 * n);
    // Pairs over rows with values: the pairs (none between the passes of one), the indices and
    // the values' copy.
    let pairs = Request::new(Operation::SortPairs { value_bytes: 4 }, DType::U64, n).rows(1024);
    let pairs = h100_plan(&pairs);
    assert_eq!(names(&pairs), ["tuned.cu[kv64, 2^12]", "pairs.cu"]);
    let scratch: Vec<Scratch> = pairs.workspace.parts().iter().map(|p| p.scratch).collect();
    assert_eq!(
        scratch,
        [Scratch::Pairs, Scratch::Indices, Scratch::ValuesCopy]
    );
    // A top-k's partials, and the spread select's scratch.
    let radix = h100_plan(&topk(4096 * 32_768, 50, DType::F32).rows(32_768));
    assert_eq!(radix.strategy, TopkRadix);
    assert!(radix.workspace.part(Scratch::Partials).is_some());
    let spread = h100_plan(&topk(64 * 128_256, 50, DType::BF16).rows(128_256));
    assert_eq!(spread.strategy, TopkSpread);
    assert_eq!(names(&spread), ["topk.cu[u16_sampled]"]);
    assert!(spread.workspace.part(Scratch::Spread).is_some());
    // A top-k by sorting: the sorted copy, every index, then the sort's scratch.
    let by_sorting = h100_plan_under(&topk(1 << 20, 4096, DType::F32), &no_radix());
    let scratch: Vec<Scratch> = by_sorting
        .workspace
        .parts()
        .iter()
        .map(|p| p.scratch)
        .collect();
    assert_eq!(&scratch[..2], [Scratch::SortedKeys, Scratch::SortedIndices]);
    assert!(matches!(by_sorting.steps, Steps::TopkBySorting { .. }));
    // k the whole row (a sort with indices into outputs of its own): the sort writes the
    // caller's indices, and nothing is taken.
    let whole = h100_plan_under(
        &topk(1 << 16, 1 << 16, DType::F32).backend(Backend::Cuda),
        &no_radix(),
    );
    let Steps::TopkBySorting { take_indices, .. } = &whole.steps else {
        panic!("a top-k by sorting, not {:?}", whole.steps);
    };
    assert!(take_indices.is_none());
    assert!(whole.workspace.part(Scratch::SortedIndices).is_none());
    // Rows sort in the pair passes alone, which pack the keys (16-bit ones as they are: no
    // widening) and write the first k of each row: one tuned module, the pairs' scratch.
    for (dtype, row_len) in [
        (DType::F32, 8192),
        (DType::BF16, 8192),
        (DType::F64, 8192),
        (DType::F32, 1 << 20),
    ] {
        let n = 4 * row_len;
        let request = topk(n, 3000, dtype).rows(row_len).backend(Backend::Cuda);
        let rows = h100_plan_under(&request, &no_radix());
        let Steps::TopkByPairPasses(passes) = &rows.steps else {
            panic!("{dtype:?}: the top-k by pair passes, not {:?}", rows.steps);
        };
        assert_eq!(rows.modules, [passes.module], "{dtype:?}");
        // The kernel of the keys' pairs, which src/cuda/rows.rs `select_rows` checks too.
        let pairs = crate::kernels::Tuned::of_word_bytes(pair_bytes_of(dtype.size()));
        assert_eq!(passes.kernel, pairs, "{dtype:?}");
        let pairs = rows.workspace.part(Scratch::Pairs).expect("the pairs");
        let pair_bytes = if dtype.size() <= 4 { 8 } else { 16 };
        // Nothing between passes where one pass sorts a row (8,192 pairs fit a tile, or a
        // cluster's); rows of 2^20 take several.
        let between = if passes.pass_count() > 1 { n } else { 0 };
        assert_eq!(pairs.bytes, between * pair_bytes, "{dtype:?}");
        assert_eq!(rows.workspace.parts().len(), 1, "{dtype:?}");
        assert_eq!(
            passes.pass_count() > 1,
            row_len > 8192,
            "{dtype:?} {row_len}"
        );
    }
    // An argsort of rows in the pair passes packs in place the same way (16-bit keys as they
    // are): one tuned module, no widening, the pairs' scratch only between passes.
    for (dtype, row_len, passes_of_row) in [
        (DType::F32, 256, 1),
        (DType::BF16, 1024, 1),
        (DType::U64, 4096, 1),
        (DType::F32, 1 << 20, 2),
    ] {
        let n = 4 * row_len;
        let argsort = Operation::Argsort { index_bytes: 8 };
        let request = Request::new(argsort, dtype, n).rows(row_len);
        let rows = h100_plan_under(&request.backend(Backend::Cuda), &no_radix());
        let Steps::Pairs(pairs) = &rows.steps else {
            panic!("{dtype:?}: the pair passes, not {:?}", rows.steps);
        };
        assert_eq!(rows.modules, [pairs.passes.module], "{dtype:?}");
        assert_eq!((rows.widen, pairs.gather), (None, None), "{dtype:?}");
        let between = if passes_of_row > 1 { n } else { 0 };
        assert_eq!(
            parts(&rows),
            [(Scratch::Pairs, between * pairs.pair_bytes)],
            "{dtype:?} {row_len}"
        );
        assert_eq!(
            pairs.passes.pass_count() > 1,
            passes_of_row > 1,
            "{dtype:?}"
        );
    }
    // A sort of rows of one key runs no pass (sorted already): nothing to compile.
    let one_key_rows = h100_plan(&sort(1000).rows(1).backend(Backend::Cuda));
    let Steps::Passes(passes) = &one_key_rows.steps else {
        panic!("the network's passes, not {:?}", one_key_rows.steps);
    };
    assert_eq!(passes.pass_count(), 0);
    assert_eq!(names(&one_key_rows), Vec::<String>::new());
    // Nothing to do: no keys, or k = 0.
    for nothing in [
        sort(0).backend(Backend::Cuda),
        topk(100, 0, DType::F32).backend(Backend::Cuda),
    ] {
        let p = h100_plan(&nothing);
        let nothing = (&p.steps, p.modules.len(), p.workspace_bytes());
        assert_eq!(nothing, (&Steps::Nothing, 0, 0));
    }
    // A seed version: its module and the key map around it.
    let seed = h100_plan(&sort(1000).version(Some(Version::V2)));
    assert_eq!(names(&seed), ["v2_shared.cu", "map_keys.cu"]);
}

#[test]
fn a_merge_or_radix_sort_without_room_for_its_workspace_falls_back_to_the_passes() {
    let info = H100();
    let gpu = Some((&info as &dyn DeviceFacts, &Policy::HOPPER));
    let r = Request::new(Operation::Sort, DType::U32, 1 << 24);
    let full = plan(&r, gpu).unwrap();
    let needed = full.workspace_bytes();
    let fallen = plan_within(&r, gpu, Some(needed - 1)).unwrap();
    assert_eq!(fallen.strategy, NetworkPasses);
    assert_eq!(
        fallen.fallback,
        Some(Fallback::NoRoomForMergeSort { needed })
    );
    assert!(
        fallen.to_string().contains("no room for the merge sort"),
        "{fallen}"
    );
    assert_eq!(plan_within(&r, gpu, Some(needed)).unwrap(), full);
    // Long rows of 4-byte keys alone: the radix passes' arrays, else the passes in place.
    let rows = Request::new(Operation::Sort, DType::F32, 256 * 151_936).rows(151_936);
    let full = plan(&rows, gpu).unwrap();
    assert_eq!(full.strategy, RadixSort);
    let needed = full.workspace_bytes();
    let fallen = plan_within(&rows, gpu, Some(needed - 1)).unwrap();
    assert_eq!(fallen.strategy, NetworkPasses);
    assert_eq!(
        fallen.fallback,
        Some(Fallback::NoRoomForRadixSort { needed })
    );
    assert_eq!(fallen.workspace_bytes(), 0);
    // 16-bit keys widen into a workspace the passes need too: too little memory is an error.
    let half = Request::new(Operation::Sort, DType::F16, 1 << 24);
    assert!(matches!(
        plan_within(&half, gpu, Some(0)),
        Err(Error::DeviceMemory { .. })
    ));
}

#[test]
fn segments_group_by_padded_length() {
    let layout = Layout::segments(&[0, 1, 3, 7, 7, 20, 1044]);
    // lengths 1, 2, 4, 0, 13, 1024: padded 2, 4, 16, 1024 (a key alone needs no sort).
    assert_eq!(
        layout,
        Layout::Segments {
            groups: vec![(1, 1), (2, 1), (4, 1), (10, 1)]
        }
    );
    let p = h100_plan(&sort(1044).layout(layout).backend(Backend::Cuda));
    let Steps::Segments(groups) = &p.steps else {
        panic!("{p:?}")
    };
    assert_eq!(groups.len(), 4);
    assert_eq!(
        p.workspace.part(Scratch::SegmentBounds).unwrap().bytes,
        2 * 4 * 4
    );
}

/// Under a policy that turns the radix sorts on (from the rows they won on): argsorts and the
/// top-k by sorting of rows from 4,096 keys, one block a row up to 2^14 keys (8-byte keys to
/// 2^13, which a block's shared memory holds), else in passes; shorter rows as before.
#[test]
fn radix_sorts_by_policy() {
    let argsort = |len| Request::new(Operation::Argsort { index_bytes: 4 }, DType::U32, len);
    let topk = |len, row_len, k, dtype| {
        Request::new(Operation::Topk { k, index_bytes: 8 }, dtype, len).rows(row_len)
    };
    let on = radix_on();
    // A key-value sort's plan carries its values; an argsort's makes indices.
    let values = |request: &Request| match h100_plan_under(request, &on).steps {
        Steps::Radix(r) => r.values,
        other => panic!("{other:?}"),
    };
    assert!(values(&pairs(1 << 20, 4)));
    assert!(!values(&argsort(1 << 20)));
    for (request, strategy) in [
        (argsort(1 << 24), RadixSort),
        (argsort(1 << 20).rows(1 << 20), RadixSort),
        (argsort(1 << 24).rows(256), PairPasses),
        (argsort(1 << 24).rows(4095), PairPasses),
        (argsort(1 << 24).rows(4096), RowRadix),
        (argsort(1 << 24).rows(1 << 14), RowRadix),
        (argsort(1 << 24).rows((1 << 14) + 1), RadixSort),
        (argsort(4095).backend(Backend::Cuda), KeyValueMerge),
        (topk(1 << 20, 1 << 20, 2049, DType::U32), RadixSort),
        (topk(1 << 20, 4096, 4096, DType::F32), RowRadix),
        (topk(1 << 20, 8192, 5000, DType::U64), RowRadix),
        (topk(1 << 20, 1 << 14, 9000, DType::F64), RadixSort),
        (topk(64 * 128_256, 128_256, 128_256, DType::BF16), RadixSort),
        (topk(1 << 20, 1024, 513, DType::U64), PairPasses),
    ] {
        let got = chosen_under(&request, true, &on).unwrap();
        assert_eq!(got, (Backend::Cuda, strategy), "{request:?}");
        if strategy != PairPasses && strategy != KeyValueMerge {
            // One module, one launch a row or five a digit.
            let plan = h100_plan_under(&request, &on);
            assert_eq!(plan.modules, [&crate::kernels::RADIX], "{request:?}");
            // 16-bit keys as they are: no widened words.
            assert_eq!(plan.widen, None);
            let passes = strategy == RadixSort;
            let scratch = plan.workspace.part(Scratch::RadixKeys).is_some();
            assert_eq!(scratch, passes, "{request:?}: scratch only between passes");
        }
    }
}
