//! Host plans: for each version, which kernels run, with which launch shapes, in what order.
//!
//! V0 launches one kernel per network step. V1–V5 share one plan shape and differ only in
//! their kernels (see `kernels/v*.cu`) and in how many keys a thread owns:
//!
//! 1. `block_sort`: every block sorts its chunk of `chunk` keys (stages 2 … chunk);
//! 2. for each larger stage: its steps of stride ≥ `chunk` as single global launches, then
//!    `block_merge`, which runs the stage's remaining steps (stride < chunk) inside each chunk.

use super::kernels::{self, KernelModule};
use super::{graph, kernel_name, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::key::Bits;
use crate::network::{padded_len, stage_sizes, stage_steps, steps};
use crate::Version;
use cudarc::driver::{
    CudaFunction, CudaViewMut, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

pub(super) fn config(blocks: u32, threads: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// How one of V1–V5 uses the common blocked plan.
struct Blocked {
    module: &'static KernelModule,
    prefix: &'static str,
    /// 1 (V1–V3: a thread per key) or 2 (V4, V5: a thread per compare-exchange).
    keys_per_thread: u32,
    /// Whether the block kernels keep their chunk in shared memory.
    shared_tile: bool,
}

const fn blocked_spec(
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

const V1: Blocked = blocked_spec(&kernels::V1, "v1", 1, false);
const V2: Blocked = blocked_spec(&kernels::V2, "v2", 1, true);
const V3: Blocked = blocked_spec(&kernels::V3, "v3", 1, true);
const V4: Blocked = blocked_spec(&kernels::V4, "v4", 2, true);
const V5: Blocked = blocked_spec(&kernels::V5, "v5", 2, true);

/// The blocked-plan description of V1–V5 (`None` for V0 and the tuned version).
fn blocked_version(version: Version) -> Option<&'static Blocked> {
    match version {
        Version::V0 | Version::Tuned => None,
        Version::V1 => Some(&V1),
        Version::V2 => Some(&V2),
        Version::V3 => Some(&V3),
        Version::V4 => Some(&V4),
        Version::V5 => Some(&V5),
    }
}

/// Sorts `keys` (at least 2, at most `MAX_LEN`) ascending with one of the seed's versions
/// V0–V5. The tuned version goes through [`tuned`], which also maps the keys.
pub(super) fn run<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>, version: Version) -> Result<()> {
    match blocked_version(version) {
        Some(v) => blocked::<B>(gpu, keys, v),
        None => {
            assert_eq!(version, Version::V0, "plan::run runs V0–V5");
            naive::<B>(gpu, keys)
        }
    }
}

/// Threads per block: the device's limit (a power of two, at most 1024), halved until the
/// chunk fits the shared memory a block gets without opting in.
fn block_threads<B: Bits>(gpu: &Gpu, keys_per_thread: u32, shared_tile: bool) -> u32 {
    let info = gpu.info();
    let mut threads = 1024u32.min(info.max_threads_per_block as u32);
    threads = 1 << (31 - threads.leading_zeros()); // round down to a power of two
    let bytes = |t: u32| t as usize * keys_per_thread as usize * std::mem::size_of::<B>();
    while shared_tile && threads > 32 && bytes(threads) > info.shared_per_block {
        threads /= 2;
    }
    threads
}

/// V0's block size. Measured at 2^29 u32 keys on the H100 (bench/peers/v0_forms.cu,
/// docs/notes/seed-comparison.md): 256 threads 664 ms, 512 680, 1024 763, 128 1103. Its
/// small-stride launches leave half the threads idle, and a big block holds its SM slot until
/// its slowest warp is done.
const NAIVE_THREADS: u32 = 256;

fn naive<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>) -> Result<()> {
    let n = keys.len() as u32;
    let threads = NAIVE_THREADS.min(block_threads::<B>(gpu, 1, false));
    let step_kernel = gpu.function(&kernels::V0, &kernel_name::<B>("v0_step"))?;
    let cfg = config(n.div_ceil(threads), threads, 0);
    for step in steps(n as usize) {
        launch_step(
            gpu,
            &step_kernel,
            keys,
            step.size as u32,
            step.stride as u32,
            cfg,
        )?;
    }
    Ok(())
}

fn blocked<B: Bits>(gpu: &Gpu, keys: &mut CudaViewMut<B>, v: &Blocked) -> Result<()> {
    let n = keys.len() as u32;
    let threads = block_threads::<B>(gpu, v.keys_per_thread, v.shared_tile);
    let chunk = threads * v.keys_per_thread;
    let shared = if v.shared_tile {
        chunk * std::mem::size_of::<B>() as u32
    } else {
        0
    };
    let name = |kernel: &str| kernel_name::<B>(&format!("{}_{kernel}", v.prefix));
    let block_sort = gpu.function(v.module, &name("block_sort"))?;
    let block_merge = gpu.function(v.module, &name("block_merge"))?;
    let step_kernel = gpu.function(v.module, &name("step"))?;

    let block_cfg = config(n.div_ceil(chunk), threads, shared);
    // A thread per key, or (V4, V5) a thread per comparator of the padded network.
    let step_threads = if v.keys_per_thread == 1 {
        n
    } else {
        padded_len(n as usize) as u32 / 2
    };
    let step_cfg = config(step_threads.div_ceil(threads), threads, 0);

    let mut launch = gpu.stream().launch_builder(&block_sort);
    launch.arg(&mut *keys).arg(&n);
    unsafe { launch.launch(block_cfg) }.during(|| format!("launching {}_block_sort", v.prefix))?;
    for size in stage_sizes(n as usize).filter(|&s| s > chunk as usize) {
        for step in stage_steps(size).take_while(|s| s.stride >= chunk as usize) {
            launch_step(
                gpu,
                &step_kernel,
                keys,
                size as u32,
                step.stride as u32,
                step_cfg,
            )?;
        }
        let size = size as u32;
        let mut launch = gpu.stream().launch_builder(&block_merge);
        launch.arg(&mut *keys).arg(&n).arg(&size);
        unsafe { launch.launch(block_cfg) }
            .during(|| format!("launching {}_block_merge", v.prefix))?;
    }
    Ok(())
}

fn launch_step<B: Bits>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    keys: &mut CudaViewMut<B>,
    size: u32,
    stride: u32,
    cfg: LaunchConfig,
) -> Result<()> {
    let n = keys.len() as u32;
    let mut launch = gpu.stream().launch_builder(kernel);
    launch.arg(&mut *keys).arg(&n).arg(&size).arg(&stride);
    unsafe { launch.launch(cfg) }
        .map(drop)
        .during(|| format!("launching a global step (size {size}, stride {stride})"))
}

