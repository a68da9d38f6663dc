//! Key-value sorts, argsort, rows and segments against a stable std sort of (key, index)
//! pairs, for every key type, both orders, both CPU backends and the GPU (whose tests are
//! ignored without one, and fail under BITONIC_REQUIRE_GPU=1).

mod common;

use bitonic::key::cmp_keys;
use bitonic::{Backend, Order, Policy, Sorter};
use common::harness::{self, tests, Needs};
use common::{assert_same_bits, gpu, make_keys, Pattern, TestKey, PATTERNS};
use proptest::prelude::*;

fn main() {
    harness::run(tests![
        Needs::Nothing =>
            key_value_every_type_and_pattern, rows_of_many_lengths,
            segments_of_different_lengths, bad_shapes_are_errors_not_panics,
            argsort_is_stable_on_any_floats, argsort_is_stable_with_many_ties;
        Needs::Gpu =>
            gpu_key_value_every_type_and_pattern, gpu_key_value_with_groups_of_equal_keys,
            gpu_key_value_multiway_levels, gpu_radix_tiles_and_rows,
            gpu_rows_of_many_lengths, gpu_pair_passes_in_place, pair_passes_for_the_sanitizer,
            gpu_segments_of_different_lengths, gpu_sort_pairs_device;
    ]);
}

const CPU: &[Backend] = &[Backend::CpuNetworkSerial, Backend::CpuNetwork, Backend::Cpu];
const GPU: &[Backend] = &[Backend::Cuda];
const ORDERS: [Order; 2] = [Order::Ascending, Order::Descending];

/// The stable reference: indices ordered by key (total order), ties by index.
fn reference_permutation<K: TestKey>(keys: &[K], order: Order) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by(|&a, &b| match order {
        Order::Ascending => cmp_keys(&keys[a], &keys[b]),
        Order::Descending => cmp_keys(&keys[b], &keys[a]),
    }); // std's sort_by is stable
    idx
}

fn check_kv<K: TestKey>(keys: &[K], backends: &[Backend]) {
    check_kv_under(keys, backends, None);
}

/// [`check_kv`] with the GPU's sorts under `policy` (its own when `None`).
fn check_kv_under<K: TestKey>(keys: &[K], backends: &[Backend], policy: Option<&Policy>) {
    for &backend in backends {
        for order in ORDERS {
            let mut sorter = Sorter::new().backend(backend).order(order);
            if let Some(policy) = policy {
                sorter = sorter.policy(policy.clone());
            }
            let want = reference_permutation(keys, order);
            let what = format!(
                "{:?} {backend:?} {order:?} len {} {policy:?}",
                K::DTYPE,
                keys.len()
            );

            let mut perm = vec![0u32; keys.len()];
            sorter.argsort(keys, &mut perm).unwrap();
            assert_eq!(
                perm.iter().map(|&i| i as usize).collect::<Vec<_>>(),
                want,
                "argsort {what}"
            );
            let mut perm64 = vec![0usize; keys.len()];
            sorter.argsort(keys, &mut perm64).unwrap();
            assert_eq!(perm64, want, "argsort into usize {what}");

            let mut sorted_keys = keys.to_vec();
            let mut values: Vec<u64> = (0..keys.len() as u64).map(|i| i * 7 + 1).collect();
            sorter.sort_pairs(&mut sorted_keys, &mut values).unwrap();
            let want_keys: Vec<K> = want.iter().map(|&i| keys[i]).collect();
            assert_same_bits(
                &sorted_keys,
                &want_keys,
                &format!("sort_by_key keys {what}"),
            );
            let want_values: Vec<u64> = want.iter().map(|&i| i as u64 * 7 + 1).collect();
            assert_eq!(values, want_values, "sort_by_key values {what}");
        }
    }
}

fn check_rows<K: TestKey>(rows: usize, row_len: usize, backends: &[Backend]) {
    check_rows_under::<K>(rows, row_len, backends, None);
}

/// [`check_rows`] with the GPU's sorts under `policy` (its own when `None`).
fn check_rows_under<K: TestKey>(
    rows: usize,
    row_len: usize,
    backends: &[Backend],
    policy: Option<&Policy>,
) {
    check_rows_of::<K>((rows, row_len), Pattern::Random, backends, policy);
}

