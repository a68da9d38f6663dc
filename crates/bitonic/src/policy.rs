//! Tuning per GPU architecture: the one place that says how big the tiles are, when clusters
//! and the narrow kernel are used, and where the merge sort takes over.
//!
//! Every number here was measured (docs/notes/tuned.md, docs/notes/rows.md and the data under
//! docs/results); none is read from the environment. [`Policy::for_device`] picks the policy of
//! a device's architecture. A benchmark that compares two settings builds a [`Policy`] of its
//! own and hands it to [`crate::Sorter::policy`]. The kernels get the numbers they share with the
//! host as `-D` defines ([`Policy::defines`]), so the two sides cannot disagree.

use crate::cuda::DeviceInfo;

/// The tuning of the GPU sorts for one GPU architecture.
///
/// ```
/// let hopper = bitonic::Policy::for_compute_capability(9, 0);
/// assert_eq!(hopper.tile_bits(4), 14); // 64 KiB tiles: 2^14 u32 keys
/// let ampere = bitonic::Policy::for_compute_capability(8, 0);
/// assert_eq!(ampere.max_cluster_blocks, 1); // no thread-block clusters before sm_90
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Bytes of one block's tile of the tuned passes (keys in shared memory and registers).
    /// 64 KiB lets two blocks share an SM, so one block's loads overlap the other's work.
    pub tile_bytes: usize,
    /// log2 of the smallest tile an input too small to fill every SM is spread over.
    pub spread_tile_bits: u32,
    /// The most blocks of a thread-block cluster that sorts one small row in one launch
    /// (1: clusters off). 16 is beyond the portable 8; the host checks that a device runs it.
    pub max_cluster_blocks: u32,
    /// Whether u32 keys whose tiles shrink below `tile_bytes` (small inputs) use the narrow
    /// tuned kernel (16 keys a thread in twice the threads), which hides latency better.
    pub narrow_small_u32: bool,
    /// One array of more 4-byte (or 2-byte) keys than this, keys alone, sorts as a merge sort
    /// of tile sorts; up to it, the network's passes stay in L2 and win. Hopper: 2^21,
    /// measured on the H200 (docs/notes/multiway.md): at 2^22 the merge sort is ahead (u32
    /// 0.245 → 0.219 ms), at 2^21 the network (0.140 against 0.151 ms).
    pub merge_sort_above: usize,
    /// [`Policy::merge_sort_above`] for 8-byte keys, whose network passes cost more: Hopper's
    /// 2^16 (H200: u64 2^17 0.108 → 0.088 ms, 2^21 0.297 → 0.216, 2^22 0.628 → 0.413).
    pub wide_merge_sort_above: usize,
    /// Output words one block of a merge level writes (kernels: `KERNEL_MERGE_TILE`).
    pub merge_tile: usize,
    /// Threads of a merge block (kernels: `KERNEL_MERGE_THREADS`): 16 words a thread.
    pub merge_threads: u32,
    /// Output words one block of a key-value merge level of 32-bit keys writes (kernels:
    /// `KERNEL_KV_MERGE_TILE`; its words are the keys tagged, 8 bytes). Its shared memory
    /// holds the tile twice and the tile's values: at 4,096 words two blocks fit an SM, at
    /// 2,048 four (64-bit values) or five (32-bit), and on the H100 the key-value sorts and
    /// argsorts were 7–9% faster (docs/notes/multiway.md). Key-value levels of 64-bit keys
    /// keep half a merge tile. A power of two, 8 to 32 words a merge thread.
    pub kv_merge_tile: usize,
    /// The most runs one merge level of 4-byte words merges (2, 4, 8, 16 or 32). 2 keeps every
    /// level a two-way bitonic merge; more makes a level a multiway merge
    /// (kernels/merge/multiway.cuh), so a merge sort makes fewer passes. A multiway level
    /// costs more compute a key than the two-way levels it replaces (docs/notes/multiway.md);
    /// since its tiles start at samples (one short search a tile), eight ways beat two for
    /// u32 keys on the H200 from 2^23 keys up. A level that has only two runs left merges
    /// them the two-way way.
    pub merge_ways: u32,
    /// [`Policy::merge_ways`] for 8-byte words (u64, i64, f64), whose passes cost twice the
    /// bytes for the same compute: Hopper merges 16 runs a level, measured faster than
    /// two-way levels from 2^24 to 2^28 keys on the H200 (8–16%).
    pub wide_merge_ways: u32,
    /// A merge sort whose plan would end in one two-way level after multiway ones merges twice
    /// the ways in its first level instead, where that is at most this many (2: never): one
    /// level fewer (a pass over the array and its co-ranks) for one more round in the first
    /// level. Hopper's 16 makes u32 2^24 16, 8, 8 instead of 8, 8, 8, 2: on the H100 1.2%
    /// faster, and 2^27 (16, 8, 8, 8) 0.5% slower (docs/notes/multiway.md).
    pub fold_ways: u32,
    /// log2 of the runs the tile sort makes for a merge sort of more than
    /// [`Policy::wide_merge_run_bits_above`] 8-byte keys, where that is less than a tile's keys
    /// ([`Policy::merge_run_bits`]). A tile sort's cost grows with the square of its runs' log,
    /// the levels' with the number of levels: on the H100 Hopper's 12 (half a tile) sorted u64
    /// 1.5–4% faster than whole tiles from 2^22 to 2^28 keys, in the same call
    /// (docs/notes/multiway.md).
    pub wide_merge_run_bits: u32,
    /// Whether rows of 8-byte words half a tile long (the runs of [`Policy::wide_merge_run_bits`])
    /// are sorted in tiles of their own, blocks of half the threads, instead of two to a tile.
    /// The u64 tile sort is latency-bound at half occupancy either way, and smaller blocks wait
    /// less at their barriers: on the H100 u64 merge sorts were 2–3% faster from 2^22 keys
    /// (2^24 1.324 → 1.287 ms; docs/notes/multiway.md). Row sorts of 8-byte keys in rows of
    /// 2^12 take the same tiles (not measured apart).
    pub wide_half_tiles: bool,
    /// Merge sorts of at most this many 8-byte keys start from whole tiles: on the H100 the
    /// shorter runs' extra level cost more than their tile sort saved at 2^21 u64 keys (0.218 →
    /// 0.238 ms) and gained nothing at 2^20.
    pub wide_merge_run_bits_above: usize,
    /// A top-k row longer than this streams through the threshold filter
    /// ([`crate::dispatch::Strategy::TopkFilter`]) unless k is at most
    /// [`Policy::topk_long_radix_max_k`]; shorter rows are cut into chunks that blocks hold in
    /// registers for a radix select ([`crate::dispatch::Strategy::TopkRadix`]), except rows
    /// longer than one chunk with k past [`crate::dispatch::TOPK_RADIX_MAX_K`], which stream
    /// too. Either way, few long rows take the spread select where its plan fits
    /// ([`Policy::topk_spread_min_len`]).
    pub topk_filter_above: usize,
    /// A row longer than [`Policy::topk_filter_above`] still takes the radix select when k is
    /// at most this (and at most [`crate::dispatch::TOPK_RADIX_MAX_K`], whatever this says):
    /// its chunks' candidates are few enough that selecting over them again beats streaming
    /// the row through one threshold (on one 2^28 array on the H200, k = 100: 0.75 ms against
    /// 0.80 for f32, 0.96 against 1.25 for bf16; at k = 128 f32 loses; 8-byte keys not
    /// measured).
    pub topk_long_radix_max_k: usize,
    /// The most elements a thread of the top-k radix select holds: 32 (chunks of 8,192; for
    /// 16- and 32-bit keys three blocks an SM) or 16 (chunks of 4,096); another value makes
    /// top-k selections fail with [`crate::Error::Unsupported`].
    pub topk_radix_per_thread: usize,
    /// The blocks a multiprocessor that the top-k radix select's passes aim for when they cut
    /// rows into chunks (or the first pass into segments): fewer rows are cut into more. 0
    /// cuts no row more than its length needs (the tests use it to stream short rows).
    pub topk_radix_blocks_per_sm: usize,
    /// The most chunks of 8,192 keys (32 a thread) one block of the radix select's first pass
    /// takes, one after the other, against one running threshold (a *segment*,
    /// kernels/topk.cu STREAM): a row's chunks beyond the first then cost their loads and a
    /// comparison a key, and the fixed costs (the threshold, the exact select) are paid once a
    /// segment. A segment has at least 4 chunks: below 4, no row streams (1: each block one
    /// chunk, as before streaming). The segments' kernel runs 2 blocks an SM. Where the
    /// sampled select ([`Policy::topk_sampled_min_k`]) takes the first pass, rows do not
    /// stream: with this policy, only 8-byte keys do.
    pub topk_radix_stream_chunks: usize,
    /// Segments stream for k from this to [`Policy::topk_radix_stream_max_k`]. On the H200,
    /// against a chunk a block in the same binary, they were faster from k = 100 (4,096 x
    /// 32,768 f32 k = 100 0.41 -> 0.34 ms, k = 256 0.61 -> 0.44) and slower at k = 50 and
    /// below (256 x 151,936 f32 k = 50 0.093 -> 0.108), where a chunk's own select costs
    /// little (docs/notes/topk.md, step 8).
    pub topk_radix_stream_min_k: usize,
    /// The largest k whose segments stream: at k = 1,024 each later chunk overflows the
    /// candidates (2,048) and the segments were slower (4,096 x 32,768 f32 1.24 -> 1.40 ms);
    /// at 512 faster (0.90 -> 0.61). At most 1,024 (a chunk's threshold needs k <= 8,192 / 8).
    pub topk_radix_stream_max_k: usize,
    /// The radix select's first pass over keys of 2 or 4 bytes is the *sampled* select for k
    /// from this to [`Policy::topk_sampled_max_k`] (kernels/topk.cu `topk_sampled`), and for
    /// every k on rows longer than [`Policy::topk_filter_above`]: a block takes a chunk of at
    /// least [`Policy::topk_sampled_min_chunk`] and 8 k keys, takes a threshold from a sample
    /// of 4,096 of them, and reads the chunk once, keeping the keys that reach it (a chunk whose
    /// sample misses goes through the threshold filter). Rows are cut into as few such chunks
    /// as fill the GPU (`topk_radix_blocks_per_sm`). On the H200 it was faster from k = 256 on
    /// rows of 32,768 and 151,936 (4,096 x 32,768 f32 k = 1,024 1.24 -> 0.49 ms, bf16 1.31 ->
    /// 0.54) and at k <= 50 on one 2^28 array (f32 k = 50 0.53 -> 0.35), slower at k <= 50 on
    /// shorter rows (docs/notes/topk.md, step 11).
    pub topk_sampled_min_k: usize,
    /// The largest k of the sampled select; at most [`Policy::TOPK_SAMPLED_MOST_K`].
    pub topk_sampled_max_k: usize,
    /// The fewest keys a chunk of the sampled select has (at least 8,192, twice its sample):
    /// its sample and exact select cost a block the same for any chunk, which short chunks
    /// repay less (64 x 128,256 in 15 chunks a row, f32 k = 1,024: 0.13 -> 0.19 ms).
    pub topk_sampled_min_chunk: usize,
    /// Rows of at least this many keys of 2 or 4 bytes, too few for a block a row to fill the
    /// GPU, take the *spread* select for k up to [`Policy::TOPK_SAMPLED_MOST_K`] where a sample
    /// of 8,192 keys leaves few enough candidates (src/cuda/topk.rs `spread_plan`): one block a
    /// row takes the row's threshold from the sample, many blocks a row gather the keys that
    /// reach it, and one block a row selects among them (kernels/topk.cu `topk_spread_*`).
    pub topk_spread_min_len: usize,
    /// For k below [`Policy::topk_sampled_min_k`], the spread select takes only this many rows
    /// or more: its sample and its select cost a block a row about 7 µs each whatever the
    /// row, which one row's radix select does not repay at small k (one row of 2^20 bf16,
    /// k = 1: 0.024 -> 0.047 ms on the H200) and 64 rows do (64 x 128,256 bf16 k = 1: 0.041 ->
    /// 0.026; f32 0.040 -> 0.036; docs/notes/topk.md, step 12).
    pub topk_spread_min_rows: usize,
    /// The most blocks that sample one row in the spread select (up to 256; a power of two):
    /// rows too long for one block's 8,192 samples take it too, sampled by several blocks (on
    /// the H200, one f32 row of 2^24: k = 256 0.143 -> 0.100 ms, k = 1,024 0.167 -> 0.114,
    /// docs/notes/topk.md, step 14; one bf16 row of 2^24, whose threshold breaks ties by index:
    /// k = 256 0.127 -> 0.060, k = 1,024 0.195 -> 0.076, step 16). 1 keeps such rows on the
    /// radix select or the filter.
    pub topk_spread_sample_blocks: usize,
    /// Rows of at most this many keys (and at most [`crate::dispatch::TOPK_WARP_SORT_MOST`]) of
    /// 2 or 4 bytes take the warp sort ([`crate::dispatch::Strategy::TopkWarpSort`]: a warp
    /// sorts a row in registers) for every k. On the H200 it beat the radix select for every k
    /// on 16,384 rows of 64 and 256 (f32 k = 50 on rows of 256: 0.294 -> 0.071 ms), whose
    /// blocks of 256 threads had 1 key or less a thread (docs/notes/topk.md, step 9).
    pub topk_warp_sort_rows_up_to: usize,
    /// Longer rows of 32-bit keys up to [`crate::dispatch::TOPK_WARP_SORT_MOST`] take the warp
    /// sort for k from this on, and for any k above half the row (where the rows' argsort ran
    /// before); smaller k, past [`Policy::topk_warp_filter_max_k`], keep the radix select,
    /// whose cost grows with k while a warp's sort of 1,024 keys costs the same for every k
    /// (16,384 x 1,024 f32 on the H200: 0.43 ms, against the radix select's 0.31 at k = 256 and
    /// 0.51 at 384). Where the warp filter's k reaches this (Hopper's 512), it decides nothing.
    pub topk_warp_sort_min_k_32: usize,
    /// The same for 16-bit keys, whose warp sort compares and shuffles u32 composites, not
    /// u64: 16,384 x 1,024 bf16 0.16 ms for every k, against the radix select's 0.14 at k = 64
    /// and 0.19–0.21 at 100.
    pub topk_warp_sort_min_k_16: usize,
    /// Rows of up to [`crate::dispatch::TOPK_WARP_SORT_MOST`] keys of 2 or 4 bytes take the
    /// warp sort for k up to this too, as the *warp filter* where a row is longer than 256
    /// (kernels/topk.cu `warp_filter`): before sorting, the warp keeps the keys that reach a
    /// threshold and sorts those (at most 512) instead of the row. Up to k = 128 the threshold
    /// is the k-th best of its lanes' group bests, which about 1.2 k to 2 k reach
    /// (docs/notes/topk.md, step 13); above, a search of the composites' top bits, a bit a
    /// round, until between k and 256 (k up to 256, 32-bit keys) or 512 reach it (step 17).
    /// Past 512 the warp sorts the row. 0 turns it off.
    pub topk_warp_filter_max_k: usize,
}

