//! Moving a job's files to this machine over any [`Remote`]: one streamed exec per file
//! (`tail -c +N`, so a partial copy resumes from its size), with the file's sha256 on the
//! cluster computed beside it in the same exec, checked against the bytes written here. A
//! file is written beside its destination (0600) and renamed over it only when whole.
//! A directory is fetched file by file from one listing of its tree (so it resumes too, and
//! every file is checked); symbolic links and special files in it are listed as skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::list::{list_argv, parse_listing, Entry, Kind, Listing, MAX_TREE};
use super::{display_name, encode_arg, join, PREVIEW_BYTES};
use crate::remote::{ExecEvent, Remote};

/// `sh -c FETCH_SCRIPT sh ENCODED_PATH START`: the file's bytes from START (1-based) on
/// stdout and, from a second read of the file running at the same time (so the hash costs
/// no time after the copy, and never comes from the bytes sent), `sha256 HEX` of the whole
/// file on stderr. Exit 3: missing, 4: not a regular file, 5: not readable, 6: tail failed,
/// 7: sha256sum failed.
pub const FETCH_SCRIPT: &str = r#"p=$(printf '%bx' "$1"); p=${p%x}
case $p in -*) p=./$p;; esac
[ -e "$p" ] || { echo "no such file" >&2; exit 3; }
[ -f "$p" ] || { echo "not a regular file" >&2; exit 4; }
[ -r "$p" ] || { echo "permission denied" >&2; exit 5; }
{ sum=$(sha256sum < "$p") && echo "sha256 ${sum%% *}" >&2; } &
h=$!
tail -c +"$2" -- "$p" || { kill "$h" 2>/dev/null; exit 6; }
wait "$h" || exit 7
"#;

/// `sh -c STAT_SCRIPT sh ENCODED_PATH`: the path's own entry in [`LIST_SCRIPT`]'s format
/// (its type, size, mtime, name), then `TOTAL 1`. Exit 3: missing.
///
/// [`LIST_SCRIPT`]: super::list::LIST_SCRIPT
pub const STAT_SCRIPT: &str = r#"p=$(printf '%bx' "$1"); p=${p%x}
case $p in -*) p=./$p;; esac
[ -e "$p" ] || [ -L "$p" ] || { echo "no such file or directory" >&2; exit 3; }
find "$p" -maxdepth 0 -printf '%y%Y\0%s\0%T@\0%f\0' && printf 'TOTAL\0%s\n' 1
"#;

/// `sh -c PREVIEW_SCRIPT sh ENCODED_PATH MAX`: the file's size on the first line, then at
/// most MAX bytes from its start. Exit codes as [`FETCH_SCRIPT`].
pub const PREVIEW_SCRIPT: &str = r#"p=$(printf '%bx' "$1"); p=${p%x}
case $p in -*) p=./$p;; esac
[ -e "$p" ] || { echo "no such file" >&2; exit 3; }
[ -f "$p" ] || { echo "not a regular file" >&2; exit 4; }
[ -r "$p" ] || { echo "permission denied" >&2; exit 5; }
find "$p" -maxdepth 0 -printf '%s\n' && head -c "$2" -- "$p"
"#;

fn script_argv(script: &str, args: &[String]) -> Vec<String> {
    let mut v = vec!["sh".into(), "-c".into(), script.into(), "sh".into()];
    v.extend_from_slice(args);
    v
}

pub fn fetch_argv(path: &[u8], offset: u64) -> Vec<String> {
    script_argv(FETCH_SCRIPT, &[encode_arg(path), (offset + 1).to_string()])
}

pub fn stat_argv(path: &[u8]) -> Vec<String> {
    script_argv(STAT_SCRIPT, &[encode_arg(path)])
}

pub fn preview_argv(path: &[u8], max: u64) -> Vec<String> {
    script_argv(PREVIEW_SCRIPT, &[encode_arg(path), max.to_string()])
}

