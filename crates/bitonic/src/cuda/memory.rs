//! Device memory as typed views: buffers that a call writes before it reads, keys seen as
//! the words they sort as, and a call's workspace cut into its plan's parts. With the launch,
//! graph, staging, NVRTC and driver layers, the only place that reinterprets device memory.
//!
//! cudarc ties a view's lifetime to the borrow it was split or reinterpreted from; the helpers
//! here give the parts of one view the view's own lifetime instead, which is sound because a
//! view is a pointer, a length and references to its parent buffer's records, none of them
//! into the view that was split.

use crate::error::{Error, Result};
use crate::plan::{Scratch, Workspace};
use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr};
use std::sync::Arc;

/// Zeroes every byte of `view` on `stream` (an index 0, a position 0).
pub(crate) fn zero<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    view: &mut CudaViewMut<T>,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    let bytes = view.len() * std::mem::size_of::<T>();
    let mut zeros = reinterpret::<T, u8>(view.slice_mut(..), bytes);
    stream.memset_zeros(&mut zeros)
}

/// A buffer of `n` elements on `stream` (at least one: the driver refuses empty ones) that the
/// call writes before anything reads it; `what` names it in the error when the device has no
/// room ([`Error::DeviceMemory`]).
pub(crate) fn alloc<T: DeviceRepr + bytemuck::Pod>(
    stream: &Arc<CudaStream>,
    n: usize,
    what: impl FnOnce() -> String,
) -> Result<CudaSlice<T>> {
    // SAFETY: `T` is plain data, so memory nothing has written yet holds some `T` (never an
    // invalid one): reading it early gives garbage, not undefined behaviour.
    let allocated = unsafe { stream.alloc::<T>(n.max(1)) };
    allocated.map_err(|cause| allocation_error(cause, n * std::mem::size_of::<T>(), what))
}

/// A call's own workspace: allocated on the call's stream where its plan needs bytes, and
/// where it needs none (most sorts of one array) an empty buffer made without a driver call.
/// Even a one-byte allocation and its free cost a small sort microseconds of host time before
/// its first launch, which its CUDA events then count.
pub(crate) enum OwnedWorkspace {
    Allocated(CudaSlice<u8>),
    /// Never freed: it holds no allocation (see `Drop`).
    Empty(std::mem::ManuallyDrop<CudaSlice<u8>>),
}

impl OwnedWorkspace {
    /// `bytes` on `stream` ([`alloc`]), or the empty buffer for 0.
    pub(crate) fn new(
        stream: &Arc<CudaStream>,
        bytes: usize,
        what: impl FnOnce() -> String,
    ) -> Result<OwnedWorkspace> {
        if bytes > 0 {
            return alloc::<u8>(stream, bytes, what).map(OwnedWorkspace::Allocated);
        }
        // SAFETY: a buffer of no elements at the null address: nothing can read or write
        // through it (a view of it has no element), and it is never freed (`Drop` leaks it).
        // A kernel may get the address as an argument it never dereferences (a tuned pass
        // that packs and unpacks reads and writes only its `Packing`'s buffers).
        let empty = unsafe { stream.upgrade_device_ptr::<u8>(0, 0) };
        Ok(OwnedWorkspace::Empty(std::mem::ManuallyDrop::new(empty)))
    }

    pub(crate) fn view_mut(&mut self) -> CudaViewMut<'_, u8> {
        match self {
            OwnedWorkspace::Allocated(buffer) => buffer.as_view_mut(),
            OwnedWorkspace::Empty(empty) => empty.as_view_mut(),
        }
    }
}

impl Drop for OwnedWorkspace {
    fn drop(&mut self) {
        if let OwnedWorkspace::Empty(empty) = self {
            // SAFETY: `empty` is taken once, here, and not used after.
            let empty = unsafe { std::mem::ManuallyDrop::take(empty) };
            let _null = empty.leak(); // no allocation to free
        }
    }
}

/// The library's error for a failed allocation of `bytes`: [`Error::DeviceMemory`] when the
/// device is out of memory.
pub(crate) fn allocation_error(
    cause: cudarc::driver::DriverError,
    bytes: usize,
    what: impl FnOnce() -> String,
) -> Error {
    if cause.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        Error::DeviceMemory {
            bytes,
            what: what(),
        }
    } else {
        Error::Cuda {
            context: format!("allocating {bytes} bytes for {}", what()),
            cause,
        }
    }
}

/// `view` split at `mid`, both parts living as long as `view` does.
pub(crate) fn split<'a, T>(
    mut view: CudaViewMut<'a, T>,
    mid: usize,
) -> (CudaViewMut<'a, T>, CudaViewMut<'a, T>) {
    let (head, tail) = view.split_at_mut(mid);
    // SAFETY: the parts are disjoint ranges of the memory `view` borrows for 'a, and they
    // refer to the parent buffer's records (not to `view`), which live for 'a: only the
    // lifetime the signature of `split_at_mut` shortened is restored.
    unsafe {
        (
            std::mem::transmute::<CudaViewMut<'_, T>, CudaViewMut<'a, T>>(head),
            std::mem::transmute::<CudaViewMut<'_, T>, CudaViewMut<'a, T>>(tail),
        )
    }
}

