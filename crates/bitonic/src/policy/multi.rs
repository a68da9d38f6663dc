//! The sort across GPUs: how the partition samples its splitters.

/// The tuning of the sorts across GPUs (src/cuda/multi, and the same schedules over simulated
/// ranks in src/multi). docs/design/multi-gpu.md tells how they run.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiGpuPolicy {
    /// Samples a rank offers for the partition's splitters, on average. A bucket exceeds its
    /// share by about one gap between samples of each rank, `ranks / samples_per_rank` of the
    /// share, and the slowest rank sets the pace of the merges.
    pub samples_per_rank: usize,
}

impl MultiGpuPolicy {
    /// Hopper's numbers, measured on 4 H200s.
    pub const HOPPER: MultiGpuPolicy = MultiGpuPolicy {
        samples_per_rank: 1024,
    };

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.samples_per_rank == 0 {
            return Err("multi.samples_per_rank is at least 1".into());
        }
        Ok(())
    }
}
