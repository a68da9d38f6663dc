//! What runs for a call: the one place a reader opens to learn it.
//!
//! [`plan`] is a pure function from the [`Request`] (the operation, the key type, the length
//! and layout, the order, the backend and version asked for), the device's facts
//! ([`DeviceFacts`]) and the [`Policy`] to a [`Plan`]: the backend and [`Strategy`], the
//! kernel modules it needs, its launches and merge levels ([`Steps`]), and the scratch memory
//! it takes ([`Workspace`]). The runners (src/cpu, src/cuda/run.rs) only carry a plan out, and
//! a call reports the plan it ran. Compiling ahead of time for a call (`Sorter::prepare`)
//! reads the modules from its plan (`bitonic compile` compiles every module).
//!
//! Pure but for one question to the device: whether a cluster of blocks fits
//! ([`DeviceFacts::clusters_fit`]), which a real GPU answers by loading the kernel (and so
//! may compile it); [`DeviceInfo::h100`]'s facts answer from a table.
//!
//! When the device memory a plan needs cannot be had, the sorter asks for a plan within the
//! memory there is ([`plan_within`]): the merge sort, and the radix sort of rows of keys alone,
//! give way to the network's passes, which need no spare array, and the plan says so
//! ([`Plan::fallback`]).
//!
//! The tables in src/plan/tests.rs say, case by case, what runs.

mod choose;
mod fallback;
pub(crate) mod merge;
pub mod out_of_core;
pub(crate) mod passes;
pub(crate) mod radix;
mod request;
pub(crate) mod sample;
pub(crate) mod seed;
pub(crate) mod topk;
mod workspace;

pub use fallback::Fallback;
pub use merge::{KeyValuePlan, Levels, MergeLevel, MergePlan};
pub use passes::PassPlan;
pub use radix::{LookBack, RadixPlan, RadixShape};
pub use request::{Layout, Operation, Request};
pub use sample::{plan_sample, SamplePlan, SAMPLE_MOST_BLOCKS_A_ROW, SAMPLE_MOST_LOGITS_A_ROW};
pub use seed::SeedPlan;
pub use topk::{TopkPass, TopkPlan};
pub use workspace::{Part, Scratch, Workspace};

use crate::device::{DeviceFacts, DeviceInfo};
use crate::error::{Error, Result};
use crate::kernels::abi::{map_flags, tied, RowLayout, MAP_DESCENDING, MAP_INDEX64};
use crate::kernels::{self, KernelModule};
use crate::key::KeyOrder;
use crate::options::{Backend, Order, Version};
use crate::policy::Policy;
use crate::DType;

/// Below this many keys [`Backend::Auto`] sorts on the CPU: copying to and from the GPU and
/// launching kernels costs more than the sort there.
pub const AUTO_GPU_MIN_LEN: usize = 1 << 16;

/// The most keys one GPU call takes: the kernels index with 32-bit integers over the padded
/// length.
pub const MAX_LEN: usize = 1 << 31;

/// An algorithm: what a plan runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// A parallel sort of the keys' ordered words on all cores: the fastest CPU sort.
    CpuSort,
    /// The bitonic network on all CPU cores.
    CpuNetwork,
    /// The bitonic network on one CPU core: the report's serial baseline.
    CpuNetworkSerial,
    /// Top-k selection on the CPU: a selection and a sort of the k best per row.
    CpuTopk,
    /// One of the report's GPU versions V0–V5, keys of one array only.
    Seed(Version),
    /// The tuned network's passes over one array or its rows: a tile sort in shared memory
    /// and registers, then the later stages in few passes. Data-oblivious.
    NetworkPasses,
    /// The tuned passes over segments, grouped by their padded length.
    SegmentPasses,
    /// Tuned tile sorts, then merge levels of several runs at once: one long array of keys.
    MergeSort,
    /// The key-value merge sort: the keys and their values or indices of one array, stable.
    KeyValueMerge,
    /// Key-index pairs through the tuned passes over rows: argsorts and key-value sorts of
    /// rows, stable.
    PairPasses,
    /// Top-k: a warp sorts a short row in registers (or the keys past a threshold).
    TopkWarpSort,
    /// Top-k: blocks hold chunks of a row in registers and select by radix digits.
    TopkRadix,
    /// Top-k of few long rows: a sample's threshold, a gather, and one select a row.
    TopkSpread,
    /// Top-k of long rows: a threshold filter that keeps each chunk's k best in shared memory.
    TopkFilter,
    /// A stable radix sort with indices of rows short enough for one block each, in shared
    /// memory: argsorts, and top-k by sorting.
    RowRadix,
    /// A stable radix sort, a pass a digit over tiles of the rows: argsorts, key-value sorts
    /// and top-k by sorting of longer rows (one array too), with indices; long rows of keys
    /// alone, without.
    RadixSort,
}

