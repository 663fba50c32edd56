//! Batch scripts of jobs slurmdash did not launch, kept on this machine while slurmctld still
//! knows the job, so that `L` can relaunch such a job from its own script long after it ended
//! (slurmctld forgets a finished job after MinJobAge, 300 s by default, and most clusters do
//! not store scripts in slurmdbd, so `sacct -B` has none).
//!
//! One file a job: `<state dir>/scripts/<cluster>/<job id>-<submit time>.sh`, mode 0600,
//! written atomically. The submit time tells a job from a later one that got the same id.
//! Files older than [`KEEP_DAYS`] days are removed when another is written.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::NaiveDateTime;

/// How long a kept script stays.
pub const KEEP_DAYS: u64 = 30;
/// A larger script is not kept (sbatch's own default limit is 4 MiB).
pub const MAX_BYTES: usize = 4 << 20;

pub struct KeptScripts {
    dir: PathBuf,
}

/// A script read back, with when it was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub script: String,
    pub kept_at: SystemTime,
}

impl KeptScripts {
    /// The store under a state directory (the launch registry's).
    pub fn under(state_dir: &Path) -> KeptScripts {
        KeptScripts {
            dir: state_dir.join("scripts"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, cluster: &str, id: &str, submit: NaiveDateTime) -> PathBuf {
        self.dir.join(safe_name(cluster)).join(format!(
            "{}-{}.sh",
            safe_name(id),
            submit.format("%Y%m%dT%H%M%S")
        ))
    }

    pub fn has(&self, cluster: &str, id: &str, submit: NaiveDateTime) -> bool {
        self.file(cluster, id, submit).is_file()
    }

    /// The kept script of job `id` submitted at `submit`, if any.
    pub fn get(&self, cluster: &str, id: &str, submit: NaiveDateTime) -> Option<Kept> {
        let path = self.file(cluster, id, submit);
        let bytes = fs::read(&path).ok()?;
        let kept_at = fs::metadata(&path)
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        Some(Kept {
            script: String::from_utf8_lossy(&bytes).into_owned(),
            kept_at,
        })
    }

    /// Keeps `script` (temp file, fsync, rename; mode 0600) and removes this cluster's
    /// scripts older than [`KEEP_DAYS`].
    pub fn keep(
        &self,
        cluster: &str,
        id: &str,
        submit: NaiveDateTime,
        script: &str,
    ) -> Result<PathBuf, String> {
        if script.len() > MAX_BYTES {
            return Err(format!(
                "the script is {} bytes, more than the {MAX_BYTES} kept",
                script.len()
            ));
        }
        let path = self.file(cluster, id, submit);
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        let err = |what: &str, e: std::io::Error| format!("{what} {}: {e}", parent.display());
        fs::create_dir_all(&parent).map_err(|e| err("creating", e))?;
        let _ = fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700));
        let _ = fs::set_permissions(&parent, fs::Permissions::from_mode(0o700));
        let tmp = parent.join(format!(".keep.{}.tmp", std::process::id()));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| err("writing in", e))?;
        f.write_all(script.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| err("writing in", e))?;
        drop(f);
        fs::rename(&tmp, &path).map_err(|e| err("renaming in", e))?;
        self.prune(&parent, SystemTime::now());
        Ok(path)
    }

    /// Removes the kept scripts in `dir` older than [`KEEP_DAYS`] at `now`.
    fn prune(&self, dir: &Path, now: SystemTime) {
        let limit = Duration::from_secs(KEEP_DAYS * 86_400);
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > limit);
            let ours = e.file_name().to_string_lossy().ends_with(".sh");
            if old && ours {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// A file name for any cluster name or job id: bytes other than ASCII letters, digits, `_`
/// and `-` (and a leading `.`) as `%XX`.
fn safe_name(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && !out.is_empty()) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push_str("%00");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    #[test]
    fn a_kept_script_is_read_back_for_the_same_job_only() {
        let d = tempfile::tempdir().unwrap();
        let k = KeptScripts::under(d.path());
        let t = at("2026-11-24T10:00:00");
        let script = "#!/bin/bash\n#SBATCH -c 2\necho 'it''s' \"$x\"\n\u{fffd} odd\n";
        assert!(!k.has("dev", "42", t));
        let path = k.keep("dev", "42", t, script).unwrap();
        assert!(k.has("dev", "42", t));
        assert_eq!(k.get("dev", "42", t).unwrap().script, script);
        // The same id submitted at another time is another job.
        assert_eq!(k.get("dev", "42", at("2026-11-25T10:00:00")), None);
        // Another cluster's job 42 is another job.
        assert_eq!(k.get("other", "42", t), None);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = fs::metadata(k.dir()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dmode, 0o700);
        // Keeping again replaces it.
        k.keep("dev", "42", t, "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(k.get("dev", "42", t).unwrap().script, "#!/bin/sh\ntrue\n");
    }

    #[test]
    fn odd_cluster_names_stay_inside_the_store() {
        let d = tempfile::tempdir().unwrap();
        let k = KeptScripts::under(d.path());
        let t = at("2026-11-24T10:00:00");
        for name in ["../../etc", "a/b", ".", "..", "", "c\nd", "ü"] {
            let p = k.keep(name, "7_[1-3]", t, "x\n").unwrap();
            assert!(p.starts_with(k.dir()), "{name:?} -> {}", p.display());
            assert_eq!(p.parent().unwrap().parent().unwrap(), k.dir(), "{name:?}");
            assert_eq!(k.get(name, "7_[1-3]", t).unwrap().script, "x\n");
        }
        assert_eq!(safe_name("../x"), "%2E.%2Fx");
        assert_eq!(safe_name("dev.b-1_x"), "dev.b-1_x");
    }

    #[test]
    fn too_large_a_script_is_refused_and_old_ones_are_pruned() {
        let d = tempfile::tempdir().unwrap();
        let k = KeptScripts::under(d.path());
        let t = at("2026-11-24T10:00:00");
        let big = "x".repeat(MAX_BYTES + 1);
        let e = k.keep("dev", "1", t, &big).unwrap_err();
        assert!(e.contains("more than the"), "{e}");
        assert!(!k.has("dev", "1", t));
        let old = k.keep("dev", "2", t, "old\n").unwrap();
        let fresh = k.keep("dev", "3", t, "new\n").unwrap();
        let later = SystemTime::now() + Duration::from_secs((KEEP_DAYS + 1) * 86_400);
        // Seen from 31 days on: the first is older than the limit, the second was written then.
        let f = fs::File::options().write(true).open(&fresh).unwrap();
        f.set_modified(later).unwrap();
        k.prune(old.parent().unwrap(), later);
        assert!(!old.exists());
        assert!(fresh.exists());
    }
}
