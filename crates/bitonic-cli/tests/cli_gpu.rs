//! The `bitonic` command on a GPU: every version through `sort --backend cuda`. Ignored without
//! a GPU (the summary line counts it), run under `BITONIC_REQUIRE_GPU=1`, where no GPU fails it.
//! Its own harness (`harness = false`): libtest's flags through libtest-mimic, with the GPU
//! looked for when the test runs.

use assert_cmd::Command;
use libtest_mimic::{Arguments, Trial};
use predicates::prelude::*;
use std::path::PathBuf;

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var("BITONIC_REQUIRE_GPU").as_deref() == Ok("1");
    let missing = bitonic::Gpu::get().err().filter(|_| !required);
    let trial = Trial::test("gpu_cli_reaches_every_version", || {
        gpu_cli_reaches_every_version();
        Ok(())
    })
    .with_ignored_flag(missing.is_some());
    if let Some(why) = missing.filter(|_| !args.list && !args.ignored && !args.include_ignored) {
        eprintln!("note: 1 test ignored, no GPU ({why}); BITONIC_REQUIRE_GPU=1 runs it");
    }
    libtest_mimic::run(&args, vec![trial]).exit()
}

/// The binary under test: `BITONIC_BIN`, else `../bin/bitonic` beside this test executable (the
/// layout of a `.gpu/` bundle on a GPU host), else the one cargo built. (As in cli.rs.)
fn bitonic() -> Command {
    let bundled = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("bin/bitonic")));
    let mut cmd = match std::env::var_os("BITONIC_BIN")
        .map(PathBuf::from)
        .or(bundled.filter(|p| p.exists()))
    {
        Some(path) => Command::new(path),
        None => Command::cargo_bin("bitonic").unwrap(),
    };
    // NVRTC's cache private.
    cmd.env("BITONIC_CACHE_DIR", "");
    cmd
}

struct Dir(tempfile::TempDir);
impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

fn gpu_cli_reaches_every_version() {
    // The harness runs this without a GPU only under BITONIC_REQUIRE_GPU=1 or when ignored
    // tests are asked for: then no GPU is a failure.
    if let Err(why) = bitonic::Gpu::get() {
        panic!("there is no GPU: {why}");
    }
    let dir = Dir::new();
    let input = dir.path("in.npy");
    bitonic()
        .args(["gen", "-n", "100003", "--dtype", "i64"])
        .arg(&input)
        .assert()
        .success();
    bitonic()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("cuda: available"));
    for version in ["v0", "v1", "v2", "v3", "v4", "v5", "tuned"] {
        let output = dir.path(&format!("{version}.npy"));
        bitonic()
            .args(["sort", "--backend", "cuda", "--algo", version])
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .assert()
            .success()
            // "with cuda (v3) on …", "with cuda (tuned network passes) on …"
            .stderr(predicate::str::contains(format!("cuda ({version}")));
        bitonic()
            .arg("verify")
            .arg(&output)
            .arg("--permutation-of")
            .arg(&input)
            .assert()
            .success();
    }
}
