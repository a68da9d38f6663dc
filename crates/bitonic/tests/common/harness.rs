//! The harness of the test files with GPU tests (`harness = false` in Cargo.toml): libtest's
//! flags and output through libtest-mimic, with what each test needs decided when it runs.
//! A test whose GPU (or NVRTC) is missing is *ignored*, so the summary line says how many did
//! not run; `BITONIC_REQUIRE_GPU=1` (or `BITONIC_REQUIRE_NVRTC=1`, `BITONIC_REQUIRE_GPUS=N`)
//! runs them anyway, and they fail.
//!
//! ```ignore
//! fn main() {
//!     harness::run(tests![
//!         Needs::Nothing => cpu_test;
//!         Needs::Gpu => gpu_test, another_gpu_test;
//!     ]);
//! }
//! ```

use super::require_env;
use bitonic::{cuda, Gpu};
use libtest_mimic::{Arguments, Trial};

/// What a test needs to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Runs everywhere.
    Nothing,
    /// A GPU, or `BITONIC_REQUIRE_GPU=1`.
    Gpu,
    /// This many GPUs, or `BITONIC_REQUIRE_GPUS` at least this many; with none at all, any
    /// GPU required (`BITONIC_REQUIRE_GPU=1` asks for one).
    Gpus(usize),
    /// No GPU: the test checks what happens without one.
    NoGpu,
    /// NVRTC (no GPU), or `BITONIC_REQUIRE_NVRTC=1` or `BITONIC_REQUIRE_GPU=1`.
    Nvrtc,
}

/// One test: its name (the function's) and what it needs.
pub struct Test {
    pub name: &'static str,
    pub needs: Needs,
    pub run: fn(),
}

/// The tests of a file: `tests![Needs::Gpu => a, b; Needs::Nothing => c]`, each under the name
/// of its function.
#[allow(unused_macros)] // the files without GPU tests have libtest's harness
macro_rules! tests {
    ($($needs:expr => $($name:ident),+ $(,)?);+ $(;)?) => {
        vec![$($($crate::common::harness::Test {
            name: stringify!($name),
            needs: $needs,
            run: $name,
        }),+),+]
    };
}
#[allow(unused_imports)]
pub(crate) use tests;

/// How many GPUs are asked for: `BITONIC_REQUIRE_GPUS`, else 1 under `BITONIC_REQUIRE_GPU=1`.
pub fn required_gpus() -> usize {
    std::env::var("BITONIC_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::from(require_env("BITONIC_REQUIRE_GPU")))
}

/// Whether the machine has `needed` GPUs; when not, skips with a note, or fails when
/// `BITONIC_REQUIRE_GPUS` asks for them.
pub fn enough_gpus(test: &str, needed: usize) -> bool {
    let required = required_gpus();
    let have = match Gpu::device_count() {
        Ok(count) => count,
        Err(why) if required > 0 => panic!("{test}: a GPU is required but there is none: {why}"),
        Err(why) => {
            eprintln!("SKIPPED {test}: {why}");
            return false;
        }
    };
    if have < needed {
        assert!(
            required < needed,
            "{test}: BITONIC_REQUIRE_GPUS={required} but only {have} GPUs"
        );
        eprintln!("SKIPPED {test}: needs {needed} GPUs, found {have}");
        return false;
    }
    true
}

impl Needs {
    /// Why the test cannot run here, or `None` when it runs (what it needs is here, or is
    /// required, so that its absence fails the test).
    fn missing(self) -> Option<String> {
        match self {
            Needs::Nothing => None,
            Needs::Gpu => match Gpu::get() {
                Err(_) if require_env("BITONIC_REQUIRE_GPU") => None,
                Err(why) => Some(format!("no GPU ({why}); BITONIC_REQUIRE_GPU=1 runs them")),
                Ok(_) => None,
            },
            Needs::Gpus(needed) => match Gpu::device_count() {
                Err(_) if required_gpus() > 0 => None,
                Err(why) => Some(format!("no GPU ({why}); BITONIC_REQUIRE_GPU=1 runs them")),
                Ok(have) if have < needed && required_gpus() < needed => Some(format!(
                    "{needed} GPUs needed, {have} found; BITONIC_REQUIRE_GPUS={needed} runs them"
                )),
                Ok(_) => None,
            },
            Needs::NoGpu => Gpu::get()
                .is_ok()
                .then(|| "a GPU is here and these test machines without one".to_string()),
            Needs::Nvrtc => match cuda::nvrtc_version() {
                Err(_)
                    if require_env("BITONIC_REQUIRE_NVRTC")
                        || require_env("BITONIC_REQUIRE_GPU") =>
                {
                    None
                }
                Err(why) => Some(format!("{why}; BITONIC_REQUIRE_NVRTC=1 runs them")),
                Ok(_) => None,
            },
        }
    }
}

/// Runs the tests with libtest's command line (filters, `--list`, `--test-threads`,
/// `--ignored`, `--include-ignored`, …); those that cannot run here are ignored, with a note
/// on stderr saying why. Exits with libtest's status.
pub fn run(tests: Vec<Test>) -> ! {
    let args = Arguments::from_args();
    let mut tests = tests;
    tests.sort_by_key(|test| test.name); // libtest's order
    let mut notes: Vec<(String, usize)> = Vec::new();
    let mut trials = Vec::new();
    for test in tests {
        let missing = test.needs.missing();
        let run = test.run;
        let trial = Trial::test(test.name, move || {
            run();
            Ok(())
        })
        .with_ignored_flag(missing.is_some());
        if let Some(why) = missing.filter(|_| !args.is_filtered_out(&trial)) {
            match notes.iter_mut().find(|(w, _)| *w == why) {
                Some((_, count)) => *count += 1,
                None => notes.push((why, 1)),
            }
        }
        trials.push(trial);
    }
    if !args.list && !args.ignored && !args.include_ignored {
        for (why, count) in &notes {
            let tests = if *count == 1 { "test" } else { "tests" };
            eprintln!("note: {count} {tests} ignored, {why}");
        }
    }
    libtest_mimic::run(&args, trials).exit()
}
