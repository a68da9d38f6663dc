//! Sampling on the CPU: each row as the module's steps say, in the plainest form (the tokens
//! min-p keeps, sorted in the stable descending order where top-k or top-p needs it, a prefix
//! of them kept, a walk in index order for the draw). It is the reference the other paths are tested against. Rows run in parallel.

use super::{clamp_uniform, Filters, Logit, RowFilters};
use crate::Result;
use rayon::prelude::*;

/// Draws a token from each row of `logits` (rows of `vocab`) after `filters`, at the row's
/// `uniform` number, into `tokens` (one a row; `-1` for a row with no token above `-inf`).
/// See [the module](super) for what is drawn.
///
/// ```
/// use bitonic::sample::{sample_host, Filters, PerRow};
/// let logits = [0.0f32, 5.0, 1.0, 4.0];
/// let mut token = [0i64];
/// // top-2 keeps tokens 1 and 3; u = 0 draws the first of them in index order.
/// sample_host(&logits, 4, &Filters::new().top_k(PerRow::All(2)), &[0.0], &mut token)?;
/// assert_eq!(token, [1]);
/// # Ok::<(), bitonic::Error>(())
/// ```
pub fn sample_host<L: Logit>(
    logits: &[L],
    vocab: usize,
    filters: &Filters<'_>,
    uniform: &[f32],
    tokens: &mut [i64],
) -> Result<()> {
    let rows = super::rows_of(logits.len(), vocab, uniform.len(), tokens.len())?;
    filters.validate(rows)?;
    let rows = logits
        .par_chunks(vocab)
        .zip(uniform)
        .zip(tokens.par_iter_mut());
    rows.enumerate().for_each(|(r, ((row, &u), token))| {
        *token = sample_row(row, filters.of_row(r), clamp_uniform(u));
    });
    Ok(())
}

/// The token of one row (see the module's steps).
fn sample_row<L: Logit>(row: &[L], filters: RowFilters, u: f64) -> i64 {
    // 1. Temperature; NaN as -inf, and -0.0 as +0.0 (`+ 0.0`), so that the sort below, by
    // `total_cmp`, ties the two zeros (the stable descending order ties equal values).
    let scaled = |x: L| {
        let x = x.to_f32();
        let s = if filters.greedy {
            x
        } else {
            x / filters.temperature
        };
        if s.is_nan() {
            f32::NEG_INFINITY
        } else {
            s + 0.0
        }
    };
    let s: Vec<f32> = row.iter().map(|&x| scaled(x)).collect();
    let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return -1;
    }
    if filters.greedy {
        return s.iter().position(|&x| x == max).unwrap() as i64;
    }
    // 2. Weights, the largest 1.
    let weight = |s: f32| {
        if max == f32::INFINITY {
            f32::from(u8::from(s == f32::INFINITY))
        } else {
            (s - max).exp()
        }
    };
    let w: Vec<f32> = s.iter().map(|&s| weight(s)).collect();
    // 3-4. The tokens above -inf that min-p keeps, in the stable descending order when a
    // filter after it needs the order (min-p keeps a prefix of it, so it may go first).
    let min_p = filters.min_p.unwrap_or(0.0);
    let mut order: Vec<usize> = (0..s.len())
        .filter(|&i| s[i] > f32::NEG_INFINITY && w[i] >= min_p)
        .collect();
    if filters.top_k.is_some() || filters.top_p.is_some() {
        order.sort_by(|&a, &b| s[b].total_cmp(&s[a]));
    }
    // 5-6. Each filter shortens the kept prefix.
    let mut kept = order.len();
    if let Some(k) = filters.top_k {
        let k = usize::try_from(k).unwrap_or(usize::MAX);
        if k < kept {
            let kth = s[order[k - 1]];
            kept = k + order[k..kept].iter().take_while(|&&i| s[i] == kth).count();
        }
    }
    if let Some(p) = filters.top_p {
        kept = top_p_prefix(&order[..kept], &w, p);
    }
    // 7. The draw, in index order.
    let mut is_kept = vec![false; s.len()];
    for &i in &order[..kept] {
        is_kept[i] = true;
    }
    let total: f64 = (0..s.len())
        .filter(|&i| is_kept[i])
        .map(|i| f64::from(w[i]))
        .sum();
    let target = u * total;
    let mut running = 0.0;
    for i in (0..s.len()).filter(|&i| is_kept[i]) {
        running += f64::from(w[i]);
        if running > target {
            return i as i64;
        }
    }
    // Not reached: the same sum ends at `total`, above `target` as `u < 1` (and `total >= 1`,
    // the largest weight being kept). The most likely token, were it reached.
    order[0] as i64
}

/// The length of the shortest prefix of `order` whose weights sum to at least `p` times all of
/// theirs (1 for a `p` not above 0).
fn top_p_prefix(order: &[usize], w: &[f32], p: f32) -> usize {
    if p.is_nan() || p <= 0.0 {
        return 1;
    }
    let total: f64 = order.iter().map(|&i| f64::from(w[i])).sum();
    let enough = f64::from(p) * total;
    let mut running = 0.0;
    for (j, &i) in order.iter().enumerate() {
        running += f64::from(w[i]);
        if running >= enough {
            return j + 1;
        }
    }
    order.len()
}
