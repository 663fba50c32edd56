//! A job's files: its directories on the cluster (the job directory of a launch, the work
//! directory), listed, previewed and fetched to this machine. Pure pieces here (paths, the
//! listing script and its parser); `copy` moves bytes through any [`crate::remote::Remote`].
//!
//! Paths are bytes (a file name on the cluster need not be UTF-8) and travel to the remote
//! scripts as one argv argument each, encoded for `printf %b` (see [`encode_arg`]): never
//! pasted into script text.

pub mod copy;
pub mod list;
pub mod msg;
pub mod preview;

pub use msg::{FilesCmd, FilesMsg};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A copy larger than this asks first (the size is shown).
pub const CONFIRM_BYTES: u64 = 100 << 20;
/// Bytes read at most for a preview.
pub const PREVIEW_BYTES: u64 = 256 << 10;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl ParseError {
    pub fn new(s: impl Into<String>) -> Self {
        ParseError(s.into())
    }
}

/// `[files]` in the config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesConfig {
    /// Where fetched files go (a sub-directory per job). `~/` is your home. Default: your
    /// download directory (XDG_DOWNLOAD_DIR, else ~/Downloads) + `/slurmdash`.
    pub download_dir: Option<String>,
}

impl FilesConfig {
    pub fn download_dir(&self) -> PathBuf {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if let Some(d) = self.download_dir.as_deref().filter(|d| !d.is_empty()) {
            return match (d.strip_prefix("~/"), &home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ => PathBuf::from(d),
            };
        }
        let base = directories::UserDirs::new()
            .and_then(|u| u.download_dir().map(Path::to_path_buf))
            .or_else(|| home.map(|h| h.join("Downloads")))
            .unwrap_or_else(|| PathBuf::from("."));
        base.join("slurmdash")
    }
}

/// `s` as one argument for `printf %b`: printable ASCII stays, a backslash doubles, every
/// other byte becomes `\0ooo`. The result is plain ASCII whatever the bytes were.
pub fn encode_arg(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s {
        match b {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\0{b:03o}")),
        }
    }
    out
}

/// A name as shown on screen: invalid UTF-8 as `\xNN`, newlines and tabs as `\n`, `\t`,
/// other control characters as `\xNN`.
pub fn display_name(name: &[u8]) -> String {
    let mut out = String::new();
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `dir/name`.
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = dir.to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// The last component of `path` (`None` for `/`, `.`, `..` or an empty path).
pub fn base_name(path: &[u8]) -> Option<&[u8]> {
    let trimmed = {
        let mut p = path;
        while p.len() > 1 && p.ends_with(b"/") {
            p = &p[..p.len() - 1];
        }
        p
    };
    let name = trimmed.rsplit(|b| *b == b'/').next()?;
    (!name.is_empty() && name != b"." && name != b"..").then_some(name)
}

/// A directory of the job, shown at the top of the files view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// "job dir", "work dir".
    pub label: String,
    pub path: Vec<u8>,
}

/// The job's directories: the launch's job directory (specs, env, meta, sbatch,
/// slurm-logs) when slurmdash launched it, and its work directory; a duplicate or an empty
/// one is left out.
pub fn roots(job_dir: Option<&str>, work_dir: Option<&str>) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    for (label, p) in [("job dir", job_dir), ("work dir", work_dir)] {
        let Some(p) = p.map(str::trim).filter(|p| !p.is_empty()) else {
            continue;
        };
        let p = if p.len() > 1 {
            p.trim_end_matches('/')
        } else {
            p
        };
        if out.iter().any(|r| r.path == p.as_bytes()) {
            continue;
        }
        out.push(Root {
            label: label.into(),
            path: p.as_bytes().to_vec(),
        });
    }
    out
}

/// `path` as the cluster sees it: absolute paths stay, relative ones are taken below `base`
/// (the job directory of a launch, else the work directory). Bytes: a path need not be
/// UTF-8.
pub fn resolve(path: &[u8], base: Option<&str>) -> Result<Vec<u8>, String> {
    if path.starts_with(b"/") {
        return Ok(path.to_vec());
    }
    match base.filter(|b| !b.is_empty()) {
        Some(b) => Ok(join(b.trim_end_matches('/').as_bytes(), path)),
        None => Err(format!(
            "`{}` is relative and the job has neither a job directory nor a work directory Slurm reports: give an absolute path",
            display_name(path)
        )),
    }
}

/// Where a fetch of `remote` for job `job` goes by default: `download_dir/JOB/NAME`.
pub fn local_dest(download_dir: &Path, job: &str, remote: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let name = base_name(remote)?;
    Some(
        download_dir
            .join(job)
            .join(std::ffi::OsStr::from_bytes(name)),
    )
}

/// `100.0 MiB in 1.2 s (81.3 MiB/s)`.
pub fn rate_line(bytes: u64, secs: f64) -> String {
    let mib = bytes as f64 / (1u64 << 20) as f64;
    let rate = if secs > 0.0 { mib / secs } else { 0.0 };
    format!(
        "{} in {secs:.1} s ({rate:.1} MiB/s)",
        crate::logview::human_bytes(bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_arguments_are_ascii_and_decode_back_through_printf() {
        let raw: &[u8] = b"/x/it's \"q\" $(rm) \\c \\0101 \n\t\xff\xfe -rf \xc3\xa9";
        let enc = encode_arg(raw);
        assert!(enc.is_ascii());
        let out = std::process::Command::new("sh")
            .args(["-c", "printf '%bx' \"$1\"", "sh", &enc])
            .output()
            .expect("sh");
        assert_eq!(&out.stdout[..out.stdout.len() - 1], raw);
    }

    #[test]
    fn names_paths_roots() {
        assert_eq!(display_name(b"a\x01b\xff"), "a\\x01b\\xff");
        assert_eq!(join(b"/a/", b"b"), b"/a/b");
        assert_eq!(join(b"/a", b"b"), b"/a/b");
        assert_eq!(base_name(b"/a/b/"), Some(&b"b"[..]));
        assert_eq!(base_name(b"/"), None);
        assert_eq!(base_name(b"/a/.."), None);
        let r = roots(Some("/r/7/"), Some("/home/u"));
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].label.as_str(), r[0].path.as_slice()),
            ("job dir", &b"/r/7"[..])
        );
        assert_eq!(roots(Some("/w"), Some("/w")).len(), 1);
        assert!(roots(None, Some("")).is_empty());
        assert_eq!(
            resolve(b"specs/launch.json", Some("/r/7/")).as_deref(),
            Ok(&b"/r/7/specs/launch.json"[..])
        );
        assert_eq!(resolve(b"/abs", None).as_deref(), Ok(&b"/abs"[..]));
        assert!(resolve(b"rel", None).is_err());
        let d = local_dest(Path::new("/dl"), "123", b"/r/a b").expect("dest");
        assert_eq!(d, Path::new("/dl/123/a b"));
    }

    #[test]
    fn download_dir_from_config_or_default() {
        let c = FilesConfig {
            download_dir: Some("/data/dl".into()),
        };
        assert_eq!(c.download_dir(), Path::new("/data/dl"));
        assert!(FilesConfig::default().download_dir().ends_with("slurmdash"));
    }
}
