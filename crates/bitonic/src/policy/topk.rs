//! The top-k selections: which variant takes which rows and k, and the kernels' fixed shapes.

/// The tuning of the GPU top-k selections (kernels/topk/). The fields are the numbers a
/// benchmark may change; the associated constants are the shapes the kernels are compiled
/// with (each passed as a `KERNEL_TOPK_*` define, or checked against the kernels' own).
/// docs/design/topk.md tells which variant runs where and why; docs/notes/topk.md how each
/// number was measured.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopkPolicy {
    /// A row longer than this streams through the threshold filter unless k is at most
    /// [`TopkPolicy::long_radix_max_k`]; shorter rows take the radix select.
    pub filter_above: usize,
    /// Rows longer than [`TopkPolicy::filter_above`] still take the radix select for k up
    /// to this (and up to [`TopkPolicy::RADIX_MAX_K`]).
    pub long_radix_max_k: usize,
    /// The most elements a thread of the radix select holds: one of
    /// [`TopkPolicy::RADIX_PER_THREAD_CHOICES`].
    pub radix_per_thread: usize,
    /// Blocks a multiprocessor that the radix and spread selects aim for when they cut rows
    /// into chunks. 0 cuts no row more than its length needs.
    pub radix_blocks_per_sm: usize,
    /// The most chunks one block of the radix select's first pass streams against one
    /// running threshold (a segment); below [`TopkPolicy::STREAM_MIN_CHUNKS`], none streams.
    pub radix_stream_chunks: usize,
    /// Segments stream for k from this ...
    pub radix_stream_min_k: usize,
    /// ... to this (at most [`TopkPolicy::RADIX_MAX_K`]).
    pub radix_stream_max_k: usize,
    /// The radix select's first pass over 2- or 4-byte keys is the sampled select for k from
    /// this ...
    pub sampled_min_k: usize,
    /// ... to this (at most [`TopkPolicy::SAMPLED_MOST_K`]).
    pub sampled_max_k: usize,
    /// The fewest keys a chunk of the sampled select has (at least twice its sample).
    pub sampled_min_chunk: usize,
    /// Rows of at least this many 2- or 4-byte keys, too few for a block a row to fill the
    /// GPU, take the spread select where a sample's threshold leaves few enough candidates.
    pub spread_min_len: usize,
    /// For k below [`TopkPolicy::sampled_min_k`], the spread select takes only this many rows
    /// or more.
    pub spread_min_rows: usize,
    /// The most blocks that sample one row of the spread select (a power of two, up to
    /// [`TopkPolicy::SPREAD_SAMPLE_BLOCKS_MOST`]; 1 keeps rows too long for one block's sample
    /// off the spread select).
    pub spread_sample_blocks: usize,
    /// Rows of at most this many 2- or 4-byte keys take the warp sort for every k.
    pub warp_sort_rows_up_to: usize,
    /// Longer rows of 32-bit keys, up to [`TopkPolicy::WARP_SORT_MOST`], take the warp sort for
    /// k from this on (and for any k above half the row).
    pub warp_sort_min_k_32: usize,
    /// The same for 16-bit keys.
    pub warp_sort_min_k_16: usize,
    /// Rows of up to [`TopkPolicy::WARP_SORT_MOST`] 2- or 4-byte keys take the warp sort for k
    /// up to this too, as the warp filter (which sorts only the keys past a threshold, at most
    /// [`TopkPolicy::WARP_FILTER_MOST`], and the row where more reach it). 0 off; any k up.
    pub warp_filter_max_k: usize,
}

