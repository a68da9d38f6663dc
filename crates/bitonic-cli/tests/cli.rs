//! The `bitonic` command line: every subcommand, and every bad input gets a clear message, a
//! non-zero exit and no output file.

mod common;

use common::{bitonic, Dir};
use predicates::prelude::*;
use std::path::Path;

fn write_raw_u32(path: &Path, keys: &[u32]) {
    std::fs::write(path, bytemuck::cast_slice::<u32, u8>(keys)).unwrap();
}

fn read_raw_u32(path: &Path) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(&std::fs::read(path).unwrap())
}

#[test]
fn sorts_a_raw_file() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in.u32"), dir.path("out.u32"));
    write_raw_u32(&input, &[5, 3, 9, 1, 1, 0, 7]);
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success()
        .stderr(predicate::str::contains("sorted 7 u32 keys"));
    assert_eq!(read_raw_u32(&output), [0, 1, 1, 3, 5, 7, 9]);
    assert_eq!(
        read_raw_u32(&input),
        [5, 3, 9, 1, 1, 0, 7],
        "the input must not change"
    );
}

#[test]
fn sorts_descending_with_every_cpu_backend_and_dtype() {
    let dir = Dir::new();
    for dtype in ["u32", "i32", "u64", "i64", "f32", "f64", "f16"] {
        for backend in ["cpu", "cpu-network", "cpu-network-serial", "auto"] {
            let (input, output) = (
                dir.path(&format!("{dtype}.npy")),
                dir.path(&format!("{dtype}-{backend}.npy")),
            );
            bitonic()
                .args(["gen", "-n", "3001", "--dtype", dtype, "--force"])
                .arg(&input)
                .assert()
                .success();
            bitonic()
                .args(["sort", "--desc", "--backend", backend])
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .assert()
                .success();
            bitonic()
                .args(["verify", "--desc"])
                .arg(&output)
                .arg("--permutation-of")
                .arg(&input)
                .assert()
                .success()
                .stdout(predicate::str::contains("sorted, a permutation"));
        }
    }
}

#[test]
fn npy_output_is_readable_npy() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in.npy"), dir.path("out.npy"));
    bitonic()
        .args([
            "gen",
            "-n",
            "2^10",
            "--dtype",
            "f64",
            "--pattern",
            "reversed",
        ])
        .arg(&input)
        .assert()
        .success();
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    let bytes = std::fs::read(&output).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!(
        (10 + header_len) % 64,
        0,
        "NumPy aligns the data to 64 bytes"
    );
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'descr': '<f8'") && header.contains("'shape': (1024,)"),
        "{header}"
    );
    assert_eq!(bytes.len(), 10 + header_len + 1024 * 8);
    bitonic().arg("verify").arg(&output).assert().success();
}

#[test]
fn stdin_to_stdout() {
    let keys: Vec<u8> = bytemuck::cast_slice::<i64, u8>(&[3, -1, 2]).to_vec();
    let out = bitonic()
        .args(["sort", "-", "-o", "-", "--dtype", "i64", "--quiet"])
        .write_stdin(keys)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(bytemuck::pod_collect_to_vec::<u8, i64>(&out), [-1, 2, 3]);
}

#[test]
fn verify_rejects_unsorted_and_non_permutations() {
    let dir = Dir::new();
    let (a, b) = (dir.path("a.u32"), dir.path("b.u32"));
    write_raw_u32(&a, &[1, 3, 2]);
    bitonic()
        .arg("verify")
        .arg(&a)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not sorted: key 1"));
    write_raw_u32(&b, &[1, 2, 4]);
    bitonic()
        .arg("verify")
        .arg(&b)
        .arg("--permutation-of")
        .arg(&a)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not a permutation"));
}

#[test]
fn gen_patterns_are_reproducible() {
    let dir = Dir::new();
    for pattern in ["random", "sorted", "reversed", "few-distinct", "all-equal"] {
        let (x, y) = (
            dir.path(&format!("{pattern}1")),
            dir.path(&format!("{pattern}2")),
        );
        for path in [&x, &y] {
            bitonic()
                .args(["gen", "-n", "5000", "--seed", "9", "--pattern", pattern])
                .arg(path)
                .assert()
                .success();
        }
        assert_eq!(std::fs::read(&x).unwrap(), std::fs::read(&y).unwrap());
        assert_eq!(std::fs::metadata(&x).unwrap().len(), 20_000);
    }
    bitonic()
        .args(["verify"])
        .arg(dir.path("sorted1"))
        .assert()
        .success();
    bitonic()
        .args(["verify", "--desc"])
        .arg(dir.path("reversed1"))
        .assert()
        .success();
}

#[test]
fn demo_and_info_run_anywhere() {
    bitonic()
        .args(["demo", "-n", "50000"])
        .assert()
        .success()
        .stdout(predicate::str::contains("sorted and verified on"));
    bitonic()
        .args([
            "demo",
            "-n",
            "4097",
            "--dtype",
            "f64",
            "--desc",
            "--backend",
            "cpu-network-serial",
        ])
        .assert()
        .success();
    bitonic()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("cuda: "));
}

// ---- bad input: a clear message, a non-zero exit, nothing written ----

fn fails_without_output(args: &[&str], input: Option<&Path>, output: &Path, message: &str) {
    let mut cmd = bitonic();
    cmd.args(args);
    if let Some(input) = input {
        cmd.arg(input);
    }
    cmd.arg("-o").arg(output);
    cmd.assert()
        .failure()
        .stderr(predicate::str::contains(message));
    assert!(!output.exists(), "{} must not be written", output.display());
}

#[test]
fn missing_input() {
    let dir = Dir::new();
    fails_without_output(
        &["sort"],
        Some(&dir.path("nope.bin")),
        &dir.path("out"),
        "nope.bin: no such file",
    );
}

#[test]
fn ragged_raw_length() {
    let dir = Dir::new();
    let input = dir.path("odd.bin");
    std::fs::write(&input, [1u8, 2, 3, 4, 5, 6]).unwrap();
    fails_without_output(
        &["sort", "--dtype", "u32"],
        Some(&input),
        &dir.path("out"),
        "6 bytes is not a whole number of u32 keys",
    );
    fails_without_output(
        &["sort", "--dtype", "f64"],
        Some(&input),
        &dir.path("out"),
        "6 bytes is not a whole number of f64 keys",
    );
}

#[test]
fn malformed_npy_header() {
    let dir = Dir::new();
    let input = dir.path("bad.npy");
    std::fs::write(
        &input,
        b"\x93NUMPY\x01\x00\x1c\x00{'descr': '<u4', 'fortran_or",
    )
    .unwrap();
    fails_without_output(
        &["sort"],
        Some(&input),
        &dir.path("out.npy"),
        "not a valid .npy file",
    );
}

#[test]
fn npy_with_wrong_length() {
    let dir = Dir::new();
    let (good, bad) = (dir.path("good.npy"), dir.path("short.npy"));
    bitonic()
        .args(["gen", "-n", "100"])
        .arg(&good)
        .assert()
        .success();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() - 8]).unwrap();
    fails_without_output(
        &["sort"],
        Some(&bad),
        &dir.path("out.npy"),
        "truncated .npy file: the header promises 100 keys (400 bytes) but the file holds 392 bytes",
    );
}

