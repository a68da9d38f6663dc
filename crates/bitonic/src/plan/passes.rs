//! The tuned network's passes (kernels/tuned.cu): which passes sort rows of 2^b slots, with
//! which kernel, tile and launch shape.
//!
//! A pass loads one tile per block into registers and shared memory, runs a run of the
//! network's steps whose partners lie in the tile, and stores it back. The first pass sorts
//! each tile (every stage that fits); the later stages' steps go in as few passes as the tile
//! allows: strided passes, tile merges and *windows* that finish one stage and start the next.
//! docs/design/network-passes.md explains the shapes; src/cuda/passes.rs launches a
//! [`PassPlan`].

use crate::device::{DeviceFacts, DeviceInfo};
use crate::error::Result;
use crate::kernels::abi::{RowLayout, MAP_ON_LOAD, MAP_ON_STORE};
use crate::kernels::{KernelModule, Tuned};
use crate::network::padded_len;
use crate::policy::{Policy, SortPolicy};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The arguments of one tuned pass after the keys, the layout and the tile bits:
/// `[col_bits, lo, b_first, b_last, hi_first, stop, map]` (kernels/tuned.cu's `tuned_pass_*`).
pub(crate) type PassArgs = [u32; 7];

/// The tuned passes over one layout of rows: the kernel and its module, the launch shape and
/// each pass's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassPlan {
    pub(crate) kernel: Tuned,
    pub(crate) module: &'static KernelModule,
    /// The rows the passes sort; a segmented layout gets its device arrays at run time.
    pub(crate) layout: RowLayout,
    pub(crate) tile_bits: u32,
    pub(crate) threads: u32,
    pub(crate) cluster_bits: u32,
    pub(crate) blocks: u32,
    pub(crate) shared_bytes: u32,
    /// Each pass and its arguments, in order (none: rows of one key, sorted already).
    pub(crate) passes: Vec<(TunedPass, PassArgs)>,
    /// Whether the passes launch as one CUDA graph (several passes, no clusters, no
    /// segments).
    pub(crate) graph: bool,
}

impl PassPlan {
    /// The kernel modules the plan runs: its tuned module, or none for rows of one key (no
    /// passes: the runners copy or fill instead of launching).
    pub(crate) fn modules(&self) -> Vec<&'static KernelModule> {
        if self.passes.is_empty() {
            Vec::new()
        } else {
            vec![self.module]
        }
    }

    /// How many passes run.
    pub fn pass_count(&self) -> usize {
        self.passes.len()
    }

    /// log2 of the keys one block's tile holds.
    pub fn tile_bits(&self) -> u32 {
        self.tile_bits
    }

    /// Blocks of a thread-block cluster in the contiguous passes (1: no clusters).
    pub fn cluster_blocks(&self) -> u32 {
        1 << self.cluster_bits
    }

    /// Threads of a block.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// The kernel module the passes run.
    pub fn module(&self) -> &'static KernelModule {
        self.module
    }

    /// Pairs the workspace holds between the passes of a packed plan over `n` keys
    /// (src/cuda/rows.rs `sort_pairs`, `select_rows`): none where one pass both packs and
    /// unpacks.
    pub(crate) fn pairs_between_passes(&self, n: usize) -> usize {
        if self.passes.len() > 1 {
            n
        } else {
            0
        }
    }
}

