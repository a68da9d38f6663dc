//! Top-k selection against the first k of a stable sort (by key in total order, ties by
//! index), for every key type, the largest and the smallest keys, many k and row shapes, on the
//! CPU and the GPU (whose tests are ignored without one and fail under BITONIC_REQUIRE_GPU=1),
//! host slices and device buffers; and the errors of bad shapes, which need no GPU.

mod common;

use bitonic::plan::{Layout, Operation};
use bitonic::policy::TopkPolicy;
use bitonic::{Backend, Error, Order, Plan, Policy, SortKey, Sorter, Strategy};
use common::harness::{self, tests, Needs};
use common::{gpu, make_keys, Pattern, TestKey, PATTERNS};
use rayon::prelude::*;

fn main() {
    harness::run(tests![
        Needs::Nothing =>
            bad_k_and_outputs_are_errors, cpu_every_type_against_a_stable_sort,
            cpu_patterns_with_ties;
        Needs::Gpu =>
            gpu_u32, gpu_i32, gpu_u64, gpu_i64, gpu_f32, gpu_f64, gpu_f16, gpu_bf16,
            gpu_patterns_with_ties, gpu_keys_sharing_their_top_bits,
            gpu_filter_on_every_row, gpu_radix_at_16_a_thread, gpu_streamed_segments,
            gpu_sampled_select, gpu_spread_select,
            gpu_short_rows_by_warps, gpu_device_buffers,
            gpu_auto_backend, topk_for_the_sanitizer;
    ]);
}

const SELECTS: [Order; 2] = [Order::Descending, Order::Ascending];
const KS: [usize; 12] = [1, 2, 7, 50, 64, 100, 256, 300, 600, 1000, 1024, 2048];
/// (rows, row_len): rows shorter than 2k for the larger k, lengths across the filter's tiles
/// and chunks and around the radix select's chunk, and rows long enough for two and three
/// reduction passes.
const SHAPES: [(usize, usize); 22] = [
    (1, 1),
    (3, 1),
    (64, 1),
    (1, 2),
    (64, 2),
    (1, 31),
    (3, 31),
    (64, 31),
    (1, 1000),
    (64, 1000),
    (1, 4097),
    (3, 4097),
    (64, 4097),
    (2, TopkPolicy::RADIX_CHUNK - 1),
    (3, TopkPolicy::RADIX_CHUNK),
    (2, TopkPolicy::RADIX_CHUNK + 1),
    (1, 2 * TopkPolicy::RADIX_CHUNK + 5),
    (2, 9600), // the radix thresholds of four (k = 300) and eight (k = 600) groups a thread
    (1, 100_003),
    (3, 100_003),
    (1, (1 << 20) + 3),
    (3, (1 << 20) + 3),
];

/// Each row's stable order: positions sorted by key (descending for the largest), ties by
/// position. Pairs of (ordered word, position) are unique, so an unstable sort is stable.
fn stable_orders<K: SortKey>(keys: &[K], row_len: usize, select: Order) -> Vec<Vec<u32>> {
    keys.par_chunks(row_len)
        .map(|row| {
            let mut pairs: Vec<(K::Bits, u32)> = row
                .iter()
                .enumerate()
                .map(|(i, key)| (key.to_bits_ordered(), i as u32))
                .collect();
            match select {
                Order::Ascending => pairs.sort_unstable(),
                Order::Descending => {
                    pairs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)))
                }
            }
            pairs.into_iter().map(|(_, i)| i).collect()
        })
        .collect()
}

/// Checks a result against the first k of each row's stable order, bit for bit.
fn check_result<K: SortKey>(
    keys: &[K],
    row_len: usize,
    k: usize,
    orders: &[Vec<u32>],
    (values, indices): (&[K], &[u32]),
    what: &str,
) {
    assert_eq!(values.len(), orders.len() * k, "{what}: values");
    assert_eq!(indices.len(), orders.len() * k, "{what}: indices");
    for (r, order) in orders.iter().enumerate() {
        let want = &order[..k];
        let got = &indices[r * k..(r + 1) * k];
        if got != want {
            let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
            let row = &keys[r * row_len..(r + 1) * row_len];
            panic!(
                "{what}: row {r}, rank {at}: index {} (key {:?}), want {} (key {:?})",
                got[at],
                row.get(got[at] as usize),
                want[at],
                row[want[at] as usize]
            );
        }
        for (rank, &i) in want.iter().enumerate() {
            let (got, want) = (values[r * k + rank], keys[r * row_len + i as usize]);
            assert!(
                got.to_bits_ordered() == want.to_bits_ordered(),
                "{what}: row {r}, rank {rank}: value {got:?}, want {want:?}"
            );
        }
    }
}

/// The k of a shape: every k of [`KS`] up to the row length, and the row length itself.
fn ks_for(row_len: usize) -> Vec<usize> {
    let mut ks: Vec<usize> = KS.iter().copied().filter(|&k| k <= row_len).collect();
    ks.push(row_len);
    ks.dedup();
    ks
}

/// The strategy the plan of a top-k of this shape (keys of `K`) gives on `sorter`'s backend:
/// what a call must report having run (the plan's own tables, src/plan/tests.rs, say which
/// strategy each shape gets).
fn planned<K: SortKey>(sorter: &Sorter, (rows, row_len): (usize, usize), k: usize) -> Strategy {
    let layout = if rows > 1 {
        Layout::Rows { row_len }
    } else {
        Layout::Whole
    };
    let operation = Operation::Topk { k, index_bytes: 4 };
    let plan = sorter.plan(operation, K::DTYPE, rows * row_len, layout);
    plan.expect("a plan of a valid top-k").strategy
}

/// Every k of every shape, both selections, on `backend`, against the stable sort.
fn check_shapes<K: TestKey>(backend: Backend, shapes: &[(usize, usize)], pattern: Pattern) {
    check_shapes_with::<K>(backend, None, shapes, pattern)
}

