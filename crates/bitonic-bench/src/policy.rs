//! Explicit tuning for A/B runs: a [`Policy`] built from the device's own with some numbers
//! changed, named on the command line as `key=value,…` (`bitonic bench --policy
//! tile_bytes=32768,max_cluster_blocks=8`). The library never reads such switches itself.

use anyhow::{bail, Context as _, Result};
use bitonic::Policy;

/// A policy number that `--policy` may set: its name, and how it is written into a [`Policy`].
type Number = (&'static str, fn(&mut Policy, usize));

/// The [`Number`] of the [`Policy`] field `$field`, named as the field (`as $ty` where the
/// field is narrower than `usize`).
macro_rules! number {
    ($field:ident) => {
        (stringify!($field), |p, v| p.$field = v)
    };
    ($field:ident as $ty:ty) => {
        (stringify!($field), |p, v| p.$field = v as $ty)
    };
}

/// Every policy number `--policy` names, in [`Policy`]'s order: one line a number, which the
/// parser and the error listing the names both read.
const NUMBERS: &[Number] = &[
    number!(tile_bytes),
    number!(spread_tile_bits as u32),
    number!(max_cluster_blocks as u32),
    ("narrow_small_u32", |p, v| p.narrow_small_u32 = v != 0),
    number!(merge_sort_above),
    number!(wide_merge_sort_above),
    number!(merge_tile),
    number!(merge_threads as u32),
    number!(kv_merge_tile),
    number!(merge_ways as u32),
    number!(wide_merge_ways as u32),
    number!(fold_ways as u32),
    number!(wide_merge_run_bits as u32),
    ("wide_half_tiles", |p, v| p.wide_half_tiles = v != 0),
    number!(wide_merge_run_bits_above),
    number!(topk_filter_above),
    number!(topk_long_radix_max_k),
    number!(topk_radix_per_thread),
    number!(topk_radix_blocks_per_sm),
    number!(topk_radix_stream_chunks),
    number!(topk_radix_stream_min_k),
    number!(topk_radix_stream_max_k),
    number!(topk_sampled_min_k),
    number!(topk_sampled_max_k),
    number!(topk_sampled_min_chunk),
    number!(topk_spread_min_len),
    number!(topk_spread_min_rows),
    number!(topk_spread_sample_blocks),
    number!(topk_warp_sort_rows_up_to),
    number!(topk_warp_sort_min_k_32),
    number!(topk_warp_sort_min_k_16),
    number!(topk_warp_filter_max_k),
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
    let threads = base.merge_threads.max(1) as usize;
    let fits = |tile: usize| tile.is_power_of_two() && (8..=32).contains(&(tile / threads));
    if !base.merge_threads.is_power_of_two() || !fits(base.merge_tile) || !fits(base.kv_merge_tile)
    {
        bail!(
            "merge_tile, kv_merge_tile and merge_threads are powers of two, 8 to 32 words a thread"
        );
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
