//! Row sorts, segmented sorts, argsort and key-value sorts on the GPU, all with the tuned
//! passes (kernels/tuned.cu) over a row layout, and the pack/unpack/gather kernels of
//! kernels/pairs.cu.
//!
//! **Rows.** The tuned passes sort rows of 2^b slots: the stages of a network on 2^b keys sort
//! every aligned block of 2^b independently, so a row sort is a shorter plan over the same
//! index space. A row shorter than 2^b is padded with +inf slots that no key ever lands in.
//! Segments of different lengths are grouped by their padded length, one plan per group, so
//! the padding never costs more than the segments themselves.
//!
//! **Stability.** Argsort and key-value sorts of rows sort (key, index-in-row) pairs: equal keys
//! keep index order. A 32-bit key packs with its index into one u64 word; a 64-bit key and its
//! index make a 16-byte `KeyIndex`; values follow the indices (`gather`). One row (any length)
//! sorts as a key-value merge sort instead ([`merge::merge_sort_kv`]): keys and values in their
//! own arrays, each value placed once by its key's rank after the tile sort and moved by its
//! key's tag in each merge level, with no pack, unpack or gather.

use super::merge;
use super::plan::{self, RowLayout};
use super::{check_len, kernel_name, kernels, Gpu};
use crate::error::{check_same_len, CudaContext as _, Error, Result};
use crate::network::padded_len;
use crate::{Order, SortKey};
use cudarc::driver::{CudaSlice, CudaViewMut, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

/// kernels/common.cuh's `KeyIndex`: a sortable 64-bit key and its index in its row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct KeyIndex {
    key: u64,
    index: u32,
    unused: u32,
}

// SAFETY: plain integers, laid out as the kernel's struct.
unsafe impl DeviceRepr for KeyIndex {}

