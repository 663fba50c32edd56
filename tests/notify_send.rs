//! `notify-send` is spawned as a process with its own argv (never through a shell), without
//! blocking: a stand-in notify-send on PATH records the arguments it was given.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use slurmdash::notify::{deliver, on_path, Method, Notification, Settings};

#[tokio::test]
async fn notify_send_receives_title_and_body_as_separate_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("argv");
    let script = dir.path().join("notify-send");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {}.tmp && mv {0}.tmp {0}\n",
            record.display()
        ),
    )
    .expect("write script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // This test binary runs alone in its process, so changing PATH touches nothing else.
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::env::set_var("PATH", path);
    assert!(on_path("notify-send"));

    let n = Notification {
        title: "slurmdash · dev".into(),
        body: "job 9 x'; touch /tmp/pwned; ' failed (FAILED)".into(),
        urgent: true,
    };
    let started = Instant::now();
    deliver(
        &n,
        &Settings {
            bell: false,
            method: Method::NotifySend,
            in_tmux: false,
        },
    );
    let returned_after = started.elapsed();
    let argv = loop {
        if let Ok(t) = std::fs::read_to_string(&record) {
            break t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "notify-send was not run"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        argv.lines().collect::<Vec<_>>(),
        vec![
            "--app-name=slurmdash",
            "--urgency=critical",
            "--",
            "slurmdash · dev",
            "job 9 x'; touch /tmp/pwned; ' failed (FAILED)"
        ]
    );
    println!("deliver returned after {returned_after:?} (notify-send runs on)");
}