fn npy_with_descr(descr: &str, shape: &str) -> Vec<u8> {
    npy_with_data(descr, shape, &[0u8; 16])
}

fn npy_with_data(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    npy_in_order(descr, false, shape, data)
}

/// A .npy as NumPy writes it, in C order or (`fortran`) in Fortran order.
fn npy_in_order(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let order = if fortran { "True" } else { "False" };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((dict.len() as u16).to_le_bytes());
    out.extend(dict.bytes());
    out.extend(data);
    out
}

#[test]
fn unsupported_npy_dtypes_and_shapes() {
    let dir = Dir::new();
    for (descr, shape, message) in [
        ("<c8", "(2,)", "dtype \"<c8\" is not supported"),
        (">u4", "(4,)", "dtype \">u4\" is not supported"),
        ("|u1", "(16,)", "dtype \"|u1\" is not supported"),
        (
            "<u4",
            "(2, 2, 2)",
            "is not supported (one or two dimensions)",
        ),
    ] {
        let input = dir.path("x.npy");
        std::fs::write(&input, npy_with_descr(descr, shape)).unwrap();
        fails_without_output(&["sort"], Some(&input), &dir.path("out.npy"), message);
    }
}

#[test]
fn unknown_dtype() {
    let dir = Dir::new();
    let input = dir.path("in.bin");
    write_raw_u32(&input, &[1, 2]);
    fails_without_output(
        &["sort", "--dtype", "u16"],
        Some(&input),
        &dir.path("out"),
        "invalid value 'u16'",
    );
}

#[test]
fn dtype_disagreeing_with_npy_header() {
    let dir = Dir::new();
    let input = dir.path("in.npy");
    bitonic()
        .args(["gen", "-n", "10", "--dtype", "f32"])
        .arg(&input)
        .assert()
        .success();
    fails_without_output(
        &["sort", "--dtype", "u32"],
        Some(&input),
        &dir.path("out.npy"),
        "holds f32 keys but --dtype u32 was given",
    );
}

#[test]
fn output_equal_to_input_needs_force() {
    let dir = Dir::new();
    let input = dir.path("same.u32");
    write_raw_u32(&input, &[2, 1]);
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&input)
        .assert()
        .failure()
        .stderr(predicate::str::contains("is the input file; pass --force"));
    assert_eq!(read_raw_u32(&input), [2, 1], "the input must be untouched");
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&input)
        .arg("--force")
        .assert()
        .success();
    assert_eq!(read_raw_u32(&input), [1, 2]);
}

#[test]
fn existing_output_needs_force() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in"), dir.path("out"));
    write_raw_u32(&input, &[2, 1]);
    write_raw_u32(&output, &[42]);
    bitonic()
        .arg("sort")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .failure()
        .stderr(predicate::str::contains("exists; pass --force"));
    assert_eq!(read_raw_u32(&output), [42]);
    bitonic()
        .arg("gen")
        .arg(&output)
        .args(["-n", "3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("exists; pass --force"));
}

#[test]
fn cuda_backend_without_gpu_says_why() {
    if bitonic::cuda::Gpu::get().is_ok() {
        return; // on a GPU host the request succeeds; gpu_cli_reaches_every_version covers it
    }
    let dir = Dir::new();
    let input = dir.path("in");
    write_raw_u32(&input, &[2, 1]);
    fails_without_output(
        &["sort", "--backend", "cuda"],
        Some(&input),
        &dir.path("out"),
        "no GPU can be used: ",
    );
}

/// A .npy file's header and its data as words of `T`.
fn read_npy<T: bytemuck::Pod>(path: &Path) -> (String, Vec<T>) {
    let bytes = std::fs::read(path).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8(bytes[10..10 + header_len].to_vec()).unwrap();
    (
        header,
        bytemuck::pod_collect_to_vec(&bytes[10 + header_len..]),
    )
}

#[test]
fn rows_and_two_dimensional_npy() {
    let dir = Dir::new();
    let (flat, by_rows) = (dir.path("flat.u32"), dir.path("rows.npy"));
    write_raw_u32(&flat, &[3, 1, 2, 9, 7, 8]);
    bitonic()
        .args(["sort", "--rows", "2"])
        .arg(&flat)
        .arg("-o")
        .arg(&by_rows)
        .assert()
        .success();
    let (header, keys) = read_npy::<u32>(&by_rows);
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(keys, [1, 2, 3, 7, 8, 9]);
    // A 2-D .npy input sorts along its last axis and keeps its shape.
    let again = dir.path("again.npy");
    bitonic()
        .args(["sort", "--desc"])
        .arg(&by_rows)
        .arg("-o")
        .arg(&again)
        .assert()
        .success();
    let (header, keys) = read_npy::<u32>(&again);
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(keys, [3, 2, 1, 9, 8, 7]);
    fails_without_output(
        &["sort", "--rows", "4"],
        Some(&flat),
        &dir.path("bad"),
        "6 keys do not split into 4 equal rows",
    );
}

#[test]
fn topk_keeps_the_best_of_each_row_with_indices() {
    let dir = Dir::new();
    let (flat, by_rows) = (dir.path("flat.u32"), dir.path("rows.npy"));
    // Two rows of five; row 1 has a tie for its second place (indices 1 and 4 hold 8).
    write_raw_u32(&flat, &[5, 1, 9, 3, 7, 2, 8, 0, 9, 8]);
    let (top, at) = (dir.path("top.npy"), dir.path("at.npy"));
    bitonic()
        .args(["topk", "-k", "3", "--rows", "2"])
        .arg(&flat)
        .arg("-o")
        .arg(&top)
        .arg("--indices")
        .arg(&at)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "kept the 3 largest of 5 u32 keys in each of 2 rows",
        ));
    let (header, keys) = read_npy::<u32>(&top);
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(keys, [9, 7, 5, 9, 8, 8]);
    assert_eq!(read_npy::<u32>(&at).1, [2, 4, 0, 3, 1, 4]);
    bitonic()
        .args(["topk", "-k", "2", "--smallest", "--rows", "2"])
        .arg(&flat)
        .arg("-o")
        .arg(&by_rows)
        .assert()
        .success();
    assert_eq!(read_npy::<u32>(&by_rows).1, [1, 3, 0, 2]);
    fails_without_output(
        &["topk", "--rows", "2", "-k", "6"],
        Some(&flat),
        &dir.path("bad.npy"),
        "-k 6 must be from 0 to the row length, 5",
    );
}