/// [`check_rows_under`] of keys in `pattern`.
fn check_rows_of<K: TestKey>(
    (rows, row_len): (usize, usize),
    pattern: Pattern,
    backends: &[Backend],
    policy: Option<&Policy>,
) {
    let data = make_keys::<K>(rows * row_len, pattern, (rows * 31 + row_len) as u64);
    let len = row_len.max(1);
    for &backend in backends {
        for order in ORDERS {
            let mut sorter = Sorter::new().backend(backend).order(order);
            if let Some(policy) = policy {
                sorter = sorter.policy(policy.clone());
            }
            let mut got = data.clone();
            sorter.sort_rows(&mut got, len).unwrap();
            let mut perm = vec![0u64; data.len()];
            sorter.argsort_rows(&data, &mut perm, len).unwrap();
            for (r, ((got_row, row), perm_row)) in got
                .chunks(len)
                .zip(data.chunks(len))
                .zip(perm.chunks(len))
                .enumerate()
            {
                let what = format!(
                    "{:?} {backend:?} row {r} of {rows}x{row_len} {order:?}",
                    K::DTYPE
                );
                assert_same_bits(got_row, &common::reference(row, order), &what);
                let want = reference_permutation(row, order);
                assert!(
                    perm_row
                        .iter()
                        .map(|&i| i as usize)
                        .eq(want.iter().copied()),
                    "argsort {what}"
                );
            }
        }
    }
}

fn check_segments<K: TestKey>(len: usize, offsets: &[usize], backends: &[Backend]) {
    let data = make_keys::<K>(len, Pattern::Random, offsets.len() as u64);
    for &backend in backends {
        for order in ORDERS {
            let mut got = data.clone();
            Sorter::new()
                .backend(backend)
                .order(order)
                .sort_segments(&mut got, offsets)
                .unwrap();
            for w in offsets.windows(2) {
                let want = common::reference(&data[w[0]..w[1]], order);
                let what = format!("{:?} {backend:?} segment {w:?} {order:?}", K::DTYPE);
                assert_same_bits(&got[w[0]..w[1]], &want, &what);
            }
        }
    }
}

/// Lengths around every tile of the GPU plans (2^14 u32, 2^13 u64 and 2^12 key-index pairs)
/// and of the merges after them (pairs of one long row sort as runs of one tile, merged level
/// by level in tiles of 2^12 or 2^11: exact multiples, one past, odd and even level counts).
const KV_LENGTHS: [usize; 16] = [
    0, 1, 2, 3, 31, 33, 1000, 1025, 4095, 4097, 8193, 16_383, 16_389, 24_576, 32_769, 70_001,
];

fn key_value_every_type_and_pattern_on(backends: &[Backend]) {
    for len in KV_LENGTHS {
        for pattern in PATTERNS {
            check_kv(&make_keys::<u32>(len, pattern, 1), backends);
            check_kv(&make_keys::<f64>(len, pattern, 2), backends);
        }
        check_kv(&make_keys::<i32>(len, Pattern::FewDistinct, 3), backends);
        check_kv(&make_keys::<u64>(len, Pattern::Random, 4), backends);
        check_kv(&make_keys::<i64>(len, Pattern::AllEqual, 5), backends);
        check_kv(&make_keys::<f32>(len, Pattern::FewDistinct, 6), backends);
    }
}

const ROW_SHAPES: [(usize, usize); 9] = [
    (1, 0),
    (5, 1),
    (7, 3),
    (64, 32),
    (100, 33),
    (9, 1023),
    (3, 4096),
    (2, 20_001),
    (5, 1 << 15),
];

fn rows_of_many_lengths_on(backends: &[Backend]) {
    for (rows, row_len) in ROW_SHAPES {
        check_rows::<u32>(rows, row_len, backends);
        check_rows::<f32>(rows, row_len, backends);
        check_rows::<i64>(rows, row_len, backends);
    }
    check_rows::<f64>(300, 256, backends);
    check_rows::<u64>(1, 1 << 16, backends);
}

const SEGMENT_OFFSETS: [usize; 11] = [0, 0, 1, 3, 100, 1124, 1124, 5000, 10_000, 50_001, 50_002];

fn segments_of_different_lengths_on(backends: &[Backend]) {
    check_segments::<f32>(50_002, &SEGMENT_OFFSETS, backends);
    check_segments::<u64>(50_002, &SEGMENT_OFFSETS, backends);
    check_segments::<i32>(0, &[0], backends);
}

fn key_value_every_type_and_pattern() {
    key_value_every_type_and_pattern_on(CPU);
}

fn rows_of_many_lengths() {
    rows_of_many_lengths_on(CPU);
}

fn segments_of_different_lengths() {
    segments_of_different_lengths_on(CPU);
}

