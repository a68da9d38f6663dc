//! What the out-of-core schedules of many runs share (src/sorter/resident.rs, every run kept
//! on the GPU; src/sorter/out_of_core.rs, runs merged in blocks): the caller's host arrays
//! they read and write, the words their values move as, and the two streams on which their
//! copies overlap their sorts.

use crate::cuda::exec::Exec;
use crate::cuda::memory;
use crate::error::{CudaContext as _, Result};
use crate::key::{ordered_bits, tied_bits, KeyOrder};
use crate::SortKey;
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr};
use std::sync::Arc;

/// The caller's host arrays that a sort of many runs reads and writes.
pub(crate) struct HostItems<'a, K, V> {
    /// The keys to read: the input, or `None` for `keys_out` itself (in place).
    pub keys_in: Option<&'a [K]>,
    /// Where the sorted keys go (an argsort keeps none).
    pub keys_out: Option<&'a mut [K]>,
    /// The values, read and written back in the keys' order (an argsort's indices, numbered
    /// before the call).
    pub values: Option<&'a mut [V]>,
}

/// A value's word (u32 or u64) on the GPU and the host: an argsort's indices are words too.
pub(crate) trait Word: DeviceRepr + bytemuck::Pod + Into<u64> + Send + Sync {
    /// The word as an index.
    fn index(self) -> usize {
        usize::try_from(self.into()).expect("an index within the host's memory")
    }
}

impl Word for u32 {}
impl Word for u64 {}

/// How a schedule's cuts compare keys: as the sort compared them, by their ordered bits; with
/// values (`with_values`), keys equal by value (±0.0, NaNs in numeric order) tie, as in the
/// stable sort, so that ties keep their runs' order.
pub(crate) fn merge_word<K: SortKey>(
    order: KeyOrder,
    with_values: bool,
) -> impl Fn(K) -> u64 + Copy + Sync {
    move |key: K| match with_values {
        true => tied_bits(key, order).into(),
        false => ordered_bits(key, order).into(),
    }
}

/// The device buffers of one piece or block of a schedule: its keys and, with values, its
/// values.
pub(crate) struct ItemBuffers<K, V> {
    /// The keys.
    pub keys: CudaSlice<K>,
    /// The values, if the schedule carries some.
    pub values: Option<CudaSlice<V>>,
}

/// Two sets of buffers of `len` items each (`what`: a piece, a block), with values when
/// `with_values`, allocated on `stream`: a schedule's pieces or blocks take turns in them.
pub(crate) fn two_buffer_sets<K: DeviceRepr + bytemuck::Pod, V: DeviceRepr + bytemuck::Pod>(
    stream: &Arc<CudaStream>,
    len: usize,
    with_values: bool,
    what: &str,
) -> Result<[ItemBuffers<K, V>; 2]> {
    let set = || -> Result<ItemBuffers<K, V>> {
        Ok(ItemBuffers {
            keys: memory::alloc::<K>(stream, len, || what.into())?,
            values: match with_values {
                true => Some(memory::alloc::<V>(stream, len, || what.into())?),
                false => None,
            },
        })
    };
    Ok([set()?, set()?])
}

/// A copy stream and a sort stream for a schedule that overlaps them, the sort stream after
/// the work queued on the call's stream so far (a workspace being made there, a sort of the
/// caller's): the schedule joins the call's stream again at its end, so it runs between what
/// was queued there before and after. Buffers freed on the sort stream are declared before a
/// [`Settle`] of the two.
pub(crate) fn two_streams(x: &Exec) -> Result<(Arc<CudaStream>, Arc<CudaStream>)> {
    let context = x.gpu.context();
    let new_stream = || context.new_stream().during(|| "making a stream".into());
    let (copy_stream, sort_stream) = (new_stream()?, new_stream()?);
    join(&sort_stream, x.stream)?;
    Ok((copy_stream, sort_stream))
}

/// Makes the first stream (the sorts) wait for the second's work (the copies) when dropped, so
/// that buffers freed on the first after it (declared before it) are freed after the second is
/// done with them; and waits for both, so that no copy still reads the caller's slices and no
/// sort still uses the sorter's workspace once the call has returned, even on an error.
pub(crate) struct Settle<'a>(pub &'a Arc<CudaStream>, pub &'a Arc<CudaStream>);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        // Best effort: a stream that cannot wait has failed, and the context with it.
        let _ = self.0.join(self.1);
        let _ = self.1.synchronize();
        let _ = self.0.synchronize();
    }
}

/// Makes `waiting` wait for the work queued on `on` so far.
pub(crate) fn join(waiting: &CudaStream, on: &CudaStream) -> Result<()> {
    waiting.join(on).during(|| "ordering two streams".into())
}
