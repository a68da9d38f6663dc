//! Sampling on the CPU (`bitonic::sample::sample_host`) against an independent statement of
//! the filtered distribution: hand-made rows whose kept sets are known, the distribution on a
//! grid of `u` (each token drawn for a share of the grid equal to its probability, to one grid
//! step), and a chi-square test of seeded random draws.

mod common;

use bitonic::half::{bf16, f16};
use bitonic::sample::{sample_host, Filters, PerRow};
use common::setting::Setting;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const INF: f32 = f32::INFINITY;

/// The filtered distribution of one row in index order, written from the module's statement
/// with masks and thresholds (not with its kept prefix): `Err(token)` for a greedy row or for a
/// row with nothing to draw (-1).
fn distribution(row: &[f32], set: Setting) -> Result<Vec<f64>, i64> {
    let t = set.temperature.unwrap_or(1.0);
    let s: Vec<f32> = row
        .iter()
        .map(|&x| if t > 0.0 { x / t } else { x })
        .map(|s| if s.is_nan() { -INF } else { s })
        .collect();
    let max = s.iter().copied().fold(-INF, f32::max);
    // Orders below by `partial_cmp`, under which -0.0 and +0.0 tie (no NaN is left).
    let descending = |a: &f32, b: &f32| b.partial_cmp(a).unwrap();
    if max == -INF {
        return Err(-1);
    }
    if t.is_nan() || t <= 0.0 {
        return Err(s.iter().position(|&x| x == max).unwrap() as i64);
    }
    let w: Vec<f64> = s
        .iter()
        .map(|&x| match max {
            INF => f64::from(u8::from(x == INF)),
            _ => f64::from((x - max).exp()),
        })
        .collect();
    let mut keep: Vec<bool> = s.iter().map(|&x| x > -INF).collect();
    if let Some(p) = set.min_p.filter(|&p| p > 0.0) {
        let p = f64::from(p.min(1.0));
        keep.iter_mut().zip(&w).for_each(|(k, &w)| *k &= w >= p);
    }
    if let Some(k) = set.top_k.filter(|&k| k > 0) {
        let mut left: Vec<f32> = (0..s.len()).filter(|&i| keep[i]).map(|i| s[i]).collect();
        left.sort_by(descending);
        if (k as usize) < left.len() {
            let kth = left[k as usize - 1];
            keep.iter_mut().zip(&s).for_each(|(k, &x)| *k &= x >= kth);
        }
    }
    if let Some(p) = set.top_p.filter(|&p| p < 1.0) {
        // Tokens by probability, ties by index; the boundary token is the first at which the
        // running sum reaches p of the total.
        let mut by_prob: Vec<usize> = (0..s.len()).filter(|&i| keep[i]).collect();
        by_prob.sort_by(|&a, &b| descending(&s[a], &s[b]).then(a.cmp(&b)));
        let total: f64 = by_prob.iter().map(|&i| w[i]).sum();
        let mut sum = 0.0;
        let mut boundary = by_prob.len() - 1;
        for (j, &i) in by_prob.iter().enumerate() {
            sum += w[i];
            if p <= 0.0 || sum >= f64::from(p) * total {
                boundary = j;
                break;
            }
        }
        for &i in &by_prob[boundary + 1..] {
            keep[i] = false;
        }
    }
    let total: f64 = (0..s.len()).filter(|&i| keep[i]).map(|i| w[i]).sum();
    Ok((0..s.len())
        .map(|i| if keep[i] { w[i] / total } else { 0.0 })
        .collect())
}

/// The tokens of `rows` (each of `vocab`) at the uniform numbers `u`, one a row.
fn draw(rows: &[f32], vocab: usize, filters: &Filters<'_>, u: &[f32]) -> Vec<i64> {
    let mut tokens = vec![0i64; u.len()];
    sample_host(rows, vocab, filters, u, &mut tokens).unwrap();
    tokens
}

/// How often each token of `row` is drawn over a grid of `n` uniform numbers.
fn grid_counts(row: &[f32], filters: &Filters<'_>, n: usize) -> Vec<usize> {
    let rows: Vec<f32> = row.iter().copied().cycle().take(row.len() * n).collect();
    let u: Vec<f32> = (0..n).map(|j| (j as f32 + 0.5) / n as f32).collect();
    let mut counts = vec![0usize; row.len()];
    for token in draw(&rows, row.len(), filters, &u) {
        counts[usize::try_from(token).expect("a token")] += 1;
    }
    counts
}

