//! What the library knows of a device before it runs anything there: the facts the plan is
//! made from. The CUDA backend reads them from the driver ([`crate::Gpu::info`]); the plan's
//! tests write them down.

/// What the probe learnt about the device and the CUDA libraries.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device number (CUDA ordinal).
    pub ordinal: usize,
    /// The device's name, such as "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// The architecture as (major, minor): (9, 0) is sm_90.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors (SMs).
    pub multiprocessors: i32,
    /// The most threads a block may have.
    pub max_threads_per_block: i32,
    /// Threads a warp (32 on every NVIDIA GPU so far).
    pub warp_size: i32,
    /// Shared memory a block gets without opting in.
    pub shared_per_block: usize,
    /// Shared memory a block can get after raising its dynamic limit.
    pub shared_per_block_optin: usize,
    /// Bytes of L2 cache.
    pub l2_bytes: usize,
    /// Bytes of device memory.
    pub total_memory: usize,
    /// The driver's CUDA version, as (major, minor).
    pub driver_version: (i32, i32),
    /// NVRTC's version, as (major, minor).
    pub nvrtc_version: (i32, i32),
}

/// The compute capability (major, minor) of an architecture named as NVRTC names it, `sm_XY`
/// (also `sm_XYa` and `sm_XYf`), or `None`.
///
/// ```
/// assert_eq!(bitonic::parse_arch("sm_90"), Some((9, 0)));
/// assert_eq!(bitonic::parse_arch("sm_121"), Some((12, 1)));
/// assert_eq!(bitonic::parse_arch("gfx90a"), None);
/// ```
pub fn parse_arch(arch: &str) -> Option<(i32, i32)> {
    let digits = arch.strip_prefix("sm_")?.trim_end_matches(['a', 'f']);
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl DeviceInfo {
    /// The `sm_XY` architecture NVRTC compiles for.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }

    /// An H100 (80 GB HBM3) as its probe reads it: for plans made without a GPU (the plan's
    /// tests, and anyone asking what would run on an H100).
    pub fn h100() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            max_threads_per_block: 1024,
            warp_size: 32,
            shared_per_block: 48 << 10,
            shared_per_block_optin: 227 << 10,
            l2_bytes: 50 << 20,
            total_memory: 80 << 30,
            driver_version: (13, 0),
            nvrtc_version: (13, 0),
        }
    }
}

/// The facts a plan asks of a device: its [`DeviceInfo`], and whether thread-block clusters of
/// a tuned kernel's shape fit it (which the driver answers only for a loaded kernel: the CUDA
/// backend compiles the kernel's module to ask, once a shape).
pub trait DeviceFacts {
    /// The device's numbers.
    fn info(&self) -> &DeviceInfo;

    /// Whether clusters of `cluster_blocks` blocks of `threads` threads with `shared_bytes` of
    /// dynamic shared memory, of the tuned kernel of `module`, can run on the device.
    fn clusters_fit(
        &self,
        module: &'static crate::kernels::KernelModule,
        cluster_blocks: u32,
        threads: u32,
        shared_bytes: u32,
    ) -> crate::Result<bool>;
}

/// A device known by its numbers alone: clusters fit where the architecture has them (sm_90
/// and later) and the cluster is one the device can schedule at all (16 blocks at most).
impl DeviceFacts for DeviceInfo {
    fn info(&self) -> &DeviceInfo {
        self
    }

    fn clusters_fit(
        &self,
        _module: &'static crate::kernels::KernelModule,
        cluster_blocks: u32,
        _threads: u32,
        _shared_bytes: u32,
    ) -> crate::Result<bool> {
        Ok(self.compute_capability.0 >= 9 && cluster_blocks <= 16)
    }
}