impl Strategy {
    /// Whether the strategy runs on the GPU.
    pub fn on_gpu(self) -> bool {
        !matches!(
            self,
            Strategy::CpuSort
                | Strategy::CpuNetwork
                | Strategy::CpuNetworkSerial
                | Strategy::CpuTopk
        )
    }

    /// Whether the strategy is a GPU top-k over composites of the keys and their indices,
    /// which reads 16-bit keys as they are.
    pub fn selects_by_composites(self) -> bool {
        matches!(
            self,
            Strategy::TopkWarpSort
                | Strategy::TopkRadix
                | Strategy::TopkSpread
                | Strategy::TopkFilter
        )
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::CpuSort => f.write_str("parallel sort"),
            Strategy::CpuNetwork => f.write_str("bitonic network"),
            Strategy::CpuNetworkSerial => f.write_str("serial bitonic network"),
            Strategy::CpuTopk => f.write_str("CPU top-k selection"),
            Strategy::Seed(version) => write!(f, "{version}"),
            Strategy::NetworkPasses => f.write_str("tuned network passes"),
            Strategy::SegmentPasses => f.write_str("tuned segment passes"),
            Strategy::MergeSort => f.write_str("tuned merge sort"),
            Strategy::KeyValueMerge => f.write_str("tuned key-value merge sort"),
            Strategy::PairPasses => f.write_str("tuned key-index pair passes"),
            Strategy::TopkWarpSort => f.write_str("top-k warp sort"),
            Strategy::TopkRadix => f.write_str("top-k radix select"),
            Strategy::TopkSpread => f.write_str("top-k spread select"),
            Strategy::TopkFilter => f.write_str("top-k threshold filter"),
            Strategy::RowRadix => f.write_str("radix sort a block a row"),
            Strategy::RadixSort => f.write_str("radix sort in passes"),
        }
    }
}

/// The GPU work of a plan.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Steps {
    /// Nothing to run: no keys, or none kept.
    Nothing,
    /// A CPU strategy (src/cpu).
    Cpu,
    /// A seed version V0–V5.
    Seed(SeedPlan),
    /// The tuned network's passes over one array or rows.
    Passes(PassPlan),
    /// The tuned passes over segments, one plan a padded length.
    Segments(Vec<PassPlan>),
    /// The merge sort of tile sorts.
    Merge(MergePlan),
    /// The key-value merge sort (argsorts: values are positions).
    KeyValue(KeyValuePlan),
    /// Key-index pairs through the tuned passes over rows.
    Pairs(PairPlan),
    /// A top-k by composites.
    Topk(TopkPlan),
    /// A stable radix sort: an argsort, a key-value sort, or a top-k by sorting, which writes
    /// the first k keys of each row and their indices; or long rows of keys alone, in place
    /// with no index ([`RadixPlan::indices`]).
    Radix(RadixPlan),
    /// A top-k by sorting of rows in the tuned passes over key-index pairs alone: the first
    /// pass packs each key it reads from the input with its index in its row, and the last
    /// writes the first k pairs of each row as their indices and the input's keys they name
    /// (src/cuda/rows.rs `select_rows`). Passes after the first sort [`Scratch::Pairs`]; a
    /// plan of one pass needs no scratch.
    TopkByPairPasses(PassPlan),
    /// A top-k by sorting of one array: its stable argsort of a copy of the keys, then the first k
    /// indices of every row (`topk_take`) and the input's keys they name (`topk_gather`).
    /// Where k is the whole row (a sort with indices into outputs of its own), the argsort
    /// writes the caller's indices and nothing is taken.
    TopkBySorting {
        /// The argsort: the key-value merge sort (rows take [`Steps::TopkByPairPasses`]).
        sort: Box<Steps>,
        /// The module of the indices' take kernel (`topk_take_u32` or `_u64`); `None` where k
        /// is the whole row.
        take_indices: Option<&'static KernelModule>,
        /// The module of the keys' gather kernel (`topk_gather_W_I`, W the keys' width and I
        /// the indices').
        gather: &'static KernelModule,
    },
}

