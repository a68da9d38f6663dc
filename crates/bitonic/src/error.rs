//! The library's one error type.

use crate::Version;

/// Why no GPU can be used. Each variant says what to install or check.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuUnavailable {
    #[error("no CUDA driver: libcuda.so could not be loaded (install the NVIDIA driver)")]
    NoDriver,
    #[error(
        "no NVRTC: libnvrtc.so could not be loaded (install the CUDA toolkit or the \
         `nvidia-cuda-nvrtc` wheel, and put the folder holding libnvrtc.so on LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    #[error("the CUDA driver found no GPU")]
    NoDevice,
    #[error("device {ordinal} was asked for but only {count} exist")]
    BadOrdinal { ordinal: usize, count: usize },
    #[error(
        "no NCCL: libnccl.so.2 could not be loaded, and a sort across GPUs needs it (install \
         the `nvidia-nccl-cu13` wheel and put the folder holding libnccl.so.2 on LD_LIBRARY_PATH)"
    )]
    NoNccl,
    #[error("the CUDA driver failed to start: {0}")]
    InitFailed(String),
    #[error("the GPU's warp size is {0}; the kernels are written for 32")]
    UnsupportedWarpSize(i32),
}

/// Everything that can go wrong in a sort.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // The reasons are part of the message rather than error sources, so that a report of the
    // whole chain (`{:#}` in anyhow) says each thing once.
    #[error("the CUDA backend is unavailable: {0}")]
    GpuUnavailable(GpuUnavailable),

    #[error("CUDA error while {context}: {cause}")]
    Cuda {
        context: String,
        cause: cudarc::driver::DriverError,
    },

    #[error("NVRTC failed to compile kernels/{module} for {arch}: {message}\n{log}")]
    Compile {
        module: String,
        arch: String,
        message: String,
        log: String,
    },

    #[error("{len} keys is more than the {max} keys the CUDA backend indexes")]
    TooLong { len: usize, max: usize },

    #[error("no GPU works here, and the sort was asked of the GPU")]
    NoGpu,

    #[error("version {0} runs on the GPU: choose the cuda or auto backend, or no version")]
    VersionNeedsGpu(Version),

    #[error("version {version} sorts keys of one array; {operation} use the tuned version")]
    VersionUnsupported {
        version: Version,
        operation: &'static str,
    },

    #[error("{0} are not supported")]
    Unsupported(&'static str),

    #[error("rows of {row_len} keys need indices up to {}, more than the index type holds ({max})", row_len - 1)]
    IndexTooNarrow { row_len: usize, max: usize },

    #[error("{name:?} is not a {what}: choose one of {choices}")]
    UnknownName {
        what: &'static str,
        name: String,
        choices: String,
    },

    #[error("{keys} keys but {values} values: a key-value sort needs one value per key")]
    LengthMismatch { keys: usize, values: usize },

    #[error("values of {0} bytes: the GPU moves values of 4 or 8 bytes")]
    UnsupportedValue(usize),

    #[error("{len} keys do not split into rows of {row_len}")]
    BadRows { len: usize, row_len: usize },

    #[error("segment offsets must start at 0, never decrease, and end at the length {len}")]
    BadSegments { len: usize },

    #[error("NCCL error while {context}: {cause}")]
    Nccl { context: String, cause: String },

    #[error(
        "a multi-GPU key-value sort takes 4- or 8-byte keys and values, not {value_bytes}-byte \
         values with {key_bytes}-byte keys"
    )]
    UnsupportedKeyValue {
        key_bytes: usize,
        value_bytes: usize,
    },

    #[error("{shards} shards for {ranks} ranks: a multi-GPU sort takes one shard per rank")]
    ShardCount { shards: usize, ranks: usize },

    #[error("no devices were given to the multi-GPU sorter")]
    NoRanks,

    #[error("another rank of a multi-GPU sort failed, so this one stopped")]
    PeerFailed,

    #[error("keys on device {buffer} cannot be sorted by the sorter of device {sorter}")]
    WrongDevice { buffer: usize, sorter: usize },
}

impl From<GpuUnavailable> for Error {
    fn from(why: GpuUnavailable) -> Self {
        Error::GpuUnavailable(why)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Ok` when a key-value sort has one value per key, else [`Error::LengthMismatch`].
pub(crate) fn check_same_len(keys: usize, values: usize) -> Result<()> {
    if keys == values {
        Ok(())
    } else {
        Err(Error::LengthMismatch { keys, values })
    }
}

/// Attaches what was being done to a driver error.
pub(crate) trait CudaContext<T> {
    fn during(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> CudaContext<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn during(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|cause| Error::Cuda {
            context: context(),
            cause,
        })
    }
}
