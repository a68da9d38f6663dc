//! f16 and bf16 keys against a stable sort by their own `total_cmp`: sorts in both orders
//! (every GPU version), rows, segments, argsorts, key-value sorts and top-k, on the CPU
//! backends and the GPU (whose tests are ignored without one and fail under
//! BITONIC_REQUIRE_GPU=1), host slices and device buffers. The keys mix random bit patterns
//! (subnormals, NaNs of both signs with payloads) with ±0, ±inf and the extremes.

mod common;

use bitonic::half::{bf16, f16};
use bitonic::{Backend, Order, SortIndex, Sorter, Version};
use common::harness::{self, tests, Needs};
use common::PATTERNS;
use common::{assert_same_bits, gpu, lengths_around_powers, make_keys, Pattern, TestKey};
use std::cmp::Ordering;

fn main() {
    harness::run(tests![
        Needs::Nothing =>
            cpu_sorts, cpu_rows_argsorts_pairs_and_topk;
        Needs::Gpu =>
            gpu_f16_every_version, gpu_bf16_every_version, gpu_rows_argsorts_and_pairs,
            gpu_topk, gpu_device_buffers;
    ]);
}

const CPU: &[Backend] = &[
    Backend::CpuNetworkSerial,
    Backend::CpuNetwork,
    Backend::Cpu,
    Backend::Auto,
];
const GPU: &[Backend] = &[Backend::Cuda];
const ORDERS: [Order; 2] = [Order::Ascending, Order::Descending];

/// A 16-bit float key and its own total order.
trait Half: TestKey {
    fn total(&self, other: &Self) -> Ordering;
}