/// What the scripts' exit codes mean, for messages.
fn exit_meaning(code: Option<i32>) -> &'static str {
    match code {
        Some(3) => "no such file or directory on the cluster: check the path (relative paths are below the job's directory; `y` in the dashboard lists them)",
        Some(4) => "not a regular file (a directory, a link or a device): name a file, or fetch the directory",
        Some(5) => "permission denied: the file (or a directory above it) is not readable by your cluster user",
        Some(6) => "tail failed reading it: check that the file is readable and try again",
        Some(7) => "sha256sum failed reading it: check that coreutils' sha256sum exists on the login node",
        _ => "the command failed: run it again, or check the path with ssh",
    }
}

fn failed(what: &str, path: &[u8], code: Option<i32>, stderr: &[u8]) -> String {
    let said = String::from_utf8_lossy(stderr).trim().to_string();
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(" ({said})")
    };
    format!(
        "{what} {} on the cluster: {}{said}",
        display_name(path),
        exit_meaning(code)
    )
}

/// Settings of one copy.
#[derive(Debug, Clone, Copy)]
pub struct CopyOpts {
    /// No byte for this long ends the copy (a stalled connection).
    pub idle: Duration,
    /// Limit of the small commands (listing, stat).
    pub timeout: Duration,
}

impl Default for CopyOpts {
    fn default() -> Self {
        CopyOpts {
            idle: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
        }
    }
}

/// One file fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file's size (bytes now here, all checked).
    pub size: u64,
    /// Bytes moved this time.
    pub copied: u64,
    /// The partial file this copy continued from (0: from the start).
    pub resumed_from: u64,
    /// A partial file that did not match was copied again from the start.
    pub restarted: bool,
    pub sha256: String,
}

/// A whole directory fetched.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DirReport {
    pub files: usize,
    pub size: u64,
    pub copied: u64,
    /// Links and special files not copied, as shown.
    pub skipped: Vec<String>,
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of a local file, as hex.
pub async fn local_sha256(path: &Path) -> std::io::Result<String> {
    let mut f = tokio::fs::File::open(path).await?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).await?;
        if n == 0 {
            return Ok(hex(&h.finalize()));
        }
        h.update(&buf[..n]);
    }
}

/// The `sha256 HEX` line the fetch script prints last on stderr.
pub fn parse_sum(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().rev().find(|l| l.starts_with("sha256 "))?;
    let sum = line.strip_prefix("sha256 ")?.trim();
    (sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sum.to_string())
}

/// Where a file fetched to `dest` is written until it is whole: beside it (the same
/// directory, so the final rename is atomic), hidden, 0600. It stays after a failed copy,
/// and the next fetch to `dest` continues from it.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(dest.file_name().unwrap_or(std::ffi::OsStr::new("download")));
    name.push(".slurmdash-part");
    dest.with_file_name(name)
}

/// This process's umask (Linux: from /proc; elsewhere the usual 022).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Opens the partial file, never through a link: new (or emptied) with `truncate`, else
/// for appending.
async fn open_part(part: &Path, truncate: bool) -> std::io::Result<tokio::fs::File> {
    let mut o = tokio::fs::OpenOptions::new();
    o.write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .create(true);
    if truncate {
        o.truncate(true);
    } else {
        o.append(true);
    }
    o.open(part).await
}

/// sha256 state over a local file's bytes.
async fn hash_of(path: &Path, hasher: &mut Sha256) -> std::io::Result<()> {
    let mut f = tokio::fs::File::open(path).await?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        hasher.update(&buf[..n]);
    }
}

/// What the copy continues from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Nothing,
    /// The partial file of an earlier fetch.
    Part(u64),
    /// A whole earlier copy at `dest`: left as it is unless more bytes arrive, which then
    /// go after a copy of it in the partial file.
    Dest(u64),
}

