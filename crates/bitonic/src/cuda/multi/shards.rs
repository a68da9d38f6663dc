//! The buffers of a multi-GPU sort and the kernels on them: shards, packing key-value words,
//! filling padding, reading positions and counting below splitters.

use crate::cuda::exec::Exec;
use crate::cuda::launch::multi as launch;
use crate::cuda::levels::search_grid;
use crate::cuda::{keymap, memory, Gpu};
use crate::error::{CudaContext as _, Error, Result};
use crate::kernels::kernel_width;
use crate::kernels::{self, abi::map_flags, abi::KeyIndex};
use crate::key::{Bits, KeyOrder};
use crate::multi::{cut_for, Algorithm, Cut, Splitter};
use crate::{Order, SortKey};
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, DeviceSlice};

/// The sorted keys and their values, one shard of each per rank.
pub type SortedPairs<K, V> = (Vec<DeviceShard<K>>, Vec<DeviceShard<V>>);

/// A rank's keys on its GPU: `len` of them from `start` in `buf`. The multi-GPU sort returns
/// its result so, without copying it out of its working buffers.
pub struct DeviceShard<K> {
    pub(super) buf: CudaSlice<K>,
    pub(super) start: usize,
    pub(super) len: usize,
}

impl<K> std::fmt::Debug for DeviceShard<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceShard")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

impl<K: DeviceRepr + bytemuck::Pod> DeviceShard<K> {
    /// A new shard of `len` uninitialised values on `gpu`.
    pub(super) fn alloc(gpu: &Gpu, len: usize) -> Result<DeviceShard<K>> {
        Ok(DeviceShard {
            buf: alloc::<K>(gpu, len)?,
            start: 0,
            len,
        })
    }

    /// Keys in the shard.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the shard holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shard's keys, on its GPU.
    pub fn view(&self) -> CudaView<'_, K> {
        self.buf.slice(self.start..self.start + self.len)
    }

    /// The views of all shards, to sort them again, for instance.
    pub fn views(shards: &[DeviceShard<K>]) -> Vec<CudaView<'_, K>> {
        shards.iter().map(DeviceShard::view).collect()
    }

    /// The buffer and where the keys lie in it.
    pub fn into_parts(self) -> (CudaSlice<K>, std::ops::Range<usize>) {
        (self.buf, self.start..self.start + self.len)
    }

    /// Hands a buffer of sortable words over as a buffer of keys of the same width.
    pub(super) fn of_words<B: Bits>(
        words: CudaSlice<B>,
        start: usize,
        len: usize,
    ) -> DeviceShard<K> {
        assert_eq!(std::mem::size_of::<B>(), std::mem::size_of::<K>());
        let buf = memory::retype::<B, K>(words);
        DeviceShard { buf, start, len }
    }
}

/// A rank's sorted words: `len` of them from `start` in `buf`.
pub(super) struct Shard<W> {
    pub(super) buf: CudaSlice<W>,
    pub(super) start: usize,
    pub(super) len: usize,
}

impl<W: Word> Shard<W> {
    /// The first `count` words.
    pub(super) fn view(&self, count: usize) -> CudaView<'_, W> {
        self.buf.slice(self.start..self.start + count)
    }
}

/// What the passes of a multi-GPU sort move and compare: sortable u32 and u64 words, and the
/// 16-byte words of a key-value sort. The host compares them in the GPU's order.
pub(crate) trait Word: Copy + Ord + DeviceRepr + bytemuck::Pod + 'static {}
impl<B: Bits> Word for B {}
impl Word for KeyIndex {}

/// Buffer lengths for each rank's words: merge-split pads every shard to the longest, m
/// words; partition sorts each shard where it is.
pub(super) fn capacities(lens: &[usize], algorithm: Algorithm) -> Vec<usize> {
    let m = lens.iter().copied().max().unwrap_or(0);
    match algorithm {
        Algorithm::MergeSplit => vec![m; lens.len()],
        Algorithm::Partition => lens.to_vec(),
    }
}

