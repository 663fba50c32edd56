//! The log tailer and pane against the dev cluster (`scripts/dev-cluster up`): a 1 GiB log
//! opens from its tail, appended lines arrive on the next tick, and a real job's output is
//! followed from "pending" to its last line.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::logpane::{tail, texts, until};
use common::{remote, run, sbatch, scratch};
use slurmdash::logview::TailKind;
use slurmdash::remote::Remote;
use slurmdash::worker::tailer::{MAX_CHUNK, TAIL_BYTES};

const EVERY: Duration = Duration::from_millis(300);

#[tokio::test]
async fn a_1gib_log_opens_from_its_tail_and_follows_appends() {
    let r: Arc<dyn Remote> = Arc::new(remote());
    let dir = scratch(r.as_ref(), "logtail").await;
    let path = format!("{dir}/big.log");
    let mk = run(
        r.as_ref(),
        &[
            "sh",
            "-c",
            "truncate -s 1G \"$1\" && printf '\\nepoch 1 loss 0.5\\nepoch 2 loss 0.4\\nlast line so far\\n' >> \"$1\"",
            "sh",
            &path,
        ],
    )
    .await;
    assert!(mk.success(), "{}", mk.stderr_lossy());

    let t0 = Instant::now();
    let (mut pane, mut rx, h) = tail(&r, 1, &path, EVERY);
    // The deadlines here are generous (a tail read takes well under a second) and only end
    // a test whose tail never shows; the figures are printed, not asserted.
    let seen = until(&mut rx, &mut pane, Duration::from_secs(30), |p| {
        texts(p).last().map(String::as_str) == Some("last line so far")
    })
    .await;
    let opened = t0.elapsed();
    println!("1 GiB log: last lines shown after {opened:?}");
    let Some(TailKind::Reset { offset, size }) = seen.first() else {
        panic!("starts with a reset: {seen:?}")
    };
    assert!(*size > 1 << 30);
    assert!(size - offset <= TAIL_BYTES, "read only the tail");
    let lines = texts(&pane);
    assert_eq!(
        &lines[lines.len() - 3..],
        ["epoch 1 loss 0.5", "epoch 2 loss 0.4", "last line so far"]
    );

    run(
        r.as_ref(),
        &["sh", "-c", "echo 'epoch 3 loss 0.3' >> \"$1\"", "sh", &path],
    )
    .await;
    let t1 = Instant::now();
    let seen = until(&mut rx, &mut pane, Duration::from_secs(30), |p| {
        texts(p).last().map(String::as_str) == Some("epoch 3 loss 0.3")
    })
    .await;
    println!("appended line shown after {:?}", t1.elapsed());
    assert!(
        seen.iter()
            .all(|k| matches!(k, TailKind::Data { bytes, .. } if bytes.len() <= 17)),
        "only the new bytes were sent: {seen:?}"
    );
    assert!((MAX_CHUNK as usize) > 17);
    h.abort();
    run(r.as_ref(), &["rm", "-rf", &dir]).await;
}

#[tokio::test]
async fn a_real_job_is_followed_from_pending_to_its_last_line() {
    let r: Arc<dyn Remote> = Arc::new(remote());
    let dir = scratch(r.as_ref(), "logjob").await;
    let out = format!("{dir}/job.out");
    // Held first, so the output file cannot exist when the tailer starts.
    let id = sbatch(
        r.as_ref(),
        &[
            "--hold",
            &format!("--output={out}"),
            "--wrap",
            "for i in 1 2 3; do printf '\\033[32mstep %s\\033[0m 10%%\\r\\033[32mstep %s\\033[0m 100%%\\n' $i $i; sleep 1; done; echo finished",
        ],
    )
    .await;
    let (mut pane, mut rx, h) = tail(&r, id, &out, EVERY);
    pane.set_job_pending(true);
    until(&mut rx, &mut pane, Duration::from_secs(10), |p| {
        p.status() == &slurmdash::logview::PaneStatus::Missing
    })
    .await;
    let (head, _) = pane.message().expect("message");
    assert_eq!(head, format!("waiting for {out} (job is pending)"));

    run(r.as_ref(), &["scontrol", "release", &id.to_string()]).await;
    pane.set_job_pending(false);
    until(&mut rx, &mut pane, Duration::from_secs(60), |p| {
        texts(p).last().map(String::as_str) == Some("finished")
    })
    .await;
    // The \r progress state is collapsed and the colour codes are gone from the text.
    assert_eq!(
        texts(&pane),
        ["step 1 100%", "step 2 100%", "step 3 100%", "finished"]
    );
    h.abort();
    run(r.as_ref(), &["rm", "-rf", &dir]).await;
}
