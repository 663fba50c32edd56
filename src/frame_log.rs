//! `SLURMDASH_FRAME_LOG=FILE`: a trace for benchmarks (`scripts/bench-idle --scale`) of how
//! long a key takes to reach the screen in the whole program. The event loop appends one
//! line per key event it receives and one per frame it draws, with times from the monotonic
//! clock (CLOCK_MONOTONIC, the clock of Python's `time.monotonic()`), in microseconds:
//!
//! ```text
//! key 81234567890 char
//! key 81234567990 Enter
//! frame 81234568012 81234568391
//! ```
//!
//! A key line names the key's kind, never what was typed (`char` for any character, so a
//! password or token typed into a form never lands in the file; `ctrl-char`, `alt-char`
//! with a modifier; the named keys as they are: `Enter`, `Esc`, `Up`...). A frame line holds
//! when drawing began and when the frame was written to the terminal. The file is opened
//! as the debug log is (`debug_log::RotatingFile`: created 0600, never through a symbolic
//! link or a second hard link, moved to `FILE.1` at 10 MiB). Off unless the variable is
//! set: the loop then holds `None` and reads no clock.

use std::io::{BufWriter, Write};
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::debug_log::{RotatingFile, MAX_BYTES};

/// The environment variable that turns the trace on.
pub const VAR: &str = "SLURMDASH_FRAME_LOG";

/// An open trace file. Lines are flushed as written, so a reader sees a key's frame as soon
/// as it is on the screen.
pub struct FrameLog {
    out: BufWriter<RotatingFile>,
}

impl FrameLog {
    /// The trace named by [`VAR`]: `Ok(None)` when it is unset; an error saying why it
    /// cannot be opened (the dashboard shows it and runs as usual; a benchmark that finds
    /// no file says so).
    pub fn from_env() -> Result<Option<FrameLog>, String> {
        let Some(path) = std::env::var_os(VAR) else {
            return Ok(None);
        };
        FrameLog::open(Path::new(&path))
            .map(Some)
            .map_err(|e| format!("{VAR}: not tracing frames: {e}"))
    }

    /// Appends to `path`, creating it (0600); refuses a link or a file not the user's.
    pub fn open(path: &Path) -> std::io::Result<FrameLog> {
        Ok(FrameLog {
            out: BufWriter::new(RotatingFile::open_plain(path, MAX_BYTES)?),
        })
    }

    /// A key event received by the loop, before it is handled: its kind, not its text.
    pub fn key(&mut self, key: &KeyEvent) {
        let t = now_us();
        let _ = writeln!(self.out, "key {t} {}", kind(key)).and_then(|()| self.out.flush());
    }

    /// A frame drawn: `start` is [`now_us`] taken before drawing; the end is now.
    pub fn frame(&mut self, start: u64) {
        let t = now_us();
        let _ = writeln!(self.out, "frame {start} {t}").and_then(|()| self.out.flush());
    }
}

/// What the trace says of a key: `char` (with `ctrl-`/`alt-` when held) for a character,
/// whatever it is; a named key's name.
fn kind(key: &KeyEvent) -> String {
    match key.code {
        KeyCode::Char(_) => {
            let mut s = String::new();
            if key.modifiers.contains(KeyModifiers::CONTROL) {
                s.push_str("ctrl-");
            }
            if key.modifiers.contains(KeyModifiers::ALT) {
                s.push_str("alt-");
            }
            s.push_str("char");
            s
        }
        code => code.to_string().replace(' ', "-"),
    }
}

/// Microseconds on CLOCK_MONOTONIC.
pub fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given, which lives on this stack.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs * 1_000_000 + nanos / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    #[test]
    fn a_key_and_its_frame_are_one_line_each_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("frames");
        let mut log = FrameLog::open(&path).expect("open");
        let before = now_us();
        log.key(&KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE));
        let start = now_us();
        log.frame(start);
        log.key(&KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        // Read while the log is still open: each line is on disk once written.
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!((lines[0][0], lines[0][2]), ("key", "char"), "{text}");
        assert_eq!(lines[1][0], "frame", "{text}");
        assert_eq!(lines[2][..1], ["key"], "{text}");
        assert_eq!(lines[2][2], "Enter", "{text}");
        let key: u64 = lines[0][1].parse().expect("key time");
        let drawn: u64 = lines[1][1].parse().expect("frame start");
        let written: u64 = lines[1][2].parse().expect("frame end");
        assert!(before <= key && key <= drawn && drawn <= written, "{text}");
        assert_eq!(drawn, start);
    }

    #[test]
    fn appends_to_a_trace_already_there() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("frames");
        std::fs::write(&path, "frame 1 2\n").expect("write");
        let mut log = FrameLog::open(&path).expect("open");
        log.frame(3);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("frame 1 2\nframe 3 "), "{text}");
    }

    /// What is typed (a password into a form, a token after `:`) never reaches the trace:
    /// each character is only `char`; the named keys keep their names.
    #[test]
    fn typed_text_is_recorded_as_key_kinds_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("frames");
        let mut log = FrameLog::open(&path).expect("open");
        for c in "hunter2".chars() {
            log.key(&KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        log.key(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        log.key(&KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        log.key(&KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE));
        drop(log);
        let text = std::fs::read_to_string(&path).expect("read");
        let kinds: Vec<&str> = text
            .lines()
            .map(|l| l.split(' ').nth(2).unwrap_or(""))
            .collect();
        let mut want = vec!["char"; 7];
        want.extend(["ctrl-char", "Enter", "F5"]);
        assert_eq!(kinds, want, "{text}");
        assert!(!text.contains("hunter"), "{text}");
    }

    /// The trace is opened as the debug log is: 0600, narrowed if wider, and never through
    /// a link planted at its path (another user's file, or one of the user's own).
    #[test]
    fn the_trace_is_private_and_refuses_planted_links() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("frames");
        std::fs::write(&path, "").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let mut log = FrameLog::open(&path).expect("open");
        log.frame(1);
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).expect("symlink");
        let e = FrameLog::open(&link).err().expect("a symlink is refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&victim, &hard).expect("hard link");
        let e = FrameLog::open(&hard)
            .err()
            .expect("a second hard link is refused");
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("read"),
            "precious\n"
        );
    }
}
