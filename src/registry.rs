//! The local record of jobs slurmdash launched: one JSON file under the XDG state directory
//! (`$XDG_STATE_HOME/slurmdash/registry.json`, or `$SLURMDASH_STATE_DIR`). Every change
//! happens under an exclusive lock file and is written atomically (temp file in the same
//! directory, fsync, rename, fsync of the directory), so a crash or kill -9 leaves either the
//! old or the new file, and two dashboards never both record the same retry. The directory
//! is kept 0700 and every file in it is written 0600, without following links: the launches,
//! their job directories and the last launch's values are nobody else's business.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One submission of a launch (the first, or a retry of the staged script).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub job_id: u64,
    pub submitted_at: DateTime<Utc>,
    /// Final Slurm state once known (e.g. `COMPLETED`, `NODE_FAIL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub local_id: String,
    pub cluster: String,
    /// The latest attempt's Slurm job id.
    pub job_id: u64,
    pub job_dir: String,
    pub name: String,
    pub submitted_at: DateTime<Utc>,
    #[serde(default)]
    pub template: Option<String>,
    /// The staged script on the cluster: a retry re-submits it.
    pub script: String,
    pub attempts: Vec<Attempt>,
    /// The names of the secrets the launch passed (never values). A retry passes exactly
    /// these again, read from this machine's environment; nothing on the cluster can add one.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// sha256 of the staged script as submitted; a retry refuses a script that differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// sha256 of `specs/launch.json` as staged at launch. The job (or anyone who can write
    /// its directory) can rewrite the cluster's copy, which `L` reads: when that copy no
    /// longer has this hash, the form says so and asks before it submits. None for
    /// launches recorded by older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_sha256: Option<String>,
    /// Submitted with `--requeue`: Slurm itself requeues it after a node failure or
    /// preemption, so slurmdash does not also resubmit it then.
    #[serde(default)]
    pub requeue: bool,
    /// A retry guard on the cluster retries this launch (see `launch::guard`): the
    /// dashboard only reads its chain and never resubmits it itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<GuardRecord>,
    /// A sweep's runs by array index (`LR=1e-3 BATCH=32`), as launched: the detail shows
    /// each task's values. Empty: not a sweep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<String>,
    /// The code snapshot the launch carried (`[launch] code = "snapshot"`); None: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeRecord>,
}

/// The code a launch carried: the repository's commit, how many paths differed from it
/// (`git status`), and the content hash naming `<results_root>/.code/<hash>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeRecord {
    pub commit: String,
    pub dirty: u32,
    pub hash: String,
    /// The repository's sub-directory the snapshot was made from (`""`: its root), where
    /// the job ran: a relaunch of the same snapshot runs there too.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subdir: String,
}

/// `code abc1234 + 3 changed files`, `code abc1234` (see `launch::code`).
pub fn code_summary(commit: &str, dirty: u32) -> String {
    if commit.is_empty() {
        // A record that kept only the content hash.
        return "code snapshot".into();
    }
    let short: String = commit.chars().take(7).collect();
    match dirty {
        0 => format!("code {short}"),
        1 => format!("code {short} + 1 changed file"),
        n => format!("code {short} + {n} changed files"),
    }
}

/// What the dashboard last read of a guarded launch's `meta/chain.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardRecord {
    /// The chain's last decision, as the detail pane shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File1 {
    version: u32,
    entries: Vec<Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("registry {path}: {reason}")]
    Io { path: PathBuf, reason: String },
    #[error("registry {path} is not valid JSON ({reason}); move it aside to start a new one")]
    Corrupt { path: PathBuf, reason: String },
    #[error("no launch `{0}` in the registry")]
    Unknown(String),
}

pub struct Registry {
    dir: PathBuf,
}

