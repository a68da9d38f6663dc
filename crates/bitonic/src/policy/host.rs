//! Host slices through the GPU: when `Sorter::sort_large` pipelines the copies with the sorts.

/// The tuning of the host path (src/sorter/out_of_core.rs; its plan in
/// src/plan/out_of_core.rs, docs/design/out-of-core.md).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPolicy {
    /// Keys (of 4 or 8 bytes) from which `Sorter::sort_large` pipelines a sort that one
    /// in-memory GPU sort could take: the keys go up in `pipeline_runs` runs, each sorted while
    /// the next goes up, and come down in `pipeline_pieces` pieces, each going down while the
    /// next is made (the schedule of keys that do not fit one sort). `usize::MAX`: never.
    pub pipeline_from: usize,
    /// Runs of a pipelined sort: the last run's sort is not hidden behind a copy.
    pub pipeline_runs: usize,
    /// Pieces of a pipelined sort: the first piece's sort is not hidden behind a copy.
    pub pipeline_pieces: usize,
}

impl HostPolicy {
    /// Hopper's numbers.
    pub const HOPPER: HostPolicy = HostPolicy {
        pipeline_from: 1 << 26,
        pipeline_runs: 4,
        pipeline_pieces: 16,
    };

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.pipeline_runs < 2 || self.pipeline_pieces < 1 {
            return Err(format!(
                "host.pipeline_runs is at least 2 ({}) and host.pipeline_pieces at least 1 ({})",
                self.pipeline_runs, self.pipeline_pieces
            ));
        }
        Ok(())
    }
}
