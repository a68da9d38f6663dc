//! What the CLI's test files share: the binary under test and a scratch folder.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The binary under test: `BITONIC_BIN`, else `../bin/bitonic` beside this test executable (the
/// layout of a `.gpu/` bundle on a GPU host), else the one cargo built. Its kernel cache is
/// off (`BITONIC_CACHE_DIR` empty), so tests share no compiled state.
pub fn bitonic() -> Command {
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
    cmd.env("BITONIC_CACHE_DIR", "");
    cmd
}

/// A scratch folder, removed when dropped.
pub struct Dir(tempfile::TempDir);

impl Dir {
    pub fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    /// The folder itself.
    pub fn root(&self) -> &Path {
        self.0.path()
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}