/// Fetches the file `src` into `dest`. The bytes go into [`part_path`] (0600) and replace
/// `dest` by a rename only once whole and checked, so `dest` is never seen half-written and
/// an interrupted copy leaves whatever was there before. A copy continues from the partial
/// file of an earlier one, else from a file already at `dest` (a log fetched before and
/// grown since), and the final checksum covers the whole file (bytes that turn out not to
/// be a prefix of the remote file are copied again from the start, once). The new `dest`
/// keeps the mode of the one it replaces, else gets the usual mode for new files (the
/// umask's). `progress` gets the bytes of the file now here.
pub async fn fetch_file(
    remote: &dyn Remote,
    src: &[u8],
    dest: &Path,
    opts: CopyOpts,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<FileReport, String> {
    use std::os::unix::fs::PermissionsExt;
    let part = part_path(dest);
    let local = |e: std::io::Error, what: &str, p: &Path| {
        format!(
            "{what} {} on this machine: {e} (check the download directory, [files] download_dir)",
            p.display()
        )
    };
    if let Some(parent) = dest.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| local(e, "creating the directory of", dest))?;
    }
    let dest_mode = match tokio::fs::metadata(dest).await {
        Ok(m) if m.is_file() => Some(m.permissions().mode() & 0o7777),
        Ok(_) => {
            return Err(format!(
                "{} exists on this machine and is not a file: move it away or choose another destination",
                dest.display()
            ))
        }
        Err(_) => None,
    };
    let mut restarted = false;
    loop {
        let base = if restarted {
            Base::Nothing
        } else {
            match tokio::fs::symlink_metadata(&part).await {
                Ok(m) if m.file_type().is_file() => Base::Part(m.len()),
                Ok(_) => {
                    return Err(format!(
                        "{} is in the way of the partial copy and is not a file slurmdash wrote (a link or a directory): remove it and fetch again",
                        part.display()
                    ))
                }
                Err(_) => match tokio::fs::metadata(dest).await {
                    Ok(m) if m.is_file() => Base::Dest(m.len()),
                    _ => Base::Nothing,
                },
            }
        };
        let offset = match base {
            Base::Nothing => 0,
            Base::Part(n) | Base::Dest(n) => n,
        };
        let mut hasher = Sha256::new();
        match base {
            Base::Part(_) => hash_of(&part, &mut hasher)
                .await
                .map_err(|e| local(e, "reading the partial file", &part))?,
            Base::Dest(_) => hash_of(dest, &mut hasher)
                .await
                .map_err(|e| local(e, "reading", dest))?,
            Base::Nothing => {}
        }
        // Opened at the first byte when continuing from `dest` (a copy that brings nothing
        // new leaves `dest` alone and writes no partial file).
        let mut file = match base {
            Base::Nothing => Some(
                open_part(&part, true)
                    .await
                    .map_err(|e| local(e, "creating", &part))?,
            ),
            Base::Part(_) => Some(
                open_part(&part, false)
                    .await
                    .map_err(|e| local(e, "opening", &part))?,
            ),
            Base::Dest(_) => None,
        };
        progress(offset);
        let argv = fetch_argv(src, offset);
        let shown = format!("`tail -c +{} {}`", offset + 1, display_name(src));
        let mut stream = remote
            .exec_stream(&argv)
            .await
            .map_err(|e| format!("{e}; fetch again to resume from the bytes already here"))?;
        let mut got = 0u64;
        let (code, stderr) = loop {
            match tokio::time::timeout(opts.idle, stream.rx.recv()).await {
                Err(_) => {
                    return Err(format!(
                        "{shown} on the cluster sent nothing for {}s (a stalled connection?): fetch again to resume from the {} bytes already here",
                        opts.idle.as_secs(),
                        offset + got
                    ))
                }
                Ok(None) => {
                    return Err(format!(
                        "{shown} on the cluster ended without an exit status: fetch again to resume"
                    ))
                }
                Ok(Some(ExecEvent::Data(d))) => {
                    let f = match file.as_mut() {
                        Some(f) => f,
                        None => {
                            let mut f = open_part(&part, true)
                                .await
                                .map_err(|e| local(e, "creating", &part))?;
                            let mut from = tokio::fs::File::open(dest)
                                .await
                                .map_err(|e| local(e, "reading", dest))?;
                            tokio::io::copy(&mut from, &mut f)
                                .await
                                .map_err(|e| local(e, "copying into", &part))?;
                            file.insert(f)
                        }
                    };
                    f.write_all(&d)
                        .await
                        .map_err(|e| local(e, "writing", &part))?;
                    hasher.update(&d);
                    got += d.len() as u64;
                    progress(offset + got);
                }
                Ok(Some(ExecEvent::Exit { code, stderr })) => break (code, stderr),
                Ok(Some(ExecEvent::Failed(e))) => {
                    return Err(format!(
                        "{e}; fetch again to resume from the {} bytes already here",
                        offset + got
                    ))
                }
            }
        };
        if let Some(mut f) = file.take() {
            f.flush().await.map_err(|e| local(e, "writing", &part))?;
            f.sync_all().await.map_err(|e| local(e, "writing", &part))?;
        }
        if code != Some(0) {
            return Err(failed("fetching (tail, sha256sum)", src, code, &stderr));
        }
        let Some(remote_sum) = parse_sum(&stderr) else {
            return Err(format!(
                "sha256sum of {} on the cluster printed no checksum ({}): is sha256sum (coreutils) installed there?",
                display_name(src),
                String::from_utf8_lossy(&stderr).trim()
            ));
        };
        let here = hex(&hasher.finalize());
        if here == remote_sum {
            if !(got == 0 && matches!(base, Base::Dest(_))) {
                let mode = dest_mode.unwrap_or(0o666 & !umask());
                tokio::fs::set_permissions(&part, std::fs::Permissions::from_mode(mode))
                    .await
                    .map_err(|e| local(e, "setting the mode of", &part))?;
                tokio::fs::rename(&part, dest)
                    .await
                    .map_err(|e| local(e, "renaming the whole copy to", dest))?;
                if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if let Ok(d) = tokio::fs::File::open(dir).await {
                        let _ = d.sync_all().await;
                    }
                }
            }
            return Ok(FileReport {
                size: offset + got,
                copied: got,
                resumed_from: offset,
                restarted,
                sha256: here,
            });
        }
        if offset > 0 && !restarted {
            // The bytes here were not the start of this file: copy it whole.
            restarted = true;
            continue;
        }
        let _ = tokio::fs::remove_file(&part).await;
        return Err(format!(
            "{} differs from {} on the cluster (sha256 {here} here, {remote_sum} there): the file changed while it was copied (a job still writing it?); fetch again",
            dest.display(),
            display_name(src)
        ));
    }
}

