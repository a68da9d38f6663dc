//! The top-k selections' plans: which variant selects which rows, and its launches.
//!
//! Every variant selects over *composites* of a key's sortable word and its complemented
//! index, larger better, so that among equal keys the smaller index wins and the result is the
//! first k of a stable sort (kernels/topk/common.cuh). 16-bit keys are read as they are.
//!
//! * **The warp sort** ([`Strategy::TopkWarpSort`]): a row of at most
//!   [`TopkPolicy::WARP_SORT_MOST`] keys in one warp's registers, sorted by a bitonic network,
//!   or, the *warp filter*, only the keys past a threshold.
//! * **The radix select** ([`Strategy::TopkRadix`], [`radix`]): a block holds a chunk of a row in
//!   registers and narrows it to its k best digit by digit; the next pass selects over the
//!   chunks' results, until a row is one chunk.
//! * **The spread select** ([`Strategy::TopkSpread`], [`spread`]): few long rows; a sample's
//!   threshold, a gather by many blocks a row, and one select a row.
//! * **The filter** ([`Strategy::TopkFilter`]): long rows and large k; a block keeps its
//!   chunk's k best in shared memory and lets only better keys through.
//!
//! docs/design/topk.md tells where each wins.

pub(crate) mod radix;
pub(crate) mod spread;

use super::workspace::{Scratch, Workspace};
use super::Strategy;
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::kernels::{self, KernelModule};
use crate::policy::{Policy, TopkPolicy as T};
use radix::{radix_plan, RadixKind, RadixPass};
use spread::{spread_plan, SpreadPlan};

/// The shape arguments of the filter's, the radix select's and the warp sort's kernels (the
/// warp sort reads only row_len, rows, k and map), in the kernels' order after the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopkArgs {
    pub(crate) row_len: u64,
    pub(crate) rows: u32,
    pub(crate) chunks: u32,
    pub(crate) chunk_len: u64,
    pub(crate) k: u32,
    pub(crate) slots: u32,
    pub(crate) map: u32,
}

/// One launch of a top-k pass: kernel `kernel` of `module`, `blocks` blocks of
/// [`crate::policy::TopkPolicy::THREADS`] with `shared` bytes of dynamic shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopkPass {
    pub(crate) module: &'static KernelModule,
    pub(crate) kernel: String,
    pub(crate) shared: u32,
    pub(crate) blocks: u32,
    pub(crate) args: TopkArgs,
}

impl TopkPass {
    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    /// Chunks a row is cut into (1: the last pass).
    pub fn chunks(&self) -> usize {
        self.args.chunks as usize
    }
}

/// The spread select's launches: sample (and, with several sample blocks a row, threshold),
/// gather and select, and where its scratch keeps each part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SpreadLaunch {
    pub(crate) module: &'static KernelModule,
    pub(crate) width: &'static str,
    pub(crate) plan: SpreadPlan,
    pub(crate) args: SpreadArgs,
    pub(crate) scratch: SpreadScratch,
    /// Blocks of the sample, threshold, gather and select launches.
    pub(crate) blocks: [u32; 4],
    /// Dynamic shared memory of the select.
    pub(crate) select_shared: u32,
}

/// The shape of the spread select's launches (kernels/topk/spread.cuh `topk_spread_*`): rows
/// of `row_len` keys, each gathered in `chunks` chunks of `chunk_len`, keeping `k`, the
/// select's sort over `slots` composites, key map `map`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpreadArgs {
    pub(crate) row_len: u64,
    pub(crate) rows: u32,
    pub(crate) chunks: u32,
    pub(crate) chunk_len: u64,
    pub(crate) k: u32,
    pub(crate) slots: u32,
    pub(crate) map: u32,
    /// The samples that a row's threshold is reached by, and the blocks that sample a row.
    pub(crate) rank: u32,
    pub(crate) sample_blocks: u32,
}

