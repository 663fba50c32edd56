use super::*;
use crate::slurm::parse::parse_scontrol_partitions;
use proptest::prelude::*;

const VERSIONS: [&str; 3] = ["22.05", "24.11", "26.05"];

fn fixture(v: &str, name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/slurm/{v}/{name}.out",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn at(s: &str) -> NaiveDateTime {
    parse_time(s).unwrap().unwrap()
}

fn mins(m: u64) -> SlurmDuration {
    SlurmDuration::from_secs(m * 60)
}

/// The dev cluster's partitions: spare is spare[01-02], short/polar/long gpu[01-02].
fn partitions() -> Vec<Partition> {
    let text = "PartitionName=short\n   Nodes=gpu[01-02] MaxTime=00:30:00 State=UP\n\n\
                PartitionName=spare\n   Nodes=spare[01-02] MaxTime=00:30:00 State=UP\n";
    parse_scontrol_partitions(text).unwrap()
}

#[test]
fn every_versions_reservations_read_with_the_maintenance_window_first() {
    for v in VERSIONS {
        let r = parse_reservations(&fixture(v, "scontrol_reservation")).unwrap();
        let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["sdcap_maint", "sdcap_users", "sdcap_acct"], "{v}");
        let m = &r[0];
        assert!(m.is_maintenance(), "{v}");
        assert_eq!(m.nodes, ["spare01", "spare02"], "{v}");
        assert_eq!(m.node_list, "spare[01-02]");
        assert_eq!(m.flags, ["MAINT", "IGNORE_JOBS", "SPEC_NODES"], "{v}");
        assert_eq!(m.users, ["root"]);
        assert!(m.accounts.is_empty() && m.partition.is_none());
        assert_eq!(m.state, "INACTIVE");
        assert_eq!((m.end - m.start).num_hours(), 2, "{v}");
        let u = &r[1];
        assert!(!u.is_maintenance());
        assert_eq!(u.users, ["sduser", "sdother"]);
        assert!(u.admits("sdother", "x") && !u.admits("nobody", "research"));
        assert_eq!((u.end - u.start).num_days(), 1);
        let a = &r[2];
        assert!(a.flags.is_empty(), "{v}: `Flags=` with nothing after it");
        assert_eq!(a.partition.as_deref(), Some("spare"));
        assert_eq!(a.accounts, ["research"]);
        assert!(a.admits("anyone", "research") && !a.admits("anyone", "other"));
        assert_eq!(a.nodes, ["spare01"]);
        assert!(
            !m.admits("sduser", "research"),
            "a maintenance window is root's"
        );
    }
}

#[test]
fn no_reservations_is_an_empty_list_and_an_unknown_one_is_an_error() {
    for v in VERSIONS {
        assert_eq!(
            parse_reservations(&fixture(v, "scontrol_reservation_none")).unwrap(),
            []
        );
        // `scontrol show reservation NAME` of an unknown name (exit 1, on stdout).
        let e = parse_reservations(&fixture(v, "scontrol_reservation_unknown")).unwrap_err();
        assert_eq!(e.line, 1, "{v}");
        assert!(e.to_string().contains("ReservationName"), "{e}");
    }
    assert_eq!(parse_reservations("").unwrap(), []);
}

#[test]
fn a_record_without_times_names_its_line() {
    let text = "ReservationName=a StartTime=2026-01-01T00:00:00 EndTime=2026-01-01T01:00:00\n\n\
                ReservationName=b StartTime=soon EndTime=2026-01-01T01:00:00\n";
    let e = parse_reservations(text).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.what.contains("StartTime"), "{e}");
    let e = parse_reservations("ReservationName=c StartTime=Unknown EndTime=x\n").unwrap_err();
    assert!(e.what.contains("StartTime=Unknown is not a time"), "{e}");
    let e = parse_reservations("ReservationName= StartTime=x\n").unwrap_err();
    assert!(e.what.contains("ReservationName"), "{e}");
}

#[test]
fn users_with_exclusions() {
    let mut r = parse_reservations(&fixture("22.05", "scontrol_reservation")).unwrap()[1].clone();
    r.users = vec!["-bob".into()];
    assert!(r.admits("alice", "") && !r.admits("bob", ""));
    r.users.clear();
    r.accounts.clear();
    assert!(
        !r.admits("alice", "a"),
        "a reservation for nobody admits nobody"
    );
}

/// The window of the 22.05 capture: 2026-12-28 21:36:53 to 23:36:53 on spare[01-02].
fn maint() -> Vec<Reservation> {
    parse_reservations(&fixture("22.05", "scontrol_reservation")).unwrap()
}

