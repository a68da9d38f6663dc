//! Runs a [`RadixPlan`] (kernels/radix.cu): the stable radix sort with indices of rows, for
//! argsorts and for the top-k of rows by sorting, or with a key-value sort's 4-byte values in
//! the indices' place ([`RadixPlan::values`]). One block a row is one launch; the passes over
//! tiles take, for each digit from the lowest, a count of each tile's digits, the counts' scan
//! and a store of each tile in the digit's order, from the input to the workspace's arrays, from
//! one of them to the other, and from the last to the outputs.

use super::exec::{config, Exec};
use super::launch::radix::{
    radix_histogram, radix_scan, radix_scatter, row_radix_sort, RadixInput, ScatterArrays, Tiles,
};
use super::memory::{self, Scratchpad};
use crate::error::{CudaContext as _, Result};
use crate::kernels::abi::{MAP_INDEX64, MAP_TIED};
use crate::kernels::{self, kernel_width};
use crate::plan::{RadixPlan, RadixShape, Scratch};
use cudarc::driver::{CudaFunction, CudaView, CudaViewMut, DeviceRepr};

/// Sorts the plan's rows of `input` (words of a key's width, read as they are; their order is
/// the key map `map`'s) stably and writes the first k of each row to `sorted` and their
/// indices in their row to `indices` (4- or 8-byte), k a row; or, where the plan carries
/// values (`RadixPlan::values`), the 4-byte values `indices` held, in the keys' order.
pub(crate) fn run<W: DeviceRepr + bytemuck::Pod, I: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    plan: &RadixPlan,
    input: RadixInput<W>,
    (sorted, indices): (&mut CudaViewMut<W>, &mut CudaViewMut<I>),
    map: u32,
    pad: &mut Scratchpad,
) -> Result<()> {
    let RadixPlan {
        rows, row_len, k, ..
    } = *plan;
    if rows == 0 || row_len == 0 || k == 0 {
        return Ok(());
    }
    let map = match std::mem::size_of::<I>() {
        8 => map | MAP_INDEX64,
        _ => map,
    };
    let w = kernel_width::<W>();
    let (len, k32) = (row_len as u32, k as u32);
    match plan.shape {
        RadixShape::OneBlockARow {
            threads,
            shared_bytes,
        } => {
            // (its indices are 16-bit, made in shared memory: the plan sends values to passes)
            assert!(!plan.values, "one block a row carries no values");
            let name = format!("row_radix_sort_{w}");
            let f = x.function_sharing(&kernels::RADIX, &name, shared_bytes)?;
            let cfg = config(rows as u32, threads, shared_bytes);
            row_radix_sort(x, &f, cfg, input, (sorted, indices), (len, k32, map))
                .during(|| format!("launching {name}"))
        }
        RadixShape::Passes {
            tile,
            threads,
            tiles_a_row,
            shared_bytes,
            counts,
            chunks,
            buffers,
        } => {
            let n = rows * row_len;
            let words = pad.take::<W>(Scratch::RadixKeys, buffers * n);
            let index = pad.take::<u32>(Scratch::RadixIndices, buffers * n);
            let (mut keys_a, mut keys_b) = memory::split(words, n);
            let (mut index_a, mut index_b) = memory::split(index, n);
            let mut counts = pad.take::<u32>(Scratch::RadixCounts, counts);
            let mut sums = pad.take::<u32>(Scratch::RadixSums, chunks);
            let pass = DigitPass {
                histogram: x.function(&kernels::RADIX, &format!("radix_histogram_{w}"))?,
                scatter: x.function_sharing(
                    &kernels::RADIX,
                    &format!("radix_scatter_{w}"),
                    shared_bytes,
                )?,
                scans: [
                    x.function(&kernels::RADIX, "radix_scan_sums")?,
                    x.function(&kernels::RADIX, "radix_scan_of_sums")?,
                    x.function(&kernels::RADIX, "radix_scan_chunks")?,
                ],
                blocks: (rows * tiles_a_row) as u32,
                threads,
                shared_bytes,
                tiles: (len, tile as u32, tiles_a_row as u32),
                map,
                k: k32,
            };
            let scratch = (&mut counts, &mut sums);
            // Digit 0 from the input to a, then a to b and b to a in turn, the last to the
            // outputs.
            // The last digit stores the input's keys where the map ties some (their words do
            // not give them back), unless it stores over them (in place: the words unmapped).
            let input = match input {
                RadixInput::Keys(keys) => Some(keys),
                RadixInput::InPlace => None,
            };
            let to_a = (&mut keys_a, &mut index_a);
            // The first digit makes the indices, or reads the values from the output array.
            let values = plan.values.then(|| {
                // (the last digit reads the input's keys by index for no value)
                assert!(input.is_none(), "values sort in place");
                assert!(std::mem::size_of::<I>() == 4, "values of 4 bytes");
                assert!(k == row_len, "values come back whole rows");
                memory::reinterpret_ref::<I, u32>(&indices.as_view(), n)
            });
            match input {
                Some(keys) => pass.run(x, 0, (keys, values.as_ref()), input, to_a, scratch)?,
                None => {
                    let keys = sorted.as_view();
                    pass.run(x, 0, (&keys, values.as_ref()), None, to_a, scratch)?
                }
            }
            let digits = std::mem::size_of::<W>();
            for digit in 1..digits {
                let scratch = (&mut counts, &mut sums);
                // Odd digits read a, even ones b; the last writes the outputs.
                let (from, from_index, to, to_index) = if digit % 2 == 1 {
                    (&keys_a, &index_a, &mut keys_b, &mut index_b)
                } else {
                    (&keys_b, &index_b, &mut keys_a, &mut index_a)
                };
                let (keys, index) = (from.as_view(), from_index.as_view());
                let source = (&keys, Some(&index));
                if digit + 1 == digits {
                    let outputs = (&mut *sorted, &mut *indices);
                    pass.run(x, digit, source, input, outputs, scratch)?;
                } else {
                    pass.run(x, digit, source, input, (to, to_index), scratch)?;
                }
            }
            Ok(())
        }
    }
}

