//! Sampling: how many blocks share a row, beyond what filling the GPU and fitting a slice
//! in shared memory ask for.

/// The tuning of the sampling kernel (kernels/sample.cu; its plan in src/plan/sample.rs).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplePolicy {
    /// Blocks an SM holds at once where the grid takes more than one wave: the plan cuts each
    /// row into more slices (up to a cluster of 8) until this many blocks, each with its slice
    /// and its own shared memory, fit in one SM's shared memory (and not at all where no cut
    /// of 8 slices or fewer makes them fit). Two blocks overlap one's
    /// reading of its row with the other's passes over its slice, at the cost of more blocks
    /// a row (more cluster barriers, more histograms to combine).
    pub blocks_per_sm: u32,
}

impl SamplePolicy {
    /// Hopper's numbers. Two blocks an SM, measured on an H200 against one
    /// (docs/results/2026-11-28-da1b380-h200x2, `bitonic bench-sample`): 12–18% faster for
    /// top-p and 6–15% for min-p at 64 and 256 rows of 128,256 logits, 4% slower for top-k +
    /// top-p there (its later steps scan short lists, so the first pass's overlap gains less
    /// than the cluster's doubled barriers cost).
    pub const HOPPER: SamplePolicy = SamplePolicy { blocks_per_sm: 2 };

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=4).contains(&self.blocks_per_sm) {
            return Err(format!(
                "sample.blocks_per_sm is 1 to 4, not {}",
                self.blocks_per_sm
            ));
        }
        Ok(())
    }
}
