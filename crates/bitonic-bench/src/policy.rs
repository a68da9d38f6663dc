//! Explicit tuning for A/B runs: a [`Policy`] built from the device's own with some numbers
//! changed, named on the command line as `algorithm.number=value,…` (`bitonic bench --policy
//! sort.tile_bytes=32768,merge.ways=16`). The library never reads such switches itself; it
//! refuses a policy that [`Policy::validate`] does not pass.

use anyhow::{bail, Context as _, Result};
use bitonic::Policy;

/// A policy number that `--policy` may set: its name, and how it is written into a [`Policy`].
type Number = (&'static str, fn(&mut Policy, usize));

/// The [`Number`] of the field `$field` of the policy of `$algorithm`, named
/// `algorithm.field` (`as $ty` where the field is narrower than `usize`, `as bool` for flags
/// given as 0 or 1).
macro_rules! number {
    ($algorithm:ident . $field:ident) => {
        (
            concat!(stringify!($algorithm), ".", stringify!($field)),
            |p, v| p.$algorithm.$field = v,
        )
    };
    ($algorithm:ident . $field:ident as bool) => {
        (
            concat!(stringify!($algorithm), ".", stringify!($field)),
            |p, v| p.$algorithm.$field = v != 0,
        )
    };
    ($algorithm:ident . $field:ident as $ty:ty) => {
        (
            concat!(stringify!($algorithm), ".", stringify!($field)),
            |p, v| p.$algorithm.$field = v as $ty,
        )
    };
}

/// Every policy number `--policy` names, in [`Policy`]'s order: one line a number, which the
/// parser and the error listing the names both read.
const NUMBERS: &[Number] = &[
    number!(sort.tile_bytes),
    number!(sort.spread_tile_bits as u32),
    number!(sort.max_cluster_blocks as u32),
    number!(sort.narrow_small_u32 as bool),
    number!(sort.wide_half_tiles as bool),
    number!(merge.above),
    number!(merge.wide_above),
    number!(merge.tile),
    number!(merge.threads as u32),
    number!(merge.kv_tile),
    number!(merge.ways as u32),
    number!(merge.wide_ways as u32),
    number!(merge.fold_ways as u32),
    number!(merge.wide_run_bits as u32),
    number!(merge.wide_run_bits_above),
    number!(topk.filter_above),
    number!(topk.long_radix_max_k),
    number!(topk.radix_per_thread),
    number!(topk.radix_blocks_per_sm),
    number!(topk.radix_stream_chunks),
    number!(topk.radix_stream_min_k),
    number!(topk.radix_stream_max_k),
    number!(topk.sampled_min_k),
    number!(topk.sampled_max_k),
    number!(topk.sampled_min_chunk),
    number!(topk.spread_min_len),
    number!(topk.spread_min_rows),
    number!(topk.spread_sample_blocks),
    number!(topk.warp_sort_rows_up_to),
    number!(topk.warp_sort_min_k_32),
    number!(topk.warp_sort_min_k_16),
    number!(topk.warp_filter_max_k),
    number!(multi.samples_per_rank),
    number!(sample.blocks_per_sm as u32),
    number!(radix.from_row_len),
    number!(radix.keys_from_row_len),
    number!(radix.keys_pow2_from_row_len),
    number!(radix.one_block_most),
    number!(radix.tile),
    number!(radix.tile_threads as u32),
    number!(host.pipeline_from),
    number!(host.pipeline_runs),
    number!(host.pipeline_pieces),
];

/// `base` with the overrides of `spec` (`algorithm.number=value`, comma-separated; empty:
/// `base`), checked by [`Policy::validate`].
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
    base.validate()?;
    Ok(base)
}

/// The device's own policy changed by `spec` ([`with_overrides`]), and the name of the rows it
/// measures: `base`, or `base[spec]` in an A/B run.
pub fn for_rows(gpu: &bitonic::Gpu, base: &str, spec: &str) -> Result<(Policy, String)> {
    let policy = with_overrides(gpu.policy(), spec)?;
    let name = match spec.trim() {
        "" => base.to_string(),
        spec => format!("{base}[{spec}]"),
    };
    Ok((policy, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_change_only_what_they_name() {
        let base = Policy::HOPPER;
        let p = with_overrides(base.clone(), "sort.tile_bytes=32768, merge.above=1048576").unwrap();
        assert_eq!((p.sort.tile_bytes, p.merge.above), (32768, 1 << 20));
        assert_eq!(p.sort.max_cluster_blocks, base.sort.max_cluster_blocks);
        assert_eq!(with_overrides(base.clone(), "").unwrap(), base);
        assert!(with_overrides(base.clone(), "sort.tile_bytes=1000").is_err());
        assert!(with_overrides(base.clone(), "sort.tile_bytes").is_err());
        let p = with_overrides(base.clone(), "merge.wide_ways=4").unwrap();
        assert_eq!((p.merge.ways, p.merge.wide_ways), (base.merge.ways, 4));
        assert!(with_overrides(base.clone(), "merge.wide_ways=6").is_err());
        let p = with_overrides(base.clone(), "sort.narrow_small_u32=0").unwrap();
        assert!(!p.sort.narrow_small_u32);
        let p = with_overrides(base.clone(), "sample.blocks_per_sm=1").unwrap();
        assert_eq!(p.sample.blocks_per_sm, 1);
        assert!(with_overrides(base.clone(), "sample.blocks_per_sm=0").is_err());
        let p = with_overrides(base.clone(), "host.pipeline_from=18446744073709551615").unwrap();
        assert_eq!(p.host.pipeline_from, usize::MAX);
        assert!(with_overrides(base.clone(), "host.pipeline_runs=1").is_err());
        let unknown = with_overrides(base, "tile_bits=3").unwrap_err().to_string();
        assert!(
            unknown.contains(
                "radix.tile_threads, host.pipeline_from, host.pipeline_runs, host.pipeline_pieces)"
            ),
            "{unknown}"
        );
    }
}