/// Packs a rank's keys and values into key-value words (kernels/multi.cu); `first` is the
/// global position of its first pair.
pub(super) fn launch_pack<K: SortKey, V: DeviceRepr>(
    gpu: &Gpu,
    keys: &CudaView<K>,
    values: &CudaView<V>,
    out: &mut CudaSlice<KeyIndex>,
    first: u64,
    map: u32,
    half: Option<u32>,
) -> Result<()> {
    let n = keys.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let name = pack_kernel::<K, V>("pack");
    let f = gpu.function(&kernels::MULTI, &name)?;
    let keys = memory::reinterpret_ref::<K, K::Bits>(keys, keys.len());
    let x = Exec::of(gpu);
    let cfg = x.elementwise(n as usize);
    launch::pack_key_values(&x, &f, cfg, (&keys, values), out, (first, map, half))
        .during(|| format!("launching {name}"))
}

/// A rank's pairs packed into a new buffer of `capacity` key-value words (at least the
/// pairs'); `first` is the global position of its first pair, `(map, half)` as in
/// [`launch_pack`].
pub(super) fn words_of_pairs<K: SortKey, V: DeviceRepr>(
    gpu: &Gpu,
    (keys, values): (&CudaView<K>, &CudaView<V>),
    capacity: usize,
    first: u64,
    (map, half): (u32, Option<u32>),
) -> Result<CudaSlice<KeyIndex>> {
    let mut buf = alloc::<KeyIndex>(gpu, capacity)?;
    launch_pack::<K, V>(gpu, keys, values, &mut buf, first, map, half)?;
    Ok(buf)
}

/// Unpacks a rank's sorted key-value words into its output keys and values, made by the first
/// of the sorts ([`value_halves`]) and filled in by each.
pub(super) fn unpack_pairs<K: SortKey, V: DeviceRepr + bytemuck::Pod>(
    gpu: &Gpu,
    shard: &Shard<KeyIndex>,
    out: &mut Option<(DeviceShard<K>, DeviceShard<V>)>,
    (map, half): (u32, Option<u32>),
) -> Result<()> {
    if out.is_none() {
        *out = Some((
            DeviceShard::alloc(gpu, shard.len)?,
            DeviceShard::alloc(gpu, shard.len)?,
        ));
    }
    let (k, v) = out.as_mut().expect("made above");
    assert_eq!(k.len, shard.len, "both halves' sorts split alike");
    let words = shard.view(shard.len);
    launch_unpack::<K, V>(gpu, &words, &mut k.buf, &mut v.buf, map, half)
}

/// Unpacks sorted key-value words into keys and values (with `half`, one half of each
/// 8-byte value).
pub(super) fn launch_unpack<K: SortKey, V: DeviceRepr>(
    gpu: &Gpu,
    words: &CudaView<KeyIndex>,
    keys: &mut CudaSlice<K>,
    values: &mut CudaSlice<V>,
    map: u32,
    half: Option<u32>,
) -> Result<()> {
    let n = words.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let name = pack_kernel::<K, V>("unpack");
    let f = gpu.function(&kernels::MULTI, &name)?;
    let x = Exec::of(gpu);
    let cfg = x.elementwise(n as usize);
    launch::unpack_key_values(&x, &f, cfg, words, (keys, values), (map, half))
        .during(|| format!("launching {name}"))
}

/// `pack_kv32_u32`, `pack_kv32_u64`, `pack_kv64_u32`, `pack_kv64_u64` (and `unpack_…`): key
/// width, value width.
pub(super) fn pack_kernel<K, V>(what: &str) -> String {
    let key = if std::mem::size_of::<K>() == 4 {
        "kv32"
    } else {
        "kv64"
    };
    format!("{what}_{key}_u{}", 8 * std::mem::size_of::<V>())
}

/// One message of a round: a view on rank `from` into rank `to`'s receive buffer.
pub(super) struct Transfer<'a, B> {
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) src: CudaView<'a, B>,
    /// Where the message goes in rank `to`'s receive buffer.
    pub(super) at: usize,
}

/// `len` keys split into `parts` ranges as evenly as possible.
pub fn even_split(len: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    (0..parts)
        .map(|r| (r * len / parts)..((r + 1) * len / parts))
        .collect()
}

/// A buffer of `len` values that the sort writes before it reads, or of one when `len` is 0
/// (CUDA makes no empty allocation; an empty shard's buffer is then unused).
pub(super) fn alloc<T: DeviceRepr + bytemuck::Pod>(gpu: &Gpu, len: usize) -> Result<CudaSlice<T>> {
    memory::alloc(gpu.stream(), len, || {
        format!("a shard of {len} words on GPU {}", gpu.info().ordinal)
    })
}