/// `$body` with the type `$w` the plain word of `$k`'s width (`u16`, `u32` or `u64`), for
/// kernels that take keys as words of their own width (the top-k's selects and gathers read
/// or move them as they are, 16-bit keys unwidened).
macro_rules! with_word_of_width {
    ($k:ty, $w:ident => $body:expr) => {
        match std::mem::size_of::<$k>() {
            2 => {
                type $w = u16;
                $body
            }
            4 => {
                type $w = u32;
                $body
            }
            _ => {
                type $w = u64;
                $body
            }
        }
    };
}
pub(crate) use with_word_of_width;

/// The first `len` elements of `S` of `view`'s memory.
///
/// Panics when `view` holds fewer bytes; `S` and `T` must have the same alignment or `view`
/// start at a multiple of `S`'s (every buffer and workspace part does: 256 bytes).
pub(crate) fn reinterpret<'a, T, S: bytemuck::Pod>(
    mut view: CudaViewMut<'a, T>,
    len: usize,
) -> CudaViewMut<'a, S> {
    // SAFETY: `S` is plain data, so any bytes are an `S`; the driver's allocations and the
    // workspace's parts are 256-byte aligned, and the caller's words are views of their own
    // buffers at element offsets of the same width.
    let typed = unsafe { view.transmute_mut::<S>(len) }.expect("the view holds len elements");
    // SAFETY: as in `split`: the view refers to the parent buffer's records, living for 'a.
    unsafe { std::mem::transmute::<CudaViewMut<'_, S>, CudaViewMut<'a, S>>(typed) }
}

/// [`reinterpret`] of a read-only view.
pub(crate) fn reinterpret_ref<'a, T, S: bytemuck::Pod>(
    view: &CudaView<'a, T>,
    len: usize,
) -> CudaView<'a, S> {
    // SAFETY: as in `reinterpret`.
    let typed = unsafe { view.transmute::<S>(len) }.expect("the view holds len elements");
    // SAFETY: as in `split`.
    unsafe { std::mem::transmute::<CudaView<'_, S>, CudaView<'a, S>>(typed) }
}

/// `buffer`'s memory as a buffer of `B`, as many as fit (the multi-GPU sort hands buffers of
/// sortable words over as keys of the same width).
pub(crate) fn retype<A, B: DeviceRepr + bytemuck::Pod>(buffer: CudaSlice<A>) -> CudaSlice<B> {
    let count = buffer.len() * std::mem::size_of::<A>() / std::mem::size_of::<B>();
    let stream = buffer.stream().clone();
    // SAFETY: the allocation `leak` hands over holds `count` elements of `B` (its bytes,
    // rounded down), `B` is plain data so every bit pattern is one, and the new buffer frees
    // the allocation on the same stream as the old one would have.
    unsafe { stream.upgrade_device_ptr::<B>(buffer.leak(), count) }
}

/// A call's workspace cut into the parts its plan names.
pub(crate) struct Scratchpad<'a> {
    parts: Vec<(Scratch, CudaViewMut<'a, u8>)>,
}

impl<'a> Scratchpad<'a> {
    /// `memory` cut into the parts of `layout`; [`Error::WorkspaceTooSmall`] when it holds
    /// fewer bytes than the layout.
    pub(crate) fn new(memory: CudaViewMut<'a, u8>, layout: &Workspace) -> Result<Scratchpad<'a>> {
        let (given, needed) = (memory.len(), layout.bytes());
        if given < needed {
            return Err(Error::WorkspaceTooSmall { needed, given });
        }
        let mut parts = Vec::with_capacity(layout.parts().len());
        let (mut rest, mut at) = (memory, 0);
        for part in layout.parts() {
            let (_, from) = split(rest, part.offset - at);
            let (bytes, tail) = split(from, part.bytes);
            parts.push((part.scratch, bytes));
            (rest, at) = (tail, part.offset + part.bytes);
        }
        Ok(Scratchpad { parts })
    }

    /// The part that holds `scratch`, as `len` elements of `T`. The plan laid it out: a part
    /// the runner asks for and the plan did not name is a bug, and panics.
    pub(crate) fn take<T: bytemuck::Pod>(
        &mut self,
        scratch: Scratch,
        len: usize,
    ) -> CudaViewMut<'a, T> {
        let at = self
            .parts
            .iter()
            .position(|(s, _)| *s == scratch)
            .unwrap_or_else(|| panic!("the plan has no {scratch:?} part"));
        let (_, bytes) = self.parts.swap_remove(at);
        reinterpret(bytes, len)
    }
}