/// The tuned passes that sort each row of `layout`, words of `word_bytes` (4, 8 or 16-byte
/// key-index pairs), with the key map `map` (`MapKind | MAP_DESCENDING`; 0 for words that sort
/// as they are) applied on the first load and, unless `keep_mapped`, undone on the last store.
/// Clusters shrink until the device says they fit.
pub(crate) fn plan_passes(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    word_bytes: usize,
    layout: RowLayout,
    map: u32,
    keep_mapped: bool,
) -> Result<PassPlan> {
    let (kernel, mut shape) = tuned_plan(facts.info(), policy, word_bytes, &layout);
    let module = kernel.module(shape.tile_bits);
    let shared_bytes = (1u32 << shape.tile_bits) * word_bytes as u32;
    let blocks = layout.slots().div_ceil(1 << shape.tile_bits) as u32;
    let mut plan = PassPlan {
        kernel,
        module,
        layout,
        tile_bits: shape.tile_bits,
        threads: shape.threads,
        cluster_bits: 0,
        blocks,
        shared_bytes,
        passes: Vec::new(),
        graph: false,
    };
    if layout.row_bits == 0 || layout.rows == 0 {
        return Ok(plan); // rows of one key: sorted already
    }
    while shape.cluster_bits > 0
        && !facts.clusters_fit(module, 1 << shape.cluster_bits, shape.threads, shared_bytes)?
    {
        shape.cluster_bits -= 1;
    }
    let passes = tuned_passes(&shape, 1 << layout.row_bits);
    let last = passes.len() - 1;
    let flags = |i: usize| {
        if map == 0 {
            return 0;
        }
        let load = if i == 0 { MAP_ON_LOAD } else { 0 };
        let store = if i == last && !keep_mapped {
            MAP_ON_STORE
        } else {
            0
        };
        map | load | store
    };
    plan.passes = passes
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let args = [
                p.col_bits,
                p.lo,
                p.b_first,
                p.b_last,
                p.hi_first,
                p.stop,
                flags(i),
            ];
            (p, args)
        })
        .collect();
    plan.cluster_bits = shape.cluster_bits;
    // Several passes go as one CUDA graph (launched once, it saves a launch's host time a
    // pass), but not in clusters (their launch attribute) nor over segments (their offsets
    // arrays are new every call, so every node of a cached graph would change every call).
    plan.graph = plan.passes.len() > 1 && shape.cluster_bits == 0 && !layout.is_segmented();
    Ok(plan)
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

/// log2 of the keys a thread of `kernel` holds: the kernel's E_BITS.
fn register_bits(kernel: Tuned) -> u32 {
    match kernel {
        Tuned::U32 => SortPolicy::E_BITS_U32,
        Tuned::U32Narrow => SortPolicy::E_BITS_U32_NARROW,
        Tuned::U64 => SortPolicy::E_BITS_U64,
        Tuned::Kv64 => SortPolicy::E_BITS_PAIRS,
    }
}

/// The most threads a block of `kernel` has: its `__launch_bounds__`, which the compiler keeps
/// within the registers a thread may use.
fn max_threads(kernel: Tuned) -> u32 {
    match kernel {
        Tuned::Kv64 => SortPolicy::MAX_THREADS_PAIRS,
        _ => SortPolicy::MAX_THREADS,
    }
}

/// What bounds a tuned kernel's tile on one device: the threads a block may have (the kernel's
/// own limit, from its `__launch_bounds__` and registers, and the device's), the shared memory
/// a block may opt into, and the SMs to fill.
#[derive(Clone, Copy, Debug)]
struct TileLimits {
    max_threads: u32,
    shared_bytes: usize,
    multiprocessors: usize,
}

impl TileLimits {
    fn of(info: &DeviceInfo, kernel: Tuned) -> TileLimits {
        TileLimits {
            max_threads: (info.max_threads_per_block as u32).min(max_threads(kernel)),
            shared_bytes: info.shared_per_block_optin,
            multiprocessors: info.multiprocessors.max(1) as usize,
        }
    }
}

/// The shape of the tuned passes over `slots` slots in rows of 2^`row_bits`, for words of
/// `word_bytes` held 2^`register_bits` a thread (the kernel's E_BITS).
///
/// The policy's tile (64 KiB on the H100), shrunk to what the device's shared memory and the
/// kernel's thread limit allow, and to what a small input needs. An input too small to give
/// every SM a block is spread over smaller tiles: a row that fits one cluster of up to
/// [`crate::policy::SortPolicy::max_cluster_blocks`] tiles is sorted by that cluster; larger inputs keep clusters
/// off and get smaller tiles (more blocks, more passes) while fewer than half the SMs would
/// get one. With [`crate::policy::SortPolicy::wide_half_tiles`], 8-byte rows of half a tile get a tile each.
fn tuned_shape(
    policy: &Policy,
    limits: TileLimits,
    word_bytes: usize,
    slots: usize,
    row_bits: u32,
    register_bits: u32,
) -> TunedShape {
    let fits = |bits: u32| (1usize << bits) * word_bytes <= limits.shared_bytes;
    let min_bits = register_bits + 5; // one warp
    let wanted = policy.sort.tile_bits(word_bytes);
    let mut tile_bits =
        (register_bits + 31 - limits.max_threads.leading_zeros()).min(wanted.max(min_bits));
    while tile_bits > min_bits && !fits(tile_bits) {
        tile_bits -= 1;
    }
    // A small input gets a tile just big enough (at least one warp of threads).
    let needed = padded_len(slots).trailing_zeros().max(min_bits);
    tile_bits = tile_bits.min(needed);

    let spread_bits = policy.sort.spread_tile_bits.max(min_bits);
    let sms = limits.multiprocessors;
    let most_cluster_bits = policy.sort.max_cluster_blocks.max(1).ilog2();
    let mut cluster_bits = 0;
    if (slots >> tile_bits) < sms && row_bits > spread_bits.min(tile_bits) {
        let spread_tile = row_bits.saturating_sub(most_cluster_bits).max(spread_bits);
        if spread_tile <= spread_bits + 1 && spread_tile <= tile_bits {
            cluster_bits = row_bits - spread_tile;
            tile_bits = spread_tile;
        } else {
            while tile_bits > spread_bits && (slots >> tile_bits) < sms / 2 {
                tile_bits -= 1;
            }
        }
    }
    if word_bytes == 8
        && policy.sort.wide_half_tiles
        && cluster_bits == 0
        && row_bits + 1 == tile_bits
    {
        tile_bits = row_bits.max(min_bits);
    }
    TunedShape {
        tile_bits,
        threads: 1 << (tile_bits - register_bits),
        cluster_bits,
    }
}