fn gpu_key_value_every_type_and_pattern() {
    gpu("gpu_key_value_every_type_and_pattern");
    key_value_every_type_and_pattern_on(GPU);
    // Past 2^20 keys the host slices stream through the pinned staging buffers.
    check_kv(
        &make_keys::<f32>((1 << 22) + 3, Pattern::FewDistinct, 7),
        GPU,
    );
    check_kv(&make_keys::<i64>((1 << 21) + 5, Pattern::Random, 8), GPU);
}

/// Tiles (2^14 32-bit keys, 2^13 64-bit) with a few equal keys, which the GPU orders in the
/// block that places their values, and with more than it takes (256), which it sorts: random
/// keys, then in tile t a group of `GROUPS[t]` equal keys (two groups of 2 in the last tile, one
/// of them split across its end).
fn keys_with_groups_of_equal_ones<K: TestKey>(tile: usize) -> Vec<K> {
    const GROUPS: [usize; 5] = [2, 255, 256, 257, 1000];
    let mut keys = make_keys::<K>(GROUPS.len() * tile + 3, Pattern::Random, 21);
    for (t, &group) in GROUPS.iter().enumerate() {
        let at = t * tile + 100;
        let key = keys[at];
        for k in 1..group {
            keys[at + k * 7] = key; // spread through the tile, among distinct keys
        }
    }
    let last = keys.len() - 1;
    keys[last - 1] = keys[last - 40];
    keys[last] = keys[last - 3];
    keys
}

fn gpu_key_value_with_groups_of_equal_keys() {
    gpu("gpu_key_value_with_groups_of_equal_keys");
    check_kv(&keys_with_groups_of_equal_ones::<u32>(1 << 14), GPU);
    check_kv(&keys_with_groups_of_equal_ones::<i64>(1 << 13), GPU);
}

/// Key-value merges of each number of ways (the levels merge tagged words, 8 or 16 bytes: the
/// policy's `wide_merge_ways`), with two-way tails, short last groups and equal keys across
/// runs: argsorts (u32 values) and pairs (u64 values) of 32- and 64-bit keys.
fn gpu_key_value_multiway_levels() {
    gpu("gpu_key_value_multiway_levels");
    for ways in [2, 4, 8, 16, 32] {
        let policy = {
            let mut p = Policy::HOPPER.clone();
            p.merge.wide_ways = ways;
            p.radix.from_row_len = usize::MAX; // argsorts through the key-value merge too
            p
        };
        for (k, tile) in [(0, 1 << 14), (1, 1 << 13)] {
            for (round, len) in [tile + 1, 3 * tile + 5, 20 * tile - 1, 64 * tile + 12_345]
                .into_iter()
                .enumerate()
            {
                for pattern in [Pattern::Random, Pattern::FewDistinct, Pattern::AllEqual] {
                    let seed = 40 + round as u64;
                    if k == 0 {
                        check_kv_under(&make_keys::<f32>(len, pattern, seed), GPU, Some(&policy));
                    } else {
                        check_kv_under(&make_keys::<i64>(len, pattern, seed), GPU, Some(&policy));
                    }
                }
            }
        }
    }
}

