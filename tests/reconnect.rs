//! The login node goes away for 20 s and comes back: against a real sshd of our own (the
//! dev cluster's users and Slurm, another port), stopped and started by the test.
//! No assertion on elapsed time: the waits the transport announces are checked instead.

use crate::common;
use crate::common::sshd;

use std::time::{Duration, Instant};

use slurmdash::remote::{ConnState, Remote, RemoteError, SshOptions, SshRemote, QUICK_CAP};
use sshd::OwnSshd;

fn remote(s: &OwnSshd) -> SshRemote {
    let mut o = SshOptions::new(vec![sshd::ALIAS.into()]);
    o.ssh_config = Some(s.ssh_config.clone());
    o.connect_timeout = Duration::from_secs(5);
    SshRemote::new(o).expect("remote")
}

fn argv() -> Vec<String> {
    vec!["true".into()]
}

fn attempt_of(state: &ConnState) -> u32 {
    match state {
        ConnState::Reconnecting { attempt, .. } => *attempt,
        other => panic!("expected reconnecting, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_node_back_after_20s_is_tried_within_the_cap_and_r_tries_at_once() {
    let mut sshd = OwnSshd::start();
    let r = remote(&sshd);
    let out = r
        .run(&argv(), None, common::T)
        .await
        .expect("first command");
    assert!(out.success());
    assert!(matches!(r.state(), ConnState::Connected { .. }));

    sshd.stop();
    // Drive the remote as the dashboard does: a command whenever an attempt is due (the
    // remote waits out its backoff inside `run`), for the 20 s the host is away.
    let away = Instant::now();
    let mut waits = Vec::new();
    let mut last = 0;
    while away.elapsed() < Duration::from_secs(20) {
        let e = r
            .run(&argv(), None, Duration::from_secs(10))
            .await
            .expect_err("the host is down");
        assert!(
            matches!(
                e,
                RemoteError::Connect { .. } | RemoteError::Disconnected { .. }
            ),
            "{e}"
        );
        if e.to_string().contains("next attempt in") {
            // The next attempt is not due yet: the command was refused without an attempt,
            // as the dashboard's refresh would be.
            assert_eq!(attempt_of(&r.state()), last, "{e}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        let state = r.state();
        if let ConnState::Reconnecting {
            attempt,
            retry_in: Some(d),
            ..
        } = &state
        {
            waits.push(*d);
            assert!(
                *d <= QUICK_CAP,
                "a node away 20 s waits longer than {QUICK_CAP:?} before the next attempt: {waits:?}"
            );
            assert!(*attempt > last, "attempts go up: {state:?}");
            last = *attempt;
        }
    }
    assert!(
        last >= 6,
        "too few attempts in 20 s for a backoff of 0.5, 1, 2, 4, then 5 s: {last} attempts ({waits:?})"
    );

    // `r`: a command that would have to wait for the backoff is refused without trying...
    let before = attempt_of(&r.state());
    let e = r
        .run(&argv(), None, Duration::from_millis(500))
        .await
        .expect_err("backoff not over");
    assert!(e.to_string().contains("next attempt in"), "{e}");
    assert_eq!(attempt_of(&r.state()), before, "it tried anyway");
    // ...and after retry_now the same command tries at once.
    r.retry_now();
    let e = r
        .run(&argv(), None, Duration::from_millis(500))
        .await
        .expect_err("still down");
    assert!(!e.to_string().contains("next attempt in"), "{e}");
    assert_eq!(attempt_of(&r.state()), before + 1, "{e}");

    sshd.restart();
    let connects = r.stats().connects;
    // The backoff may now be longer than this command waits (it doubles to a minute; the
    // dashboard test below shows the node noticed by itself): try at once, as `r` does.
    r.retry_now();
    let out = r
        .run(&argv(), None, common::T)
        .await
        .expect("reconnected once the host is back");
    assert!(out.success());
    assert!(
        matches!(r.state(), ConnState::Connected { .. }),
        "{:?}",
        r.state()
    );
    assert_eq!(
        r.stats().connects,
        connects + 1,
        "one new connection to the returning host"
    );
}

/// The dev cluster's dashboard config pointed at the private sshd, with the default RPC
/// budget a user has.
fn config_for(s: &OwnSshd) -> std::path::PathBuf {
    let dev = std::fs::read_to_string(common::dev_config_default()).expect("dev config");
    let mut cfg = String::new();
    for line in dev.lines() {
        if line.starts_with("hosts") {
            cfg.push_str(&format!("hosts = [\"{}\"]\n", sshd::ALIAS));
        } else if line.starts_with("ssh_config") {
            cfg.push_str(&format!(
                "ssh_config = {:?}\n",
                s.ssh_config.display().to_string()
            ));
        } else {
            cfg.push_str(line);
            cfg.push('\n');
        }
    }
    let p = s.dir.path().join("slurmdash.toml");
    std::fs::write(&p, cfg).expect("write config");
    p
}

/// The seconds in "next try in Ns" on the screen, if shown.
fn next_try(screen: &str) -> Option<u64> {
    let rest = &screen[screen.find("next try in ")? + "next try in ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn the_status_bar_counts_down_while_the_node_is_away_and_shows_it_back() {
    let mut sshd = OwnSshd::start();
    let cfg = config_for(&sshd);
    let t = common::tmux::Tmux::start(&cfg, &[]);
    let connected = format!("{} connected", sshd::ALIAS);
    t.wait("the first connection", Duration::from_secs(30), |s| {
        s.contains(&connected) && common::tmux::refreshed(s)
    });

    sshd.stop();
    let away = Instant::now();
    // With the default budget the next scheduled refresh may be 50 s away: the user who
    // wonders presses `r`, which finds the node gone.
    std::thread::sleep(Duration::from_secs(1));
    t.keys(&["r"]);
    let mut shown = Vec::new();
    while away.elapsed() < Duration::from_secs(20) {
        let s = t.screen();
        if let Some(n) = next_try(&s) {
            shown.push(n);
            assert!(
                n <= QUICK_CAP.as_secs(),
                "a node away 20 s: the status bar announces a wait over {QUICK_CAP:?}:\n{s}"
            );
        }
        assert!(!s.contains("panicked"), "{s}");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        !shown.is_empty(),
        "no 'next try in Ns' while the node was away; the screen:\n{}",
        t.screen()
    );

    sshd.restart();
    let back = Instant::now();
    t.wait(
        "the dashboard connected again",
        Duration::from_secs(30),
        |s| s.contains(&connected) && next_try(s).is_none(),
    );
    // Fresh data, read after the node came back (what was on screen before is 20 s old
    // or more by then), with the default RPC budget.
    t.wait(
        "a refresh after the node's return",
        Duration::from_secs(60),
        |s| common::tmux::updated_secs(s).is_some_and(|n| n <= back.elapsed().as_secs()),
    );
    println!(
        "reconnect: fresh data on screen {:.1}s after the sshd came back",
        back.elapsed().as_secs_f64()
    );
    // The figure, not a timed assertion: with the backoff capped, the dashboard is back
    // within about one cap of the node's return.
    println!(
        "reconnect: the dashboard showed {} connected again {:.1}s after its sshd came back (away 20s, tried at least every {QUICK_CAP:?})",
        sshd::ALIAS,
        back.elapsed().as_secs_f64()
    );
}
