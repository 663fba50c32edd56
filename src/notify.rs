//! Telling the user about job changes outside the screen: the terminal bell, desktop
//! notifications through terminal escapes (OSC 9, OSC 777) or `notify-send`. The App decides
//! what to say (`Cmd::Notify`); the dashboard calls [`deliver`] between frames, never from
//! drawing. Everything but the final write/spawn is pure and tested.

use std::io::Write;

use serde::{Deserialize, Serialize};

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub title: String,
    pub body: String,
    /// A failure: notify-send marks it critical.
    pub urgent: bool,
}

/// How desktop notifications are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Desktop {
    /// A terminal escape when the terminal is known to show it, else notify-send on a local
    /// graphical session, else nothing.
    #[default]
    Auto,
    /// `ESC ] 9 ; text BEL` (iTerm2, WezTerm, ghostty, Windows Terminal, ...).
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL` (urxvt, foot, some VTE builds).
    Osc777,
    NotifySend,
    Off,
}

/// `[notify]` in the config.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// Ring the terminal bell on each notification.
    pub bell: bool,
    pub desktop: Desktop,
}

/// What `auto` resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Osc9,
    Osc777,
    NotifySend,
    Off,
}

/// Resolves `desktop` for this terminal. `env` reads environment variables;
/// `has_notify_send` says whether `notify-send` is on PATH.
pub fn resolve(
    desktop: Desktop,
    env: &dyn Fn(&str) -> Option<String>,
    has_notify_send: bool,
) -> Method {
    match desktop {
        Desktop::Osc9 => Method::Osc9,
        Desktop::Osc777 => Method::Osc777,
        Desktop::NotifySend if has_notify_send => Method::NotifySend,
        Desktop::NotifySend | Desktop::Off => Method::Off,
        Desktop::Auto => {
            let term_program = env("TERM_PROGRAM").unwrap_or_default();
            let term = env("TERM").unwrap_or_default();
            if ["iTerm.app", "WezTerm", "ghostty"].contains(&term_program.as_str())
                || env("WT_SESSION").is_some()
            {
                Method::Osc9
            } else if term.starts_with("rxvt") || term.starts_with("foot") {
                Method::Osc777
            } else if has_notify_send
                && (env("DISPLAY").is_some() || env("WAYLAND_DISPLAY").is_some())
                && env("SSH_CONNECTION").is_none()
            {
                Method::NotifySend
            } else {
                Method::Off
            }
        }
    }
}

/// Text that is safe inside an escape sequence: no control characters (ESC, BEL, C1), at
/// most 200 characters. Job names are user text and must not end the sequence early.
pub fn sanitize(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let t = t.trim();
    if t.chars().count() > 200 {
        format!("{}…", t.chars().take(199).collect::<String>())
    } else {
        t.to_string()
    }
}

pub fn osc9(n: &Notification) -> String {
    format!("\x1b]9;{}: {}\x07", sanitize(&n.title), sanitize(&n.body))
}

pub fn osc777(n: &Notification) -> String {
    // The title ends at the next ';'.
    let title = sanitize(&n.title).replace(';', ",");
    format!("\x1b]777;notify;{title};{}\x07", sanitize(&n.body))
}

/// Inside tmux an escape reaches the outer terminal only through DCS passthrough (and tmux
/// must have `allow-passthrough on`).
pub fn tmux_wrap(seq: &str) -> String {
    format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b"))
}

/// The bytes to write to the terminal for `n` (bell and/or escape); empty for none.
pub fn terminal_bytes(n: &Notification, bell: bool, method: Method, in_tmux: bool) -> String {
    let mut out = String::new();
    if bell {
        out.push('\x07');
    }
    let seq = match method {
        Method::Osc9 => osc9(n),
        Method::Osc777 => osc777(n),
        Method::NotifySend | Method::Off => return out,
    };
    if in_tmux {
        out.push_str(&tmux_wrap(&seq));
    } else {
        out.push_str(&seq);
    }
    out
}

/// notify-send's argv: every piece one argument, never a shell string.
pub fn notify_send_argv(n: &Notification) -> Vec<String> {
    let mut v = vec!["notify-send".to_string(), "--app-name=slurmdash".into()];
    if n.urgent {
        v.push("--urgency=critical".into());
    }
    v.push("--".into());
    v.push(sanitize(&n.title));
    v.push(sanitize(&n.body));
    v
}

/// Whether `program` is an executable file on PATH.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Notification settings resolved once for this terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub bell: bool,
    pub method: Method,
    pub in_tmux: bool,
}

impl Settings {
    pub fn from_config(c: &NotifyConfig) -> Settings {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Settings {
            bell: c.bell,
            method: resolve(c.desktop, &env, on_path("notify-send")),
            in_tmux: env("TMUX").is_some(),
        }
    }
}

/// Performs a notification: writes the escapes to the terminal, or spawns notify-send
/// without waiting for it. Failures are ignored: a notification is never worth an error.
pub fn deliver(n: &Notification, s: &Settings) {
    let bytes = terminal_bytes(n, s.bell, s.method, s.in_tmux);
    if !bytes.is_empty() {
        let mut out = std::io::stdout();
        let _ = out.write_all(bytes.as_bytes());
        let _ = out.flush();
    }
    if s.method == Method::NotifySend {
        let argv = notify_send_argv(n);
        let child = tokio::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut c) = child {
            tokio::spawn(async move {
                let _ = c.wait().await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(body: &str) -> Notification {
        Notification {
            title: "slurmdash · dev".into(),
            body: body.into(),
            urgent: false,
        }
    }

    #[test]
    fn osc_escapes_have_the_documented_shape() {
        assert_eq!(
            osc9(&n("job 7 train completed")),
            "\x1b]9;slurmdash · dev: job 7 train completed\x07"
        );
        assert_eq!(
            osc777(&n("job 7 train completed")),
            "\x1b]777;notify;slurmdash · dev;job 7 train completed\x07"
        );
    }

    #[test]
    fn hostile_job_names_cannot_break_out_of_the_escape() {
        let evil = "job 8 x\x07\x1b]0;pwned\x07\x1b[2J\u{9b}31m done";
        for s in [osc9(&n(evil)), osc777(&n(evil))] {
            let inner = &s[1..s.len() - 1];
            assert!(!inner.contains('\x07') && !inner.contains('\x1b'), "{s:?}");
            assert!(!inner.contains('\u{9b}'), "{s:?}");
        }
        let t = Notification {
            title: "a;b".into(),
            body: "c;d".into(),
            urgent: false,
        };
        assert_eq!(osc777(&t), "\x1b]777;notify;a,b;c;d\x07");
        assert_eq!(sanitize(&"x".repeat(500)).chars().count(), 200);
    }

    #[test]
    fn bell_and_tmux_passthrough() {
        let b = terminal_bytes(&n("x"), true, Method::Off, false);
        assert_eq!(b, "\x07");
        assert_eq!(terminal_bytes(&n("x"), false, Method::NotifySend, true), "");
        let t = terminal_bytes(&n("x"), false, Method::Osc9, true);
        assert_eq!(t, "\x1bPtmux;\x1b\x1b]9;slurmdash · dev: x\x07\x1b\\");
    }

    #[test]
    fn notify_send_gets_separate_arguments() {
        let mut m = n("job 9 '; rm -rf ~' failed");
        m.urgent = true;
        assert_eq!(
            notify_send_argv(&m),
            vec![
                "notify-send",
                "--app-name=slurmdash",
                "--urgency=critical",
                "--",
                "slurmdash · dev",
                "job 9 '; rm -rf ~' failed"
            ]
        );
    }

    #[test]
    fn auto_picks_by_terminal_then_session() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            resolve(Desktop::Auto, &env(&[("TERM_PROGRAM", "WezTerm")]), true),
            Method::Osc9
        );
        assert_eq!(
            resolve(Desktop::Auto, &env(&[("TERM", "foot")]), true),
            Method::Osc777
        );
        assert_eq!(
            resolve(
                Desktop::Auto,
                &env(&[("TERM", "xterm-256color"), ("DISPLAY", ":0")]),
                true
            ),
            Method::NotifySend
        );
        // Over ssh notify-send would notify the wrong machine.
        assert_eq!(
            resolve(
                Desktop::Auto,
                &env(&[("DISPLAY", ":0"), ("SSH_CONNECTION", "1 2 3 4")]),
                true
            ),
            Method::Off
        );
        assert_eq!(
            resolve(Desktop::Auto, &env(&[("DISPLAY", ":0")]), false),
            Method::Off
        );
        assert_eq!(resolve(Desktop::NotifySend, &env(&[]), false), Method::Off);
        assert_eq!(resolve(Desktop::Osc777, &env(&[]), false), Method::Osc777);
        assert_eq!(
            resolve(Desktop::Off, &env(&[("TERM_PROGRAM", "WezTerm")]), true),
            Method::Off
        );
    }

    #[test]
    fn config_names() {
        let c: NotifyConfig =
            toml::from_str("bell = true\ndesktop = \"notify-send\"\n").expect("parses");
        assert_eq!(c.desktop, Desktop::NotifySend);
        assert!(c.bell);
        for (s, d) in [
            ("auto", Desktop::Auto),
            ("osc9", Desktop::Osc9),
            ("osc777", Desktop::Osc777),
            ("off", Desktop::Off),
        ] {
            let c: NotifyConfig = toml::from_str(&format!("desktop = \"{s}\"")).expect("parses");
            assert_eq!(c.desktop, d);
        }
        assert!(toml::from_str::<NotifyConfig>("desktop = \"smoke\"").is_err());
    }
}