/// The radix sorts with indices at their boundaries, every row length taking them (a policy
/// from rows of one key): one block a row around its warps' rounds and its largest rows, and the
/// passes over tiles (forced on short rows by a policy of small tiles and no one-block rows)
/// with partial tiles and many tiles a row; every pattern, every key width.
fn gpu_radix_tiles_and_rows() {
    gpu("gpu_radix_tiles_and_rows");
    let mut one_block = Policy::HOPPER.clone();
    one_block.radix.from_row_len = 0;
    let mut passes = one_block.clone();
    passes.radix.one_block_most = 0;
    passes.radix.tile = 256;
    for radix in [&one_block, &passes] {
        let policy = Some(radix);
        for (rows, row_len) in [
            (3, 1),
            (5, 2),
            (7, 33),
            (3, 255),
            (4, 256),
            (3, 257),
            (2, 4095),
        ] {
            check_rows_under::<f32>(rows, row_len, GPU, policy);
            check_rows_under::<bitonic::half::bf16>(rows, row_len, GPU, policy);
            check_rows_under::<i64>(rows, row_len, GPU, policy);
        }
        check_rows_under::<u32>(2, 4097, GPU, policy);
        check_rows_under::<f32>(2, 1 << 14, GPU, policy);
        check_rows_under::<f32>(2, (1 << 14) + 1, GPU, policy);
        check_rows_under::<f64>(2, 8192, GPU, policy);
        // The top-k by sorting, k below the row: the last store's rows of k, every key bit for
        // bit (NaN payloads and -0.0 too: total order, whose map ties none).
        for (rows, row_len, k) in [(3, 300, 200), (2, 5000, 4999), (2, 20_001, 15_000)] {
            for pattern in PATTERNS {
                check_topk_by_sorting::<f32>(rows, row_len, k, pattern, radix);
                check_topk_by_sorting::<bitonic::half::bf16>(rows, row_len, k, pattern, radix);
            }
        }
        // Key-value sorts of 4-byte values, which ride the passes in place of indices.
        for (rows, row_len) in [(3, 2), (3, 257), (2, 4097), (1, 20_001)] {
            for pattern in PATTERNS {
                check_u32_values_under::<f32>(rows, row_len, pattern, radix);
                check_u32_values_under::<bitonic::half::bf16>(rows, row_len, pattern, radix);
                check_u32_values_under::<i64>(rows, row_len, pattern, radix);
            }
        }
        for len in [1000, 4096 * 3 + 17] {
            for pattern in PATTERNS {
                check_kv_under(&make_keys::<f32>(len, pattern, 9), GPU, policy);
                check_kv_under(
                    &make_keys::<bitonic::half::f16>(len, pattern, 10),
                    GPU,
                    policy,
                );
                check_kv_under(&make_keys::<f64>(len, pattern, 11), GPU, policy);
            }
        }
    }
}

