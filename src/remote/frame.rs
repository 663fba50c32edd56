//! Every remote command as one POSIX `sh` program that no login shell parses, with its own
//! output framed apart from whatever the login shell and its dotfiles print.
//!
//! `ssh host CMD` hands CMD to the user's login shell (`$SHELL -c CMD`). bash, zsh, tcsh and
//! fish each parse it their own way (csh cannot hold a newline in quotes, fish has no `VAR=x
//! cmd` before 3.1, ...), and each may run a dotfile that prints (Debian's bash reads
//! `.bashrc` even for ssh commands). So the line ssh sends is made only of characters every
//! one of those shells takes literally inside single quotes:
//!
//! ```text
//! sh -c 'eval "$(printf %s BASE64 | base64 -d)"'
//! ```
//!
//! and the program it decodes, run by `sh`, unsets Slurm's output variables, prints a start
//! marker on stdout and on stderr, runs the argv (each word quoted for `sh`), and prints an end
//! marker with the exit status on stdout and on stderr. Only the bytes between the markers are
//! the command's; the marker is chosen anew for each call, so no output can forge it.

use std::fmt::Write as _;

use crate::marker::{find, partial_at_end, rfind};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Slurm's environment variables that change what its commands print, ask or do, as the man
/// pages of 22.05 to 26.05 list them (squeue, sacct, sinfo, scontrol, sprio, sshare, sstat,
/// scancel, sbatch's output ones). The login environment may set any of them (a user who likes
/// relative times, a site that sets SLURM_CLUSTERS); slurmdash parses what the commands print
/// with the formats it asks for, so they are unset for every command it runs. `SLURM_CONF` is
/// not among them: it says where the site's Slurm is, and stays.
pub const SLURM_OUTPUT_VARS: &[&str] = &[
    "SLURM_TIME_FORMAT",
    "SLURM_CLUSTERS",
    "SLURM_BITSTR_LEN",
    "SLURM_DEBUG_FLAGS",
    "SLURM_JSON",
    "SLURM_YAML",
    "SQUEUE_ACCOUNT",
    "SQUEUE_ALL",
    "SQUEUE_ARRAY",
    "SQUEUE_ARRAY_TASKS",
    "SQUEUE_FEDERATION",
    "SQUEUE_FORMAT",
    "SQUEUE_FORMAT2",
    "SQUEUE_LICENSES",
    "SQUEUE_LOCAL",
    "SQUEUE_NAMES",
    "SQUEUE_PARTITION",
    "SQUEUE_PRIORITY",
    "SQUEUE_QOS",
    "SQUEUE_SIBLING",
    "SQUEUE_SORT",
    "SQUEUE_STATES",
    "SQUEUE_USERS",
    "SACCT_FEDERATION",
    "SACCT_FORMAT",
    "SACCT_LOCAL",
    "SINFO_ALL",
    "SINFO_FEDERATION",
    "SINFO_FORMAT",
    "SINFO_LOCAL",
    "SINFO_PARTITION",
    "SINFO_SORT",
    "SCONTROL_ALL",
    "SCONTROL_FEDERATION",
    "SCONTROL_LOCAL",
    "SPRIO_FORMAT",
    "SSTAT_FORMAT",
    "SCANCEL_ACCOUNT",
    "SCANCEL_BATCH",
    "SCANCEL_CTLD",
    "SCANCEL_FULL",
    "SCANCEL_HURRY",
    "SCANCEL_INTERACTIVE",
    "SCANCEL_NAME",
    "SCANCEL_PARTITION",
    "SCANCEL_QOS",
    "SCANCEL_STATE",
    "SCANCEL_USER",
    "SCANCEL_VERBOSE",
    "SCANCEL_WCKEY",
];

/// A marker no output can contain by chance: 64 random bits, new for each call.
pub fn new_marker() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    format!("sdframe{:016x}", h.finish())
}

/// `word` quoted for POSIX sh: in single quotes, each `'` as `'\''`.
fn sh_quote(word: &str) -> String {
    let mut q = String::with_capacity(word.len() + 2);
    q.push('\'');
    for c in word.chars() {
        if c == '\'' {
            q.push_str("'\\''");
        } else {
            q.push(c);
        }
    }
    q.push('\'');
    q
}

/// The program's first line: Slurm's output variables unset.
fn unset_line() -> String {
    format!("unset {} 2>/dev/null\n", SLURM_OUTPUT_VARS.join(" "))
}

/// `argv` as one sh command line, each word quoted.
fn command_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| sh_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the login shell gets for `program`: `sh`, which decodes and runs it.
fn for_login_shell(program: &str) -> String {
    format!(
        "sh -c 'eval \"$(printf %s {} | base64 -d)\"'",
        base64(program.as_bytes())
    )
}

/// The sh program that runs `argv` between the markers (see the module's doc).
pub fn program(argv: &[String], marker: &str) -> String {
    let mut p = unset_line();
    let _ = writeln!(p, "printf '%s' '{marker}s'; printf '%s' '{marker}s' >&2");
    let _ = writeln!(p, "{}", command_line(argv));
    let _ = writeln!(
        p,
        "r=$?; printf '%se%d.' '{marker}' \"$r\"; printf '%se%d.' '{marker}' \"$r\" >&2; exit \"$r\""
    );
    p
}

