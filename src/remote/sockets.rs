//! Where shared masters live: one socket per (cluster, user, host) in a private directory of
//! the user's (`$XDG_RUNTIME_DIR/slurmdash`, else `/tmp/slurmdash-<uid>`), with a lock file
//! beside each so that two slurmdash processes starting at once make one master, not two.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest socket path slurmdash uses. A Unix socket path holds at most 103 bytes on
/// macOS and the BSDs (107 on Linux), and ssh first binds the master's socket at
/// `PATH.` plus 16 random characters before renaming it: 103 - 17 = 86.
pub const MAX_SOCKET_PATH: usize = 86;

/// `<16 hex digits>.sock`: the shortest name a socket can get.
const SHORTEST_NAME: usize = 8 + ".sock".len();

/// The directory for shared masters: `$XDG_RUNTIME_DIR/slurmdash` when that variable names a
/// directory, short enough for socket paths; on macOS (no XDG_RUNTIME_DIR) the per-user
/// `$TMPDIR`; else `/tmp/slurmdash-<uid>`. Created 0700 if missing; refused (with what to
/// do) if it, or the XDG_RUNTIME_DIR it is in, is not the user's alone.
pub fn runtime_dir() -> Result<PathBuf, String> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let xdg = std::env::var_os("XDG_RUNTIME_DIR");
    let per_user_tmp = if cfg!(target_os = "macos") {
        std::env::var_os("TMPDIR")
    } else {
        None
    };
    let dir = choose_runtime_dir(
        xdg.as_deref().or(per_user_tmp.as_deref()),
        Path::new("/tmp"),
        uid,
    )?;
    ensure_private_dir(&dir, uid)?;
    Ok(dir)
}

/// [`runtime_dir`]'s choice, before the directory itself is checked: in `base` (the
/// per-user runtime directory) when it is an absolute path to a directory short enough for
/// socket paths, else in `fallback_base`. A `base` that exists but belongs to another user or
/// that others can write is refused: whoever controls it could swap slurmdash's directory.
fn choose_runtime_dir(
    base: Option<&OsStr>,
    fallback_base: &Path,
    uid: u32,
) -> Result<PathBuf, String> {
    let fallback = fallback_base.join(format!("slurmdash-{uid}"));
    let Some(d) = base.map(Path::new) else {
        return Ok(fallback);
    };
    if !d.is_absolute()
        || d.as_os_str().len() + "/slurmdash/".len() + SHORTEST_NAME > MAX_SOCKET_PATH
    {
        return Ok(fallback);
    }
    let Ok(m) = std::fs::metadata(d) else {
        return Ok(fallback);
    };
    if !m.is_dir() {
        return Ok(fallback);
    }
    let shown = d.display();
    if m.uid() != uid {
        return Err(format!(
            "the runtime directory {shown} (XDG_RUNTIME_DIR) belongs to uid {}, not to you (uid {uid}): set XDG_RUNTIME_DIR to a private directory of yours (mode 0700), or unset it",
            m.uid()
        ));
    }
    let mode = m.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "the runtime directory {shown} (XDG_RUNTIME_DIR) has mode {mode:03o}: others can write there and could replace slurmdash's connections; run `chmod 700 {shown}`, or point XDG_RUNTIME_DIR at a private directory"
        ));
    }
    Ok(d.join("slurmdash"))
}

/// Creates `dir` (mode 0700) if it is missing, then checks that it is a real directory,
/// owned by `uid`, that nobody else can enter: anyone who can write there could put a socket
/// of theirs where slurmdash sends its commands.
pub fn ensure_private_dir(dir: &Path, uid: u32) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!(
                "cannot create {}: {e} (set XDG_RUNTIME_DIR to a directory of yours)",
                dir.display()
            ))
        }
    }
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
    let d = dir.display();
    if !m.is_dir() {
        return Err(format!(
            "{d} is not a directory (a symbolic link or a file): slurmdash keeps its SSH connections there and will not follow it; remove it (`rm {d}`) and slurmdash creates it again"
        ));
    }
    if m.uid() != uid {
        return Err(format!(
            "{d} belongs to uid {}, not to you (uid {uid}): another user could intercept your SSH connections there; remove it (as its owner or root) and slurmdash creates it again, or set XDG_RUNTIME_DIR to a private directory of yours",
            m.uid()
        ));
    }
    let mode = m.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{d} has mode {mode:03o}: others could reach your SSH connections there; run `chmod 700 {d}`"
        ));
    }
    Ok(())
}