/// `$SLURMDASH_STATE_DIR`, else `$XDG_STATE_HOME/slurmdash` (`~/.local/state/slurmdash`).
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SLURMDASH_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    directories::ProjectDirs::from("", "", "slurmdash")
        .and_then(|d| d.state_dir().map(Path::to_path_buf))
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state/slurmdash"))
        })
        .unwrap_or_else(|| PathBuf::from(".slurmdash-state"))
}

/// An exclusive flock held until dropped.
struct Lock(File);

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by self.0 and still open.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl Registry {
    pub fn open(dir: impl Into<PathBuf>) -> Registry {
        Registry { dir: dir.into() }
    }
    pub fn open_default() -> Registry {
        Registry::open(default_dir())
    }
    pub fn path(&self) -> PathBuf {
        self.dir.join("registry.json")
    }
    /// The state directory the registry lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, what: &str, e: std::io::Error) -> RegistryError {
        RegistryError::Io {
            path: self.path(),
            reason: format!("{what}: {e}"),
        }
    }

    /// Creates the state directory 0700 (its missing parents too), and takes group and
    /// other access away from one of ours that an earlier version left open.
    fn make_dir(&self) -> Result<(), RegistryError> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| self.io("creating the directory", e))?;
        let m = fs::metadata(&self.dir).map_err(|e| self.io("reading the directory", e))?;
        // SAFETY: geteuid has no preconditions.
        if m.mode() & 0o077 != 0 && m.uid() == unsafe { libc::geteuid() } {
            fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| self.io("making the directory private (chmod 700)", e))?;
        }
        Ok(())
    }

    fn lock(&self) -> Result<Lock, RegistryError> {
        use std::os::unix::fs::OpenOptionsExt;
        self.make_dir()?;
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.dir.join("registry.lock"))
            .map_err(|e| self.io("opening the lock file", e))?;
        // SAFETY: a valid open fd.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(self.io("locking", std::io::Error::last_os_error()));
        }
        Ok(Lock(f))
    }

    /// Every entry, oldest first. A missing file is an empty registry.
    pub fn load(&self) -> Result<Vec<Entry>, RegistryError> {
        Ok(self.read()?.entries)
    }

    fn read(&self) -> Result<File1, RegistryError> {
        let path = self.path();
        match fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| RegistryError::Corrupt {
                path,
                reason: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File1 {
                version: 1,
                entries: Vec::new(),
            }),
            Err(e) => Err(self.io("reading", e)),
        }
    }

    fn write(&self, f: &File1) -> Result<(), RegistryError> {
        let bytes = serde_json::to_vec_pretty(f).map_err(|e| RegistryError::Io {
            path: self.path(),
            reason: e.to_string(),
        })?;
        self.write_atomic("registry.json", &bytes)
    }

    /// Temp file (0600, new, never through a link) in the same directory, fsync, rename over
    /// `name`, fsync the directory.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), RegistryError> {
        use std::os::unix::fs::OpenOptionsExt;
        self.make_dir()?;
        let tmp = self.dir.join(format!(".{name}.{}.tmp", std::process::id()));
        // One a crashed process of the same pid left behind.
        let _ = fs::remove_file(&tmp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(|e| self.io("creating a temp file", e))?;
        file.write_all(bytes)
            .and_then(|_| file.sync_all())
            .map_err(|e| self.io("writing a temp file", e))?;
        drop(file);
        fs::rename(&tmp, self.dir.join(name)).map_err(|e| self.io("renaming the temp file", e))?;
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Remembers the last launch's values (the form re-opens with them).
    pub fn save_last<T: Serialize>(&self, value: &T) -> Result<(), RegistryError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| RegistryError::Io {
            path: self.dir.join("last-launch.json"),
            reason: e.to_string(),
        })?;
        let _lock = self.lock()?;
        self.write_atomic("last-launch.json", &bytes)
    }

    /// The last launch's values; None when there are none (or they no longer parse).
    pub fn load_last<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        let b = fs::read(self.dir.join("last-launch.json")).ok()?;
        serde_json::from_slice(&b).ok()
    }

    /// Records a new launch (replacing an entry with the same local id).
    pub fn add(&self, entry: Entry) -> Result<(), RegistryError> {
        let _lock = self.lock()?;
        let mut f = self.read()?;
        f.version = 1;
        f.entries.retain(|e| e.local_id != entry.local_id);
        f.entries.push(entry);
        self.write(&f)
    }

    /// Forgets a launch that was never queued (its submission was refused).
    pub fn remove(&self, local_id: &str) -> Result<bool, RegistryError> {
        let _lock = self.lock()?;
        let mut f = self.read()?;
        let before = f.entries.len();
        f.entries.retain(|e| e.local_id != local_id);
        if f.entries.len() == before {
            return Ok(false);
        }
        self.write(&f)?;
        Ok(true)
    }

    /// Compare-and-set: applies `change` to the entry only if it still has
    /// `expected_attempts` attempts, all under the lock. Returns Ok(false) when another
    /// process got there first (e.g. both dashboards saw the same failure and only one may
    /// resubmit).
    pub fn update(
        &self,
        local_id: &str,
        expected_attempts: usize,
        change: impl FnOnce(&mut Entry),
    ) -> Result<bool, RegistryError> {
        let _lock = self.lock()?;
        let mut f = self.read()?;
        let e = f
            .entries
            .iter_mut()
            .find(|e| e.local_id == local_id)
            .ok_or_else(|| RegistryError::Unknown(local_id.to_string()))?;
        if e.attempts.len() != expected_attempts {
            return Ok(false);
        }
        change(e);
        // A reserved attempt (job id 0, not submitted yet) does not replace the current id.
        if let Some(last) = e.attempts.iter().rev().find(|a| a.job_id != 0) {
            e.job_id = last.job_id;
        }
        self.write(&f)?;
        Ok(true)
    }
}

