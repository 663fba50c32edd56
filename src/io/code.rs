//! The code snapshot's I/O (see `launch::code`): reading the git repository on this
//! machine, and staging the snapshot on the login node once per content.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::io::fetch::failure;
use crate::launch::code::{self, File, Ignore, Kind, Snapshot};
use crate::remote::Remote;

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// The snapshot of the git repository holding `dir` (this process's directory): the files
/// of `git ls-files --cached --others --exclude-standard` as they are on disk (deleted ones
/// left out), minus `.slurmdashignore`, at most `max_mb` MiB.
pub fn snapshot(dir: &Path, max_mb: u32) -> Result<Snapshot, String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        format!(
            "code = \"snapshot\" needs a git repository, and {} is not in one: run slurmdash from your repository, or set code = \"none\"",
            dir.display()
        )
    })?;
    let top = std::path::PathBuf::from(
        String::from_utf8_lossy(&top)
            .trim_end_matches('\n')
            .to_string(),
    );
    let subdir = String::from_utf8_lossy(&git(dir, &["rev-parse", "--show-prefix"])?)
        .trim_end_matches('\n')
        .trim_end_matches('/')
        .to_string();
    let commit = git(&top, &["rev-parse", "HEAD"]).map_err(|e| {
        format!(
            "the repository at {} has no commit yet ({e}): commit once before launching its code",
            top.display()
        )
    })?;
    let commit = String::from_utf8_lossy(&commit).trim().to_string();
    let dirty = code::dirty_count(&git(&top, &["status", "--porcelain", "-z"])?);
    let listed = git(
        &top,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
    )?;
    let ignore = match std::fs::read_to_string(top.join(code::IGNORE_FILE)) {
        Ok(t) => Ignore::parse(&t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ignore::default(),
        Err(e) => {
            return Err(format!(
                "reading {}: {e}",
                top.join(code::IGNORE_FILE).display()
            ))
        }
    };
    let mut paths: Vec<&[u8]> = listed
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .collect();
    paths.sort();
    paths.dedup();
    let mut files = Vec::new();
    for raw in paths {
        let Ok(path) = std::str::from_utf8(raw) else {
            return Err(format!(
                "{}: a file name that is not UTF-8 ({}): rename it or list it in {}",
                top.display(),
                String::from_utf8_lossy(raw),
                code::IGNORE_FILE
            ));
        };
        if path == code::IGNORE_FILE || ignore.ignores(path) {
            continue;
        }
        let full = top.join(path);
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", full.display())),
        };
        let kind = if meta.file_type().is_symlink() {
            let t = std::fs::read_link(&full).map_err(|e| format!("{}: {e}", full.display()))?;
            Kind::Link(t.to_string_lossy().into_owned())
        } else if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            Kind::Regular {
                executable: meta.permissions().mode() & 0o111 != 0,
                bytes: std::fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))?,
            }
        } else {
            // A submodule's directory: not copied.
            continue;
        };
        files.push(File {
            path: path.to_string(),
            kind,
        });
    }
    let bytes = code::check_size(&files, max_mb)?;
    let hash = code::content_hash(&files);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(Snapshot {
        commit,
        dirty,
        hash,
        subdir,
        files: files.len(),
        bytes,
        tar: code::tar(&files, now),
        reused: false,
    })
}

/// How the snapshot reached the job directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Staged {
    /// `<results_root>/.code/<hash>` was there already: nothing was uploaded.
    Reused(String),
    Uploaded(String),
}

/// Copies the snapshot into `<job_dir>/code` from `<results_root>/.code/<hash>`, uploading
/// it there first (the tar on the command's stdin) only when it is not there yet. Also says
/// how many old snapshots the command removed ([`code::KEEP_DAYS`]).
pub async fn stage(
    remote: &dyn Remote,
    results_root: &str,
    job_dir: &str,
    s: &Snapshot,
    t: Duration,
    upload_timeout: Duration,
) -> Result<(Staged, usize), String> {
    // The copy into the job directory can take longer than a command.
    let argv = code::stage_argv(results_root, &s.hash, job_dir, false);
    let out = remote
        .run(&argv, None, t.max(upload_timeout))
        .await
        .map_err(|e| e.to_string())?;
    let out = if out.code == Some(code::ABSENT_EXIT) && s.reused {
        return Err(format!(
            "the code snapshot {} is no longer on the cluster ({} is gone): launch with the current code instead (the form's `code snapshot` field: snapshot; `rerun --code current`)",
            code::summary(&s.commit, s.dirty),
            code::cache_dir(results_root, &s.hash)
        ));
    } else if out.code == Some(code::ABSENT_EXIT) {
        let argv = code::stage_argv(results_root, &s.hash, job_dir, true);
        let up = remote
            .run(&argv, Some(&s.tar), upload_timeout)
            .await
            .map_err(|e| format!("uploading the code snapshot: {e}"))?;
        if !up.success() {
            return Err(format!(
                "staging the code snapshot: {}",
                failure(remote, &argv, &up)
            ));
        }
        up
    } else if !out.success() {
        return Err(format!(
            "staging the code snapshot: {}",
            failure(remote, &argv, &out)
        ));
    } else {
        out
    };
    let text = out.stdout_lossy();
    let pruned = text
        .lines()
        .find_map(|l| l.strip_prefix("slurmdash-code-pruned "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("slurmdash-code "))
        .ok_or_else(|| format!("staging the code snapshot printed: {}", text.trim()))?;
    match line.split_once(' ') {
        Some(("reused", d)) => Ok((Staged::Reused(d.to_string()), pruned)),
        Some(("uploaded", d)) => Ok((Staged::Uploaded(d.to_string()), pruned)),
        _ => Err(format!("staging the code snapshot printed: {line}")),
    }
}
