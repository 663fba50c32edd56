//! A login node reachable only through a bastion that asks for a one-time code (the dev
//! cluster's `bastion` and `innerlogin`, scripts/dev-cluster.d/bastion.sh), driven through
//! the real binary in tmux with real codes from oathtool. The login node's banner comes only
//! once the bastion's code is answered, so a person who takes their time must not be cut
//! off. Each test has a runtime directory of its own (`XDG_RUNTIME_DIR`), so none reuses
//! another's login, and ends its masters when it ends.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::bastion;
use common::tmux::{refreshed, Tmux};
use common::{master_pid, text, totp, RuntimeDir};

const LIMIT: Duration = Duration::from_secs(40);
const PROMPT: &str = "Verification code:";
/// How long the person takes to type the code: longer than any connect timeout slurmdash
/// sets (10 s by default), shorter than the bastion's LoginGraceTime (120 s).
const SLOW: Duration = Duration::from_secs(20);

fn prompts(screen: &str) -> usize {
    screen.matches(PROMPT).count()
}

/// The screen with its wrapped lines joined (long messages span several rows).
fn joined(screen: &str) -> String {
    screen.lines().map(str::trim_end).collect()
}

/// The one socket in the test's runtime directory: where the login's master is.
fn login_socket(rt: &RuntimeDir) -> PathBuf {
    let socks = rt.sockets();
    assert_eq!(socks.len(), 1, "one login socket: {socks:?}");
    socks[0].clone()
}

fn slurmdash(cfg: &Path, rt: &RuntimeDir, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(cfg)
        .args(args)
        .env("XDG_RUNTIME_DIR", rt.env())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("slurmdash {args:?}: {e}"))
}

