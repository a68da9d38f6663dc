//! Every GPU version × key type × order against std's sort, at the sizes of issue 3 and on
//! every pattern. Ignored without a GPU; fails under BITONIC_REQUIRE_GPU=1.

mod common;

use bitonic::half::{bf16, f16};
use bitonic::{cuda::Gpu, Backend, FloatOrder, Order, Policy, SortKey, Sorter, Strategy, Version};
use common::harness::{self, tests, Needs};
use common::{assert_same_bits, gpu, make_keys, reference, TestKey, PATTERNS};

fn main() {
    harness::run(tests![
        Needs::Gpu =>
            gpu_u32, gpu_i32, gpu_u64, gpu_i64, gpu_f32, gpu_f64,
            device_buffer_api, auto_backend_uses_the_gpu,
            tuned_cluster_boundaries_u32, tuned_cluster_boundaries_f32,
            tuned_cluster_boundaries_i64, tuned_graphs_follow_their_buffers,
            multiway_merge_levels_u32, multiway_merge_levels_f32, multiway_merge_levels_i64,
            multiway_merge_levels_f64,
            long_rows_u32, long_rows_i32, long_rows_f32, long_rows_f16, long_rows_bf16;
        Needs::NoGpu => cuda_request_without_gpu_is_a_clear_error;
    ]);
}

const SIZES: [usize; 19] = [
    0,
    1,
    2,
    3,
    31,
    32,
    33,
    511,
    512,
    513,
    1023,
    1024,
    1025,
    4097,
    65535,
    65537,
    1_000_003,
    1 << 20,
    1 << 24,
];

fn all_versions_one_type<K: TestKey>(test: &str) {
    check_against_std::<K>(test, &SIZES, &Version::ALL, 0);
}

/// Sorts every pattern of every length in both orders with each version, against std's sort.
fn check_against_std<K: TestKey>(test: &str, sizes: &[usize], versions: &[Version], seed: u64) {
    let gpu = gpu(test);
    eprintln!("{test} on {}", gpu.info().name);
    for (round, &len) in sizes.iter().enumerate() {
        for pattern in PATTERNS {
            let keys = make_keys::<K>(len, pattern, seed + round as u64);
            for order in [Order::Ascending, Order::Descending] {
                let want = reference(&keys, order);
                for &version in versions {
                    let mut got = keys.clone();
                    let sorter = Sorter::new()
                        .backend(Backend::Cuda)
                        .version(version)
                        .order(order);
                    sorter.sort(&mut got).unwrap();
                    let what = format!("{:?} {version} {order:?} {pattern:?} len {len}", K::DTYPE);
                    assert_same_bits(&got, &want, &what);
                }
            }
        }
    }
}

fn gpu_u32() {
    all_versions_one_type::<u32>("gpu_u32");
}
fn gpu_i32() {
    all_versions_one_type::<i32>("gpu_i32");
}
fn gpu_u64() {
    all_versions_one_type::<u64>("gpu_u64");
}
fn gpu_i64() {
    all_versions_one_type::<i64>("gpu_i64");
}
fn gpu_f32() {
    all_versions_one_type::<f32>("gpu_f32");
}
fn gpu_f64() {
    all_versions_one_type::<f64>("gpu_f64");
}

/// The device-buffer API sorts in place with no host round trip, and agrees with the host API.
fn device_buffer_api() {
    let gpu = gpu("device_buffer_api");
    let keys = make_keys::<f32>(100_003, common::Pattern::Random, 5);
    for version in Version::ALL {
        let mut device = gpu.stream().clone_htod(&keys).unwrap();
        let sorter = Sorter::new().gpu(gpu).version(version);
        let ran = sorter
            .order(Order::Descending)
            .sort_device(&mut device)
            .unwrap();
        assert_eq!(ran.backend, Backend::Cuda);
        let got = gpu.stream().clone_dtoh(&device).unwrap();
        assert_same_bits(
            &got,
            &reference(&keys, Order::Descending),
            &format!("device {version}"),
        );
    }
}

/// Auto picks the GPU for large inputs when one works, the CPU for small ones.
fn auto_backend_uses_the_gpu() {
    gpu("auto_backend_uses_the_gpu");
    let mut big = make_keys::<u32>(1 << 17, common::Pattern::Random, 1);
    assert_eq!(Sorter::new().sort(&mut big).unwrap().backend, Backend::Cuda);
    let mut small = make_keys::<u32>(10, common::Pattern::Random, 1);
    assert_eq!(
        Sorter::new().sort(&mut small).unwrap().backend,
        Backend::Cpu
    );
}

