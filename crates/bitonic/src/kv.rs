//! Key-value sorting, argsort, and sorting rows or segments of one buffer independently.
//!
//! **Stability.** A bitonic network is not stable by itself. These sorts are, because equal keys
//! are told apart by their original index: the CPU backends and the GPU's row sorts sort
//! `(key, original index)` pairs, and the GPU's sort of one row gives each key a tag (its place
//! in a tile's stable input order) in every merge and orders equal keys' values by index when it
//! places them (src/cuda/merge.rs). Where keys are equal the smaller index comes first, in both
//! orders. So `argsort` is deterministic, and `sort_by_key` keeps equal keys' values in their
//! original order.
//!
//! On the GPU (`Backend::Cuda`, or `Auto` from 2^16 keys) they always use the tuned version,
//! whatever the sorter's `version` (src/cuda/pairs.rs); the permutation is computed there and
//! host values follow it on the CPU, so values of any type work.

use crate::error::{check_same_len, Error, Result};
use crate::key::{key_from_ordered_bits, ordered_bits};
use crate::{cpu, cuda::Gpu, Backend, Order, Ran, SortKey, Sorter, Version};
use rayon::prelude::*;

impl Sorter {
    /// What the key-value sorts, argsorts and row sorts of this sorter run on for `len` keys:
    /// a CPU backend, or the GPU with the tuned version.
    pub fn key_value_ran(&self, len: usize) -> Result<Ran> {
        let backend = self.resolve_backend(len)?;
        Ok(Ran {
            backend,
            version: (backend == Backend::Cuda).then_some(Version::Tuned),
        })
    }

    /// Sorts `keys` and applies the same permutation to `values` (equal keys keep their
    /// values' original order).
    ///
    /// ```
    /// let mut keys = vec![3u32, 1, 3, 2];
    /// let mut ids = vec![0u64, 1, 2, 3];
    /// bitonic::Sorter::new().sort_by_key(&mut keys, &mut ids).unwrap();
    /// assert_eq!((keys, ids), (vec![1, 2, 3, 3], vec![1, 3, 0, 2]));
    /// ```
    pub fn sort_by_key<K: SortKey, V: Copy + Send + Sync>(
        &self,
        keys: &mut [K],
        values: &mut [V],
    ) -> Result<Ran> {
        check_same_len(keys.len(), values.len())?;
        let ran = self.key_value_ran(keys.len())?;
        if ran.backend == Backend::Cuda {
            // The keys come back sorted; the values follow the permutation.
            let perm = Gpu::get()?.sort_with_permutation_host(keys, self.order)?;
            let old_values = values.to_vec();
            values
                .par_iter_mut()
                .zip(perm.par_iter())
                .for_each(|(v, &i)| *v = old_values[i as usize]);
            return Ok(ran);
        }
        let pairs = sorted_pairs(keys, self.order, ran.backend);
        let old_values = values.to_vec();
        keys.par_iter_mut()
            .zip(values.par_iter_mut())
            .zip(pairs.par_iter())
            .for_each(|((k, v), &(bits, i))| {
                *k = key_from_ordered_bits::<K>(bits, self.order);
                *v = old_values[i];
            });
        Ok(ran)
    }

    /// The permutation that sorts `keys`: `keys[p[0]], keys[p[1]], …` is sorted, ties in index
    /// order. Indices are `u32`; slices of more than `u32::MAX` keys need [`Sorter::argsort_u64`].
    ///
    /// ```
    /// let p = bitonic::Sorter::new().argsort(&[2.5f32, -1.0, 2.5, 0.0]).unwrap();
    /// assert_eq!(p, [1, 3, 0, 2]);
    /// ```
    pub fn argsort<K: SortKey>(&self, keys: &[K]) -> Result<Vec<u32>> {
        if keys.len() > u32::MAX as usize {
            return Err(Error::TooLong {
                len: keys.len(),
                max: u32::MAX as usize,
            });
        }
        let backend = self.key_value_ran(keys.len())?.backend;
        if backend == Backend::Cuda {
            return Gpu::get()?.argsort_rows_host(keys, keys.len(), self.order);
        }
        Ok(sorted_pairs(keys, self.order, backend)
            .into_par_iter()
            .map(|(_, i)| i as u32)
            .collect())
    }

    /// [`Sorter::argsort`] with `u64` indices, for any length.
    pub fn argsort_u64<K: SortKey>(&self, keys: &[K]) -> Result<Vec<u64>> {
        self.argsort_rows(keys, keys.len().max(1))
    }

