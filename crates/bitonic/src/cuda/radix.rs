//! Runs a [`RadixPlan`] (kernels/radix.cu): the stable radix sort with indices of rows, for
//! argsorts and for the top-k of rows by sorting, or with a key-value sort's 4-byte values in
//! the indices' place ([`RadixPlan::values`]), or of long rows of keys alone with no index
//! ([`RadixPlan::indices`] false). One block a row is one launch; the passes over
//! tiles take one launch a digit from the lowest, each a store of each tile in the digit's
//! order, from the input to the workspace's arrays, from one of them to the other, and from the
//! last to the outputs; where rows span several tiles, after a zeroing of the look-back's words
//! and one launch that counts every digit of every row.

use super::exec::{config, Exec};
use super::launch::radix::{
    radix_digit_counts, radix_scatter, row_radix_sort, LookBackArrays, RadixInput, ScatterArrays,
    Tiles,
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
/// values (`RadixPlan::values`), the 4-byte values `indices` held, in the keys' order; or,
/// for keys alone (`indices` None, the plan's `indices` false), the keys only.
pub(crate) fn run<W: DeviceRepr + bytemuck::Pod, I: DeviceRepr + bytemuck::Pod>(
    x: &Exec,
    plan: &RadixPlan,
    input: RadixInput<W>,
    (sorted, indices): (&mut CudaViewMut<W>, Option<&mut CudaViewMut<I>>),
    map: u32,
    pad: &mut Scratchpad,
) -> Result<()> {
    assert_eq!(
        indices.is_some(),
        plan.indices,
        "indices where the plan has them"
    );
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
            let indices = indices
                .expect("one block a row writes indices: the plan sends keys alone to passes");
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
            buffers,
            look_back,
        } => {
            let n = rows * row_len;
            let words = pad.take::<W>(Scratch::RadixKeys, buffers * n);
            let (mut keys_a, mut keys_b) = memory::split(words, n);
            // Keys alone carry no index between digits.
            let (mut index_a, mut index_b) = match indices {
                Some(_) => {
                    let index = pad.take::<u32>(Scratch::RadixIndices, buffers * n);
                    let (a, b) = memory::split(index, n);
                    (Some(a), Some(b))
                }
                None => (None, None),
            };
            let mut indices = indices;
            let digits = std::mem::size_of::<W>();
            let tiles = (len, tile as u32, tiles_a_row as u32);
            let blocks = (rows * tiles_a_row) as u32;
            // The look-back's words, zeroed, and every row's count of every digit.
            let mut look_back_words = match look_back {
                Some(plan) => {
                    let mut all = pad.take::<u64>(Scratch::RadixLookBack, plan.words(digits));
                    x.stream
                        .memset_zeros(&mut all)
                        .during(|| "zeroing the radix look-back".into())?;
                    let (status, counts) = memory::split(all, digits * plan.status);
                    let counts_len = 2 * counts.len();
                    let counts = memory::reinterpret::<u64, u32>(counts, counts_len);
                    let (mut row_counts, next_tiles) = memory::split(counts, plan.row_counts);
                    let name = format!("radix_digit_counts_{w}");
                    let f = x.function(&kernels::RADIX, &name)?;
                    let cfg = config(blocks, 256, 0);
                    let counted = match &input {
                        RadixInput::Keys(keys) => {
                            radix_digit_counts(x, &f, cfg, keys, &mut row_counts, tiles, map)
                        }
                        RadixInput::InPlace => {
                            let keys = sorted.as_view();
                            radix_digit_counts(x, &f, cfg, &keys, &mut row_counts, tiles, map)
                        }
                    };
                    counted.during(|| format!("launching {name}"))?;
                    Some((status, row_counts, next_tiles, plan.status))
                }
                None => None,
            };
            let pass = DigitPass {
                scatter: x.function_sharing(
                    &kernels::RADIX,
                    &format!("radix_scatter_{w}"),
                    shared_bytes,
                )?,
                blocks,
                threads,
                shared_bytes,
                tiles,
                map,
                k: k32,
            };
            let scratch = &mut look_back_words;
            // Digit 0 from the input to a, then a to b and b to a in turn, the last to the
            // outputs.
            // The last digit stores the input's keys where the map ties some (their words do
            // not give them back), unless it stores over them (in place: the words unmapped).
            let input = match input {
                RadixInput::Keys(keys) => Some(keys),
                RadixInput::InPlace => None,
            };
            let to_a = (&mut keys_a, index_a.as_mut());
            // The first digit makes the indices, or reads the values from the output array.
            let values = plan.values.then(|| {
                // (the last digit reads the input's keys by index for no value)
                assert!(input.is_none(), "values sort in place");
                assert!(std::mem::size_of::<I>() == 4, "values of 4 bytes");
                assert!(k == row_len, "values come back whole rows");
                let values = indices.as_ref().expect("values travel as indices");
                memory::reinterpret_ref::<I, u32>(&values.as_view(), n)
            });
            match input {
                Some(keys) => pass.run(x, 0, (keys, values.as_ref()), input, to_a, scratch)?,
                None => {
                    let keys = sorted.as_view();
                    pass.run(x, 0, (&keys, values.as_ref()), None, to_a, scratch)?
                }
            }
            for digit in 1..digits {
                let scratch = &mut look_back_words;
                // Odd digits read a, even ones b; the last writes the outputs.
                let (from, from_index, to, to_index) = if digit % 2 == 1 {
                    (&keys_a, &index_a, &mut keys_b, &mut index_b)
                } else {
                    (&keys_b, &index_b, &mut keys_a, &mut index_a)
                };
                let (keys, index) = (from.as_view(), from_index.as_ref().map(|i| i.as_view()));
                let source = (&keys, index.as_ref());
                if digit + 1 == digits {
                    let outputs = (&mut *sorted, indices.as_deref_mut());
                    pass.run(x, digit, source, input, outputs, scratch)?;
                } else {
                    pass.run(x, digit, source, input, (to, to_index.as_mut()), scratch)?;
                }
            }
            Ok(())
        }
    }
}