/// Each token of `row` is drawn on the grid for its probability's share, to within two grid
/// steps (one for each end of its interval, one for the f32 grid), and never outside the set.
fn check_on_grid(row: &[f32], set: Setting, what: &str) {
    const N: usize = 1 << 10;
    match distribution(row, set) {
        Err(token) => {
            let u: Vec<f32> = vec![0.0, 0.3, 0.999];
            let rows: Vec<f32> = row.iter().copied().cycle().take(row.len() * 3).collect();
            let got = draw(&rows, row.len(), &set.host(), &u);
            assert_eq!(got, vec![token; 3], "{what}: {set:?}");
        }
        Ok(probabilities) => {
            let counts = grid_counts(row, &set.host(), N);
            for (i, (&c, &p)) in counts.iter().zip(&probabilities).enumerate() {
                if p == 0.0 {
                    assert_eq!(c, 0, "{what}: token {i} is outside the set, {set:?}");
                } else {
                    let expected = p * N as f64;
                    assert!(
                        (c as f64 - expected).abs() <= 2.0,
                        "{what}: token {i} drawn {c} times of {N}, expected {expected:.1}, {set:?}"
                    );
                }
            }
        }
    }
}

/// The kept set of `row` under `set` (every token with a share of a fine grid).
fn kept(row: &[f32], set: Setting) -> Vec<usize> {
    let counts = grid_counts(row, &set.host(), 1 << 10);
    (0..row.len()).filter(|&i| counts[i] > 0).collect()
}

fn top_k(k: i64) -> Setting {
    Setting {
        top_k: Some(k),
        ..Setting::default()
    }
}

fn top_p(p: f32) -> Setting {
    Setting {
        top_p: Some(p),
        ..Setting::default()
    }
}

fn min_p(p: f32) -> Setting {
    Setting {
        min_p: Some(p),
        ..Setting::default()
    }
}

#[test]
fn top_k_keeps_the_ties_of_the_kth() {
    let row = [0.0, 5.0, 1.0, 4.0, 5.0];
    assert_eq!(kept(&row, top_k(1)), [1, 4]);
    assert_eq!(kept(&row, top_k(2)), [1, 4]);
    assert_eq!(kept(&row, top_k(3)), [1, 3, 4]);
    assert_eq!(kept(&row, top_k(5)), [0, 1, 2, 3, 4]);
    assert_eq!(kept(&row, top_k(99)), [0, 1, 2, 3, 4]);
    // k = 1 without ties is the argmax.
    assert_eq!(kept(&[0.5, 2.0, -1.0], top_k(1)), [1]);
}

#[test]
fn top_p_keeps_the_shortest_prefix_and_splits_ties_by_index() {
    // Weights 1, a, a, a, b: a p between (1 + a) / Z and (1 + 2a) / Z keeps 0, 1 and 2.
    let row = [2.0f32, 1.0, 1.0, 1.0, 0.0];
    let (a, b) = (f64::from((-1.0f32).exp()), f64::from((-2.0f32).exp()));
    let total = 1.0 + 3.0 * a + b;
    let p = |kept: f64| ((1.0 + kept * a) / total) as f32;
    assert_eq!(kept(&row, top_p(p(0.5))), [0, 1]);
    assert_eq!(kept(&row, top_p(p(1.5))), [0, 1, 2]);
    assert_eq!(kept(&row, top_p(p(2.5))), [0, 1, 2, 3]);
    assert_eq!(kept(&row, top_p(0.01)), [0]);
    assert_eq!(kept(&row, top_p(1.0)), [0, 1, 2, 3, 4]);
}

#[test]
fn min_p_keeps_tokens_near_the_largest() {
    let row = [0.0f32, -1.0, -3.0, 0.0];
    assert_eq!(kept(&row, min_p(0.1)), [0, 1, 3]);
    assert_eq!(kept(&row, min_p(0.5)), [0, 3]);
    assert_eq!(kept(&row, min_p(1.0)), [0, 3]);
    assert_eq!(kept(&row, min_p(0.0)), [0, 1, 2, 3]);
}