#[test]
fn argsort_writes_the_permutation() {
    let dir = Dir::new();
    let (input, output) = (dir.path("in.u32"), dir.path("perm.npy"));
    write_raw_u32(&input, &[30, 10, 20, 10, 5, 6]);
    bitonic()
        .args(["sort", "--argsort"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    let (header, perm) = read_npy::<u32>(&output);
    assert!(header.contains("'descr': '<u4'"), "{header}");
    assert_eq!(perm, [4, 5, 1, 3, 2, 0], "ties keep their original order");
    let per_row = dir.path("per_row.npy");
    bitonic()
        .args(["sort", "--argsort", "--rows", "2", "--desc"])
        .arg(&input)
        .arg("-o")
        .arg(&per_row)
        .assert()
        .success();
    assert_eq!(read_npy::<u32>(&per_row).1, [0, 2, 1, 0, 2, 1]);
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A new output gets 0666 less the umask, as any new file; a file written over with --force
/// keeps its own mode. (The umask of the test process: 022 on the machines we run on.)
#[cfg(unix)]
#[test]
fn outputs_get_the_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    let (input, output) = (dir.path("in.raw"), dir.path("out.raw"));
    write_raw_u32(&input, &[3, 1, 2]);
    // The umask, read off a file made the ordinary way.
    let probe = dir.path("probe");
    std::fs::write(&probe, b"").unwrap();
    let usual = mode(&probe);
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    assert_eq!(mode(&output), usual, "a new output");
    std::fs::set_permissions(&output, std::fs::Permissions::from_mode(0o640)).unwrap();
    bitonic()
        .args(["sort", "--backend", "cpu", "--force"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    assert_eq!(
        mode(&output),
        0o640,
        "an output written over keeps its mode"
    );
    assert_eq!(read_raw_u32(&output), [1, 2, 3]);
}

/// A missing or unwritable destination folder is found before the sort, and the message
/// names the user's path once (not a temporary file's).
#[test]
fn a_bad_destination_fails_before_the_work() {
    let dir = Dir::new();
    let input = dir.path("in.raw");
    write_raw_u32(&input, &[3, 1, 2]);
    let output = dir.path("no-such-folder").join("out.raw");
    let assert = bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .assert()
        .failure()
        .stderr(predicate::str::contains("does not exist"))
        .stderr(predicate::str::contains(".bitonic-").not());
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert_eq!(stderr.matches("out.raw").count(), 1, "{stderr}");
    // gen checks too, before generating.
    bitonic()
        .args(["gen", "-n", "10"])
        .arg(&output)
        .assert()
        .failure()
        .stderr(predicate::str::contains("does not exist"));
    // A folder as the output.
    bitonic()
        .args(["sort", "--backend", "cpu", "--force"])
        .arg(&input)
        .arg("-o")
        .arg(dir.root())
        .assert()
        .failure()
        .stderr(predicate::str::contains("is a folder"));
}

/// SIGTERM while the output is being written exits 143 (128 + 15) and leaves no partial file
/// behind. The signal is sent once the write has begun (the partial file holds data): 1 GiB
/// is written for long enough to be interrupted, and a run that ends first fails the test.
#[cfg(unix)]
#[test]
fn an_interrupted_write_leaves_nothing() {
    let dir = Dir::new();
    let output = dir.path("big.raw");
    let bin = bitonic().get_program().to_owned();
    let mut child = std::process::Command::new(bin)
        .args(["gen", "-n", "2^28"])
        .arg(&output)
        .env("BITONIC_CACHE_DIR", "")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The write's partial file, once it holds data (the folder check's probe stays empty).
    let writing = || {
        std::fs::read_dir(dir.root()).unwrap().any(|e| {
            let e = e.unwrap();
            e.file_name().to_string_lossy().starts_with(".bitonic-")
                && e.metadata().is_ok_and(|m| m.len() > 0)
        })
    };
    let started = std::time::Instant::now();
    while !writing() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "gen ended before the signal"
        );
        assert!(
            started.elapsed().as_secs() < 120,
            "no partial file appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("bitonic: terminated"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Whether `pid` handles `signal` (its bit in SigCgt of /proc/PID/status): its handlers are
/// set, so a signal sent now tests them, not the default action.
#[cfg(target_os = "linux")]
fn catches(pid: u32, signal: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
    mask.is_some_and(|m| m & (1 << (signal - 1)) != 0)
}

/// A sort waiting on standard input that never closes, its handlers set (or, with `ignore`,
/// SIGHUP ignored as nohup does).
#[cfg(target_os = "linux")]
fn waiting_sort(output: &Path, ignore_hangup: bool) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let bin = bitonic().get_program().to_owned();
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["sort", "-", "-o"])
        .arg(output)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // Each child starts from the default actions, whatever the test inherited: a job started by
    // nohup, or in the background of a script, has SIGHUP or SIGINT ignored, which the command
    // rightly keeps ignored. With `ignore_hangup`, SIGHUP is ignored as nohup does.
    // SAFETY: signal(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            let hangup = if ignore_hangup {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            libc::signal(libc::SIGHUP, hangup);
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    let started = std::time::Instant::now();
    while !catches(child.id(), libc::SIGTERM) {
        assert!(started.elapsed().as_secs() < 60, "no SIGTERM handler");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child
}

/// Ctrl-C, SIGTERM and SIGHUP end a command with 128 + the signal's number, as a shell
/// reports it, and say which; a hang-up ignored at the start (nohup) stays ignored.
#[cfg(target_os = "linux")]
#[test]
fn signals_exit_with_128_plus_their_number() {
    let dir = Dir::new();
    let output = dir.path("out.raw");
    for (signal, status, said) in [
        (libc::SIGINT, 130, "bitonic: interrupted"),
        (libc::SIGTERM, 143, "bitonic: terminated"),
        (libc::SIGHUP, 129, "bitonic: hung up"),
    ] {
        let mut child = waiting_sort(&output, false);
        let stdin = child.stdin.take(); // kept open: the sort waits for more keys
                                        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "signal {signal}: {stderr}");
        assert!(stderr.contains(said), "signal {signal}: {stderr}");
    }
    let mut child = waiting_sort(&output, true);
    let stdin = child.stdin.take();
    assert!(
        !catches(child.id(), libc::SIGHUP),
        "an ignored SIGHUP is handled"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended by an ignored SIGHUP"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(143));
    let left: Vec<_> = std::fs::read_dir(dir.root()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

// ---- the edges of the command line ----

/// A 2-D .npy of u32 keys, as NumPy writes it.
fn write_npy_u32(path: &Path, shape: &str, keys: &[u32]) {
    let mut bytes = npy_with_descr("<u4", shape);
    bytes.truncate(bytes.len() - 16);
    bytes.extend(bytemuck::cast_slice::<u32, u8>(keys));
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn verify_checks_each_row_of_a_2d_file() {
    let dir = Dir::new();
    let (matrix, rows) = (dir.path("matrix.npy"), dir.path("rows.npy"));
    write_npy_u32(&matrix, "(2, 3)", &[3, 1, 2, 9, 7, 8]);
    bitonic()
        .arg("sort")
        .arg(&matrix)
        .arg("-o")
        .arg(&rows)
        .assert()
        .success();
    bitonic()
        .arg("verify")
        .arg(&rows)
        .arg("--permutation-of")
        .arg(&matrix)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "2 rows of 3 u32 keys, each row sorted, a permutation",
        ));
    // Each row sorted, all the keys there, but not row by row.
    let mixed = dir.path("mixed.npy");
    write_npy_u32(&mixed, "(2, 3)", &[1, 2, 9, 3, 7, 8]);
    bitonic()
        .arg("verify")
        .arg(&mixed)
        .arg("--permutation-of")
        .arg(&matrix)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not a permutation"));
    // A row out of order is named.
    let bad = dir.path("bad.npy");
    write_npy_u32(&bad, "(2, 3)", &[1, 2, 3, 7, 9, 8]);
    bitonic()
        .arg("verify")
        .arg(&bad)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("row 1: key 4 (9) and key 5 (8)"));
    // Raw rows, as `sort --rows` writes them.
    let raw = dir.path("rows.u32");
    write_raw_u32(&raw, &[1, 2, 3, 0, 5, 6]);
    bitonic()
        .args(["verify", "--rows", "2"])
        .arg(&raw)
        .assert()
        .success();
    bitonic().arg("verify").arg(&raw).assert().code(1);
}

/// A benchmark's sizes are checked before it makes its folder or starts timing.
#[test]
fn bench_sizes_are_checked_before_the_work() {
    let dir = Dir::new();
    let out = dir.path("results");
    let args: [&[&str]; 3] = [
        &["bench", "--no-gpu", "--max-exp", "40"],
        &["bench", "--no-gpu", "--min-exp", "20", "--max-exp", "18"],
        &["bench-rows", "--shapes", "1099511627776x1024"],
    ];
    // Sizes out of range are usage errors (2); memory this machine lacks is a failure (1).
    let expected = [
        ("one sort takes at most 2^31 keys", 2),
        ("--min-exp 20 is above --max-exp 18", 2),
        (
            "not enough memory for bench-rows at 1099511627776x1024 keys",
            1,
        ),
    ];
    for (args, (message, status)) in args.iter().zip(expected) {
        bitonic()
            .args(*args)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(status)
            .stderr(predicate::str::contains(message));
        assert!(!out.exists(), "{args:?} made its output folder");
    }
}

/// Sizes past memory are errors that name the size and what is available, never an abort.
#[test]
fn huge_sizes_fail_with_the_size_named() {
    let dir = Dir::new();
    // 2^46 u64 keys: 512 TiB, past any address space (no overcommit setting lends it).
    for command in [
        &["gen", "-n", "2^46", "--dtype", "u64"][..],
        &["demo", "-n", "2^46", "--dtype", "u64", "--backend", "cpu"],
    ] {
        let mut cmd = bitonic();
        cmd.args(command);
        if command[0] == "gen" {
            cmd.arg(dir.path("big"));
        }
        cmd.assert()
            .code(1)
            .stderr(predicate::str::contains(
                "not enough memory for 70368744177664 u64 keys: it needs 512.0 TiB \
                 (562949953421312 bytes)",
            ))
            .stderr(predicate::str::contains("available"));
    }
    assert!(!dir.path("big").exists());
    bitonic()
        .args(["gen", "-n", "2^62", "--dtype", "u64"])
        .arg(dir.path("big"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "more bytes than this machine can address",
        ));
    bitonic()
        .args(["gen", "-n", "2^64"])
        .arg(dir.path("big"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a length"));
}

#[test]
fn npy_shapes_that_overflow_are_errors() {
    let dir = Dir::new();
    for (shape, message) in [
        (
            "(4294967296, 4294967296)",
            "its shape (4294967296, 4294967296) holds more keys than this machine can address",
        ),
        (
            "(99999999999999999999,)",
            "holds more keys than this machine",
        ),
        (
            "(4611686018427387904,)",
            "promises 4611686018427387904 keys, too many",
        ),
    ] {
        let input = dir.path("x.npy");
        std::fs::write(&input, npy_with_descr("<u4", shape)).unwrap();
        fails_without_output(&["sort"], Some(&input), &dir.path("out.npy"), message);
    }
}

#[test]
fn npy_longer_than_its_shape() {
    let dir = Dir::new();
    let input = dir.path("long.npy");
    std::fs::write(&input, npy_with_descr("<u4", "(3,)")).unwrap(); // 16 bytes of keys
    fails_without_output(
        &["sort"],
        Some(&input),
        &dir.path("out.npy"),
        "the header promises 3 keys (12 bytes) but the file holds 16 bytes after the header",
    );
}

#[test]
fn gpu_benches_without_a_gpu_fail_first() {
    if bitonic::Gpu::get().is_ok() {
        return;
    }
    let dir = Dir::new();
    let out = dir.path("results");
    bitonic()
        .args(["bench", "--min-exp", "10", "--max-exp", "10", "-o"])
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bench needs a GPU"))
        .stderr(predicate::str::contains("--no-gpu"));
    bitonic()
        .args(["bench-rows", "-o"])
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bench-rows needs a GPU"))
        .stderr(predicate::str::contains("no CPU mode"));
    assert!(!out.exists(), "nothing is made before the GPU is found");
}

/// bench --no-gpu writes whole files only, with the usual permissions.
#[cfg(unix)]
#[test]
fn cpu_bench_leaves_whole_files() {
    let dir = Dir::new();
    let out = dir.path("results");
    let probe = dir.path("probe");
    std::fs::write(&probe, b"").unwrap();
    bitonic()
        .args([
            "bench",
            "--no-gpu",
            "--min-exp",
            "8",
            "--max-exp",
            "8",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 0, "{} is empty", path.display());
        if path.extension().is_some_and(|e| e == "csv" || e == "md") {
            assert_eq!(mode(&path), mode(&probe), "{}", path.display());
        }
    }
}

#[test]
fn demo_on_cuda_without_a_gpu_just_fails() {
    if bitonic::Gpu::get().is_ok() {
        return;
    }
    for args in [
        &["demo", "-n", "1000", "--backend", "cuda"][..],
        &["demo", "-n", "1000", "--algo", "v5"],
    ] {
        bitonic()
            .args(args)
            .assert()
            .code(1)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains("no GPU can be used: "))
            .stderr(predicate::str::contains("to sort on the CPU"))
            .stderr(predicate::str::contains("the CPU sorts instead").not());
    }
}

#[test]
fn version_prints_the_program_version_and_algo_picks_the_algorithm() {
    let version = env!("CARGO_PKG_VERSION");
    for args in [
        &["--version"][..],
        &["demo", "--version"],
        &["sort", "--version"],
    ] {
        bitonic()
            .args(args)
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("{version} (commit ")));
    }
    let dir = Dir::new();
    let input = dir.path("in");
    write_raw_u32(&input, &[2, 1]);
    fails_without_output(
        &["sort", "--version", "v5"],
        Some(&input),
        &dir.path("out"),
        "the GPU algorithm is chosen with --algo (--algo v5)",
    );
    fails_without_output(
        &["sort", "--version=tuned"],
        Some(&input),
        &dir.path("out"),
        "--algo tuned",
    );
    fails_without_output(
        &["sort", "--backend", "cpu", "--algo", "v3"],
        Some(&input),
        &dir.path("out"),
        "--algo v3 runs on the GPU but --backend cpu sorts on the CPU",
    );
}

const SUBCOMMANDS: [&str; 9] = [
    "sort",
    "gen",
    "verify",
    "demo",
    "info",
    "compile",
    "bench",
    "report",
    "bench-rows",
];

#[test]
fn help_is_plain_text() {
    let mut helps = vec![vec!["--help"]];
    helps.extend(SUBCOMMANDS.iter().map(|c| vec![*c, "--help"]));
    for args in helps {
        let out = bitonic()
            .args(&args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('`'), "{args:?}: {text}");
        assert!(!text.contains("[`"), "{args:?}: {text}");
    }
}

#[test]
fn rows_must_agree_with_a_2d_input() {
    let dir = Dir::new();
    let matrix = dir.path("matrix.npy");
    write_npy_u32(&matrix, "(2, 3)", &[3, 1, 2, 9, 7, 8]);
    fails_without_output(
        &["sort", "--rows", "1"],
        Some(&matrix),
        &dir.path("out.npy"),
        "--rows 1 disagrees with",
    );
    let out = dir.path("same.npy");
    bitonic()
        .args(["sort", "--rows", "2"])
        .arg(&matrix)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let (header, keys) = read_npy::<u32>(&out);
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(keys, [1, 2, 3, 7, 8, 9]);
    // Empty rows and no rows sort and verify.
    for shape in ["(2, 0)", "(0, 3)"] {
        let (input, output) = (dir.path("empty.npy"), dir.path("empty-out.npy"));
        write_npy_u32(&input, shape, &[]);
        bitonic()
            .args(["sort", "--force"])
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .assert()
            .success();
        assert!(read_npy::<u32>(&output).0.contains(shape));
        bitonic().arg("verify").arg(&output).assert().success();
    }
}

#[test]
fn standard_input_and_output_are_named() {
    bitonic()
        .args(["sort", "-", "-o", "-"])
        .write_stdin(vec![1u8, 2, 3])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "standard input: 3 bytes is not a whole number",
        ));
    bitonic()
        .args(["verify", "-"])
        .write_stdin(bytemuck::cast_slice::<u32, u8>(&[2, 1]).to_vec())
        .assert()
        .code(1)
        .stdout(predicate::str::contains("standard input: not sorted"));
    bitonic()
        .args(["gen", "-", "-n", "3"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "wrote 3 random u32 keys (12 bytes of keys) to standard output",
        ));
}

