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
    /// Where to sort: auto (GPU when one works), cpu, cpu-serial or cuda.
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    pub backend: Backend,
    /// GPU algorithm: the report's v0 … v5, or tuned (the default).
    #[arg(long = "version", visible_alias = "algo", value_enum, default_value_t = Version::default())]
    pub version: Version,
}

impl SortOptions {
    pub fn order(&self) -> Order {
        if self.desc {
            Order::Descending
        } else {
            Order::Ascending
        }
    }

    pub fn sorter(&self) -> Sorter {
        Sorter::new()
            .backend(self.backend)
            .version(self.version)
            .order(self.order())
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

/// "cuda v5 on NVIDIA H100" or "cpu (16 threads)".
pub fn describe(ran: &bitonic::Ran) -> String {
    match ran.backend {
        Backend::Cuda => {
            let device = bitonic::cuda::Gpu::get()
                .map(|g| g.info().name.clone())
                .unwrap_or_default();
            format!(
                "cuda {} on {device}",
                ran.version.map(|v| v.name()).unwrap_or("?")
            )
        }
        Backend::Cpu => format!("cpu ({} threads)", rayon::current_num_threads()),
        Backend::CpuSerial => "cpu-serial (1 thread)".into(),
        Backend::Auto => "auto".into(),
    }
}