/// [`check_shapes`] with `policy` for the GPU instead of its architecture's own (whose top-k
/// numbers are Hopper's on every architecture).
fn check_shapes_with<K: TestKey>(
    backend: Backend,
    policy: Option<&Policy>,
    shapes: &[(usize, usize)],
    pattern: Pattern,
) {
    for &(rows, row_len) in shapes {
        check_ks::<K>(backend, policy, (rows, row_len), pattern, &ks_for(row_len));
    }
}

/// [`check_shapes_with`] for one shape and the given k.
fn check_ks<K: TestKey>(
    backend: Backend,
    policy: Option<&Policy>,
    (rows, row_len): (usize, usize),
    pattern: Pattern,
    ks: &[usize],
) {
    let keys = make_keys::<K>(rows * row_len, pattern, (rows * 7 + row_len) as u64);
    for select in SELECTS {
        let orders = stable_orders(&keys, row_len, select);
        for &k in ks {
            let what = format!(
                "{:?} {backend:?} {pattern:?} {rows}x{row_len} k {k} {select:?}",
                K::DTYPE
            );
            let mut sorter = Sorter::new().backend(backend);
            if let Some(policy) = policy {
                sorter = sorter.policy(policy.clone());
            }
            let ran = check_selection(&sorter, &keys, row_len, k, select, &orders, &what);
            let want = planned::<K>(&sorter.clone().order(select), (rows, row_len), k);
            assert_eq!(ran.strategy, want, "{what}");
        }
    }
}

/// One type on the GPU: every shape on random keys (floats with NaN, ±0 and ±inf mixed in),
/// and indices of another type.
fn gpu_type<K: TestKey>(test: &str) {
    let gpu = gpu(test);
    eprintln!("{test} on {}", gpu.info().name);
    check_shapes::<K>(Backend::Cuda, &SHAPES, Pattern::Random);
    let keys = make_keys::<K>(100_003, Pattern::Random, 3);
    let orders = stable_orders(&keys, keys.len(), Order::Descending);
    let (mut values, mut wide) = (vec![keys[0]; 50], vec![0usize; 50]);
    Sorter::new()
        .backend(Backend::Cuda)
        .clone()
        .order(Order::Descending)
        .topk(&keys, &mut values, &mut wide, 50)
        .unwrap();
    let narrow: Vec<u32> = wide.iter().map(|&i| i as u32).collect();
    check_result(
        &keys,
        keys.len(),
        50,
        &orders,
        (&values, &narrow),
        "usize indices",
    );
}

fn gpu_u32() {
    gpu_type::<u32>("gpu_u32");
}
fn gpu_i32() {
    gpu_type::<i32>("gpu_i32");
}
fn gpu_u64() {
    gpu_type::<u64>("gpu_u64");
}
fn gpu_i64() {
    gpu_type::<i64>("gpu_i64");
}
fn gpu_f32() {
    gpu_type::<f32>("gpu_f32");
}
fn gpu_f64() {
    gpu_type::<f64>("gpu_f64");
}
fn gpu_f16() {
    gpu_type::<bitonic::half::f16>("gpu_f16");
}
fn gpu_bf16() {
    gpu_type::<bitonic::half::bf16>("gpu_bf16");
}

/// Shapes for the patterns: one long row (reduction passes), rows shorter than 2k, many rows.
const PATTERN_SHAPES: [(usize, usize); 4] = [(1, (1 << 20) + 3), (3, 4097), (64, 1000), (5, 31)];

/// Sorted input makes every key a candidate (a flush every other tile); few distinct and
/// all-equal keys make the ties decide, across chunks and passes.
fn patterns_on(backend: Backend) {
    // The long row is the GPU's (the CPU's long rows are its unit tests').
    let long = if backend == Backend::Cuda { 0 } else { 1 };
    for pattern in PATTERNS {
        check_shapes::<u32>(backend, &PATTERN_SHAPES[long..], pattern);
        check_shapes::<f64>(backend, &PATTERN_SHAPES[long..], pattern);
        check_shapes::<i64>(backend, &PATTERN_SHAPES[1..], pattern);
        check_shapes::<f32>(backend, &PATTERN_SHAPES[1..], pattern);
        check_shapes::<bitonic::half::bf16>(backend, &PATTERN_SHAPES[long..], pattern);
    }
}

/// The threshold filter on rows the radix select would take by default (a policy that streams
/// every row longer than one radix chunk), all k, random keys and ties; then the rule for rows
/// past `topk_filter_above` (the radix select up to `topk_long_radix_max_k`, the filter above):
/// on every row longer than a chunk with bf16 ties, and on one row past the default bound
/// (2^26, which the radix select reduces in four passes) either side of the default k.
fn gpu_filter_on_every_row() {
    gpu("gpu_filter_on_every_row");
    let filter = {
        let mut p = Policy::HOPPER.clone();
        p.topk.filter_above = 0;
        p.topk.long_radix_max_k = 0;
        p
    };
    let filter = Some(&filter);
    check_shapes_with::<f32>(Backend::Cuda, filter, &SHAPES, Pattern::Random);
    check_shapes_with::<u64>(Backend::Cuda, filter, &SHAPES[8..], Pattern::Random);
    check_shapes_with::<bitonic::half::bf16>(Backend::Cuda, filter, &SHAPES[8..], Pattern::Random);
    for pattern in PATTERNS {
        check_shapes_with::<i32>(Backend::Cuda, filter, &PATTERN_SHAPES, pattern);
    }
    let long_rows = {
        let mut p = Policy::HOPPER.clone();
        p.topk.filter_above = 0;
        p
    };
    let long_rows = Some(&long_rows);
    check_shapes_with::<bitonic::half::bf16>(
        Backend::Cuda,
        long_rows,
        &SHAPES[8..],
        Pattern::FewDistinct,
    );
    let past_the_bound = (1, Policy::HOPPER.topk.filter_above + 3);
    let long_k = Policy::HOPPER.topk.long_radix_max_k;
    let around_long_k = [1, long_k, long_k + 1];
    check_ks::<f32>(
        Backend::Cuda,
        None,
        past_the_bound,
        Pattern::Random,
        &around_long_k,
    );
    check_ks::<u64>(
        Backend::Cuda,
        None,
        past_the_bound,
        Pattern::FewDistinct,
        &[long_k],
    );
}