/// Without a GPU, asking for CUDA is an error that says why, never a panic.
fn cuda_request_without_gpu_is_a_clear_error() {
    if Gpu::get().is_ok() {
        return; // covered by the tests above
    }
    let mut v = vec![3u32, 1, 2];
    let err = Sorter::new()
        .backend(Backend::Cuda)
        .sort(&mut v)
        .unwrap_err();
    assert!(
        matches!(err, bitonic::Error::NoGpu(_)) && err.to_string().contains("no GPU can be used"),
        "{err}"
    );
    // Debug reads as Display, for `fn main() -> Result<(), bitonic::Error>`.
    assert_eq!(format!("{err:?}"), err.to_string());
    assert_eq!(v, [3, 1, 2], "a failed sort must leave the input alone");
    // Auto falls back to the CPU.
    let mut big: Vec<u32> = (0..100_000u32).rev().collect();
    assert_eq!(Sorter::new().sort(&mut big).unwrap().backend, Backend::Cpu);
    assert!(big.windows(2).all(|w| w[0] <= w[1]));
    let _ = u32::DTYPE;
}

/// The tuned version around its tile and cluster boundaries (on sm_90 a contiguous pass spans a
/// cluster of blocks: 2^17 keys with 2^14-key tiles; small inputs spread over smaller tiles).
fn tuned_cluster_boundaries_one_type<K: TestKey>(test: &str) {
    let sizes = [
        (1 << 14) + 1,
        (1 << 15) - 1,
        1 << 15,
        (1 << 15) + 1,
        (1 << 16) + 3,
        (1 << 17) - 1,
        1 << 17,
        (1 << 17) + 1,
        (1 << 18) + 5,
        3 << 17,
        (1 << 21) + 7,
    ];
    check_against_std::<K>(test, &sizes, &[Version::Tuned], 100);
}

fn tuned_cluster_boundaries_u32() {
    tuned_cluster_boundaries_one_type::<u32>("tuned_cluster_boundaries_u32");
}
fn tuned_cluster_boundaries_f32() {
    tuned_cluster_boundaries_one_type::<f32>("tuned_cluster_boundaries_f32");
}
fn tuned_cluster_boundaries_i64() {
    tuned_cluster_boundaries_one_type::<i64>("tuned_cluster_boundaries_i64");
}

/// The tuned sort's multi-pass plans run as CUDA graphs, built once per plan and re-pointed at
/// each buffer (src/cuda/graph.rs): one plan on two buffers in turn, on the first again with new
/// keys, and the other order (another plan) on the same buffer must all sort right.
fn tuned_graphs_follow_their_buffers() {
    let gpu = gpu("tuned_graphs_follow_their_buffers");
    for len in [300_007, 1 << 20] {
        let first = make_keys::<u32>(len, common::Pattern::Random, 11);
        let second = make_keys::<u32>(len, common::Pattern::Random, 12);
        let third = make_keys::<u32>(len, common::Pattern::FewDistinct, 13);
        let mut a = gpu.stream().clone_htod(&first).unwrap();
        let mut b = gpu.stream().clone_htod(&second).unwrap();
        let sort_and_check = |buffer: &mut _, keys: &[u32], order, what: &str| {
            let sorter = Sorter::new().gpu(gpu).order(order);
            sorter.sort_device(buffer).unwrap();
            let got = gpu.stream().clone_dtoh(buffer).unwrap();
            assert_same_bits(&got, &reference(keys, order), &format!("{what}, len {len}"));
        };
        sort_and_check(&mut a, &first, Order::Ascending, "buffer a");
        sort_and_check(&mut b, &second, Order::Ascending, "buffer b, same plan");
        gpu.stream().memcpy_htod(&third, &mut a).unwrap();
        sort_and_check(&mut a, &third, Order::Ascending, "buffer a again, new keys");
        sort_and_check(&mut a, &third, Order::Descending, "buffer a, descending");
        sort_and_check(&mut b, &second, Order::Descending, "buffer b, descending");
    }
}

/// The merge sort with every number of ways a level may merge (2: the two-way bitonic levels),
/// from one tile up: a last group of fewer runs (3 × 2^14), a short last run, levels that end
/// in a two-way or four-way step, both orders, every pattern, 32- and 64-bit words with their
/// key maps. The merge sort starts above one tile here, so small inputs take it too.
fn multiway_merge_levels_one_type<K: TestKey>(test: &str) {
    let gpu = gpu(test);
    let tile = Policy::HOPPER.sort.tile_bytes / std::mem::size_of::<K>();
    let sizes = [
        tile + 1,
        3 * tile + 5,
        8 * tile + 3,
        20 * tile - 1,
        72 * tile,
        64 * tile + 12345,
        256 * tile + 1,
    ];
    for ways in [2, 4, 8, 16, 32] {
        let policy = {
            let mut p = Policy::HOPPER.clone();
            p.merge.ways = ways;
            p.merge.wide_ways = ways;
            p.merge.above = tile;
            p.merge.wide_above = tile;
            p
        };
        for (round, &len) in sizes.iter().enumerate() {
            for pattern in PATTERNS {
                let keys = make_keys::<K>(len, pattern, 7 + round as u64);
                for order in [Order::Ascending, Order::Descending] {
                    let mut got = keys.clone();
                    let sorter = Sorter::new()
                        .gpu(gpu)
                        .backend(Backend::Cuda)
                        .policy(policy.clone())
                        .order(order);
                    let ran = sorter.sort(&mut got).unwrap();
                    assert_eq!(ran.strategy, Strategy::MergeSort);
                    let what =
                        format!("{:?} {ways} ways {order:?} {pattern:?} len {len}", K::DTYPE);
                    assert_same_bits(&got, &reference(&keys, order), &what);
                }
            }
        }
    }
}