async fn run_listing(
    remote: &dyn Remote,
    argv: &[String],
    path: &[u8],
    what: &str,
    timeout: Duration,
) -> Result<Listing, String> {
    let out = remote
        .run(argv, None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(failed(what, path, out.code, &out.stderr));
    }
    parse_listing(&out.stdout).map_err(|e| {
        format!(
            "{what} {} on the cluster printed something unexpected: {e}",
            display_name(path)
        )
    })
}

/// One level of `dir` (at most [`MAX_ENTRIES`](super::list::MAX_ENTRIES), the rest counted).
pub async fn list_dir(
    remote: &dyn Remote,
    dir: &[u8],
    timeout: Duration,
) -> Result<Listing, String> {
    let argv = list_argv(dir, super::list::MAX_ENTRIES, Some(1));
    run_listing(remote, &argv, dir, "listing (find)", timeout).await
}

/// The entry of `path` itself: whether it is a file or a directory, and its size.
pub async fn stat(remote: &dyn Remote, path: &[u8], timeout: Duration) -> Result<Entry, String> {
    let l = run_listing(remote, &stat_argv(path), path, "looking up (find)", timeout).await?;
    l.entries
        .into_iter()
        .next()
        .ok_or_else(|| format!("looking up {}: no entry", display_name(path)))
}

/// What a directory fetch will copy: every entry of the tree and the bytes of its files.
pub async fn plan_dir(
    remote: &dyn Remote,
    dir: &[u8],
    timeout: Duration,
) -> Result<(Listing, u64), String> {
    let argv = list_argv(dir, MAX_TREE, None);
    let l = run_listing(remote, &argv, dir, "listing the tree (find)", timeout).await?;
    if l.more() > 0 {
        return Err(format!(
            "{} holds {} entries, more than the {MAX_TREE} a fetch copies: fetch its sub-directories one by one",
            display_name(dir),
            l.total
        ));
    }
    let bytes = l
        .entries
        .iter()
        .filter(|e| e.kind == Kind::File)
        .map(|e| e.size)
        .sum();
    Ok((l, bytes))
}