/// Key-index pairs through the tuned passes over rows, in place: the first pass packs each
/// key with its index in its row (a key of 2 or 4 bytes and its index in one u64, a u64 key
/// and its index in a 16-byte `KeyIndex`), the last writes the keys and indices back
/// (src/cuda/rows.rs `sort_pairs`); a key-value sort then gathers the values by the indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairPlan {
    /// Bytes of a pair: 8 or 16.
    pub pair_bytes: usize,
    /// The passes over the pairs.
    pub passes: PassPlan,
    /// Bytes of the values a key-value sort gathers (`None`: an argsort).
    pub gather: Option<usize>,
}

/// A call's plan: what runs, and with what. Every call returns the plan it ran.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `Cpu`, `CpuNetwork`, `CpuNetworkSerial` or `Cuda`, never `Auto`.
    pub backend: Backend,
    /// The algorithm.
    pub strategy: Strategy,
    /// Why the strategy is not the one the request would get with memory to spare.
    pub fallback: Option<Fallback>,
    /// The GPU launches and levels.
    pub steps: Steps,
    /// The kernel modules the steps run, each once.
    pub modules: Vec<&'static KernelModule>,
    /// The scratch device memory the steps take.
    pub workspace: Workspace,
    /// The key map of the steps (0 for words that sort as they are).
    pub(crate) map: u32,
    /// For 16-bit keys widened to u32 words around the steps ([`Scratch::Words`]): the map
    /// that widens them.
    pub(crate) widen: Option<u32>,
}

impl Plan {
    /// Bytes of scratch device memory the call takes: what a caller's workspace must hold.
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.bytes()
    }

    /// A CPU plan.
    fn cpu(backend: Backend, strategy: Strategy) -> Plan {
        Plan {
            backend,
            strategy,
            fallback: None,
            steps: Steps::Cpu,
            modules: Vec::new(),
            workspace: Workspace::none(),
            map: 0,
            widen: None,
        }
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on {}", self.strategy, self.backend)?;
        match &self.steps {
            Steps::Merge(m) => write!(
                f,
                ", runs of 2^{}, levels {:?}",
                m.run_bits,
                m.levels.ways()
            )?,
            Steps::KeyValue(kv) => write!(f, ", levels {:?}", kv.levels.ways())?,
            Steps::Passes(p) | Steps::TopkByPairPasses(p) => {
                write!(f, ", {} passes", p.pass_count())?
            }
            Steps::Topk(t) => write!(f, ", {}", t.kernels().join(", "))?,
            _ => {}
        }
        if let Some(fallback) = &self.fallback {
            write!(f, " ({fallback})")?;
        }
        Ok(())
    }
}

/// The plan of `request` on `gpu`'s device with its policy, or on the CPU when `gpu` is
/// `None` (a request that needs the GPU is then [`Error::NoGpu`]).
pub fn plan(request: &Request, gpu: Option<(&dyn DeviceFacts, &Policy)>) -> Result<Plan> {
    plan_within(request, gpu, None)
}

/// [`plan`] within `budget` bytes of workspace, when given: a merge sort, or a radix sort of
/// rows of keys alone, that needs more gives way to the network's passes
/// ([`Fallback::NoRoomForMergeSort`], [`Fallback::NoRoomForRadixSort`]); a plan that still
/// needs more is [`Error::DeviceMemory`].
pub fn plan_within(
    request: &Request,
    gpu: Option<(&dyn DeviceFacts, &Policy)>,
    budget: Option<usize>,
) -> Result<Plan> {
    if let Some((_, policy)) = gpu {
        policy.validate()?;
    }
    let (backend, strategy) = choose::choose(request, gpu.map(|(f, p)| (f.info(), p)))?;
    let Some((facts, policy)) = gpu.filter(|_| strategy.on_gpu()) else {
        return Ok(Plan::cpu(backend, strategy));
    };
    check_len(request.len)?;
    let plan = gpu_plan(request, facts, policy, strategy)?;
    let Some(budget) = budget.filter(|&b| plan.workspace_bytes() > b) else {
        return Ok(plan);
    };
    let needed = plan.workspace_bytes();
    let fallen = match strategy {
        Strategy::MergeSort => {
            let mut passes = gpu_plan(request, facts, policy, Strategy::NetworkPasses)?;
            passes.fallback = Some(Fallback::NoRoomForMergeSort { needed });
            passes
        }
        Strategy::RadixSort if request.operation == Operation::Sort => {
            let mut passes = gpu_plan(request, facts, policy, Strategy::NetworkPasses)?;
            passes.fallback = Some(Fallback::NoRoomForRadixSort { needed });
            passes
        }
        _ => plan,
    };
    if fallen.workspace_bytes() > budget {
        return Err(Error::DeviceMemory {
            bytes: fallen.workspace_bytes(),
            what: format!("the workspace of the {}", fallen.strategy),
        });
    }
    Ok(fallen)
}

