//! `bitonic bench --gpus 1,2,4`: one sort of `n` random u32 keys on 1, 2, 4 … GPUs of this
//! host, each algorithm, on the same data. The keys are made on the GPUs from their global
//! positions (kernels/multi.cu), so every split sorts the same keys, fresh for each repeat.
//!
//! One rank sorts at most [`RANK_MAX`] keys: on fewer GPUs than that needs, each GPU takes
//! several ranks (2^32 keys on one GPU: two ranks of 2^31), which is how this library sorts
//! such an input on one GPU. Times are host clocks around the whole sort (local sorts,
//! exchanges, merges; `sort_shards` returns synchronized), after one warm-up, median of the
//! repeats. Each result is checked on the GPUs: no descent in any shard, shard ends in order,
//! and the same multiset (an order-free hash sum) as the input.

use super::{read_table, summarize, write_table, Fields};
use anyhow::{bail, Context as _, Result};
use bitonic::cuda::multi::bench::{checksum, ends, fill_random, RANK_MAX};
use bitonic::cuda::multi::{even_split, DeviceShard, MultiGpu};
use bitonic::multi::Algorithm;
use bitonic::Order;
use std::path::Path;
use std::time::Instant;

/// One measurement: `n` keys on `gpus` GPUs with one algorithm.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingRow {
    pub gpus: usize,
    pub ranks: usize,
    pub algorithm: String,
    pub device: String,
    pub commit: String,
    pub date: String,
    pub n: u64,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub repeats: u32,
    /// The best one-GPU median over this median (empty without a one-GPU row).
    pub speedup: Option<f64>,
}

pub const SCALING_HEADER: &str =
    "gpus,ranks,algorithm,device,commit,date,dtype,n,median_ms,min_ms,max_ms,repeats,speedup_vs_1gpu";

impl ScalingRow {
    fn to_csv(&self) -> String {
        format!(
            "{},{},{},{},{},{},u32,{},{:.3},{:.3},{:.3},{},{}",
            self.gpus,
            self.ranks,
            self.algorithm,
            self.device.replace(',', ";"),
            self.commit,
            self.date,
            self.n,
            self.median_ms,
            self.min_ms,
            self.max_ms,
            self.repeats,
            self.speedup.map(|s| format!("{s:.3}")).unwrap_or_default()
        )
    }

    fn from_csv(line: &str) -> std::result::Result<ScalingRow, String> {
        let f = Fields::split(line, 13)?;
        Ok(ScalingRow {
            gpus: f.parse(0)?,
            ranks: f.parse(1)?,
            algorithm: f.text(2),
            device: f.text(3),
            commit: f.text(4),
            date: f.text(5),
            n: f.parse(7)?,
            median_ms: f.parse(8)?,
            min_ms: f.parse(9)?,
            max_ms: f.parse(10)?,
            repeats: f.parse(11)?,
            speedup: f.optional(12)?,
        })
    }
}

pub fn write_scaling_csv(path: &Path, rows: &[ScalingRow]) -> std::io::Result<()> {
    write_table(path, SCALING_HEADER, rows.iter().map(ScalingRow::to_csv))
}

pub fn read_scaling_csv(path: &Path) -> std::result::Result<Vec<ScalingRow>, String> {
    read_table(
        path,
        SCALING_HEADER,
        "multi-GPU bench",
        ScalingRow::from_csv,
    )
}

/// The rank devices for `n` keys on `gpus` GPUs: `min_per_gpu` ranks a GPU, or more when that
/// would put more than [`RANK_MAX`] keys in a rank. Partition's buckets vary in size around
/// their share, so it keeps an eighth of each rank free for that.
pub fn rank_devices(n: usize, gpus: usize, min_per_gpu: usize, algorithm: Algorithm) -> Vec<usize> {
    let rank_max = match algorithm {
        Algorithm::MergeSplit => RANK_MAX,
        Algorithm::Partition => RANK_MAX / 8 * 7,
    };
    let per_gpu = n.div_ceil(rank_max * gpus).max(min_per_gpu).max(1);
    (0..gpus * per_gpu).map(|r| r % gpus).collect()
}

/// What `bitonic bench --gpus` measures.
pub struct ScalingPlan {
    pub gpu_counts: Vec<usize>,
    pub n: usize,
    pub algorithms: Vec<Algorithm>,
    pub repeats: u32,
    pub seed: u64,
    /// Ranks on each GPU at least (more when the keys need them): 4 ranks on one GPU run the
    /// 4-rank schedule where no 4-GPU host is at hand.
    pub min_ranks_per_gpu: usize,
}