impl TopkPolicy {
    /// Threads of a top-k block (`KERNEL_TOPK_THREADS`).
    pub const THREADS: u32 = 256;
    /// Bytes each thread of the filter loads a tile: one 16-byte vector.
    pub const VECTOR_BYTES: usize = 16;
    /// The most k the threshold filter keeps (its best k live in shared memory); a larger k
    /// takes each row's stable argsort.
    pub const FILTER_MAX_K: usize = 2048;
    /// Blocks a multiprocessor that the filter's chunks of few rows aim for.
    pub const FILTER_BLOCKS_PER_SM: usize = 4;
    /// The fewest elements a chunk of the filter has (unless the row is shorter).
    pub const FILTER_MIN_CHUNK: usize = 1 << 13;
    /// A filter chunk holds at least this many times k elements.
    pub const FILTER_CHUNK_PER_K: usize = 16;
    /// Filter and sampled chunks start at multiples of this many elements (16-byte aligned).
    pub const CHUNK_ALIGN: usize = 16;
    /// The elements a thread of the radix select can hold: the kernels' instances.
    pub const RADIX_PER_THREAD: [usize; 3] = [4, 16, 32];
    /// The values [`TopkPolicy::radix_per_thread`] may take.
    pub const RADIX_PER_THREAD_CHOICES: [usize; 2] = [16, 32];
    /// Elements one radix block holds at 32 a thread: a row up to this long is selected by one
    /// block in one launch.
    pub const RADIX_CHUNK: usize = 8192;
    /// The largest k the radix select takes for rows longer than [`TopkPolicy::RADIX_CHUNK`].
    pub const RADIX_MAX_K: usize = Self::RADIX_CHUNK / 8;
    /// The fewest elements a radix chunk has when rows are cut to fill the GPU.
    pub const RADIX_MIN_CHUNK: usize = 2048;
    /// Candidates above a radix block's threshold a thread holds in registers
    /// (`KERNEL_TOPK_CANDIDATES_PER_THREAD`).
    pub const RADIX_CANDIDATES_PER_THREAD: usize = 8;
    /// The most candidates a block places by their ranks (`KERNEL_TOPK_RANK_MAX`).
    pub const RADIX_RANK_MAX: usize = 128;
    /// The most values a radix block's tournament keeps (`KERNEL_TOPK_TOURNAMENT_MOST`).
    pub const RADIX_TOURNAMENT_MOST: usize = 256;
    /// The fewest chunks a streamed segment has.
    pub const STREAM_MIN_CHUNKS: usize = 4;
    /// Blocks an SM of the segments' kernel (128 registers a thread).
    pub const STREAM_BLOCKS_PER_SM: usize = 2;
    /// The most runs a row's merge pass merges (`KERNEL_TOPK_MERGE_RUNS_MOST`).
    pub const MERGE_RUNS_MOST: usize = 7;
    /// Keys a thread of the sampled select samples (`KERNEL_TOPK_SAMPLES_PER_THREAD`).
    pub const SAMPLED_SAMPLES_PER_THREAD: usize = 16;
    /// The largest k of the sampled and the spread select: their candidates' shared memory
    /// holds 2,048, and a sample's threshold leaves about 1.4 k of them.
    pub const SAMPLED_MOST_K: usize = 1024;
    /// Keys a thread of the spread select samples (`KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD`).
    pub const SPREAD_SAMPLES_PER_THREAD: usize = 32;
    /// Candidates a thread of the spread select's exact select holds
    /// (`KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD`).
    pub const SPREAD_CANDIDATES_PER_THREAD: usize = 16;
    /// log2 of the keys a block of the spread select's gather loads at a time, 32 a thread
    /// (`KERNEL_TOPK_SPREAD_TILE_SHIFT`): its chunks are multiples of it, and a tile's 16-bit
    /// keys share the index bits their words hold, so the result depends on it.
    pub const SPREAD_TILE_SHIFT: u32 = 13;
    /// The most blocks that sample one row of the spread select.
    pub const SPREAD_SAMPLE_BLOCKS_MOST: usize = 256;
    /// Words a thread of `topk_spread_threshold` holds (`KERNEL_TOPK_SPREAD_LISTED_PER_THREAD`).
    pub const SPREAD_LISTED_PER_THREAD: usize = 16;
    /// The longest row the warp sort takes: 32 keys a lane of one warp.
    pub const WARP_SORT_MOST: usize = 1024;
    /// The composites a lane of the warp sort holds: the kernels' instances.
    pub const WARP_SORT_PER_LANE: [usize; 3] = [2, 8, 32];
    /// The largest k whose warp filter takes its threshold from the lanes' group bests; a
    /// larger one searches the composites' top bits.
    pub const WARP_FILTER_GROUPS_MOST_K: usize = 128;
    /// The most keys the warp filter keeps to sort (`KERNEL_TOPK_WARP_FILTER_MOST`).
    pub const WARP_FILTER_MOST: usize = 512;

    /// Keys a sample of the spread select holds.
    pub const SPREAD_SAMPLES: usize = Self::SPREAD_SAMPLES_PER_THREAD * Self::THREADS as usize;
    /// Candidates a row of the spread select gathers.
    pub const SPREAD_CAPACITY: usize = Self::SPREAD_CANDIDATES_PER_THREAD * Self::THREADS as usize;
    /// Keys of one gather load of the spread select.
    pub const SPREAD_TILE: usize = 1 << Self::SPREAD_TILE_SHIFT;
    /// The most words a row's sample blocks list.
    pub const SPREAD_LISTED_MOST: usize = Self::SPREAD_LISTED_PER_THREAD * Self::THREADS as usize;
    /// The fewest keys a chunk of the sampled select has: twice its sample.
    pub const SAMPLED_MIN_LEN: usize =
        2 * Self::SAMPLED_SAMPLES_PER_THREAD * Self::THREADS as usize;
    /// The u64 composites a radix block's tournaments pass through shared memory: a list of
    /// up to [`TopkPolicy::RADIX_TOURNAMENT_MOST`] a warp.
    pub const RADIX_TOURNAMENT_SLOTS: usize =
        (Self::THREADS as usize / 32) * Self::RADIX_TOURNAMENT_MOST;