#[test]
fn the_filters_apply_in_order() {
    // min-p first leaves 0, 1, 3, 4; top-k 2 of those keeps 3 and 4 (tied at 2.0 with 0? no:
    // 0 is 1.0); top-p then cuts within what is left.
    let row = [1.0f32, 0.5, -5.0, 2.0, 2.0];
    let set = Setting {
        min_p: Some(0.1),
        top_k: Some(3),
        ..Setting::default()
    };
    assert_eq!(kept(&row, set), [0, 3, 4]);
    let set = Setting {
        top_p: Some(0.4),
        ..set
    };
    assert_eq!(kept(&row, set), [3]);
    let set = Setting {
        top_p: Some(0.6),
        ..set
    };
    assert_eq!(kept(&row, set), [3, 4]);
}

#[test]
fn special_rows_are_defined() {
    let nan = f32::NAN;
    let none = Setting::default();
    let greedy = Setting {
        temperature: Some(0.0),
        ..Setting::default()
    };
    // Nothing above -inf: -1, greedy or not.
    assert_eq!(draw(&[-INF, nan, -nan], 3, &none.host(), &[0.5]), [-1]);
    assert_eq!(draw(&[-INF, nan], 2, &greedy.host(), &[0.5]), [-1]);
    // NaN of either sign is never drawn, and a single finite token always is.
    assert_eq!(kept(&[nan, 1.0, -nan, 0.0], none), [1, 3]);
    for set in [none, top_k(1), top_p(0.01), min_p(1.0), greedy] {
        assert_eq!(kept(&[-INF, 3.0, nan], set), [1], "{set:?}");
    }
    // -0.0 ties with +0.0: top-p's boundary among them falls by index.
    assert_eq!(kept(&[-0.0, 0.0, -0.0, 0.0], top_p(0.5)), [0, 1]);
    assert_eq!(kept(&[0.0, -0.0, -1.0], top_k(1)), [0, 1]);
    // +inf tokens share the draw alone.
    let counts = grid_counts(&[1.0, INF, 2.0, INF], &none.host(), 1000);
    assert_eq!(counts, [0, 500, 0, 500]);
    // Greedy: the first of the largest, whatever u.
    assert_eq!(draw(&[1.0, 3.0, 3.0], 3, &greedy.host(), &[0.99]), [1]);
    // u outside [0, 1) is clamped; NaN reads as 0.
    let row = [0.0f32, 0.0];
    assert_eq!(draw(&row, 2, &none.host(), &[-1.0]), [0]);
    assert_eq!(draw(&row, 2, &none.host(), &[nan]), [0]);
    assert_eq!(draw(&row, 2, &none.host(), &[1.0]), [1]);
    assert_eq!(draw(&row, 2, &none.host(), &[7.0]), [1]);
}

fn random_row(rng: &mut Xoshiro256PlusPlus, vocab: usize, spread: f32) -> Vec<f32> {
    (0..vocab)
        .map(|_| {
            // Some repeated values, so that ties at the boundaries happen.
            let x: f32 = rng.random::<f32>() * spread;
            if rng.random::<f32>() < 0.2 {
                x.round()
            } else {
                x
            }
        })
        .collect()
}

/// Every filter alone and together, each setting on and off (48 of them).
fn settings() -> Vec<Setting> {
    let mut all = Vec::new();
    for temperature in [None, Some(0.5), Some(0.0)] {
        for min_p in [None, Some(0.05)] {
            for (top_k, top_p) in [
                (None, None),
                (Some(1), None),
                (Some(50), None),
                (None, Some(0.9)),
                (Some(5), Some(0.5)),
                (Some(50), Some(0.9)),
                (None, Some(1.0)),
                (Some(3), Some(0.99)),
            ] {
                all.push(Setting {
                    temperature,
                    min_p,
                    top_k,
                    top_p,
                });
            }
        }
    }
    all
}

#[test]
fn the_draw_follows_the_filtered_distribution_on_a_grid() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    for vocab in [1, 2, 32, 300] {
        let row = random_row(&mut rng, vocab, 8.0);
        for set in settings() {
            check_on_grid(&row, set, &format!("vocab {vocab}"));
        }
    }
}

