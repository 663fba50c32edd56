//! The real binary in a real terminal: tmux sessions read back with capture-pane.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{dev_config, text};

/// One tmux server per session (its own socket, `-L`): a test that ends its session takes
/// only its own server down, never one another test is starting a session on (tmux's
/// "server exited unexpectedly" when the last session of a shared server closes).
pub struct Tmux {
    pub name: String,
}

impl Tmux {
    /// Starts slurmdash in a detached 200x50 tmux session. When slurmdash exits, the pane
    /// prints `EXITED:<code>` and stays open so the test can read the restored terminal.
    pub fn start(config: &Path, extra: &[&str]) -> Tmux {
        Tmux::start_with(config, extra, &[])
    }

    /// `start` with environment variables for slurmdash (values without quotes or spaces).
    /// Unless `env` names one, slurmdash gets a state directory of its own, so launches
    /// that other tests record in the default registry never show in this dashboard.
    pub fn start_with(config: &Path, extra: &[&str], env: &[(&str, &str)]) -> Tmux {
        let name = format!("sdtest-{}-{}", std::process::id(), rand_suffix());
        let own_state = std::env::temp_dir().join(format!("{name}-state"));
        let own_state = own_state.display().to_string();
        let mut env = env.to_vec();
        if !env.iter().any(|(k, _)| *k == "SLURMDASH_STATE_DIR") {
            env.push(("SLURMDASH_STATE_DIR", &own_state));
        }
        let bin = env!("CARGO_BIN_EXE_slurmdash");
        let mut cmd = format!("{bin} --config {}", config.display());
        for a in extra {
            cmd.push(' ');
            cmd.push_str(a);
        }
        cmd.push_str("; echo EXITED:$?; sleep 60");
        let shell = format!(
            "env -u NO_COLOR TERM=xterm-256color {} sh -c '{cmd}'",
            env.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        Tmux::spawn(name, 200, 50, &shell)
    }

    /// A detached `cols`x`rows` session named `name` on a server of its own running
    /// `shell` (a command line for `sh -c`).
    pub fn spawn(name: String, cols: u16, rows: u16, shell: &str) -> Tmux {
        let t = Tmux { name };
        let out = t
            .cmd()
            .args(["new-session", "-d", "-s", &t.name])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg(shell)
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            text(&out.stderr)
        );
        t
    }