/// The radix select at most 16 elements a thread (chunks of 4,096), random keys and ties.
fn gpu_radix_at_16_a_thread() {
    gpu("gpu_radix_at_16_a_thread");
    let sixteen = {
        let mut p = no_spread().clone();
        p.topk.radix_per_thread = 16;
        p.topk.sampled_max_k = 0;
        p
    };
    let sixteen = Some(&sixteen);
    check_shapes_with::<f32>(Backend::Cuda, sixteen, &SHAPES, Pattern::Random);
    check_shapes_with::<bitonic::half::bf16>(Backend::Cuda, sixteen, &SHAPES[8..], Pattern::Random);
    for pattern in PATTERNS {
        check_shapes_with::<u64>(Backend::Cuda, sixteen, &PATTERN_SHAPES, pattern);
    }
    // Another number is an error, not a panic.
    let eight = {
        let mut p = Policy::HOPPER.clone();
        p.topk.radix_per_thread = 8;
        p
    };
    let keys = vec![1.0f32; 4096];
    let (mut values, mut indices) = (vec![0f32; 8], vec![0u32; 8]);
    let sorter = Sorter::new().backend(Backend::Cuda).policy(eight);
    let got = sorter
        .clone()
        .order(Order::Descending)
        .topk(&keys, &mut values, &mut indices, 8);
    assert!(matches!(got, Err(Error::InvalidPolicy(_))), "{got:?}");
}

/// A policy that streams segments (kernels/topk.cu STREAM) for every k it can (1 to 1,024),
/// cuts no row for the grid's sake, and gives a segment at most `stream_chunks` chunks: short
/// rows stream too.
fn streaming_policy(stream_chunks: usize) -> Policy {
    {
        let mut p = Policy::HOPPER.clone();
        p.topk.radix_blocks_per_sm = 0;
        p.topk.radix_stream_chunks = stream_chunks;
        p.topk.radix_stream_min_k = 1;
        p.topk.radix_stream_max_k = TopkPolicy::RADIX_MAX_K;
        p.topk.sampled_max_k = 0;
        p
    }
}

/// Rows streamed in segments against a running threshold, every k that streams and past it:
/// rows of one segment (the last chunk whole, short, or of one key) and of four (merged for
/// k up to 256, else selected again), every pattern (sorted keys overflow the candidates with
/// each later chunk; ties crowd the thresholds); then keys rising in steps longer than a
/// chunk, so that a later chunk's own threshold ties with most of its keys, which then go in
/// slices.
fn gpu_streamed_segments() {
    gpu("gpu_streamed_segments");
    let (one_segment, four_chunks) = (streaming_policy(64), streaming_policy(4));
    let rows_of_one = [
        (3, 40_000),
        (1, 4 * TopkPolicy::RADIX_CHUNK),
        (2, 5 * TopkPolicy::RADIX_CHUNK + 1),
    ];
    let ks = [1, 8, 50, 128, 129, 256, 300, 600, 1000, 1024, 1025];
    for pattern in PATTERNS {
        for (policy, shapes) in [
            (&one_segment, &rows_of_one[..]),
            (&four_chunks, &[(2, 100_003)]),
        ] {
            for &shape in shapes {
                check_ks::<f32>(Backend::Cuda, Some(policy), shape, pattern, &ks);
                check_ks::<bitonic::half::bf16>(Backend::Cuda, Some(policy), shape, pattern, &ks);
            }
        }
        check_ks::<u64>(
            Backend::Cuda,
            Some(&one_segment),
            rows_of_one[0],
            pattern,
            &ks,
        );
        check_ks::<i32>(
            Backend::Cuda,
            Some(&four_chunks),
            (2, 100_003),
            pattern,
            &[50, 256],
        );
    }
    // The default policy streams below its k where that saves a pass: 600 rows of 32,768 (a
    // segment a row, not four chunks and their merge), one row of 2^24 + 3 at k = 8 (513
    // segments, whose partials one block selects from).
    for (shape, ks) in [
        ((600, 32_768), &[1, 8, 50][..]),
        ((1, (1 << 24) + 3), &[8][..]),
    ] {
        check_ks::<f32>(Backend::Cuda, None, shape, Pattern::Random, ks);
        check_ks::<bitonic::half::bf16>(Backend::Cuda, None, shape, Pattern::FewDistinct, ks);
    }
    let (rows, row_len) = (2, 50_000);
    let steps: Vec<f32> = (0..rows * row_len)
        .map(|i| ((i % row_len) / 9000) as f32)
        .collect();
    let sorter = Sorter::new().backend(Backend::Cuda).policy(one_segment);
    for select in SELECTS {
        let orders = stable_orders(&steps, row_len, select);
        for k in [1, 50, 256, 1000] {
            let what = format!("steps {rows}x{row_len} k {k} {select:?}");
            let ran = check_selection(&sorter, &steps, row_len, k, select, &orders, &what);
            assert_eq!(ran.strategy, Strategy::TopkRadix, "{what}");
        }
    }
}