/// The one line ssh sends: the login shell runs `sh`, which decodes and runs [`program`].
/// Made only of `[A-Za-z0-9+/=]` inside single quotes, plus `sh -c`, `"`, `$(`, `%`, `|`:
/// read the same by bash, dash, zsh, ksh, tcsh/csh and fish.
pub fn login_line(argv: &[String], marker: &str) -> String {
    for_login_shell(&program(argv, marker))
}

/// The same program for an interactive command (a shell in a job): no markers, the terminal
/// shows whatever the login prints.
pub fn login_line_interactive(argv: &[String]) -> String {
    for_login_shell(&format!("{}exec {}\n", unset_line(), command_line(argv)))
}

/// Standard base64 with padding (RFC 4648).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One stream of a framed command, its frame taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unframed {
    /// The command's own bytes.
    pub bytes: Vec<u8>,
    /// What the login printed around them (before and after), for `doctor`.
    pub noise: Vec<u8>,
    /// The exit status the end marker carries, when it came.
    pub code: Option<i32>,
    /// The start marker was there: the program ran.
    pub started: bool,
}

impl Unframed {
    /// How many lines the login printed around the command (a last one without its newline
    /// counts too).
    pub fn noise_lines(&self) -> usize {
        let n = self.noise.iter().filter(|&&b| b == b'\n').count();
        n + usize::from(self.noise.last().is_some_and(|&b| b != b'\n'))
    }
}

/// Takes the frame off one stream of a command run as [`login_line`] with `marker`. Without a
/// start marker (the program never ran: no `sh` or `base64` there, or the login failed) the
/// whole stream is returned as the command's, so its error is seen.
pub fn unframe(stream: &[u8], marker: &str) -> Unframed {
    unframe_vec(stream.to_vec(), marker)
}

/// [`unframe`] of a stream read whole, reusing its buffer for the command's bytes: a large
/// answer (a 100,000-job squeue is about 20 MB) is not held twice.
pub fn unframe_vec(mut stream: Vec<u8>, marker: &str) -> Unframed {
    let start = format!("{marker}s");
    let Some(s) = find(&stream, start.as_bytes()) else {
        return Unframed {
            bytes: stream,
            noise: Vec::new(),
            code: None,
            started: false,
        };
    };
    let body_at = s + start.len();
    let mut noise = stream[..s].to_vec();
    let end = format!("{marker}e");
    let code = match rfind(&stream[body_at..], end.as_bytes()) {
        Some(e) => {
            let e = body_at + e;
            let tail = &stream[e + end.len()..];
            let digits = tail.iter().position(|&b| b == b'.');
            let code = digits.and_then(|d| std::str::from_utf8(&tail[..d]).ok()?.parse().ok());
            let after = digits.map_or(tail.len(), |d| d + 1);
            noise.extend_from_slice(&tail[after..]);
            stream.truncate(e);
            code
        }
        None => None,
    };
    stream.drain(..body_at);
    Unframed {
        bytes: stream,
        noise,
        code,
        started: true,
    }
}

/// Takes the frame off a stream that arrives in pieces (a followed log): what comes before
/// the start marker is dropped, and the end marker (with what follows it) is never passed on.
/// The last few bytes are held back until it is clear they are not the end marker's start.
#[derive(Debug)]
pub struct StreamUnframer {
    start: Vec<u8>,
    end: Vec<u8>,
    started: bool,
    ended: bool,
    buf: Vec<u8>,
    /// The bytes before the start marker, kept (up to a bound) in case it never comes.
    before: Vec<u8>,
}

/// How much of a stream without a start marker is kept to show as its output.
const BEFORE_CAP: usize = 64 * 1024;

impl StreamUnframer {
    pub fn new(marker: &str) -> StreamUnframer {
        StreamUnframer {
            start: format!("{marker}s").into_bytes(),
            end: format!("{marker}e").into_bytes(),
            started: false,
            ended: false,
            buf: Vec::new(),
            before: Vec::new(),
        }
    }

    /// The command's bytes in `chunk` that are safe to pass on now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.ended {
            return Vec::new();
        }
        self.buf.extend_from_slice(chunk);
        if !self.started {
            match find(&self.buf, &self.start) {
                Some(s) => {
                    self.started = true;
                    self.buf.drain(..s + self.start.len());
                    self.before.clear();
                }
                None => {
                    // Keep only what could still be the marker's beginning.
                    let keep = self.start.len().saturating_sub(1);
                    if self.buf.len() > keep {
                        let cut = self.buf.len() - keep;
                        let room = BEFORE_CAP.saturating_sub(self.before.len());
                        self.before.extend_from_slice(&self.buf[..cut.min(room)]);
                        self.buf.drain(..cut);
                    }
                    return Vec::new();
                }
            }
        }
        if let Some(e) = find(&self.buf, &self.end) {
            self.ended = true;
            let out = self.buf[..e].to_vec();
            self.buf.clear();
            return out;
        }
        // Hold back a tail that may be the end marker's first bytes.
        let hold = partial_at_end(&self.buf, &self.end);
        let cut = self.buf.len() - hold;
        self.buf.drain(..cut).collect()
    }

    /// At the end of the stream: what is still held back (the end marker never came), or,
    /// if the start marker never came, what the stream held, so its error is seen.
    pub fn finish(&mut self) -> Vec<u8> {
        if self.ended {
            return Vec::new();
        }
        if !self.started {
            let mut all = std::mem::take(&mut self.before);
            all.append(&mut self.buf);
            return all;
        }
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