/// The kernels and shape of the passes over tiles.
struct DigitPass {
    histogram: CudaFunction,
    scatter: CudaFunction,
    scans: [CudaFunction; 3],
    blocks: u32,
    threads: u32,
    shared_bytes: u32,
    tiles: Tiles,
    map: u32,
    k: u32,
}

impl DigitPass {
    /// The pass of digit `digit` (the lowest is 0): counts of `keys`' digits, their scan, and
    /// the stores of `keys` and their indices (`index`; for digit 0, which reads the input's
    /// keys, none: it makes their columns, or a key-value sort's values) in the digit's order
    /// to `out`: sortable words, and for the last digit the first k keys of each row, from
    /// `input` where the map ties keys.
    fn run<W: DeviceRepr, I: DeviceRepr>(
        &self,
        x: &Exec,
        digit: usize,
        (keys, index): (&CudaView<W>, Option<&CudaView<u32>>),
        input: Option<&CudaView<W>>,
        (keys_out, index_out): (&mut CudaViewMut<W>, &mut CudaViewMut<I>),
        (counts, sums): (&mut CudaViewMut<u32>, &mut CudaViewMut<u32>),
    ) -> Result<()> {
        let shift = 8 * digit as u32;
        let (first, last) = (digit == 0, digit + 1 == std::mem::size_of::<W>());
        let cfg = config(self.blocks, 256, 0);
        radix_histogram(
            x,
            &self.histogram,
            cfg,
            keys,
            counts,
            self.tiles,
            (shift, if first { self.map } else { 0 }),
        )
        .during(|| "launching radix_histogram".into())?;
        let scans = [&self.scans[0], &self.scans[1], &self.scans[2]];
        radix_scan(x, scans, counts, sums).during(|| "launching the counts' scan".into())?;
        let offsets = counts.as_view();
        // A first digit that makes its indices reads none: any u32 array stands in.
        let index_in = index.unwrap_or(&offsets);
        let arrays = ScatterArrays {
            keys,
            input: input.unwrap_or(keys),
            from_input: last && input.is_some() && self.map & MAP_TIED != 0,
            index_in,
            index_from_columns: index.is_none(),
            keys_out,
            index_out,
        };
        let cfg = config(self.blocks, self.threads, self.shared_bytes);
        let flags = (shift, self.map, first, last, self.k);
        radix_scatter(x, &self.scatter, cfg, arrays, &offsets, self.tiles, flags)
            .during(|| "launching radix_scatter".into())
    }
}