/// Fetches the directory `src` into `dest` (created), file by file. `progress` gets the
/// bytes done of all files, the total, and the file being copied.
pub async fn fetch_dir(
    remote: &dyn Remote,
    src: &[u8],
    dest: &Path,
    opts: CopyOpts,
    progress: &mut (dyn FnMut(u64, u64, &str) + Send),
) -> Result<DirReport, String> {
    use std::os::unix::ffi::OsStrExt;
    let (tree, total) = plan_dir(remote, src, opts.timeout).await?;
    let mut report = DirReport {
        size: total,
        ..DirReport::default()
    };
    tokio::fs::create_dir_all(dest)
        .await
        .map_err(|e| format!("creating {} on this machine: {e}", dest.display()))?;
    let mut done = 0u64;
    // Parents before children: sort by path.
    let mut entries = tree.entries;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for e in &entries {
        if e.name
            .split(|b| *b == b'/')
            .any(|c| c == b".." || c.is_empty())
        {
            report.skipped.push(e.display());
            continue;
        }
        let local: PathBuf = dest.join(std::ffi::OsStr::from_bytes(&e.name));
        match e.kind {
            Kind::Dir => tokio::fs::create_dir_all(&local)
                .await
                .map_err(|err| format!("creating {} on this machine: {err}", local.display()))?,
            Kind::File => {
                let shown = e.display();
                let base = done;
                let mut each = |n: u64| progress(base + n, total, &shown);
                let r = fetch_file(remote, &join(src, &e.name), &local, opts, &mut each).await?;
                done += r.size;
                report.files += 1;
                report.copied += r.copied;
            }
            Kind::Link { .. } | Kind::Other => report.skipped.push(e.display()),
        }
    }
    progress(done, total, "");
    Ok(report)
}

