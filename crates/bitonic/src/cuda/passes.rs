//! The tuned network's passes (kernels/tuned.cu): which passes sort rows of 2^b slots, with
//! which tile and launch shape, and their launch as one CUDA graph or in clusters.
//!
//! A pass loads one tile per block into registers and shared memory, runs a run of the
//! network's steps whose partners lie in the tile, and stores it back. The first pass sorts
//! each tile (every stage that fits); the later stages' steps go in as few passes as the tile
//! allows: strided passes, tile merges and *windows* that finish one stage and start the next
//! (docs/notes/tuned.md tells how each rule was measured).

use super::kernels::{KernelModule, Tuned};
use super::launch::{self, cluster, config, PassArgs, PassArrays};
use super::layout::{RowLayout, MAP_ON_LOAD, MAP_ON_STORE};
use super::{DeviceInfo, Gpu};
use crate::error::{CudaContext as _, Result};
use crate::network::padded_len;
use crate::policy::Policy;
use cudarc::driver::{CudaFunction, CudaView, CudaViewMut, DeviceRepr};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

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

/// log2 of the keys a thread of each tuned kernel holds (kernels/tuned/tuning.cuh's E_BITS,
/// passed to the kernels as defines): 32 u32 keys a thread, 16 in the narrow kernel, 16 u64
/// keys or 16-byte key-index pairs.
const E_BITS_U32: u32 = 5;
const E_BITS_U32_NARROW: u32 = 4;
const E_BITS_U64: u32 = 4;
const E_BITS_PAIRS: u32 = 4;

/// The most threads a block of the tuned kernels has (their `__launch_bounds__`, passed as
/// defines): key-index pairs take three registers a key, so 256 of them.
const MAX_THREADS: u32 = 1024;
const MAX_THREADS_PAIRS: u32 = 256;

/// The tuned kernels' `-D` defines: their keys a thread and most threads.
pub(crate) fn kernel_defines() -> Vec<crate::cuda::nvrtc::Define> {
    vec![
        ("KERNEL_E_BITS_U32", E_BITS_U32.to_string()),
        ("KERNEL_E_BITS_U32_NARROW", E_BITS_U32_NARROW.to_string()),
        ("KERNEL_E_BITS_U64", E_BITS_U64.to_string()),
        ("KERNEL_E_BITS_PAIRS", E_BITS_PAIRS.to_string()),
        ("KERNEL_TUNED_THREADS", MAX_THREADS.to_string()),
        ("KERNEL_TUNED_THREADS_PAIRS", MAX_THREADS_PAIRS.to_string()),
    ]
}

impl Tuned {
    /// log2 of the keys a thread holds: the kernel's E_BITS.
    fn register_bits(self) -> u32 {
        match self {
            Tuned::U32 => E_BITS_U32,
            Tuned::U32Narrow => E_BITS_U32_NARROW,
            Tuned::U64 => E_BITS_U64,
            Tuned::Kv64 => E_BITS_PAIRS,
        }
    }

