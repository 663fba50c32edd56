//! `--log FILE` / `SLURMDASH_LOG`: the debug log a user attaches to a bug report. The file is
//! the user's alone (created 0600, a wider mode narrowed), never reached through a symbolic
//! link or a second hard link (a name planted in a shared directory would make slurmdash
//! write into a file of the planter's choosing), rotated at [`MAX_BYTES`] (one `FILE.1`
//! kept), and every line is redacted before it is written ([`redact`]): URLs with their
//! path, query or password, `token=`-like values, Authorization headers and the strings
//! registered with [`add_secret`] (the webhook URL) never reach it.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use regex::{Captures, Regex};

/// Size at which the log is moved to `FILE.1` (replacing the previous one) and started
/// again: at most about twice this on disk, however long slurmdash runs.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;

/// What replaces a secret in the log.
const REDACTED: &str = "[redacted]";

/// Starts logging to `path` through `tracing` (debug level, plain text).
pub fn start(path: &Path) -> io::Result<()> {
    let file = RotatingFile::open(path, MAX_BYTES)?;
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .try_init()
        .map_err(io::Error::other)
}

/// Strings that are redacted wherever they appear (the webhook URL once it is known).
/// Shorter than 8 bytes: ignored (they would blank out ordinary words).
pub fn add_secret(secret: &str) {
    let secret = secret.trim();
    if secret.len() < 8 {
        return;
    }
    let mut s = secrets().lock().unwrap_or_else(|p| p.into_inner());
    if !s.iter().any(|x| x == secret) {
        s.push(secret.to_string());
    }
}

fn secrets() -> &'static Mutex<Vec<String>> {
    static S: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(Vec::new()))
}

struct Patterns {
    url: Regex,
    authorization: Regex,
    bearer: Regex,
    assignment: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    #[allow(clippy::unwrap_used)] // constant patterns, covered by the tests below
    P.get_or_init(|| Patterns {
        // scheme://[userinfo@]host[rest]; stops at whitespace, quotes and the backslash of
        // a Debug-escaped quote.
        url: Regex::new(r#"(?i)\b([a-z][a-z0-9+.-]*)://([^\s/?#@"'<>\\]*@)?([^\s/?#"'<>\\]*)([^\s"'<>\\]*)"#)
            .unwrap(),
        authorization: Regex::new(
            r#"(?i)\b((?:proxy-)?authorization)(\s*[:=]\s*)(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;\\]+"#,
        )
        .unwrap(),
        bearer: Regex::new(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}").unwrap(),
        assignment: Regex::new(
            r#"(?i)\b((?:access_|refresh_|id_|auth_|api_|private_)?token|api[_-]?key|apikey|(?:client_)?secret|password|passwd|pwd|passphrase)(\s*[=:]\s*)(\\"(?:[^"\\]|\\[^"])*\\"|"[^"]*"|'[^']*'|[^\s&,;"'\\)\]}]+)"#,
        )
        .unwrap(),
    })
}

/// `line` with its secrets replaced by `[redacted]`: the registered strings; in a URL the
/// user and password, and for http(s) everything after the host (webhook paths such as
/// Slack's and ntfy's are the secret), for other schemes the query; the value of
/// `token=`, `password=`, `api_key:`, ... (quoted or not); Authorization headers and
/// bearer tokens.
pub fn redact(line: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(line);
    for s in secrets().lock().unwrap_or_else(|p| p.into_inner()).iter() {
        if out.contains(s.as_str()) {
            out = Cow::Owned(out.replace(s.as_str(), REDACTED));
        }
    }
    let p = patterns();
    let replace = |text: Cow<'_, str>, re: &Regex, f: &dyn Fn(&Captures<'_>) -> String| match re
        .replace_all(&text, |c: &Captures<'_>| f(c))
    {
        Cow::Borrowed(_) => text.into_owned(),
        Cow::Owned(o) => o,
    };
    let mut text = out.into_owned();
    text = replace(Cow::Owned(text), &p.url, &|c| {
        let scheme = &c[1];
        let user = if c.get(2).is_some() {
            format!("{REDACTED}@")
        } else {
            String::new()
        };
        let rest = &c[4];
        let rest = if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") {
            if rest.is_empty() || rest == "/" {
                rest.to_string()
            } else {
                format!("/{REDACTED}")
            }
        } else {
            match rest.split_once('?') {
                Some((path, _)) => format!("{path}?{REDACTED}"),
                None => rest.to_string(),
            }
        };
        format!("{scheme}://{user}{}{rest}", &c[3])
    });
    text = replace(Cow::Owned(text), &p.authorization, &|c| {
        format!("{}{}{REDACTED}", &c[1], &c[2])
    });
    text = replace(Cow::Owned(text), &p.bearer, &|c| {
        format!("{} {REDACTED}", &c[1])
    });
    text = replace(Cow::Owned(text), &p.assignment, &|c| {
        format!("{}{}{REDACTED}", &c[1], &c[2])
    });
    if text == line {
        Cow::Borrowed(line)
    } else {
        Cow::Owned(text)
    }
}

