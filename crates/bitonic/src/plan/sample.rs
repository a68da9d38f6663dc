//! The plan of a sampling call on the GPU (src/sample/, kernels/sample.cu): one launch, a
//! row to a thread-block cluster. How many blocks share a row, how long each block's slice
//! is, and whether the slice's keys stay in shared memory follow from the rows, the
//! vocabulary, the device and the [`SamplePolicy`].

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::kernels::abi::{
    SAMPLE_MOST_BLOCKS, SAMPLE_MOST_VOCAB, SAMPLE_STATIC_SHARED, SAMPLE_THREADS,
};
use crate::kernels::{self, KernelModule};
use crate::policy::SamplePolicy;

/// The most blocks a row: the largest cluster every sm_90 device runs (a portable size).
pub const SAMPLE_MOST_BLOCKS_A_ROW: u32 = SAMPLE_MOST_BLOCKS;

/// The most logits a row that the GPU samples: the fixed-point sums of a longer row's
/// weights could pass 2^63 (src/kernels/abi.rs).
pub const SAMPLE_MOST_LOGITS_A_ROW: usize = SAMPLE_MOST_VOCAB - 1;

/// What a sampling call launches: `rows × blocks_a_row` blocks of
/// [`SamplePlan::THREADS`] threads, in clusters of `blocks_a_row`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplePlan {
    /// Rows of logits, a token each.
    pub rows: usize,
    /// Logits a row.
    pub vocab: usize,
    /// Blocks that share a row, as one cluster (1 where the device has no clusters).
    pub blocks_a_row: u32,
    /// Logits a block: the row is cut into `blocks_a_row` slices of this many (the last
    /// shorter).
    pub slice_len: u32,
    /// Whether a block keeps its slice's keys in shared memory, reading the logits once;
    /// otherwise it reads its slice again at each step (through L2).
    pub resident: bool,
    /// Dynamic shared memory a block (the resident keys).
    pub shared_bytes: u32,
}

impl SamplePlan {
    /// Threads a block.
    pub const THREADS: u32 = SAMPLE_THREADS;

    /// The module the plan's kernel is in.
    pub fn modules(&self) -> [&'static KernelModule; 1] {
        [&kernels::SAMPLE]
    }

    /// Blocks in the grid.
    pub fn blocks(&self) -> u32 {
        self.rows as u32 * self.blocks_a_row
    }
}

