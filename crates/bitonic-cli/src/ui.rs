//! Options shared by subcommands, progress display and number formatting.

use bitonic::{Backend, Order, Sorter, Version};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Duration;

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
    /// GPU algorithm: the report's v0 … v5, or tuned (the library's choice when not given).
    #[arg(long = "version", visible_alias = "algo", value_parser = named(&Version::ALL, Version::name))]
    pub version: Option<Version>,
}

impl SortOptions {
    pub fn order(&self) -> Order {
        if self.desc {
            Order::Descending
        } else {
            Order::Ascending
        }
    }

    pub fn sorter(&self) -> Sorter<'static> {
        let sorter = Sorter::new().backend(self.backend).order(self.order());
        match self.version {
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

/// "cuda (tuned merge sort) on NVIDIA H100" or "cpu (std sort, 16 threads)".
pub fn describe(ran: &bitonic::Ran) -> String {
    match ran.backend {
        Backend::Cuda => {
            let device = bitonic::Gpu::get()
                .map(|g| g.info().name.clone())
                .unwrap_or_default();
            format!("cuda ({}) on {device}", ran.strategy)
        }
        Backend::CpuNetworkSerial => format!("{} ({}, 1 thread)", ran.backend, ran.strategy),
        backend => format!(
            "{backend} ({}, {} threads)",
            ran.strategy,
            rayon::current_num_threads()
        ),
    }
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