/// The sort of `n` words of `word_bytes` (4, 8, or the 16 of a key-value word) that already
/// sort ascending: the tuned version's, a merge sort past the policy's length for the width,
/// the network's passes up to it (the multi-GPU sort's local sorts).
pub(crate) fn plan_words(
    facts: &dyn DeviceFacts,
    policy: &Policy,
    word_bytes: usize,
    n: usize,
) -> Result<Plan> {
    check_len(n)?;
    let mut workspace = Workspace::none();
    let (strategy, steps) = if n < 2 {
        (Strategy::NetworkPasses, Steps::Nothing)
    } else if n > policy.merge.above_of(word_bytes) {
        let plan = merge::plan_merge_sort(facts, policy, word_bytes, n, 0, &mut workspace)?;
        (Strategy::MergeSort, Steps::Merge(plan))
    } else {
        let layout = RowLayout::rows(n, n);
        let plan = passes::plan_passes(facts, policy, word_bytes, layout, 0, false)?;
        (Strategy::NetworkPasses, Steps::Passes(plan))
    };
    Ok(Plan {
        backend: Backend::Cuda,
        strategy,
        fallback: None,
        modules: steps_modules(&steps),
        steps,
        workspace,
        map: 0,
        widen: None,
    })
}

/// `Ok` when `len` keys fit the kernels' 32-bit indexing.
pub(crate) fn check_len(len: usize) -> Result<()> {
    if len > MAX_LEN {
        Err(Error::TooLong { len, max: MAX_LEN })
    } else {
        Ok(())
    }
}

/// The steps, modules and workspace of GPU `strategy` for `request`.
fn gpu_plan(
    request: &Request,
    facts: &dyn DeviceFacts,
    policy: &Policy,
    strategy: Strategy,
) -> Result<Plan> {
    let dtype = request.dtype;
    let order = request.key_order();
    // 16-bit keys sort as their ordered u32 words (widened by map_keys.cu, which applies the
    // float map), except in the top-k by composites, which reads them as they are.
    let by_sorting =
        matches!(request.operation, Operation::Topk { .. }) && !strategy.selects_by_composites();
    // The pair passes pack them as they are too.
    let packs = strategy == Strategy::PairPasses;
    // So does the radix sort, which reads every key as it is.
    let radix = matches!(strategy, Strategy::RowRadix | Strategy::RadixSort);
    let widened = dtype.size() == 2 && !strategy.selects_by_composites() && !packs && !radix;
    let mut workspace = Workspace::none();
    // The sorts that keep positions tie keys equal by value (numeric float order's -0.0 and
    // +0.0, NaNs) so that they keep their input order; a key-only sort maps losslessly.
    let keeps_positions = !matches!(request.operation, Operation::Sort);
    let tie = |map| if keeps_positions { tied(map) } else { map };
    let (word_dtype, widen) = if widened {
        // A top-k by sorting widens into its sorted copy instead.
        if !by_sorting {
            workspace.add(Scratch::Words, request.len, 4);
        }
        let float_map = map_flags(
            dtype,
            KeyOrder {
                order: Order::Ascending,
                ..order
            },
        );
        (DType::U32, Some(tie(float_map)))
    } else {
        (dtype, None)
    };
    let mut plan = Plan {
        backend: Backend::Cuda,
        strategy,
        fallback: None,
        steps: Steps::Nothing,
        modules: Vec::new(),
        workspace: Workspace::none(),
        map: tie(map_flags(word_dtype, order)),
        widen,
    };
    let kept = match request.operation {
        Operation::Topk { k, .. } => k,
        _ => request.len,
    };
    if request.len == 0 || kept == 0 {
        return Ok(plan);
    }
    let ctx = Context {
        facts,
        policy,
        request,
        word_dtype,
        word_bytes: word_dtype.size(),
        map: plan.map,
    };
    plan.steps = ctx.steps(strategy, &mut workspace)?;
    let mut modules = steps_modules(&plan.steps);
    if widened || matches!(strategy, Strategy::Seed(_)) {
        modules.push(&kernels::MAP_KEYS);
    }
    let mut unique = Vec::with_capacity(modules.len());
    for m in modules {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    plan.modules = unique;
    plan.workspace = workspace;
    Ok(plan)
}

/// What planning one strategy reads.
struct Context<'a> {
    facts: &'a dyn DeviceFacts,
    policy: &'a Policy,
    request: &'a Request,
    /// The type of the words the strategy sorts: the key type, or u32 for 16-bit keys.
    word_dtype: DType,
    /// Its bytes.
    word_bytes: usize,
    /// The key map of the words.
    map: u32,
}