/// Where the spread select keeps its intermediate results, carved from one buffer: each row's
/// [`TopkPolicy::SPREAD_CAPACITY`] candidate composites better than its threshold and as many
/// tied with it (at the start), its threshold, count and ties (three u32:
/// kernels/topk/spread.cuh `SpreadRow`), each chunk's count of ties, and, where several blocks
/// sample a row, their lists of `rank` words each. Offsets in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpreadScratch {
    pub(crate) rows: usize,
    pub(crate) chunk_ties: usize,
    pub(crate) lists: usize,
    pub(crate) end: usize,
}

impl SpreadScratch {
    fn new(a: &SpreadArgs, composite_bytes: usize) -> SpreadScratch {
        let rows = a.rows as usize;
        let candidates = rows * 2 * T::SPREAD_CAPACITY * composite_bytes;
        let chunk_ties = candidates + 3 * rows * 4;
        let lists = chunk_ties + rows * a.chunks as usize * 4;
        let listed = match a.sample_blocks {
            1 => 0,
            blocks => rows * blocks as usize * a.rank as usize,
        };
        SpreadScratch {
            rows: candidates,
            chunk_ties,
            lists,
            end: lists + listed * 4,
        }
    }
}

/// A top-k selection of `k` of each of `rows` rows of `row_len` keys of `key_bytes` (2, 4 or
/// 8): the variant's launches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopkPlan {
    /// Rows, keys a row, and keys kept a row.
    pub rows: usize,
    /// Keys a row.
    pub row_len: usize,
    /// Keys kept a row.
    pub k: usize,
    pub(crate) steps: TopkSteps,
}

/// A top-k's launches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TopkSteps {
    /// Passes of the warp sort, the radix select or the filter (several as one graph): each
    /// after the first reads the partial results of the one before (k a chunk, in two halves
    /// of `half` bytes each), the last writes the values and indices.
    Passes {
        passes: Vec<TopkPass>,
        composite_bytes: usize,
        half: usize,
    },
    /// The spread select.
    Spread(SpreadLaunch),
}

impl TopkPlan {
    /// The passes' kernels, in order (the spread select's four, or three, steps).
    pub fn kernels(&self) -> Vec<String> {
        match &self.steps {
            TopkSteps::Passes { passes, .. } => passes.iter().map(|p| p.kernel.clone()).collect(),
            TopkSteps::Spread(s) => {
                let mut steps = vec!["sample"];
                if s.args.sample_blocks > 1 {
                    steps.push("threshold");
                }
                steps.extend(["gather", "select"]);
                steps
                    .into_iter()
                    .map(|step| format!("topk_spread_{step}_{}", s.width))
                    .collect()
            }
        }
    }

    /// The kernel modules the plan runs.
    pub(crate) fn modules(&self) -> Vec<&'static KernelModule> {
        let mut modules: Vec<&'static KernelModule> = match &self.steps {
            TopkSteps::Passes { passes, .. } => passes.iter().map(|p| p.module).collect(),
            TopkSteps::Spread(s) => vec![s.module],
        };
        modules.dedup();
        modules
    }
}

/// The variant of a top-k selection of `rows` rows of `row_len` keys of `key_bytes`, keeping
/// `k` (at most [`TopkPolicy::FILTER_MAX_K`] and half a row, unless the rows fit a warp): the
/// warp sort for rows a warp holds; the spread select where its sample's threshold leaves few
/// enough candidates; else the radix select or the filter.
pub(crate) fn variant(
    info: &DeviceInfo,
    policy: &Policy,
    (rows, row_len, k): (usize, usize, usize),
    key_bytes: usize,
) -> Strategy {
    let p = &policy.topk;
    let warp_takes = key_bytes <= 4
        && row_len <= T::WARP_SORT_MOST
        && (row_len <= p.warp_sort_rows_up_to
            || k <= p.warp_filter_max_k
            || k >= p.warp_sort_min_k(key_bytes)
            || 2 * k > row_len);
    if warp_takes {
        return Strategy::TopkWarpSort;
    }
    let radix = row_len <= T::RADIX_CHUNK
        || (k <= T::RADIX_MAX_K && row_len <= p.filter_above)
        || k <= p.long_radix_max_k.min(T::RADIX_MAX_K);
    let sms = info.multiprocessors.max(1) as usize;
    if spread_plan(rows, row_len, k, key_bytes, sms, policy).is_some() {
        Strategy::TopkSpread
    } else if radix {
        Strategy::TopkRadix
    } else {
        Strategy::TopkFilter
    }
}