impl Gpu {
    /// Sorts every row of `row_len` keys of `keys` independently, in place, with the tuned
    /// passes. `keys.len()` must be a multiple of `row_len`.
    pub fn sort_rows_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        check_rows(keys.len(), row_len)?;
        let mut words = self.words_of(keys)?;
        self.sort_rows_words::<K>(&mut words, row_len, order)
    }

    /// Sorts each segment `keys[offsets[i]..offsets[i + 1]]` independently, in place.
    pub fn sort_segments_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        offsets: &[usize],
        order: Order,
    ) -> Result<()> {
        check_segments(keys.len(), offsets)?;
        let mut words = self.words_of(keys)?;
        self.sort_segment_words::<K>(&mut words, offsets, order)
    }

    /// Sorts every row of `keys` in place, stably, and returns for each sorted key its index
    /// in its row before the sort (each row's argsort).
    pub fn argsort_rows_device<K: SortKey>(
        &self,
        keys: &mut CudaSlice<K>,
        row_len: usize,
        order: Order,
    ) -> Result<CudaSlice<u32>> {
        check_rows(keys.len(), row_len)?;
        let mut words = self.words_of(keys)?;
        self.argsort_words::<K>(&mut words, row_len, order)
    }

    /// Sorts every row of `keys` stably and moves `values` (4- or 8-byte elements) with them.
    pub fn sort_by_key_device<K: SortKey, V: DeviceRepr>(
        &self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        check_same_len(keys.len(), values.len())?;
        let value_bytes = std::mem::size_of::<V>();
        if value_bytes != 4 && value_bytes != 8 {
            return Err(Error::UnsupportedValue(value_bytes));
        }
        let n = keys.len();
        if merge::kv_through_merges(n, row_len) {
            let map = map_flags::<K>(order);
            let mut words = self.words_of(keys)?;
            // SAFETY: 4- or 8-byte values move as words of their size, bits unchanged.
            return if value_bytes == 4 {
                let mut values = unsafe { values.transmute_mut::<u32>(n) }.expect("same size");
                merge::merge_sort_kv(self, &mut words, &mut values, false, map)
            } else {
                let mut values = unsafe { values.transmute_mut::<u64>(n) }.expect("same size");
                merge::merge_sort_kv(self, &mut words, &mut values, false, map)
            };
        }
        let indices = self.argsort_rows_device(keys, row_len, order)?;
        if n == 0 {
            return Ok(());
        }
        let sources = self
            .stream
            .clone_dtod(&*values)
            .during(|| format!("copying {n} values"))?;
        let f = self.function(&kernels::PAIRS, &kernel_name::<V>("gather"))?;
        let (n32, len32) = (n as u32, row_len as u32);
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&sources)
            .arg(values)
            .arg(&indices)
            .arg(&n32)
            .arg(&len32);
        unsafe { launch.launch(self.elementwise(n)) }
            .map(drop)
            .during(|| "launching gather".into())
    }

    /// Host rows: copied to the GPU, sorted there, copied back.
    pub fn sort_rows_host<K: SortKey>(
        &self,
        keys: &mut [K],
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        check_rows(keys.len(), row_len)?;
        self.on_device(keys, |words| {
            self.sort_rows_words::<K>(words, row_len, order)
        })
    }

    /// Host segments: copied to the GPU, sorted there, copied back.
    pub fn sort_segments_host<K: SortKey>(
        &self,
        keys: &mut [K],
        offsets: &[usize],
        order: Order,
    ) -> Result<()> {
        check_segments(keys.len(), offsets)?;
        self.on_device(keys, |words| {
            self.sort_segment_words::<K>(words, offsets, order)
        })
    }

    /// Sorts host keys on the GPU and returns the permutation that sorted them (ties in index
    /// order): what a key-value sort of host values needs.
    pub fn sort_with_permutation_host<K: SortKey>(
        &self,
        keys: &mut [K],
        order: Order,
    ) -> Result<Vec<u32>> {
        check_len(keys.len())?;
        let mut indices = vec![0u32; keys.len()];
        if keys.len() < 2 {
            return Ok(indices.iter().enumerate().map(|(i, _)| i as u32).collect());
        }
        let words: &mut [K::Bits] = bytemuck::cast_slice_mut(keys);
        let mut device = self.upload::<K::Bits>(words)?;
        let row_len = words.len();
        let device_indices = self.argsort_words::<K>(&mut device.as_view_mut(), row_len, order)?;
        // argsort_words leaves the keys sorted on the device.
        self.download(&device_indices, &mut indices)?;
        self.download(&device, words)?;
        Ok(indices)
    }

    /// Each row's stable argsort of host keys (left unchanged), computed on the GPU.
    pub fn argsort_rows_host<K: SortKey>(
        &self,
        keys: &[K],
        row_len: usize,
        order: Order,
    ) -> Result<Vec<u32>> {
        check_rows(keys.len(), row_len)?;
        let mut indices = vec![0u32; keys.len()];
        if keys.is_empty() {
            return Ok(indices);
        }
        let mut device = self.upload::<K::Bits>(bytemuck::cast_slice(keys))?;
        let device_indices = self.argsort_words::<K>(&mut device.as_view_mut(), row_len, order)?;
        self.download(&device_indices, &mut indices)?;
        Ok(indices)
    }

    /// Keys as their words (every key type has its word's size and alignment).
    pub(super) fn words_of<'a, K: SortKey>(
        &self,
        keys: &'a mut CudaSlice<K>,
    ) -> Result<CudaViewMut<'a, K::Bits>> {
        let (buffer, sorter) = (keys.context().ordinal(), self.info.ordinal);
        if buffer != sorter {
            return Err(Error::WrongDevice { buffer, sorter });
        }
        check_len(keys.len())?;
        let len = keys.len();
        // SAFETY: every key type has the size and alignment of its Bits word, and every bit
        // pattern of one is a valid value of the other.
        Ok(unsafe { keys.transmute_mut::<K::Bits>(len) }.expect("same size"))
    }

    pub(super) fn sort_rows_words<K: SortKey>(
        &self,
        words: &mut CudaViewMut<K::Bits>,
        row_len: usize,
        order: Order,
    ) -> Result<()> {
        if row_len == words.len() {
            return self.sort_one_row(words, map_flags::<K>(order));
        }
        let layout = RowLayout::rows(words.len(), row_len);
        plan::tuned(self, words, layout, map_flags::<K>(order))
    }

    /// One tuned plan per group of segments with the same padded length (2, 4, 8, … keys).
    fn sort_segment_words<K: SortKey>(
        &self,
        words: &mut CudaViewMut<K::Bits>,
        offsets: &[usize],
        order: Order,
    ) -> Result<()> {
        let mut groups: Vec<(Vec<u32>, Vec<u32>)> = vec![Default::default(); 33];
        for w in offsets.windows(2) {
            let len = w[1] - w[0];
            if len >= 2 {
                let (starts, lens) = &mut groups[padded_len(len).trailing_zeros() as usize];
                starts.push(w[0] as u32);
                lens.push(len as u32);
            }
        }
        let n = words.len();
        for (row_bits, (starts, lens)) in groups.iter().enumerate() {
            if starts.is_empty() {
                continue;
            }
            let copy = |v: &Vec<u32>| {
                self.stream
                    .clone_htod(v)
                    .during(|| format!("copying {} segment bounds", v.len()))
            };
            let (starts_d, lens_d) = (copy(starts)?, copy(lens)?);
            let (starts_ptr, _s) = starts_d.device_ptr(&self.stream);
            let (lens_ptr, _l) = lens_d.device_ptr(&self.stream);
            let layout =
                RowLayout::segments(n, row_bits as u32, starts.len(), starts_ptr, lens_ptr);
            plan::tuned(self, words, layout, map_flags::<K>(order))?;
        }
        Ok(())
    }

    /// Packs (key, index) pairs, sorts them by rows, unpacks the sorted keys into `words` and
    /// returns the indices.
    fn argsort_words<K: SortKey>(
        &self,
        words: &mut CudaViewMut<K::Bits>,
        row_len: usize,
        order: Order,
    ) -> Result<CudaSlice<u32>> {
        let n = words.len();
        let mut indices = unsafe { self.stream.alloc::<u32>(n.max(1)) }
            .during(|| format!("allocating {n} indices"))?;
        if n == 0 {
            return Ok(indices);
        }
        let map = map_flags::<K>(order);
        if merge::kv_through_merges(n, row_len) {
            merge::merge_sort_kv(self, words, &mut indices.as_view_mut(), true, map)?;
        } else if std::mem::size_of::<K::Bits>() == 4 {
            self.sort_pairs::<K::Bits, u64>(words, &mut indices, row_len, map)?;
        } else {
            self.sort_pairs::<K::Bits, KeyIndex>(words, &mut indices, row_len, map)?;
        }
        Ok(indices)
    }

    /// Packs keys and indices into pairs of type `P`, sorts them by rows, and unpacks.
    fn sort_pairs<B, P: DeviceRepr>(
        &self,
        words: &mut CudaViewMut<B>,
        indices: &mut CudaSlice<u32>,
        row_len: usize,
        map: u32,
    ) -> Result<()> {
        let n = words.len();
        let mut pairs = unsafe { self.stream.alloc::<P>(n) }
            .during(|| format!("allocating {n} key-index pairs"))?;
        let mut pairs = pairs.as_view_mut();
        self.pack_or_unpack::<B, P>("pack", words, &mut pairs, None, row_len, map)?;
        if !merge::pairs_through_merges(n, row_len) {
            plan::tuned(self, &mut pairs, RowLayout::rows(n, row_len), 0)?;
            return self.pack_or_unpack::<B, P>(
                "unpack",
                words,
                &mut pairs,
                Some(indices),
                row_len,
                map,
            );
        }
        let mut spare = unsafe { self.stream.alloc::<P>(n) }
            .during(|| format!("allocating {n} key-index pairs to merge into"))?;
        let mut spare = spare.as_view_mut();
        let sorted = if merge::merge_sort(self, &mut pairs, &mut spare, 0)? {
            &mut spare
        } else {
            &mut pairs
        };
        self.pack_or_unpack::<B, P>("unpack", words, sorted, Some(indices), row_len, map)
    }

    /// `pack_*(keys, pairs, n, row_len, map)` or `unpack_*(pairs, keys, indices, n, map)`.
    fn pack_or_unpack<B, P: DeviceRepr>(
        &self,
        which: &str,
        words: &mut CudaViewMut<B>,
        pairs: &mut CudaViewMut<P>,
        indices: Option<&mut CudaSlice<u32>>,
        row_len: usize,
        map: u32,
    ) -> Result<()> {
        let n = words.len();
        let f = self.function(&kernels::PAIRS, &kernel_name::<B>(which))?;
        let (n32, len32) = (n as u32, row_len as u32);
        let mut launch = self.stream.launch_builder(&f);
        match indices {
            None => launch.arg(words).arg(pairs).arg(&n32).arg(&len32).arg(&map),
            Some(indices) => launch
                .arg(pairs)
                .arg(words)
                .arg(indices)
                .arg(&n32)
                .arg(&map),
        };
        unsafe { launch.launch(self.elementwise(n)) }
            .map(drop)
            .during(|| format!("launching {}", kernel_name::<B>(which)))
    }

    /// A grid for a kernel with one grid-stride loop over `n` elements.
    pub(super) fn elementwise(&self, n: usize) -> LaunchConfig {
        let threads = 256u32;
        let blocks = (n as u32)
            .div_ceil(threads)
            .clamp(1, self.info.multiprocessors as u32 * 32);
        plan::config(blocks, threads, 0)
    }
}

/// The key-map argument of the kernels: MapKind, and the descending flag.
pub(super) fn map_flags<K: SortKey>(order: Order) -> u32 {
    let descending = if order == Order::Descending {
        plan::MAP_DESCENDING
    } else {
        0
    };
    K::DTYPE.map_kind() as u32 | descending
}

fn check_rows(len: usize, row_len: usize) -> Result<()> {
    check_len(len)?;
    crate::kv::check_rows(len, row_len)
}

fn check_segments(len: usize, offsets: &[usize]) -> Result<()> {
    check_len(len)?;
    crate::kv::check_segments(len, offsets)
}
