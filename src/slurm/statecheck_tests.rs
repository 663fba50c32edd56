use super::*;
use crate::slurm::model::JobId;

fn fixture(ver: &str, name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/slurm/{ver}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The full read's records at the moment of the capture (`%i<US>%T`).
fn known(ver: &str) -> (Vec<JobId>, Vec<JobState>) {
    fixture(ver, "state_check_known.out")
        .lines()
        .map(|l| {
            let (id, st) = l.split_once('\x1f').unwrap();
            (id.parse::<JobId>().unwrap(), JobState::parse(st))
        })
        .unzip()
}

fn expected(ids: &[JobId], states: &[JobState]) -> Expected {
    Expected::from_records(ids.iter().zip(states))
}

/// The ids the capture asked about; the last one is the job that had left.
fn asked(ver: &str) -> Vec<u64> {
    fixture(ver, "state_check.ids")
        .trim()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect()
}

#[test]
fn the_check_of_an_unchanged_queue_changes_nothing_on_24_11_and_26_05() {
    for ver in ["24.11", "26.05"] {
        let seen = parse(&fixture(ver, "state_check.out")).unwrap();
        assert_eq!(seen.len(), 6, "{ver}: {seen:?}");
        // The collapsed held array: its id without the throttle, as the full read's key.
        let asked = asked(ver);
        let arr = format!("{}_[1-3]", asked[3]);
        assert!(
            seen.iter()
                .any(|s| s.id == arr && s.state == JobState::Pending),
            "{ver}: {seen:?}"
        );
        // The running array's three tasks.
        let tasks = seen
            .iter()
            .filter(|s| s.id.starts_with(&format!("{}_", asked[2])))
            .filter(|s| s.state == JobState::Running)
            .count();
        assert_eq!(tasks, 3, "{ver}: {seen:?}");
        // The job that had left is not listed.
        let left = asked[4].to_string();
        assert!(seen.iter().all(|s| s.id != left), "{ver}: {seen:?}");

        let (ids, states) = known(ver);
        let e = expected(&ids, &states);
        // Asked once per job or array, in the full read's order.
        let mut want = asked[..4].to_vec();
        want.sort();
        let mut got = e.ids.clone();
        got.sort();
        assert_eq!(got, want, "{ver}");
        assert_eq!(e.changed(&seen), None, "{ver}: nothing changed");
        assert!(e.checkable());
    }
}

#[test]
fn a_known_job_that_left_or_changed_state_is_a_change() {
    for ver in ["24.11", "26.05"] {
        let seen = parse(&fixture(ver, "state_check.out")).unwrap();
        let (mut ids, mut states) = known(ver);
        // The full read before the last one still listed the job that left, running.
        let left: JobId = asked(ver)[4].to_string().parse().unwrap();
        ids.push(left.clone());
        states.push(JobState::Running);
        let c = expected(&ids, &states).changed(&seen).unwrap();
        assert_eq!(c.id, left.as_str());
        assert_eq!(c.now, None);
        assert_eq!(c.to_string(), format!("{left} RUNNING → left the queue"));

        // The held job was released and runs now.
        let (ids, mut states) = known(ver);
        let held = ids.iter().position(|i| i.base() == asked(ver)[1]).unwrap();
        states[held] = JobState::Running;
        let c = expected(&ids, &states).changed(&seen).unwrap();
        assert_eq!(c.now, Some(JobState::Pending), "{c}");
        assert!(c.to_string().ends_with("RUNNING → PENDING"), "{c}");
    }
}

#[test]
fn an_array_whose_pending_tasks_started_is_a_change() {
    let ver = "26.05";
    let (ids, states) = known(ver);
    let a = asked(ver)[3];
    // The check answers with the first task running and the rest still collapsed.
    let mut seen = parse(&fixture(ver, "state_check.out")).unwrap();
    seen.retain(|s| s.id != format!("{a}_[1-3]"));
    seen.push(Seen {
        id: format!("{a}_1"),
        state: JobState::Running,
    });
    seen.push(Seen {
        id: format!("{a}_[2-3]"),
        state: JobState::Pending,
    });
    let c = expected(&ids, &states).changed(&seen).unwrap();
    assert_eq!(c.id, format!("{a}_[1-3]"));
    assert_eq!(c.now, None);
}

#[test]
fn an_empty_answer_reads_as_no_jobs_and_every_known_one_left() {
    for ver in ["24.11", "26.05"] {
        assert_eq!(fixture(ver, "state_check_empty.status").trim(), "0");
        let seen = parse(&fixture(ver, "state_check_empty.out")).unwrap();
        assert!(seen.is_empty());
        let (ids, states) = known(ver);
        assert!(expected(&ids, &states).changed(&seen).is_some());
        // Beside --me: 26.05 refuses, 24.11 answers nothing (why the check takes --jobs).
        let me = fixture(ver, "state_check_me.status");
        match ver {
            "26.05" => {
                assert_eq!(me.trim(), "1");
                assert!(fixture(ver, "state_check_me.err").contains("only works alone"));
            }
            _ => {
                assert_eq!(me.trim(), "0");
                assert!(fixture(ver, "state_check_me.out").is_empty());
            }
        }
    }
}

#[test]
fn slurm_22_05_has_no_state_check() {
    assert_eq!(fixture("22.05", "state_check.status").trim(), "1");
    assert!(fixture("22.05", "state_check.err").contains("unrecognized option '--only-job-state'"));
    let v = |ver: &str| {
        let out = fixture(ver, "state_check_version.out");
        Version::parse(out.trim().trim_start_matches("slurm-wlm ")).unwrap()
    };
    assert!(!v("22.05").has_state_check());
    assert!(v("24.11").has_state_check());
    assert!(v("26.05").has_state_check());
}

#[test]
fn the_version_comes_from_scontrol_show_config() {
    let cfg = |ver: &str, name: &str| version_from_config(&fixture(ver, name));
    assert_eq!(
        cfg("22.05", "scontrol_show_config.out"),
        Some(Version(22, 5, 8))
    );
    assert_eq!(
        cfg("24.11", "scontrol_show_config_rl_enable.out"),
        Some(Version(24, 11, 5))
    );
    assert_eq!(
        cfg("26.05", "scontrol_show_config.out"),
        Some(Version(26, 5, 5))
    );
    assert_eq!(version_from_config("SlurmctldParameters = (null)\n"), None);
    // The first release with the option, and the one before it.
    assert!(Version::parse("23.11.5").unwrap().has_state_check());
    assert!(!Version::parse("23.11.4").unwrap().has_state_check());
    assert!(!Version::parse("23.02.7").unwrap().has_state_check());
    assert_eq!(Version::parse("24.05.0rc1"), Some(Version(24, 5, 0)));
    assert_eq!(Version::parse("23.11.10-1"), Some(Version(23, 11, 10)));
    assert_eq!(Version::parse("24"), None);
    assert_eq!(Version(24, 5, 0).to_string(), "24.05.0");
}

#[test]
fn the_argv_asks_by_id_and_costs_one_rpc() {
    let a = argv(&[7, 12]);
    assert_eq!(
        a,
        [
            "squeue",
            "--only-job-state",
            "--noheader",
            "--format=%i\x1f%T",
            "--jobs=7,12"
        ]
    );
    assert_eq!(crate::slurm::command::rpc_cost(&a).ctld, 1);
}

#[test]
fn output_that_does_not_read_is_an_error_never_no_change() {
    let e = parse("10 RUNNING\n").unwrap_err();
    assert_eq!(e.line, 1);
    let e = parse("7\x1fRUNNING\nslurm_load_jobs error: x\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(parse("\n").unwrap().is_empty());
    assert_eq!(key("7_[1-3%1]"), "7_[1-3]");
    assert_eq!(key("7_[1-3]"), "7_[1-3]");
    assert_eq!(key("7_2"), "7_2");
    assert_eq!(key("7+1"), "7+1");
    let many = Expected::from_records(
        (0..=MAX_IDS as u64)
            .map(|i| JobId::new(i + 1))
            .collect::<Vec<_>>()
            .iter()
            .map(|id| (id, &JobState::Running)),
    );
    assert!(!many.checkable(), "more ids than one check asks about");
    assert!(!Expected::default().checkable(), "nothing to ask about");
}
