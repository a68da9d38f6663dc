//! Explicit tuning for A/B runs: a [`Policy`] built from the device's own with some numbers
//! changed, named on the command line as `key=value,…` (`bitonic bench --policy
//! tile_bytes=32768,max_cluster_blocks=8`). The library never reads such switches itself.

use anyhow::{bail, Context as _, Result};
use bitonic::Policy;

/// `base` with the overrides of `spec` (`key=value`, comma-separated; empty: `base`).
pub fn with_overrides(mut base: Policy, spec: &str) -> Result<Policy> {
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item
            .split_once('=')
            .with_context(|| format!("{item:?} is not key=value"))?;
        let number = || -> Result<usize> {
            value
                .trim()
                .parse()
                .with_context(|| format!("{key}: {value:?} is not a number"))
        };
        match key.trim() {
            "tile_bytes" => base.tile_bytes = number()?,
            "spread_tile_bits" => base.spread_tile_bits = number()? as u32,
            "max_cluster_blocks" => base.max_cluster_blocks = number()? as u32,
            "narrow_small_u32" => base.narrow_small_u32 = number()? != 0,
            "merge_sort_above" => base.merge_sort_above = number()?,
            "merge_ways" => base.merge_ways = number()? as u32,
            "wide_merge_ways" => base.wide_merge_ways = number()? as u32,
            "topk_filter_above" => base.topk_filter_above = number()?,
            "topk_long_radix_max_k" => base.topk_long_radix_max_k = number()?,
            "topk_radix_per_thread" => base.topk_radix_per_thread = number()?,
            "topk_radix_blocks_per_sm" => base.topk_radix_blocks_per_sm = number()?,
            "topk_radix_stream_chunks" => base.topk_radix_stream_chunks = number()?,
            "topk_radix_stream_min_k" => base.topk_radix_stream_min_k = number()?,
            "topk_radix_stream_max_k" => base.topk_radix_stream_max_k = number()?,
            "topk_warp_sort_rows_up_to" => base.topk_warp_sort_rows_up_to = number()?,
            "topk_warp_sort_min_k_32" => base.topk_warp_sort_min_k_32 = number()?,
            "topk_warp_sort_min_k_16" => base.topk_warp_sort_min_k_16 = number()?,
            "topk_sampled_min_k" => base.topk_sampled_min_k = number()?,
            "topk_sampled_max_k" => base.topk_sampled_max_k = number()?,
            "topk_sampled_min_chunk" => base.topk_sampled_min_chunk = number()?,
            other => bail!(
                "{other:?} is not a policy number (tile_bytes, spread_tile_bits, \
                 max_cluster_blocks, narrow_small_u32, merge_sort_above, merge_ways, \
                 wide_merge_ways, topk_filter_above, topk_long_radix_max_k, topk_radix_per_thread, \
                 topk_radix_blocks_per_sm, topk_radix_stream_chunks, topk_radix_stream_min_k, \
                 topk_radix_stream_max_k, topk_warp_sort_rows_up_to, topk_warp_sort_min_k_32, \
                 topk_warp_sort_min_k_16, topk_sampled_min_k, topk_sampled_max_k, \
                 topk_sampled_min_chunk)"
            ),
        }
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
        assert!(with_overrides(base, "wide_merge_ways=6").is_err());
    }
}
