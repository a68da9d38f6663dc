//! Options shared by subcommands, exit statuses, progress display and number formatting.

use bitonic::{Backend, Order, Sorter, Version};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

/// The exit statuses, shown after every command's help.
pub const EXIT_STATUS: &str = "\
Exit status:
  0    done; verify: the file is sorted (and a permutation of the original, when asked)
  1    the command failed: an input missing, unreadable, malformed or not fitting the
       options; an output that cannot be written; no GPU for a GPU-only command; verify:
       the file is not sorted, or not a permutation of the original
  2    the command line is wrong in itself: an unknown option, a bad value, options that
       contradict each other; nothing is written
  130  interrupted by Ctrl-C (SIGINT); 143 by SIGTERM, 129 by SIGHUP (128 + the signal's
       number); the partial output is removed";

/// A command line wrong in itself, whatever the files hold: a value out of range, options
/// that contradict each other. It exits 2, as clap's own parse errors do; every other error
/// exits 1 ([`exit_status`]), so that scripts can tell a wrong call from a failed one.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// The exit status of a failed command: 2 for a usage error ([`Usage`], or a [`crate::io::IoError`]
/// that is one), else 1.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    let usage = err.chain().any(|e| {
        e.is::<Usage>()
            || e.downcast_ref::<crate::io::IoError>()
                .is_some_and(crate::io::IoError::is_usage)
    });
    if usage {
        2
    } else {
        1
    }
}

/// Backend, GPU version and order, as every sorting subcommand takes them.
#[derive(clap::Args, Clone, Copy)]
pub struct SortOptions {
    /// Sort in descending order.
    #[arg(long)]
    pub desc: bool,
    /// Where to sort: auto (the GPU when one works and the input is large), cpu (the fastest
    /// CPU sort), cpu-network or cpu-network-serial (the bitonic network on the CPU), or cuda.
    #[arg(long, value_parser = named(&Backend::ALL, Backend::name), default_value = "auto")]
    pub backend: Backend,
    /// GPU algorithm: the report's v0 to v5, or tuned (the library's choice when not given).
    /// Needs a GPU.
    #[arg(long, value_name = "ALGO", value_parser = named(&Version::ALL, Version::name))]
    pub algo: Option<Version>,
}

impl SortOptions {
    pub fn order(&self) -> Order {
        if self.desc {
            Order::Descending
        } else {
            Order::Ascending
        }
    }

    /// Refuses `--algo` with a CPU backend, a usage error, before any work.
    pub fn check(&self) -> Result<(), Usage> {
        match (self.algo, self.backend) {
            (
                Some(algo),
                backend @ (Backend::Cpu | Backend::CpuNetwork | Backend::CpuNetworkSerial),
            ) => Err(Usage(format!(
                "--algo {} runs on the GPU but --backend {} sorts on the CPU: leave out \
                     --algo, or choose --backend auto or cuda",
                algo.name(),
                backend.name()
            ))),
            _ => Ok(()),
        }
    }

    pub fn sorter(&self) -> Sorter<'static> {
        let sorter = Sorter::new().backend(self.backend).order(self.order());
        match self.algo {
            Some(version) => sorter.version(version),
            None => sorter,
        }
    }
}

/// Parses a key count: `1000000`, `2^24`, `16M`, `1G` (binary multiples).
pub fn parse_len(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let bad = || format!("{text:?} is not a length (try 1000, 2^20 or 16M)");
    if let Some(exp) = t.strip_prefix("2^") {
        let exp: u32 = exp.parse().map_err(|_| bad())?;
        return 1usize.checked_shl(exp).filter(|_| exp < 63).ok_or_else(bad);
    }
    let (digits, scale) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1usize << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|d| d.checked_mul(scale))
        .ok_or_else(bad)
}

/// How the CLI names a path in messages: `-` is "standard input" or "standard output".
pub fn input_name(path: &std::path::Path) -> String {
    stdio_name(path, "standard input")
}

/// As [`input_name`], for an output.
pub fn output_name(path: &std::path::Path) -> String {
    stdio_name(path, "standard output")
}

fn stdio_name(path: &std::path::Path, stdio: &str) -> String {
    if path.as_os_str() == "-" {
        stdio.to_string()
    } else {
        path.display().to_string()
    }
}

/// "1.5 GiB" style sizes (binary units).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Memory the system can still give without swapping (Linux: MemAvailable in /proc/meminfo);
/// `None` where unknown.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The error for `bytes` of memory (None: past the address space) that could not be had, for
/// `what` ("2^40 u32 keys").
pub fn no_memory(what: &str, bytes: Option<u64>) -> anyhow::Error {
    anyhow::anyhow!(memory_message(
        what,
        bytes.and_then(|b| usize::try_from(b).ok())
    ))
}