/// How many times `version` reads and writes the whole array for `n` keys: one per launch that
/// covers it (block kernels and global steps alike), not counting the key maps.
pub(super) fn passes<B: Bits>(gpu: &Gpu, version: Version, n: usize) -> Result<usize> {
    let v = match (version, blocked_version(version)) {
        (_, Some(v)) => v,
        (Version::V0, None) => return Ok(crate::network::step_count(n)),
        (_, None) if super::merge::keys_through_merges(n) => {
            return Ok(super::merge::merge_sort_passes::<B>(n));
        }
        (_, None) => {
            let layout = RowLayout::rows(n, n);
            let (_, shape) = tuned_kernel::<B>(gpu, &layout)?;
            return Ok(tuned_passes(&shape, n).len());
        }
    };
    let chunk =
        (block_threads::<B>(gpu, v.keys_per_thread, v.shared_tile) * v.keys_per_thread) as usize;
    let later_stages = stage_sizes(n).filter(|&s| s > chunk);
    Ok(1 + later_stages
        .map(|size| stage_steps(size).filter(|s| s.stride >= chunk).count() + 1)
        .sum::<usize>())
}

/// The tuned version's launch shape.
#[derive(Debug)]
struct TunedShape {
    /// log2 of the keys in one block's tile.
    tile_bits: u32,
    threads: u32,
    /// log2 of the blocks in a cluster (0: no clusters). A contiguous pass then works on tiles
    /// of 2^(tile_bits + cluster_bits) keys spread over the cluster's blocks.
    cluster_bits: u32,
}

impl TunedShape {
    /// log2 of the keys a contiguous pass (tile sort, tile merge) covers.
    fn merge_bits(&self) -> u32 {
        self.tile_bits + self.cluster_bits
    }

    /// log2 of the keys a thread holds in registers: kernels/tuned.cu's E_BITS.
    fn register_bits(&self) -> u32 {
        self.tile_bits - self.threads.trailing_zeros()
    }

    /// kernels/tuned.cu's `group_start`: the register group holding tile bit `tb`, aligned
    /// groups of E_BITS bits, the last shifted down to end at the tile's top bit.
    fn group_start(&self, tb: u32) -> u32 {
        let e = self.register_bits();
        (e * (tb / e)).min(self.tile_bits - e)
    }
}

