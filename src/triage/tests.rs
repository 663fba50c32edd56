use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/triage/",
            $name
        ))
    };
}

fn failed_with(stderr: &str, stdout: &str) -> Triage {
    let p = Patterns::builtin();
    classify(
        &TriageInput {
            state: &JobState::Failed,
            exit_code: Some((1, 0)),
            cancelled_by: None,
            reason: Some("NonZeroExitCode"),
            stdout,
            stderr,
            status_json: None,
        },
        &p,
    )
    .expect("a failed job is classified")
}

fn line_of(t: &Triage) -> &str {
    match &t.evidence {
        Evidence::LogLine { line, .. } => line,
        other => panic!("expected a log line, got {other:?}"),
    }
}

#[test]
fn nccl_network_errors_are_infra() {
    let t = failed_with(fixture!("nccl_ib.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert!(t.class.is_retriable());
    // The last matching line is the one nearest the failure.
    assert!(line_of(&t).contains("ncclRemoteError"), "{}", line_of(&t));
    assert!(t.suggestion.contains("resubmit"), "{}", t.suggestion);
}

#[test]
fn gpu_xid_and_ecc_errors_are_infra_with_a_gpu_hint() {
    let t = failed_with(fixture!("xid.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert!(line_of(&t).contains("NVRM: Xid (PCI:0000:3b:00): 79"));
    assert!(t.suggestion.contains("GPU failed"), "{}", t.suggestion);
    let t = failed_with(fixture!("ecc.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert!(line_of(&t).contains("uncorrectable ECC error encountered"));
}

#[test]
fn slurm_socket_timeouts_and_node_failures_are_infra() {
    let t = failed_with(fixture!("socket_timeout.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert!(line_of(&t).contains("Socket timed out"));
    let t = failed_with(fixture!("node_failure.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert!(
        line_of(&t).contains("DUE TO NODE FAILURE"),
        "{}",
        line_of(&t)
    );
}

#[test]
fn enroot_import_errors_are_infra_and_point_at_credentials() {
    let t = failed_with(fixture!("enroot_credentials.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert!(line_of(&t).contains("Could not process JSON input"));
    assert!(
        t.suggestion.contains("~/.config/enroot/.credentials"),
        "{}",
        t.suggestion
    );
}

/// What Pyxis printed on the dev cluster for a private image (a registry with basic auth)
/// and no ~/.config/enroot/.credentials: Enroot logs no [ERROR] line at all.
#[test]
fn a_private_image_without_credentials_is_infra_with_the_credentials_remedy() {
    let t = failed_with(fixture!("enroot_private_anonymous.err"), "");
    assert_eq!(t.class, Class::Infra);
    assert_eq!(
        line_of(&t),
        "slurmstepd-gpu01: error: pyxis: failed to import docker image: 10.220.22.1:5001#private/tiny:1.0"
    );
    for want in [
        "~/.config/enroot/.credentials",
        "machine HOST login USER password PASSWORD",
        "never into the job's environment",
    ] {
        assert!(t.suggestion.contains(want), "{want}: {}", t.suggestion);
    }
}

#[test]
fn oom_kill_lines_are_oom_in_both_slurm_spellings() {
    for text in [fixture!("oom_kill.err"), fixture!("oom_kill_old.err")] {
        let t = failed_with(text, "");
        assert_eq!(t.class, Class::Oom, "{text}");
        assert!(!t.class.is_retriable());
        assert!(t.suggestion.contains("--mem"), "{}", t.suggestion);
    }
    let t = failed_with(fixture!("cuda_oom.err"), "");
    assert_eq!(t.class, Class::Oom);
    assert!(t.suggestion.contains("GPU memory"), "{}", t.suggestion);
}

#[test]
fn an_oom_kill_wins_over_the_network_errors_it_causes() {
    let t = failed_with(fixture!("oom_and_nccl.err"), "");
    assert_eq!(t.class, Class::Oom, "{t:?}");
}

#[test]
fn other_failures_are_program_errors_with_the_exit_code() {
    let t = failed_with(fixture!("program.err"), fixture!("program_lookalikes.out"));
    assert_eq!(t.class, Class::Program);
    assert_eq!(t.evidence, Evidence::ExitCode { code: 1, signal: 0 });
    assert!(t.suggestion.contains("code 1"), "{}", t.suggestion);
    assert!(!t.class.is_retriable());
}

#[test]
fn patterns_in_stdout_count_too() {
    let t = failed_with("", fixture!("nccl_ib.err"));
    assert_eq!(t.class, Class::Infra);
    assert!(matches!(
        t.evidence,
        Evidence::LogLine {
            stream: Stream::Stdout,
            ..
        }
    ));
}

fn by_state(state: JobState) -> Option<Triage> {
    classify(
        &TriageInput {
            state: &state,
            exit_code: Some((0, 9)),
            cancelled_by: Some(1001),
            reason: None,
            stdout: "",
            // An infra line does not change a state that already says what happened.
            stderr: fixture!("nccl_ib.err"),
            status_json: None,
        },
        &Patterns::builtin(),
    )
}

#[test]
fn final_states_decide_the_class() {
    let cases = [
        (JobState::NodeFail, Class::Infra),
        (JobState::BootFail, Class::Infra),
        (JobState::Preempted, Class::Infra),
        (JobState::OutOfMemory, Class::Oom),
        (JobState::Timeout, Class::Timeout),
        (JobState::Deadline, Class::Timeout),
        (JobState::Cancelled, Class::Cancelled),
        (JobState::Completed, Class::Complete),
    ];
    for (state, class) in cases {
        let t = by_state(state.clone()).expect("finished");
        assert_eq!(t.class, class, "{state:?}");
        assert!(!t.suggestion.is_empty());
    }
    let t = by_state(JobState::Cancelled).expect("finished");
    assert_eq!(t.evidence.to_string(), "state CANCELLED by uid 1001");
    assert_eq!(t.class.code(), "ERR_CANCELLED");
}

#[test]
fn unfinished_jobs_are_not_classified() {
    for s in [
        JobState::Pending,
        JobState::Running,
        JobState::Completing,
        JobState::Suspended,
        JobState::Requeued,
        JobState::Unknown("NEW_STATE".into()),
    ] {
        assert_eq!(by_state(s.clone()), None, "{s:?}");
    }
}

fn completed_with(status: Option<&str>) -> Triage {
    classify(
        &TriageInput {
            state: &JobState::Completed,
            exit_code: Some((0, 0)),
            cancelled_by: None,
            reason: None,
            stdout: "",
            stderr: "",
            status_json: status,
        },
        &Patterns::builtin(),
    )
    .expect("completed")
}

#[test]
fn status_json_refines_completed() {
    let t = completed_with(Some(fixture!("status_tao_success.json")));
    assert_eq!(t.class, Class::Complete);
    assert_eq!(
        t.evidence.to_string(),
        "status.json: SUCCESS (Training finished successfully.)"
    );
    let t = completed_with(Some(fixture!("status_tao_failure.json")));
    assert_eq!(t.class, Class::Error);
    assert!(t.evidence.to_string().contains("FAILURE"));
    assert!(t
        .evidence
        .to_string()
        .contains("Dataset /data/kitti/train has no label files"));
    let t = completed_with(Some(fixture!("status_object_error.json")));
    assert_eq!(t.class, Class::Error);
    let t = completed_with(Some(fixture!("status_object_complete.json")));
    assert_eq!(t.class, Class::Complete);
    // Stopped reporting before a final status.
    let t = completed_with(Some(fixture!("status_tao_started.json")));
    assert_eq!(t.class, Class::Error);
    assert!(t.suggestion.contains("final status"), "{}", t.suggestion);
}

#[test]
fn without_or_with_a_broken_status_json_completed_stands() {
    let t = completed_with(None);
    assert_eq!(t.class, Class::Complete);
    assert_eq!(t.evidence.to_string(), "state COMPLETED");
    for bad in ["", "not json", "{\"state\": \"x\"}", "[1, 2]"] {
        let t = completed_with(Some(bad));
        assert_eq!(t.class, Class::Complete, "{bad:?}");
        assert!(matches!(t.evidence, Evidence::StatusUnreadable { .. }));
    }
}

#[test]
fn status_json_lines_tolerate_a_torn_last_line() {
    let text = format!(
        "{}{{\"status\": \"SUCC",
        fixture!("status_tao_failure.json")
    );
    let s = parse_status_json(&text).expect("parses");
    assert_eq!(s.reported, Reported::Failure);
}

#[test]
fn user_patterns_extend_the_builtin_ones() {
    let cfg = TriageConfig {
        infra_patterns: vec![r"lustre: .*evicted".into()],
        oom_patterns: vec!["java.lang.OutOfMemoryError".into()],
    };
    let p = Patterns::new(&cfg).expect("valid");
    assert_eq!(p.infra.len(), Patterns::builtin().infra.len() + 1);
    let m = p
        .infra
        .last_match("step 3\nLustre: scratch-OST0004 has EVICTED this client\n")
        .expect("case-insensitive match");
    assert_eq!(m.pattern, r"lustre: .*evicted");
    assert!(p
        .oom
        .last_match("java.lang.OutOfMemoryError: heap")
        .is_some());
    // Built-ins still apply.
    assert!(p.infra.last_match(fixture!("node_failure.err")).is_some());
}

#[test]
fn bad_user_patterns_name_their_key() {
    let cfg = TriageConfig {
        infra_patterns: vec!["ok".into(), "broken(".into()],
        oom_patterns: vec![],
    };
    let e = Patterns::new(&cfg).expect_err("invalid regex");
    assert_eq!(e.key, "triage.infra_patterns[1]");
    assert!(e.reason.contains("broken("), "{}", e.reason);
    let cfg = TriageConfig {
        infra_patterns: vec![],
        oom_patterns: vec!["  ".into()],
    };
    assert_eq!(
        Patterns::new(&cfg).expect_err("empty").key,
        "triage.oom_patterns[0]"
    );
}

#[test]
fn evidence_lines_are_cleaned_and_shortened() {
    let long = format!(
        "\u{1b}[31mNCCL WARN NET/IB : Got completion\u{1b}[0m\t{}\u{7}",
        "x".repeat(500)
    );
    let m = Patterns::builtin().infra.last_match(&long).expect("match");
    assert!(m.line.starts_with("NCCL WARN NET/IB : Got completion x"));
    assert!(m.line.chars().count() <= 200);
    assert!(!m.line.chars().any(char::is_control));
    // Progress bars redraw with \r: the matching segment is found alone.
    let bar = "10%|#   \r20%|##  \rsrun: error: Node failure on n1\r30%";
    let m = Patterns::builtin().infra.last_match(bar).expect("match");
    assert_eq!(m.line, "srun: error: Node failure on n1");
}

#[test]
fn a_real_time_limit_kill_is_a_timeout_not_infra() {
    let t = classify(
        &TriageInput {
            state: &JobState::Timeout,
            exit_code: Some((0, 0)),
            cancelled_by: None,
            reason: None,
            stdout: "sleeping\n",
            stderr: fixture!("timeout.err"),
            status_json: None,
        },
        &Patterns::builtin(),
    )
    .expect("finished");
    assert_eq!(t.class, Class::Timeout);
    assert!(t.suggestion.contains("--time"), "{}", t.suggestion);
    // The slurmstepd line names no infrastructure failure.
    assert!(Patterns::builtin()
        .infra
        .last_match(fixture!("timeout.err"))
        .is_none());
}

#[test]
fn slurm_reasons_that_blame_the_system_are_infra() {
    for (reason, class) in [
        ("Prolog", Class::Infra),
        ("NodeDown", Class::Infra),
        ("NonZeroExitCode", Class::Program),
        ("RaisedSignal:9", Class::Program),
    ] {
        let t = classify(
            &TriageInput {
                state: &JobState::Failed,
                exit_code: Some((1, 0)),
                cancelled_by: None,
                reason: Some(reason),
                stdout: "",
                stderr: "",
                status_json: None,
            },
            &Patterns::builtin(),
        )
        .expect("finished");
        assert_eq!(t.class, class, "{reason}");
    }
}