/// The tuned kernel and its shape for `layout` of words of `word_bytes` on `info`'s device. The
/// wide kernels hold 32 u32 or 16 u64 keys (or key-index pairs) a thread. With
/// [`crate::policy::SortPolicy::narrow_small_u32`], a u32 input too small to fill full tiles (its tiles shrunk or
/// spread over a cluster) gets the narrow kernel instead, 16 keys a thread in twice the
/// threads: its passes are latency-bound, and more warps hide more of the latency. With full
/// tiles the passes are throughput-bound and the wide kernel's fewer instructions a key win.
fn tuned_plan(
    info: &DeviceInfo,
    policy: &Policy,
    word_bytes: usize,
    layout: &RowLayout,
) -> (Tuned, TunedShape) {
    let (slots, row_bits) = (layout.slots(), layout.row_bits);
    let shape_of = |kernel: Tuned| {
        let limits = TileLimits::of(info, kernel);
        let e = register_bits(kernel);
        tuned_shape(policy, limits, word_bytes, slots, row_bits, e)
    };
    let wide = Tuned::of_word_bytes(word_bytes);
    let shape = shape_of(wide);
    let narrow = word_bytes == 4
        && policy.sort.narrow_small_u32
        && shape.tile_bits < policy.sort.tile_bits(4);
    if narrow {
        (Tuned::U32Narrow, shape_of(Tuned::U32Narrow))
    } else {
        (wide, shape)
    }
}

/// One launch of `tuned_pass` (see kernels/tuned.cu for the meaning of the fields): its tile
/// is rows of 2^col_bits adjacent keys, 2^lo keys apart (contiguous when `lo == col_bits`), and
/// it runs stages `b_first ..= b_last`, the first from bit `hi_first`, the last down to `stop`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TunedPass {
    pub(crate) col_bits: u32,
    pub(crate) lo: u32,
    pub(crate) b_first: u32,
    pub(crate) b_last: u32,
    pub(crate) hi_first: u32,
    pub(crate) stop: u32,
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

    pub(crate) fn is_contiguous(&self) -> bool {
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
fn tuned_passes(shape: &TunedShape, n: usize) -> Vec<TunedPass> {
    let merge_bits = shape.merge_bits();
    let log_p = padded_len(n).trailing_zeros();
    let mut passes = vec![TunedPass {
        b_last: log_p.min(merge_bits) - 1,
        ..TunedPass::tile_merge(0, 0)
    }];
    if shape.cluster_bits == 0 {
        passes.extend(windowed_stages(shape, log_p));
    } else {
        for b in merge_bits..log_p {
            passes.extend(stage_from(shape, b, b));
        }
    }
    passes
}

/// Stages `tile_bits .. log_p` in the cheapest list of passes (docs/notes/tuned.md tells how the
/// costs were measured).
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
/// trips) than a tile merge: those passes are bound by shared memory, the others by device
/// memory bandwidth (any cost from 1.2 to 1.5 gives the same plans). The cheapest plan comes
/// from dynamic programming over the (stage, bit) points, back to front; plans are cached per
/// shape and length.
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

#[cfg(test)]
mod tests;
