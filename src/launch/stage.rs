//! Staging on the login node, one remote command per step, each a fixed script that gets
//! paths and values as separate arguments (never pasted into shell text): create the job
//! directory, write files through stdin, check input paths, submit held, create the log
//! directory and release. Secrets travel only on the SSH channel's stdin.

use std::time::Duration;

use crate::launch::script::Layout;
use crate::remote::Remote;
use crate::worker::fetch::failure;

/// The sub-directories of a job directory (TAO's layout).
pub const SUBDIRS: [&str; 5] = ["specs", "env", "meta", "sbatch", "slurm-logs"];

use crate::worker::fetch::stdout_of as run_ok;

fn sh(script: &str, args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    v.extend(args);
    v
}

pub fn mkdirs_argv(layout: &Layout) -> Vec<String> {
    let mut v = vec!["mkdir".to_string(), "-p".into(), "--".into()];
    v.extend(SUBDIRS.iter().map(|d| format!("{}/{d}", layout.job_dir)));
    v
}

/// Writes stdin to `path` (mode 600: the job directory may be on a shared filesystem).
pub fn write_argv(path: &str) -> Vec<String> {
    sh("umask 077 && cat > \"$1\"", [path.to_string()])
}

/// Prints each path that does not exist, one per line.
pub fn missing_argv(paths: &[String]) -> Vec<String> {
    sh(
        "for p do [ -e \"$p\" ] || printf '%s\\n' \"$p\"; done",
        paths.iter().cloned(),
    )
}

/// Reads `NAME=value` lines from stdin into its own environment (shell built-ins only: no
/// value reaches an argv), submits held with `--export=ALL`, creates the log directory
/// Slurm will not create, and releases. Prints the job id. A failure after submitting
/// cancels the held job.
pub const SUBMIT_SCRIPT: &str = r#"script=$1; logs=$2; name=$3
while IFS= read -r line; do
  case $line in *=*) export "$line" ;; esac
done
out=$(sbatch --parsable --hold --export=ALL "$script") || exit 1
id=${out%%;*}
case $id in ''|*[!0-9]*) echo "sbatch printed: $out" >&2; exit 1 ;; esac
if ! mkdir -p "$logs/$name-$id"; then
  scancel "$id"; echo "cannot create $logs/$name-$id: job $id cancelled" >&2; exit 1
fi
if ! scontrol release "$id"; then
  scancel "$id"; echo "scontrol release $id failed: job $id cancelled" >&2; exit 1
fi
echo "$id""#;

pub fn submit_argv(layout: &Layout, name: &str) -> Vec<String> {
    sh(
        SUBMIT_SCRIPT,
        [
            layout.script_path(),
            format!("{}/slurm-logs", layout.job_dir),
            name.to_string(),
        ],
    )
}

/// The stdin for [`SUBMIT_SCRIPT`]: one `NAME=value` line per secret.
pub fn secrets_stdin(secrets: &[(String, String)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (k, v) in secrets {
        if v.contains(['\n', '\r', '\0']) {
            return Err(format!(
                "secret {k} contains a line break, which cannot be passed to sbatch this way"
            ));
        }
        out.extend_from_slice(format!("{k}={v}\n").as_bytes());
    }
    Ok(out)
}

pub async fn make_dirs(remote: &dyn Remote, layout: &Layout, t: Duration) -> Result<(), String> {
    run_ok(remote, &mkdirs_argv(layout), None, t)
        .await
        .map(|_| ())
}

pub async fn write_file(
    remote: &dyn Remote,
    path: &str,
    content: &[u8],
    t: Duration,
) -> Result<(), String> {
    run_ok(remote, &write_argv(path), Some(content), t)
        .await
        .map(|_| ())
}

/// Checks on the login node that every input exists. A missing one stops the submission
/// with the path named; one that exists on this machine but not on the cluster is called
/// out as laptop-only.
pub async fn check_inputs(
    remote: &dyn Remote,
    inputs: &[String],
    t: Duration,
) -> Result<(), String> {
    if inputs.is_empty() {
        return Ok(());
    }
    let out = run_ok(remote, &missing_argv(inputs), None, t).await?;
    let host = remote.host().unwrap_or_else(|| "the login node".into());
    let missing: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(|p| {
            if std::path::Path::new(p).exists() {
                format!("{p} (it exists on this machine only: copy it to the cluster's shared filesystem)")
            } else {
                p.to_string()
            }
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "input path not found on {host}: {}; nothing was submitted",
            missing.join(", ")
        ))
    }
}