/// Tiles of 64 KiB by default (2^14 u32 or 2^13 u64 keys): two blocks then share an SM, so one
/// block's loads overlap another's register work (docs/notes/tuned.md measures other sizes).
/// `BITONIC_TUNED_TILE_BITS` overrides it for experiments. Shrunk to what the device's shared
/// memory and the kernel's thread limit allow (each thread holds 32 u32 or 16 u64 keys), and
/// to what a small input needs.
///
/// An input too small to give every SM a block (rows of 2^`row_bits` slots) is spread over
/// smaller tiles: on sm_90 and later a row that fits one cluster of up to [`cluster_blocks`]
/// tiles is sorted by that cluster; larger inputs keep clusters off.
///
/// `register_bits` is the kernel's E_BITS: log2 of the keys each thread holds.
fn tuned_shape<T>(
    gpu: &Gpu,
    kernel: &CudaFunction,
    slots: usize,
    row_bits: u32,
    register_bits: u32,
) -> Result<TunedShape> {
    let key_bytes = std::mem::size_of::<T>();
    // The kernel's own limit (its __launch_bounds__ and register use) and the device's.
    let kernel_limit = kernel
        .max_threads_per_block()
        .during(|| "reading tuned_pass's thread limit".into())?;
    let max_threads = (gpu.info().max_threads_per_block as u32).min(kernel_limit as u32);
    let fits = |bits: u32| (1usize << bits) * key_bytes <= gpu.info().shared_per_block_optin;
    let default_bits = default_tile_bits(key_bytes);
    let min_bits = register_bits + 5; // one warp
    let wanted = env_u32("BITONIC_TUNED_TILE_BITS").unwrap_or(default_bits);
    let mut tile_bits =
        (register_bits + 31 - max_threads.leading_zeros()).min(wanted.max(min_bits));
    while tile_bits > min_bits && !fits(tile_bits) {
        tile_bits -= 1;
    }
    // A small input gets a tile just big enough (at least one warp of threads).
    let needed = padded_len(slots).trailing_zeros().max(min_bits);
    tile_bits = tile_bits.min(needed);

    // Too few tiles to give every SM work (docs/notes/tuned.md, step 13): a row that fits one
    // cluster of tiles of 2^12 or 2^13 keys is sorted by that cluster in one launch; larger
    // inputs get smaller tiles (more blocks, more passes) while fewer than half the SMs would
    // get one.
    let sms = gpu.info().multiprocessors.max(1) as usize;
    let most_cluster_bits = cluster_blocks(gpu).trailing_zeros();
    let mut cluster_bits = 0;
    if (slots >> tile_bits) < sms && row_bits > SPREAD_TILE_BITS.min(tile_bits) {
        let spread_tile = row_bits
            .saturating_sub(most_cluster_bits)
            .max(SPREAD_TILE_BITS);
        if spread_tile <= SPREAD_TILE_BITS + 1 && spread_tile <= tile_bits {
            cluster_bits = row_bits - spread_tile;
            tile_bits = spread_tile;
        } else {
            while tile_bits > SPREAD_TILE_BITS && (slots >> tile_bits) < sms / 2 {
                tile_bits -= 1;
            }
        }
    }
    Ok(TunedShape {
        tile_bits,
        threads: 1 << (tile_bits - register_bits),
        cluster_bits,
    })
}

/// The tuned kernel for `layout` and its shape. The wide kernels hold 32 u32 or 16 u64 keys
/// (or key-index pairs) a thread. A u32 input too small to give every SM a 64 KiB tile (its
/// tiles shrunk or spread over a cluster) gets the narrow kernel instead, 16 keys a thread in
/// twice the threads: its passes are latency-bound, and more warps hide more of the latency.
/// With full tiles the passes are throughput-bound and the wide kernel's fewer instructions a
/// key win (docs/notes/tuned.md, step 17). `BITONIC_TUNED_NARROW=0` or `1` turns the narrow
/// kernel off, or on for every u32 sort, for measurements.
fn tuned_kernel<T>(gpu: &Gpu, layout: &RowLayout) -> Result<(CudaFunction, TunedShape)> {
    let (slots, row_bits) = (layout.slots(), layout.row_bits);
    let wide = gpu.function(&kernels::TUNED, &kernel_name::<T>("tuned_pass"))?;
    // kernels/tuned.cu's E_BITS: 32 keys a thread for u32, 16 for u64 and key-index pairs.
    let wide_bits = if std::mem::size_of::<T>() == 4 { 5 } else { 4 };
    let shape = tuned_shape::<T>(gpu, &wide, slots, row_bits, wide_bits)?;
    let narrow = std::mem::size_of::<T>() == 4
        && match env_u32("BITONIC_TUNED_NARROW") {
            Some(forced) => forced != 0,
            None => shape.tile_bits < default_tile_bits(4),
        };
    if !narrow {
        return Ok((wide, shape));
    }
    let kernel = gpu.function(&kernels::TUNED, "tuned_pass_u32_narrow")?;
    let shape = tuned_shape::<T>(gpu, &kernel, slots, row_bits, 4)?;
    Ok((kernel, shape))
}

/// log2 of the keys in a 64 KiB tile: 2^14 u32 or 2^13 u64 keys (2^12 key-index pairs).
pub(super) fn default_tile_bits(key_bytes: usize) -> u32 {
    (64 * 1024 / key_bytes).trailing_zeros()
}

/// The smallest tile a small input is spread over (2^12 u32 keys: 128 threads; 256 for u64).
const SPREAD_TILE_BITS: u32 = 12;

/// A number from the environment (the measurement switches), if set and valid.
pub(super) fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

/// The most blocks a tuned cluster may hold: 16 on sm_90 and later (beyond the portable 8:
/// `cluster::fits` checks that the device can run them, else fewer), 1 (no clusters) before.
/// `BITONIC_TUNED_CLUSTER` overrides it (a power of two, up to 16) for experiments; 1 turns
/// clusters off.
fn cluster_blocks(gpu: &Gpu) -> u32 {
    if gpu.info().compute_capability.0 < 9 {
        return 1;
    }
    match env_u32("BITONIC_TUNED_CLUSTER") {
        Some(c) if c.is_power_of_two() => c.min(16),
        _ => 16,
    }
}

/// One launch of `tuned_pass` (see kernels/tuned.cu for the meaning of the fields): its tile
/// is rows of 2^col_bits adjacent keys, 2^lo keys apart (contiguous when `lo == col_bits`), and
/// it runs stages `b_first ..= b_last`, the first from bit `hi_first`, the last down to `stop`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TunedPass {
    col_bits: u32,
    lo: u32,
    b_first: u32,
    b_last: u32,
    hi_first: u32,
    stop: u32,
}

