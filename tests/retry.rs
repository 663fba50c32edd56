//! Automatic retry on the dev cluster over real SSH: a launched job that fails on
//! infrastructure (an NCCL network error in its log) is re-submitted from its staged script
//! exactly once even when two dashboards check at the same time, and the second attempt
//! completes; a program failure is never re-submitted.

mod common;

use std::time::Duration;

use common::*;
use slurmdash::launch::facts;
use slurmdash::launch::spec::LaunchSpec;
use slurmdash::launch::submit::{self, Submitted, Target};
use slurmdash::registry::Registry;
use slurmdash::remote::Remote;
use slurmdash::retry::RetryPolicy;
use slurmdash::triage::{Class, Patterns};
use slurmdash::worker::retry::{check, RetryCheck, RetryEvent};

struct Launches {
    root: String,
    state: tempfile::TempDir,
}

impl Launches {
    async fn new(r: &dyn Remote, tag: &str) -> Launches {
        let base = scratch(r, tag).await;
        Launches {
            root: format!("{base}/results"),
            state: tempfile::tempdir().expect("state dir"),
        }
    }

    fn registry(&self) -> Registry {
        Registry::open(self.state.path())
    }

    /// Launches `command` through the same path as the form and `slurmdash submit`.
    async fn launch(&self, r: &dyn Remote, name: &str, command: &str) -> Submitted {
        let facts = facts::fetch(r, T).await.expect("cluster facts");
        let spec = LaunchSpec {
            name: name.into(),
            partition: "short".into(),
            gpus: 1,
            cpus_per_task: 1,
            mem: "50M".into(),
            time: "5m".into(),
            command: command.into(),
            requeue: false,
            ..LaunchSpec::default()
        };
        let local = submit::new_local_id();
        let p = submit::prepare(&spec, &facts, &self.root, &local).expect("valid launch");
        let registry = self.registry();
        let target = Target {
            remote: r,
            cluster: "dev",
            registry: &registry,
            timeout: T,
            convert_timeout: T,
        };
        submit::submit(&target, &p, &[]).await.expect("submitted")
    }

    async fn check(&self, r: &dyn Remote) -> Vec<RetryEvent> {
        let registry = self.registry();
        let patterns = Patterns::builtin();
        let secret = |_: &str| None;
        let c = RetryCheck {
            remote: r,
            registry: &registry,
            cluster: "dev",
            policy: RetryPolicy::default(),
            patterns: &patterns,
            timeout: T,
            secret: &secret,
            allow_submit: true,
        };
        check(&c).await.expect("retry check").0
    }
}

async fn wait_final(r: &dyn Remote, id: u64) -> String {
    wait_for(
        &format!("job {id} to end"),
        Duration::from_secs(120),
        || async {
            let s = sacct_state(r, id).await;
            (!s.is_empty() && !["PENDING", "RUNNING", "REQUEUED"].contains(&s.as_str()))
                .then_some(s)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn infra_failure_is_resubmitted_once_and_the_retry_completes() {
    let r = remote();
    let l = Launches::new(&r, "retry-infra").await;
    // Fails with an NCCL network error the first time, succeeds the second.
    let cmd = r#"f="$TAO_API_RESULTS_DIR/$TAO_JOB_ID/first-try-done"
if [ -e "$f" ]; then echo "epoch 1 ok"; exit 0; fi
touch "$f"
echo "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12, opcode 0, len 0, vendor err 129" >&2
exit 1"#;
    let first = l.launch(&r, "flaky-net", cmd).await;
    assert_eq!(wait_final(&r, first.job_id).await, "FAILED");

    // Two dashboards on the same registry check at once: one re-submission between them.
    let (a, b) = tokio::join!(l.check(&r), l.check(&r));
    let all: Vec<&RetryEvent> = a.iter().chain(b.iter()).collect();
    let resubmitted: Vec<u64> = all
        .iter()
        .filter_map(|e| match e {
            RetryEvent::Resubmitted {
                new,
                attempt,
                failed,
                ..
            } => {
                assert_eq!((*attempt, *failed), (2, first.job_id));
                Some(*new)
            }
            _ => None,
        })
        .collect();
    assert_eq!(resubmitted.len(), 1, "exactly one re-submission: {all:?}");
    assert!(
        all.iter().any(|e| matches!(e, RetryEvent::Finished { class: Some(Class::Infra), state, .. } if state == "FAILED")),
        "{all:?}"
    );
    let second = resubmitted[0];
    let entry = l.registry().load().expect("registry").remove(0);
    assert_eq!(entry.attempts.len(), 2);
    assert_eq!(entry.attempts[0].job_id, first.job_id);
    assert_eq!(entry.attempts[0].state.as_deref(), Some("FAILED ERR_INFRA"));
    assert_eq!(entry.attempts[1].job_id, second);
    assert_eq!(entry.job_id, second);

    // The retry runs the same staged script, logs in its own slurm-logs dir, and completes.
    assert_eq!(wait_final(&r, second).await, "COMPLETED");
    let out = run(
        &r,
        &[
            "cat",
            &format!("{}/slurm-logs/flaky-net-{second}/main.out", first.job_dir),
        ],
    )
    .await;
    assert_eq!(out.stdout_lossy().trim(), "epoch 1 ok");
    let events = l.check(&r).await;
    assert!(
        matches!(
            events.as_slice(),
            [RetryEvent::Finished {
                class: Some(Class::Complete),
                ..
            }]
        ),
        "{events:?}"
    );
    // Nothing more to do: a further check sends no remote command.
    let before = r.stats().execs;
    assert!(l.check(&r).await.is_empty());
    assert_eq!(r.stats().execs, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_failure_is_classified_and_never_resubmitted() {
    let r = remote();
    let l = Launches::new(&r, "retry-program").await;
    let job = l
        .launch(&r, "bad-code", "echo 'Traceback: KeyError' >&2; exit 1")
        .await;
    assert_eq!(wait_final(&r, job.job_id).await, "FAILED");
    let events = l.check(&r).await;
    assert!(
        matches!(
            events.as_slice(),
            [RetryEvent::Finished {
                class: Some(Class::Program),
                ..
            }]
        ),
        "{events:?}"
    );
    let entry = l.registry().load().expect("registry").remove(0);
    assert_eq!(entry.attempts.len(), 1);
    assert_eq!(
        entry.attempts[0].state.as_deref(),
        Some("FAILED ERR_PROGRAM")
    );
    assert!(l.check(&r).await.is_empty());
}