#[test]
fn bench_commands_share_one_policy_option() {
    let policy_line = |command: &str| {
        let out = bitonic().args([command, "--help"]).assert().success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let at = text.find("--policy").expect("--policy in the help");
        let end = at + text[at..].find("[default").expect("a default");
        // The same words, whatever the layout.
        text[at..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(policy_line("bench"), policy_line("bench-rows"));
}

#[test]
fn gen_documents_its_options_and_reports() {
    let out = bitonic().args(["gen", "--help"]).assert().success();
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for option in [
        "--output",
        "--len",
        "--dtype",
        "--pattern",
        "--seed",
        "--force",
    ] {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(option) || l.contains(&format!(", {option}")))
            .unwrap_or_else(|| panic!("{option} missing: {help}"));
        let described = line.split("  ").filter(|s| !s.trim().is_empty()).count() >= 2;
        assert!(described, "{option} is not described: {line}");
    }
    let dir = Dir::new();
    let output = dir.path("keys.npy");
    bitonic()
        .args([
            "gen",
            "-n",
            "2^4",
            "--dtype",
            "u64",
            "--pattern",
            "sorted",
            "-o",
        ])
        .arg(&output)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "wrote 16 sorted u64 keys (128 bytes of keys) to",
        ));
    bitonic().arg("verify").arg(&output).assert().success();
}

