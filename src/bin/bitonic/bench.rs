use anyhow::Result;
use std::process::ExitCode;
#[derive(clap::Args)]
pub struct Args {}
pub fn run(_a: Args) -> Result<ExitCode> {
    anyhow::bail!("not yet")
}
