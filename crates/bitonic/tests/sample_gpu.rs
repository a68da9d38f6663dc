//! Sampling on the GPU (`Sorter::sample_rows_device`, kernels/sample.cu) against the CPU
//! reference (`sample_host`, itself tested in tests/sample.rs): the same token for the same
//! uniform number, row by row, on random rows, rows of ties, rows with NaN and infinities,
//! f32, f16 and bf16, settings for all rows and a row each, rows short and long (one block a
//! row, clusters, slices too long to stay in shared memory). Weights are summed in fixed point
//! on the GPU and in f64 on the CPU, so a row may differ where a weight or a running sum sits
//! on a boundary to its last bits: at most 1% of rows may differ, and the test prints each.
//! Ignored without a GPU; fails under BITONIC_REQUIRE_GPU=1 (common::harness).

mod common;

use bitonic::half::{bf16, f16};
use bitonic::sample::{sample_host, DeviceFilters, DeviceRow, Filters, Logit, PerRow};
use bitonic::{Error, Gpu, Policy, Sorter};
use common::gpu;
use common::harness::{self, tests, Needs};
use common::setting::Setting;
use cudarc::driver::{CudaSlice, DeviceRepr};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn main() {
    harness::run(tests![
        Needs::Gpu =>
            gpu_tokens_equal_the_host_reference, gpu_settings_a_row, gpu_special_rows,
            gpu_ties_are_kept_in_index_order_across_blocks, gpu_every_cut_of_a_row_draws_alike,
            gpu_draws_are_repeatable,
            gpu_bad_shapes_are_refused;
    ]);
}

fn settings() -> Vec<Setting> {
    let s = |temperature, min_p, top_k, top_p| Setting {
        temperature,
        min_p,
        top_k,
        top_p,
    };
    vec![
        s(None, None, None, None),
        s(Some(0.7), None, Some(50), Some(0.9)),
        s(None, None, None, Some(0.9)),
        s(None, Some(0.1), None, None),
        s(Some(1.5), Some(0.05), Some(1000), Some(0.5)),
        s(None, None, Some(1), None),
        s(None, None, Some(7), None),
        s(Some(0.0), None, Some(50), Some(0.9)), // greedy
        s(None, None, None, Some(1e-9)),         // the first token alone
        s(None, Some(1.0), None, None),          // the largest (and its ties)
        s(Some(2.0), None, Some(300), Some(0.99)),
    ]
}

/// A row of `vocab` logits: normal × `spread`, with `ties` rounded to quarters (many ties).
fn row(rng: &mut Xoshiro256PlusPlus, vocab: usize, spread: f32, ties: bool) -> Vec<f32> {
    (0..vocab)
        .map(|_| {
            let x: f32 = (0..4).map(|_| rng.random::<f32>() - 0.5).sum::<f32>() * spread;
            if ties {
                (x * 4.0).round() / 4.0
            } else {
                x
            }
        })
        .collect()
}

/// The tokens `sorter` draws on `gpu` for `logits` (rows of `vocab`) at `uniform` (a number a
/// row), both already there, read back. A row the kernel leaves unwritten keeps i64::MIN, a
/// token no row can have.
fn gpu_tokens<L: Logit + DeviceRepr>(
    gpu: &Gpu,
    sorter: Sorter<'_>,
    logits: &CudaSlice<L>,
    vocab: usize,
    filters: &DeviceFilters<'_>,
    uniform: &CudaSlice<f32>,
) -> Result<Vec<i64>, Error> {
    let stream = gpu.stream();
    let mut tokens = stream.clone_htod(&vec![i64::MIN; uniform.len()]).unwrap();
    sorter
        .gpu(gpu)
        .sample_rows_device(logits, vocab, filters, uniform, &mut tokens)?;
    Ok(stream.clone_dtoh(&tokens).unwrap())
}