/// The launches of `strategy` (a top-k by composites) over `rows` rows of `row_len` keys of
/// `key_bytes`, keeping `k` (1 ≤ k ≤ row_len) with the key map `map` (larger better: the
/// smallest keys select complemented words); the scratch in `workspace`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_topk(
    info: &DeviceInfo,
    policy: &Policy,
    strategy: Strategy,
    (rows, row_len, k): (usize, usize, usize),
    key_bytes: usize,
    map: u32,
    workspace: &mut Workspace,
) -> Result<TopkPlan> {
    let composite_bytes = if key_bytes == 8 { 16 } else { 8 };
    let sms = info.multiprocessors.max(1) as usize;
    let shape = Shape {
        rows,
        row_len,
        k,
        key_bytes,
        map,
        sms,
    };
    let steps = match strategy {
        Strategy::TopkSpread => {
            let plan = spread_plan(rows, row_len, k, key_bytes, sms, policy)
                .expect("the spread select takes the rows it was chosen for");
            let launch = spread(&shape, plan);
            workspace.add(Scratch::Spread, launch.scratch.end, 1);
            TopkSteps::Spread(launch)
        }
        _ => {
            let passes = match strategy {
                Strategy::TopkWarpSort => vec![warp_sort(&shape, policy)],
                Strategy::TopkRadix => radix(&shape, policy, composite_bytes),
                Strategy::TopkFilter => filter(&shape, info, composite_bytes)?,
                other => unreachable!("{other:?} is no top-k by composites"),
            };
            let half = partials_half(&passes, composite_bytes);
            workspace.add(Scratch::Partials, 2 * half, 1);
            TopkSteps::Passes {
                passes,
                composite_bytes,
                half,
            }
        }
    };
    Ok(TopkPlan {
        rows,
        row_len,
        k,
        steps,
    })
}

/// What every variant's planning reads: the rows, k, the key width, the key map and the SMs.
struct Shape {
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    map: u32,
    sms: usize,
}

impl Shape {
    /// The pass of kernel `kernel` in `module` with `shared` bytes over rows of `row_len`
    /// elements (keys, or partial results) cut into `chunks` chunks of `chunk_len`, keeping
    /// k of each in `slots`; `items` blocks' worth of work (chunks, or warps' rows).
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        (module, kernel, shared): (&'static KernelModule, String, usize),
        (row_len, chunks, chunk_len): (usize, usize, usize),
        slots: usize,
        items: usize,
    ) -> TopkPass {
        TopkPass {
            module,
            kernel,
            shared: shared as u32,
            blocks: self.blocks(items),
            args: TopkArgs {
                row_len: row_len as u64,
                rows: self.rows as u32,
                chunks: chunks as u32,
                chunk_len: chunk_len as u64,
                k: self.k as u32,
                slots: slots as u32,
                map: self.map,
            },
        }
    }

    /// Blocks for `items` rows, chunks or warps' rows: one an item, up to 32 a
    /// multiprocessor, whose blocks then take items `gridDim.x` apart.
    fn blocks(&self, items: usize) -> u32 {
        items.clamp(1, self.sms * 32) as u32
    }
}

/// The kernels' name of words of `key_bytes`.
fn width(key_bytes: usize) -> &'static str {
    match key_bytes {
        2 => "u16",
        4 => "u32",
        _ => "u64",
    }
}