impl Policy {
    /// The values [`Policy::merge_ways`] and [`Policy::wide_merge_ways`] may take; another
    /// makes merge sorts fail with [`crate::Error::Unsupported`].
    pub const MERGE_WAYS: [u32; 5] = [2, 4, 8, 16, 32];

    /// The k from which rows longer than [`Policy::topk_warp_sort_rows_up_to`] take the warp
    /// sort, for keys of `key_bytes` (2 or 4; never for 8).
    pub fn topk_warp_sort_min_k(&self, key_bytes: usize) -> usize {
        match key_bytes {
            2 => self.topk_warp_sort_min_k_16,
            4 => self.topk_warp_sort_min_k_32,
            _ => usize::MAX, // 8-byte keys have no warp sort
        }
    }

    /// The largest k the sampled select takes ([`Policy::topk_sampled_max_k`]): its candidates'
    /// shared memory holds 2,048, and a sample's threshold leaves about 1.4 k of them.
    pub const TOPK_SAMPLED_MOST_K: usize = 1024;

    /// The values [`Policy::topk_radix_per_thread`] may take; another makes top-k selections
    /// fail with [`crate::Error::Unsupported`].
    pub const TOPK_RADIX_PER_THREAD: [usize; 2] = [16, 32];

    /// Hopper (sm_90) and later: tuned and measured on the H100.
    pub const HOPPER: Policy = Policy {
        tile_bytes: 64 * 1024,
        spread_tile_bits: 12,
        max_cluster_blocks: 16,
        narrow_small_u32: true,
        merge_sort_above: 1 << 21,
        wide_merge_sort_above: 1 << 16,
        merge_tile: 1 << 12,
        merge_threads: 256,
        kv_merge_tile: 1 << 11,
        merge_ways: 8,
        wide_merge_ways: 16,
        fold_ways: 16,
        wide_merge_run_bits: 12,
        wide_half_tiles: true,
        wide_merge_run_bits_above: 1 << 21,
        topk_filter_above: 1 << 26,
        topk_long_radix_max_k: 100,
        topk_radix_per_thread: 32,
        topk_radix_blocks_per_sm: 8,
        topk_radix_stream_chunks: 64,
        topk_radix_stream_min_k: 100,
        topk_radix_stream_max_k: 512,
        topk_warp_sort_rows_up_to: 256,
        topk_warp_sort_min_k_32: 384,
        topk_warp_sort_min_k_16: 100,
        topk_warp_filter_max_k: 512,
        topk_sampled_min_k: 100,
        topk_sampled_max_k: 1024,
        topk_sampled_min_chunk: 32_768,
        topk_spread_min_len: 65_536,
        topk_spread_min_rows: 64,
        topk_spread_sample_blocks: 256,
    };

