//! Every way out of the dashboard cleans up like `q`: the terminal is restored, the SSH
//! master is gone with `persist_secs = 0` (and with it its session on the login node), with
//! `persist_secs > 0` only the one shared master is left, and no temporary directory is left
//! in /tmp. The real binary in tmux, on the dev cluster, each test with a runtime directory
//! of its own (`XDG_RUNTIME_DIR`), so the masters it looks at are its slurmdash's alone.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::tmux::{refreshed, Tmux};
use common::{dev_config, dev_config_persist, master_pid, text, RuntimeDir};

const LIMIT: Duration = Duration::from_secs(30);

fn children(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s[s.rfind(')')? + 2..].to_string();
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; its parent has not reaped it yet.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s[s.rfind(')')? + 2..]
                .split_whitespace()
                .next()
                .map(|st| st != "Z")
        })
        .unwrap_or(false)
}

/// The slurmdash process inside the tmux pane.
fn slurmdash_pid(t: &Tmux) -> u32 {
    let out = t
        .cmd()
        .args(["display-message", "-p", "-t", &t.name, "#{pane_pid}"])
        .output()
        .expect("tmux");
    let pane: u32 = text(&out.stdout).trim().parse().expect("pane pid");
    let start = Instant::now();
    loop {
        let mut frontier = vec![pane];
        while let Some(p) = frontier.pop() {
            for c in children(p) {
                let comm = std::fs::read_to_string(format!("/proc/{c}/comm")).unwrap_or_default();
                if comm.trim() == "slurmdash" {
                    return c;
                }
                frontier.push(c);
            }
        }
        assert!(start.elapsed() < LIMIT, "no slurmdash process in the pane");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn sd_prefix(pid: u32) -> String {
    format!("sd-{pid}-")
}

/// Temporary directories of slurmdash process `pid` in /tmp (for its askpass state, or the
/// sockets of masters that are its own).
fn sd_dirs(pid: u32) -> Vec<PathBuf> {
    let prefix = sd_prefix(pid);
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < LIMIT, "timed out after {LIMIT:?}: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts the dashboard (`persist_secs = 0`) with its own runtime directory, waits for its
/// master, and returns the pid.
fn started(env: &[(&str, &str)]) -> (Tmux, u32, RuntimeDir) {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let mut env = env.to_vec();
    env.push(("XDG_RUNTIME_DIR", &xdg));
    let t = Tmux::start_with(&dev_config(), &[], &env);
    let pid = slurmdash_pid(&t);
    wait_until("slurmdash's ssh master", || !rt.masters().is_empty());
    (t, pid, rt)
}

/// slurmdash has exited, its master is gone (`persist_secs = 0`: a second after the last
/// slurmdash using it lets go) with its socket, and nothing is left in /tmp.
fn assert_cleaned_up(pid: u32, rt: &RuntimeDir) {
    wait_until("slurmdash exits", || !alive(pid));
    wait_until("its ssh master is gone", || {
        rt.masters().is_empty() && rt.sockets().is_empty()
    });
    assert!(
        sd_dirs(pid).is_empty(),
        "temporary directories left: {:?}",
        sd_dirs(pid)
    );
}

fn connected(t: &Tmux) {
    t.wait("the first refresh", LIMIT, |s| {
        s.contains("slurmdash-dev connected") && refreshed(s)
    });
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
}

#[test]
fn closing_the_terminal_window_sighup_closes_the_master_and_removes_temp_files() {
    let (t, pid, rt) = started(&[]);
    connected(&t);
    // The window goes away: tmux hangs up on everything in the pane.
    let ok = t
        .cmd()
        .args(["kill-session", "-t", &t.name])
        .status()
        .expect("tmux kill-session");
    assert!(ok.success());
    assert_cleaned_up(pid, &rt);
}

#[test]
fn sigterm_and_sigint_restore_the_terminal_and_clean_up() {
    for sig in ["-TERM", "-INT"] {
        let (t, pid, rt) = started(&[]);
        connected(&t);
        signal(pid, sig);
        assert_cleaned_up(pid, &rt);
        let s = t.wait("the shell back", LIMIT, |s| s.contains("EXITED:"));
        assert!(s.contains("EXITED:0"), "{sig}: {s}");
        assert!(
            !t.alternate_screen_on(),
            "{sig}: still on the alternate screen"
        );
    }
}

#[test]
fn a_panic_in_a_worker_stops_the_dashboard_and_cleans_up() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let env = [
        ("SLURMDASH_TEST_PANIC", "worker"),
        ("RUST_BACKTRACE", "0"),
        ("RUST_LIB_BACKTRACE", "0"),
        ("XDG_RUNTIME_DIR", xdg.as_str()),
    ];
    let t = Tmux::start_with(&dev_config(), &[], &env);
    let pid = slurmdash_pid(&t);
    // The worker panics right after its first refresh, and the master it used lives a
    // second past the exit (persist_secs = 0): it may come and go before this looks. Its
    // log file beside the socket stays and shows it was there.
    wait_until(
        "slurmdash's ssh master, or its log once it has gone",
        || !rt.masters().is_empty() || rt.master_logs() > 0,
    );
    assert_cleaned_up(pid, &rt);
    let s = t.wait("the shell back", LIMIT, |s| s.contains("EXITED:"));
    assert!(s.contains("EXITED:1"), "{s}");
    assert!(s.contains("deliberate panic in the queue worker"), "{s}");
    assert!(
        s.contains("slurmdash: a background task panicked (the message is above)"),
        "{s}"
    );
    assert!(
        !t.alternate_screen_on(),
        "still on the alternate screen:\n{s}"
    );
}

/// `slurmdash logs ID --follow` interrupted with ctrl-c (SIGINT) or SIGHUP: the same
/// clean-up, and the exit code a shell expects (128 + the signal). Submits one sleeping
/// 1-CPU job (which fits beside the other tests' jobs) and cancels it at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_logs_follow_closes_its_master_and_removes_temp_files() {
    let r = common::remote();
    let dir = common::scratch(&r, "sigint").await;
    let job = common::sbatch(
        &r,
        &[
            "-p",
            "short",
            "-t",
            "5",
            "-o",
            &format!("{dir}/out.txt"),
            "--wrap",
            "echo started; sleep 300",
        ],
    )
    .await;
    for (sig, code) in [("-INT", 130), ("-HUP", 129)] {
        let rt = RuntimeDir::new();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_slurmdash"))
            .env("XDG_RUNTIME_DIR", rt.env())
            .arg("--config")
            .arg(dev_config())
            .args(["logs", &job.to_string(), "--follow"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run slurmdash logs");
        let pid = child.id();
        wait_until("the follower's ssh master", || !rt.masters().is_empty());
        signal(pid, sig);
        let out = child.wait_with_output().expect("wait");
        assert_eq!(
            out.status.code(),
            Some(code),
            "{sig}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("stopped by SIG"),
            "{sig}: {}",
            text(&out.stderr)
        );
        wait_until("its ssh master is gone", || rt.masters().is_empty());
        assert!(sd_dirs(pid).is_empty(), "{sig}: {:?}", sd_dirs(pid));
    }
    let _ = common::run(&r, &["scancel", &job.to_string()]).await;
    let _ = common::run(&r, &["rm", "-rf", &dir]).await;
}

/// With `persist_secs > 0` the way out is as clean, except that the one shared master is
/// left for the next command (the test's runtime directory ends it afterwards).
#[test]
fn with_persist_secs_the_one_shared_master_is_left_and_nothing_else() {
    let rt = RuntimeDir::new();
    let xdg = rt.env();
    let t = Tmux::start_with(&dev_config_persist(600), &[], &[("XDG_RUNTIME_DIR", &xdg)]);
    let pid = slurmdash_pid(&t);
    connected(&t);
    let socks = rt.sockets();
    assert_eq!(socks.len(), 1, "{socks:?}");
    let master = master_pid(&socks[0]).expect("the shared master");
    t.keys(&["q"]);
    wait_until("slurmdash exits", || !alive(pid));
    let s = t.wait("the shell back", LIMIT, |s| s.contains("EXITED:"));
    assert!(s.contains("EXITED:0"), "{s}");
    assert_eq!(rt.masters(), [master], "other masters were left, or none");
    assert_eq!(rt.sockets(), socks);
    assert!(sd_dirs(pid).is_empty(), "{:?}", sd_dirs(pid));
}