/// The GPU's tokens for `logits` (rows of `vocab`) against the host's; returns the rows that
/// differ, printing each.
fn compare<L: Logit + DeviceRepr>(
    logits: &[L],
    vocab: usize,
    host: &Filters<'_>,
    device: &DeviceFilters<'_>,
    uniform: &[f32],
    what: &str,
) -> usize {
    let gpu = gpu(what);
    let stream = gpu.stream();
    let rows = logits.len() / vocab;
    let mut expected = vec![0i64; rows];
    sample_host(logits, vocab, host, uniform, &mut expected).unwrap();
    let d_logits = stream.clone_htod(logits).unwrap();
    let d_uniform = stream.clone_htod(uniform).unwrap();
    let got = gpu_tokens(gpu, Sorter::new(), &d_logits, vocab, device, &d_uniform)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut differ = 0;
    for r in 0..rows {
        if got[r] != expected[r] {
            differ += 1;
            eprintln!(
                "{what}, row {r} (u = {}): GPU token {}, host {}",
                uniform[r], got[r], expected[r]
            );
        }
    }
    differ
}

fn as_half<H: Logit>(xs: &[f32], f: impl Fn(f32) -> H) -> Vec<H> {
    xs.iter().map(|&x| f(x)).collect()
}

fn gpu_tokens_equal_the_host_reference() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(52);
    // Rows of one block, of clusters, past a cluster's shared memory (2,000,003: read again
    // at each step), and lengths that split unevenly.
    let shapes = [
        (5, 1),
        (5, 2),
        (5, 7),
        (5, 32),
        (5, 300),
        (5, 1000),
        (3, 4099),
        (2, 32771),
        (2, 128_256),
        (2, 151_936),
        (160, 24_000), // more blocks than SMs: two an SM, clusters of 2 (SamplePolicy)
        (1, 2_000_003),
    ];
    let (mut rows_seen, mut differ) = (0, 0);
    for (rows, vocab) in shapes {
        for (i, set) in settings().into_iter().enumerate() {
            if vocab > 200_000 && i > 3 {
                continue; // the long row: the first settings only
            }
            let ties = i % 2 == 1;
            let logits: Vec<f32> = (0..rows)
                .flat_map(|_| row(&mut rng, vocab, 6.0, ties))
                .collect();
            let uniform: Vec<f32> = (0..rows).map(|_| rng.random::<f32>()).collect();
            let (host, device) = (set.host(), set.device());
            let what = format!("{rows} × {vocab}, {set:?}");
            differ += compare(
                &logits,
                vocab,
                &host,
                &device,
                &uniform,
                &format!("f32 {what}"),
            );
            let h = as_half(&logits, f16::from_f32);
            differ += compare(&h, vocab, &host, &device, &uniform, &format!("f16 {what}"));
            let b = as_half(&logits, bf16::from_f32);
            differ += compare(&b, vocab, &host, &device, &uniform, &format!("bf16 {what}"));
            rows_seen += 3 * rows;
        }
    }
    assert!(
        differ * 100 <= rows_seen,
        "{differ} of {rows_seen} rows differ from the host's tokens"
    );
}

fn gpu_settings_a_row() {
    let gpu = gpu("gpu_settings_a_row");
    let stream = gpu.stream();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let (rows, vocab) = (8, 10_007);
    let logits: Vec<f32> = (0..rows)
        .flat_map(|r| row(&mut rng, vocab, 4.0, r % 3 == 0))
        .collect();
    let uniform: Vec<f32> = (0..rows).map(|_| rng.random::<f32>()).collect();
    // Every meaning a value a row can have: off, greedy, NaN, out of range.
    let temperature = [1.0f32, 0.5, 0.0, -1.0, f32::NAN, 2.0, 1.0, 0.8];
    let min_p = [0.0f32, 0.1, 0.2, f32::NAN, -0.5, 0.01, 2.0, 0.0];
    let top_k = [0i64, 5, 1, 50, -3, 10_000, 100, 20];
    let top_p = [1.0f32, 0.9, 0.5, f32::NAN, 0.0, 1.5, 0.95, 0.3];
    let host = Filters::new()
        .temperature(PerRow::Each(&temperature))
        .min_p(PerRow::Each(&min_p))
        .top_k(PerRow::Each(&top_k))
        .top_p(PerRow::Each(&top_p));
    let (dt, dm) = (
        stream.clone_htod(&temperature).unwrap(),
        stream.clone_htod(&min_p).unwrap(),
    );
    let (dk, dp) = (
        stream.clone_htod(&top_k).unwrap(),
        stream.clone_htod(&top_p).unwrap(),
    );
    let device = DeviceFilters::new()
        .temperature(DeviceRow::Each(&dt))
        .min_p(DeviceRow::Each(&dm))
        .top_k(DeviceRow::Each(&dk))
        .top_p(DeviceRow::Each(&dp));
    let differ = compare(&logits, vocab, &host, &device, &uniform, "settings a row");
    assert_eq!(differ, 0, "settings a row");
}

