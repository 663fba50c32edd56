//! A login node that asks for a key and then a one-time code (the dev cluster's 2FA sshd on
//! 127.0.0.1:22099, PAM with TOTP), driven through the real binary in tmux with real codes
//! from oathtool. The login's master sits at the cluster's stable socket in the runtime
//! directory, which every slurmdash shares; each test has a runtime directory of its own
//! (`XDG_RUNTIME_DIR`), so none reuses another's login, and ends its masters when it ends.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::tmux::{refreshed, Tmux};
use common::{master_exit, shared_dev_dir, text, RuntimeDir};

const LIMIT: Duration = Duration::from_secs(40);
const PROMPT: &str = "Verification code:";

fn oathtool(extra: &[&str]) -> String {
    let secret = std::fs::read_to_string(shared_dev_dir().join("totp/sduser.secret"))
        .expect("2FA secret (totp_up)");
    let out = Command::new("oathtool")
        .args(["--totp", "-b"])
        .args(extra)
        .arg(secret.trim())
        .output()
        .expect("oathtool");
    assert!(out.status.success(), "oathtool: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

fn code_now() -> String {
    oathtool(&[])
}

/// A code the server refuses now (none of the steps in its window).
fn wrong_code() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let mut valid: Vec<String> = oathtool(&["-w", "3"]).lines().map(str::to_string).collect();
    valid.push(oathtool(&["--now", &format!("@{}", now - 30)]));
    (0..10u32)
        .map(|d| format!("{d}{d}{d}{d}{d}{d}"))
        .find(|c| !valid.contains(c))
        .expect("a refused code")
}

/// The dev 2FA config (its master kept the default persist_secs after its last use).
fn config() -> PathBuf {
    common::totp::slurmdash_config()
}

fn prompts(screen: &str) -> usize {
    screen.matches(PROMPT).count()
}

/// The one socket in the test's runtime directory: where the login's master is.
fn login_socket(rt: &RuntimeDir) -> PathBuf {
    let socks = rt.sockets();
    assert_eq!(socks.len(), 1, "one login socket: {socks:?}");
    socks[0].clone()
}

fn master_alive(sock: &Path) -> bool {
    Command::new("ssh")
        .arg("-S")
        .arg(sock)
        .args(["-O", "check", "none"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_dashboard_asks_for_the_code_then_waits_for_a_new_login_when_the_master_dies() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [("XDG_RUNTIME_DIR", xdg.as_str())];
    let cfg = config();
    let t = Tmux::start_with(&cfg, &[], &env);
    // The prompt comes first, in the plain terminal.
    t.wait("the code prompt", LIMIT, |s| prompts(s) == 1);
    assert!(
        !t.alternate_screen_on(),
        "the UI took the screen before the login"
    );
    // A wrong code is asked again.
    let wrong = wrong_code();
    t.keys(&[&wrong, "Enter"]);
    let s = t.wait("the prompt again after a wrong code", LIMIT, |s| {
        prompts(s) == 2
    });
    assert!(s.contains("that answer was not accepted; try again"), "{s}");
    assert!(
        !s.contains(&wrong),
        "the code was echoed on the screen:\n{s}"
    );
    t.keys(&[&code_now(), "Enter"]);
    t.wait("the dashboard on the 2FA login", LIMIT, |s| {
        s.contains("slurmdash-dev-2fa connected") && refreshed(s)
    });
    assert!(t.alternate_screen_on());

    // The login's master ends mid-session: no reconnect loop, a clear instruction.
    let sock = login_socket(&rt);
    master_exit(&sock);
    let s = t.wait("login needed", LIMIT, |s| s.contains("login needed"));
    assert!(s.contains("slurmdash login"), "{s}");
    // It stays so, and never counts attempts (nothing is tried over the network).
    for _ in 0..3 {
        t.keys(&["r"]);
        std::thread::sleep(Duration::from_secs(2));
        let s = t.screen();
        assert!(s.contains("login needed"), "{s}");
        assert!(!s.contains("attempt"), "{s}");
        assert!(!s.contains("Permission denied"), "{s}");
    }

    // `slurmdash login` elsewhere, with a code: the dashboard resumes by itself.
    let login = Tmux::start_with(&cfg, &["login"], &env);
    login.wait("the login prompt", LIMIT, |s| prompts(s) == 1);
    login.keys(&[&code_now(), "Enter"]);
    let said = login.wait("login done", LIMIT, |s| s.contains("EXITED:"));
    assert!(said.contains("EXITED:0"), "{said}");
    // At the same stable socket, which it names (the screen wraps long lines: joined).
    let joined: String = said.lines().map(str::trim_end).collect();
    assert!(
        joined.contains(&format!("ssh -S {}", sock.display())),
        "{said}"
    );
    assert_eq!(login_socket(&rt), sock);
    t.wait("the dashboard connected again", LIMIT, |s| {
        s.contains("slurmdash-dev-2fa connected") && !s.contains("login needed")
    });

    // Later commands reuse the login without asking, even with no terminal.
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(&cfg)
        .args(["jobs", "--json"])
        .envs(env)
        .stdin(Stdio::null())
        .output()
        .expect("jobs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The dashboard's q leaves the person's login open for the next command.
    t.keys(&["q"]);
    t.wait("the shell back", LIMIT, |s| s.contains("EXITED:0"));
    assert!(master_alive(&sock), "q closed the login master");
}

#[test]
fn without_a_terminal_the_error_names_slurmdash_login() {
    let rt = RuntimeDir::new();
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(config())
        .env("XDG_RUNTIME_DIR", rt.env())
        .arg("jobs")
        .stdin(Stdio::null())
        .output()
        .expect("jobs");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("slurmdash --cluster dev2fa login"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `slurmdash ARGS` in a tmux pane whose shell survives ctrl-c (a trap, not an ignore, so
/// slurmdash and ssh get the default SIGINT), printing `EXITED:<code>` after.
fn start_surviving_ctrl_c(cfg: &Path, rt: &RuntimeDir, args: &str) -> Tmux {
    let name = format!(
        "sd2fa-int-{}-{}",
        std::process::id(),
        common::tmux::rand_suffix()
    );
    let cmd = format!(
        "trap : INT; XDG_RUNTIME_DIR={} {} --config {} {args}; echo EXITED:$?; sleep 60",
        rt.env(),
        env!("CARGO_BIN_EXE_slurmdash"),
        cfg.display()
    );
    Tmux::spawn(name, 200, 50, &format!("sh -c '{cmd}'"))
}

#[test]
fn closing_the_prompt_exits_cleanly() {
    let rt = RuntimeDir::new();
    let cfg = config();
    for args in ["login", ""] {
        let t = start_surviving_ctrl_c(&cfg, &rt, args);
        t.wait("the code prompt", LIMIT, |s| prompts(s) == 1);
        t.keys(&["C-c"]);
        let s = t.wait("the shell back", LIMIT, |s| s.contains("EXITED:"));
        assert!(!s.contains("panicked"), "{args}: {s}");
        assert!(s.contains("EXITED:1"), "{args}: {s}");
        assert!(s.contains("the login was not completed"), "{args}: {s}");
        assert!(
            rt.sockets().iter().all(|s| !master_alive(s)) && rt.masters().is_empty(),
            "{args}: a master was left behind"
        );
        assert!(!t.alternate_screen_on(), "{args}");
        // The terminal echoes again (echo was off while the code was typed).
        t.keys(&["typed-after"]);
        t.wait("echo back on", LIMIT, |s| s.contains("typed-after"));
    }
}

/// `slurmdash login` says each refused code was refused; when the server stops asking, it
/// ends with exit 1 and ssh's own words, leaving no master; a wrong code then the right one
/// logs in.
#[test]
fn login_says_each_refused_code_and_ends_cleanly_when_the_server_gives_up() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [("XDG_RUNTIME_DIR", xdg.as_str())];
    let cfg = config();

    let t = Tmux::start_with(&cfg, &["login"], &env);
    let wrong = wrong_code();
    let mut asked = 1;
    t.wait("the code prompt", LIMIT, |s| prompts(s) == asked);
    // Wrong codes until the server stops asking (ssh asks three times by default); each
    // refusal that is followed by a new prompt is said.
    let s = loop {
        t.keys(&[&wrong, "Enter"]);
        let s = t.wait("another prompt or the end", LIMIT, |s| {
            prompts(s) > asked || s.contains("EXITED:")
        });
        if s.contains("EXITED:") {
            break s;
        }
        asked += 1;
        assert!(asked <= 6, "the server never stopped asking:\n{s}");
        assert_eq!(
            s.matches("that answer was not accepted; try again").count(),
            asked - 1,
            "each refusal said once:\n{s}"
        );
    };
    assert!(asked >= 2, "only one code was asked for:\n{s}");
    assert!(s.contains("EXITED:1"), "{s}");
    assert!(!s.contains("panicked"), "{s}");
    assert!(
        s.contains("Permission denied"),
        "ssh's words are kept:\n{s}"
    );
    assert!(!s.contains(&wrong), "the code was echoed:\n{s}");
    assert!(
        rt.sockets().iter().all(|s| !master_alive(s)) && rt.masters().is_empty(),
        "a master was left behind after the failed login"
    );

    // A wrong code, then the right one: logged in, the master kept for later commands.
    let t = Tmux::start_with(&cfg, &["login"], &env);
    t.wait("the code prompt", LIMIT, |s| prompts(s) == 1);
    t.keys(&[&wrong, "Enter"]);
    let s = t.wait("the prompt again", LIMIT, |s| prompts(s) == 2);
    assert!(s.contains("that answer was not accepted; try again"), "{s}");
    t.keys(&[&code_now(), "Enter"]);
    let s = t.wait("login done", LIMIT, |s| s.contains("EXITED:"));
    assert!(s.contains("EXITED:0"), "{s}");
    let sock = login_socket(&rt);
    assert!(master_alive(&sock), "no master after the login");
    master_exit(&sock);
}
