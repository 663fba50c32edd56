//! `SLURMDASH_FRAME_LOG=FILE`: a trace for benchmarks (`scripts/bench-idle --scale`) of how
//! long a key takes to reach the screen in the whole program. The event loop appends one
//! line per key event it receives and one per frame it draws, with times from the monotonic
//! clock (CLOCK_MONOTONIC, the clock of Python's `time.monotonic()`), in microseconds:
//!
//! ```text
//! key 81234567890 j
//! frame 81234568012 81234568391
//! ```
//!
//! A frame line holds when drawing began and when the frame was written to the terminal.
//! Off unless the variable is set: the loop then holds `None` and reads no clock.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;

use crossterm::event::KeyEvent;

/// The environment variable that turns the trace on.
pub const VAR: &str = "SLURMDASH_FRAME_LOG";

/// An open trace file. Lines are flushed as written, so a reader sees a key's frame as soon
/// as it is on the screen.
pub struct FrameLog {
    out: BufWriter<File>,
}

impl FrameLog {
    /// The trace named by [`VAR`], or `None` when it is unset or cannot be opened (a
    /// benchmark that finds no file says so; the dashboard runs as usual).
    pub fn from_env() -> Option<FrameLog> {
        let path = std::env::var_os(VAR)?;
        FrameLog::open(Path::new(&path)).ok()
    }

    /// Appends to `path`, creating it (0600).
    pub fn open(path: &Path) -> std::io::Result<FrameLog> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        Ok(FrameLog {
            out: BufWriter::new(file),
        })
    }

    /// A key event received by the loop, before it is handled.
    pub fn key(&mut self, key: &KeyEvent) {
        let t = now_us();
        let _ = writeln!(self.out, "key {t} {}", key.code).and_then(|()| self.out.flush());
    }

    /// A frame drawn: `start` is [`now_us`] taken before drawing; the end is now.
    pub fn frame(&mut self, start: u64) {
        let t = now_us();
        let _ = writeln!(self.out, "frame {start} {t}").and_then(|()| self.out.flush());
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
        assert_eq!((lines[0][0], lines[0][2]), ("key", "j"), "{text}");
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
}