/// The module of the filter and take kernels of keys of `key_bytes` bytes.
pub(crate) fn module(key_bytes: usize) -> &'static KernelModule {
    match key_bytes {
        2 => &kernels::TOPK_U16,
        4 => &kernels::TOPK_U32,
        _ => &kernels::TOPK_U64,
    }
}

/// The module of the radix select of keys of `key_bytes` at `per_thread` (one of
/// [`TopkPolicy::RADIX_PER_THREAD`]) elements a thread.
fn radix_module(key_bytes: usize, per_thread: usize) -> &'static KernelModule {
    let family = match key_bytes {
        2 => &kernels::TOPK_RADIX_U16,
        4 => &kernels::TOPK_RADIX_U32,
        _ => &kernels::TOPK_RADIX_U64,
    };
    let at = T::RADIX_PER_THREAD
        .iter()
        .position(|&r| r == per_thread)
        .expect("a radix width the kernels have");
    &family[at]
}

/// The part of the sampled and the spread select for keys of `key_bytes` (2 or 4).
fn sampled_module(key_bytes: usize) -> &'static KernelModule {
    match key_bytes {
        2 => &kernels::TOPK_SAMPLED_U16,
        _ => &kernels::TOPK_SAMPLED_U32,
    }
}

/// The bytes of each of the two halves of scratch that the passes alternate their partial
/// results between (composites of `composite_bytes`, k a chunk; a multiple of 16 bytes).
fn partials_half(passes: &[TopkPass], composite_bytes: usize) -> usize {
    let most = passes
        .iter()
        .map(|p| &p.args)
        .filter(|a| a.chunks > 1)
        .map(|a| a.rows as usize * a.chunks as usize * a.k as usize * composite_bytes)
        .max()
        .unwrap_or(0);
    most.next_multiple_of(16)
}

/// One launch of the filter: rows of `row_len` elements cut into `chunks` chunks of
/// `chunk_len` (the last may be shorter), a block's buffer of `slots` composites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FilterPass {
    pub(crate) row_len: usize,
    pub(crate) chunks: usize,
    pub(crate) chunk_len: usize,
    pub(crate) slots: usize,
}

/// Elements a block of the filter loads a tile: one 16-byte vector a thread.
fn filter_tile(element_bytes: usize) -> usize {
    T::THREADS as usize * (T::VECTOR_BYTES / element_bytes).max(1)
}

/// The passes of the filter over `rows` rows of `row_len` keys of `key_bytes` bytes, keeping
/// `k` (1 ≤ k ≤ row_len): the first over the keys, each later one over the k best of every
/// chunk of the pass before, the last with one chunk a row. `multiprocessors` sizes the grid.
pub(crate) fn filter_plan(
    rows: usize,
    row_len: usize,
    k: usize,
    key_bytes: usize,
    multiprocessors: usize,
) -> Vec<FilterPass> {
    // 16- and 32-bit keys make u64 composites, 64-bit keys 16-byte ones.
    let composite_bytes = if key_bytes == 8 { 16 } else { 8 };
    let wanted = (T::FILTER_BLOCKS_PER_SM * multiprocessors.max(1)).div_ceil(rows.max(1));
    let min_chunk = T::FILTER_MIN_CHUNK.max(T::FILTER_CHUNK_PER_K * k);
    let mut passes = Vec::new();
    let (mut len, mut element_bytes) = (row_len, key_bytes);
    loop {
        let chunks = wanted.min(len.div_ceil(min_chunk)).max(1);
        let chunk_len = len
            .div_ceil(chunks)
            .next_multiple_of(T::CHUNK_ALIGN)
            .min(len);
        let chunks = len.div_ceil(chunk_len);
        // Room for two tiles of candidates (or the whole chunk) beside the best k: a tile fits
        // after every flush, and a flush comes at most every other tile.
        let slots = (k + chunk_len.min(2 * filter_tile(element_bytes))).next_power_of_two();
        passes.push(FilterPass {
            row_len: len,
            chunks,
            chunk_len,
            slots,
        });
        if chunks == 1 {
            return passes;
        }
        (len, element_bytes) = (chunks * k, composite_bytes);
    }
}

