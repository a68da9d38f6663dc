//! Every kernel launch: one typed function a kernel family, named after it, whose parameters
//! after `(x, kernel, cfg)` are the kernel's own, in order, as Rust types (device memory as
//! typed views, never as raw addresses). With the driver, graph, memory, staging and NVRTC
//! layers, the only place with `unsafe` code, and each launch states why its arguments are the
//! kernel's. Launches go on the call's stream ([`Exec::stream`]).
//!
//! The caller looks the kernel up ([`Exec::function`]) by the name the doc comment gives, so a
//! family's instantiations (`_u32`, `_u64`, …) share one function.

mod cluster;
pub(crate) mod keys;
pub(crate) mod merge;
pub(crate) mod multi;
pub(crate) mod passes;
pub(crate) mod radix;
pub(crate) mod sample;
pub(crate) mod topk;

use super::exec::Exec;
use crate::kernels::abi::{KeyIndex, MultiwayTiling, Packing, RowLayout};
use cudarc::driver::{CudaFunction, DeviceRepr, DriverError, LaunchArgs, LaunchConfig};

// The structs kernels take by value or in buffers (src/kernels/abi.rs, whose const asserts
// and the kernels' static_asserts check their sizes against each other).
// SAFETY: plain C structs of integers (`#[repr(C)]`, no padding), laid out as the kernels'.
unsafe impl DeviceRepr for RowLayout {}
// SAFETY: as above.
unsafe impl DeviceRepr for KeyIndex {}
// SAFETY: as above.
unsafe impl DeviceRepr for MultiwayTiling {}
// SAFETY: as above (three addresses as u64, four u32).
unsafe impl DeviceRepr for Packing {}

/// The one unsafe launch of a kernel whose arguments `push` adds, on the call's stream.
///
/// # Safety
/// `push` must add exactly `kernel`'s parameters, in order and type, and every buffer must
/// hold what the kernel reads and writes under `cfg`.
unsafe fn launch<'a>(
    x: &'a Exec,
    kernel: &'a CudaFunction,
    cfg: LaunchConfig,
    push: impl FnOnce(&mut LaunchArgs<'a>),
) -> Result<(), DriverError> {
    let mut args = x.stream.launch_builder(kernel);
    push(&mut args);
    // SAFETY: the caller's contract; cudarc copies the arguments when it queues the launch.
    unsafe { args.launch(cfg) }.map(drop)
}