fn gpu_special_rows() {
    const INF: f32 = f32::INFINITY;
    let nan = f32::NAN;
    let neg_nan = -f32::NAN;
    // (row, settings) whose token the host reference gives; u from 0 to just below 1.
    let rows: Vec<Vec<f32>> = vec![
        vec![-INF, -INF, -INF],              // nothing to draw: -1
        vec![nan, neg_nan, -INF],            // NaN reads as -inf: -1
        vec![1.0, INF, 3.0, INF],            // the +inf tokens share the draw
        vec![nan, 2.0, nan, -INF],           // a single finite logit
        vec![-0.0, 0.0, -0.0, 0.0],          // signed zeros tie
        vec![5.0, 5.0, 5.0, 1.0, 5.0, -2.0], // ties at the top
    ];
    for set in settings() {
        for r in &rows {
            for u in [0.0f32, 0.3, 0.5, 0.99, 1.0, -1.0, nan] {
                let differ = compare(
                    r,
                    r.len(),
                    &set.host(),
                    &set.device(),
                    &[u],
                    &format!("{r:?} {set:?} u={u}"),
                );
                assert_eq!(differ, 0);
            }
        }
    }
}

/// Rows of one value, alone or among -inf's, whose weights are exact on both sides (1 and 0),
/// so the tokens must equal the host's at every u: top-p keeps the first of the ties in index
/// order, across the blocks of the row's cluster (top-k and min-p keep them all), and the draw
/// finds the one block whose running sum passes the target.
fn gpu_ties_are_kept_in_index_order_across_blocks() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let sets = [
        (None, None, Some(0.3)),
        (None, None, Some(0.5)),
        (None, Some(1_000), Some(0.77)),
        (Some(1.0), None, None),
        (None, Some(40_000), None),
        (None, None, None),
    ];
    let uniform: Vec<f32> = (0..64).map(|i| i as f32 / 64.0 + 1.0 / 256.0).collect();
    for vocab in [4_099, 20_000, 128_256, 151_936] {
        // All equal; -inf but every seventh; -inf at random, half of them.
        for values in 0..3 {
            let row: Vec<f32> = (0..vocab)
                .map(|i| match values {
                    0 => 1.5,
                    1 if i % 7 == 3 => 1.5,
                    2 if rng.random::<bool>() => 1.5,
                    _ => f32::NEG_INFINITY,
                })
                .collect();
            let logits: Vec<f32> = (0..uniform.len()).flat_map(|_| row.clone()).collect();
            for (min_p, top_k, top_p) in sets {
                let set = Setting {
                    min_p,
                    top_k,
                    top_p,
                    ..Setting::default()
                };
                let what = format!("{vocab} logits, values {values}, {set:?}");
                let differ = compare(&logits, vocab, &set.host(), &set.device(), &uniform, &what);
                assert_eq!(differ, 0, "{what}");
            }
        }
    }
}

