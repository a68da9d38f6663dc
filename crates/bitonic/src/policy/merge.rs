//! The merge sort of tile sorts and the key-value merge sort: where they take over from the
//! network's passes, their merge tiles and how many runs a level merges.

/// The tuning of the merge levels (kernels/merge.cu, kernels/merge/multiway.cuh).
/// docs/design/merge-sort.md tells how each number is used.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergePolicy {
    /// One array of more 4-byte (or 2-byte) keys than this, keys alone, sorts as a merge sort
    /// of tile sorts; up to it, the network's passes (which stay in L2) win.
    pub above: usize,
    /// [`MergePolicy::above`] for 8-byte keys, whose network passes cost more.
    pub wide_above: usize,
    /// Output words one block of a merge level writes (`KERNEL_MERGE_TILE`).
    pub tile: usize,
    /// Threads of a merge block (`KERNEL_MERGE_THREADS`): `tile / threads` is 8 to 32.
    pub threads: u32,
    /// Output words one block of a key-value level of 32-bit keys writes
    /// (`KERNEL_KV_MERGE_TILE`; its words are keys tagged, 8 bytes). Key-value levels of
    /// 64-bit keys keep half a merge tile.
    pub kv_tile: usize,
    /// The most runs one level of 4-byte words merges: one of [`MergePolicy::WAYS`]. 2 keeps
    /// every level a two-way bitonic merge; more makes a level a multiway merge.
    pub ways: u32,
    /// [`MergePolicy::ways`] for 8-byte words (u64, i64, f64) and key-value levels.
    pub wide_ways: u32,
    /// A plan that would end in one two-way level after multiway ones merges twice the ways in
    /// its first level instead, where that is at most this many (2: never).
    pub fold_ways: u32,
    /// log2 of the runs the tile sort makes for merge sorts of more than
    /// [`MergePolicy::wide_run_bits_above`] 8-byte keys, where that is less than a tile.
    pub wide_run_bits: u32,
    /// Merge sorts of at most this many 8-byte keys start from whole tiles.
    pub wide_run_bits_above: usize,
}

impl MergePolicy {
    /// The numbers of runs a level may merge: the merge kernels' forms.
    pub const WAYS: [u32; 5] = [2, 4, 8, 16, 32];
    /// Warps of a `multiway_co_ranks` block, one a tile (`KERNEL_CO_RANKS_WARPS`).
    pub const CO_RANKS_WARPS: u32 = 4;
    /// A merge tile in shared memory has one word of padding after every this many bytes, so
    /// that a warp's lanes hit distinct banks (`KERNEL_MERGE_PAD_BYTES`).
    pub const PAD_BYTES: usize = 128;
    /// Keys a thread of the value placement holds (`KERNEL_PLACE_KEYS_PER_THREAD`): a tile of
    /// T keys runs in blocks of T / 16 threads.
    pub const PLACE_KEYS_PER_THREAD: usize = 16;
    /// The most words one group of runs of a multiway level spans: its search keeps positions
    /// in 32 bits, so larger groups merge two runs at a time.
    pub const MULTIWAY_GROUP_MAX: usize = u32::MAX as usize;

    /// Hopper's numbers (sm_90): measured on the H100 and the H200.
    pub const HOPPER: MergePolicy = MergePolicy {
        above: 1 << 21,
        wide_above: 1 << 16,
        tile: 1 << 12,
        threads: 256,
        kv_tile: 1 << 11,
        ways: 8,
        wide_ways: 16,
        fold_ways: 16,
        wide_run_bits: 12,
        wide_run_bits_above: 1 << 21,
    };

    /// The most keys of `key_bytes` one array may have and still sort by the network's
    /// passes: [`MergePolicy::above`], or [`MergePolicy::wide_above`] for 8-byte keys.
    pub fn above_of(&self, key_bytes: usize) -> usize {
        if key_bytes <= 4 {
            self.above
        } else {
            self.wide_above
        }
    }

    /// The most runs one level of words of `word_bytes` merges: [`MergePolicy::ways`] for
    /// 4-byte words, [`MergePolicy::wide_ways`] for wider ones.
    pub fn ways_of(&self, word_bytes: usize) -> u32 {
        if word_bytes == 4 {
            self.ways
        } else {
            self.wide_ways
        }
    }

    /// Output words of one merge block for words of `word_bytes`: half a tile for 16-byte
    /// words, whose registers hold half as many.
    pub fn tile_of(&self, word_bytes: usize) -> usize {
        if word_bytes == 16 {
            self.tile / 2
        } else {
            self.tile
        }
    }

    /// Output words of one block of a key-value level of keys of `key_bytes`:
    /// [`MergePolicy::kv_tile`] for 4-byte keys (8-byte tagged words), half a merge tile for
    /// 8-byte keys (16-byte tagged words).
    pub fn kv_tile_of(&self, key_bytes: usize) -> usize {
        if key_bytes == 4 {
            self.kv_tile
        } else {
            self.tile_of(2 * key_bytes)
        }
    }

    /// Shared-memory bytes of `tile` words of `word_bytes` with the padding of
    /// [`MergePolicy::PAD_BYTES`] (kernels/merge/tile.cuh `padded_tile`).
    pub fn padded_tile_bytes(tile: usize, word_bytes: usize) -> usize {
        (tile + tile / (Self::PAD_BYTES / word_bytes)) * word_bytes
    }

    /// Why the numbers cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        for (name, ways) in [("ways", self.ways), ("wide_ways", self.wide_ways)] {
            if !Self::WAYS.contains(&ways) {
                return Err(format!("merge.{name} is {ways}: one of 2, 4, 8, 16 or 32"));
            }
        }
        if !self.fold_ways.is_power_of_two() || self.fold_ways < 2 {
            return Err(format!(
                "merge.fold_ways is {}: a power of two, at least 2",
                self.fold_ways
            ));
        }
        let threads = self.threads as usize;
        let fits = |tile: usize| {
            threads > 0 && tile.is_power_of_two() && (8..=32).contains(&(tile / threads))
        };
        if !self.threads.is_power_of_two() || !fits(self.tile) || !fits(self.kv_tile) {
            return Err(format!(
                "merge.tile ({}), merge.kv_tile ({}) and merge.threads ({}) are powers of two, \
                 8 to 32 words a thread",
                self.tile, self.kv_tile, self.threads
            ));
        }
        Ok(())
    }

    /// The kernels' defines of the merge levels.
    pub(crate) fn defines(&self) -> Vec<(&'static str, String)> {
        vec![
            ("KERNEL_MERGE_TILE", self.tile.to_string()),
            ("KERNEL_MERGE_THREADS", self.threads.to_string()),
            ("KERNEL_KV_MERGE_TILE", self.kv_tile.to_string()),
            ("KERNEL_MERGE_MAX_WAYS", Self::WAYS[4].to_string()),
            ("KERNEL_CO_RANKS_WARPS", Self::CO_RANKS_WARPS.to_string()),
            ("KERNEL_MERGE_PAD_BYTES", Self::PAD_BYTES.to_string()),
            (
                "KERNEL_PLACE_KEYS_PER_THREAD",
                Self::PLACE_KEYS_PER_THREAD.to_string(),
            ),
        ]
    }
}
