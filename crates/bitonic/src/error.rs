//! The library's one error type.

use crate::options::Version;

/// Why no GPU can be used. Each variant says what to install or check.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuUnavailable {
    /// libcuda.so is missing.
    #[error("no CUDA driver: libcuda.so could not be loaded (install the NVIDIA driver)")]
    NoDriver,
    /// libnvrtc.so is missing.
    #[error(
        "no NVRTC: libnvrtc.so could not be loaded (install the CUDA toolkit or the \
         `nvidia-cuda-nvrtc` wheel, and put the folder holding libnvrtc.so on LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    /// The driver sees no device.
    #[error("the CUDA driver found no GPU")]
    NoDevice,
    /// A device number past the last device.
    #[error("device {ordinal} was asked for but only {count} exist")]
    BadOrdinal {
        /// The device asked for.
        ordinal: usize,
        /// How many there are.
        count: usize,
    },
    /// libnccl.so.2 is missing (sorts across GPUs only).
    #[error(
        "no NCCL: libnccl.so.2 could not be loaded, and a sort across GPUs needs it (install \
         the `nvidia-nccl-cu13` wheel and put the folder holding libnccl.so.2 on LD_LIBRARY_PATH)"
    )]
    NoNccl,
    /// The driver failed to initialise or to open the device.
    #[error("the CUDA driver failed to start: {0}")]
    InitFailed(String),
    /// A GPU whose warps are not 32 threads.
    #[error("the GPU's warp size is {0}; the kernels are written for 32")]
    UnsupportedWarpSize(i32),
    /// A plan was asked without a device ([`crate::plan::plan`] given `None`).
    #[error("no device was given to plan for")]
    NotGiven,
}

/// Everything that can go wrong in a sort. Its `Debug` is its message (`Display`), so that
/// `fn main() -> Result<(), bitonic::Error>` prints what went wrong, not the variant's fields.
#[non_exhaustive]
#[derive(thiserror::Error)]
pub enum Error {
    // The reasons are part of the message rather than error sources, so that a report of the
    // whole chain (`{:#}` in anyhow) says each thing once.
    /// The GPU was asked for (the `cuda` backend, a pinned GPU version, device buffers) and
    /// none can be used: the reason.
    #[error("no GPU can be used: {0}")]
    NoGpu(GpuUnavailable),

    /// A CUDA driver call failed.
    #[error("CUDA error while {context}: {cause}")]
    Cuda {
        /// What was being done.
        context: String,
        /// The driver's error.
        cause: cudarc::driver::DriverError,
    },

    /// A kernel failed to compile; `log` is NVRTC's.
    #[error("NVRTC failed to compile kernels/{module} for {arch}: {message}\n{log}")]
    Compile {
        /// The kernel file.
        module: String,
        /// The architecture, `sm_XY`.
        arch: String,
        /// NVRTC's status.
        message: String,
        /// NVRTC's log.
        log: String,
    },

    /// More keys than the GPU kernels index.
    #[error("{len} keys is more than the {max} keys the CUDA backend indexes")]
    TooLong {
        /// Keys given.
        len: usize,
        /// The most a sort takes.
        max: usize,
    },

    /// A version pinned on a CPU backend.
    #[error("version {0} runs on the GPU: choose the cuda or auto backend, or no version")]
    VersionNeedsGpu(Version),

    /// A seed version pinned for a call only the tuned version makes.
    #[error("version {version} sorts keys of one array; {operation} use the tuned version")]
    VersionUnsupported {
        /// The version pinned.
        version: Version,
        /// The call, in words.
        operation: &'static str,
    },