impl Entry {
    /// The record as compact JSON (also stored at `<job_dir>/meta/` on the cluster).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Where the job lives on the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub local_id: String,
    /// `$SLURM_BASE_RESULTS_DIR/results`: TAO_API_RESULTS_DIR, the job dir's parent.
    pub results_root: String,
    pub job_dir: String,
}

impl Layout {
    pub fn new(results_root: &str, local_id: &str) -> Layout {
        let root = results_root.trim_end_matches('/');
        Layout {
            local_id: local_id.to_string(),
            results_root: root.to_string(),
            job_dir: format!("{root}/{local_id}"),
        }
    }
    pub fn script_path(&self) -> String {
        format!("{}/sbatch/job_{}.sbatch", self.job_dir, self.local_id)
    }
    /// Where a recovered batch script is staged (see [`crate::launch::LaunchSpec::batch_script`]).
    pub fn recovered_path(&self) -> String {
        format!("{}/sbatch/recovered.sh", self.job_dir)
    }
    pub fn log_dir(&self, name: &str, job_id: u64) -> String {
        format!("{}/slurm-logs/{name}-{job_id}", self.job_dir)
    }
    pub fn stdout(&self, name: &str, job_id: u64) -> String {
        format!("{}/main.out", self.log_dir(name, job_id))
    }
    pub fn stderr(&self, name: &str, job_id: u64) -> String {
        format!("{}/main.err", self.log_dir(name, job_id))
    }
    /// Task `task` of array `job_id` (a sweep's run): the array's directory, a file per
    /// index (`launch::script` writes `%x-%A/main-%a.out`).
    pub fn task_logs(&self, name: &str, job_id: u64, task: u32) -> (String, String) {
        let dir = self.log_dir(name, job_id);
        (
            format!("{dir}/main-{task}.out"),
            format!("{dir}/main-{task}.err"),
        )
    }
}