/// A shard's checks, the same for every sorter: it is on `gpu` (a rank's), and no longer than
/// one sort takes.
pub(super) fn check_shard<T>(shard: &CudaView<T>, gpu: &Gpu) -> Result<()> {
    let (buffer, sorter) = (shard.stream().context().ordinal(), gpu.info().ordinal);
    if buffer != sorter {
        return Err(Error::WrongDevice { buffer, sorter });
    }
    crate::plan::check_len(shard.len())
}

/// A buffer length of at least `len` from a few sizes only (a multiple of 1/32 to 1/64 of
/// `len`), so that buckets a little larger or smaller than last time reuse the buffers the
/// memory pool kept instead of mapping new memory.
pub(super) fn pool_friendly(len: usize) -> usize {
    let granule = 1usize << (usize::BITS - len.leading_zeros()).saturating_sub(6);
    len.next_multiple_of(granule)
}

/// Copies a shard of keys into the front of a word buffer of the same GPU.
pub(super) fn copy_in<K: SortKey>(
    gpu: &Gpu,
    input: &CudaView<K>,
    buf: &mut CudaSlice<K::Bits>,
) -> Result<()> {
    if input.is_empty() {
        return Ok(());
    }
    let src = memory::reinterpret_ref::<K, K::Bits>(input, input.len());
    gpu.stream()
        .memcpy_dtod(&src, &mut buf.slice_mut(0..input.len()))
        .during(|| "copying a shard".into())
}

/// A rank's keys copied into a new buffer of `capacity` words (at least the keys'), mapped to
/// the sortable words of `order` on the way (one pass): what the multi-GPU sorts sort
/// ascending.
pub(super) fn words_of_keys<K: SortKey>(
    gpu: &Gpu,
    input: &CudaView<K>,
    capacity: usize,
    order: Order,
) -> Result<CudaSlice<K::Bits>> {
    let mut buf = alloc::<K::Bits>(gpu, capacity)?;
    let order = KeyOrder::of(order);
    if !K::DTYPE.needs_map(order.order) {
        copy_in(gpu, input, &mut buf)?;
        return Ok(buf);
    }
    let keys = memory::reinterpret_ref::<K, K::Bits>(input, input.len());
    let words = &mut buf.slice_mut(0..input.len());
    let map = map_flags(K::DTYPE, order);
    keymap::map_words_into(&Exec::of(gpu), &keys, words, map)?;
    Ok(buf)
}

/// A rank's sorted words mapped back to keys in place ([`words_of_keys`]'s inverse) and
/// handed over as keys.
pub(super) fn keys_of_words<K: SortKey>(
    gpu: &Gpu,
    mut shard: Shard<K::Bits>,
    order: Order,
) -> Result<DeviceShard<K>> {
    let words = &mut shard.buf.slice_mut(shard.start..shard.start + shard.len);
    map_to_words::<K>(gpu, words, KeyOrder::of(order), true)?;
    Ok(DeviceShard::of_words::<K::Bits>(
        shard.buf,
        shard.start,
        shard.len,
    ))
}

/// The sorts a key-value sort of `K` keys and `V` values takes, each naming the half of the
/// value its 16-byte words carry (`None`: the whole value). A 64-bit key leaves a word 4
/// bytes for the value: an 8-byte value travels in two sorts, its low half in the first, its
/// high half in the second. The words order by (key, global position) alone, so both sorts
/// put every pair in the same place. Keys and values of 4 or 8 bytes only.
pub(super) fn value_halves<K, V>() -> Result<&'static [Option<u32>]> {
    let (key_bytes, value_bytes) = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
    match (key_bytes, value_bytes) {
        (8, 8) => Ok(&[Some(0), Some(1)]),
        (4 | 8, 4 | 8) => Ok(&[None]),
        _ => Err(Error::UnsupportedKeyValue {
            key_bytes,
            value_bytes,
        }),
    }
}

/// A key-value sort's pairs: at most 2^32 - 1 in all, since a word's position is 32 bits.
pub(super) fn check_pair_count(total: usize) -> Result<()> {
    if total > u32::MAX as usize {
        return Err(Error::TooLong {
            len: total,
            max: u32::MAX as usize,
        });
    }
    Ok(())
}