// ---- a new user's mistakes ----

#[test]
fn a_folder_as_input() {
    let dir = Dir::new();
    let assert = bitonic()
        .arg("sort")
        .arg(dir.root())
        .arg("-o")
        .arg(dir.path("out"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is a folder, not a key file"));
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert_eq!(
        stderr.matches("is a folder").count(),
        1,
        "said once: {stderr}"
    );
    assert!(!dir.path("out").exists());
    bitonic()
        .arg("verify")
        .arg(dir.root())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is a folder"));
}

/// A FIFO is read as a stream, not taken for an empty file.
#[cfg(unix)]
#[test]
fn a_fifo_as_input() {
    let dir = Dir::new();
    let (fifo, output) = (dir.path("keys.fifo"), dir.path("out"));
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || write_raw_u32(&fifo, &[5, 4, 3, 2, 1]))
    };
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&fifo)
        .arg("-o")
        .arg(&output)
        .assert()
        .success();
    writer.join().unwrap();
    assert_eq!(read_raw_u32(&output), [1, 2, 3, 4, 5]);
}

/// `bitonic gen - -n 1000000 | head -c 10`: the reader leaving ends the writer quietly.
#[cfg(unix)]
#[test]
fn a_pipe_closed_early() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let bin = bitonic().get_program().to_owned();
    let mut child = std::process::Command::new(bin)
        .args(["gen", "-", "-n", "1000000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap(); // then dropped: closed
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn zero_and_one_key() {
    let dir = Dir::new();
    for n in ["0", "1"] {
        let (input, output) = (
            dir.path(&format!("{n}.npy")),
            dir.path(&format!("{n}-out.npy")),
        );
        bitonic()
            .args(["gen", "-n", n])
            .arg(&input)
            .assert()
            .success();
        for extra in [&[][..], &["--argsort"]] {
            bitonic()
                .arg("sort")
                .args(extra)
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .arg("--force")
                .assert()
                .success();
        }
        bitonic().arg("verify").arg(&output).assert().success();
        bitonic().args(["demo", "-n", n]).assert().success();
    }
}

/// f16 keys from a `<f2` .npy (sort, argsort, top-k, verify) and bf16 keys from a raw file,
/// in total order: -inf < -3 < -0 < +0 < 1.5 < 2 < NaN. NumPy has no bf16: a .npy output of
/// bf16 keys is refused before any work.
#[test]
fn half_floats_from_npy_and_raw() {
    let dir = Dir::new();
    // 1.5, -0.0, NaN, -inf, 0.0, 2.0, -3.0 as f16 and as bf16 bits.
    let f16_bits: [u16; 7] = [0x3e00, 0x8000, 0x7e00, 0xfc00, 0x0000, 0x4000, 0xc200];
    let bf16_bits: [u16; 7] = [0x3fc0, 0x8000, 0x7fc0, 0xff80, 0x0000, 0x4000, 0xc040];
    let ascending = [3, 6, 1, 4, 0, 5, 2];
    let input = dir.path("logits.npy");
    let data = bytemuck::cast_slice::<u16, u8>(&f16_bits);
    std::fs::write(&input, npy_with_data("<f2", "(7,)", data)).unwrap();
    let sorted = dir.path("sorted.npy");
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&input)
        .arg("-o")
        .arg(&sorted)
        .assert()
        .success()
        .stderr(predicate::str::contains("sorted 7 f16 keys"));
    let (header, keys) = read_npy::<u16>(&sorted);
    assert!(header.contains("'descr': '<f2'"), "{header}");
    assert_eq!(keys, ascending.map(|i| f16_bits[i]));
    bitonic()
        .arg("verify")
        .arg(&sorted)
        .arg("--permutation-of")
        .arg(&input)
        .assert()
        .success();
    let order = dir.path("order.npy");
    bitonic()
        .args(["sort", "--argsort"])
        .arg(&input)
        .arg("-o")
        .arg(&order)
        .assert()
        .success();
    assert_eq!(read_npy::<u32>(&order).1, ascending.map(|i| i as u32));
    let (top, at) = (dir.path("top.npy"), dir.path("at.npy"));
    bitonic()
        .args(["topk", "-k", "3"])
        .arg(&input)
        .arg("-o")
        .arg(&top)
        .arg("--indices")
        .arg(&at)
        .assert()
        .success();
    assert_eq!(read_npy::<u16>(&top).1, [2, 5, 0].map(|i| f16_bits[i]));
    assert_eq!(read_npy::<u32>(&at).1, [2, 5, 0]);

    let (raw, raw_sorted) = (dir.path("logits.bf16"), dir.path("sorted.bf16"));
    std::fs::write(&raw, bytemuck::cast_slice::<u16, u8>(&bf16_bits)).unwrap();
    bitonic()
        .args(["sort", "--desc", "--dtype", "bf16"])
        .arg(&raw)
        .arg("-o")
        .arg(&raw_sorted)
        .assert()
        .success();
    let got: Vec<u16> = bytemuck::pod_collect_to_vec(&std::fs::read(&raw_sorted).unwrap());
    let mut descending = ascending.map(|i| bf16_bits[i]);
    descending.reverse();
    assert_eq!(got, descending);
    bitonic()
        .args(["verify", "--desc", "--dtype", "bf16"])
        .arg(&raw_sorted)
        .assert()
        .success();
    fails_without_output(
        &["sort", "--dtype", "bf16"],
        Some(&raw),
        &dir.path("bf16.npy"),
        "NumPy has no bf16 type",
    );
    bitonic()
        .args(["gen", "-n", "1000", "--dtype", "bf16"])
        .arg(dir.path("gen.npy"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("NumPy has no bf16 type"));
    assert!(!dir.path("gen.npy").exists());
}

// ---- exit statuses ----

/// A command line wrong in itself exits 2, as clap's own parse errors do, and writes nothing;
/// a command that fails exits 1. Every --help says so.
#[test]
fn usage_errors_exit_2_and_failures_exit_1() {
    let dir = Dir::new();
    let input = dir.path("in.raw");
    write_raw_u32(&input, &[3, 1, 2, 0, 5, 4]);
    let usage: [(&[&str], &str, &str); 5] = [
        (
            &["sort", "--backend", "cpu", "--algo", "v3"],
            "out.raw",
            "--algo v3 runs on the GPU but --backend cpu sorts on the CPU: leave out --algo",
        ),
        (
            &["sort", "--rows", "0"],
            "out.raw",
            "--rows must be at least 1",
        ),
        (
            &["sort", "--dtype", "bf16"],
            "out.npy",
            "NumPy has no bf16 type",
        ),
        (
            &["sort", "--backend", "gpu"],
            "out.raw",
            "invalid value 'gpu'",
        ),
        (
            &["topk", "-k", "1", "--indices"],
            "out.raw",
            "--indices and --output name the same file",
        ),
    ];
    for (args, output, message) in usage {
        let output = dir.path(output);
        let mut cmd = bitonic();
        cmd.args(args);
        if args[0] == "topk" {
            cmd.arg(&output);
        }
        cmd.arg(&input).arg("-o").arg(&output);
        cmd.assert()
            .code(2)
            .stderr(predicate::str::contains(message));
        assert!(!output.exists(), "{args:?} wrote {}", output.display());
    }
    bitonic()
        .args(["compile", "--arch", "gfx90a"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "is not an architecture such as sm_90",
        ));

    let existing = dir.path("existing.raw");
    write_raw_u32(&existing, &[7]);
    let failures: [(&[&str], &Path, &Path, &str); 3] = [
        (
            &["sort"],
            &dir.path("missing.raw"),
            &dir.path("out.raw"),
            "no such file",
        ),
        (&["sort"], &input, &existing, "exists; pass --force"),
        (
            &["sort", "--rows", "4"],
            &input,
            &dir.path("out.raw"),
            "6 keys do not split into 4",
        ),
    ];
    for (args, input, output, message) in failures {
        bitonic()
            .args(args)
            .arg(input)
            .arg("-o")
            .arg(output)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(message));
    }
    assert_eq!(read_raw_u32(&existing), [7]);

    let mut helps = vec![vec!["--help"]];
    helps.extend(SUBCOMMANDS.iter().map(|c| vec![*c, "--help"]));
    helps.push(vec!["topk", "--help"]);
    for args in helps {
        let out = bitonic().args(&args).assert().success();
        let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        for line in [
            "Exit status:",
            "  1    the command failed",
            "  2    the command line is wrong in itself",
            "  130  interrupted by Ctrl-C (SIGINT); 143 by SIGTERM, 129 by SIGHUP",
        ] {
            assert!(help.contains(line), "{args:?} lacks {line:?}: {help}");
        }
    }
}

// ---- damaged .npy files ----

/// 100 u32 keys in descending order, as a .npy (a 128-byte header, then 400 bytes of keys).
fn reversed_npy(dir: &Dir) -> Vec<u8> {
    let path = dir.path("reversed.npy");
    bitonic()
        .args(["gen", "-n", "100", "--pattern", "reversed", "--force"])
        .arg(&path)
        .assert()
        .success();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 128 + 400);
    bytes
}