/// The sampled select (kernels/topk.cu `topk_sampled`), the radix select's first pass for k
/// up to 1,024 on rows of at least 8 k and 8,192 keys: a chunk a row and rows cut to fill the
/// GPU (their runs merged or selected again), lengths around its shortest chunk, k either side
/// of its largest, every pattern (sorted keys, ties and equal keys overflow its candidates, and
/// the threshold filter takes the chunk); then rows whose only large keys, fewer than k, lie in
/// the sample, so that too few keys reach the sample's threshold and the filter takes over.
fn gpu_sampled_select() {
    use bitonic::half::{bf16, f16};
    gpu("gpu_sampled_select");
    // Every k it takes, on chunks down to its shortest, cut to fill the GPU or a chunk a row.
    let every_k = sampling_every_k();
    let whole_rows = {
        let mut p = every_k.clone().clone();
        p.topk.radix_blocks_per_sm = 0;
        p
    };
    let shapes = [(3, 8192), (2, 8193), (2, 8007), (3, 40_000), (1, 100_003)];
    for pattern in PATTERNS {
        for policy in [Some(&every_k), Some(&whole_rows), None] {
            // The default rule: k from 100, chunks of at least 32,768.
            let shapes = if policy.is_none() {
                &shapes[3..]
            } else {
                &shapes[..]
            };
            for &(rows, row_len) in shapes {
                let ks: Vec<usize> = [1, 8, 50, 129, 256, 1000, 1024, 1025]
                    .into_iter()
                    .filter(|&k| k <= row_len)
                    .collect();
                check_ks::<f32>(Backend::Cuda, policy, (rows, row_len), pattern, &ks);
                check_ks::<bf16>(Backend::Cuda, policy, (rows, row_len), pattern, &ks);
            }
        }
        check_ks::<i32>(Backend::Cuda, None, (2, 100_003), pattern, &[50, 1024]);
        check_ks::<f16>(Backend::Cuda, None, (2, 100_003), pattern, &[50, 1024]);
    }
    let sorter = Sorter::new().backend(Backend::Cuda).policy(whole_rows);
    for (row_len, k) in [(8192, 1000), (65_536, 50), (65_536, 1000), (100_003, 700)] {
        for select in SELECTS {
            let keys = [0, 1]
                .map(|_| large_keys_in_the_sample(row_len, k, select, 128))
                .concat();
            let halves: Vec<bf16> = keys.iter().map(|&x| bf16::from_f32(x)).collect();
            let what = format!("{} large keys in the sample, 2x{row_len} k {k}", k - 1);
            let orders = stable_orders(&keys, row_len, select);
            let ran = check_selection(&sorter, &keys, row_len, k, select, &orders, &what);
            assert_eq!(ran.strategy, Strategy::TopkRadix, "{what}");
            check_selection(&sorter, &halves, row_len, k, select, &orders, &what);
        }
    }
}

/// A policy whose radix select samples for every k it can, on chunks down to the shortest
/// the sampled select takes (8,192 keys).
fn sampling_every_k() -> Policy {
    {
        let mut p = no_spread().clone();
        p.topk.sampled_min_k = 1;
        p.topk.sampled_min_chunk = 0;
        p
    }
}

/// A policy whose spread select takes every k on any number of rows.
fn spreading_every_k() -> Policy {
    {
        let mut p = Policy::HOPPER.clone();
        p.topk.spread_min_rows = 1;
        p
    }
}

/// The default policy without the spread select, so that few long rows take the radix
/// select's passes.
fn no_spread() -> Policy {
    {
        let mut p = Policy::HOPPER.clone();
        p.topk.spread_min_len = usize::MAX;
        p
    }
}

/// The spread select (kernels/topk.cu `topk_spread_*`), the default for few rows of at least
/// 65,536 keys of 2 or 4 bytes and k up to what its candidates hold: lengths from its
/// shortest and around its gather's tiles of 8,192, k up to 1,024, every pattern (sorted keys
/// and ties overflow its candidates or leave too few, and the threshold filter takes the row);
/// then rows whose only large keys, fewer than k, lie in the sample, so that too few keys
/// reach its threshold.
fn gpu_spread_select() {
    use bitonic::half::{bf16, f16};
    gpu("gpu_spread_select");
    // Every k it takes on few rows (by default k from 100, or 64 rows).
    let every_k = spreading_every_k();
    let every_k = Some(&every_k);
    let shapes = [(1, 65_536), (2, 65_537), (3, 9 * 8192 - 1), (4, 128_256)];
    let ks = [1, 2, 8, 50, 129, 256, 1000, 1024];
    for pattern in PATTERNS {
        for &shape in &shapes {
            check_ks::<f32>(Backend::Cuda, every_k, shape, pattern, &ks);
            check_ks::<bf16>(Backend::Cuda, every_k, shape, pattern, &ks);
        }
        check_ks::<i32>(Backend::Cuda, every_k, (2, 100_003), pattern, &[1, 50, 256]);
        check_ks::<f16>(Backend::Cuda, every_k, (2, 100_003), pattern, &[1, 50, 256]);
        let long = (1, (1 << 20) + 3);
        check_ks::<u32>(
            Backend::Cuda,
            every_k,
            long,
            pattern,
            &[1, 128, 896, 897, 1024],
        );
    }
    // Rows sampled by several blocks: 256 blocks at k = 1 of 2^22 keys, 32 at k = 1,024. Their
    // bf16 keys repeat values (the specials, ~26,000 copies each in random bits; hundreds of
    // thousands of each of few distinct keys; all equal): the threshold breaks ties by index.
    for pattern in PATTERNS {
        let long = (1, 1 << 22);
        check_ks::<f32>(Backend::Cuda, every_k, long, pattern, &[1, 50, 256, 1024]);
        check_ks::<bf16>(Backend::Cuda, every_k, long, pattern, &[1, 8, 256, 1024]);
    }
    check_ks::<bf16>(
        Backend::Cuda,
        every_k,
        (1, 1 << 24),
        Pattern::Random,
        &[1, 256, 1024],
    );
    // Rows the dispatch gives the filter (longer than topk_filter_above, k past
    // topk_long_radix_max_k) take the spread select too.
    let filtered = {
        let mut p = Policy::HOPPER.clone();
        p.topk.filter_above = 1 << 20;
        p
    };
    for pattern in [Pattern::Random, Pattern::FewDistinct] {
        let long = (1, (1 << 21) + 5);
        check_ks::<f32>(Backend::Cuda, Some(&filtered), long, pattern, &[256, 1024]);
        check_ks::<bf16>(Backend::Cuda, Some(&filtered), long, pattern, &[256, 1024]);
    }
    check_ks::<f32>(
        Backend::Cuda,
        None,
        (64, 65_536),
        Pattern::Random,
        &[1, 50, 256],
    );
    let sorter = Sorter::new()
        .backend(Backend::Cuda)
        .policy(spreading_every_k());
    for (row_len, k) in [(65_536, 50), (100_003, 1000), (128_256, 256)] {
        for select in SELECTS {
            let keys = [0, 1, 2]
                .map(|_| large_keys_in_the_sample(row_len, k, select, 256))
                .concat();
            let halves: Vec<bf16> = keys.iter().map(|&x| bf16::from_f32(x)).collect();
            let what = format!(
                "{} large keys in the spread sample, 3x{row_len} k {k}",
                k - 1
            );
            let orders = stable_orders(&keys, row_len, select);
            let ran = check_selection(&sorter, &keys, row_len, k, select, &orders, &what);
            // The spread select's plan: its threshold filter, on the device, takes over.
            assert_eq!(ran.strategy, Strategy::TopkSpread, "{what}");
            check_selection(&sorter, &halves, row_len, k, select, &orders, &what);
        }
    }
}