/// The ssh processes that carry this test's connections through the bastion (`ssh -W ...
/// bastion`, started by the login's master and left running when it went to the
/// background): found by the runtime directory in their environment.
fn jump_sshs(rt: &RuntimeDir) -> Vec<u32> {
    let want = format!("XDG_RUNTIME_DIR={}", rt.env());
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let argv: Vec<String> = cmdline(*pid).split(' ').map(str::to_string).collect();
            argv.first()
                .is_some_and(|a| a == "ssh" || a.ends_with("/ssh"))
                && argv.iter().any(|a| a == "-W")
                && argv.iter().any(|a| a == bastion::JUMP)
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| text(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// `slurmdash login` in a terminal, the code typed [`SLOW`] after the prompt shows: logged
/// in through the bastion, and a command with no terminal then reuses that login.
#[test]
fn a_code_typed_after_20_seconds_logs_in_through_the_bastion() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [("XDG_RUNTIME_DIR", xdg.as_str())];
    let cfg = bastion::slurmdash_config();
    let t = Tmux::start_with(&cfg, &["login"], &env);
    let s = t.wait("the bastion's code prompt", LIMIT, |s| prompts(s) == 1);
    let asked = Instant::now();
    assert!(!s.contains("EXITED:"), "{s}");
    std::thread::sleep(SLOW);
    let s = t.screen();
    assert!(
        !s.contains("EXITED:") && !s.contains("timed out"),
        "the login gave up while the person was typing:\n{s}"
    );
    t.keys(&[&totp::code_now(), "Enter"]);
    let s = t.wait("login done", LIMIT, |s| s.contains("EXITED:"));
    assert!(asked.elapsed() >= SLOW);
    assert!(s.contains("EXITED:0"), "{s}");
    assert_eq!(prompts(&s), 1, "asked more than once:\n{s}");
    let j = joined(&s);
    assert!(
        j.contains("connected to cluster `inner` through innerlogin"),
        "{s}"
    );
    let sock = login_socket(&rt);
    assert!(j.contains(&format!("ssh -S {}", sock.display())), "{s}");

    // Commands with no terminal reuse it: the jobs of the login node's Slurm.
    let out = slurmdash(&cfg, &rt, &["jobs", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).trim_start().starts_with('['),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(login_socket(&rt), sock, "a second login was made");
}

/// Wrong codes until the bastion stops asking: the message says the code was refused or
/// came too late, names the bastion, and no master is left.
#[test]
fn a_refused_code_is_said_with_the_jump_host() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [("XDG_RUNTIME_DIR", xdg.as_str())];
    let cfg = bastion::slurmdash_config();
    let t = Tmux::start_with(&cfg, &["login"], &env);
    let wrong = totp::wrong_code();
    let mut asked = 1;
    t.wait("the code prompt", LIMIT, |s| prompts(s) == asked);
    let s = loop {
        t.keys(&[&wrong, "Enter"]);
        let s = t.wait("another prompt or the end", LIMIT, |s| {
            prompts(s) > asked || s.contains("EXITED:")
        });
        if s.contains("EXITED:") {
            break s;
        }
        asked += 1;
        assert!(asked <= 6, "the bastion never stopped asking:\n{s}");
    };
    assert!(s.contains("EXITED:1"), "{s}");
    assert!(!s.contains("panicked"), "{s}");
    let j = joined(&s);
    assert!(
        j.contains("innerlogin (through jump host bastion): the login was not completed"),
        "{s}"
    );
    assert!(j.contains("refused or typed too late"), "{s}");
    assert!(j.contains("run `slurmdash login` to try again"), "{s}");
    assert!(!s.contains(&wrong), "the code was echoed:\n{s}");
    assert!(rt.masters().is_empty(), "a master was left behind");
}

/// The dashboard asks for the code once and a CLI call beside it shares that login; when
/// the connection through the bastion dies, the dashboard says to log in, one `slurmdash
/// login` brings it back, and doctor then passes, naming the bastion and the hop that
/// asks for the code.
#[test]
fn the_dashboard_and_the_cli_share_one_login_that_one_login_brings_back() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [("XDG_RUNTIME_DIR", xdg.as_str())];
    let cfg = bastion::slurmdash_config();
    let t = Tmux::start_with(&cfg, &[], &env);
    t.wait("the bastion's code prompt", LIMIT, |s| prompts(s) == 1);
    assert!(
        !t.alternate_screen_on(),
        "the UI took the screen before the login"
    );
    t.keys(&[&totp::code_now(), "Enter"]);
    t.wait("the dashboard on the login node", LIMIT, |s| {
        s.contains("innerlogin connected") && refreshed(s)
    });
    let sock = login_socket(&rt);

    // A CLI call beside it: no terminal to ask in, so it works only by sharing the login.
    let out = slurmdash(&cfg, &rt, &["jobs", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(login_socket(&rt), sock);

    // The connection through the bastion dies (its jump ssh is killed): the master ends.
    assert!(master_pid(&sock).is_some(), "the login's master answers");
    let jump = jump_sshs(&rt);
    assert_eq!(
        jump.len(),
        1,
        "one ssh to the bastion for the login: {jump:?}"
    );
    // SAFETY: kill() has no memory-safety preconditions.
    unsafe {
        libc::kill(jump[0] as i32, libc::SIGKILL);
    }
    let s = t.wait("login needed", LIMIT, |s| s.contains("login needed"));
    assert!(joined(&s).contains("slurmdash login"), "{s}");
    let out = slurmdash(&cfg, &rt, &["jobs", "--json"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("slurmdash --cluster inner login"),
        "{}",
        text(&out.stderr)
    );

    // One `slurmdash login`, one code: the dashboard resumes by itself.
    let login = Tmux::start_with(&cfg, &["login"], &env);
    login.wait("the login prompt", LIMIT, |s| prompts(s) == 1);
    login.keys(&[&totp::code_now(), "Enter"]);
    let said = login.wait("login done", LIMIT, |s| s.contains("EXITED:"));
    assert!(said.contains("EXITED:0"), "{said}");
    assert_eq!(prompts(&said), 1, "{said}");
    assert_eq!(login_socket(&rt), sock);
    t.wait("the dashboard connected again", LIMIT, |s| {
        s.contains("innerlogin connected") && !s.contains("login needed")
    });
    let out = slurmdash(&cfg, &rt, &["jobs", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // doctor, on the open login: every check passes, and it says how the host is reached.
    let out = slurmdash(&cfg, &rt, &["doctor"]);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}\n{}", text(&out.stderr));
    assert!(
        report.contains("route to innerlogin: through jump host bastion"),
        "{report}"
    );
    assert!(
        report.contains("jump host bastion (hop 1 of 2) asks for a one-time code"),
        "{report}"
    );
    assert!(
        report.contains("ssh innerlogin: an open connection answered"),
        "{report}"
    );
    assert!(report.contains("all checks passed"), "{report}");

    t.keys(&["q"]);
    t.wait("the shell back", LIMIT, |s| s.contains("EXITED:0"));
}

/// doctor with no login open: it names the bastion, says that it asks for the code and
/// that the login node is reached only through it, and says to log in.
#[test]
fn doctor_names_the_jump_host_that_asks_for_the_code() {
    let rt = RuntimeDir::new();
    let cfg = bastion::slurmdash_config();
    let out = slurmdash(&cfg, &rt, &["doctor"]);
    let report = text(&out.stdout);
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("route to innerlogin: through jump host bastion (ProxyJump in "),
        "{report}"
    );
    assert!(report.contains("bastion -> innerlogin"), "{report}");
    assert!(
        report.contains("jump host bastion (hop 1 of 2) asks for a one-time code or password (keyboard-interactive); innerlogin is reached only through it"),
        "{report}"
    );
    assert!(
        report.contains("[FAIL] ssh innerlogin: cannot connect to innerlogin: login needed"),
        "{report}"
    );
    assert!(
        report.contains("-> run `slurmdash login` in a terminal"),
        "{report}"
    );
    // It asked nothing and left nothing behind.
    assert!(rt.masters().is_empty());
}

/// The dev bastion is what it claims: the login node refuses a connection that skips it,
/// and the bastion refuses a key without a code.
#[test]
fn the_login_node_is_reachable_only_through_the_bastion() {
    let ssh = |extra: &[&str], host: &str| {
        Command::new("ssh")
            .arg("-F")
            .arg(bastion::ssh_config())
            .args(["-o", "BatchMode=yes"])
            .args(extra)
            .args([host, "true"])
            .stdin(Stdio::null())
            .output()
            .expect("ssh")
    };
    let out = ssh(&["-o", "ProxyJump=none"], bastion::ALIAS);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Connection refused"),
        "{}",
        text(&out.stderr)
    );
    let out = ssh(&[], bastion::JUMP);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Permission denied (keyboard-interactive)"),
        "{}",
        text(&out.stderr)
    );
}

/// Without `interactive_login`, slurmdash's own logins run in BatchMode, which ssh passes to
/// no jump host: the bastion's prompt must still never reach the terminal (it would be drawn
/// over the dashboard and steal its keys). The command fails instead, without asking.
#[test]
fn without_interactive_login_the_bastion_never_prompts() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [("XDG_RUNTIME_DIR", xdg.as_str())];
    let text = std::fs::read_to_string(bastion::slurmdash_config()).expect("the bastion config");
    assert!(text.contains("interactive_login = true"), "{text}");
    let cfg = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "slurmdash-bastion-batch-{}.toml",
        std::process::id()
    ));
    std::fs::write(
        &cfg,
        text.replace("interactive_login = true", "interactive_login = false"),
    )
    .expect("write the config");
    let t = Tmux::start_with(&cfg, &["jobs"], &env);
    let s = t.wait("the command's end", LIMIT, |s| {
        s.contains("EXITED:") || prompts(s) > 0
    });
    assert_eq!(prompts(&s), 0, "the bastion asked on the terminal:\n{s}");
    assert!(s.contains("EXITED:1"), "{s}");
    assert!(joined(&s).contains("cannot connect to innerlogin"), "{s}");
    let _ = std::fs::remove_file(&cfg);
}