/// Maps a shard's keys to their sortable words in `order` (`inverse` false) or back.
pub(super) fn map_to_words<K: SortKey>(
    gpu: &Gpu,
    words: &mut CudaViewMut<K::Bits>,
    order: KeyOrder,
    inverse: bool,
) -> Result<()> {
    if K::DTYPE.needs_map(order.order) && !words.is_empty() {
        let map = map_flags(K::DTYPE, order);
        keymap::map_words(&Exec::of(gpu), words, map, inverse)?;
    }
    Ok(())
}

pub(super) fn launch_fill_largest<B: Word>(gpu: &Gpu, words: &mut CudaViewMut<B>) -> Result<()> {
    let n = words.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let x = Exec::of(gpu);
    let f = gpu.function(
        &kernels::MULTI,
        &format!("fill_largest_{}", kernel_width::<B>()),
    )?;
    launch::fill_largest(&x, &f, x.elementwise(n as usize), words)
        .during(|| "launching fill_largest".into())
}

/// The words of `buf` at `positions` (samples), copied to the host, on `x`'s stream.
pub(crate) fn take<B: Word>(x: &Exec, buf: &CudaSlice<B>, positions: &[usize]) -> Result<Vec<B>> {
    if positions.is_empty() {
        return Ok(Vec::new());
    }
    let stream = x.stream;
    let at: Vec<u64> = positions.iter().map(|&p| p as u64).collect();
    let at = stream
        .clone_htod(&at)
        .during(|| "copying sample positions".into())?;
    let mut out = memory::alloc::<B>(stream, positions.len(), || "samples".into())?;
    let f = x.function(&kernels::MULTI, &format!("take_{}", kernel_width::<B>()))?;
    let count = positions.len() as u32;
    launch::take(x, &f, search_grid(count), buf, &at, &mut out)
        .during(|| "launching take".into())?;
    stream
        .clone_dtoh(&out)
        .during(|| "copying samples back".into())
}

/// Where each splitter cuts rank `rank`'s sorted `len` words: `splitters.len()` positions.
pub(super) fn count_below<B: Word>(
    gpu: &Gpu,
    buf: &CudaSlice<B>,
    len: usize,
    splitters: &[Splitter<B>],
    rank: usize,
) -> Result<Vec<usize>> {
    let cuts: Vec<Cut<B>> = splitters.iter().map(|s| cut_for(s, rank)).collect();
    let queries: Vec<(B, u32)> = cuts
        .iter()
        .filter_map(|c| match *c {
            Cut::Below { key, or_equal } => Some((key, or_equal as u32)),
            Cut::At(_) => None,
        })
        .collect();
    let mut found = Vec::new();
    if !queries.is_empty() {
        let stream = gpu.stream();
        let keys: Vec<B> = queries.iter().map(|q| q.0).collect();
        let upper: Vec<u32> = queries.iter().map(|q| q.1).collect();
        let keys = stream
            .clone_htod(&keys)
            .during(|| "copying splitters".into())?;
        let upper = stream
            .clone_htod(&upper)
            .during(|| "copying splitters".into())?;
        let mut out = alloc::<u64>(gpu, queries.len())?;
        let f = gpu.function(
            &kernels::MULTI,
            &format!("count_below_{}", kernel_width::<B>()),
        )?;
        let cfg = search_grid(queries.len() as u32);
        let x = Exec::of(gpu);
        launch::count_below(&x, &f, cfg, (buf, len as u64), (&keys, &upper), &mut out)
            .during(|| "launching count_below".into())?;
        found = stream
            .clone_dtoh(&out)
            .during(|| "copying cuts back".into())?;
    }
    let mut found = found.into_iter();
    Ok(cuts
        .iter()
        .map(|c| match *c {
            Cut::At(index) => index,
            Cut::Below { .. } => found.next().expect("one answer a query") as usize,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::pool_friendly;

    #[test]
    fn buckets_near_one_size_share_a_few_buffer_lengths() {
        assert_eq!(pool_friendly(0), 0);
        assert_eq!(pool_friendly(1), 1);
        let share = 1usize << 30;
        let mut lengths: Vec<usize> = (0..1000)
            .map(|k| share - (1 << 22) + k * 8389)
            .map(pool_friendly)
            .collect();
        lengths.dedup();
        assert!(lengths.len() <= 2, "{lengths:?}");
        for len in [1usize, 63, 64, 65, 1000, 123_456_789, share + 1] {
            let capacity = pool_friendly(len);
            assert!(
                capacity >= len && capacity <= len + len / 32,
                "{len} -> {capacity}"
            );
        }
    }
}