/// The same rows and uniform numbers give the same tokens however the rows are cut into slices:
/// the weights are summed as exact integers, so a block's share of the draw (from top-p's
/// rounds, or from a scan) and the row's prefix over the blocks cannot depend on the cut. 4
/// rows of 40,000 logits alone take clusters of 8 (`plan::sample`'s tests), 40 of them 4 a
/// row, 160 one a row with one block an SM, and 2 a row with two.
fn gpu_every_cut_of_a_row_draws_alike() {
    let gpu = gpu("gpu_every_cut_of_a_row_draws_alike");
    let stream = gpu.stream();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let vocab = 40_000;
    let base: Vec<Vec<f32>> = (0..4)
        .map(|i| row(&mut rng, vocab, 6.0, i % 2 == 1))
        .collect();
    let base_u: Vec<f32> = (0..4).map(|_| rng.random::<f32>()).collect();
    let draw = |rows: usize, blocks_per_sm: u32, set: &Setting| -> Vec<i64> {
        let logits: Vec<f32> = (0..rows).flat_map(|r| base[r % 4].clone()).collect();
        let uniform: Vec<f32> = (0..rows).map(|r| base_u[r % 4]).collect();
        let mut policy = Policy::for_compute_capability(9, 0);
        policy.sample.blocks_per_sm = blocks_per_sm;
        gpu_tokens(
            gpu,
            Sorter::new().policy(policy),
            &stream.clone_htod(&logits).unwrap(),
            vocab,
            &set.device(),
            &stream.clone_htod(&uniform).unwrap(),
        )
        .unwrap()
    };
    for set in settings() {
        let alone = draw(4, 2, &set);
        assert!(alone.iter().all(|&t| t >= -1), "{set:?}: {alone:?}");
        for (rows, blocks_per_sm) in [(40, 1), (160, 1), (160, 2)] {
            let tokens = draw(rows, blocks_per_sm, &set);
            for (r, &t) in tokens.iter().enumerate() {
                assert_eq!(
                    t,
                    alone[r % 4],
                    "{set:?}: row {r} of {rows} ({blocks_per_sm} blocks an SM)"
                );
            }
        }
    }
}

fn gpu_draws_are_repeatable() {
    let gpu = gpu("gpu_draws_are_repeatable");
    let stream = gpu.stream();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let (rows, vocab) = (64, 128_256);
    let logits: Vec<f32> = (0..rows)
        .flat_map(|_| row(&mut rng, vocab, 3.0, false))
        .collect();
    let uniform: Vec<f32> = (0..rows).map(|_| rng.random::<f32>()).collect();
    let d_logits = stream.clone_htod(&logits).unwrap();
    let d_uniform = stream.clone_htod(&uniform).unwrap();
    let set = Setting {
        top_p: Some(0.9),
        ..Setting::default()
    };
    let runs: Vec<Vec<i64>> = (0..3)
        .map(|_| {
            gpu_tokens(
                gpu,
                Sorter::new(),
                &d_logits,
                vocab,
                &set.device(),
                &d_uniform,
            )
            .unwrap()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
}

fn gpu_bad_shapes_are_refused() {
    let gpu = gpu("gpu_bad_shapes_are_refused");
    let stream = gpu.stream();
    let logits = stream.alloc_zeros::<f32>(12).unwrap();
    let uniform = stream.alloc_zeros::<f32>(3).unwrap();
    let mut tokens = stream.alloc_zeros::<i64>(3).unwrap();
    let sorter = Sorter::new().gpu(gpu);
    let none = DeviceFilters::new();
    let bad = |r: bitonic::Result<bitonic::plan::SamplePlan>| {
        assert!(matches!(r, Err(Error::BadSampling(_))), "{r:?}");
    };
    bad(sorter.sample_rows_device(&logits, 5, &none, &uniform, &mut tokens)); // 12 % 5
    bad(sorter.sample_rows_device(&logits, 6, &none, &uniform, &mut tokens)); // 2 rows, 3 tokens
    bad(sorter.sample_rows_device(
        &logits,
        4,
        &DeviceFilters::new().top_k(DeviceRow::All(0)),
        &uniform,
        &mut tokens,
    ));
    let two = stream.alloc_zeros::<f32>(2).unwrap();
    bad(sorter.sample_rows_device(
        &logits,
        4,
        &DeviceFilters::new().top_p(DeviceRow::Each(&two)),
        &uniform,
        &mut tokens,
    ));
    let plan = sorter
        .sample_rows_device(&logits, 4, &none, &uniform, &mut tokens)
        .unwrap();
    assert_eq!((plan.rows, plan.vocab), (3, 4));
}