/// Lowest column bits of a strided tile: 32 adjacent keys, one warp-wide access.
const COLUMN_BITS: u32 = 5;

impl TunedPass {
    /// A contiguous tile running stage `b` from bit `hi` down to bit 0.
    fn tile_merge(b: u32, hi: u32) -> TunedPass {
        TunedPass {
            col_bits: COLUMN_BITS,
            lo: COLUMN_BITS,
            b_first: b,
            b_last: b,
            hi_first: hi,
            stop: 0,
        }
    }

    /// The lowest row bit of a strided tile of 2^tile_bits keys whose top row bit is `hi`, or
    /// of the lowest such tile when `hi` is below it (rows above the columns: bit 6 or up).
    fn strided_rows(tile_bits: u32, hi: u32) -> u32 {
        (hi + 1 + COLUMN_BITS)
            .saturating_sub(tile_bits)
            .max(COLUMN_BITS + 1)
    }

    /// A strided pass running stage `b` from bit `hi` down to `stop`: rows of 32 adjacent keys
    /// at bits [`strided_rows`](Self::strided_rows) and up.
    fn strided(tile_bits: u32, b: u32, hi: u32, stop: u32) -> TunedPass {
        TunedPass {
            col_bits: COLUMN_BITS,
            lo: TunedPass::strided_rows(tile_bits, hi),
            b_first: b,
            b_last: b,
            hi_first: hi,
            stop,
        }
    }

    fn is_contiguous(&self) -> bool {
        self.lo == self.col_bits
    }

    /// The tile bit holding global bit g (kernels/tuned.cu's `tile_bit`).
    fn tile_bit(&self, g: u32) -> u32 {
        if g < self.col_bits {
            g
        } else {
            g - self.lo + self.col_bits
        }
    }

    /// How many register groups the kernel runs for this pass (each one a trip through shared
    /// memory), as kernels/tuned.cu's stage loop picks them; cluster steps aside.
    fn register_groups(&self, shape: &TunedShape) -> u32 {
        let mut groups = 0;
        for b in self.b_first..=self.b_last {
            let stop = if b == self.b_last { self.stop } else { 0 };
            let mut g = if b == self.b_first { self.hi_first } else { b } as i64;
            while g >= stop as i64 {
                if self.is_contiguous() && g >= shape.tile_bits as i64 {
                    g -= 1; // a cluster step
                    continue;
                }
                let tb = self.tile_bit(g as u32);
                let q0 = shape.group_start(tb);
                g -= (tb - q0.max(self.tile_bit(stop)) + 1) as i64;
                groups += 1;
            }
        }
        groups
    }

    /// The network steps this pass runs, in order, as (stage, bit).
    #[cfg(test)]
    fn steps(&self) -> Vec<(u32, u32)> {
        (self.b_first..=self.b_last)
            .flat_map(|b| {
                let hi = if b == self.b_first { self.hi_first } else { b };
                let stop = if b == self.b_last { self.stop } else { 0 };
                (stop..=hi).rev().map(move |g| (b, g))
            })
            .collect()
    }
}

/// The passes that sort `n` keys: a tile sort, then the later stages' steps. Without clusters
/// they go in *windows* ([`windowed_stages`]); with clusters each stage gets strided passes
/// over the step bits at or above the cluster's tile and a tile merge for the bits below.
/// `BITONIC_TUNED_WINDOWS=0` turns windows off, for measurements.
fn tuned_passes(shape: &TunedShape, n: usize) -> Vec<TunedPass> {
    let merge_bits = shape.merge_bits();
    let log_p = padded_len(n).trailing_zeros();
    let mut passes = vec![TunedPass {
        b_last: log_p.min(merge_bits) - 1,
        ..TunedPass::tile_merge(0, 0)
    }];
    if shape.cluster_bits == 0 && env_u32("BITONIC_TUNED_WINDOWS") != Some(0) {
        passes.extend(windowed_stages(shape, log_p));
    } else {
        for b in merge_bits..log_p {
            passes.extend(stage_from(shape, b, b));
        }
    }
    passes
}

/// Stages `tile_bits .. log_p` in the cheapest list of passes (docs/notes/tuned.md, step 18).
/// Every pass's tile holds bits 0..4 (coalescing) and `room = tile_bits - 5` more, so what
/// counts is the steps on bits 5 and up. From each point of the network (stage b, next upper
/// bit hi) a pass can be:
///
/// * a strided pass inside the stage: up to `room` upper steps;
/// * a tile merge: the rest of the stage, when it fits one contiguous tile;
/// * a *window*: the rest of stage b (bits hi .. 0, rows of 2^(hi+1) adjacent keys) and, in
///   the room left, the first steps of stage b+1 (bits b+1 .. stop, the tile's row bits).
///
/// A pass costs one unit, or 1.5 when it needs more register groups (shared-memory round
/// trips) than a tile merge: such windows measured 2.3 ms at 2^29 against 1.6 for the others,
/// which are bound by memory bandwidth (2.0 ms since step 19; the plans for 2^21 … 2^29 are the
/// same for any cost from 1.2 to 1.5). The cheapest plan comes from dynamic programming over
/// the (stage, bit) points, back to front; plans are cached per shape and length.
fn windowed_stages(shape: &TunedShape, log_p: u32) -> Vec<TunedPass> {
    type Key = (u32, u32, u32);
    static PLANS: OnceLock<Mutex<HashMap<Key, Vec<TunedPass>>>> = OnceLock::new();
    let key = (shape.tile_bits, shape.register_bits(), log_p);
    let plans = PLANS.get_or_init(Default::default);
    if let Some(plan) = plans.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return plan.clone();
    }
    let plan = cheapest_windowed_plan(shape, log_p);
    let mut plans = plans.lock().unwrap_or_else(|e| e.into_inner());
    plans.insert(key, plan.clone());
    plan
}