/// The message of [`no_memory`]: the size in bytes and binary units, and what is available.
pub fn memory_message(what: &str, bytes: Option<usize>) -> String {
    let bytes = bytes.map(|b| b as u64);
    let needed = match bytes {
        Some(b) => format!("{} ({b} bytes)", human_bytes(b)),
        None => "more bytes than this machine can address".to_string(),
    };
    let available = match available_memory() {
        Some(a) => format!("{} ({a} bytes) is available", human_bytes(a)),
        None => "how much is available is unknown here".to_string(),
    };
    format!("not enough memory for {what}: it needs {needed}; {available}")
}

/// A vector of `len` zeroed keys, allocated fallibly: too large a request is an error that
/// names the size and the memory available, not an abort.
pub fn alloc_keys<K: bytemuck::Zeroable + Clone>(len: usize, what: &str) -> anyhow::Result<Vec<K>> {
    let bytes = len.checked_mul(std::mem::size_of::<K>());
    let mut keys = Vec::new();
    if bytes.is_none() || keys.try_reserve_exact(len).is_err() {
        return Err(no_memory(what, bytes.map(|b| b as u64)));
    }
    keys.resize(len, K::zeroed());
    Ok(keys)
}

/// Fails, as [`alloc_keys`], when `bytes` (None: past the address space) cannot be allocated
/// now: for buffers a library call allocates itself.
pub fn check_memory(bytes: Option<usize>, what: &str) -> anyhow::Result<()> {
    match bytes {
        Some(b) if Vec::<u8>::new().try_reserve_exact(b).is_ok() => Ok(()),
        _ => Err(no_memory(what, bytes.map(|b| b as u64))),
    }
}

/// A spinner on stderr naming the current phase; draws nothing when stderr is not a terminal.
pub fn spinner(quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// "123.4 Mkeys/s" style rates.
pub fn rate(keys: usize, d: Duration) -> String {
    let per_s = keys as f64 / d.as_secs_f64().max(1e-12);
    match per_s {
        r if r >= 1e9 => format!("{:.2} Gkeys/s", r / 1e9),
        r if r >= 1e6 => format!("{:.1} Mkeys/s", r / 1e6),
        r => format!("{:.0} keys/s", r),
    }
}

/// "cuda (tuned merge sort) on NVIDIA H100" or "cpu (parallel sort, 16 threads)".
pub fn describe(ran: &bitonic::Plan) -> String {
    match ran.backend {
        Backend::Cuda => format!("cuda ({}) on {}", ran.strategy, gpu_name()),
        Backend::CpuNetworkSerial => format!("{} ({}, 1 thread)", ran.backend, ran.strategy),
        backend => format!(
            "{backend} ({}, {} threads)",
            ran.strategy,
            rayon::current_num_threads()
        ),
    }
}

/// The name of the GPU a call ran on (the process's GPU 0), or nothing where there is none.
pub fn gpu_name() -> String {
    bitonic::Gpu::get()
        .map(|g| g.info().name.clone())
        .unwrap_or_default()
}

/// Whether compile messages are silenced (`--quiet`).
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Silences [`show_kernel_compiles`]'s messages (errors still show).
pub fn quiet() {
    QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Tells the user on stderr when GPU kernels compile (seconds, once a machine) and of kernel
/// cache trouble, so that a first run does not look like a hang.
pub fn show_kernel_compiles() {
    use bitonic::cuda::CompileEvent;
    use std::sync::atomic::{AtomicBool, Ordering};
    static ANNOUNCED: AtomicBool = AtomicBool::new(false);
    bitonic::cuda::on_compile(|event| {
        let quiet = QUIET.load(Ordering::Relaxed);
        match event {
            CompileEvent::Started {
                module,
                arch,
                cache,
            } if !quiet => {
                if !ANNOUNCED.swap(true, Ordering::Relaxed) {
                    let kept = match cache {
                        Some(dir) => format!("cached in {}", dir.display()),
                        None => "not cached: the kernel cache is off".into(),
                    };
                    eprintln!("compiling GPU kernels for {arch}: once on this machine ({kept})");
                }
                eprintln!("  compiling {module} …");
            }
            CompileEvent::Finished {
                module, seconds, ..
            } if !quiet => {
                eprintln!("  compiled {module} in {seconds:.1} s");
            }
            CompileEvent::CacheCorrupt { path } if !quiet => {
                eprintln!(
                    "warning: {} was damaged; compiling it again",
                    path.display()
                );
            }
            CompileEvent::CacheUnwritable { dir, error } => {
                eprintln!(
                    "warning: cannot write the kernel cache in {} ({error}); kernels compile \
                     again in every run (set BITONIC_CACHE_DIR to a writable folder)",
                    dir.display()
                );
            }
            _ => {}
        }
    });
}

/// A parser of the names of a library enum (`T::ALL` and `T::name`), listing them in `--help`.
pub fn named<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(all.iter().map(|&x| name(x))).map(move |chosen| {
        let found = all.iter().copied().find(|&x| name(x) == chosen);
        found.expect("clap accepts only the listed names")
    })
}
