//! What the subcommands share: a remote command's output checked, and text from the
//! cluster made safe and laid out for the terminal.

use color_eyre::eyre::{eyre, Result};

use crate::config::Cluster;
use crate::remote::{Remote, RunOutput};

/// Runs `argv` on the cluster and returns its stdout; a non-zero exit becomes an error that
/// names the command, the host and what the command printed.
pub async fn run_checked(
    remote: &dyn Remote,
    cluster: &Cluster,
    argv: &[String],
) -> Result<String> {
    let out = remote
        .run(argv, None, cluster.settings.command_timeout())
        .await?;
    check_output(remote, argv, out)
}

pub fn check_output(remote: &dyn Remote, argv: &[String], out: RunOutput) -> Result<String> {
    if out.success() {
        return Ok(out.stdout_lossy());
    }
    Err(eyre!(crate::io::fetch::failure(remote, argv, &out)))
}

/// A table of several clusters' rows (`table`: a header line, then one line per row in the
/// order of `names`) with each line led by its cluster's name under CLUSTER.
pub fn with_cluster_column(names: &[&str], table: &str) -> String {
    let width = names
        .iter()
        .map(|c| printable(c).chars().count())
        .max()
        .unwrap_or(0)
        .max("CLUSTER".len());
    let mut out = String::new();
    let mut names =
        std::iter::once("CLUSTER".to_string()).chain(names.iter().map(|c| printable(c)));
    for line in table.lines() {
        let name = names.next().unwrap_or_default();
        out.push_str(&format!("{name:<width$}  {line}\n"));
    }
    out
}

/// Text from the cluster made safe to print on a terminal: control characters (escape
/// sequences included) become `?`.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}
