//! Tuning per GPU architecture, one small policy per algorithm: the tuned network's passes
//! ([`SortPolicy`]), the merge sorts ([`MergePolicy`]), the top-k selections ([`TopkPolicy`]),
//! the sorts across GPUs ([`MultiGpuPolicy`]), sampling ([`SamplePolicy`]), the radix sorts
//! ([`RadixPolicy`]) and host slices through the GPU ([`HostPolicy`]).
//!
//! Every number here was measured (docs/notes/ tells how; docs/design/ what each does); none is
//! read from the environment. [`Policy::for_device`] picks the policy of a device's
//! architecture. A benchmark that compares two settings changes a copy and hands it to
//! [`crate::Sorter::policy`]; the plan refuses one that [`Policy::validate`] does not pass.
//! The policies are the only source of the numbers the kernels are compiled with
//! ([`crate::cuda::kernel_defines`]), so host and kernels cannot disagree.

mod host;
mod merge;
mod multi;
mod radix;
mod sample;
mod sort;
mod topk;

pub use host::HostPolicy;
pub use merge::MergePolicy;
pub use multi::MultiGpuPolicy;
pub use radix::RadixPolicy;
pub use sample::SamplePolicy;
pub use sort::SortPolicy;
pub use topk::TopkPolicy;

use crate::device::DeviceInfo;

/// The tuning of every algorithm for one GPU architecture.
///
/// ```
/// let mut policy = bitonic::Policy::for_compute_capability(9, 0);
/// assert_eq!(policy.sort.tile_bits(4), 14); // 64 KiB tiles: 2^14 u32 keys
/// let ampere = bitonic::Policy::for_compute_capability(8, 0);
/// assert_eq!(ampere.sort.max_cluster_blocks, 1); // no thread-block clusters before sm_90
/// policy.merge.ways = 3; // a benchmark's change: the plan refuses it
/// assert!(policy.validate().is_err());
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The tuned network's passes.
    pub sort: SortPolicy,
    /// The merge sort and the key-value merge sort.
    pub merge: MergePolicy,
    /// The top-k selections.
    pub topk: TopkPolicy,
    /// The sorts across GPUs.
    pub multi: MultiGpuPolicy,
    /// Sampling.
    pub sample: SamplePolicy,
    /// The radix sorts (with indices, and of long rows of keys alone).
    pub radix: RadixPolicy,
    /// Host slices through the GPU.
    pub host: HostPolicy,
}

impl Policy {
    /// Hopper (sm_90) and later: tuned and measured on the H100 and the H200.
    pub const HOPPER: Policy = Policy {
        sort: SortPolicy::HOPPER,
        merge: MergePolicy::HOPPER,
        topk: TopkPolicy::HOPPER,
        multi: MultiGpuPolicy::HOPPER,
        sample: SamplePolicy::HOPPER,
        radix: RadixPolicy::HOPPER,
        host: HostPolicy::HOPPER,
    };

    /// Ampere and Ada (sm_80 … sm_89): Hopper's numbers without thread-block clusters, which
    /// need sm_90. Not measured on such a GPU.
    pub const AMPERE: Policy = Policy {
        sort: SortPolicy {
            max_cluster_blocks: 1,
            ..SortPolicy::HOPPER
        },
        ..Policy::HOPPER
    };

    /// The policy of the architecture `sm_{major}{minor}`.
    pub fn for_compute_capability(major: i32, _minor: i32) -> Policy {
        if major >= 9 {
            Policy::HOPPER
        } else {
            Policy::AMPERE
        }
    }

    /// The policy of an architecture named as NVRTC names it (`sm_90`), or `None` when
    /// [`crate::parse_arch`] does not read it.
    pub fn for_arch(arch: &str) -> Option<Policy> {
        crate::device::parse_arch(arch)
            .map(|(major, minor)| Policy::for_compute_capability(major, minor))
    }

    /// The policy of `device`'s architecture.
    pub fn for_device(device: &DeviceInfo) -> Policy {
        let (major, minor) = device.compute_capability;
        Policy::for_compute_capability(major, minor)
    }

    /// Why this policy cannot run, if it cannot: every algorithm's [`SortPolicy::validate`],
    /// [`MergePolicy::validate`], [`TopkPolicy::validate`], [`MultiGpuPolicy::validate`],
    /// [`SamplePolicy::validate`] and [`RadixPolicy::validate`].
    pub fn validate(&self) -> Result<(), crate::Error> {
        self.sort
            .validate()
            .and_then(|()| self.merge.validate())
            .and_then(|()| self.topk.validate())
            .and_then(|()| self.multi.validate())
            .and_then(|()| self.sample.validate())
            .and_then(|()| self.radix.validate())
            .and_then(|()| self.host.validate())
            .map_err(crate::Error::InvalidPolicy)
    }