/// A file named .npy must be a .npy: with its magic damaged it is an error naming the file,
/// not 132 raw u32 keys sorted. Other names and standard input are read by their first
/// bytes: a .npy under another name is still a .npy, raw keys are raw.
#[test]
fn a_npy_with_its_magic_damaged_is_refused() {
    let dir = Dir::new();
    let mut bytes = reversed_npy(&dir);
    let good = dir.path("keys.dat");
    std::fs::write(&good, &bytes).unwrap();
    bytes[1] = b'X'; // \x93XUMPY
    let damaged = dir.path("damaged.npy");
    std::fs::write(&damaged, &bytes).unwrap();
    let message = "damaged.npy: not a valid .npy file: it does not start with the .npy magic \
                   (\\x93NUMPY): the file is damaged, or holds raw keys under a .npy name";
    for command in ["sort", "topk"] {
        let mut cmd = bitonic();
        cmd.arg(command);
        if command == "topk" {
            cmd.args(["-k", "1"]);
        }
        cmd.arg(&damaged).arg("-o").arg(dir.path("out.raw"));
        cmd.assert()
            .code(1)
            .stderr(predicate::str::contains(message));
        assert!(!dir.path("out.raw").exists());
    }
    bitonic()
        .arg("verify")
        .arg(&damaged)
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(message));
    // A whole .npy under another name, and the damaged bytes under a raw name.
    let out = dir.path("sorted.npy");
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&good)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("sorted 100 u32 keys"));
    let mut ascending: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes[128..]);
    ascending.reverse();
    assert_eq!(read_npy::<u32>(&out).1, ascending);
    let raw = dir.path("damaged.raw");
    std::fs::write(&raw, &bytes).unwrap();
    bitonic()
        .args(["sort", "--backend", "cpu"])
        .arg(&raw)
        .arg("-o")
        .arg(dir.path("raw-out.raw"))
        .assert()
        .success()
        .stderr(predicate::str::contains("sorted 132 u32 keys"));
}