/// What tells two masters apart: two configs that name the same host alias with a different
/// ssh config, port or key reach different servers and must not share.
#[derive(Debug, Clone, Copy)]
pub struct Identity<'a> {
    pub cluster: &'a str,
    pub user: Option<&'a str>,
    pub host: &'a str,
    pub port: Option<u16>,
    pub ssh_config: Option<&'a Path>,
    pub key_path: Option<&'a Path>,
}

/// 64-bit FNV-1a: stable across Rust versions and runs (the socket name must not change
/// between two slurmdash processes, which std's hasher does not promise).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn digest(id: &Identity<'_>) -> String {
    let mut key = Vec::new();
    let path = |p: Option<&Path>| p.map(|p| p.as_os_str().as_encoded_bytes().to_vec());
    for part in [
        Some(id.cluster.as_bytes().to_vec()),
        id.user.map(|u| u.as_bytes().to_vec()),
        Some(id.host.as_bytes().to_vec()),
        id.port.map(|p| p.to_string().into_bytes()),
        path(id.ssh_config),
        path(id.key_path),
    ] {
        key.extend(part.unwrap_or_default());
        key.push(0);
    }
    format!("{:016x}", fnv1a(&key))
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-@".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The socket of the master for `id` in `dir`: `<cluster>-<user>@<host>-<hash>.sock`, the
/// readable part shortened (or left out) so the path stays within [`MAX_SOCKET_PATH`].
/// `None` only if `dir` itself is too long for any socket.
pub fn socket_path(dir: &Path, id: &Identity<'_>) -> Option<PathBuf> {
    let hash = digest(id);
    let short = &hash[..8];
    let readable = sanitize(&match id.user {
        Some(u) => format!("{}-{u}@{}", id.cluster, id.host),
        None => format!("{}-{}", id.cluster, id.host),
    });
    let room = MAX_SOCKET_PATH.checked_sub(dir.as_os_str().len() + 1)?;
    let tail = format!("-{short}.sock");
    let name = if room > tail.len() {
        let keep = readable.len().min(room - tail.len());
        format!("{}{tail}", &readable[..keep])
    } else if room >= SHORTEST_NAME {
        format!("{hash}.sock")
    } else {
        return None;
    };
    Some(dir.join(name))
}

/// A file beside the socket, e.g. its lock or the master's log: `x.sock` -> `x.lock`.
pub fn beside(ctl: &Path, ext: &str) -> PathBuf {
    ctl.with_extension(ext)
}

