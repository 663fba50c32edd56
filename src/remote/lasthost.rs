//! The login host that last worked for each cluster, so the next slurmdash tries it first:
//! `last-hosts.json` in the state directory (beside the registry). Written atomically (temp
//! file, fsync, rename) under a lock, so two processes never lose each other's entries.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
struct File1 {
    version: u32,
    /// Cluster name -> host.
    clusters: BTreeMap<String, String>,
}

fn path(dir: &Path) -> PathBuf {
    dir.join("last-hosts.json")
}

fn read(dir: &Path) -> File1 {
    fs::read_to_string(path(dir))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The host that last worked for `cluster`, if one was recorded.
pub fn last_host(dir: &Path, cluster: &str) -> Option<String> {
    read(dir).clusters.remove(cluster)
}

/// `hosts` with the one that last worked first, the others in their configured order.
pub fn ordered(hosts: &[String], last: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(hosts.len());
    if let Some(l) = last.filter(|l| hosts.iter().any(|h| h == l)) {
        out.push(l.to_string());
    }
    out.extend(hosts.iter().filter(|h| Some(h.as_str()) != last).cloned());
    out
}

/// Records `host` as the one that worked for `cluster` (nothing is written if it already is).
pub fn remember(dir: &Path, cluster: &str, host: &str) -> std::io::Result<()> {
    if last_host(dir, cluster).as_deref() == Some(host) {
        return Ok(());
    }
    fs::create_dir_all(dir)?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("last-hosts.lock"))?;
    // SAFETY: the fd belongs to `lock`, open until the end of this function (closing it
    // releases the lock).
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut f = read(dir);
    f.version = 1;
    f.clusters.insert(cluster.to_string(), host.to_string());
    let text = serde_json::to_string_pretty(&f).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!(".last-hosts.{}.tmp", std::process::id()));
    {
        let mut t = fs::File::create(&tmp)?;
        t.write_all(text.as_bytes())?;
        t.sync_all()?;
    }
    fs::rename(&tmp, path(dir))?;
    fs::File::open(dir)?.sync_all()?;
    drop(lock);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_last_good_host_goes_first_and_the_rest_keep_their_order() {
        let h = hosts(&["a", "b", "c"]);
        assert_eq!(ordered(&h, Some("c")), ["c", "a", "b"]);
        assert_eq!(ordered(&h, Some("a")), ["a", "b", "c"]);
        assert_eq!(ordered(&h, None), ["a", "b", "c"]);
        // A host no longer configured is ignored.
        assert_eq!(ordered(&h, Some("gone")), ["a", "b", "c"]);
    }

    #[test]
    fn remembered_per_cluster_across_processes() {
        let t = tempfile::tempdir().expect("tempdir");
        let dir = t.path().join("state");
        assert_eq!(last_host(&dir, "polar"), None);
        remember(&dir, "polar", "login2").expect("write");
        remember(&dir, "dev", "d1").expect("write");
        assert_eq!(last_host(&dir, "polar").as_deref(), Some("login2"));
        assert_eq!(last_host(&dir, "dev").as_deref(), Some("d1"));
        remember(&dir, "polar", "login1").expect("write");
        assert_eq!(last_host(&dir, "polar").as_deref(), Some("login1"));
        // No temp file is left beside it.
        let names: Vec<String> = fs::read_dir(&dir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        // A damaged file is treated as empty and replaced on the next success.
        fs::write(path(&dir), "{not json").expect("write");
        assert_eq!(last_host(&dir, "polar"), None);
        remember(&dir, "polar", "login2").expect("write");
        assert_eq!(last_host(&dir, "polar").as_deref(), Some("login2"));
    }
}