fn cheapest_windowed_plan(shape: &TunedShape, log_p: u32) -> Vec<TunedPass> {
    let t = shape.tile_bits;
    let merge_groups = TunedPass::tile_merge(t, t - 1).register_groups(shape);
    // In halves, so that costs stay integers.
    let cost = |p: &TunedPass| {
        if p.register_groups(shape) > merge_groups {
            3
        } else {
            2
        }
    };
    // The passes that can run next from stage b, upper bit hi (4: only bits 4..0 are left),
    // each with the point it leads to.
    let next_passes = |b: u32, hi: u32| {
        let mut next = Vec::new();
        if hi > COLUMN_BITS - 1 {
            let lo = TunedPass::strided_rows(t, hi);
            for stop in lo..=hi {
                next.push((TunedPass::strided(t, b, hi, stop), (b, stop - 1)));
            }
        }
        if hi < t {
            next.push((TunedPass::tile_merge(b, hi), (b + 1, b + 1)));
        }
        if b + 1 < log_p && hi + 1 < t {
            let head = t - (hi + 1); // stage b+1's steps the window has room for
            let stop = b + 2 - head;
            let window = TunedPass {
                col_bits: hi + 1,
                lo: stop,
                b_first: b,
                b_last: b + 1,
                hi_first: hi,
                stop,
            };
            next.push((window, (b + 1, stop - 1)));
        }
        next
    };
    // best[b][hi]: the cost of sorting on from that point, the first pass there and the point
    // it leads to.
    type Choice = Option<(u32, TunedPass, (u32, u32))>;
    let width = log_p as usize + 1;
    let mut best: Vec<Choice> = vec![None; width * width];
    let at = |b: u32, hi: u32| b as usize * width + hi as usize;
    let cost_from = |best: &[Choice], (b, hi): (u32, u32)| {
        if b >= log_p {
            Some(0)
        } else {
            best[at(b, hi)].map(|(c, _, _)| c)
        }
    };
    for b in (t..log_p).rev() {
        for hi in COLUMN_BITS - 1..=b {
            best[at(b, hi)] = next_passes(b, hi)
                .into_iter()
                .filter_map(|(pass, to)| Some((cost_from(&best, to)? + cost(&pass), pass, to)))
                .min_by_key(|&(c, _, _)| c);
        }
    }
    let mut plan = Vec::new();
    let mut point = (t, t);
    while point.0 < log_p {
        let (_, pass, to) =
            best[at(point.0, point.1)].expect("every point of the network has a next pass");
        plan.push(pass);
        point = to;
    }
    plan
}

/// The steps of stage `b` from global bit `hi` down: strided passes (one block's tile each)
/// while the bits lie at or above the contiguous passes' bits, then one contiguous tile pass
/// for the rest.
fn stage_from(shape: &TunedShape, b: u32, mut hi: u32) -> Vec<TunedPass> {
    let (tb, merge_bits) = (shape.tile_bits, shape.merge_bits());
    let mut passes = Vec::new();
    while hi >= merge_bits {
        let stop = TunedPass::strided_rows(tb, hi).max(merge_bits);
        passes.push(TunedPass::strided(tb, b, hi, stop));
        hi = stop - 1;
    }
    passes.push(TunedPass::tile_merge(b, hi));
    passes
}

/// The arguments of one tuned pass after the keys, the layout and the tile bits:
/// `[col_bits, lo, b_first, b_last, hi_first, stop, map]` (kernels/tuned.cu's `tuned_pass_*`).
pub(super) type PassArgs = [u32; PASS_ARG_COUNT];
pub(super) const PASS_ARG_COUNT: usize = 7;

/// Kernel map flags (kernels/tuned.cu): the key map folded into the first and last passes.
pub(super) const MAP_DESCENDING: u32 = 4;
const MAP_ON_LOAD: u32 = 8;
const MAP_ON_STORE: u32 = 16;

/// Where the keys of the tuned passes' slots live: kernels/tuned.cu's `RowLayout`, field for
/// field. The passes sort rows of 2^row_bits slots; a row's slots past its length are padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RowLayout {
    /// Device arrays of each row's first key and length (segments), or 0: uniform rows.
    segment_start: u64,
    segment_len: u64,
    n: u32,
    row_bits: u32,
    row_len: u32,
    rows: u32,
    contiguous: u32,
}

// SAFETY: a plain C struct of integers, laid out as the kernel's.
unsafe impl DeviceRepr for RowLayout {}