fn multiway_merge_levels_u32() {
    multiway_merge_levels_one_type::<u32>("multiway_merge_levels_u32");
    // A policy's merge.ways the kernels have no form for is an invalid policy, and the keys
    // stay.
    let policy = {
        let mut p = Policy::HOPPER.clone();
        p.merge.ways = 3;
        p.merge.above = 1 << 14;
        p
    };
    let keys = make_keys::<u32>(1 << 16, common::Pattern::Random, 1);
    let mut got = keys.clone();
    let sorter = Sorter::new()
        .gpu(gpu("multiway_merge_levels_u32"))
        .backend(Backend::Cuda)
        .policy(policy);
    assert!(matches!(
        sorter.sort(&mut got),
        Err(bitonic::Error::InvalidPolicy(_))
    ));
    assert_eq!(got, keys);
}
fn multiway_merge_levels_f32() {
    multiway_merge_levels_one_type::<f32>("multiway_merge_levels_f32");
}
fn multiway_merge_levels_i64() {
    multiway_merge_levels_one_type::<i64>("multiway_merge_levels_i64");
}
fn multiway_merge_levels_f64() {
    multiway_merge_levels_one_type::<f64>("multiway_merge_levels_f64");
}

/// Rows of keys alone through the radix passes (no index), for every key type of 2 or 4 bytes:
/// under a policy that sends rows of any length there (lengths around the passes' tile, which
/// rows span several of), and from the device policy's own row length; against std's sort row
/// by row, bit for bit, and in numeric float order against the network's passes on the same
/// keys (both map losslessly, so their bits agree too).
fn long_rows_one_type<K: TestKey>(test: &str) {
    let gpu = gpu(test);
    let device = gpu.policy();
    let mut every_row = device.clone();
    every_row.radix.keys_from_row_len = 2;
    every_row.radix.keys_pow2_from_row_len = 2;
    let mut never = device.clone();
    never.radix.keys_from_row_len = usize::MAX;
    never.radix.keys_pow2_from_row_len = usize::MAX;
    let (tile, from) = (device.radix.tile, device.radix.keys_from_row_len);
    let forced = [
        (2, 2),
        (3, 255),
        (2, 256),
        (4, 1000),
        (2, tile - 1),
        (3, tile),
        (2, tile + 1),
    ];
    let forced = forced.into_iter().map(|shape| (shape, &every_row));
    let own = [
        ((2, from + 1), &device),
        ((3, 151_936), &device),
        ((2, 3 * tile + 17), &every_row),
    ];
    for (round, ((rows, row_len), policy)) in forced.chain(own).enumerate() {
        for pattern in PATTERNS {
            let keys = make_keys::<K>(rows * row_len, pattern, 40 + round as u64);
            for order in [Order::Ascending, Order::Descending] {
                let what = format!("{:?} {rows}x{row_len} {pattern:?} {order:?}", K::DTYPE);
                let sorter = Sorter::new()
                    .gpu(gpu)
                    .backend(Backend::Cuda)
                    .order(order)
                    .policy(policy.clone());
                let mut got = keys.clone();
                let ran = sorter.sort_rows(&mut got, row_len).unwrap();
                assert_eq!(ran.strategy, Strategy::RadixSort, "{what}: {ran}");
                let want: Vec<K> = keys
                    .chunks(row_len)
                    .flat_map(|row| reference(row, order))
                    .collect();
                assert_same_bits(&got, &want, &what);
                // Numeric float order, against the network's passes.
                let numeric = sorter.float_order(FloatOrder::Numeric);
                let mut by_radix = keys.clone();
                numeric.sort_rows(&mut by_radix, row_len).unwrap();
                let mut by_network = keys.clone();
                let ran = numeric
                    .policy(never.clone())
                    .sort_rows(&mut by_network, row_len)
                    .unwrap();
                assert_eq!(ran.strategy, Strategy::NetworkPasses, "{what}: {ran}");
                assert_same_bits(&by_radix, &by_network, &format!("{what} numeric"));
            }
        }
    }
}

fn long_rows_u32() {
    long_rows_one_type::<u32>("long_rows_u32");
}
fn long_rows_i32() {
    long_rows_one_type::<i32>("long_rows_i32");
}
fn long_rows_f32() {
    long_rows_one_type::<f32>("long_rows_f32");
}
fn long_rows_f16() {
    long_rows_one_type::<f16>("long_rows_f16");
}
fn long_rows_bf16() {
    long_rows_one_type::<bf16>("long_rows_bf16");
}
