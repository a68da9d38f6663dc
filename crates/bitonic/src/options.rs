//! The options of a call, each given one way: where it runs ([`Backend`]), which GPU algorithm
//! ([`Version`]), the order ([`Order`]) and how floats compare ([`FloatOrder`]).

/// Sort direction. A top-k selection keeps the first k of a sort in this order: the
/// smallest keys ascending, the largest descending.
///
/// ```
/// let mut keys = vec![1i32, -4, 3];
/// bitonic::Sorter::new().order(bitonic::Order::Descending).sort(&mut keys)?;
/// assert_eq!(keys, [3, 1, -4]);
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Smallest first.
    #[default]
    Ascending,
    /// Largest first.
    Descending,
}

impl Order {
    /// Both orders.
    pub const ALL: [Order; 2] = [Order::Ascending, Order::Descending];

    /// `ascending` or `descending`.
    pub fn name(self) -> &'static str {
        match self {
            Order::Ascending => "ascending",
            Order::Descending => "descending",
        }
    }
}

/// How floating-point keys compare.
///
/// ```
/// use bitonic::{FloatOrder, Sorter};
/// let keys = [f32::NAN, 1.0, -f32::NAN, -0.0, 0.0];
/// let mut total = vec![0u32; 5];
/// Sorter::new().argsort(&keys, &mut total)?;
/// assert_eq!(total, [2, 3, 4, 1, 0]); // -NaN first, -0.0 before +0.0
/// let mut numeric = vec![0u32; 5];
/// Sorter::new().float_order(FloatOrder::Numeric).argsort(&keys, &mut numeric)?;
/// assert_eq!(numeric, [3, 4, 1, 0, 2]); // zeros tie; every NaN last, in index order
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FloatOrder {
    /// IEEE 754 total order, the order of [`f32::total_cmp`]:
    /// `-NaN < -inf < … < -0.0 < +0.0 < … < +inf < +NaN`. Every key has its own place.
    #[default]
    Total,
    /// The order of `torch.sort` and `numpy.sort`: numbers by value (`-0.0` equals `+0.0`),
    /// every NaN larger than every number and equal to every other NaN, whatever its sign.
    /// A sort of keys alone, and a top-k, give every key back bit for bit. A sort that keeps
    /// positions (argsort, key-value sort, top-k) keeps equal keys in input order; the keys an
    /// argsort or key-value sort writes equal the input's by value: on the GPU they are
    /// canonical (`-0.0` as `+0.0`, every NaN as the positive quiet NaN), but in rows of one
    /// key, which are left as they are. Indices always name the input's own keys.
    Numeric,
}

impl FloatOrder {
    /// Both orders.
    pub const ALL: [FloatOrder; 2] = [FloatOrder::Total, FloatOrder::Numeric];

    /// `total` or `numeric`.
    pub fn name(self) -> &'static str {
        match self {
            FloatOrder::Total => "total",
            FloatOrder::Numeric => "numeric",
        }
    }
}

/// Where a call runs.
///
/// ```
/// use bitonic::{Backend, Sorter, Strategy};
/// let mut keys = vec![5u64, 3, 9];
/// let plan = Sorter::new().backend(Backend::CpuNetworkSerial).sort(&mut keys)?;
/// assert_eq!((keys, plan.strategy), (vec![3, 5, 9], Strategy::CpuNetworkSerial));
/// assert_eq!("cpu-network".parse::<Backend>()?, Backend::CpuNetwork);
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The GPU when one works and the input has at least [`crate::plan::AUTO_GPU_MIN_LEN`]
    /// keys (or a [`Version`] is pinned), else `Cpu`.
    #[default]
    Auto,
    /// The fastest CPU sort: a parallel sort of the keys' ordered words on all cores (rayon).
    Cpu,
    /// The bitonic network on all CPU cores (rayon).
    CpuNetwork,
    /// The bitonic network on one CPU core: the reference, and the report's serial baseline.
    CpuNetworkSerial,
    /// The GPU; [`crate::Error::NoGpu`] saying why when no GPU works.
    Cuda,
}

impl Backend {
    /// Every backend, for choosers and command lines.
    pub const ALL: [Backend; 5] = [
        Backend::Auto,
        Backend::Cpu,
        Backend::CpuNetwork,
        Backend::CpuNetworkSerial,
        Backend::Cuda,
    ];

    /// The backend's name on the command line: `auto`, `cpu`, `cpu-network`,
    /// `cpu-network-serial`, `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Cpu => "cpu",
            Backend::CpuNetwork => "cpu-network",
            Backend::CpuNetworkSerial => "cpu-network-serial",
            Backend::Cuda => "cuda",
        }
    }
}

/// The GPU algorithm: the report's six versions, each adding one idea to the one before, and
/// the tuned version beyond them.
///
/// ```
/// use bitonic::{Backend, Sorter, Version};
/// assert_eq!("v3".parse::<Version>()?, Version::V3);
/// // A version is for the GPU: on a CPU backend it is refused, not ignored.
/// let refused = Sorter::new().backend(Backend::Cpu).version(Version::V3).sort(&mut [2u32, 1]);
/// assert!(refused.is_err());
/// # Ok::<(), bitonic::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Version {
    /// One thread per key, global memory, one launch per network step.
    V0,
    /// The steps inside a block fused into one launch with `__syncthreads()` (global memory).
    V1,
    /// V1 with the block's tile in shared memory.
    V2,
    /// V2 with warp shuffles for strides below 32.
    V3,
    /// Half as many threads: one per compare-exchange.
    V4,
    /// V4 with the 2-way shared-memory bank conflict removed.
    V5,
    /// Beyond the report: multi-step passes over shared-memory tiles with the keys in
    /// registers and the key map fused in, and past a few million keys a merge sort of tile
    /// sorts. The default; the only version of rows, segments, argsorts, key-value sorts and
    /// top-k selections.
    #[default]
    Tuned,
}

impl Version {
    /// Every version, in the report's order.
    pub const ALL: [Version; 7] = [
        Version::V0,
        Version::V1,
        Version::V2,
        Version::V3,
        Version::V4,
        Version::V5,
        Version::Tuned,
    ];

    /// `v0` … `v5`, `tuned`.
    pub fn name(self) -> &'static str {
        match self {
            Version::V0 => "v0",
            Version::V1 => "v1",
            Version::V2 => "v2",
            Version::V3 => "v3",
            Version::V4 => "v4",
            Version::V5 => "v5",
            Version::Tuned => "tuned",
        }
    }
}

/// A name that names none of a type's values: the error of parsing a [`Backend`], [`Version`],
/// [`Order`], [`FloatOrder`] or [`crate::DType`] (and, through `?`, [`crate::Error::UnknownName`]).
///
/// ```
/// let e = "gpu".parse::<bitonic::Backend>().unwrap_err();
/// assert!(e.to_string().contains("cpu-network"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a {what}: choose one of {choices}")]
pub struct UnknownName {
    /// What was named.
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// The names there are.
    pub choices: String,
}

macro_rules! display_and_parse_by_name {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $t {
            type Err = UnknownName;
            fn from_str(name: &str) -> Result<Self, UnknownName> {
                <$t>::ALL
                    .into_iter()
                    .find(|x| x.name() == name)
                    .ok_or_else(|| UnknownName {
                        what: stringify!($t),
                        name: name.to_string(),
                        choices: <$t>::ALL.iter().map(|x| x.name()).collect::<Vec<_>>().join(", "),
                    })
            }
        }
    )*};
}

/// The key types' names too (src/key.rs).
pub(crate) use display_and_parse_by_name;

display_and_parse_by_name!(Backend, Version, Order, FloatOrder);
