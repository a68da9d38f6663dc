//! Host slices to and from the GPU through two pinned staging buffers.
//!
//! A copy from pageable memory runs at a fraction of the bus speed (the driver stages it
//! itself); pinned memory is read by the GPU's copy engine directly. Allocating and pinning a
//! whole input would cost more than the copy, so two fixed buffers of `CHUNK_BYTES` take turns:
//! while the copy engine moves one chunk, all CPU cores fill (or drain) the other.
//! The buffers are page-locked without the write-combined flag, since the CPU reads them back.

use crate::error::{CudaContext as _, Result};
use cudarc::driver::sys::{CUdeviceptr, CUevent_flags};
use cudarc::driver::{
    result, CudaContext, CudaEvent, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut,
    PinnedHostSlice,
};
use rayon::prelude::*;
use std::sync::Arc;

/// Bytes per staging chunk.
const CHUNK_BYTES: usize = 32 << 20;
/// Smaller inputs take one plain copy each way: staging cannot pay for itself.
pub(crate) const MIN_STAGED_BYTES: usize = 16 << 20;

pub(crate) struct Staging {
    buffers: [PinnedHostSlice<u8>; 2],
    /// Recorded after the copy that last used each buffer.
    done: [CudaEvent; 2],
}

impl Staging {
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Staging> {
        // SAFETY: pinned host bytes, which the copies below write before anything reads them
        // (a u8 is valid whatever its bits).
        let pinned = || unsafe { ctx.alloc_pinned_with_flags::<u8>(CHUNK_BYTES, 0) };
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING));
        let during = || {
            format!(
                "allocating {} MiB of pinned staging memory",
                2 * (CHUNK_BYTES >> 20)
            )
        };
        Ok(Staging {
            buffers: [pinned().during(during)?, pinned().during(during)?],
            done: [event().during(during)?, event().during(during)?],
        })
    }

    /// Copies `parts`, one after another, into `device` (as long as they are together),
    /// queued on `stream`: each chunk of the pinned buffers is filled from as many parts as
    /// it spans, so that a gather of short slices moves at the speed of one long copy.
    pub(super) fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        parts: &[&[u8]],
        device: &mut CudaViewMut<u8>,
    ) -> Result<()> {
        let total: usize = parts.iter().map(|part| part.len()).sum();
        assert_eq!(total, device.len(), "a copy of as many bytes");
        let (dst, _write) = device.device_ptr_mut(stream);
        // Where the next chunk starts: a part, and a byte in it.
        let mut cursor = (0, 0);
        for i in 0..total.div_ceil(CHUNK_BYTES) {
            let b = i % 2;
            let len = CHUNK_BYTES.min(total - i * CHUNK_BYTES);
            // Wait until the copy engine has finished reading this buffer's previous chunk.
            let buffer = self.buffers[b]
                .as_mut_slice()
                .during(|| "waiting for a staging buffer".into())?;
            self.done[b]
                .synchronize()
                .during(|| "waiting for a staging buffer".into())?;
            fill_from_parts(&mut buffer[..len], parts, &mut cursor);
            let at = dst + (i * CHUNK_BYTES) as CUdeviceptr;
            // SAFETY: `at` lies in `device` with room for the chunk (same lengths, checked
            // above), held by the borrow above; the pinned buffer is not touched again until
            // `done[b]`, recorded after the copy, has completed.
            unsafe { result::memcpy_htod_async(at, &buffer[..len], stream.cu_stream()) }
                .during(|| "copying keys to the GPU".into())?;
            self.done[b]
                .record(stream)
                .during(|| "recording a copy".into())?;
        }
        Ok(())
    }

    /// Copies `device` into `host` (as long), after the work queued on `stream` so far, and
    /// waits for it.
    pub(super) fn download(
        &mut self,
        stream: &Arc<CudaStream>,
        device: &CudaView<u8>,
        host: &mut [u8],
    ) -> Result<()> {
        assert_eq!(host.len(), device.len(), "a copy of as many bytes");
        let (src, _read) = device.device_ptr(stream);
        let total = host.len();
        let chunks = total.div_ceil(CHUNK_BYTES);
        let queue = |this: &mut Self, i: usize| -> Result<()> {
            let b = i % 2;
            let len = CHUNK_BYTES.min(total - i * CHUNK_BYTES);
            let buffer = this.buffers[b]
                .as_mut_slice()
                .during(|| "waiting for a staging buffer".into())?;
            let from = src + (i * CHUNK_BYTES) as CUdeviceptr;
            // SAFETY: `from` lies in `device` with `len` bytes after it (same lengths, checked
            // above), held by the borrow above; the pinned buffer is read only after `done[b]`,
            // recorded after the copy, has completed.
            unsafe { result::memcpy_dtoh_async(&mut buffer[..len], from, stream.cu_stream()) }
                .during(|| "copying sorted keys back".into())?;
            this.done[b]
                .record(stream)
                .during(|| "recording a copy".into())
        };
        if chunks > 0 {
            queue(self, 0)?;
        }
        for i in 0..chunks {
            // Keep the copy engine busy with the next chunk while the CPU drains this one.
            if i + 1 < chunks {
                queue(self, i + 1)?;
            }
            let b = i % 2;
            self.done[b]
                .synchronize()
                .during(|| "copying sorted keys back".into())?;
            let buffer = self.buffers[b]
                .as_mut_slice()
                .during(|| "reading a staging buffer".into())?;
            let target = &mut host[i * CHUNK_BYTES..(i * CHUNK_BYTES + CHUNK_BYTES).min(total)];
            let len = target.len();
            parallel_copy(target, &buffer[..len]);
        }
        Ok(())
    }
}

