//! Explicit tuning for A/B runs: a [`Policy`] built from the device's own with some numbers
//! changed, named on the command line as `key=value,…` (`bitonic bench --policy
//! tile_bytes=32768,max_cluster_blocks=8`). The library never reads such switches itself.

use anyhow::{bail, Context as _, Result};
use bitonic::Policy;

/// A policy number that `--policy` may set: its name, and how it is written into a [`Policy`].
type Number = (&'static str, fn(&mut Policy, usize));

/// Every policy number `--policy` names, in [`Policy`]'s order: one line a number, which the
/// parser and the error listing the names both read.
const NUMBERS: &[Number] = &[
    ("tile_bytes", |p, v| p.tile_bytes = v),
    ("spread_tile_bits", |p, v| p.spread_tile_bits = v as u32),
    ("max_cluster_blocks", |p, v| p.max_cluster_blocks = v as u32),
    ("narrow_small_u32", |p, v| p.narrow_small_u32 = v != 0),
    ("merge_sort_above", |p, v| p.merge_sort_above = v),
    ("merge_ways", |p, v| p.merge_ways = v as u32),
    ("wide_merge_ways", |p, v| p.wide_merge_ways = v as u32),
    ("topk_filter_above", |p, v| p.topk_filter_above = v),
    ("topk_long_radix_max_k", |p, v| p.topk_long_radix_max_k = v),
    ("topk_radix_per_thread", |p, v| p.topk_radix_per_thread = v),
    ("topk_radix_blocks_per_sm", |p, v| {
        p.topk_radix_blocks_per_sm = v
    }),
    ("topk_radix_stream_chunks", |p, v| {
        p.topk_radix_stream_chunks = v
    }),
    ("topk_radix_stream_min_k", |p, v| {
        p.topk_radix_stream_min_k = v
    }),
    ("topk_radix_stream_max_k", |p, v| {
        p.topk_radix_stream_max_k = v
    }),
    ("topk_warp_sort_rows_up_to", |p, v| {
        p.topk_warp_sort_rows_up_to = v
    }),
    ("topk_warp_sort_min_k_32", |p, v| {
        p.topk_warp_sort_min_k_32 = v
    }),
    ("topk_warp_sort_min_k_16", |p, v| {
        p.topk_warp_sort_min_k_16 = v
    }),
    ("topk_sampled_min_k", |p, v| p.topk_sampled_min_k = v),
    ("topk_sampled_max_k", |p, v| p.topk_sampled_max_k = v),
    ("topk_sampled_min_chunk", |p, v| {
        p.topk_sampled_min_chunk = v
    }),
    ("topk_spread_min_len", |p, v| p.topk_spread_min_len = v),
    ("topk_spread_min_rows", |p, v| p.topk_spread_min_rows = v),
    ("topk_spread_sample_blocks_32", |p, v| {
        p.topk_spread_sample_blocks_32 = v
    }),
    ("topk_spread_sample_blocks_16", |p, v| {
        p.topk_spread_sample_blocks_16 = v
    }),
    ("topk_warp_filter_max_k", |p, v| {
        p.topk_warp_filter_max_k = v
    }),
];

/// `base` with the overrides of `spec` (`key=value`, comma-separated; empty: `base`).
pub fn with_overrides(mut base: Policy, spec: &str) -> Result<Policy> {
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item
            .split_once('=')
            .with_context(|| format!("{item:?} is not key=value"))?;
        let key = key.trim();
        let Some((_, set)) = NUMBERS.iter().find(|(name, _)| *name == key) else {
            let names: Vec<&str> = NUMBERS.iter().map(|(name, _)| *name).collect();
            bail!("{key:?} is not a policy number ({})", names.join(", "));
        };
        let number = value
            .trim()
            .parse()
            .with_context(|| format!("{key}: {value:?} is not a number"))?;
        set(&mut base, number);
    }
    if !base.tile_bytes.is_power_of_two() || !base.max_cluster_blocks.is_power_of_two() {
        bail!("tile_bytes and max_cluster_blocks must be powers of two");
    }
    if !base.merge_ways_supported() {
        bail!("merge_ways and wide_merge_ways are 2, 4, 8, 16 or 32");
    }
    if !Policy::TOPK_RADIX_PER_THREAD.contains(&base.topk_radix_per_thread) {
        bail!("topk_radix_per_thread is 16 or 32");
    }
    if base.topk_radix_stream_chunks == 0 {
        bail!("topk_radix_stream_chunks is at least 1");
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_change_only_what_they_name() {
        let base = Policy::HOPPER;
        let p = with_overrides(base.clone(), "tile_bytes=32768, merge_sort_above=1048576").unwrap();
        assert_eq!((p.tile_bytes, p.merge_sort_above), (32768, 1 << 20));
        assert_eq!(p.max_cluster_blocks, base.max_cluster_blocks);
        assert_eq!(with_overrides(base.clone(), "").unwrap(), base);
        assert!(with_overrides(base.clone(), "tile_bits=3").is_err());
        assert!(with_overrides(base.clone(), "tile_bytes=1000").is_err());
        assert!(with_overrides(base.clone(), "tile_bytes").is_err());
        let p = with_overrides(base.clone(), "wide_merge_ways=4").unwrap();
        assert_eq!((p.merge_ways, p.wide_merge_ways), (base.merge_ways, 4));
        assert!(with_overrides(base.clone(), "wide_merge_ways=6").is_err());
        let unknown = with_overrides(base, "tile_bits=3").unwrap_err().to_string();
        assert!(unknown.contains("topk_warp_filter_max_k)"), "{unknown}");
    }
}