/// Each row's key-value sort with u32 values on the GPU under `policy`, against the CPU's, keys
/// bit for bit and values, both orders.
fn check_u32_values_under<K: TestKey>(
    rows: usize,
    row_len: usize,
    pattern: Pattern,
    policy: &Policy,
) {
    let keys = make_keys::<K>(rows * row_len, pattern, (row_len * 3 + rows) as u64);
    let values: Vec<u32> = (0..keys.len() as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    for order in ORDERS {
        let mut want = (keys.clone(), values.clone());
        let cpu = Sorter::new().backend(Backend::Cpu).order(order);
        cpu.sort_pairs_rows(&mut want.0, &mut want.1, row_len)
            .unwrap();
        let mut got = (keys.clone(), values.clone());
        let gpu = Sorter::new()
            .backend(Backend::Cuda)
            .order(order)
            .policy(policy.clone());
        let ran = gpu
            .sort_pairs_rows(&mut got.0, &mut got.1, row_len)
            .unwrap();
        let what = format!(
            "key-value {rows}x{row_len} {:?} {pattern:?} {order:?}",
            K::DTYPE
        );
        assert_eq!(ran.strategy, bitonic::Strategy::RadixSort, "{what}");
        assert_same_bits(&got.0, &want.0, &what);
        assert_eq!(got.1, want.1, "values of the {what}");
    }
}

/// Each row's first k keys and their indices on the GPU under `policy`, against the CPU's, bit
/// for bit, both orders.
fn check_topk_by_sorting<K: TestKey>(
    rows: usize,
    row_len: usize,
    k: usize,
    pattern: Pattern,
    policy: &Policy,
) {
    let data = make_keys::<K>(rows * row_len, pattern, (row_len + k) as u64);
    for order in ORDERS {
        let mut want = (vec![data[0]; rows * k], vec![0u64; rows * k]);
        let cpu = Sorter::new().backend(Backend::Cpu).order(order);
        cpu.topk_rows(&data, &mut want.0, &mut want.1, row_len, k)
            .unwrap();
        let mut got = (vec![data[0]; rows * k], vec![0u64; rows * k]);
        let gpu = Sorter::new()
            .backend(Backend::Cuda)
            .order(order)
            .policy(policy.clone());
        gpu.topk_rows(&data, &mut got.0, &mut got.1, row_len, k)
            .unwrap();
        let what = format!(
            "top-{k} of {rows}x{row_len} {:?} {pattern:?} {order:?}",
            K::DTYPE
        );
        assert_same_bits(&got.0, &want.0, &what);
        assert_eq!(got.1, want.1, "indices of the {what}");
    }
}

fn gpu_rows_of_many_lengths() {
    gpu("gpu_rows_of_many_lengths");
    rows_of_many_lengths_on(GPU);
    check_rows::<u32>(16, 1 << 16, GPU);
    check_rows::<f64>(3, 100_003, GPU);
}

/// The argsort of rows in the pair passes, in place (no radix sort): one pass a row (a tile, or
/// a cluster's tiles) and several, keys of 2, 4 and 8 bytes, every pattern, both orders.
fn gpu_pair_passes_in_place() {
    let shapes = [
        (5, 1),
        (7, 3),
        (100, 33),
        (9, 1023),
        (3, 4096),
        (2, 20_001),
        (1, 1 << 18),
    ];
    pair_passes_in_place("gpu_pair_passes_in_place", &shapes, &PATTERNS);
}

/// [`gpu_pair_passes_in_place`] small enough for compute-sanitizer: one pass, a cluster's pass
/// and several passes.
fn pair_passes_for_the_sanitizer() {
    let shapes = [(7, 3), (9, 1023), (2, 20_001), (1, 1 << 18)];
    let patterns = [Pattern::Random, Pattern::FewDistinct];
    pair_passes_in_place("pair_passes_for_the_sanitizer", &shapes, &patterns);
}

fn pair_passes_in_place(test: &str, shapes: &[(usize, usize)], patterns: &[Pattern]) {
    let gpu = gpu(test);
    let mut pairs = Policy::HOPPER.clone();
    pairs.radix.from_row_len = usize::MAX;
    let policy = Some(&pairs);
    for &shape in shapes {
        for &pattern in patterns {
            check_rows_of::<f32>(shape, pattern, GPU, policy);
            check_rows_of::<bitonic::half::bf16>(shape, pattern, GPU, policy);
            check_rows_of::<i64>(shape, pattern, GPU, policy);
            // The keys written back in place, in numeric order: canonical where it ties them.
            check_keys_in_place::<f32, u32>(gpu, shape, pattern, &pairs);
            check_keys_in_place::<f32, i64>(gpu, shape, pattern, &pairs);
            check_keys_in_place::<bitonic::half::f16, u32>(gpu, shape, pattern, &pairs);
            check_keys_in_place::<bitonic::half::bf16, u32>(gpu, shape, pattern, &pairs);
            check_keys_in_place::<f64, u64>(gpu, shape, pattern, &pairs);
        }
        check_rows_of::<bitonic::half::f16>(shape, Pattern::FewDistinct, GPU, policy);
        check_rows_of::<f64>(shape, Pattern::Random, GPU, policy);
    }
}

/// The keys and indices `argsort_rows_device` leaves in place under `policy`, in numeric float
/// order, both directions: each key the canonical form of the input key its index names (rows
/// of one key are left as they are), the indices the stable permutation.
fn check_keys_in_place<K: TestKey, I>(
    gpu: &bitonic::Gpu,
    (rows, row_len): (usize, usize),
    pattern: Pattern,
    policy: &Policy,
) where
    I: bitonic::SortIndex + Into<i128> + PartialEq + std::fmt::Debug,
{
    let stream = gpu.stream();
    let keys = make_keys::<K>(rows * row_len, pattern, row_len as u64);
    for order in ORDERS {
        let numeric = bitonic::FloatOrder::Numeric;
        let sorter = Sorter::new().gpu(gpu).order(order).float_order(numeric);
        let sorter = sorter.policy(policy.clone());
        let mut device = stream.clone_htod(&keys).unwrap();
        let zeros = vec![I::from_usize(0); keys.len()];
        let mut indices = stream.clone_htod(&zeros).unwrap();
        sorter
            .argsort_rows_device(&mut device, &mut indices, row_len)
            .unwrap();
        let (got, got_indices) = (
            stream.clone_dtoh(&device).unwrap(),
            stream.clone_dtoh(&indices).unwrap(),
        );
        let mut want_indices = vec![I::from_usize(0); keys.len()];
        let cpu = Sorter::new().backend(Backend::Cpu).order(order);
        cpu.float_order(numeric)
            .argsort_rows(&keys, &mut want_indices, row_len)
            .unwrap();
        let what = format!("{:?} {rows}x{row_len} {pattern:?} {order:?}", K::DTYPE);
        assert_eq!(got_indices, want_indices, "indices in place {what}");
        let want: Vec<K> = (want_indices.iter().enumerate())
            .map(|(i, &p)| keys[i - i % row_len + p.into() as usize])
            .map(|key| if row_len == 1 { key } else { key.canonical() })
            .collect();
        assert_same_bits(&got, &want, &format!("keys in place {what}"));
    }
}

fn gpu_segments_of_different_lengths() {
    gpu("gpu_segments_of_different_lengths");
    segments_of_different_lengths_on(GPU);
}

/// Device-resident key-value sort: the values move on the GPU.
fn gpu_sort_pairs_device() {
    let gpu = gpu("gpu_sort_pairs_device");
    for (rows, row_len) in [(1, 1 << 20), (1, 1_000_003), (300, 1000), (4, 65_536)] {
        let n = rows * row_len;
        let keys = make_keys::<u32>(n, Pattern::FewDistinct, 11);
        let wide = make_keys::<f64>(n, Pattern::Random, 12);
        for order in ORDERS {
            let mut keys_d = gpu.stream().clone_htod(&keys).unwrap();
            let values: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(3)).collect();
            let mut values_d = gpu.stream().clone_htod(&values).unwrap();
            let sorter = Sorter::new().gpu(gpu).order(order);
            sorter
                .sort_pairs_rows_device(&mut keys_d, &mut values_d, row_len)
                .unwrap();
            let got_keys = gpu.stream().clone_dtoh(&keys_d).unwrap();
            let got_values = gpu.stream().clone_dtoh(&values_d).unwrap();
            let mut wide_d = gpu.stream().clone_htod(&wide).unwrap();
            let mut ids_d = gpu
                .stream()
                .clone_htod(&(0..n as u64).collect::<Vec<_>>())
                .unwrap();
            sorter
                .sort_pairs_rows_device(&mut wide_d, &mut ids_d, row_len)
                .unwrap();
            let got_wide = gpu.stream().clone_dtoh(&wide_d).unwrap();
            let got_ids = gpu.stream().clone_dtoh(&ids_d).unwrap();
            for r in 0..rows {
                let row = r * row_len..(r + 1) * row_len;
                let what = format!("{rows}x{row_len} {order:?} row {r}");
                let want = reference_permutation(&keys[row.clone()], order);
                let want_keys: Vec<u32> = want.iter().map(|&i| keys[row.start + i]).collect();
                assert_eq!(&got_keys[row.clone()], &want_keys[..], "keys {what}");
                assert!(
                    got_values[row.clone()].iter().eq(want
                        .iter()
                        .map(|&i| ((row.start + i) as u32).wrapping_mul(3))
                        .collect::<Vec<_>>()
                        .iter()),
                    "values {what}"
                );
                let want = reference_permutation(&wide[row.clone()], order);
                let want_wide: Vec<f64> = want.iter().map(|&i| wide[row.start + i]).collect();
                assert_same_bits(
                    &got_wide[row.clone()],
                    &want_wide,
                    &format!("f64 keys {what}"),
                );
                assert!(
                    got_ids[row.clone()]
                        .iter()
                        .map(|&i| i as usize)
                        .eq(want.iter().map(|&i| row.start + i)),
                    "u64 values {what}"
                );
            }
        }
    }
}