    /// Ampere and Ada (sm_80 … sm_89): Hopper's numbers without thread-block clusters, which
    /// need sm_90. Not measured on such a GPU.
    pub const AMPERE: Policy = Policy {
        max_cluster_blocks: 1,
        ..Policy::HOPPER
    };

    /// The policy of the architecture `sm_{major}{minor}`.
    pub fn for_compute_capability(major: i32, _minor: i32) -> Policy {
        if major >= 9 {
            Policy::HOPPER
        } else {
            Policy::AMPERE
        }
    }

    /// The policy of `device`'s architecture.
    pub fn for_device(device: &DeviceInfo) -> Policy {
        let (major, minor) = device.compute_capability;
        Policy::for_compute_capability(major, minor)
    }

    /// log2 of the words of `word_bytes` in one full tile (2^14 u32, 2^13 u64, 2^12 16-byte
    /// key-index pairs at 64 KiB).
    pub fn tile_bits(&self, word_bytes: usize) -> u32 {
        (self.tile_bytes / word_bytes).ilog2()
    }

    /// log2 of the runs a merge sort of `n` words of `word_bytes` starts from: a tile's, or for
    /// more than [`Policy::wide_merge_run_bits_above`] 8-byte words
    /// [`Policy::wide_merge_run_bits`] where that is less — but at least half a merge tile,
    /// which the merge levels need.
    pub fn merge_run_bits(&self, word_bytes: usize, n: usize) -> u32 {
        let tile = self.tile_bits(word_bytes);
        if word_bytes != 8 || n <= self.wide_merge_run_bits_above {
            return tile;
        }
        let half_merge_tile = self.merge_tile_of(word_bytes).ilog2().saturating_sub(1);
        tile.min(self.wide_merge_run_bits.max(half_merge_tile))
    }