    /// `tmux` aimed at this session's own server.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.name]);
        c
    }

    /// Appends everything the program writes to `path`, before tmux interprets it (to see
    /// escapes such as OSC 9 that never reach the screen).
    pub fn pipe_to(&self, path: &Path) {
        let ok = self
            .cmd()
            .args(["pipe-pane", "-o", "-t", &self.name])
            .arg(format!("cat >> {}", path.display()))
            .status()
            .expect("pipe-pane");
        assert!(ok.success());
    }

    pub fn screen(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("capture-pane");
        text(&out.stdout)
    }

    /// Sends each key in turn. After `Escape` it waits a full second: a terminal program
    /// reads ESC and the byte right behind it in one read as Alt+key (so `Escape` then `/`
    /// would arrive as Alt+/ on a loaded machine, and the keys typed next would land in
    /// the queue as commands).
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = self
                .cmd()
                .args(["send-keys", "-t", &self.name, k])
                .status()
                .expect("send-keys");
            assert!(ok.success());
            let pause = if matches!(*k, "Escape" | "Esc" | "C-[") {
                1000
            } else {
                150
            };
            std::thread::sleep(Duration::from_millis(pause));
        }
    }

    /// Types `text` as it is (tmux `send-keys -l`: no key names, `$` and quotes literal).
    pub fn type_text(&self, text: &str) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .expect("send-keys -l");
        assert!(ok.success());
        std::thread::sleep(Duration::from_millis(150));
    }

    pub fn alternate_screen_on(&self) -> bool {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", &self.name, "#{alternate_on}"])
            .output()
            .expect("display-message");
        text(&out.stdout).trim() == "1"
    }

    /// Filters the queue to `text` as a user does (`/`, the text, Enter) and waits until the
    /// queue's title shows the filter. Keys typed while the program is still busy with
    /// something else (a form closing, the first answer) can miss the filter prompt, so the
    /// filter is typed again, its line cleared first (C-u), until the title shows it or
    /// `limit` passes.
    pub fn filter(&self, text: &str, limit: Duration) -> String {
        let start = Instant::now();
        let shown = format!("filter: {text} ");
        loop {
            self.keys(&["/", "C-u"]);
            self.type_text(text);
            self.keys(&["Enter"]);
            let tried = Instant::now();
            while tried.elapsed() < Duration::from_secs(5) {
                let s = self.screen();
                if s.contains(&shown) {
                    return s;
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            assert!(
                start.elapsed() < limit,
                "timed out after {limit:?} filtering the queue to {text:?}; the screen was (blank lines left out):\n{}",
                non_blank(&self.screen())
            );
        }
    }

    /// Waits until the screen satisfies `f`; on timeout panics showing the last screen.
    pub fn wait(&self, what: &str, limit: Duration, f: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            assert!(
                start.elapsed() < limit,
                "timed out after {limit:?} waiting for {what}; the screen was (blank lines left out):\n{}",
                non_blank(&s)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Waits for the note a submission leaves, "submitted job N · logs PATH", and returns
    /// N. Up to the text after the id, so a frame caught half drawn never
    /// gives a cut id.
    pub fn submitted_job(&self, limit: Duration) -> u64 {
        let s = self.wait("the submission", limit, |s| {
            s.split("submitted job ")
                .nth(1)
                .is_some_and(|r| r.contains(" · logs "))
        });
        s.split("submitted job ")
            .nth(1)
            .and_then(|r| r.split(" · logs ").next())
            .and_then(|w| w.trim().parse().ok())
            .unwrap_or_else(|| panic!("no job id on screen:\n{s}"))
    }

    /// Presses `keys` until the screen satisfies `f`, for a view the dashboard opens only
    /// once it has caught up (`L` before sacct has the ended job): each press gets
    /// `per_press`, then `after_miss` may tidy up (close a view that opened instead) before
    /// the next; all within `limit`. Returns the screen.
    pub fn press_until(
        &self,
        keys: &[&str],
        what: &str,
        per_press: Duration,
        limit: Duration,
        f: impl Fn(&str) -> bool,
        after_miss: impl Fn(&Tmux, &str),
    ) -> String {
        let start = Instant::now();
        loop {
            self.keys(keys);
            let pressed = Instant::now();
            while pressed.elapsed() < per_press {
                let s = self.screen();
                if f(&s) {
                    return s;
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            let s = self.screen();
            assert!(
                start.elapsed() < limit,
                "timed out after {limit:?} pressing {keys:?} for {what}; the screen was (blank lines left out):\n{}",
                non_blank(&s)
            );
            after_miss(self, &s);
        }
    }
}

/// True once the dashboard shows a finished refresh ("updated 2s ago"), not merely its
/// status bar ("not updated yet" also contains "updated"): keys sent before that meet an
/// empty queue.
pub fn refreshed(screen: &str) -> bool {
    screen.match_indices("updated ").any(|(i, _)| {
        !screen[..i].ends_with("not ") && screen[i + 8..].starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The queue's age as the status bar says it ("updated 12s ago": 12; minutes and hours in
/// seconds), if it says one.
pub fn updated_secs(screen: &str) -> Option<u64> {
    let i = screen.find("updated ")? + "updated ".len();
    let rest = &screen[i..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let n: u64 = digits.parse().ok()?;
    match rest[digits.len()..].chars().next()? {
        's' => Some(n),
        'm' => Some(n * 60),
        'h' => Some(n * 3600),
        _ => None,
    }
}

/// The screen without its empty lines (only spaces and box borders), so a failure message
/// cut to its first lines still shows the bottom of the screen.
pub fn non_blank(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| {
            l.chars()
                .any(|c| !c.is_whitespace() && !"│┌┐└┘─├┤".contains(c))
        })
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

pub fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

/// The queue row whose first cell is exactly `id` (small ids also occur inside other rows).
pub fn row(screen: &str, id: u64) -> Option<&str> {
    let id = id.to_string();
    screen
        .lines()
        .find(|l| l.trim_start_matches(['│', ' ']).split_whitespace().next() == Some(id.as_str()))
}

/// The text of the pane whose border starts at the left edge below the queue (the detail
/// pane), its wrapped lines joined with single spaces, so a check does not depend on where
/// the pane's width broke a line.
pub fn left_pane_text(screen: &str) -> String {
    let mut words = Vec::new();
    for line in screen.lines() {
        let Some(rest) = line.strip_prefix('│') else {
            continue;
        };
        let cell = rest.split('│').next().unwrap_or("");
        words.extend(cell.split_whitespace().map(str::to_string));
    }
    words.join(" ")
}

/// The dev cluster's config with a 2 s poll interval.
pub fn fast_config(dir: &Path) -> PathBuf {
    let mut cfg = std::fs::read_to_string(dev_config()).expect("dev config");
    cfg.push_str("poll_interval_secs = 2\n");
    let p = dir.join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}