    /// log2 of the runs a merge sort of `n` words of `word_bytes` starts from: a tile's, or for
    /// more than [`MergePolicy::wide_run_bits_above`] 8-byte words
    /// [`MergePolicy::wide_run_bits`] where that is less — but at least half a merge tile,
    /// which the merge levels need.
    pub fn merge_run_bits(&self, word_bytes: usize, n: usize) -> u32 {
        let tile = self.sort.tile_bits(word_bytes);
        if word_bytes != 8 || n <= self.merge.wide_run_bits_above {
            return tile;
        }
        let half_merge_tile = self.merge.tile_of(word_bytes).ilog2().saturating_sub(1);
        tile.min(self.merge.wide_run_bits.max(half_merge_tile))
    }

    /// The numbers of this policy that the kernels are compiled with: two policies that agree
    /// on them share compiled kernels.
    pub fn kernel_variant(&self) -> KernelVariant {
        KernelVariant {
            tile_bytes: self.sort.tile_bytes,
            merge_tile: self.merge.tile,
            merge_threads: self.merge.threads,
            kv_merge_tile: self.merge.kv_tile,
        }
    }

    /// The `-D` defines of every algorithm's numbers that the kernels share with the host.
    pub(crate) fn defines(&self) -> Vec<(&'static str, String)> {
        let mut defines = self.sort.defines();
        defines.extend(self.merge.defines());
        defines.extend(self.topk.defines());
        defines.extend(self.radix.defines());
        defines
    }
}

/// The numbers of a [`Policy`] that the kernels are compiled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelVariant {
    tile_bytes: usize,
    merge_tile: usize,
    merge_threads: u32,
    kv_merge_tile: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_of_each_word_size() {
        let p = Policy::HOPPER;
        let bits = |w| p.sort.tile_bits(w);
        assert_eq!((bits(4), bits(8), bits(16)), (14, 13, 12));
        assert_eq!((p.merge.tile_of(8), p.merge.tile_of(16)), (4096, 2048));
        assert_eq!((p.merge.kv_tile_of(4), p.merge.kv_tile_of(8)), (2048, 2048));
        // Merge sorts of 8-byte keys start from runs of half a tile above 2^21 keys; never
        // below half a merge tile, never above a tile.
        let big = 1 << 22;
        assert_eq!(
            (p.merge_run_bits(4, big), p.merge_run_bits(8, big)),
            (14, 12)
        );
        assert_eq!(p.merge_run_bits(8, 1 << 21), 13);
        let with = |bits| {
            let mut p = Policy::HOPPER;
            p.merge.wide_run_bits = bits;
            p
        };
        assert_eq!(
            (
                with(3).merge_run_bits(8, big),
                with(20).merge_run_bits(8, big)
            ),
            (11, 13)
        );
        // The merge kernels hold 16 words a thread (8 for 16-byte words).
        assert_eq!(p.merge.tile / p.merge.threads as usize, 16);
    }

    #[test]
    fn architectures() {
        assert_eq!(Policy::for_compute_capability(9, 0), Policy::HOPPER);
        assert_eq!(Policy::for_compute_capability(10, 0), Policy::HOPPER);
        assert_eq!(
            Policy::for_compute_capability(8, 6).sort.max_cluster_blocks,
            1
        );
    }

    #[test]
    fn validation_names_what_cannot_run() {
        assert!(Policy::HOPPER.validate().is_ok() && Policy::AMPERE.validate().is_ok());
        let refused = |change: fn(&mut Policy), field: &str| {
            let mut p = Policy::HOPPER;
            change(&mut p);
            let why = p.validate().expect_err(field).to_string();
            assert!(why.contains(field), "{why}");
        };
        refused(|p| p.merge.ways = 3, "merge.ways");
        refused(|p| p.merge.wide_ways = 64, "merge.wide_ways");
        refused(|p| p.merge.tile = 1000, "merge.tile");
        refused(|p| p.merge.kv_tile = 1 << 14, "merge.kv_tile");
        refused(|p| p.sort.tile_bytes = 1000, "sort.tile_bytes");
        refused(|p| p.sort.max_cluster_blocks = 3, "sort.max_cluster_blocks");
        refused(|p| p.topk.radix_per_thread = 8, "topk.radix_per_thread");
        refused(
            |p| p.topk.radix_stream_chunks = 0,
            "topk.radix_stream_chunks",
        );
        refused(
            |p| p.topk.spread_sample_blocks = 3,
            "topk.spread_sample_blocks",
        );
        refused(|p| p.multi.samples_per_rank = 0, "multi.samples_per_rank");
        // Any k may take the warp filter: past what it keeps, the warp sorts the row.
        let mut every_k = Policy::HOPPER;
        every_k.topk.warp_filter_max_k = usize::MAX;
        every_k.validate().unwrap();
    }
}