    /// Hopper's numbers (sm_90): measured on the H100 and the H200.
    pub const HOPPER: TopkPolicy = TopkPolicy {
        filter_above: 1 << 26,
        long_radix_max_k: 100,
        radix_per_thread: 32,
        radix_blocks_per_sm: 8,
        radix_stream_chunks: 64,
        radix_stream_min_k: 100,
        radix_stream_max_k: 512,
        sampled_min_k: 100,
        sampled_max_k: 1024,
        sampled_min_chunk: 32_768,
        spread_min_len: 65_536,
        spread_min_rows: 64,
        spread_sample_blocks: 256,
        warp_sort_rows_up_to: 256,
        warp_sort_min_k_32: 384,
        warp_sort_min_k_16: 100,
        warp_filter_max_k: 512,
    };

    /// The k from which rows longer than [`TopkPolicy::warp_sort_rows_up_to`] take the warp
    /// sort, for keys of `key_bytes` (2 or 4; never for 8).
    pub fn warp_sort_min_k(&self, key_bytes: usize) -> usize {
        match key_bytes {
            2 => self.warp_sort_min_k_16,
            4 => self.warp_sort_min_k_32,
            _ => usize::MAX,
        }
    }

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !Self::RADIX_PER_THREAD_CHOICES.contains(&self.radix_per_thread) {
            return Err(format!(
                "topk.radix_per_thread is {}: 16 or 32",
                self.radix_per_thread
            ));
        }
        if self.radix_stream_chunks == 0 {
            return Err("topk.radix_stream_chunks is at least 1".into());
        }
        if self.radix_stream_max_k > Self::RADIX_MAX_K {
            return Err(format!(
                "topk.radix_stream_max_k is {}: at most {}",
                self.radix_stream_max_k,
                Self::RADIX_MAX_K
            ));
        }
        let blocks = self.spread_sample_blocks;
        if !blocks.is_power_of_two() || blocks > Self::SPREAD_SAMPLE_BLOCKS_MOST {
            return Err(format!(
                "topk.spread_sample_blocks is {blocks}: a power of two up to {}",
                Self::SPREAD_SAMPLE_BLOCKS_MOST
            ));
        }
        Ok(())
    }

    /// The kernels' defines of the top-k shapes.
    pub(crate) fn defines(&self) -> Vec<(&'static str, String)> {
        let d = |name, value: usize| (name, value.to_string());
        vec![
            d("KERNEL_TOPK_THREADS", Self::THREADS as usize),
            d(
                "KERNEL_TOPK_CANDIDATES_PER_THREAD",
                Self::RADIX_CANDIDATES_PER_THREAD,
            ),
            d("KERNEL_TOPK_RANK_MAX", Self::RADIX_RANK_MAX),
            d("KERNEL_TOPK_TOURNAMENT_MOST", Self::RADIX_TOURNAMENT_MOST),
            d("KERNEL_TOPK_MERGE_RUNS_MOST", Self::MERGE_RUNS_MOST),
            d(
                "KERNEL_TOPK_SAMPLES_PER_THREAD",
                Self::SAMPLED_SAMPLES_PER_THREAD,
            ),
            d(
                "KERNEL_TOPK_SPREAD_SAMPLES_PER_THREAD",
                Self::SPREAD_SAMPLES_PER_THREAD,
            ),
            d(
                "KERNEL_TOPK_SPREAD_CANDIDATES_PER_THREAD",
                Self::SPREAD_CANDIDATES_PER_THREAD,
            ),
            d(
                "KERNEL_TOPK_SPREAD_LISTED_PER_THREAD",
                Self::SPREAD_LISTED_PER_THREAD,
            ),
            d(
                "KERNEL_TOPK_SPREAD_TILE_SHIFT",
                Self::SPREAD_TILE_SHIFT as usize,
            ),
            d("KERNEL_TOPK_WARP_FILTER_MOST", Self::WARP_FILTER_MOST),
        ]
    }
}

const _: () = assert!(TopkPolicy::SPREAD_TILE == 32 * TopkPolicy::THREADS as usize);
const _: () = assert!(TopkPolicy::RADIX_CHUNK == 32 * TopkPolicy::THREADS as usize);
const _: () = assert!(32 * TopkPolicy::WARP_SORT_PER_LANE[2] == TopkPolicy::WARP_SORT_MOST);