impl Half for f16 {
    fn total(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl Half for bf16 {
    fn total(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

/// The stable sorting permutation: positions by `total_cmp` (reversed for descending), ties
/// by position.
fn stable_permutation<K: Half>(keys: &[K], order: Order) -> Vec<usize> {
    let mut positions: Vec<usize> = (0..keys.len()).collect();
    positions.sort_by(|&a, &b| match order {
        Order::Ascending => keys[a].total(&keys[b]),
        Order::Descending => keys[b].total(&keys[a]),
    }); // std's sort_by is stable
    positions
}

/// [`stable_permutation`] in each order, ascending first.
fn both_permutations<K: Half>(keys: &[K]) -> [Vec<usize>; 2] {
    ORDERS.map(|order| stable_permutation(keys, order))
}

fn of_order(order: Order) -> usize {
    (order == Order::Descending) as usize
}

fn gather<T: Copy>(items: &[T], positions: &[usize]) -> Vec<T> {
    positions.iter().map(|&i| items[i]).collect()
}

/// Sorts `keys` in both orders on each backend (with `version`, when given) and compares bit
/// for bit with the stable sort by `total_cmp`.
fn check_sort<K: Half>(keys: &[K], backends: &[Backend], version: Option<Version>, what: &str) {
    for &backend in backends {
        for order in ORDERS {
            let mut sorter = Sorter::new().backend(backend).order(order);
            if let Some(version) = version {
                sorter = sorter.version(version);
            }
            let mut got = keys.to_vec();
            sorter.sort(&mut got).unwrap();
            let want = gather(keys, &stable_permutation(keys, order));
            let what = format!("{what}: {:?} {backend:?} {version:?} {order:?}", K::DTYPE);
            assert_same_bits(&got, &want, &what);
        }
    }
}

fn cpu_sorts() {
    for len in lengths_around_powers(15) {
        for pattern in PATTERNS {
            let what = format!("{pattern:?} len {len}");
            check_sort(&make_keys::<f16>(len, pattern, 1), CPU, None, &what);
            check_sort(&make_keys::<bf16>(len, pattern, 2), CPU, None, &what);
        }
    }
}

/// Argsorts (into u32 and usize), key-value sorts (u32 and u64 values) and top-k of one array.
fn check_argsorts_pairs_and_topk<K: Half>(keys: &[K], backends: &[Backend], ks: &[usize]) {
    let n = keys.len();
    let permutations = both_permutations(keys);
    for &backend in backends {
        for order in ORDERS {
            let sorter = Sorter::new().backend(backend).order(order);
            let want = &permutations[of_order(order)];
            let what = format!("{:?} {backend:?} {order:?} len {n}", K::DTYPE);
            let mut narrow = vec![0u32; n];
            sorter.argsort(keys, &mut narrow).unwrap();
            assert!(
                narrow.iter().map(|&i| i as usize).eq(want.iter().copied()),
                "argsort {what}"
            );
            let mut wide = vec![0usize; n];
            sorter.argsort(keys, &mut wide).unwrap();
            assert_eq!(&wide, want, "argsort into usize {what}");

            check_pairs::<K, u32>(&sorter, keys, want, &what);
            check_pairs::<K, u64>(&sorter, keys, want, &what);
        }
        for &k in ks.iter().filter(|&&k| k >= 1 && k <= n) {
            for select in [Order::Descending, Order::Ascending] {
                let want = &permutations[of_order(select)][..k];
                let (mut values, mut indices) = (vec![K::from_random(0); k], vec![0u32; k]);
                let sorter = Sorter::new().backend(backend);
                sorter
                    .clone()
                    .order(select)
                    .topk(keys, &mut values, &mut indices, k)
                    .unwrap();
                let what = format!("top {k} {select:?} of {n} {:?} on {backend:?}", K::DTYPE);
                assert!(
                    indices.iter().map(|&i| i as usize).eq(want.iter().copied()),
                    "{what}"
                );
                assert_same_bits(&values, &gather(keys, want), &what);
            }
        }
    }
}

/// A key-value sort of `keys` whose values `V` are their positions, against the stable
/// permutation `want`.
fn check_pairs<K: Half, V: SortIndex + Into<u64>>(
    sorter: &Sorter,
    keys: &[K],
    want: &[usize],
    what: &str,
) {
    let mut sorted = keys.to_vec();
    let mut values: Vec<V> = (0..keys.len()).map(V::from_usize).collect();
    sorter.sort_pairs(&mut sorted, &mut values).unwrap();
    assert_same_bits(&sorted, &gather(keys, want), &format!("pair keys {what}"));
    let values = values.into_iter().map(|v| v.into() as usize);
    let bytes = std::mem::size_of::<V>();
    assert!(
        values.eq(want.iter().copied()),
        "{bytes}-byte values {what}"
    );
}

/// Row sorts, row argsorts and row top-k of `rows` rows of `row_len`, row by row against the
/// stable sort; and the segments cut at `offsets` of the same keys.
fn check_rows<K: Half>(rows: usize, row_len: usize, backends: &[Backend], ks: &[usize]) {
    let keys = make_keys::<K>(
        rows * row_len,
        Pattern::Random,
        (rows * 31 + row_len) as u64,
    );
    let len = row_len.max(1);
    let permutations: Vec<[Vec<usize>; 2]> = keys.chunks(len).map(both_permutations).collect();
    for &backend in backends {
        for order in ORDERS {
            let sorter = Sorter::new().backend(backend).order(order);
            let mut sorted = keys.clone();
            sorter.sort_rows(&mut sorted, len).unwrap();
            let mut positions = vec![0u32; keys.len()];
            sorter.argsort_rows(&keys, &mut positions, len).unwrap();
            let rows_of = keys
                .chunks(len)
                .zip(sorted.chunks(len))
                .zip(positions.chunks(len));
            for (r, ((row, got), got_positions)) in rows_of.enumerate() {
                let want = &permutations[r][of_order(order)];
                let what = format!(
                    "{:?} {backend:?} {order:?} row {r} of {rows}x{row_len}",
                    K::DTYPE
                );
                assert_same_bits(got, &gather(row, want), &what);
                let got_positions = got_positions.iter().map(|&i| i as usize);
                assert!(got_positions.eq(want.iter().copied()), "argsort {what}");
            }
            // Segments: the rows, each cut in two unequal halves.
            let offsets: Vec<usize> = (0..rows)
                .flat_map(|r| [r * row_len, r * row_len + row_len / 3])
                .chain([keys.len()])
                .collect();
            let mut segments = keys.clone();
            sorter.sort_segments(&mut segments, &offsets).unwrap();
            for w in offsets.windows(2) {
                let (segment, got) = (&keys[w[0]..w[1]], &segments[w[0]..w[1]]);
                let want = gather(segment, &stable_permutation(segment, order));
                let what = format!("{:?} {backend:?} {order:?} segment {w:?}", K::DTYPE);
                assert_same_bits(got, &want, &what);
            }
        }
        for &k in ks.iter().filter(|&&k| k >= 1 && k <= row_len) {
            for select in [Order::Descending, Order::Ascending] {
                let (mut values, mut indices) =
                    (vec![K::from_random(0); rows * k], vec![0u32; rows * k]);
                Sorter::new()
                    .backend(backend)
                    .clone()
                    .order(select)
                    .topk_rows(&keys, &mut values, &mut indices, row_len, k)
                    .unwrap();
                for (r, row) in keys.chunks(row_len).enumerate() {
                    let want = &permutations[r][of_order(select)][..k];
                    let what = format!(
                        "top {k} {select:?} of row {r} of {rows}x{row_len} {:?} on {backend:?}",
                        K::DTYPE
                    );
                    let got = &indices[r * k..(r + 1) * k];
                    assert!(
                        got.iter().map(|&i| i as usize).eq(want.iter().copied()),
                        "{what}"
                    );
                    assert_same_bits(&values[r * k..(r + 1) * k], &gather(row, want), &what);
                }
            }
        }
    }
}

const KS: [usize; 7] = [1, 2, 7, 64, 1000, 2048, 2049];

fn cpu_rows_argsorts_pairs_and_topk() {
    for len in [0, 1, 2, 3, 31, 1000, 1025, 4097, 70_001] {
        for pattern in PATTERNS {
            check_argsorts_pairs_and_topk(&make_keys::<f16>(len, pattern, 3), CPU, &KS);
            check_argsorts_pairs_and_topk(&make_keys::<bf16>(len, pattern, 4), CPU, &KS);
        }
    }
    for (rows, row_len) in [(1, 0), (5, 1), (7, 3), (100, 33), (9, 1023), (3, 4096)] {
        check_rows::<f16>(rows, row_len, CPU, &KS);
        check_rows::<bf16>(rows, row_len, CPU, &KS);
    }
}

/// Lengths around the GPU's tile and pass boundaries (2^10 … 2^15), and past 2^22, where one
/// array sorts by merging.
const GPU_SIZES: [usize; 24] = [
    0,
    1,
    2,
    3,
    1023,
    1024,
    1025,
    2047,
    2048,
    2049,
    4095,
    4096,
    4097,
    (1 << 14) - 1,
    1 << 14,
    (1 << 14) + 1,
    (1 << 15) - 1,
    1 << 15,
    (1 << 15) + 1,
    100_003,
    1 << 20,
    (1 << 22) + 3,
    1 << 23,
    (1 << 23) + 1001,
];

/// Every version (V0–V5 up to 2^20 keys, the tuned one at every size) on every pattern.
fn every_version<K: Half>(test: &str) {
    gpu(test);
    for (round, &len) in GPU_SIZES.iter().enumerate() {
        for pattern in PATTERNS {
            let keys = make_keys::<K>(len, pattern, round as u64);
            let what = format!("{pattern:?} len {len}");
            for version in Version::ALL {
                if version == Version::Tuned || len <= 1 << 20 {
                    check_sort(&keys, GPU, Some(version), &what);
                }
            }
        }
    }
}

fn gpu_f16_every_version() {
    every_version::<f16>("gpu_f16_every_version");
}

fn gpu_bf16_every_version() {
    every_version::<bf16>("gpu_bf16_every_version");
}

fn gpu_rows_argsorts_and_pairs() {
    gpu("gpu_rows_argsorts_and_pairs");
    for len in [
        0,
        1,
        2,
        3,
        1025,
        4097,
        (1 << 14) + 1,
        (1 << 15) + 1,
        100_003,
    ] {
        for pattern in PATTERNS {
            check_argsorts_pairs_and_topk(&make_keys::<f16>(len, pattern, 5), GPU, &[]);
            check_argsorts_pairs_and_topk(&make_keys::<bf16>(len, pattern, 6), GPU, &[]);
        }
    }
    // Past 2^22 keys: the key-value merge sort's levels, through the pinned staging buffers.
    let long = make_keys::<f16>((1 << 22) + 3, Pattern::FewDistinct, 7);
    check_argsorts_pairs_and_topk(&long, GPU, &[]);
    for (rows, row_len) in [(5, 1), (7, 3), (100, 33), (9, 1023), (3, 4096), (2, 20_001)] {
        check_rows::<f16>(rows, row_len, GPU, &[]);
        check_rows::<bf16>(rows, row_len, GPU, &[]);
    }
    check_rows::<f16>(5, 1 << 15, GPU, &[]);
}

fn gpu_topk() {
    gpu("gpu_topk");
    for (rows, row_len) in [
        (1, 1),
        (64, 2),
        (3, 31),
        (64, 1000),
        (3, 4097),
        (1, 100_003),
    ] {
        check_rows::<f16>(rows, row_len, GPU, &KS);
        check_rows::<bf16>(rows, row_len, GPU, &KS);
    }
    for pattern in PATTERNS {
        let keys = make_keys::<f16>((1 << 20) + 3, pattern, 8);
        check_argsorts_pairs_and_topk(&keys, GPU, &[1, 64, 2048, 5000]);
    }
}

/// Every `*_device` call on f16 and bf16 buffers against the same call on host slices (checked
/// above against the stable sort).
fn gpu_device_buffers() {
    device_buffers::<f16>("gpu_device_buffers");
    device_buffers::<bf16>("gpu_device_buffers");
}

fn device_buffers<K: Half>(test: &str) {
    let gpu = gpu(test);
    let stream = gpu.stream();
    for (rows, row_len) in [(1, 1), (1, 2), (1, 100_003), (64, 1000), (3, 1 << 15)] {
        let n = rows * row_len;
        let keys = make_keys::<K>(n, Pattern::Random, n as u64);
        let what = format!("{:?} {rows}x{row_len}", K::DTYPE);
        for order in ORDERS {
            let sorter = Sorter::new().gpu(gpu).order(order);
            let host = Sorter::new().backend(Backend::Cpu).order(order);
            let mut want = keys.clone();
            host.sort_rows(&mut want, row_len).unwrap();
            let mut device = stream.clone_htod(&keys).unwrap();
            sorter.sort_rows_device(&mut device, row_len).unwrap();
            let what = format!("{what} {order:?}");
            assert_same_bits(
                &stream.clone_dtoh(&device).unwrap(),
                &want,
                &format!("rows {what}"),
            );
            if rows == 1 {
                let mut device = stream.clone_htod(&keys).unwrap();
                sorter.sort_device(&mut device).unwrap();
                let got = stream.clone_dtoh(&device).unwrap();
                assert_same_bits(&got, &want, &format!("sort {what}"));
            }

            let offsets: Vec<usize> = (0..=rows).map(|r| r * row_len).collect();
            let mut device = stream.clone_htod(&keys).unwrap();
            sorter.sort_segments_device(&mut device, &offsets).unwrap();
            let got = stream.clone_dtoh(&device).unwrap();
            assert_same_bits(&got, &want, &format!("segments {what}"));

            let mut positions = vec![0u32; n];
            host.argsort_rows(&keys, &mut positions, row_len).unwrap();
            let mut device = stream.clone_htod(&keys).unwrap();
            let mut indices = stream.alloc_zeros::<u32>(n).unwrap();
            sorter
                .argsort_rows_device(&mut device, &mut indices, row_len)
                .unwrap();
            let got = stream.clone_dtoh(&device).unwrap();
            assert_same_bits(&got, &want, &format!("keys with indices {what}"));
            assert_eq!(
                stream.clone_dtoh(&indices).unwrap(),
                positions,
                "indices {what}"
            );

            let values: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
            let mut device = stream.clone_htod(&keys).unwrap();
            let mut values_d = stream.clone_htod(&values).unwrap();
            sorter
                .sort_pairs_rows_device(&mut device, &mut values_d, row_len)
                .unwrap();
            let got = stream.clone_dtoh(&device).unwrap();
            assert_same_bits(&got, &want, &format!("pair keys {what}"));
            let want_values: Vec<u64> = (0..n)
                .map(|i| ((i / row_len * row_len) as u64 + positions[i] as u64) * 3)
                .collect();
            assert_eq!(
                stream.clone_dtoh(&values_d).unwrap(),
                want_values,
                "values {what}"
            );
        }
        for k in [1, 7, 2048, 2049, row_len] {
            if k > row_len {
                continue;
            }
            for select in [Order::Descending, Order::Ascending] {
                let what = format!("top {k} {select:?} of {what}");
                let (mut values, mut indices) =
                    (vec![K::from_random(0); rows * k], vec![0u32; rows * k]);
                let host = Sorter::new().backend(Backend::Cpu);
                host.clone()
                    .order(select)
                    .topk_rows(&keys, &mut values, &mut indices, row_len, k)
                    .unwrap();
                let keys_d = stream.clone_htod(&keys).unwrap();
                let mut values_d = stream
                    .clone_htod(&vec![K::from_random(0); rows * k])
                    .unwrap();
                let mut indices_d = stream.alloc_zeros::<u32>(rows * k).unwrap();
                Sorter::new()
                    .gpu(gpu)
                    .clone()
                    .order(select)
                    .topk_rows_device(&keys_d, &mut values_d, &mut indices_d, row_len, k)
                    .unwrap();
                let got = stream.clone_dtoh(&values_d).unwrap();
                assert_same_bits(&got, &values, &what);
                assert_eq!(stream.clone_dtoh(&indices_d).unwrap(), indices, "{what}");
                assert_same_bits(
                    &stream.clone_dtoh(&keys_d).unwrap(),
                    &keys,
                    "keys unchanged",
                );
            }
        }
    }
}