/// A row of zeros but for k - 1 keys that `select` prefers (±1), all in a sample of `runs`
/// runs of 32 keys, run j from (row_len - 32) x j / (runs - 1) (the sampled select's 128, the
/// spread select's 256): the sample's threshold is one of them, which fewer than k keys reach.
fn large_keys_in_the_sample(row_len: usize, k: usize, select: Order, runs: usize) -> Vec<f32> {
    let runs: Vec<usize> = (0..runs).map(|j| (row_len - 32) * j / (runs - 1)).collect();
    let mut sampled: Vec<usize> = (0..32)
        .flat_map(|offset| runs.iter().map(move |&start| start + offset))
        .collect();
    sampled.sort_unstable();
    sampled.dedup();
    let far = if select == Order::Descending {
        1.0
    } else {
        -1.0
    };
    let mut row = vec![0f32; row_len];
    sampled.iter().take(k - 1).for_each(|&at| row[at] = far);
    row
}

/// Rows a warp sorts (at most [`TopkPolicy::WARP_SORT_MOST`] keys of 2 or 4 bytes): lengths around
/// a lane's 2, 8 and 32 composites and a warp's 32 lanes, k from 1 to the row, every pattern,
/// with a policy that sorts every k by warps (rows past 256 through the warp filter: its
/// groups' bests up to k = 128, its search of top bits above, and past 512 more candidates
/// than it sorts), with one that never filters, and with the default rule;
/// then more rows than the grid has warps, so that warps take several rows.
fn gpu_short_rows_by_warps() {
    gpu("gpu_short_rows_by_warps");
    let every_k = {
        let mut p = Policy::HOPPER.clone();
        p.topk.warp_sort_min_k_32 = 1;
        p.topk.warp_sort_min_k_16 = 1;
        p.topk.warp_filter_max_k = usize::MAX;
        p
    };
    let unfiltered = {
        let mut p = every_k.clone().clone();
        p.topk.warp_filter_max_k = 0;
        p
    };
    let lens = [
        1, 2, 3, 31, 32, 33, 63, 64, 65, 100, 255, 256, 257, 511, 513, 1000, 1023, 1024,
    ];
    for pattern in PATTERNS {
        for &row_len in &lens {
            let mut ks: Vec<usize> = [1, 2, 7, 8, 16, 17, 33, 50, 64, 65, 128, 129, 256, 512, 513]
                .into_iter()
                .chain([row_len / 2, row_len / 2 + 1])
                .chain([row_len - 1, row_len])
                .filter(|&k| 1 <= k && k <= row_len)
                .collect();
            ks.sort_unstable();
            ks.dedup();
            let shape = (5, row_len);
            check_ks::<f32>(Backend::Cuda, Some(&every_k), shape, pattern, &ks);
            check_ks::<bitonic::half::bf16>(Backend::Cuda, Some(&every_k), shape, pattern, &ks);
            check_ks::<f32>(Backend::Cuda, Some(&unfiltered), shape, pattern, &ks);
            check_ks::<bitonic::half::f16>(Backend::Cuda, Some(&unfiltered), shape, pattern, &ks);
            check_ks::<i32>(Backend::Cuda, None, shape, pattern, &ks);
            check_ks::<bitonic::half::f16>(Backend::Cuda, None, shape, pattern, &ks);
            check_ks::<u32>(Backend::Cuda, None, (2, row_len), pattern, &[row_len]);
        }
    }
    // Keys whose sortable word is 0 (u32 0 for the largest, u32::MAX for the smallest): the
    // search of top bits keeps its threshold at 0, which every slot reaches, and the warp sorts
    // the row.
    let sorter = Sorter::new().backend(Backend::Cuda);
    for key in [0u32, u32::MAX] {
        let keys = vec![key; 5 * 1000];
        for select in SELECTS {
            let orders = stable_orders(&keys, 1000, select);
            for k in [129, 200, 512] {
                let what = format!("{key} x 5,000 k {k} {select:?}");
                check_selection(&sorter, &keys, 1000, k, select, &orders, &what);
            }
        }
    }
    // An H200's grid holds 132 x 32 blocks of 8 warps: these rows go round more than once.
    let many = 40_000;
    check_ks::<u32>(
        Backend::Cuda,
        Some(&every_k),
        (many, 33),
        Pattern::Random,
        &[1, 9, 33],
    );
    check_ks::<f32>(
        Backend::Cuda,
        Some(&every_k),
        (many, 200),
        Pattern::Random,
        &[3, 200],
    );
    check_ks::<bitonic::half::bf16>(
        Backend::Cuda,
        None,
        (many, 1000),
        Pattern::FewDistinct,
        &[64, 1000],
    );
}