/// The look-back's words of the passes over rows of several tiles: every digit's status words,
/// the row counts, every digit's next tile, and how many status words a digit has.
type LookBackWords<'a> = Option<(
    CudaViewMut<'a, u64>,
    CudaViewMut<'a, u32>,
    CudaViewMut<'a, u32>,
    usize,
)>;

/// The kernel and shape of the passes over tiles.
struct DigitPass {
    scatter: CudaFunction,
    blocks: u32,
    threads: u32,
    shared_bytes: u32,
    tiles: Tiles,
    map: u32,
    k: u32,
}

impl DigitPass {
    /// The pass of digit `digit` (the lowest is 0): the stores of `keys` and their indices
    /// (`index`; for digit 0, which reads the input's keys, none: it makes their columns, or a
    /// key-value sort's values) in the digit's order to `out`: sortable words, and for the last
    /// digit the first k keys of each row, from `input` where the map ties keys. Rows of
    /// several tiles look back through `look_back`'s words of this digit.
    fn run<W: DeviceRepr, I: DeviceRepr>(
        &self,
        x: &Exec,
        digit: usize,
        (keys, index): (&CudaView<W>, Option<&CudaView<u32>>),
        input: Option<&CudaView<W>>,
        (keys_out, index_out): (&mut CudaViewMut<W>, Option<&mut CudaViewMut<I>>),
        look_back: &mut LookBackWords,
    ) -> Result<()> {
        let shift = 8 * digit as u32;
        let (first, last) = (digit == 0, digit + 1 == std::mem::size_of::<W>());
        let look_back =
            look_back.as_mut().map(
                |(status, row_counts, next_tiles, per_digit)| LookBackArrays {
                    status: status.slice_mut(digit * *per_digit..(digit + 1) * *per_digit),
                    row_counts: row_counts.as_view(),
                    next_tile: next_tiles.slice_mut(digit..digit + 1),
                },
            );
        let arrays = ScatterArrays {
            keys,
            input: input.unwrap_or(keys),
            from_input: last && input.is_some() && self.map & MAP_TIED != 0,
            index_in: index,
            keys_out,
            index_out,
        };
        let cfg = config(self.blocks, self.threads, self.shared_bytes);
        let flags = (shift, self.map, first, last, self.k);
        radix_scatter(x, &self.scatter, cfg, arrays, look_back, self.tiles, flags)
            .during(|| "launching radix_scatter".into())
    }
}