/// A .npy cut short says "truncated" wherever the cut is: in the magic, the preamble, the
/// header or the keys (not "failed to fill whole buffer").
#[test]
fn a_truncated_npy_says_so() {
    let dir = Dir::new();
    let bytes = reversed_npy(&dir);
    let cut = dir.path("cut.npy");
    for (at, message) in [
        (0, "cut.npy: truncated .npy file: it is empty"),
        (
            3,
            "cut.npy: truncated .npy file: it ends inside its header, after 3 bytes",
        ),
        (
            6,
            "cut.npy: truncated .npy file: it ends inside its header, after 6 bytes",
        ),
        (
            9,
            "cut.npy: truncated .npy file: it ends inside its header, after 9 bytes",
        ),
        (
            40,
            "cut.npy: truncated .npy file: it ends inside its header, after 40 of the header's \
             128 bytes",
        ),
        (
            128 + 10,
            "cut.npy: truncated .npy file: the header promises 100 keys (400 bytes) but the \
             file holds 10 bytes",
        ),
    ] {
        std::fs::write(&cut, &bytes[..at]).unwrap();
        fails_without_output(&["sort"], Some(&cut), &dir.path("out.npy"), message);
        bitonic()
            .arg("verify")
            .arg(&cut)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(message))
            .stderr(predicate::str::contains("fill whole buffer").not());
    }
    // Standard input has no name: its first bytes make it a .npy.
    bitonic()
        .args(["sort", "-", "-o", "-"])
        .write_stdin(bytes[..40].to_vec())
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "standard input: truncated .npy file: it ends inside its header, after 40 of",
        ));
}

/// Fortran order is valid .npy, but a 2-D array in it has no contiguous rows: refused as
/// unsupported, saying what to do. A 1-D array is laid out the same in either order.
#[test]
fn a_fortran_order_npy_is_unsupported() {
    let dir = Dir::new();
    let fortran =
        |shape: &str, keys: &[u32]| npy_in_order("<u4", true, shape, bytemuck::cast_slice(keys));
    let matrix = dir.path("matrix.npy");
    std::fs::write(&matrix, fortran("(2, 3)", &[3, 9, 1, 7, 2, 8])).unwrap();
    let assert = bitonic()
        .arg("sort")
        .arg(&matrix)
        .arg("-o")
        .arg(dir.path("out.npy"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "matrix.npy: a 2-D .npy array in Fortran (column-major) order is not supported: its \
             rows are not contiguous; save it in C order",
        ));
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(!stderr.contains("not a valid"), "{stderr}");
    assert!(!dir.path("out.npy").exists());
    let vector = dir.path("vector.npy");
    std::fs::write(&vector, fortran("(3,)", &[3, 1, 2])).unwrap();
    bitonic()
        .arg("sort")
        .arg(&vector)
        .arg("-o")
        .arg(dir.path("vector-out.npy"))
        .assert()
        .success();
    assert_eq!(read_npy::<u32>(&dir.path("vector-out.npy")).1, [1, 2, 3]);
}

// ---- odd destinations ----

/// A folder that takes no new file (here /sys, which refuses even root) is an error naming
/// the user's output, not the hidden temporary file the write would have made.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_folder_names_the_output_not_the_temporary_file() {
    let dir = Dir::new();
    let input = dir.path("in.raw");
    write_raw_u32(&input, &[3, 1, 2]);
    let output = Path::new("/sys/bitonic-out.raw");
    for command in [&["sort"][..], &["topk", "-k", "1"]] {
        bitonic()
            .args(command)
            .arg(&input)
            .arg("-o")
            .arg(output)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "/sys/bitonic-out.raw: cannot write in /sys: ",
            ))
            .stderr(predicate::str::contains(".bitonic-").not())
            .stderr(predicate::str::contains(".partial").not())
            .stderr(predicate::str::contains("at path").not());
    }
    bitonic()
        .args(["gen", "-n", "3"])
        .arg(output)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "/sys/bitonic-out.raw: cannot write in /sys: ",
        ))
        .stderr(predicate::str::contains(".bitonic-").not());
    assert!(!output.exists());
}

/// A path through a file (somefile/out.raw) says that the file is in the way, not that a
/// folder does not exist; for inputs too.
#[test]
fn a_file_where_a_folder_should_be() {
    let dir = Dir::new();
    let input = dir.path("in.raw");
    write_raw_u32(&input, &[3, 1, 2]);
    let file = dir.path("somefile");
    std::fs::write(&file, b"not a folder").unwrap();
    let in_the_way = format!("{} is a file, not a folder", file.display());
    for output in [file.join("out.raw"), file.join("sub").join("out.raw")] {
        let named = format!("{}: {in_the_way}", output.display());
        for command in [&["sort"][..], &["topk", "-k", "1"]] {
            bitonic()
                .args(command)
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .assert()
                .code(1)
                .stderr(predicate::str::contains(named.as_str()))
                .stderr(predicate::str::contains("does not exist").not());
        }
        bitonic()
            .args(["gen", "-n", "3", "-o"])
            .arg(&output)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(named.as_str()));
        let read = format!("{}: {in_the_way}", output.display());
        bitonic()
            .arg("verify")
            .arg(&output)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(read.as_str()));
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"not a folder");
}

// ---- verify's hint ----

/// A raw file read as u32 (no --dtype) that is not sorted gets a hint naming the default and
/// --dtype; a .npy, or a raw file whose type was given, does not.
#[test]
fn verify_hints_at_dtype_for_raw_files() {
    let dir = Dir::new();
    let floats = dir.path("floats.raw");
    std::fs::write(
        &floats,
        bytemuck::cast_slice::<f32, u8>(&[-2.0, -1.0, 0.5, 3.0]),
    )
    .unwrap();
    let hint = "is a raw file, so its keys were read as u32, the default; if it holds another \
                type, name it with --dtype (u32, i32, u64, i64, f32, f64, f16, bf16)";
    bitonic()
        .arg("verify")
        .arg(&floats)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not sorted"))
        .stderr(predicate::str::contains(format!(
            "hint: {}",
            floats.display()
        )))
        .stderr(predicate::str::contains(hint));
    bitonic()
        .args(["verify", "--dtype", "f32"])
        .arg(&floats)
        .assert()
        .success();
    let unsorted = dir.path("unsorted.raw");
    write_raw_u32(&unsorted, &[2, 1]);
    bitonic()
        .args(["verify", "--dtype", "u32"])
        .arg(&unsorted)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("hint").not());
    let npy = dir.path("unsorted.npy");
    write_npy_u32(&npy, "(2,)", &[2, 1]);
    bitonic()
        .arg("verify")
        .arg(&npy)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("not sorted"))
        .stderr(predicate::str::contains("hint").not());
}

// ---- symbolic links ----

