//! Sampling: how many blocks share a row, beyond what filling the GPU and fitting a slice
//! in shared memory ask for.

/// The tuning of the sampling kernel (kernels/sample.cu; its plan in src/plan/sample.rs).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplePolicy {
    /// Blocks an SM holds at once where the grid takes more than one wave: the plan cuts each
    /// row into more slices (up to a cluster of 8) until this many blocks, each with its slice
    /// and its own shared memory, fit in one SM's shared memory. Two blocks overlap one's
    /// reading of its row with the other's passes over its slice, at the cost of more blocks
    /// a row (more cluster barriers, more histograms to combine).
    pub blocks_per_sm: u32,
}

impl SamplePolicy {
    /// Hopper's numbers.
    pub const HOPPER: SamplePolicy = SamplePolicy { blocks_per_sm: 1 };

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