#[test]
fn settings_a_row_equal_the_same_settings_alone() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let vocab = 100;
    let all = settings();
    let rows: Vec<f32> = (0..all.len())
        .flat_map(|_| random_row(&mut rng, vocab, 6.0))
        .collect();
    let u: Vec<f32> = (0..all.len()).map(|_| rng.random()).collect();
    // Off a row: temperature 1 (or none), min_p 0, top_k 0, top_p 1.
    let temperature: Vec<f32> = all.iter().map(|s| s.temperature.unwrap_or(1.0)).collect();
    let min_p: Vec<f32> = all.iter().map(|s| s.min_p.unwrap_or(0.0)).collect();
    let top_k: Vec<i64> = all.iter().map(|s| s.top_k.unwrap_or(0)).collect();
    let top_p: Vec<f32> = all.iter().map(|s| s.top_p.unwrap_or(1.0)).collect();
    let each = Filters::new()
        .temperature(PerRow::Each(&temperature))
        .min_p(PerRow::Each(&min_p))
        .top_k(PerRow::Each(&top_k))
        .top_p(PerRow::Each(&top_p));
    let together = draw(&rows, vocab, &each, &u);
    for (r, set) in all.iter().enumerate() {
        let row = &rows[r * vocab..][..vocab];
        let alone = draw(row, vocab, &set.host(), &u[r..r + 1]);
        assert_eq!(together[r], alone[0], "row {r}, {set:?}");
    }
}

#[test]
fn random_draws_pass_a_chi_square_test() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2026);
    for (vocab, draws) in [(32, 100_000), (1000, 10_000)] {
        let row = random_row(&mut rng, vocab, 5.0);
        for set in [
            Setting::default(),
            Setting {
                temperature: Some(0.7),
                top_k: Some(20),
                top_p: Some(0.9),
                ..Setting::default()
            },
            top_p(0.8),
            min_p(0.2),
            Setting {
                temperature: Some(2.0),
                min_p: Some(0.05),
                top_k: Some(500),
                ..Setting::default()
            },
        ] {
            let probabilities = distribution(&row, set).unwrap();
            let rows: Vec<f32> = row.iter().copied().cycle().take(vocab * draws).collect();
            let u: Vec<f32> = (0..draws).map(|_| rng.random()).collect();
            let mut counts = vec![0usize; vocab];
            for token in draw(&rows, vocab, &set.host(), &u) {
                counts[token as usize] += 1;
            }
            let (statistic, freedom) = chi_square(&counts, &probabilities, draws);
            let p_value = chi_square_survival(statistic, freedom);
            assert!(
                p_value > 1e-3,
                "vocab {vocab}, {set:?}: chi-square {statistic:.1} on {freedom} degrees, p {p_value:.2e}"
            );
        }
    }
}

#[test]
fn half_logits_sample_as_their_f32_values() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let vocab = 300;
    let rows = 40;
    let u: Vec<f32> = (0..rows).map(|_| rng.random()).collect();
    let set = Setting {
        temperature: Some(0.8),
        top_k: Some(40),
        top_p: Some(0.9),
        ..Setting::default()
    };
    let f32s: Vec<f32> = (0..rows * vocab)
        .map(|_| rng.random::<f32>() * 10.0)
        .collect();
    let halves: Vec<f16> = f32s.iter().map(|&x| f16::from_f32(x)).collect();
    let brains: Vec<bf16> = f32s.iter().map(|&x| bf16::from_f32(x)).collect();
    let as_f32 = |v: Vec<f32>| draw(&v, vocab, &set.host(), &u);
    let mut tokens = vec![0i64; rows];
    sample_host(&halves, vocab, &set.host(), &u, &mut tokens).unwrap();
    assert_eq!(tokens, as_f32(halves.iter().map(|x| x.to_f32()).collect()));
    sample_host(&brains, vocab, &set.host(), &u, &mut tokens).unwrap();
    assert_eq!(tokens, as_f32(brains.iter().map(|x| x.to_f32()).collect()));
}