/// Keys whose top 16 bits (f32, u32) or 24 bits (f64) are all the same, where a threshold over
/// groups' bests (k > 128) would stop at those bits if its boundary bin were small: here it is
/// not, and the threshold takes the lower digits. The 7 chunks of a row merge their runs for
/// k up to 256; at k = 256 the short last chunk (1,424 keys) is radix-selected, and the merge
/// sorts its run.
fn gpu_keys_sharing_their_top_bits() {
    gpu("gpu_keys_sharing_their_top_bits");
    fn one<K: TestKey>(keys: Vec<K>, row_len: usize) {
        for select in SELECTS {
            let orders = stable_orders(&keys, row_len, select);
            for k in [1, 50, 129, 256, 300, 600, 1000] {
                let rows = keys.len() / row_len;
                let what = format!(
                    "{:?} shared top bits {rows}x{row_len} k {k} {select:?}",
                    K::DTYPE
                );
                let gpu = Sorter::new().backend(Backend::Cuda);
                check_selection(&gpu, &keys, row_len, k, select, &orders, &what);
            }
        }
    }
    let (rows, row_len) = (3, 26_000); // 7 chunks: their runs merge
    let low = make_keys::<u32>(rows * row_len, Pattern::Random, 11);
    one(
        low.iter()
            .map(|&x| 0x3f80_0000 | (x & 0xffff))
            .collect::<Vec<u32>>(),
        row_len,
    );
    one(
        low.iter()
            .map(|&x| f32::from_bits(0x3f80_0000 | (x & 0xffff)))
            .collect::<Vec<f32>>(),
        row_len,
    );
    let low = make_keys::<u64>(rows * row_len, Pattern::Random, 12);
    one(
        low.iter()
            .map(|&x| f64::from_bits(0x3ff0_0000_0000_0000 | (x >> 24)))
            .collect::<Vec<f64>>(),
        row_len,
    );
}

fn gpu_patterns_with_ties() {
    gpu("gpu_patterns_with_ties");
    patterns_on(Backend::Cuda);
}

fn cpu_patterns_with_ties() {
    patterns_on(Backend::Cpu);
}

fn cpu_every_type_against_a_stable_sort() {
    // The CPU backends by name all select; the long rows are the GPU tests'.
    let shapes = &SHAPES[..14];
    check_shapes::<u32>(Backend::Cpu, shapes, Pattern::Random);
    check_shapes::<i32>(Backend::CpuNetwork, shapes, Pattern::Random);
    check_shapes::<u64>(Backend::CpuNetworkSerial, shapes, Pattern::Random);
    check_shapes::<i64>(Backend::Cpu, shapes, Pattern::Random);
    check_shapes::<f32>(Backend::Cpu, shapes, Pattern::Random);
    check_shapes::<f64>(Backend::Cpu, shapes, Pattern::Random);
}

/// Device buffers in and out: the filter and (k past it) the sort; the keys stay as they
/// were.
fn gpu_device_buffers() {
    let gpu = gpu("gpu_device_buffers");
    let stream = gpu.stream();
    fn one<K: TestKey>(gpu: &bitonic::Gpu, rows: usize, row_len: usize, k: usize) {
        let stream = gpu.stream();
        let keys = make_keys::<K>(rows * row_len, Pattern::FewDistinct, k as u64);
        let keys_d = stream.clone_htod(&keys).unwrap();
        for select in SELECTS {
            let what = format!("device {:?} {rows}x{row_len} k {k} {select:?}", K::DTYPE);
            let mut values_d = stream.clone_htod(&vec![keys[0]; rows * k]).unwrap();
            let mut indices_d = stream.alloc_zeros::<u32>(rows * k).unwrap();
            let ran = Sorter::new()
                .gpu(gpu)
                .clone()
                .order(select)
                .topk_rows_device(&keys_d, &mut values_d, &mut indices_d, row_len, k)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let on_gpu = Sorter::new().gpu(gpu).backend(Backend::Cuda).order(select);
            let want = planned::<K>(&on_gpu, (rows, row_len), k);
            assert_eq!(ran.strategy, want, "{what}");
            let values = stream.clone_dtoh(&values_d).unwrap();
            let indices = stream.clone_dtoh(&indices_d).unwrap();
            let orders = stable_orders(&keys, row_len, select);
            check_result(&keys, row_len, k, &orders, (&values, &indices), &what);
            let after = stream.clone_dtoh(&keys_d).unwrap();
            let bits = |v: &[K]| bytemuck::cast_slice::<K, u8>(v).to_vec();
            assert_eq!(bits(&after), bits(&keys), "{what}: the keys changed");
        }
    }
    one::<f32>(gpu, 1, (1 << 20) + 3, 100);
    one::<f32>(gpu, 64, 4097, 2048);
    one::<u64>(gpu, 3, 100_003, 7);
    one::<i32>(gpu, 1, 100_003, 5000); // past the filter: the key-value merge sort
    one::<f64>(gpu, 3, 10_001, 4096); // past the filter: the pair passes
    one::<i64>(gpu, 7, 33, 33);
    // Errors on device buffers: bad k and outputs of the wrong length.
    let keys_d = stream.clone_htod(&[1u32, 2, 3, 4]).unwrap();
    let mut values_d = stream.alloc_zeros::<u32>(2).unwrap();
    let mut indices_d = stream.alloc_zeros::<u32>(2).unwrap();
    let sorter = Sorter::new().gpu(gpu);
    let largest = sorter.clone().order(Order::Descending);
    let bad_k = largest.topk_rows_device(&keys_d, &mut values_d, &mut indices_d, 2, 3);
    assert!(
        matches!(bad_k, Err(Error::BadK { k: 3, row_len: 2 })),
        "{bad_k:?}"
    );
    let short = largest.topk_rows_device(&keys_d, &mut values_d, &mut indices_d, 4, 1);
    assert!(
        matches!(short, Err(Error::TopkOutputLength { .. })),
        "{short:?}"
    );
}

/// Auto selects on the GPU from [`bitonic::plan::AUTO_GPU_MIN_LEN`] keys, on the CPU
/// below.
fn gpu_auto_backend() {
    gpu("gpu_auto_backend");
    let big = make_keys::<f32>(1 << 17, Pattern::Random, 1);
    let (mut values, mut indices) = (vec![0f32; 10], vec![0u32; 10]);
    let ran = bitonic::topk(&big, &mut values, &mut indices, 10).unwrap();
    assert_eq!(
        (ran.backend, ran.strategy),
        (Backend::Cuda, Strategy::TopkRadix)
    );
    let orders = stable_orders(&big, big.len(), Order::Descending);
    check_result(&big, big.len(), 10, &orders, (&values, &indices), "auto");
    let ran = bitonic::topk(&big[..1000], &mut values, &mut indices, 10);
    assert_eq!(ran.unwrap().strategy, Strategy::CpuTopk);
}