/// The filter's launches ([`filter_plan`]).
fn filter(s: &Shape, info: &DeviceInfo, composite_bytes: usize) -> Result<Vec<TopkPass>> {
    let module = module(s.key_bytes);
    let width = width(s.key_bytes);
    let plan = filter_plan(s.rows, s.row_len, s.k, s.key_bytes, s.sms);
    let mut passes = Vec::with_capacity(plan.len());
    for (i, p) in plan.iter().enumerate() {
        let shared = p.slots * composite_bytes;
        if shared > info.shared_per_block_optin {
            return Err(Error::Unsupported(
                "top-k selections whose k best do not fit a block's shared memory",
            ));
        }
        let name = match i {
            0 => format!("topk_keys_{width}"),
            _ => format!("topk_partials_{width}"),
        };
        let chunking = (p.row_len, p.chunks, p.chunk_len);
        passes.push(s.pass((module, name, shared), chunking, p.slots, s.rows * p.chunks));
    }
    Ok(passes)
}

/// The composites a radix block holds in shared memory: its candidates, the `slots` where the
/// last pass sorts its k best, and the u64 composites' tournament lists.
fn radix_held(slots: usize, per_thread: usize, composite_bytes: usize) -> usize {
    let tournaments = if composite_bytes == 8 {
        T::RADIX_TOURNAMENT_SLOTS
    } else {
        0
    };
    slots
        .max(T::THREADS as usize * per_thread.min(T::RADIX_CANDIDATES_PER_THREAD))
        .max(tournaments)
}

/// The composites a block of the sampled select holds in shared memory: its candidates, the
/// threshold filter's k and a tile of 16-byte vectors of `key_bytes` keys (a chunk whose
/// sample missed), the `slots` where it sorts its k best, and the tournament lists.
fn sampled_held(k: usize, slots: usize, key_bytes: usize) -> usize {
    let filter = (k + T::THREADS as usize * 16 / key_bytes).next_power_of_two();
    (T::THREADS as usize * T::RADIX_CANDIDATES_PER_THREAD)
        .max(filter)
        .max(slots)
        .max(T::RADIX_TOURNAMENT_SLOTS)
}

/// The radix select's launches ([`radix_plan`]).
fn radix(s: &Shape, policy: &Policy, composite_bytes: usize) -> Vec<TopkPass> {
    let slots = s.k.next_power_of_two();
    let plan = radix_plan(s.rows, s.row_len, s.k, s.key_bytes, s.sms, policy);
    plan.iter()
        .enumerate()
        .map(|(i, pass)| {
            let (module, name, held) = radix_pass_kernel(s, pass, i, slots, composite_bytes);
            let chunking = (pass.row_len, pass.chunks, pass.chunk_len);
            let shared = held * composite_bytes;
            s.pass(
                (module, name, shared),
                chunking,
                slots,
                s.rows * pass.chunks,
            )
        })
        .collect()
}

/// The module, kernel and shared composites of pass `i` of a radix plan.
fn radix_pass_kernel(
    s: &Shape,
    pass: &RadixPass,
    i: usize,
    slots: usize,
    composite_bytes: usize,
) -> (&'static KernelModule, String, usize) {
    let (width, k, per_thread) = (width(s.key_bytes), s.k, pass.per_thread);
    let module = match pass.kind {
        RadixKind::Sampled => sampled_module(s.key_bytes),
        _ => radix_module(s.key_bytes, per_thread),
    };
    let held = radix_held(slots, per_thread, composite_bytes);
    let (name, held) = match (pass.kind, i) {
        // The chunk's runs, `slots` apart.
        (RadixKind::Merge, _) => (format!("topk_merge_{width}"), pass.chunk_len / k * slots),
        (RadixKind::Sampled, _) => (
            format!("topk_sampled_{width}"),
            sampled_held(k, slots, s.key_bytes),
        ),
        (RadixKind::Segments, _) => (format!("topk_radix_stream_{width}"), held),
        (RadixKind::Chunks, 0) => (format!("topk_radix_keys_{width}_{per_thread}"), held),
        (RadixKind::Chunks, _) => (format!("topk_radix_partials_{width}_{per_thread}"), held),
    };
    (module, name, held)
}