impl RowLayout {
    /// `n` keys in rows of `row_len` (`n` a multiple of it; a plain sort is one row of `n`).
    pub(super) fn rows(n: usize, row_len: usize) -> RowLayout {
        let row_bits = padded_len(row_len.max(1)).trailing_zeros();
        let rows = n.checked_div(row_len).unwrap_or(0) as u32;
        RowLayout {
            segment_start: 0,
            segment_len: 0,
            n: n as u32,
            row_bits,
            row_len: row_len as u32,
            rows,
            contiguous: (rows <= 1 || row_len == 1 << row_bits) as u32,
        }
    }

    /// `n` keys cut into runs of 2^`run_bits` (the last may be shorter), each sorted on its own.
    pub(super) fn runs(n: usize, run_bits: u32) -> RowLayout {
        RowLayout {
            segment_start: 0,
            segment_len: 0,
            n: n as u32,
            row_bits: run_bits,
            row_len: 1 << run_bits,
            rows: n.div_ceil(1 << run_bits) as u32,
            contiguous: 1,
        }
    }

    /// `rows` segments of at most 2^row_bits keys, their starts and lengths in device arrays.
    pub(super) fn segments(
        n: usize,
        row_bits: u32,
        rows: usize,
        starts: u64,
        lens: u64,
    ) -> RowLayout {
        RowLayout {
            segment_start: starts,
            segment_len: lens,
            n: n as u32,
            row_bits,
            row_len: 0,
            rows: rows as u32,
            contiguous: 0,
        }
    }

    /// Whether rows are segments with their own starts and lengths.
    fn is_segmented(&self) -> bool {
        self.segment_start != 0
    }

    /// Slots of all rows: the passes' index space: under 2^32 for at most `MAX_LEN` keys,
    /// since padding less than doubles each row.
    fn slots(&self) -> usize {
        (self.rows as usize) << self.row_bits
    }
}

/// Sorts every row of `layout` with the tuned passes; `map` is `MapKind | MAP_DESCENDING`
/// (0 for plain ascending words, and for pairs the pack kernel already mapped), applied on the
/// first load and undone on the last store. `T` is a u32 or u64 word or a 16-byte KeyIndex.
pub(super) fn tuned<T: DeviceRepr>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<T>,
    layout: RowLayout,
    map: u32,
) -> Result<()> {
    tuned_keeping_map(gpu, keys, layout, map, false)
}

/// [`tuned`], but with `keep_mapped` the last store leaves the sortable words mapped (the tile
/// sorts of a merge sort, whose last merge level unmaps them).
pub(super) fn tuned_keeping_map<T: DeviceRepr>(
    gpu: &Gpu,
    keys: &mut CudaViewMut<T>,
    layout: RowLayout,
    map: u32,
    keep_mapped: bool,
) -> Result<()> {
    if layout.row_bits == 0 || layout.rows == 0 {
        return Ok(()); // rows of one key
    }
    let (kernel, mut shape) = tuned_kernel::<T>(gpu, &layout)?;
    let shared = (1u32 << shape.tile_bits) * std::mem::size_of::<T>() as u32;
    gpu.allow_shared(&kernel, shared)?;
    let blocks = layout.slots().div_ceil(1 << shape.tile_bits) as u32;
    let cfg = config(blocks, shape.threads, shared);
    while shape.cluster_bits > 0 && !cluster::fits(gpu, &kernel, cfg, 1 << shape.cluster_bits)? {
        shape.cluster_bits -= 1;
    }
    let passes = tuned_passes(&shape, 1 << layout.row_bits);
    let last = passes.len() - 1;
    let fields: Vec<PassArgs> = passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let flags = if map == 0 {
                0
            } else {
                map | if i == 0 { MAP_ON_LOAD } else { 0 }
                    | if i == last && !keep_mapped {
                        MAP_ON_STORE
                    } else {
                        0
                    }
            };
            [
                p.col_bits, p.lo, p.b_first, p.b_last, p.hi_first, p.stop, flags,
            ]
        })
        .collect();
    // Several passes go as one CUDA graph (docs/notes/tuned.md, step 16), but not in clusters
    // (their launch attribute) nor over segments (their offsets arrays are new every call, so
    // the cached graph would never be reused).
    if passes.len() > 1 && shape.cluster_bits == 0 && !layout.is_segmented() && graphs_enabled() {
        let (pointer, _record_write) = keys.device_ptr_mut(gpu.stream());
        let plan = graph::PassPlan::new(kernel.cu_function(), cfg, layout, shape.tile_bits, fields);
        return graph::launch(gpu, plan, pointer);
    }
    for (p, args) in passes.iter().zip(fields) {
        let args = (layout, shape.tile_bits, args);
        if p.is_contiguous() && shape.cluster_bits > 0 {
            cluster::launch_pass(gpu, &kernel, cfg, 1 << shape.cluster_bits, keys, args)
        } else {
            let mut launch = gpu.stream().launch_builder(&kernel);
            launch.arg(&mut *keys).arg(&args.0).arg(&args.1);
            for value in &args.2 {
                launch.arg(value);
            }
            unsafe { launch.launch(cfg) }.map(drop)
        }
        .during(|| format!("launching tuned pass {p:?} of {shape:?}"))?;
    }
    Ok(())
}

/// Whether multi-pass plans go as CUDA graphs: yes unless `BITONIC_TUNED_GRAPH=0` (for
/// measuring what the graphs save).
fn graphs_enabled() -> bool {
    env_u32("BITONIC_TUNED_GRAPH") != Some(0)
}

