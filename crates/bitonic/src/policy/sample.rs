//! Sampling: how many blocks share a row, beyond what filling the GPU and fitting a slice
//! in shared memory ask for.

/// The tuning of the sampling kernel (kernels/sample.cu; its plan in src/plan/sample.rs).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplePolicy {
    /// Blocks an SM holds at once where the grid takes more than one wave: the plan cuts each
    /// row into more slices (up to `most_blocks_a_row`) until this many blocks, each with its
    /// slice and its own shared memory, fit in one SM's shared memory (and not at all where no
    /// such cut makes them fit). Two blocks overlap one's
    /// reading of its row with the other's passes over its slice, at the cost of more blocks
    /// a row (more cluster barriers, more histograms to combine).
    pub blocks_per_sm: u32,
    /// The most blocks that share a row: 1, 2, 4, 8 or 16. A row grows to this many blocks
    /// while the grid has fewer blocks than SMs (small batches: the most SMs a row), or while
    /// its slice does not fit. 16 is a cluster size beyond the portable 8, which the call
    /// asks the driver for and falls back from (to 8) where the device does not run it.
    pub most_blocks_a_row: u32,
    /// The same bound for a call of one row that selects no top-k (a single sequence's decode
    /// step, where the row's latency is the call's): 1, 2, 4, 8 or 16.
    pub most_blocks_one_row: u32,
}

impl SamplePolicy {
    /// Hopper's numbers. Two blocks an SM, measured on an H200 against one
    /// (docs/results/2026-11-28-da1b380-h200x2, `bitonic bench-sample`): 12–18% faster for
    /// top-p and 6–15% for min-p at 64 and 256 rows of 128,256 logits, 4% slower for top-k +
    /// top-p there (its later steps scan short lists, so the first pass's overlap gains less
    /// than the cluster's doubled barriers cost). Clusters of 16 blocks against 8 (H200,
    /// docs/results/2026-11-29-b7bbd19-h200-sixteen): one row of 128,256 or 151,936 logits
    /// 0.82–0.83 of the time for min-p and 0.90–0.94 for top-p, but 1.08–1.09 for top-k +
    /// top-p (its three rounds of counts pay the larger cluster's barriers); eight rows
    /// 1.05–1.09 for min-p and 1.18–1.20 for top-k + top-p. So 16 for one row without top-k.
    pub const HOPPER: SamplePolicy = SamplePolicy {
        blocks_per_sm: 2,
        most_blocks_a_row: 8,
        most_blocks_one_row: 16,
    };

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=4).contains(&self.blocks_per_sm) {
            return Err(format!(
                "sample.blocks_per_sm is 1 to 4, not {}",
                self.blocks_per_sm
            ));
        }
        for (name, blocks) in [
            ("most_blocks_a_row", self.most_blocks_a_row),
            ("most_blocks_one_row", self.most_blocks_one_row),
        ] {
            if !(blocks.is_power_of_two() && blocks <= 16) {
                return Err(format!("sample.{name} is 1, 2, 4, 8 or 16, not {blocks}"));
            }
        }
        Ok(())
    }
}
