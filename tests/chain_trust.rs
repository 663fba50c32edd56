//! A guarded launch's `meta/chain.jsonl` lies in its job directory, which the job itself (and
//! whatever it runs) can write. The dashboard's retry check adds to the launch only jobs its
//! guard submitted: a planted line naming another user's job, or one of the user's own jobs
//! that is not the launch's, is ignored and reported, on the dev cluster over real SSH.

use crate::common;
use crate::guard_helpers;

use common::launch::{no_secret, retry_check};
use common::*;
use guard_helpers::*;
use slurmdash::io::retry::RetryEvent;
use slurmdash::registry::Registry;

#[tokio::test(flavor = "multi_thread")]
async fn a_planted_chain_line_naming_a_job_that_is_not_the_launchs_is_ignored_and_reported() {
    let r = remote();
    let other = remote_as(OTHER_ALIAS);
    let name = tag("plant");
    // A launch whose attempt runs a while: its guard waits, nothing is decided meanwhile.
    let l = submit(&name, "sleep 120", &[]);
    // Jobs under the launch's own name that its guard did not submit: another user's, and
    // one of the user's own submitted from elsewhere.
    let held = [
        "--hold", "-J", &name, "-t", "1", "--chdir", "/tmp", "--wrap", "true",
    ];
    let theirs = sbatch(&other, &held).await;
    let mine = sbatch(&r, &held).await;
    // What the job could append: "the attempt failed on the infrastructure, retried as X".
    for x in [theirs, mine] {
        let line = format!(
            "{{\"time\":\"2026-11-24T02:00:00Z\",\"event\":\"decision\",\"job\":\"{}\",\"attempt\":1,\"state\":\"NODE_FAIL\",\"class\":\"ERR_INFRA\",\"evidence\":\"state NODE_FAIL\",\"decision\":\"retried as {x}\",\"next\":\"{x}\"}}",
            l.job
        );
        let chain = format!("{}/meta/chain.jsonl", l.dir);
        let out = run(
            &r,
            &[
                "sh",
                "-c",
                "printf '%s\\n' \"$2\" >> \"$1\"",
                "sh",
                &chain,
                &line,
            ],
        )
        .await;
        assert!(out.success(), "planting: {}", out.stderr_lossy());
    }
    // A dashboard's retry check over the launch's registry.
    let registry = Registry::open(l.state.path());
    let (events, entries) = retry_check(&r, &registry, true, &no_secret).await;
    let e = entries
        .iter()
        .find(|e| e.job_dir == l.dir)
        .unwrap_or_else(|| panic!("the launch: {entries:?}"));
    let attempts: Vec<(u64, Option<String>)> = e
        .attempts
        .iter()
        .map(|a| (a.job_id, a.state.clone()))
        .collect();
    assert_eq!(
        attempts,
        [(l.job, None)],
        "the launch took a planted line: {events:?}"
    );
    for (x, why) in [
        (
            theirs,
            format!("job {theirs} belongs to {OTHER_USER}, not to you (sduser)"),
        ),
        (
            mine,
            format!(
                "job {mine} was not submitted from the launch's directory {}",
                l.dir
            ),
        ),
    ] {
        let said = events.iter().find_map(|ev| match ev {
            RetryEvent::Ignored { job_id, reason, .. } if *job_id == x => Some(reason),
            _ => None,
        });
        assert_eq!(said, Some(&why), "job {x}: {events:?}");
    }
    for ev in &events {
        println!("{}", ev.line());
    }
    run(&r, &["scancel", &l.job.to_string(), &mine.to_string()]).await;
    run(&other, &["scancel", &theirs.to_string()]).await;
    wait_quiet(&r, &l.dir).await;
}
