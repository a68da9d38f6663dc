//! Where one call runs: the device, the tuning it was planned with, and the stream its work
//! is queued on (the `Gpu`'s own, or the caller's).

use super::device::Gpu;
use crate::error::Result;
use crate::kernels::KernelModule;
use crate::policy::Policy;
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};
use std::sync::Arc;

/// The device, policy and stream of one call.
#[derive(Clone, Copy)]
pub(crate) struct Exec<'a> {
    pub(crate) gpu: &'a Gpu,
    pub(crate) policy: &'a Policy,
    pub(crate) stream: &'a Arc<CudaStream>,
}

impl<'a> Exec<'a> {
    /// The same device and policy on another `stream`.
    pub(crate) fn on<'s>(&self, stream: &'s Arc<CudaStream>) -> Exec<'s>
    where
        'a: 's,
    {
        Exec {
            gpu: self.gpu,
            policy: self.policy,
            stream,
        }
    }

    /// `gpu` with its own policy, on its own stream.
    pub(crate) fn of(gpu: &'a Gpu) -> Exec<'a> {
        Exec {
            gpu,
            policy: gpu.default_policy(),
            stream: gpu.stream(),
        }
    }

    /// Kernel `name` of `module` compiled with the call's policy.
    pub(crate) fn function(
        &self,
        module: &'static KernelModule,
        name: &str,
    ) -> Result<CudaFunction> {
        self.gpu.function_for(self.policy, module, name)
    }

    /// Kernel `name` of `module`, allowed `shared_bytes` of dynamic shared memory.
    pub(crate) fn function_sharing(
        &self,
        module: &'static KernelModule,
        name: &str,
        shared_bytes: u32,
    ) -> Result<CudaFunction> {
        let f = self.function(module, name)?;
        self.gpu.allow_shared(&f, shared_bytes)?;
        Ok(f)
    }

    /// A grid for a kernel with one grid-stride loop over `n` elements.
    pub(crate) fn elementwise(&self, n: usize) -> LaunchConfig {
        let threads = 256u32;
        let blocks = (n as u32)
            .div_ceil(threads)
            .clamp(1, self.gpu.info().multiprocessors as u32 * 32);
        config(blocks, threads, 0)
    }
}

/// A 1-D launch: `blocks` blocks of `threads` threads with `shared_bytes` of dynamic shared
/// memory.
pub(crate) fn config(blocks: u32, threads: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}