    /// Output words of one merge block for words of `word_bytes`: half a tile for 16-byte
    /// words, whose registers hold half as many.
    pub fn merge_tile_of(&self, word_bytes: usize) -> usize {
        if word_bytes == 16 {
            self.merge_tile / 2
        } else {
            self.merge_tile
        }
    }

    /// Output words of one block of a key-value merge level of keys of `key_bytes`:
    /// [`Policy::kv_merge_tile`] for 4-byte keys (8-byte tagged words), half a merge tile for
    /// 8-byte keys (16-byte tagged words).
    pub fn kv_merge_tile_of(&self, key_bytes: usize) -> usize {
        if key_bytes == 4 {
            self.kv_merge_tile
        } else {
            self.merge_tile_of(2 * key_bytes)
        }
    }

    /// Whether [`Policy::merge_ways`] and [`Policy::wide_merge_ways`] are both among
    /// [`Policy::MERGE_WAYS`], the numbers of runs the merge kernels have a form for.
    pub fn merge_ways_supported(&self) -> bool {
        [self.merge_ways, self.wide_merge_ways]
            .iter()
            .all(|w| Self::MERGE_WAYS.contains(w))
    }

    /// The most keys of `key_bytes` one array may have and still sort by the network's
    /// passes: [`Policy::merge_sort_above`], or [`Policy::wide_merge_sort_above`] for 8-byte
    /// keys.
    pub fn merge_sort_above_of(&self, key_bytes: usize) -> usize {
        if key_bytes <= 4 {
            self.merge_sort_above
        } else {
            self.wide_merge_sort_above
        }
    }