/// The log file: opened without following a link, 0600, moved to `FILE.1` when it would
/// pass `limit`. Each `write` is one formatted event (tracing writes an event at once), and
/// is redacted whole. The frame trace (`SLURMDASH_FRAME_LOG`) is the same file without the
/// redaction ([`RotatingFile::open_plain`]).
pub struct RotatingFile {
    path: PathBuf,
    file: File,
    len: u64,
    limit: u64,
    redact: bool,
}

impl RotatingFile {
    pub fn open(path: &Path, limit: u64) -> io::Result<Self> {
        let file = open_private(path, false)?;
        let len = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            file,
            len,
            limit,
            redact: true,
        })
    }

    /// [`RotatingFile::open`] for lines that hold no secret of their own: written as they
    /// are.
    pub fn open_plain(path: &Path, limit: u64) -> io::Result<Self> {
        Ok(Self {
            redact: false,
            ..Self::open(path, limit)?
        })
    }

    /// `FILE.1`.
    pub fn rotated_path(path: &Path) -> PathBuf {
        let mut p = path.as_os_str().to_os_string();
        p.push(".1");
        PathBuf::from(p)
    }

    fn rotate(&mut self) -> io::Result<()> {
        // rename replaces whatever is at FILE.1 (a link planted there included) without
        // following it.
        std::fs::rename(&self.path, Self::rotated_path(&self.path))?;
        self.file = open_private(&self.path, true)?;
        self.len = 0;
        Ok(())
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let clean = if self.redact { redact(&text) } else { text };
        let bytes = clean.as_bytes();
        if self.len > 0 && self.len + bytes.len() as u64 > self.limit {
            // Should the move fail, the log stops rather than grow without bound.
            self.rotate()?;
        }
        self.file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Opens `path` for appending, created 0600 (`new`: must not exist yet), never through a
/// symbolic link; refuses what is not a regular file of the user's with a single link, and
/// narrows a wider mode to 0600.
fn open_private(path: &Path, new: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK);
    if new {
        o.create_new(true);
    } else {
        o.create(true);
    }
    let file = o.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::other(format!(
                "{} is a symbolic link: slurmdash does not follow one for its log; remove it or choose another path",
                path.display()
            ))
        } else {
            e
        }
    })?;
    let m = file.metadata()?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let refuse = |why: String| Err(io::Error::other(format!("{}: {why}", path.display())));
    if !m.file_type().is_file() {
        return refuse("not a regular file: choose another path for the log".into());
    }
    if m.uid() != uid {
        return refuse(format!(
            "belongs to uid {}, not to you (uid {uid}): choose a path of yours for the log",
            m.uid()
        ));
    }
    if m.nlink() > 1 {
        return refuse(format!(
            "has {} hard links: another name points at this file; remove it or choose another path",
            m.nlink()
        ));
    }
    if m.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        redact(s).into_owned()
    }

    #[test]
    fn urls_lose_their_secret_parts_and_keep_their_host() {
        assert_eq!(
            r("POST https://hooks.slack.com/services/T000/B000/XXXXXXXX failed"),
            "POST https://hooks.slack.com/[redacted] failed"
        );
        assert_eq!(
            r("webhook=https://ntfy.sh/my-secret-topic"),
            "webhook=https://ntfy.sh/[redacted]"
        );
        assert_eq!(
            r("open http://gpu01:8888/lab?token=0123456789abcdef"),
            "open http://gpu01:8888/[redacted]"
        );
        assert_eq!(
            r("https://alice:hunter2@example.org/"),
            "https://[redacted]@example.org/"
        );
        assert_eq!(r("see https://example.org"), "see https://example.org");
        // Other schemes keep their path (an image name helps a bug report), not a query.
        assert_eq!(
            r("image docker://nvcr.io/nvidia/pytorch:24.01-py3"),
            "image docker://nvcr.io/nvidia/pytorch:24.01-py3"
        );
        assert_eq!(
            r("s3://bucket/key?X-Amz-Signature=abc"),
            "s3://bucket/key?[redacted]"
        );
        // As tracing prints an argv: Debug-quoted, the URL ends at the escaped quote.
        assert_eq!(
            r(r#"args=["submit", "--webhook", "https://h.example/T0KEN"]"#),
            r#"args=["submit", "--webhook", "https://h.example/[redacted]"]"#
        );
        assert_eq!(
            r(r#"argv="curl \"https://h.example/T0KEN\" -d x""#),
            r#"argv="curl \"https://h.example/[redacted]\" -d x""#
        );
    }

    #[test]
    fn token_password_and_key_values_are_blanked_quoted_or_not() {
        for (line, want) in [
            ("token=abc123 next", "token=[redacted] next"),
            ("ACCESS_TOKEN: abc123", "ACCESS_TOKEN: [redacted]"),
            ("password=\"two words\" x", "password=[redacted] x"),
            ("passwd='x y' z", "passwd=[redacted] z"),
            ("a&api_key=K3Y&b=1", "a&api_key=[redacted]&b=1"),
            ("apikey:K3Y,", "apikey:[redacted],"),
            ("client_secret=s3cr3t)", "client_secret=[redacted])"),
            (
                r#"env=\"PASSWORD=hunter2\" more"#,
                r#"env=\"PASSWORD=[redacted]\" more"#,
            ),
            (r#"x password=\"a b\" y"#, "x password=[redacted] y"),
        ] {
            assert_eq!(r(line), want, "{line}");
        }
        // The names of secrets are not secrets.
        assert_eq!(
            r("--set secrets=HF_TOKEN,WANDB_API_KEY"),
            "--set secrets=HF_TOKEN,WANDB_API_KEY"
        );
        assert_eq!(r("a plain line, 3 tokens"), "a plain line, 3 tokens");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn authorization_headers_and_bearer_tokens_are_blanked() {
        assert_eq!(
            r("-H 'Authorization: Bearer eyJhbGciOi.x.y' -d {}"),
            "-H 'Authorization: [redacted]' -d {}"
        );
        assert_eq!(
            r("authorization=Basic dXNlcjpwYXNz"),
            "authorization=[redacted]"
        );
        assert_eq!(
            r("Proxy-Authorization: Digest abc"),
            "Proxy-Authorization: [redacted]"
        );
        assert_eq!(
            r("sent bearer abcdefgh12345678 to it"),
            "sent bearer [redacted] to it"
        );
    }

    #[test]
    fn a_registered_secret_is_blanked_wherever_it_appears() {
        add_secret("opaque-webhook-value-4711");
        add_secret("short");
        assert_eq!(
            r("x opaque-webhook-value-4711 y opaque-webhook-value-4711"),
            "x [redacted] y [redacted]"
        );
        assert_eq!(r("short words stay"), "short words stay");
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p)
            .expect("stat")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn the_log_is_0600_and_a_wider_existing_one_is_narrowed() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("debug.log");
        let mut f = RotatingFile::open(&p, MAX_BYTES).expect("open");
        f.write_all(b"one token=abc\n").expect("write");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(
            std::fs::read_to_string(&p).expect("read"),
            "one token=[redacted]\n"
        );
        drop(f);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let mut f = RotatingFile::open(&p, MAX_BYTES).expect("reopen");
        f.write_all(b"two\n").expect("write");
        assert_eq!(mode(&p), 0o600);
        assert_eq!(
            std::fs::read_to_string(&p).expect("read"),
            "one token=[redacted]\ntwo\n",
            "appended"
        );
    }

    #[test]
    fn a_planted_link_at_the_log_path_is_refused_and_its_target_untouched() {
        let t = tempfile::tempdir().expect("tmp");
        let target = t.path().join("victim");
        std::fs::write(&target, "precious\n").expect("write");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let link = t.path().join("debug.log");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let e = RotatingFile::open(&link, MAX_BYTES)
            .err()
            .expect("a symlink is refused");
        let msg = e.to_string();
        assert!(
            msg.contains("symbolic link") && msg.contains(&link.display().to_string()),
            "{msg}"
        );
        // A dangling link is not created through either.
        let dangling = t.path().join("dangling.log");
        std::os::unix::fs::symlink(t.path().join("nowhere"), &dangling).expect("symlink");
        assert!(RotatingFile::open(&dangling, MAX_BYTES).is_err());
        assert!(!t.path().join("nowhere").exists());
        // A second hard link to a file of the user's is refused too.
        let hard = t.path().join("hard.log");
        std::fs::hard_link(&target, &hard).expect("hard link");
        let e = RotatingFile::open(&hard, MAX_BYTES).err().expect("refused");
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&target).expect("read"),
            "precious\n"
        );
        assert_eq!(mode(&target), 0o644, "the target's mode was changed");
    }

    #[test]
    fn the_log_is_rotated_at_its_limit_keeping_one_old_file() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("debug.log");
        let old = RotatingFile::rotated_path(&p);
        assert_eq!(old, t.path().join("debug.log.1"));
        let mut f = RotatingFile::open(&p, 100).expect("open");
        let line = |i: usize| format!("line {i:03} {}\n", "x".repeat(20));
        for i in 0..20 {
            f.write_all(line(i).as_bytes()).expect("write");
        }
        let now = std::fs::read_to_string(&p).expect("read");
        let before = std::fs::read_to_string(&old).expect("read .1");
        // 30-byte lines, 100-byte limit: three per file; the newest in FILE, the three
        // before them in FILE.1, everything older gone.
        assert_eq!(now, (18..20).map(line).collect::<String>());
        assert_eq!(before, (15..18).map(line).collect::<String>());
        assert!(now.len() <= 100 && before.len() <= 100);
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(&old), 0o600);
        let files = std::fs::read_dir(t.path()).expect("ls").count();
        assert_eq!(files, 2, "one old file kept, no more");
        // A link planted at FILE.1 is replaced by the rotation, never written through.
        let victim = t.path().join("victim");
        std::fs::write(&victim, "precious\n").expect("write");
        std::fs::remove_file(&old).expect("rm");
        std::os::unix::fs::symlink(&victim, &old).expect("symlink");
        for i in 20..24 {
            f.write_all(line(i).as_bytes()).expect("write");
        }
        assert_eq!(
            std::fs::read_to_string(&victim).expect("read"),
            "precious\n"
        );
        assert!(!std::fs::symlink_metadata(&old)
            .expect("stat")
            .file_type()
            .is_symlink());
    }
}