/// Submits the staged script; returns the Slurm job id.
pub async fn submit_held(
    remote: &dyn Remote,
    layout: &Layout,
    name: &str,
    secrets: &[(String, String)],
    t: Duration,
) -> Result<u64, String> {
    let stdin = secrets_stdin(secrets)?;
    let out = run_ok(remote, &submit_argv(layout, name), Some(&stdin), t).await?;
    out.trim()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "submitting {} printed no job id: {out}",
                layout.script_path()
            )
        })
}

/// `sbatch --test-only` with the script on stdin: nothing is staged or queued.
pub fn test_only_argv() -> Vec<String> {
    vec!["sbatch".into(), "--test-only".into()]
}

/// The scheduler's answer to `--test-only`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    pub start: String,
    pub nodes: String,
    pub partition: String,
    /// The whole line sbatch printed.
    pub text: String,
}

/// `sbatch: Job 828 to start at 2026-11-23T10:54:39 using 1 processors on nodes vm in
/// partition short` (on stderr).
pub fn parse_test_only(out: &str) -> Option<Estimate> {
    let line = out.lines().find(|l| l.contains(" to start at "))?;
    let after = |key: &str| {
        line.split_once(key)
            .map(|(_, r)| r.split_whitespace().next().unwrap_or("").to_string())
    };
    Some(Estimate {
        start: after(" to start at ")?,
        nodes: after(" on nodes ").unwrap_or_default(),
        partition: after(" in partition ").unwrap_or_default(),
        text: line.trim().trim_start_matches("sbatch: ").to_string(),
    })
}

pub async fn test_only(remote: &dyn Remote, script: &str, t: Duration) -> Result<Estimate, String> {
    let argv = test_only_argv();
    let out = remote
        .run(&argv, Some(script.as_bytes()), t)
        .await
        .map_err(|e| e.to_string())?;
    let text = format!("{}{}", out.stderr_lossy(), out.stdout_lossy());
    match parse_test_only(&text) {
        Some(e) if out.success() => Ok(e),
        _ => Err(failure(remote, &argv, &out)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn test_only_reply() {
        let e = parse_test_only("sbatch: Job 828 to start at 2026-11-23T10:54:39 using 1 processors on nodes vm in partition short\n").unwrap();
        assert_eq!(
            (e.start.as_str(), e.nodes.as_str(), e.partition.as_str()),
            ("2026-11-23T10:54:39", "vm", "short")
        );
        assert!(parse_test_only(
            "allocation failure: Requested node configuration is not available"
        )
        .is_none());
    }

    #[test]
    fn secrets_go_to_stdin_never_to_argv() {
        let layout = Layout::new("/lustre/r", "id1");
        let argv = submit_argv(&layout, "train");
        let secrets = vec![("HF_TOKEN".to_string(), "hf_s3cr3t value'\"$x".to_string())];
        let stdin = secrets_stdin(&secrets).unwrap();
        assert!(argv.iter().all(|a| !a.contains("s3cr3t")));
        assert_eq!(stdin, b"HF_TOKEN=hf_s3cr3t value'\"$x\n");
        assert!(secrets_stdin(&[("A".into(), "x\ny".into())]).is_err());
        assert_eq!(argv[4], "/lustre/r/id1/sbatch/job_id1.sbatch");
    }
}