#[test]
fn bad_settings_and_shapes_are_refused() {
    let row = [0.0f32; 8];
    let mut one = [0i64];
    let refused =
        |filters: Filters<'_>, logits: &[f32], vocab: usize, u: &[f32], out: &mut [i64]| {
            let e = sample_host(logits, vocab, &filters, u, out).unwrap_err();
            assert!(matches!(e, bitonic::Error::BadSampling(_)), "{e}");
            e.to_string()
        };
    let f = Filters::new();
    for bad in [
        f.temperature(PerRow::All(-1.0)),
        f.temperature(PerRow::All(f32::NAN)),
        f.temperature(PerRow::All(INF)),
        f.min_p(PerRow::All(1.5)),
        f.min_p(PerRow::All(-0.1)),
        f.top_k(PerRow::All(0)),
        f.top_p(PerRow::All(0.0)),
        f.top_p(PerRow::All(1.01)),
        f.top_p(PerRow::Each(&[0.5, 0.5])),
    ] {
        refused(bad, &row, 8, &[0.5], &mut one);
    }
    let message = refused(f, &row, 3, &[0.5], &mut one);
    assert!(message.contains("vocabulary of 3"), "{message}");
    refused(f, &row, 0, &[0.5], &mut one);
    refused(f, &row, 8, &[0.5, 0.5], &mut one);
    refused(f, &row, 4, &[0.5, 0.5], &mut one);
    // No rows at all is fine.
    sample_host::<f32>(&[], 8, &f, &[], &mut []).unwrap();
}

/// Pearson's statistic of `counts` against `probabilities` over `draws`, and its degrees of
/// freedom (cells less one). Tokens expected fewer than 5 times share one cell, so that the
/// chi-square law holds. A drawn token of probability 0 fails.
fn chi_square(counts: &[usize], probabilities: &[f64], draws: usize) -> (f64, usize) {
    let (mut statistic, mut cells) = (0.0, 0);
    let (mut rare_count, mut rare_expected) = (0.0, 0.0);
    for (&c, &p) in counts.iter().zip(probabilities) {
        if p == 0.0 {
            assert_eq!(c, 0, "a token of probability 0 was drawn");
            continue;
        }
        let expected = p * draws as f64;
        if expected < 5.0 {
            rare_count += c as f64;
            rare_expected += expected;
            continue;
        }
        statistic += (c as f64 - expected).powi(2) / expected;
        cells += 1;
    }
    if rare_expected > 0.0 {
        statistic += (rare_count - rare_expected).powi(2) / rare_expected;
        cells += 1;
    }
    (statistic, cells.max(2) - 1)
}

/// The chance that a chi-square variable of `freedom` degrees exceeds `x`: the regularised
/// upper incomplete gamma function Q(freedom / 2, x / 2), by its power series below `a + 1`
/// and its continued fraction (modified Lentz) above.
fn chi_square_survival(x: f64, freedom: usize) -> f64 {
    let (a, x) = (freedom as f64 / 2.0, x / 2.0);
    if x <= 0.0 {
        return 1.0;
    }
    let log_front = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum) = (1.0 / a, 1.0 / a);
        for n in 1..10_000 {
            term *= x / (a + n as f64);
            sum += term;
            if term < sum * 1e-15 {
                break;
            }
        }
        1.0 - sum * log_front.exp()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut fraction = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let step = d * c;
            fraction *= step;
            if (step - 1.0).abs() < 1e-15 {
                break;
            }
        }
        fraction * log_front.exp()
    }
}

/// ln Γ(x) for x > 0, by Stirling's series after shifting x above 10.
fn ln_gamma(mut x: f64) -> f64 {
    let mut shift = 0.0;
    while x < 10.0 {
        shift -= x.ln();
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 / 1680.0)));
    shift + (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

#[test]
fn the_chi_square_survival_function_is_right() {
    // Values of the chi-square distribution's upper tail, from its closed forms.
    // Two degrees: exp(-x / 2).
    for x in [0.5, 3.0, 20.0] {
        let exact = (-x / 2.0f64).exp();
        assert!((chi_square_survival(x, 2) - exact).abs() < 1e-12, "{x}");
    }
    // Four degrees: exp(-x / 2) (1 + x / 2).
    for x in [0.5, 3.0, 20.0] {
        let exact = (-x / 2.0f64).exp() * (1.0 + x / 2.0);
        assert!((chi_square_survival(x, 4) - exact).abs() < 1e-12, "{x}");
    }
    // The median of 999 degrees is near 998.33.
    assert!((chi_square_survival(998.33, 999) - 0.5).abs() < 1e-3);
}