/// Small selections that run every top-k kernel once or twice, for compute-sanitizer
/// (bench/sanitize.sh): keys and partials of both widths, misaligned rows, several passes, the
/// radix select's thresholds of one, two, four and eight groups a thread, the largest k of the
/// filter and the take after a sort.
fn topk_for_the_sanitizer() {
    gpu("topk_for_the_sanitizer");
    let shapes_u32 = [(3, 4097), (1, 100_003), (2, 9000), (2, 9600), (2, 16_384)];
    let shapes_f64 = [(5, 31), (1, 70_001), (2, 9000)];
    for select in SELECTS {
        for (shapes, wide) in [(&shapes_u32[..], false), (&shapes_f64[..], true)] {
            for &(rows, row_len) in shapes {
                for k in [1, 50, 100, 256, 300, 600, 2048, 3000] {
                    if k > row_len {
                        continue;
                    }
                    if wide {
                        one_selection::<f64>(rows, row_len, k, select, Pattern::Random);
                    } else {
                        one_selection::<u32>(rows, row_len, k, select, Pattern::Random);
                        one_selection::<bitonic::half::bf16>(
                            rows,
                            row_len,
                            k,
                            select,
                            Pattern::Random,
                        );
                    }
                }
            }
        }
        // Ties: the merge pass sorts the first pass's radix-selected chunks itself; bf16
        // candidates tied on their key skip the index digits they have alike.
        one_selection::<u32>(3, 4097, 50, select, Pattern::AllEqual);
        one_selection::<bitonic::half::bf16>(2, 20_000, 600, select, Pattern::FewDistinct);
        // The top-k by pair passes in several passes (rows past a cluster's tile): the first
        // packs the keys, the last writes k a row; k the whole row is a sort with indices.
        one_selection::<u32>(2, 300_000, 3000, select, Pattern::Random);
        one_selection::<bitonic::half::bf16>(2, 300_000, 300_000, select, Pattern::FewDistinct);
        one_selection::<f64>(2, 70_001, 70_001, select, Pattern::Random);
        // The sampled select: its exact select by ranks, tournament and radix select, its
        // merged runs, and the filter after a sample that overflows (ties) or misses.
        let samples = Sorter::new()
            .backend(Backend::Cuda)
            .policy(sampling_every_k());
        for (rows, row_len, k) in [(2, 40_000, 8), (2, 40_000, 200), (3, 70_000, 1024)] {
            one_selection_by::<f32>(&samples, rows, row_len, k, select, Pattern::Random);
            let few = Pattern::FewDistinct;
            one_selection_by::<bitonic::half::bf16>(&samples, rows, row_len, k, select, few);
        }
        // Runs that a radix pass selects again (unsorted), and a sample that misses.
        one_selection_by::<f32>(&samples, 1, 100_000, 1000, select, Pattern::Random);
        let keys = large_keys_in_the_sample(20_000, 1000, select, 128);
        let orders = stable_orders(&keys, 20_000, select);
        let what = "large keys in the sample";
        check_selection(&samples, &keys, 20_000, 1000, select, &orders, what);
        // The spread select: ranks, tournament, radix select; ties past its candidates, and the
        // filter after a sample that misses.
        let sorter = Sorter::new()
            .backend(Backend::Cuda)
            .policy(spreading_every_k());
        for (rows, row_len, k) in [(3, 70_000, 1), (2, 70_000, 200), (2, 100_003, 1000)] {
            one_selection_by::<f32>(&sorter, rows, row_len, k, select, Pattern::Random);
            let random = Pattern::Random;
            one_selection_by::<bitonic::half::bf16>(&sorter, rows, row_len, k, select, random);
        }
        let few = Pattern::FewDistinct;
        one_selection_by::<bitonic::half::bf16>(&sorter, 2, 65_536, 50, select, few);
        let keys = large_keys_in_the_sample(65_536, 50, select, 256);
        let orders = stable_orders(&keys, 65_536, select);
        let what = "large keys in the spread sample";
        check_selection(&sorter, &keys, 65_536, 50, select, &orders, what);
        // Samples from several blocks a row (their lists and topk_spread_threshold).
        one_selection_by::<f32>(&sorter, 1, (1 << 20) + 3, 897, select, Pattern::Random);
        let few = Pattern::FewDistinct;
        one_selection_by::<bitonic::half::bf16>(&sorter, 2, 1 << 21, 300, select, few);
        // Ties past the candidates: the better ones sorted, then the ties in order (f32 keys
        // all equal; bf16 keys all equal, whose ties fill the first slice of 8,192 indices).
        one_selection_by::<f32>(&sorter, 1, 1 << 20, 50, select, Pattern::AllEqual);
        one_selection_by::<bitonic::half::bf16>(&sorter, 1, 1 << 20, 50, select, Pattern::AllEqual);
        // The warp sort at each of its widths (rows of up to 64, 256 and 1,024 keys), and the
        // warp filter with 1 to 8 groups a lane, sorting 2, 8 and 16 candidates a lane, with
        // the search of top bits (k past 128), and sorting the whole row after a threshold
        // that too many reach (k = 700; f32 keys all equal at k = 256).
        for (rows, row_len, k) in [(9, 33, 5), (9, 200, 101), (17, 1000, 1000)]
            .into_iter()
            .chain([(9, 1000, 1), (9, 1000, 20), (9, 1000, 50), (9, 300, 128)])
            .chain([(9, 1000, 129), (9, 1000, 256), (9, 1000, 500)])
        {
            one_selection::<f32>(rows, row_len, k, select, Pattern::Random);
            one_selection::<bitonic::half::bf16>(rows, row_len, k, select, Pattern::FewDistinct);
        }
        one_selection::<f32>(9, 1000, 256, select, Pattern::AllEqual);
        let filters = Sorter::new().backend(Backend::Cuda).policy({
            let mut p = Policy::HOPPER.clone();
            p.topk.warp_filter_max_k = usize::MAX;
            p
        });
        one_selection_by::<f32>(&filters, 9, 1000, 700, select, Pattern::Random);
        // Segments (one a row of five chunks here) with every fallback: sorted keys overflow
        // the candidates, ties crowd the thresholds.
        let streams = Sorter::new()
            .backend(Backend::Cuda)
            .policy(streaming_policy(64));
        for pattern in [Pattern::Random, Pattern::Sorted, Pattern::FewDistinct] {
            for k in [50, 600] {
                one_selection_by::<bitonic::half::bf16>(&streams, 2, 40_000, k, select, pattern);
                one_selection_by::<f64>(&streams, 2, 40_000, k, select, pattern);
            }
        }
    }
}