fn bad_shapes_are_errors_not_panics() {
    let s = Sorter::new();
    let mut v = vec![1u32, 2, 3];
    assert!(s
        .sort_rows(&mut v, 2)
        .unwrap_err()
        .to_string()
        .contains("do not split into rows of 2"));
    assert!(s.sort_rows(&mut v, 0).is_err());
    for bad in [&[1, 3][..], &[0, 2][..], &[0, 2, 1, 3][..], &[][..]] {
        assert!(
            s.sort_segments(&mut v, bad)
                .unwrap_err()
                .to_string()
                .contains("segment offsets"),
            "{bad:?}"
        );
    }
    let mut values = vec![0u32; 2];
    assert!(s
        .sort_pairs(&mut v, &mut values)
        .unwrap_err()
        .to_string()
        .contains("3 keys but 2 values"));
    assert_eq!(v, [1, 2, 3], "a refused sort leaves the data alone");
    let mut indices = vec![0u32; 3];
    assert!(s.argsort(&v, &mut indices[..2]).is_err(), "one index a key");
    if bitonic::Gpu::get().is_err() {
        assert!(Sorter::new()
            .backend(Backend::Cuda)
            .argsort(&v, &mut indices)
            .is_err());
    }
}

proptest! {
    // No regression files: proptest finds no lib.rs or main.rs above a test file to put them
    // beside (it said so on stderr, which libtest-mimic does not capture).
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    fn argsort_is_stable_on_any_floats(bits in prop::collection::vec(any::<u32>(), 0..3000)) {
        check_kv(&bits.into_iter().map(f32::from_bits).collect::<Vec<_>>(), CPU);
    }

    fn argsort_is_stable_with_many_ties(keys in prop::collection::vec(0i64..5, 0..3000)) {
        check_kv(&keys, CPU);
    }
}