/// Launches in thread-block clusters, which cudarc's launch builder cannot express.
mod cluster {
    use super::{Gpu, Result, RowLayout};
    use crate::error::CudaContext as _;
    use cudarc::driver::sys::{self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
    use cudarc::driver::{CudaFunction, CudaViewMut, DevicePtrMut, DriverError, LaunchConfig};
    use std::ffi::c_void;

    fn raw_config(
        gpu: &Gpu,
        cfg: LaunchConfig,
        attribute: &mut CUlaunchAttribute,
    ) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: gpu.stream().cu_stream(),
            attrs: attribute,
            numAttrs: 1,
        }
    }

    fn cluster_attribute(blocks: u32) -> CUlaunchAttribute {
        // SAFETY: an all-zero attribute is valid; the union's cluster field is set below.
        let mut attribute: CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attribute.value.clusterDim.x = blocks;
        attribute.value.clusterDim.y = 1;
        attribute.value.clusterDim.z = 1;
        attribute
    }

    /// Whether the device can run clusters of `blocks` blocks of this shape (the answer is
    /// cached per kernel and shape: the query costs more than a small sort's launch).
    pub(super) fn fits(
        gpu: &Gpu,
        kernel: &CudaFunction,
        cfg: LaunchConfig,
        blocks: u32,
    ) -> Result<bool> {
        let key = (
            kernel.cu_function() as usize,
            cfg.block_dim.0,
            cfg.shared_mem_bytes,
            blocks,
        );
        if let Some(&known) = gpu
            .cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(known);
        }
        if blocks > 8 {
            // Beyond the portable 8 a kernel must opt in.
            kernel
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
                .during(|| format!("allowing clusters of {blocks} blocks"))?;
        }
        let mut attribute = cluster_attribute(blocks);
        let query = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            ..cfg
        };
        let raw = raw_config(gpu, query, &mut attribute);
        let mut clusters = 0;
        gpu.context()
            .bind_to_thread()
            .during(|| "binding the CUDA context".into())?;
        // SAFETY: valid function and config; `attribute` outlives the call.
        let status =
            unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, kernel.cu_function(), &raw) };
        // An error here (a driver without clusters, say) means: do not use them.
        let fits = status == sys::CUresult::CUDA_SUCCESS && clusters > 0;
        gpu.cluster_fits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, fits);
        Ok(fits)
    }

    /// One tuned pass in clusters of `blocks` blocks: kernels/tuned.cu's `tuned_pass_*` with
    /// `(layout, tile_bits, [col_bits, lo, b_first, b_last, hi_first, stop, map])`.
    pub(super) fn launch_pass<T>(
        gpu: &Gpu,
        kernel: &CudaFunction,
        cfg: LaunchConfig,
        blocks: u32,
        keys: &mut CudaViewMut<T>,
        args: (RowLayout, u32, super::PassArgs),
    ) -> std::result::Result<(), DriverError> {
        let (mut layout, mut tile_bits, mut fields) = args;
        gpu.context().bind_to_thread()?;
        let (mut pointer, _record_write) = keys.device_ptr_mut(gpu.stream());
        let mut params: Vec<*mut c_void> = vec![
            &mut pointer as *mut _ as *mut c_void,
            &mut layout as *mut _ as *mut c_void,
            &mut tile_bits as *mut _ as *mut c_void,
        ];
        params.extend(fields.iter_mut().map(|f| f as *mut u32 as *mut c_void));
        let mut attribute = cluster_attribute(blocks);
        let raw = raw_config(gpu, cfg, &mut attribute);
        // SAFETY: the parameters match the kernel's signature and live until the call returns
        // (the driver copies them); the keys' buffer outlives the launch through `keys`.
        unsafe {
            sys::cuLaunchKernelEx(
                &raw,
                kernel.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
            .result()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_layouts() {
        // One row: slot g is key g, padded to a power of two.
        let plain = RowLayout::rows(1000, 1000);
        assert_eq!((plain.row_bits, plain.rows, plain.contiguous), (10, 1, 1));
        assert_eq!(plain.slots(), 1024);
        // Rows of a power-of-two length stay contiguous; others get padded slots per row.
        let pow2 = RowLayout::rows(64 * 256, 256);
        assert_eq!((pow2.row_bits, pow2.rows, pow2.contiguous), (8, 64, 1));
        let odd = RowLayout::rows(7 * 10_001, 10_001);
        assert_eq!((odd.row_bits, odd.rows, odd.contiguous), (14, 7, 0));
        assert_eq!(odd.slots(), 7 << 14);
        // Padding can almost double a large input's slots; they still fit 32-bit indices.
        let big = RowLayout::rows(3 * ((1 << 29) + 1), (1 << 29) + 1);
        assert_eq!((big.row_bits, big.rows), (30, 3));
        assert!(big.slots() <= u32::MAX as usize);
        assert_eq!(RowLayout::rows(0, 0).rows, 0);
    }

    fn shape(tile_bits: u32, cluster_bits: u32) -> TunedShape {
        TunedShape {
            tile_bits,
            threads: 1 << (tile_bits - 5),
            cluster_bits,
        }
    }

    /// The network's steps of stages `from .. log_p`, as (stage, bit).
    fn network_steps(from: u32, log_p: u32) -> Vec<(u32, u32)> {
        (from..log_p)
            .flat_map(|b| (0..=b).rev().map(move |g| (b, g)))
            .collect()
    }

    #[test]
    fn tuned_pass_counts_for_2_pow_29() {
        // (block tile bits, cluster bits) -> passes: 2^15 and the default 2^14 tiles in the
        // cheapest windowed plan (37 passes stage by stage); 2^14 tiles in clusters of 8
        // blocks (2^17 keys a contiguous pass) and of 16 (2^18), which plan stage by stage.
        for (tile_bits, cluster_bits, count) in [(15, 0, 28), (14, 0, 31), (14, 3, 28), (14, 4, 25)]
        {
            let shape = shape(tile_bits, cluster_bits);
            let passes = tuned_passes(&shape, 1 << 29);
            assert_eq!(passes.len(), count, "{shape:?}");
            // The tile sort runs every stage a contiguous pass holds; the later passes run
            // every later step once, in order.
            assert_eq!(passes[0].b_last, shape.merge_bits() - 1);
            let steps: Vec<_> = passes[1..].iter().flat_map(TunedPass::steps).collect();
            assert_eq!(steps, network_steps(shape.merge_bits(), 29), "{shape:?}");
            // A strided pass's steps lie in its tile: in its columns or its row bits.
            for p in passes.iter().filter(|p| !p.is_contiguous()) {
                for (_, g) in p.steps() {
                    assert!(
                        g < p.col_bits || g >= p.lo,
                        "bit {g} between the rows of {p:?}"
                    );
                    assert!(p.tile_bit(g) < tile_bits, "bit {g} above the tile of {p:?}");
                }
            }
        }
    }

    /// kernels/tuned.cu's pass on the CPU: each block gathers its tile through the kernel's
    /// index map (rows, mid bits, the mirrored rows of a pass in which a stage starts), runs
    /// the pass's steps on tile indices, and scatters the tile back.
    fn model_pass(keys: &mut [u32], shape: &TunedShape, p: &TunedPass) {
        let tile_bits = if p.is_contiguous() {
            shape.merge_bits()
        } else {
            shape.tile_bits
        };
        let stage_start = if p.hi_first == p.b_first {
            Some(p.b_first)
        } else {
            (p.b_last > p.b_first).then_some(p.b_last)
        };
        let mirror_row_bit = stage_start
            .filter(|_| !p.is_contiguous())
            .map(|s| p.tile_bit(s) - p.col_bits);
        let mid_bits = p.lo - p.col_bits;
        let global_index = |block: usize, i: usize| -> usize {
            if p.is_contiguous() {
                return block << tile_bits | i;
            }
            let (col, row) = (i & ((1 << p.col_bits) - 1), i >> p.col_bits);
            let (mut mid, high) = (block & ((1 << mid_bits) - 1), block >> mid_bits);
            if mirror_row_bit.is_some_and(|bit| row >> bit & 1 == 1) {
                mid ^= (1 << mid_bits) - 1;
            }
            high << (p.lo + tile_bits - p.col_bits) | row << p.lo | mid << p.col_bits | col
        };
        for block in 0..keys.len() >> tile_bits {
            let at: Vec<usize> = (0..1 << tile_bits)
                .map(|i| global_index(block, i))
                .collect();
            let mut tile: Vec<u32> = at.iter().map(|&g| keys[g]).collect();
            for (b, g) in p.steps() {
                let tb = p.tile_bit(g);
                for i in (0..tile.len()).filter(|i| i >> tb & 1 == 0) {
                    let j = if g == b {
                        i ^ ((2 << tb) - 1)
                    } else {
                        i | 1 << tb
                    };
                    if tile[i] > tile[j] {
                        tile.swap(i, j);
                    }
                }
            }
            for (&g, key) in at.iter().zip(tile) {
                keys[g] = key;
            }
        }
    }

    #[test]
    fn tuned_plans_sort_on_the_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(29);
        // Small tiles give long plans on small inputs: every kind of pass, windows of every
        // width, stages needing one to several strided passes.
        for (tile_bits, cluster_bits) in [(6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (7, 2), (8, 1)] {
            let shape = shape(tile_bits, cluster_bits);
            for log_n in 1..=15 {
                let mut keys: Vec<u32> =
                    (0..1 << log_n).map(|_| rng.random_range(0..1000)).collect();
                let mut expected = keys.clone();
                expected.sort_unstable();
                let passes = tuned_passes(&shape, keys.len());
                let steps: Vec<_> = passes[1..].iter().flat_map(TunedPass::steps).collect();
                assert_eq!(
                    steps,
                    network_steps(shape.merge_bits(), log_n),
                    "{shape:?} 2^{log_n}"
                );
                // Slots past the keys hold +inf, as the kernel's padding does.
                keys.resize(keys.len().max(1 << shape.merge_bits()), u32::MAX);
                for p in &passes {
                    model_pass(&mut keys, &shape, p);
                }
                keys.truncate(expected.len());
                assert!(keys == expected, "{shape:?}, 2^{log_n} keys: {passes:?}");
            }
        }
    }
}