/// The start of a file for a preview: its size and at most `PREVIEW_BYTES` bytes.
pub async fn preview(
    remote: &dyn Remote,
    path: &[u8],
    timeout: Duration,
) -> Result<(u64, Vec<u8>), String> {
    let out = remote
        .run(&preview_argv(path, PREVIEW_BYTES), None, timeout)
        .await
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(failed("reading (head)", path, out.code, &out.stderr));
    }
    let nl = out.stdout.iter().position(|b| *b == b'\n');
    let size = nl
        .and_then(|i| std::str::from_utf8(&out.stdout[..i]).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            format!(
                "reading {} on the cluster: no size line in its output",
                display_name(path)
            )
        })?;
    let start = nl.map_or(0, |i| i + 1);
    Ok((size, out.stdout[start..].to_vec()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::LocalRemote;
    use std::os::unix::ffi::OsStrExt;

    /// `fetch_file` with the default options, progress ignored.
    async fn fetch(remote: &dyn Remote, src: &Path, dest: &Path) -> Result<FileReport, String> {
        fetch_file(
            remote,
            src.as_os_str().as_bytes(),
            dest,
            CopyOpts::default(),
            &mut |_| {},
        )
        .await
    }

    fn bytes_of(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn checksum_line() {
        let s = "a".repeat(64);
        assert_eq!(parse_sum(format!("warn\nsha256 {s}\n").as_bytes()), Some(s));
        assert_eq!(parse_sum(b"sha256 xyz\n"), None);
        assert_eq!(parse_sum(b""), None);
    }

    #[tokio::test]
    async fn a_file_is_copied_checked_and_resumed_through_the_local_transport() {
        let remote = LocalRemote::new();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("-it's a \"file\"\n\u{e9}");
        let data = bytes_of(700_000);
        std::fs::write(&src, &data).unwrap();
        let dest = dir.path().join("out/copy");
        let mut seen = 0;
        let r = fetch_file(
            &remote,
            src.as_os_str().as_bytes(),
            &dest,
            CopyOpts::default(),
            &mut |n| seen = n,
        )
        .await
        .unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), data);
        assert_eq!(
            (r.size, r.copied, r.resumed_from, r.restarted),
            (700_000, 700_000, 0, false)
        );
        assert_eq!(seen, 700_000);
        assert_eq!(r.sha256, local_sha256(&dest).await.unwrap());

        // A partial copy continues from its size.
        std::fs::write(&dest, &data[..300_000]).unwrap();
        let r = fetch(&remote, &src, &dest).await.unwrap();
        assert_eq!(
            (r.resumed_from, r.copied, r.restarted),
            (300_000, 400_000, false)
        );
        assert_eq!(std::fs::read(&dest).unwrap(), data);

        // A partial file that is not the start of the remote one is copied again whole.
        std::fs::write(&dest, b"something else").unwrap();
        let r = fetch(&remote, &src, &dest).await.unwrap();
        assert!(r.restarted);
        assert_eq!(std::fs::read(&dest).unwrap(), data);

        // A missing file is named with what it means.
        let e = fetch_file(
            &remote,
            b"/no/such/file",
            &dir.path().join("x"),
            CopyOpts::default(),
            &mut |_| {},
        )
        .await
        .unwrap_err();
        assert!(
            e.contains("/no/such/file") && e.contains("no such file"),
            "{e}"
        );
    }

    /// The local transport, but a copy's command stalls after its first chunk (a broken
    /// connection, or a fetch interrupted mid-way).
    struct Stalls(
        LocalRemote,
        std::sync::Mutex<Vec<tokio::sync::mpsc::Sender<ExecEvent>>>,
    );

    #[async_trait::async_trait]
    impl Remote for Stalls {
        async fn run(
            &self,
            argv: &[String],
            stdin: Option<&[u8]>,
            timeout: Duration,
        ) -> Result<crate::remote::RunOutput, crate::remote::RemoteError> {
            self.0.run(argv, stdin, timeout).await
        }
        async fn read_file(
            &self,
            path: &str,
            pos: crate::remote::ReadPos,
            max_bytes: u64,
        ) -> Result<crate::remote::FileChunk, crate::remote::RemoteError> {
            self.0.read_file(path, pos, max_bytes).await
        }
        async fn exec_stream(
            &self,
            argv: &[String],
        ) -> Result<crate::remote::ExecStream, crate::remote::RemoteError> {
            let mut inner = self.0.exec_stream(argv).await?;
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            if let Some(first) = inner.rx.recv().await {
                tx.send(first).await.unwrap();
            }
            self.1.lock().unwrap().push(tx);
            Ok(crate::remote::ExecStream::new(rx, None))
        }
        fn host(&self) -> Option<String> {
            self.0.host()
        }
        fn state(&self) -> crate::payload::ConnState {
            self.0.state()
        }
        fn stats(&self) -> crate::remote::RemoteStats {
            self.0.stats()
        }
    }

    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[tokio::test]
    async fn an_interrupted_copy_leaves_dest_as_it_was_and_resumes_from_its_partial_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("train.log");
        let data = bytes_of(3_000_000);
        std::fs::write(&src, &data).unwrap();
        // An earlier fetch of the log, which has grown since; its mode is the user's choice.
        let dest = dir.path().join("dl/train.log");
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, &data[..100_000]).unwrap();
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o640)).unwrap();
        let part = part_path(&dest);
        assert_eq!(part, dir.path().join("dl/.train.log.slurmdash-part"));

        // Interrupted (the copy is dropped) once bytes have arrived.
        let stalls = Stalls(LocalRemote::new(), Default::default());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut report = |n: u64| {
            if n > 100_000 {
                let _ = tx.send(n);
            }
        };
        let copy = fetch_file(
            &stalls,
            src.as_os_str().as_bytes(),
            &dest,
            CopyOpts::default(),
            &mut report,
        );
        tokio::select! {
            biased;
            _ = rx.recv() => {}
            r = copy => panic!("the copy ended: {r:?}"),
        }
        assert_eq!(
            std::fs::read(&dest).unwrap(),
            &data[..100_000],
            "dest changed"
        );
        assert_eq!(mode(&dest), 0o640);
        // The earlier copy, then what reached the disk of the new bytes (the chunk in flight
        // when the copy was dropped may not have).
        let partial = std::fs::read(&part).unwrap();
        assert!(
            partial.len() >= 100_000 && partial.len() < data.len(),
            "{}",
            partial.len()
        );
        assert_eq!(partial, &data[..partial.len()]);
        assert_eq!(mode(&part), 0o600, "the partial file is private");

        // Fetched again: continues from the partial file, then replaces dest whole.
        let r = fetch(&LocalRemote::new(), &src, &dest).await.unwrap();
        // (The chunk in flight may have landed since it was read.)
        assert!(
            r.resumed_from >= partial.len() as u64 && !r.restarted,
            "{r:?}"
        );
        assert_eq!(std::fs::read(&dest).unwrap(), data);
        assert_eq!(mode(&dest), 0o640, "dest keeps its mode");
        assert!(!part.exists());

        // A new file gets the usual mode of new files; a fetch that brings nothing new
        // leaves dest alone (same inode).
        let fresh = dir.path().join("dl/fresh.log");
        fetch(&LocalRemote::new(), &src, &fresh).await.unwrap();
        assert_eq!(mode(&fresh), 0o666 & !umask());
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(&fresh).unwrap().ino();
        let r = fetch(&LocalRemote::new(), &src, &fresh).await.unwrap();
        assert_eq!(r.copied, 0);
        assert_eq!(std::fs::metadata(&fresh).unwrap().ino(), ino);

        // A link planted where the partial file goes is refused, never followed.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let other = dir.path().join("dl/other.log");
        std::os::unix::fs::symlink(&victim, part_path(&other)).unwrap();
        let e = fetch(&LocalRemote::new(), &src, &other).await.unwrap_err();
        assert!(e.contains("remove it"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[tokio::test]
    async fn a_directory_with_odd_names_is_copied_file_by_file() {
        let remote = LocalRemote::new();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("job dir");
        let names: [&[u8]; 4] = [b"two\nlines", b"\xff\xfe", b"-rf", b"sub/it's \"q\""];
        std::fs::create_dir_all(src.join("sub/empty")).unwrap();
        for (i, n) in names.iter().enumerate() {
            std::fs::write(
                src.join(std::ffi::OsStr::from_bytes(n)),
                bytes_of(1000 * (i + 1)),
            )
            .unwrap();
        }
        std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
        let dest = dir.path().join("dl/job dir");
        let mut last = (0, 0);
        let r = fetch_dir(
            &remote,
            src.as_os_str().as_bytes(),
            &dest,
            CopyOpts::default(),
            &mut |d, t, _| last = (d, t),
        )
        .await
        .unwrap();
        assert_eq!(r.files, 4);
        assert_eq!(r.size, 10_000);
        assert_eq!(last, (10_000, 10_000));
        assert_eq!(r.skipped, vec!["link".to_string()]);
        for (i, n) in names.iter().enumerate() {
            let p = dest.join(std::ffi::OsStr::from_bytes(n));
            assert_eq!(
                std::fs::read(&p).unwrap(),
                bytes_of(1000 * (i + 1)),
                "{n:?}"
            );
        }
        assert!(dest.join("sub/empty").is_dir());
        // Again: everything is already here, nothing is copied.
        let r = fetch_dir(
            &remote,
            src.as_os_str().as_bytes(),
            &dest,
            CopyOpts::default(),
            &mut |_, _, _| {},
        )
        .await
        .unwrap();
        assert_eq!((r.files, r.copied), (4, 0));
    }

    #[tokio::test]
    async fn stat_and_preview() {
        let remote = LocalRemote::new();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big.json");
        std::fs::write(&f, vec![b'x'; 300_000]).unwrap();
        let t = Duration::from_secs(10);
        let e = stat(&remote, f.as_os_str().as_bytes(), t).await.unwrap();
        assert_eq!((e.kind, e.size), (Kind::File, 300_000));
        let d = stat(&remote, dir.path().as_os_str().as_bytes(), t)
            .await
            .unwrap();
        assert_eq!(d.kind, Kind::Dir);
        let (size, head) = preview(&remote, f.as_os_str().as_bytes(), t).await.unwrap();
        assert_eq!((size, head.len() as u64), (300_000, PREVIEW_BYTES));
        let e = preview(&remote, dir.path().as_os_str().as_bytes(), t)
            .await
            .unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = stat(&remote, b"/no/such", t).await.unwrap_err();
        assert!(e.contains("no such file"), "{e}");
    }
}