/// Whether `dir` holds a temporary file.
fn holds_partial(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".bitonic-")
    })
}

/// -o on a symbolic link writes through it, as `sort -o` does: with --force, the link stays a
/// link and its target (relative to the link's folder, through a chain of links, or not yet
/// there) gets the keys, keeping its mode; without --force, the link counts as existing.
#[cfg(unix)]
#[test]
fn force_writes_through_a_symbolic_link() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let dir = Dir::new();
    let input = dir.path("in.raw");
    write_raw_u32(&input, &[3, 1, 2]);
    let (data, links) = (dir.path("data"), dir.path("links"));
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&links).unwrap();
    let target = data.join("keys.raw");
    write_raw_u32(&target, &[42]);
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = links.join("keys.raw");
    symlink("../data/keys.raw", &link).unwrap();
    let chain = dir.path("chain.raw");
    symlink(&link, &chain).unwrap();
    for (output, keys) in [(&link, [1, 2, 3]), (&chain, [3, 2, 1])] {
        let desc: &[&str] = if keys[0] == 3 { &["--desc"] } else { &[] };
        bitonic()
            .args(["sort", "--backend", "cpu"])
            .args(desc)
            .arg(&input)
            .arg("-o")
            .arg(output)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("exists; pass --force"));
        bitonic()
            .args(["sort", "--backend", "cpu", "--force"])
            .args(desc)
            .arg(&input)
            .arg("-o")
            .arg(output)
            .assert()
            .success();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::symlink_metadata(&chain)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../data/keys.raw")
        );
        assert_eq!(read_raw_u32(&target), keys);
        assert_eq!(mode(&target), 0o640, "the target keeps its mode");
    }
    // A dangling link: --force creates its target.
    let dangling = links.join("new.raw");
    symlink("../data/new.raw", &dangling).unwrap();
    bitonic()
        .args(["gen", "-n", "3", "--pattern", "sorted"])
        .arg(&dangling)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("exists; pass --force"));
    assert!(!data.join("new.raw").exists());
    bitonic()
        .args(["gen", "-n", "3", "--pattern", "sorted", "--force"])
        .arg(&dangling)
        .assert()
        .success();
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::metadata(data.join("new.raw")).unwrap().len(), 12);
    for folder in [dir.root(), &data, &links] {
        assert!(
            !holds_partial(folder),
            "{} holds a partial file",
            folder.display()
        );
    }
}

// ---- named values ----

/// Every option that takes a name (a backend, an algorithm, a key type, a pattern) lists the
/// names it accepts in --help and in the error for a bad one (exit 2); a --backend's
/// description names each of them too.
#[test]
fn named_options_list_what_they_accept() {
    const DTYPES: &str = "u32, i32, u64, i64, f32, f64, f16, bf16";
    const BACKENDS: &str = "auto, cpu, cpu-network, cpu-network-serial, cuda";
    const VERSIONS: &str = "v0, v1, v2, v3, v4, v5, tuned";
    let options = [
        ("sort", "--dtype", DTYPES),
        ("sort", "--backend", BACKENDS),
        ("sort", "--algo", VERSIONS),
        ("topk", "--dtype", DTYPES),
        ("topk", "--backend", BACKENDS),
        ("verify", "--dtype", DTYPES),
        ("gen", "--dtype", DTYPES),
        (
            "gen",
            "--pattern",
            "random, sorted, reversed, few-distinct, all-equal",
        ),
        ("demo", "--dtype", DTYPES),
        ("demo", "--backend", BACKENDS),
        ("demo", "--algo", VERSIONS),
        ("bench", "--dtype", DTYPES),
        ("bench", "--versions", VERSIONS),
        ("bench", "--algorithms", "merge-split, partition"),
        ("bench-topk", "--dtypes", "f32, bf16, f16"),
    ];
    for (command, option, names) in options {
        let listed = format!("[possible values: {names}]");
        let out = bitonic().args([command, "--help"]).assert().success();
        let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        // The option's entry: from its line to the next option's.
        let at = help
            .find(&format!("{option} <"))
            .unwrap_or_else(|| panic!("{command} {option}: not in {help}"));
        let end = help[at + 2..]
            .find("\n      -")
            .or_else(|| help[at + 2..].find("\n  -"))
            .map_or(help.len(), |e| at + 2 + e);
        let entry = help[at..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(entry.contains(&listed), "{command} {option}: {entry}");
        if option == "--backend" {
            let described = &entry[..entry.find("[default").unwrap()];
            for name in names.split(", ") {
                let named = described
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .any(|word| word == name);
                assert!(
                    named,
                    "{command} {option} does not describe {name}: {described}"
                );
            }
        }
        bitonic()
            .args([command, option, "bogus"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "invalid value 'bogus' for '{option} <"
            )))
            .stderr(predicate::str::contains(listed));
    }
}

// ---- k = 0 ----

/// -k 0 selects nothing, as torch.topk(x, 0) and the Python package do: empty outputs of the
/// right shape ((R, 0) for R rows, (0,) for one array; empty raw files), exit 0, whatever the
/// backend (none runs). A k past the row is still refused.
#[test]
fn topk_of_zero_keys_writes_empty_outputs() {
    let dir = Dir::new();
    let matrix = dir.path("matrix.npy");
    write_npy_u32(&matrix, "(2, 3)", &[3, 1, 2, 9, 7, 8]);
    let vector = dir.path("vector.npy");
    write_npy_u32(&vector, "(3,)", &[3, 1, 2]);
    for (input, shape) in [(&matrix, "(2, 0)"), (&vector, "(0,)")] {
        for backend in ["auto", "cpu", "cuda"] {
            let (top, at) = (dir.path("top.npy"), dir.path("at.npy"));
            bitonic()
                .args(["topk", "-k", "0", "--force", "--backend", backend])
                .arg(input)
                .arg("-o")
                .arg(&top)
                .arg("--indices")
                .arg(&at)
                .assert()
                .success()
                .stderr(predicate::str::contains("nothing to select (-k 0)"));
            for (path, descr) in [(&top, "<u4"), (&at, "<u4")] {
                let (header, data) = read_npy::<u32>(path);
                assert!(header.contains(&format!("'shape': {shape}")), "{header}");
                assert!(header.contains(&format!("'descr': '{descr}'")), "{header}");
                assert!(data.is_empty());
            }
        }
    }
    let raw = dir.path("keys.raw");
    write_raw_u32(&raw, &[3, 1, 2, 9, 7, 8]);
    let (top, at) = (dir.path("top.raw"), dir.path("at.raw"));
    bitonic()
        .args(["topk", "-k", "0", "--rows", "2"])
        .arg(&raw)
        .arg("-o")
        .arg(&top)
        .arg("--indices")
        .arg(&at)
        .assert()
        .success();
    assert_eq!(std::fs::metadata(&top).unwrap().len(), 0);
    assert_eq!(std::fs::metadata(&at).unwrap().len(), 0);
    fails_without_output(
        &["topk", "-k", "4"],
        Some(&matrix),
        &dir.path("bad.npy"),
        "-k 4 must be from 0 to the row length, 3",
    );
}