    /// A combination the library does not sort.
    #[error("{0} are not supported")]
    Unsupported(&'static str),

    /// Argsort indices of a type too narrow for the rows.
    #[error("rows of {row_len} keys need indices up to {}, more than the index type holds ({max})", row_len - 1)]
    IndexTooNarrow {
        /// Keys a row.
        row_len: usize,
        /// The largest index of the type.
        max: usize,
    },

    /// A top-k of more keys than a row holds.
    #[error("the top {k} of rows of {row_len} keys: k must be from 0 to the row length")]
    BadK {
        /// The k asked for.
        k: usize,
        /// Keys a row.
        row_len: usize,
    },

    /// A top-k output of the wrong length: `rows × k` values and as many indices.
    #[error("{what} holds {len} elements; the top {k} of {rows} rows takes {}", rows * k)]
    TopkOutputLength {
        /// `values` or `indices`.
        what: &'static str,
        /// Its length.
        len: usize,
        /// Rows of the input.
        rows: usize,
        /// The k asked for.
        k: usize,
    },

    /// A name that names no backend, version, order or key type.
    #[error(transparent)]
    UnknownName(#[from] crate::options::UnknownName),

    /// Keys and values (or indices) of different lengths.
    #[error("{keys} keys but {values} values: a key-value sort needs one value per key")]
    LengthMismatch {
        /// Keys given.
        keys: usize,
        /// Values or indices given.
        values: usize,
    },

    /// GPU key-value sorts of device buffers move 4- or 8-byte values.
    #[error("values of {0} bytes: the GPU moves values of 4 or 8 bytes")]
    UnsupportedValue(usize),

    /// A length that rows of `row_len` do not divide.
    #[error("{len} keys do not split into rows of {row_len}")]
    BadRows {
        /// Keys given.
        len: usize,
        /// The row length asked for.
        row_len: usize,
    },

    /// Segment offsets that do not cut the keys.
    #[error("segment offsets must start at 0, never decrease, and end at the length {len}")]
    BadSegments {
        /// Keys given.
        len: usize,
    },

    /// An NCCL call failed.
    #[error("NCCL error while {context}: {cause}")]
    Nccl {
        /// What was being done.
        context: String,
        /// NCCL's error.
        cause: String,
    },

    /// A multi-GPU key-value sort of unsupported widths.
    #[error(
        "a multi-GPU key-value sort takes 4- or 8-byte keys and values, not {value_bytes}-byte \
         values with {key_bytes}-byte keys"
    )]
    UnsupportedKeyValue {
        /// Bytes of a key.
        key_bytes: usize,
        /// Bytes of a value.
        value_bytes: usize,
    },

    /// Not one shard a rank.
    #[error("{shards} shards for {ranks} ranks: a multi-GPU sort takes one shard per rank")]
    ShardCount {
        /// Shards given.
        shards: usize,
        /// Ranks of the sorter.
        ranks: usize,
    },

    /// A sampling setting out of its range, or logits and settings of mismatched shapes
    /// ([`crate::sample`]).
    #[error("sampling: {0}")]
    BadSampling(String),

    /// A multi-GPU sorter of no devices.
    #[error("no devices were given to the multi-GPU sorter")]
    NoRanks,

    /// A rank outside its communicator ([`crate::cuda::multi::ProcessRank`]).
    #[error(
        "rank {rank} of {world_size}: a rank is from 0 to the world size - 1, and NCCL takes at \
         most 2^31 - 1 ranks"
    )]
    BadRank {
        /// The rank given.
        rank: usize,
        /// The ranks of the communicator.
        world_size: usize,
    },

    /// Another rank failed.
    #[error("another rank of a multi-GPU sort failed, so this one stopped")]
    PeerFailed,

    /// The ranks of a sort across processes called different sorts: another key type, value
    /// type or order ([`crate::cuda::multi::ProcessRank`]); every rank returns this.
    #[error(
        "the ranks called different sorts (ranks {ranks:?} differ from rank 0 in key type, \
         value type or order): every rank must call the same sort"
    )]
    RanksDisagree {
        /// The ranks whose call differs from rank 0's.
        ranks: Vec<usize>,
    },

    /// A device buffer of another GPU than the sorter's.
    #[error("keys on device {buffer} cannot be sorted by the sorter of device {sorter}")]
    WrongDevice {
        /// The buffer's device.
        buffer: usize,
        /// The sorter's device.
        sorter: usize,
    },

    /// A policy whose numbers cannot run ([`crate::Policy::validate`]).
    #[error("invalid policy: {0}")]
    InvalidPolicy(String),

    /// Device memory for a call's buffers could not be allocated.
    #[error("out of GPU memory: {bytes} bytes for {what}")]
    DeviceMemory {
        /// Bytes asked for.
        bytes: usize,
        /// What they were for.
        what: String,
    },

    /// A caller's workspace smaller than the call's plan needs ([`crate::Plan::workspace_bytes`]).
    #[error("the workspace holds {given} bytes; this call needs {needed}")]
    WorkspaceTooSmall {
        /// Bytes the plan needs.
        needed: usize,
        /// Bytes given.
        given: usize,
    },

    /// Bytes given as a kernel pack ([`crate::cuda::use_pack`]) that are not one: the reason.
    #[error("not a kernel pack: {0}")]
    BadKernelPack(&'static str),

    /// Host memory for a sort's working copy could not be allocated.
    #[error("out of host memory: {bytes} bytes for {what}")]
    HostMemory {
        /// Bytes asked for.
        bytes: usize,
        /// What they were for.
        what: &'static str,
    },
}

impl From<GpuUnavailable> for Error {
    fn from(why: GpuUnavailable) -> Self {
        Error::NoGpu(why)
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The library's result type.
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