    /// The most threads a block of the kernel has: its `__launch_bounds__`, which the compiler
    /// keeps within the registers a thread may use.
    fn max_threads(self) -> u32 {
        match self {
            Tuned::Kv64 => MAX_THREADS_PAIRS,
            _ => MAX_THREADS,
        }
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
            max_threads: (info.max_threads_per_block as u32).min(kernel.max_threads()),
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
/// [`Policy::max_cluster_blocks`] tiles is sorted by that cluster; larger inputs keep clusters
/// off and get smaller tiles (more blocks, more passes) while fewer than half the SMs would
/// get one. With [`Policy::wide_half_tiles`], 8-byte rows of half a tile get a tile each.
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
    let wanted = policy.tile_bits(word_bytes);
    let mut tile_bits =
        (register_bits + 31 - limits.max_threads.leading_zeros()).min(wanted.max(min_bits));
    while tile_bits > min_bits && !fits(tile_bits) {
        tile_bits -= 1;
    }
    // A small input gets a tile just big enough (at least one warp of threads).
    let needed = padded_len(slots).trailing_zeros().max(min_bits);
    tile_bits = tile_bits.min(needed);

    let spread_bits = policy.spread_tile_bits.max(min_bits);
    let sms = limits.multiprocessors;
    let most_cluster_bits = policy.max_cluster_blocks.max(1).ilog2();
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
    if word_bytes == 8 && policy.wide_half_tiles && cluster_bits == 0 && row_bits + 1 == tile_bits {
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
/// [`Policy::narrow_small_u32`], a u32 input too small to fill full tiles (its tiles shrunk or
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
        let e = kernel.register_bits();
        tuned_shape(policy, limits, word_bytes, slots, row_bits, e)
    };
    let wide = Tuned::of_word_bytes(word_bytes);
    let shape = shape_of(wide);
    let narrow =
        word_bytes == 4 && policy.narrow_small_u32 && shape.tile_bits < policy.tile_bits(4);
    if narrow {
        (Tuned::U32Narrow, shape_of(Tuned::U32Narrow))
    } else {
        (wide, shape)
    }
}

/// The kernel module the tuned passes over `layout` of words of `word_bytes` run on `info`'s
/// device (one module a kernel and tile size): what a sort compiles before it starts.
pub(crate) fn tuned_module(
    info: &DeviceInfo,
    policy: &Policy,
    word_bytes: usize,
    layout: &RowLayout,
) -> &'static KernelModule {
    let (kernel, shape) = tuned_plan(info, policy, word_bytes, layout);
    kernel.module(shape.tile_bits)
}

/// The tuned kernel of words `T` for `layout`, compiled for its tile, and its shape.
fn tuned_kernel<T>(
    gpu: &Gpu,
    policy: &Policy,
    layout: &RowLayout,
) -> Result<(CudaFunction, TunedShape)> {
    let (kernel, shape) = tuned_plan(gpu.info(), policy, std::mem::size_of::<T>(), layout);
    let module = kernel.module(shape.tile_bits);
    let function = gpu.function_for(policy, module, kernel.kernel_name())?;
    Ok((function, shape))
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

/// How many passes the tuned network makes over one array of `n` words `T`.
pub(crate) fn pass_count<T>(gpu: &Gpu, policy: &Policy, n: usize) -> Result<usize> {
    let (_, shape) = tuned_kernel::<T>(gpu, policy, &RowLayout::rows(n, n))?;
    Ok(tuned_passes(&shape, n).len())
}

/// Sorts every row of `layout` with the tuned passes; `map` is `MapKind | MAP_DESCENDING`
/// (0 for plain ascending words, and for pairs the pack kernel already mapped), applied on the
/// first load and undone on the last store. `T` is a u32 or u64 word or a 16-byte KeyIndex.
pub(crate) fn tuned<T: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    keys: &mut CudaViewMut<T>,
    layout: RowLayout,
    map: u32,
) -> Result<()> {
    tuned_keeping_map(gpu, policy, None, keys, layout, map, false)
}

