//! The report's versions V0–V5 (kernels/v0_naive.cu … v5_conflict_free.cu), each one idea on
//! top of the one before: their kernels and block sizes. src/cuda/seed.rs launches them, one
//! launch a network step (V0) or a block's fused steps (V1–V5).

use crate::device::DeviceInfo;
use crate::kernels::{self, KernelModule};
use crate::options::Version;

/// A seed version's launches: its kernels (named `<prefix>_<kernel>_<width>`), threads a
/// block, keys a thread, and whether a block's chunk lives in shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedPlan {
    /// V0–V5.
    pub version: Version,
    pub(crate) module: &'static KernelModule,
    pub(crate) prefix: &'static str,
    pub(crate) threads: u32,
    pub(crate) keys_per_thread: u32,
    pub(crate) shared_tile: bool,
    /// Whether the keys are mapped to sortable words before and back after (every key type
    /// and order but ascending unsigned keys), and the map.
    pub(crate) map: Option<u32>,
}

impl SeedPlan {
    /// How many times the version reads and writes the whole array of `n` words: one per
    /// launch that covers it (block kernels and global steps alike), not counting the key
    /// maps.
    pub fn passes(&self, n: usize) -> usize {
        if self.prefix == "v0" {
            return crate::network::step_count(n);
        }
        let chunk = (self.threads * self.keys_per_thread) as usize;
        let later_stages = crate::network::stage_sizes(n).filter(|&s| s > chunk);
        1 + later_stages
            .map(|size| {
                crate::network::stage_steps(size)
                    .filter(|s| s.stride >= chunk)
                    .count()
                    + 1
            })
            .sum::<usize>()
    }
}

/// The versions V1–V5: a block sorts its chunk, then each stage's large strides go one
/// launch a step and the small ones fuse into a block merge.
struct Blocked {
    module: &'static KernelModule,
    prefix: &'static str,
    keys_per_thread: u32,
    shared_tile: bool,
}

const fn blocked(
    module: &'static KernelModule,
    prefix: &'static str,
    keys_per_thread: u32,
    shared_tile: bool,
) -> Blocked {
    Blocked {
        module,
        prefix,
        keys_per_thread,
        shared_tile,
    }
}

/// V0's block size: its small-stride launches leave half the threads idle, and a big block
/// holds its SM slot until its slowest warp is done, so 256 beats both larger and smaller
/// blocks (docs/notes/seed-comparison.md has the measurements).
const NAIVE_THREADS: u32 = 256;

/// The launches of `version` (V0–V5) over words of `word_bytes` on `info`'s device; `map` is
/// the key map around it (`None`: the keys are their words).
pub(crate) fn plan_seed(
    info: &DeviceInfo,
    version: Version,
    word_bytes: usize,
    map: Option<u32>,
) -> SeedPlan {
    let spec = match version {
        Version::V0 => None,
        Version::V1 => Some(blocked(&kernels::V1, "v1", 1, false)),
        Version::V2 => Some(blocked(&kernels::V2, "v2", 1, true)),
        Version::V3 => Some(blocked(&kernels::V3, "v3", 1, true)),
        Version::V4 => Some(blocked(&kernels::V4, "v4", 2, true)),
        Version::V5 => Some(blocked(&kernels::V5, "v5", 2, true)),
        Version::Tuned => unreachable!("the tuned version has plans of its own"),
    };
    match spec {
        None => SeedPlan {
            version,
            module: &kernels::V0,
            prefix: "v0",
            threads: NAIVE_THREADS.min(block_threads(info, word_bytes, 1, false)),
            keys_per_thread: 1,
            shared_tile: false,
            map,
        },
        Some(b) => SeedPlan {
            version,
            module: b.module,
            prefix: b.prefix,
            threads: block_threads(info, word_bytes, b.keys_per_thread, b.shared_tile),
            keys_per_thread: b.keys_per_thread,
            shared_tile: b.shared_tile,
            map,
        },
    }
}

/// Threads per block: the device's limit (a power of two, at most 1024), halved until the
/// chunk fits the shared memory a block gets without opting in.
fn block_threads(info: &DeviceInfo, word_bytes: usize, keys_per_thread: u32, shared: bool) -> u32 {
    let mut threads = 1024u32.min(info.max_threads_per_block as u32);
    threads = 1 << (31 - threads.leading_zeros()); // round down to a power of two
    let bytes = |t: u32| t as usize * keys_per_thread as usize * word_bytes;
    while shared && threads > 32 && bytes(threads) > info.shared_per_block {
        threads /= 2;
    }
    threads
}