/// The plan of sampling `rows` rows of `vocab` logits on `device`.
///
/// The blocks a row grow (in powers of two, up to a cluster of
/// [`SAMPLE_MOST_BLOCKS_A_ROW`]) until the grid has a block for every SM, further until a
/// slice's keys fit in what shared memory a block can have beside the kernel's own, and, where
/// the grid has more blocks than SMs, until [`SamplePolicy::blocks_per_sm`] blocks fit in an
/// SM's shared memory together.
pub fn plan_sample(
    rows: usize,
    vocab: usize,
    device: &DeviceInfo,
    policy: &SamplePolicy,
) -> Result<SamplePlan> {
    policy.validate().map_err(Error::InvalidPolicy)?;
    if vocab == 0 || vocab > SAMPLE_MOST_LOGITS_A_ROW {
        return Err(Error::BadSampling(format!(
            "rows of {vocab} logits: the GPU samples rows of 1 to {SAMPLE_MOST_LOGITS_A_ROW} logits"
        )));
    }
    let most = if device.compute_capability.0 >= 9 {
        SAMPLE_MOST_BLOCKS_A_ROW
    } else {
        1 // no clusters before sm_90
    };
    if rows > (i32::MAX as usize) / most as usize {
        return Err(Error::BadSampling(format!(
            "{rows} rows: the GPU samples at most {} rows a call",
            i32::MAX as u32 / most
        )));
    }
    // Shared memory for the keys, beside the kernel's static part and the 1 KiB the system
    // keeps of each block's.
    let room = device
        .shared_per_block_optin
        .saturating_sub(SAMPLE_STATIC_SHARED + 1024);
    let slice_bytes = |blocks: u32| vocab.div_ceil(blocks as usize) * 4;
    let sms = device.multiprocessors.max(1) as usize;
    let mut blocks = 1u32;
    while blocks < most && (rows * (blocks as usize) < sms || slice_bytes(blocks) > room) {
        blocks *= 2;
    }
    // An SM's shared memory: what one block may opt into, and the 1 KiB kept of it.
    let per_sm = device.shared_per_block_optin + 1024;
    let block_bytes = |blocks: u32| slice_bytes(blocks) + SAMPLE_STATIC_SHARED + 1024;
    let together = policy.blocks_per_sm as usize;
    if rows * (blocks as usize) > sms && block_bytes(blocks) * together > per_sm {
        // The fewest more blocks a row at which `together` fit; none: as it was.
        let mut more = blocks;
        while more < most && block_bytes(more) * together > per_sm {
            more *= 2;
        }
        if block_bytes(more) * together <= per_sm {
            blocks = more;
        }
    }
    let slice_len = vocab.div_ceil(blocks as usize);
    let resident = slice_bytes(blocks) <= room;
    Ok(SamplePlan {
        rows,
        vocab,
        blocks_a_row: blocks,
        slice_len: slice_len as u32,
        resident,
        shared_bytes: if resident {
            slice_bytes(blocks) as u32
        } else {
            0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One block an SM: the plans of the first table.
    fn hopper() -> SamplePolicy {
        SamplePolicy {
            blocks_per_sm: 1,
            ..SamplePolicy::HOPPER
        }
    }

    fn a100() -> DeviceInfo {
        DeviceInfo {
            compute_capability: (8, 0),
            multiprocessors: 108,
            shared_per_block_optin: 163 << 10,
            ..DeviceInfo::h100()
        }
    }

    #[test]
    fn blocks_a_row_fill_the_device_then_fit_the_slice() {
        let h100 = DeviceInfo::h100();
        // (rows, vocab) -> (blocks a row, slice, resident)
        let cases = [
            ((1, 128_256), (8, 16_032, true)),
            ((8, 128_256), (8, 16_032, true)),
            ((64, 128_256), (4, 32_064, true)),
            ((256, 128_256), (4, 32_064, true)), // 513 KB a row: four slices fit
            ((256, 151_936), (4, 37_984, true)),
            ((256, 1_000), (1, 1_000, true)),
            ((256, 32), (1, 32, true)),
            ((1, 7), (8, 1, true)),
            ((4096, 2_000_000), (8, 250_000, false)), // 1 MB a slice: read again each step
        ];
        for ((rows, vocab), (blocks, slice, resident)) in cases {
            let plan = plan_sample(rows, vocab, &h100, &hopper()).unwrap();
            assert_eq!(
                (plan.blocks_a_row, plan.slice_len, plan.resident),
                (blocks, slice, resident),
                "{rows} × {vocab}"
            );
            assert_eq!(
                plan.shared_bytes,
                if resident { slice * 4 } else { 0 },
                "{rows} × {vocab}"
            );
            assert!(
                plan.shared_bytes as usize + SAMPLE_STATIC_SHARED <= h100.shared_per_block_optin
            );
            assert_eq!(plan.blocks(), rows as u32 * blocks);
        }
        // Before sm_90: one block a row, resident while the row fits.
        let plan = plan_sample(1, 24_000, &a100(), &hopper()).unwrap();
        assert_eq!((plan.blocks_a_row, plan.resident), (1, true));
        let plan = plan_sample(1, 128_256, &a100(), &hopper()).unwrap();
        assert_eq!(
            (plan.blocks_a_row, plan.resident, plan.shared_bytes),
            (1, false, 0)
        );
    }

    #[test]
    fn refused_shapes_say_why() {
        let h100 = DeviceInfo::h100();
        for vocab in [0, SAMPLE_MOST_VOCAB] {
            let e = plan_sample(1, vocab, &h100, &hopper()).unwrap_err();
            assert!(e.to_string().contains("logits"), "{e}");
        }
        assert!(plan_sample(1 << 29, 10, &h100, &hopper()).is_err());
        assert!(plan_sample(0, 10, &h100, &hopper()).is_ok()); // no rows: nothing to launch
    }

    #[test]
    fn two_blocks_an_sm_cut_rows_finer_past_one_wave() {
        let h100 = DeviceInfo::h100();
        let two = SamplePolicy {
            blocks_per_sm: 2,
            ..SamplePolicy::HOPPER
        };
        assert_eq!(SamplePolicy::HOPPER, two, "the default");
        // (rows, vocab) -> blocks a row with one block an SM, and with two
        let cases = [
            ((1, 128_256), (8, 8)),    // one wave: nothing to overlap
            ((16, 128_256), (8, 8)),   // 128 blocks: one wave already
            ((64, 128_256), (4, 8)),   // 256 blocks of 128 KB, or 512 of 64 KB, two an SM
            ((256, 151_936), (4, 8)),  // 76 KB slices at 8 a row: two fit beside the kernel's
            ((160, 24_000), (1, 2)),   // 96 KB slices, or 48 KB at 2 a row: two fit
            ((256, 1_000), (1, 1)),    // small slices: two fit at once
            ((4096, 500_000), (8, 8)), // the most blocks a row already
            // The cuts of tests/sample_gpu.rs's gpu_every_cut_of_a_row_draws_alike.
            ((4, 40_000), (8, 8)),
            ((40, 40_000), (4, 4)),
            ((160, 40_000), (1, 2)),
        ];
        for ((rows, vocab), (one_an_sm, two_an_sm)) in cases {
            let one = plan_sample(rows, vocab, &h100, &hopper()).unwrap();
            let both = plan_sample(rows, vocab, &h100, &two).unwrap();
            assert_eq!(
                (one.blocks_a_row, both.blocks_a_row),
                (one_an_sm, two_an_sm),
                "{rows} × {vocab}"
            );
            if both.blocks_a_row != one.blocks_a_row {
                let block = both.shared_bytes as usize + SAMPLE_STATIC_SHARED + 1024;
                assert!(
                    2 * block <= h100.shared_per_block_optin + 1024,
                    "{rows} × {vocab}"
                );
            }
        }
    }
}