/// Fills `buffer` with the next bytes of `parts` read one after another from `cursor` (a part,
/// and a byte in it), and moves the cursor past them; the parts from the cursor on hold at
/// least as many bytes as the buffer.
fn fill_from_parts(buffer: &mut [u8], parts: &[&[u8]], cursor: &mut (usize, usize)) {
    let (part, offset) = cursor;
    let mut filled = 0;
    while filled < buffer.len() {
        let from = &parts[*part][*offset..];
        let take = from.len().min(buffer.len() - filled);
        parallel_copy(&mut buffer[filled..filled + take], &from[..take]);
        filled += take;
        *offset += take;
        if *offset == parts[*part].len() {
            (*part, *offset) = (*part + 1, 0);
        }
    }
}

/// memcpy on all cores: one core cannot keep up with the copy engine (or with host memory).
pub(crate) fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "a copy of as many elements");
    let piece = (1usize << 20).div_ceil(std::mem::size_of::<T>().max(1));
    dst.par_chunks_mut(piece)
        .zip(src.par_chunks(piece))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::fill_from_parts;

    #[test]
    fn chunks_are_filled_from_parts_in_order() {
        // Parts of every length around a chunk's (empty ones, one exactly a chunk long, one
        // spanning several), cut into chunks of 8 bytes, the last one shorter.
        let lens = [0, 3, 8, 0, 0, 13, 1, 16, 0, 5];
        let mut next = 0u8;
        let parts: Vec<Vec<u8>> = lens
            .iter()
            .map(|&len| {
                (0..len)
                    .map(|_| {
                        next = next.wrapping_add(1);
                        next
                    })
                    .collect()
            })
            .collect();
        let parts: Vec<&[u8]> = parts.iter().map(|part| &part[..]).collect();
        let want: Vec<u8> = parts.concat();
        for chunk in [1, 3, 8, 13, 46, 100] {
            let mut got = Vec::new();
            let mut cursor = (0, 0);
            for start in (0..want.len()).step_by(chunk) {
                let mut buffer = vec![0u8; chunk.min(want.len() - start)];
                fill_from_parts(&mut buffer, &parts, &mut cursor);
                got.extend_from_slice(&buffer);
            }
            assert_eq!(got, want, "chunks of {chunk}");
        }
    }
}