/// Measures every GPU count and algorithm of `plan`; `log` hears progress.
pub fn measure(
    plan: &ScalingPlan,
    commit: &str,
    date: &str,
    mut log: impl FnMut(&str),
) -> Result<Vec<ScalingRow>> {
    let ScalingPlan {
        n, repeats, seed, ..
    } = *plan;
    let mut rows = Vec::new();
    for &gpus in &plan.gpu_counts {
        for &algorithm in &plan.algorithms {
            let ordinals = rank_devices(n, gpus, plan.min_ranks_per_gpu, algorithm);
            let multi = MultiGpu::new(&ordinals)?;
            // Keep what a sort frees, as the library kept it for every call until the caller
            // had to ask (issue 50): else every sort maps its buffers anew, which at 2^32 keys
            // made the 4-GPU sort 145 ms instead of ~77 (docs/notes/multi-gpu.md, 2026-11-28).
            multi.keep_freed_memory()?;
            let device = format!("{} x{gpus}", multi.gpu(0).info().name);
            let ranges = even_split(n, ordinals.len());
            let mut inputs = Vec::new();
            for (rank, range) in ranges.iter().enumerate() {
                let stream = multi.gpu(rank).stream();
                let buf = unsafe { stream.alloc::<u32>(range.len().max(1)) }
                    .with_context(|| format!("allocating rank {rank}'s input"))?;
                inputs.push(buf);
            }
            let mut times = Vec::new();
            for rep in 0..=repeats {
                // Fresh keys each repeat; the same keys for every GPU count.
                let mut hash_in = 0u64;
                for (rank, (buf, range)) in inputs.iter_mut().zip(&ranges).enumerate() {
                    let gpu = multi.gpu(rank);
                    let mut keys = buf.slice_mut(0..range.len());
                    fill_random(
                        gpu,
                        &mut keys,
                        range.start as u64,
                        seed.wrapping_add(rep as u64),
                    )?;
                    hash_in = hash_in.wrapping_add(checksum(gpu, &buf.slice(0..range.len()))?.0);
                }
                let views: Vec<_> = inputs
                    .iter()
                    .zip(&ranges)
                    .map(|(b, r)| b.slice(0..r.len()))
                    .collect();
                let start = Instant::now();
                let sorted = multi.sort_shards(&views, Order::Ascending, algorithm)?;
                let ms = start.elapsed().as_secs_f64() * 1e3;
                check_result(&multi, &sorted, hash_in, n)?;
                if rep > 0 {
                    times.push(ms); // repeat 0 is the warm-up
                }
                log(&format!(
                    "{gpus} GPU(s), {} ranks, {algorithm:?}: {ms:.1} ms",
                    ordinals.len()
                ));
            }
            let (median_ms, min_ms, max_ms) = summarize(&mut times);
            rows.push(ScalingRow {
                gpus,
                ranks: ordinals.len(),
                algorithm: algorithm_name(algorithm).into(),
                device,
                commit: commit.into(),
                date: date.into(),
                n: n as u64,
                median_ms,
                min_ms,
                max_ms,
                repeats,
                speedup: None,
            });
        }
    }
    let best_single = rows
        .iter()
        .filter(|r| r.gpus == 1)
        .map(|r| r.median_ms)
        .min_by(f64::total_cmp);
    for row in &mut rows {
        row.speedup = best_single.map(|t| t / row.median_ms);
    }
    Ok(rows)
}

pub fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::MergeSplit => "merge-split",
        Algorithm::Partition => "partition",
    }
}

/// The sorted shards hold the input's keys (same hash sum, same count), each in order, and
/// each shard's first key is at least the previous shard's last.
fn check_result(
    multi: &MultiGpu,
    sorted: &[DeviceShard<u32>],
    hash_in: u64,
    n: usize,
) -> Result<()> {
    let mut hash = 0u64;
    let mut count = 0;
    let mut previous_last: Option<u32> = None;
    for (rank, shard) in sorted.iter().enumerate() {
        let gpu = multi.gpu(rank);
        let keys = shard.view();
        let (h, descents) = checksum(gpu, &keys)?;
        if descents != 0 {
            bail!("benchmark result is not sorted: rank {rank} has {descents} descents");
        }
        hash = hash.wrapping_add(h);
        count += shard.len();
        if let Some((first, last)) = ends(gpu, &keys)? {
            if previous_last.is_some_and(|p| p > first) {
                bail!(
                    "benchmark result is not sorted: rank {rank} starts below rank {}'s end",
                    rank - 1
                );
            }
            previous_last = Some(last);
        }
    }
    if count != n || hash != hash_in {
        bail!("benchmark result is not sorted: {count} keys of {n} came back, or other keys");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_for_large_inputs() {
        let big = 1usize << 32;
        assert_eq!(rank_devices(big, 1, 1, Algorithm::MergeSplit), vec![0, 0]);
        assert_eq!(rank_devices(big, 2, 1, Algorithm::MergeSplit), vec![0, 1]);
        assert_eq!(rank_devices(big, 1, 1, Algorithm::Partition), vec![0, 0, 0]);
        assert_eq!(
            rank_devices(big, 2, 1, Algorithm::Partition),
            vec![0, 1, 0, 1]
        );
        assert_eq!(
            rank_devices(big, 4, 1, Algorithm::Partition),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            rank_devices(1000, 4, 1, Algorithm::MergeSplit),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            rank_devices(1000, 1, 4, Algorithm::Partition),
            vec![0, 0, 0, 0]
        );
        assert_eq!(rank_devices(big, 1, 2, Algorithm::Partition), vec![0, 0, 0]);
    }

    #[test]
    fn scaling_csv_round_trip() {
        let row = ScalingRow {
            gpus: 2,
            ranks: 2,
            algorithm: "merge-split".into(),
            device: "NVIDIA H200 x2".into(),
            commit: "abc".into(),
            date: "2026-11-22".into(),
            n: 1 << 32,
            median_ms: 300.5,
            min_ms: 299.0,
            max_ms: 301.0,
            repeats: 5,
            speedup: Some(1.95),
        };
        assert_eq!(ScalingRow::from_csv(&row.to_csv()).unwrap(), row);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("multi_gpu.csv");
        write_scaling_csv(&path, std::slice::from_ref(&row)).unwrap();
        assert_eq!(read_scaling_csv(&path).unwrap(), vec![row]);
    }
}