/// An exclusive lock on a file, held until dropped.
#[derive(Debug)]
pub struct Lock(File);

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by self.0 and still open.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Takes the exclusive lock on `path` (created 0600 if missing), waiting at most `limit`
/// for another process to let go. Polls, so that giving up (or being cancelled) is
/// immediate.
pub async fn lock(path: &Path, limit: Duration) -> Result<Lock, String> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
    let start = tokio::time::Instant::now();
    loop {
        // SAFETY: the fd belongs to `f`, open for the whole call.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Lock(f));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(format!("cannot lock {}: {e}", path.display()));
        }
        if start.elapsed() >= limit {
            return Err(format!(
                "another slurmdash has been opening this connection for {:.0}s and holds {}",
                limit.as_secs_f64(),
                path.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id<'a>(cluster: &'a str, host: &'a str) -> Identity<'a> {
        Identity {
            cluster,
            user: Some("alice"),
            host,
            port: None,
            ssh_config: None,
            key_path: None,
        }
    }

    #[test]
    fn names_are_readable_stable_and_tell_servers_apart() {
        let dir = Path::new("/run/user/1000/slurmdash");
        let p = socket_path(dir, &id("polar", "login1")).expect("fits");
        let name = p.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(name.starts_with("polar-alice@login1-"), "{name}");
        assert!(name.ends_with(".sock"), "{name}");
        // The same identity gives the same name in every process (and every build).
        assert_eq!(socket_path(dir, &id("polar", "login1")), Some(p.clone()));
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        // Same alias, another ssh config (another server behind it): another socket.
        let other = Identity {
            ssh_config: Some(Path::new("/other/config")),
            ..id("polar", "login1")
        };
        assert_ne!(socket_path(dir, &other), Some(p.clone()));
        assert_ne!(socket_path(dir, &id("polar", "login2")), Some(p.clone()));
        assert_ne!(socket_path(dir, &id("dev", "login1")), Some(p));
        let odd = socket_path(dir, &id("a/b c", "me@x")).expect("fits");
        assert!(odd
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("a_b_c-alice@me@x-")));
    }

    #[test]
    fn long_names_are_shortened_under_the_socket_limit() {
        let long_host = "login-node-with-a-very-long-name.cluster.example.org";
        for dir in [
            "/tmp/slurmdash-1000",
            "/run/user/1000/slurmdash",
            "/a/rather/long/runtime/directory/path/for/slurmdash/x",
            "/an/even/longer/runtime/directory/path/that/leaves/room/for/a/hash/x",
        ] {
            let a = socket_path(Path::new(dir), &id("cluster", long_host)).expect("fits");
            let b = socket_path(Path::new(dir), &id("cluster", "login2")).expect("fits");
            assert!(a.as_os_str().len() <= MAX_SOCKET_PATH, "{}", a.display());
            assert_ne!(a, b);
            assert_eq!(a.parent(), Some(Path::new(dir)));
        }
        let too_long = "/x".repeat(40);
        assert_eq!(socket_path(Path::new(&too_long), &id("c", "h")), None);
    }

    #[test]
    fn runtime_dir_prefers_a_usable_xdg_runtime_dir() {
        let t = tempfile::tempdir().expect("tempdir");
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let fallback = t.path().join("tmp");
        let choose = |d: Option<&OsStr>, uid| choose_runtime_dir(d, &fallback, uid);
        let got = choose(Some(t.path().as_os_str()), uid);
        assert_eq!(got, Ok(t.path().join("slurmdash")));
        let fb = Ok(fallback.join(format!("slurmdash-{uid}")));
        // Unset, relative, missing, or too long for a socket: the fallback.
        assert_eq!(choose(None, uid), fb);
        assert_eq!(choose(Some(OsStr::new("run/user")), uid), fb);
        let missing = t.path().join("missing");
        assert_eq!(choose(Some(missing.as_os_str()), uid), fb);
        let deep = t.path().join("d".repeat(80));
        std::fs::create_dir(&deep).expect("mkdir");
        assert_eq!(choose(Some(deep.as_os_str()), uid), fb);
        // Someone else's, or one others can write: refused, naming it and the fix.
        let e = choose(Some(t.path().as_os_str()), uid + 1).unwrap_err();
        assert!(
            e.contains(&t.path().display().to_string())
                && e.contains("not to you")
                && e.contains("XDG_RUNTIME_DIR"),
            "{e}"
        );
        let open = t.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = choose(Some(open.as_os_str()), uid).unwrap_err();
        assert!(
            e.contains("mode 777") && e.contains(&format!("chmod 700 {}", open.display())),
            "{e}"
        );
    }

    #[test]
    fn a_directory_others_can_reach_is_refused_with_what_to_do() {
        let t = tempfile::tempdir().expect("tempdir");
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let dir = t.path().join("slurmdash");
        ensure_private_dir(&dir, uid).expect("created");
        let mode = std::fs::metadata(&dir).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        ensure_private_dir(&dir, uid).expect("already fine");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = ensure_private_dir(&dir, uid).unwrap_err();
        assert!(e.contains(&dir.display().to_string()), "{e}");
        assert!(e.contains("mode 755") && e.contains("chmod 700"), "{e}");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let e = ensure_private_dir(&dir, uid + 1).unwrap_err();
        assert!(
            e.contains("belongs to uid") && e.contains("XDG_RUNTIME_DIR"),
            "{e}"
        );

        let link = t.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).expect("symlink");
        let e = ensure_private_dir(&link, uid).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[tokio::test]
    async fn the_lock_is_exclusive_and_waiting_is_bounded() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("x.lock");
        let held = lock(&p, Duration::from_secs(1)).await.expect("first");
        // Another open file (as another process has): refused after the limit.
        let e = lock(&p, Duration::from_millis(100)).await.unwrap_err();
        assert!(e.contains("another slurmdash"), "{e}");
        drop(held);
        lock(&p, Duration::from_millis(100))
            .await
            .expect("free again");
    }
}