fn one_selection<K: TestKey>(
    rows: usize,
    row_len: usize,
    k: usize,
    select: Order,
    pattern: Pattern,
) {
    let gpu = Sorter::new().backend(Backend::Cuda);
    one_selection_by::<K>(&gpu, rows, row_len, k, select, pattern);
}

/// [`one_selection`] by `sorter`.
fn one_selection_by<K: TestKey>(
    sorter: &Sorter,
    rows: usize,
    row_len: usize,
    k: usize,
    select: Order,
    pattern: Pattern,
) {
    let keys = make_keys::<K>(rows * row_len, pattern, 17);
    let what = format!(
        "{:?} {pattern:?} {rows}x{row_len} k {k} {select:?}",
        K::DTYPE
    );
    let orders = stable_orders(&keys, row_len, select);
    check_selection(sorter, &keys, row_len, k, select, &orders, &what);
}

/// `sorter`'s top-k of every row of `keys` against their stable `orders`; what ran.
fn check_selection<K: TestKey>(
    sorter: &Sorter,
    keys: &[K],
    row_len: usize,
    k: usize,
    select: Order,
    orders: &[Vec<u32>],
    what: &str,
) -> Plan {
    let rows = keys.len() / row_len;
    let (mut values, mut indices) = (vec![keys[0]; rows * k], vec![u32::MAX; rows * k]);
    let ran = sorter
        .clone()
        .order(select)
        .topk_rows(keys, &mut values, &mut indices, row_len, k)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    check_result(keys, row_len, k, orders, (&values, &indices), what);
    ran
}

/// k past the row, rows of no keys and outputs of the wrong length are errors that say so, on
/// every backend, before any work (no GPU needed); k = 0 and no rows select nothing, as
/// `torch.topk(x, 0)` does.
fn bad_k_and_outputs_are_errors() {
    let keys = [3u32, 1, 4, 1, 5, 9];
    for backend in [Backend::Auto, Backend::Cpu, Backend::Cuda] {
        let s = Sorter::new().backend(backend);
        let (mut v, mut i) = (vec![0u32; 6], vec![0u32; 6]);
        let zero = s
            .clone()
            .order(Order::Descending)
            .topk(&keys, &mut v[..0], &mut i[..0], 0);
        match zero {
            Err(Error::NoGpu(_)) => assert_eq!(backend, Backend::Cuda, "no GPU: {zero:?}"),
            other => assert!(other.is_ok(), "k = 0 selects nothing: {other:?}"),
        }
        let past = s
            .clone()
            .order(Order::Ascending)
            .topk_rows(&keys, &mut v, &mut i, 3, 4);
        assert!(
            matches!(past, Err(Error::BadK { k: 4, row_len: 3 })),
            "{past:?}"
        );
        let message = past.unwrap_err().to_string();
        assert!(
            message.contains("k must be from 0 to the row length"),
            "{message}"
        );
        let empty = s.clone().order(Order::Descending).topk(
            &[] as &[u32],
            &mut [],
            &mut [] as &mut [u32],
            1,
        );
        assert!(
            matches!(empty, Err(Error::BadK { k: 1, row_len: 0 })),
            "{empty:?}"
        );
        let rows =
            s.clone()
                .order(Order::Descending)
                .topk_rows(&keys, &mut v[..1], &mut i[..1], 4, 1);
        assert!(matches!(rows, Err(Error::BadRows { .. })), "{rows:?}");
        let short =
            s.clone()
                .order(Order::Descending)
                .topk_rows(&keys, &mut v[..3], &mut i[..4], 3, 2);
        assert!(
            matches!(
                short,
                Err(Error::TopkOutputLength {
                    what: "values",
                    len: 3,
                    rows: 2,
                    k: 2
                })
            ),
            "{short:?}"
        );
        let long =
            s.clone()
                .order(Order::Descending)
                .topk_rows(&keys, &mut v[..4], &mut i[..5], 3, 2);
        assert!(
            matches!(
                long,
                Err(Error::TopkOutputLength {
                    what: "indices",
                    ..
                })
            ),
            "{long:?}"
        );
        assert_eq!(keys, [3, 1, 4, 1, 5, 9], "the keys stay as they are");
        // No keys in rows of 5: nothing to select, on any backend that runs.
        let none = s.clone().order(Order::Descending).topk_rows(
            &[] as &[u32],
            &mut [],
            &mut [] as &mut [u32],
            5,
            2,
        );
        if backend != Backend::Cuda || bitonic::Gpu::get().is_ok() {
            assert!(none.is_ok(), "{backend:?}: {none:?}");
        }
    }
    // Without a GPU, the GPU asked for is an error that says why.
    if bitonic::Gpu::get().is_err() {
        let (mut v, mut i) = (vec![0u32; 2], vec![0u32; 2]);
        let err = Sorter::new()
            .backend(Backend::Cuda)
            .clone()
            .order(Order::Descending)
            .topk(&keys, &mut v, &mut i, 2)
            .unwrap_err();
        assert!(err.to_string().contains("no GPU can be used"), "{err}");
    }
    // A seed version is for sorts.
    let (mut v, mut i) = (vec![0u32; 2], vec![0u32; 2]);
    let pinned = Sorter::new()
        .backend(Backend::Cuda)
        .version(bitonic::Version::V2)
        .clone()
        .order(Order::Descending)
        .topk(&keys, &mut v, &mut i, 2);
    assert!(pinned.is_err(), "{pinned:?}");
}