/// How long ago the oldest of these launches was made, by the laptop's clock (0 for none).
pub fn oldest_secs(entries: &[&Entry]) -> i64 {
    let now = chrono::Utc::now();
    entries
        .iter()
        .map(|e| (now - e.submitted_at).num_seconds())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn entry(id: &str, job: u64) -> Entry {
        let at = DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        Entry {
            local_id: id.into(),
            cluster: "dev".into(),
            job_id: job,
            job_dir: format!("/lustre/r/{id}"),
            name: "train".into(),
            submitted_at: at,
            script: format!("/lustre/r/{id}/sbatch/job_{id}.sbatch"),
            attempts: vec![Attempt {
                job_id: job,
                submitted_at: at,
                state: None,
            }],
            ..Entry::default()
        }
    }

    #[test]
    fn add_load_and_compare_and_set() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::open(d.path());
        assert!(r.load().unwrap().is_empty());
        r.add(entry("a", 10)).unwrap();
        r.add(entry("b", 11)).unwrap();
        let retry = |e: &mut Entry| {
            e.attempts.push(Attempt {
                job_id: 12,
                submitted_at: e.submitted_at,
                state: None,
            })
        };
        assert!(r.update("a", 1, retry).unwrap());
        // A second dashboard that still saw one attempt does not resubmit.
        assert!(!r.update("a", 1, retry).unwrap());
        let all = r.load().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].job_id, all[0].attempts.len()), (12, 2));
        assert!(matches!(
            r.update("zz", 0, |_| {}),
            Err(RegistryError::Unknown(_))
        ));
        let leftovers: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    /// A registry an older slurmdash wrote (no checksum, no spec hash) still loads, and the
    /// new field round-trips.
    #[test]
    fn an_older_registry_loads_and_the_spec_hash_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::open(d.path());
        let old = r#"{"version":1,"entries":[{"local_id":"a","cluster":"dev","job_id":10,"job_dir":"/r/a","name":"train","submitted_at":"2026-11-23T10:00:00Z","script":"/r/a/sbatch/job_a.sbatch","attempts":[{"job_id":10,"submitted_at":"2026-11-23T10:00:00Z"}]}]}"#;
        fs::write(r.path(), old).unwrap();
        let e = r.load().unwrap().remove(0);
        assert_eq!((e.checksum, e.spec_sha256), (None, None));
        let mut b = entry("b", 11);
        b.spec_sha256 = Some("5e1f".into());
        r.add(b).unwrap();
        assert_eq!(r.load().unwrap()[1].spec_sha256.as_deref(), Some("5e1f"));
    }

    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_state_dir_is_0700_and_its_files_0600() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        // A fresh state dir (and its missing parent), whatever the umask lets through.
        let r = Registry::open(d.path().join("state/slurmdash"));
        r.add(entry("a", 10)).unwrap();
        r.save_last(&serde_json::json!({"name": "train"})).unwrap();
        assert_eq!(mode(r.dir()), 0o700);
        for f in ["registry.json", "last-launch.json", "registry.lock"] {
            assert_eq!(mode(&r.dir().join(f)), 0o600, "{f}");
        }
        // One an earlier version left world-readable is made private at the next write.
        let old = Registry::open(d.path().join("old"));
        fs::create_dir(old.dir()).unwrap();
        fs::set_permissions(old.dir(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(old.path(), br#"{"version":1,"entries":[]}"#).unwrap();
        fs::set_permissions(old.path(), fs::Permissions::from_mode(0o644)).unwrap();
        old.add(entry("b", 11)).unwrap();
        assert_eq!(mode(old.dir()), 0o700);
        assert_eq!(mode(&old.path()), 0o600);
        assert_eq!(old.load().unwrap().len(), 1);
        // A link planted where the temp file goes is not followed.
        let victim = d.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let tmp = old
            .dir()
            .join(format!(".registry.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        old.add(entry("c", 12)).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        assert_eq!(old.load().unwrap().len(), 2);
    }

    #[test]
    fn corrupt_file_is_reported_not_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::open(d.path());
        fs::write(r.path(), b"{not json").unwrap();
        let e = r.load().unwrap_err().to_string();
        assert!(e.contains("move it aside"), "{e}");
        assert!(r.add(entry("a", 1)).is_err());
    }
}