    /// The most runs one merge level of words of `word_bytes` merges: [`Policy::merge_ways`]
    /// for 4-byte words, [`Policy::wide_merge_ways`] for wider ones.
    pub fn merge_ways_of(&self, word_bytes: usize) -> u32 {
        if word_bytes == 4 {
            self.merge_ways
        } else {
            self.wide_merge_ways
        }
    }

    /// The numbers of this policy that the kernels are compiled with: two policies that agree
    /// on them share compiled kernels.
    pub fn kernel_variant(&self) -> KernelVariant {
        KernelVariant {
            tile_bytes: self.tile_bytes,
            merge_tile: self.merge_tile,
            merge_threads: self.merge_threads,
            kv_merge_tile: self.kv_merge_tile,
        }
    }

    /// The `-D` options that give the kernels this policy's numbers. The merge kernels'
    /// register layout is written for them; the key-value kernels' tiles are the tuned tiles
    /// of 32- and 64-bit keys.
    pub(crate) fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("KERNEL_MERGE_TILE", self.merge_tile.to_string()),
            ("KERNEL_MERGE_THREADS", self.merge_threads.to_string()),
            ("KERNEL_KV_MERGE_TILE", self.kv_merge_tile.to_string()),
            ("KERNEL_TILE_BITS_32", self.tile_bits(4).to_string()),
            ("KERNEL_TILE_BITS_64", self.tile_bits(8).to_string()),
        ]
    }
}