    /// The permutation of every row of `row_len` keys, each row's indices counted from its
    /// start (`u64`, for rows of any length). `keys.len()` must be a multiple of `row_len`.
    ///
    /// ```
    /// let p = bitonic::Sorter::new().argsort_rows(&[3u32, 1, 2, 9, 7, 8], 3).unwrap();
    /// assert_eq!(p, [1, 2, 0, 1, 2, 0]);
    /// ```
    pub fn argsort_rows<K: SortKey>(&self, keys: &[K], row_len: usize) -> Result<Vec<u64>> {
        check_rows(keys.len(), row_len)?;
        let backend = self.key_value_ran(keys.len())?.backend;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if backend == Backend::Cuda && row_len <= u32::MAX as usize {
            let perm = Gpu::get()?.argsort_rows_host(keys, row_len, self.order)?;
            return Ok(perm.into_par_iter().map(u64::from).collect());
        }
        let rows: Vec<Vec<u64>> = keys
            .par_chunks(row_len)
            .map(|row| {
                sorted_pairs(row, self.order, backend)
                    .into_iter()
                    .map(|(_, i)| i as u64)
                    .collect()
            })
            .collect();
        Ok(rows.concat())
    }

    /// Sorts every row of a row-major matrix of rows of `row_len` keys, independently.
    ///
    /// ```
    /// let mut m = vec![3u32, 1, 2, /* next row */ 9, 7, 8];
    /// bitonic::Sorter::new().sort_rows(&mut m, 3).unwrap();
    /// assert_eq!(m, [1, 2, 3, 7, 8, 9]);
    /// ```
    pub fn sort_rows<K: SortKey>(&self, data: &mut [K], row_len: usize) -> Result<Ran> {
        check_rows(data.len(), row_len)?;
        let ran = self.key_value_ran(data.len())?;
        if data.is_empty() {
            return Ok(ran);
        }
        if ran.backend == Backend::Cuda {
            Gpu::get()?.sort_rows_host(data, row_len, self.order)?;
            return Ok(ran);
        }
        let (backend, order) = (ran.backend, self.order);
        let sort_row = |row: &mut [K]| crate::sort_on_cpu(row, order, true);
        match backend {
            Backend::CpuSerial => data.chunks_mut(row_len).for_each(sort_row),
            _ => data.par_chunks_mut(row_len).for_each(sort_row),
        }
        Ok(ran)
    }

    /// Sorts each segment `data[offsets[i]..offsets[i + 1]]` independently. `offsets` must start
    /// at 0, never decrease, and end at `data.len()`.
    ///
    /// ```
    /// let mut v = vec![2i64, 1, 5, 4, 3];
    /// bitonic::Sorter::new().sort_segments(&mut v, &[0, 2, 2, 5]).unwrap();
    /// assert_eq!(v, [1, 2, 3, 4, 5]);
    /// ```
    pub fn sort_segments<K: SortKey>(&self, data: &mut [K], offsets: &[usize]) -> Result<Ran> {
        check_segments(data.len(), offsets)?;
        let ran = self.key_value_ran(data.len())?;
        if ran.backend == Backend::Cuda {
            Gpu::get()?.sort_segments_host(data, offsets, self.order)?;
            return Ok(ran);
        }
        let backend = ran.backend;
        let mut segments = Vec::with_capacity(offsets.len().saturating_sub(1));
        let mut rest = data;
        for w in offsets.windows(2) {
            let (segment, tail) = rest.split_at_mut(w[1] - w[0]);
            segments.push(segment);
            rest = tail;
        }
        let order = self.order;
        match backend {
            Backend::CpuSerial => segments
                .into_iter()
                .for_each(|s| crate::sort_on_cpu(s, order, true)),
            _ => segments
                .into_par_iter()
                .for_each(|s| crate::sort_on_cpu(s, order, true)),
        }
        Ok(ran)
    }
}

/// `(ordered bits, original index)` pairs, sorted by the network: equal keys end in index order.
fn sorted_pairs<K: SortKey>(keys: &[K], order: Order, backend: Backend) -> Vec<(K::Bits, usize)> {
    let mut pairs: Vec<(K::Bits, usize)> = keys
        .par_iter()
        .enumerate()
        .map(|(i, &k)| (ordered_bits(k, order), i))
        .collect();
    match backend {
        Backend::CpuSerial => cpu::sort_serial(&mut pairs),
        _ => cpu::sort_parallel(&mut pairs),
    }
    pairs
}

/// Whether `len` keys split into rows of `row_len`: a length that divides them (no keys split
/// into rows of any length, 0 included). Shared by the CPU and GPU row sorts.
pub(crate) fn check_rows(len: usize, row_len: usize) -> Result<()> {
    if len > 0 && (row_len == 0 || len % row_len != 0) {
        return Err(Error::BadRows { len, row_len });
    }
    Ok(())
}

/// Whether `offsets` cut `len` keys into segments: from 0, never decreasing, to `len`.
pub(crate) fn check_segments(len: usize, offsets: &[usize]) -> Result<()> {
    let valid = offsets.first() == Some(&0)
        && offsets.last() == Some(&len)
        && offsets.windows(2).all(|w| w[0] <= w[1]);
    if valid {
        Ok(())
    } else {
        Err(Error::BadSegments { len })
    }
}