/// [`tuned`], but with `keep_mapped` the last store leaves the sortable words mapped (the tile
/// sorts of a merge sort, whose last merge level unmaps them), and with a `source` the first
/// pass reads the keys from there (as long as `keys`, which it leaves as it is).
pub(crate) fn tuned_keeping_map<T: DeviceRepr>(
    gpu: &Gpu,
    policy: &Policy,
    source: Option<&CudaView<T>>,
    keys: &mut CudaViewMut<T>,
    layout: RowLayout,
    map: u32,
    keep_mapped: bool,
) -> Result<()> {
    if layout.row_bits == 0 || layout.rows == 0 {
        // Rows of one key: sorted already.
        if let Some(source) = source {
            gpu.stream()
                .memcpy_dtod(source, keys)
                .during(|| "copying rows of one key".into())?;
        }
        return Ok(());
    }
    let (kernel, mut shape) = tuned_kernel::<T>(gpu, policy, &layout)?;
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
    // Several passes go as one CUDA graph (launched once, it saves a launch's host time a
    // pass), but not in clusters (their launch attribute) nor over segments (their offsets
    // arrays are new every call, so every node of the cached graph would be given new
    // arguments every call; not measured against launches pass by pass).
    if passes.len() > 1 && shape.cluster_bits == 0 && !layout.is_segmented() {
        return launch::tuned_passes_graph(
            gpu,
            &kernel,
            cfg,
            PassArrays { source, keys },
            (layout, shape.tile_bits),
            &fields,
        );
    }
    for (i, (p, args)) in passes.iter().zip(fields).enumerate() {
        let args = (layout, shape.tile_bits, args);
        let cluster_blocks = if p.is_contiguous() {
            1 << shape.cluster_bits
        } else {
            1
        };
        // The first pass reads the source; the later ones what the pass before wrote.
        let source = if i == 0 { source } else { None };
        let arrays = PassArrays {
            source,
            keys: &mut *keys,
        };
        launch::tuned_pass(gpu, &kernel, cfg, cluster_blocks, arrays, args)
            .during(|| format!("launching tuned pass {p:?} of {shape:?}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// An H100's numbers as the probe reads them.
    fn h100() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "H100".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            max_threads_per_block: 1024,
            warp_size: 32,
            shared_per_block: 48 << 10,
            shared_per_block_optin: 227 << 10,
            l2_bytes: 50 << 20,
            total_memory: 80 << 30,
            driver_version: (13, 0),
            nvrtc_version: (13, 0),
        }
    }

    #[test]
    fn each_input_names_a_module_of_its_tile() {
        let (info, policy) = (h100(), Policy::HOPPER);
        let module = |bytes, n, row_len| {
            let m = tuned_module(&info, &policy, bytes, &RowLayout::rows(n, row_len));
            m.name()
        };
        // Large arrays, and many rows, take the policy's full tiles; a small array the narrow
        // u32 kernel's smaller tiles (spread over a cluster).
        assert_eq!(module(4, 1 << 24, 1 << 24), "tuned.cu[u32, 2^14]");
        assert_eq!(module(8, 1 << 24, 1 << 24), "tuned.cu[u64, 2^13]");
        assert_eq!(module(16, 1 << 24, 1 << 24), "tuned.cu[kv64, 2^12]");
        assert_eq!(module(4, 1 << 15, 1 << 15), "tuned.cu[u32_narrow, 2^12]");
        assert_eq!(module(4, 4096 * 257, 4096), "tuned.cu[u32, 2^14]");
        // 8-byte rows of half a tile (a u64 merge sort's runs past 2^21 keys) get a tile each;
        // shorter ones share tiles, and u32 rows of half a tile do too.
        assert_eq!(module(8, 1 << 24, 1 << 12), "tuned.cu[u64, 2^12]");
        assert_eq!(module(8, 1 << 24, 1 << 11), "tuned.cu[u64, 2^13]");
        assert_eq!(module(4, 1 << 24, 1 << 13), "tuned.cu[u32, 2^14]");
        let shared = Policy {
            wide_half_tiles: false,
            ..Policy::HOPPER
        };
        let m = tuned_module(&info, &shared, 8, &RowLayout::rows(1 << 24, 1 << 12));
        assert_eq!(m.name(), "tuned.cu[u64, 2^13]");
        // Every length and row length, every word, maps to a module whose tile the kernel
        // has (Tuned::module panics otherwise), for the policy and for a big-tile one.
        let big_tiles = Policy {
            tile_bytes: 1 << 20,
            ..Policy::HOPPER
        };
        for policy in [Policy::HOPPER, Policy::AMPERE, big_tiles] {
            for bytes in [4, 8, 16] {
                for log_n in 1..=29 {
                    for row_bits in 1..=log_n {
                        let layout = RowLayout::rows(1 << log_n, 1 << row_bits);
                        let (kernel, shape) = tuned_plan(&info, &policy, bytes, &layout);
                        assert_eq!(
                            kernel.module(shape.tile_bits).tile_bits,
                            Some(shape.tile_bits)
                        );
                    }
                }
            }
        }
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