/// The numbers of a [`Policy`] that the kernels are compiled with ([`Policy::defines`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelVariant {
    tile_bytes: usize,
    merge_tile: usize,
    merge_threads: u32,
    kv_merge_tile: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_of_each_word_size() {
        let p = Policy::HOPPER;
        assert_eq!(
            (p.tile_bits(4), p.tile_bits(8), p.tile_bits(16)),
            (14, 13, 12)
        );
        assert_eq!((p.merge_tile_of(8), p.merge_tile_of(16)), (4096, 2048));
        assert_eq!((p.kv_merge_tile_of(4), p.kv_merge_tile_of(8)), (2048, 2048));
        // Merge sorts of 8-byte keys start from runs of half a tile above 2^21 keys; never
        // below half a merge tile, never above a tile.
        let big = 1 << 22;
        assert_eq!(
            (p.merge_run_bits(4, big), p.merge_run_bits(8, big)),
            (14, 12)
        );
        assert_eq!(p.merge_run_bits(8, 1 << 21), 13);
        let with = |bits| Policy {
            wide_merge_run_bits: bits,
            ..Policy::HOPPER
        };
        assert_eq!(
            (
                with(3).merge_run_bits(8, big),
                with(20).merge_run_bits(8, big)
            ),
            (11, 13)
        );
        // The merge kernels hold 16 words a thread (8 for 16-byte words).
        assert_eq!(p.merge_tile / p.merge_threads as usize, 16);
    }

    #[test]
    fn architectures() {
        assert_eq!(Policy::for_compute_capability(9, 0), Policy::HOPPER);
        assert_eq!(Policy::for_compute_capability(10, 0), Policy::HOPPER);
        assert_eq!(Policy::for_compute_capability(8, 6).max_cluster_blocks, 1);
    }
}
