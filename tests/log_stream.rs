//! A followed log streams over one long-lived `tail -F` channel on the dev cluster's sshd:
//! lines written one by one arrive with no remote command per line, a truncated file starts
//! again from its new content, and stopping the tailer ends the tail on the login node.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::logpane::{tail, texts, until};
use common::{remote, run, scratch};
use slurmdash::remote::Remote;

/// The fallback read interval: long, so that anything arriving sooner came by the stream.
const EVERY: Duration = Duration::from_secs(30);

/// How many `tail -c +N -F` processes of this user run on the login node.
async fn remote_tails(r: &dyn Remote, path: &str) -> usize {
    // `[t]ail`: the pattern does not match the shell that runs pgrep.
    let pattern = format!("[t]ail -c .* -F -- {path}");
    let out = run(r, &["pgrep", "-u", "sduser", "-f", "--", &pattern]).await;
    out.stdout_lossy().lines().count()
}

#[tokio::test]
async fn lines_stream_without_a_command_each_and_truncation_starts_over() {
    let ssh = Arc::new(remote());
    let r: Arc<dyn Remote> = ssh.clone();
    let dir = scratch(r.as_ref(), "logstream").await;
    let path = format!("{dir}/job.out");
    run(
        r.as_ref(),
        &["sh", "-c", "echo 'line 0' > \"$1\"", "sh", &path],
    )
    .await;

    let (mut pane, mut rx, h) = tail(&r, 1, &path, EVERY);
    until(&mut rx, &mut pane, Duration::from_secs(10), |p| {
        texts(p) == ["line 0"]
    })
    .await;
    // The stream opens right after the tail read; give it a moment to be in place.
    let deadline = Instant::now() + Duration::from_secs(10);
    while remote_tails(r.as_ref(), &path).await == 0 {
        assert!(Instant::now() < deadline, "no tail -F on the login node");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = ssh.stats().execs;
    // One command writes 20 lines, 100 ms apart.
    let write_lines = [
        "sh",
        "-c",
        "for i in $(seq 1 20); do echo \"line $i\" >> \"$1\"; sleep 0.1; done",
        "sh",
        &path,
    ];
    let writer = run(r.as_ref(), &write_lines);
    let (w, _) = tokio::join!(
        writer,
        until(&mut rx, &mut pane, Duration::from_secs(20), |p| {
            texts(p).last().map(String::as_str) == Some("line 20")
        })
    );
    assert!(w.success());
    let want: Vec<String> = (0..=20).map(|i| format!("line {i}")).collect();
    assert_eq!(texts(&pane), want, "every line once, in order");
    assert_eq!(
        ssh.stats().execs - before,
        1,
        "only the writer ran: no read per line"
    );

    // Truncated and rewritten (a requeued job): the pane starts over with the new content.
    run(
        r.as_ref(),
        &[
            "sh",
            "-c",
            ": > \"$1\"; sleep 0.5; echo rerun >> \"$1\"",
            "sh",
            &path,
        ],
    )
    .await;
    until(&mut rx, &mut pane, Duration::from_secs(20), |p| {
        texts(p) == ["rerun"]
    })
    .await;

    h.abort();
    let _ = h.await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while remote_tails(r.as_ref(), &path).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the remote tail outlived the tailer"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    run(r.as_ref(), &["rm", "-rf", &dir]).await;
}
