//! NCCL as the multi-GPU sorts use it: whether the library loads, its errors as this library's,
//! and the unique id that a job hands every process to make one communicator.

use crate::cuda::{driver, memory};
use crate::error::{Error, GpuUnavailable, Result};
use cudarc::driver::{CudaView, CudaViewMut};
use cudarc::nccl::result::NcclError;
use cudarc::nccl::safe::{Comm, Id};

/// Bytes of an NCCL unique id (`NCCL_UNIQUE_ID_BYTES`).
pub const NCCL_ID_BYTES: usize = 128;

/// Whether libnccl can be loaded (cudarc panics on first use when it cannot).
pub fn nccl_present() -> bool {
    std::panic::catch_unwind(driver::nccl_present).unwrap_or(false)
}

/// `Ok` when NCCL can be used, else [`GpuUnavailable::NoNccl`]: asked before any NCCL call.
pub(super) fn check_nccl() -> Result<()> {
    if nccl_present() {
        Ok(())
    } else {
        Err(GpuUnavailable::NoNccl.into())
    }
}

/// A fresh NCCL unique id (`ncclGetUniqueId`) for the ranks of one communicator: made once, by
/// one process of the job (rank 0 by custom), and sent to every rank through the job's own
/// channel (torch.distributed, MPI, a file), each of which then makes its
/// [`super::ProcessRank`] from it. The id names a bootstrap socket that NCCL opens in the
/// process that made it, so that process must live until every rank has joined. Needs NCCL,
/// not a GPU.
pub fn new_unique_id() -> Result<[u8; NCCL_ID_BYTES]> {
    check_nccl()?;
    let id = Id::new().map_err(nccl_error("making an NCCL unique id"))?;
    Ok(id.internal().map(|c| c as u8))
}

/// The id of `bytes`, as [`new_unique_id`] made them.
pub(super) fn id_of_bytes(bytes: &[u8; NCCL_ID_BYTES]) -> Id {
    Id::uninit(bytes.map(|b| b as std::ffi::c_char))
}

/// NCCL's error as this library's, saying what was being done.
pub(super) fn nccl_error(context: &str) -> impl FnOnce(NcclError) -> Error + '_ {
    move |e| Error::Nccl {
        context: context.to_string(),
        cause: format!("{:?}", e.0),
    }
}

/// Queues on `comm` the send of `words` to rank `peer`, as bytes (NCCL's byte type carries
/// words of any width). Inside a group, NCCL matches the k-th send from one rank to another
/// with the k-th receive there.
pub(super) fn send_words<W>(comm: &Comm, words: &CudaView<W>, peer: usize) -> Result<()> {
    let bytes = memory::reinterpret_ref::<W, u8>(words, words.len() * std::mem::size_of::<W>());
    comm.send(&bytes, peer as i32)
        .map_err(nccl_error("queuing a send"))
}

/// Queues on `comm` the receive from rank `peer` into `words`, as bytes ([`send_words`]).
pub(super) fn receive_words<W>(comm: &Comm, words: CudaViewMut<W>, peer: usize) -> Result<()> {
    let len = words.len() * std::mem::size_of::<W>();
    let mut bytes = memory::reinterpret::<W, u8>(words, len);
    comm.recv(&mut bytes, peer as i32)
        .map(drop)
        .map_err(nccl_error("queuing a receive"))
}
