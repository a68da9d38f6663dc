//! `bitonic`: sort key files on the GPU or the CPU, generate and verify data, run the demo
//! and the benchmarks.

mod bench;
mod bench_large;
mod bench_sample;
mod compile;
mod demo;
mod gen;
mod info;
mod io;
mod signals;
mod sort;
mod topk;
mod ui;
mod verify;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "bitonic",
    version = version(),
    propagate_version = true,
    about = "Bitonic sorting networks on NVIDIA GPUs and on the CPU",
    after_help = ui::EXIT_STATUS
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sort a raw or .npy key file into another file.
    Sort(sort::Args),
    /// Write random, sorted, reversed, few-distinct or all-equal keys.
    Gen(gen::Args),
    /// Keep the k largest (or smallest) keys of an array or of every row, sorted, and their
    /// indices.
    Topk(topk::Args),
    /// Check that a file is sorted (and optionally a permutation of another).
    Verify(verify::Args),
    /// Generate keys, sort them on the best backend, verify, and report the speed.
    Demo(demo::Args),
    /// Show which backends work here: GPU, driver and NVRTC, or why there is none.
    Info,
    /// Compile every GPU kernel ahead of time into the kernel cache (for deployment images);
    /// needs NVRTC, not a GPU.
    Compile(compile::Args),
    /// Time every version and backend over a range of sizes; write CSV, table and figures.
    Bench(bench::Args),
    /// Merge bench CSVs (ours and the peers') into one table and figures.
    Report(bench::ReportArgs),
    /// Time row sorts, argsorts and key-value sorts on the GPU (u32 keys); write CSV and table.
    BenchRows(bench::RowsArgs),
    /// Time the top-k of rows on the GPU (f32, bf16, f16; beside torch.topk's CSV); write CSV and table.
    BenchTopk(bench::TopkArgs),
    /// Time the sampling kernel (f32, bf16 logits; the peers' cells); write CSV and table.
    BenchSample(bench_sample::Args),
    /// Time host slices sorted through the GPU, in memory and out of core, beside the link's
    /// speed and a sort on every core; write CSV and table.
    BenchLarge(bench_large::Args),
}

/// "0.1.0 (commit abc1234567)": the benchmark scripts read the commit from it.
fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{} (commit {})",
            env!("CARGO_PKG_VERSION"),
            bitonic_bench::COMMIT
        )
    })
}

/// Rust ignores SIGPIPE, so a closed pipe (`bitonic info | head -1`) turns every later write
/// into an error or a panic. Restore the default, as for any Unix tool: the process ends
/// quietly when its reader goes away.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// `--version` once chose the GPU algorithm in subcommands; now it prints the program's version
/// everywhere. An old command line (`sort --version v5 …`) gets an error naming `--algo`, not
/// the version printed and nothing sorted.
fn refuse_old_version_option(args: &[std::ffi::OsString]) -> Option<String> {
    let names: Vec<&str> = bitonic::Version::ALL.iter().map(|v| v.name()).collect();
    let args: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    let pairs = args.iter().zip(args.iter().skip(1).map(Some).chain([None]));
    for (arg, next) in pairs {
        if arg == &"--" {
            break;
        }
        let value = match arg.strip_prefix("--version") {
            Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
            Some("") => next.copied().filter(|n| names.contains(n)),
            _ => None,
        };
        if let Some(value) = value {
            return Some(format!(
                "--version prints the program's version; the GPU algorithm is chosen with \
                 --algo (--algo {value})"
            ));
        }
    }
    None
}

fn main() -> std::process::ExitCode {
    restore_sigpipe();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(why) = refuse_old_version_option(&args) {
        eprintln!("bitonic: error: {why}");
        return std::process::ExitCode::from(2);
    }
    // Every subcommand's help ends with the exit statuses too.
    let command = Cli::command().mut_subcommands(|c| c.after_help(ui::EXIT_STATUS));
    let cli = Cli::from_arg_matches(&command.get_matches_from(args)).unwrap_or_else(|e| e.exit());
    ui::show_kernel_compiles();
    #[cfg(feature = "embedded-kernels")]
    {
        // Kernels compiled when this binary was built (build.rs): read now, loaded when used.
        static KERNELS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.pack"));
        if let Err(e) = bitonic::cuda::use_pack(KERNELS) {
            eprintln!(
                "bitonic: warning: the embedded kernels are unusable ({e}); compiling instead"
            );
        }
    }
    signals::exit_on_signals(io::remove_partial_files);
    let result = match cli.command {
        Command::Sort(args) => sort::run(args),
        Command::Gen(args) => gen::run(args),
        Command::Topk(args) => topk::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Info => info::run(),
        Command::Compile(args) => compile::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Report(args) => bench::report(args),
        Command::BenchRows(args) => bench::rows(args),
        Command::BenchTopk(args) => bench::topk(args),
        Command::BenchLarge(args) => bench_large::run(args),
        Command::BenchSample(args) => bench_sample::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("bitonic: error: {err:#}");
            std::process::ExitCode::from(ui::exit_status(&err))
        }
    }
}