#[test]
fn a_limit_that_runs_into_the_window_is_named_with_the_longest_that_does_not() {
    let parts = partitions();
    let usable = usable_nodes("spare", &parts);
    assert_eq!(usable, ["spare01", "spare02"]);
    let from = at("2026-12-28T21:17:03");
    let need = Need {
        usable: &usable,
        nodes: 1,
        time_limit: mins(30),
        from,
    };
    let hit = maintenance_hit(&maint(), &need).unwrap();
    assert_eq!(hit.reservation.name, "sdcap_maint");
    // 19 min 50 s before the window: 19 whole minutes.
    assert_eq!(hit.longest, Some(mins(19)));
    assert_eq!(
        window_text(&hit.reservation),
        "maintenance 2026-12-28 21:36–23:36 on spare[01-02]"
    );
    // A limit that ends before the window does not run into it.
    let short = Need {
        time_limit: mins(19),
        ..need.clone()
    };
    assert!(maintenance_hit(&maint(), &short).is_none());
    // Nor does a job that may run elsewhere: short's nodes are not in the window.
    let gpu = usable_nodes("short", &parts);
    let elsewhere = Need {
        usable: &gpu,
        ..need.clone()
    };
    assert!(maintenance_hit(&maint(), &elsewhere).is_none());
    // In two partitions, one of them outside the window: it may run there.
    let both = usable_nodes("spare,short", &parts);
    assert_eq!(both.len(), 4);
    let either = Need {
        usable: &both,
        ..need.clone()
    };
    assert!(maintenance_hit(&maint(), &either).is_none());
    // An unlimited limit runs into every later window.
    let forever = Need {
        time_limit: SlurmDuration::Unlimited,
        from: at("2026-11-28T00:00:00"),
        ..need.clone()
    };
    let hit = maintenance_hit(&maint(), &forever).unwrap();
    assert_eq!(hit.longest.unwrap().to_slurm(), "30-21:36:00");
}

#[test]
fn within_a_minute_of_the_window_or_inside_it_no_limit_helps() {
    let usable = usable_nodes("spare", &partitions());
    let need = |from: &str| Need {
        usable: &usable,
        nodes: 1,
        time_limit: mins(30),
        from: at(from),
    };
    let r = maint();
    assert_eq!(
        maintenance_hit(&r, &need("2026-12-28T21:35:52"))
            .unwrap()
            .longest,
        Some(mins(1))
    );
    assert_eq!(
        maintenance_hit(&r, &need("2026-12-28T21:35:53"))
            .unwrap()
            .longest,
        None,
        "a minute that ends as the window starts does not end before it"
    );
    assert_eq!(
        maintenance_hit(&r, &need("2026-12-28T21:16:53"))
            .unwrap()
            .longest,
        Some(mins(19)),
        "20 minutes exactly before it: 19"
    );
    assert_eq!(
        maintenance_hit(&r, &need("2026-12-28T21:35:54"))
            .unwrap()
            .longest,
        None,
        "59 s is under a minute"
    );
    assert_eq!(
        maintenance_hit(&r, &need("2026-12-28T22:00:00"))
            .unwrap()
            .longest,
        None,
        "the window has begun"
    );
    assert!(
        maintenance_hit(&r, &need("2026-12-28T23:36:53")).is_none(),
        "the window has ended"
    );
}

#[test]
fn a_window_on_some_nodes_blocks_a_job_that_needs_more_than_are_left() {
    let usable = usable_nodes("spare", &partitions());
    let mut r = maint();
    r[0].nodes = vec!["spare01".into()];
    let need = |nodes| Need {
        usable: &usable,
        nodes,
        time_limit: mins(30),
        from: at("2026-12-28T21:17:03"),
    };
    assert!(maintenance_hit(&r, &need(1)).is_none(), "spare02 is free");
    assert!(maintenance_hit(&r, &need(2)).is_some(), "both are needed");
    // Nothing is said without the partitions' nodes.
    let none = Need {
        usable: &[],
        ..need(1)
    };
    assert!(maintenance_hit(&r, &none).is_none());
}

#[test]
fn a_closed_reservation_counts_and_an_open_one_does_not() {
    let mut r = maint();
    // sdcap_acct (account research) on spare01 only; make it hold both spare nodes.
    r[2].nodes = vec!["spare01".into(), "spare02".into()];
    r.remove(0);
    let usable = usable_nodes("spare", &partitions());
    let need = Need {
        usable: &usable,
        nodes: 1,
        time_limit: mins(30),
        from: at("2026-12-30T21:20:00"),
    };
    assert!(maintenance_hit(&r, &need).is_none(), "not a maintenance");
    let hit = closed_hit(&r, &need, "sduser", "other").unwrap();
    assert_eq!(hit.reservation.name, "sdcap_acct");
    assert_eq!(hit.longest, Some(mins(16)));
    assert!(closed_hit(&r, &need, "sduser", "research").is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Hostile or cut output never panics: it reads or it is an error.
    #[test]
    fn any_text_reads_or_fails_cleanly(s in "(ReservationName=|StartTime=|EndTime=|Nodes=|Flags=|Users=|[ \\n=,\\[\\]0-9a-zT:-]|\\PC){0,200}") {
        if let Ok(rs) = parse_reservations(&s) {
            for r in &rs {
                let usable = vec!["n1".to_string()];
                let need = Need { usable: &usable, nodes: 1, time_limit: SlurmDuration::Unlimited, from: r.start };
                let _ = maintenance_hit(std::slice::from_ref(r), &need);
                let _ = window_text(r);
            }
        }
    }

    #[test]
    fn cut_captures_never_panic(cut in 0usize..2000, v in 0usize..3) {
        let text = fixture(VERSIONS[v], "scontrol_reservation");
        let mut end = cut.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let _ = parse_reservations(&text[..end]);
    }
}