impl Context<'_> {
    fn info(&self) -> &DeviceInfo {
        self.facts.info()
    }

    fn steps(&self, strategy: Strategy, workspace: &mut Workspace) -> Result<Steps> {
        let (n, row_len) = (self.request.len, self.request.row_len());
        let (facts, policy, word_bytes, map) = (self.facts, self.policy, self.word_bytes, self.map);
        Ok(match strategy {
            Strategy::Seed(version) => {
                let maps = self.word_dtype.needs_map(self.request.order);
                let seed_map = maps.then_some(map);
                Steps::Seed(seed::plan_seed(self.info(), version, word_bytes, seed_map))
            }
            Strategy::NetworkPasses => {
                let layout = RowLayout::rows(n, row_len);
                Steps::Passes(passes::plan_passes(
                    facts, policy, word_bytes, layout, map, false,
                )?)
            }
            Strategy::SegmentPasses => {
                let Layout::Segments { groups } = &self.request.layout else {
                    unreachable!("segment passes of segments");
                };
                let plans = groups
                    .iter()
                    .map(|&(row_bits, count)| {
                        let layout = RowLayout::segments(n, row_bits, count);
                        passes::plan_passes(facts, policy, word_bytes, layout, map, false)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let segments: usize = groups.iter().map(|g| g.1).sum();
                workspace.add(Scratch::SegmentBounds, 2 * segments, 4);
                Steps::Segments(plans)
            }
            Strategy::MergeSort => Steps::Merge(merge::plan_merge_sort(
                facts, policy, word_bytes, n, map, workspace,
            )?),
            Strategy::KeyValueMerge | Strategy::PairPasses => self.sorting(strategy, workspace)?,
            Strategy::RowRadix | Strategy::RadixSort => {
                let k = match self.request.operation {
                    Operation::Topk { k, .. } => k,
                    _ => row_len,
                };
                let shape = (n / row_len, row_len, k);
                let key_bytes = self.request.dtype.size();
                let values = matches!(self.request.operation, Operation::SortPairs { .. });
                let indices = self.request.operation != Operation::Sort;
                Steps::Radix(radix::plan_radix(
                    self.info(),
                    &policy.radix,
                    strategy,
                    shape,
                    (key_bytes, values, indices),
                    workspace,
                )?)
            }
            Strategy::TopkWarpSort
            | Strategy::TopkRadix
            | Strategy::TopkSpread
            | Strategy::TopkFilter => {
                let Operation::Topk { k, index_bytes } = self.request.operation else {
                    unreachable!("a top-k strategy for a top-k");
                };
                // Larger composites are better: the smallest keys select complemented words.
                let select_map = match self.request.order {
                    Order::Descending => map & !MAP_DESCENDING,
                    Order::Ascending => map | MAP_DESCENDING,
                };
                let select_map = select_map | index_flag(index_bytes);
                let shape = (n / row_len, row_len, k);
                let key_bytes = self.request.dtype.size();
                Steps::Topk(topk::plan_topk(
                    self.info(),
                    policy,
                    strategy,
                    shape,
                    key_bytes,
                    select_map,
                    workspace,
                )?)
            }
            Strategy::CpuSort
            | Strategy::CpuNetwork
            | Strategy::CpuNetworkSerial
            | Strategy::CpuTopk => Steps::Cpu,
        })
    }

    /// The stable sorts: the key-value merge sort of one array and the pair passes of rows,
    /// for argsorts, key-value sorts and top-k selections by sorting.
    fn sorting(&self, strategy: Strategy, workspace: &mut Workspace) -> Result<Steps> {
        let (n, row_len) = (self.request.len, self.request.row_len());
        let (facts, policy, word_bytes, map) = (self.facts, self.policy, self.word_bytes, self.map);
        let (values, positions, topk) = match self.request.operation {
            Operation::Argsort { index_bytes } => (index_bytes, true, false),
            Operation::SortPairs { value_bytes } => (value_bytes, false, false),
            Operation::Topk { index_bytes, .. } => (index_bytes, true, true),
            Operation::Sort => unreachable!("a stable sort moves values"),
        };
        if values != 4 && values != 8 {
            return Err(Error::UnsupportedValue(values));
        }
        let mut sort_workspace = Workspace::none();
        let sort = match strategy {
            Strategy::KeyValueMerge => {
                let kv = (word_bytes, values, positions);
                Steps::KeyValue(merge::plan_key_value(
                    facts,
                    policy,
                    kv,
                    n,
                    map,
                    &mut sort_workspace,
                )?)
            }
            _ => {
                let pair_bytes = pair_bytes_of(word_bytes);
                let layout = RowLayout::rows(n, row_len);
                // The first pass maps the keys as it packs them; the passes sort pairs as they
                // are.
                let passes = passes::plan_passes(facts, policy, pair_bytes, layout, 0, false)?;
                if topk {
                    // A top-k of rows: the passes themselves pack the input's keys (16-bit ones
                    // as they are) and write the first k of each row.
                    workspace.add(Scratch::Pairs, passes.pairs_between_passes(n), pair_bytes);
                    return Ok(Steps::TopkByPairPasses(passes));
                }
                // The passes pack the keys in place and write them back with their indices.
                let between = passes.pairs_between_passes(n);
                sort_workspace.add(Scratch::Pairs, between, pair_bytes);
                let gather = (!positions).then_some(values);
                if gather.is_some() {
                    sort_workspace.add(Scratch::Indices, n, 4);
                    sort_workspace.add(Scratch::ValuesCopy, n, values);
                }
                Steps::Pairs(PairPlan {
                    pair_bytes,
                    passes,
                    gather,
                })
            }
        };
        if !topk {
            *workspace = std::mem::take(workspace).with(&sort_workspace);
            return Ok(sort);
        }
        // A top-k by sorting sorts a copy of the keys with every index (16-bit keys: their
        // words), then takes k indices a row and gathers the input's keys they name. Where k
        // is the whole row, the sort writes every index where the caller wants it.
        let Operation::Topk { k, .. } = self.request.operation else {
            unreachable!("a top-k")
        };
        let whole_rows = k == row_len;
        workspace.add(Scratch::SortedKeys, n, word_bytes);
        if !whole_rows {
            workspace.add(Scratch::SortedIndices, n, values);
        }
        *workspace = std::mem::take(workspace).with(&sort_workspace);
        Ok(Steps::TopkBySorting {
            sort: Box::new(sort),
            take_indices: (!whole_rows).then(|| topk::module(values)),
            gather: topk::module(self.request.dtype.size()),
        })
    }
}

/// Bytes of a key-index pair of keys of `key_bytes`: a u64 word for keys of up to 4 bytes (key
/// in the high half), a 16-byte `KeyIndex` for 8-byte keys.
pub(crate) fn pair_bytes_of(key_bytes: usize) -> usize {
    if key_bytes <= 4 {
        8
    } else {
        16
    }
}

/// The map flag that makes kernels write 8-byte indices.
fn index_flag(index_bytes: usize) -> u32 {
    if index_bytes == 8 {
        MAP_INDEX64
    } else {
        0
    }
}

/// The modules `steps` run, in order (with repeats).
fn steps_modules(steps: &Steps) -> Vec<&'static KernelModule> {
    match steps {
        Steps::Nothing | Steps::Cpu => Vec::new(),
        Steps::Seed(s) => vec![s.module],
        Steps::Passes(p) | Steps::TopkByPairPasses(p) => p.modules(),
        Steps::Segments(plans) => plans.iter().flat_map(PassPlan::modules).collect(),
        Steps::Merge(m) => [m.runs.modules(), vec![&kernels::MERGE_WORDS]].concat(),
        Steps::KeyValue(kv) => {
            let merge = kernels::merge_kv(kv.key_bytes, kv.value_bytes);
            [kv.runs.modules(), vec![merge]].concat()
        }
        Steps::Pairs(p) if p.gather.is_some() => {
            [p.passes.modules(), vec![&kernels::PAIRS]].concat()
        }
        Steps::Pairs(p) => p.passes.modules(),
        Steps::Topk(t) => t.modules(),
        Steps::Radix(_) => vec![&kernels::RADIX],
        Steps::TopkBySorting {
            sort,
            take_indices,
            gather,
        } => {
            let mut modules = steps_modules(sort);
            modules.extend(take_indices.iter().copied());
            modules.push(*gather);
            modules
        }
    }
}

#[cfg(test)]
mod tests;