/// The spread select's launches ([`spread_plan`]), u64 composites.
fn spread(s: &Shape, plan: SpreadPlan) -> SpreadLaunch {
    let slots = s.k.next_power_of_two();
    let args = SpreadArgs {
        row_len: s.row_len as u64,
        rows: s.rows as u32,
        chunks: plan.chunks as u32,
        chunk_len: plan.chunk_len as u64,
        k: s.k as u32,
        slots: slots as u32,
        map: s.map,
        rank: plan.rank as u32,
        sample_blocks: plan.sample_blocks as u32,
    };
    let held = sampled_held(s.k, slots, s.key_bytes).max(T::SPREAD_CAPACITY);
    SpreadLaunch {
        module: sampled_module(s.key_bytes),
        width: width(s.key_bytes),
        plan,
        args,
        scratch: SpreadScratch::new(&args, 8),
        blocks: [
            s.blocks(s.rows * plan.sample_blocks),
            s.blocks(s.rows),
            s.blocks(s.rows * plan.chunks),
            s.blocks(s.rows),
        ],
        select_shared: (held * 8) as u32,
    }
}

/// The warp sort's one launch: a warp a row, each lane holding the fewest composites of
/// [`TopkPolicy::WARP_SORT_PER_LANE`] that the row needs. Rows of 32 a lane and k up to the
/// policy's `topk.warp_filter_max_k` take a warp filter (`topk_warp_filter_W` up to
/// [`TopkPolicy::WARP_FILTER_GROUPS_MOST_K`], `topk_warp_search_W` past it), which sorts only
/// the keys that reach a threshold.
fn warp_sort(s: &Shape, policy: &Policy) -> TopkPass {
    let module = match s.key_bytes {
        2 => &kernels::TOPK_WARP_U16,
        _ => &kernels::TOPK_WARP_U32,
    };
    let per_lane = T::WARP_SORT_PER_LANE
        .into_iter()
        .find(|&p| 32 * p >= s.row_len)
        .expect("a row a warp holds");
    // What the kernel relies on: a row fits a warp, and its first k are in it.
    assert!(1 <= s.k && s.k <= s.row_len && s.row_len <= 32 * per_lane);
    let width = width(s.key_bytes);
    let filters = per_lane == T::WARP_SORT_PER_LANE[2] && s.k <= policy.topk.warp_filter_max_k;
    let name = match s.k {
        _ if !filters => format!("topk_warp_sort_{width}_{per_lane}"),
        ..=T::WARP_FILTER_GROUPS_MOST_K => format!("topk_warp_filter_{width}"),
        _ => format!("topk_warp_search_{width}"),
    };
    // Each warp's sorted row passes through shared memory, 32 x (per_lane + 1) composites:
    // u32 for 16-bit keys, u64 for 32-bit ones (kernels/topk/warp.cuh `WarpComposite`).
    let warps = T::THREADS as usize / 32;
    let shared = warps * 32 * (per_lane + 1) * 2 * s.key_bytes;
    // One chunk a row, a warp a row: no partials.
    let row = (s.row_len, 1, s.row_len);
    s.pass(
        (module, name, shared),
        row,
        s.k.next_power_of_two(),
        s.rows.div_ceil(warps),
    )
}

#[cfg(test)]
mod tests;
