#![allow(clippy::unwrap_used)]

use super::*;

const VERSIONS: &[&str] = &["22.05", "24.11", "26.05"];

fn fixture(v: &str, name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/slurm/{v}/{name}.out",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn texts(h: &[Headroom]) -> Vec<&str> {
    h.iter().map(|h| h.text.as_str()).collect()
}

/// The capture's job: 1 CPU, 1 GPU, 5 minutes, waiting behind a 2-GPU job of the same
/// user under QOS sdcapture (2 GPUs per user).
const WAITS: Request = Request {
    cpus: 1,
    gpus: 1,
    nodes: 1,
    minutes: 5,
};

#[test]
fn every_version_without_limits_lists_the_records_and_no_limit() {
    for v in VERSIONS {
        let m = parse_assoc_mgr(&fixture(v, "scontrol_assoc_mgr")).unwrap();
        assert_eq!(m.assocs.len(), 2, "{v}: the account's and sduser's");
        assert_eq!(m.assocs[0].account, "research");
        assert_eq!(m.assocs[0].user, None);
        assert_eq!(m.assocs[1].user.as_deref(), Some("sduser"), "{v}");
        assert_eq!(m.assocs[1].uid, Some(1001), "{v}");
        assert_eq!(m.qos.len(), 1, "{v}");
        assert_eq!(m.qos[0].name, "normal");
        let s = select(&m, "sduser", "research", "short", "normal");
        assert!(s.limits.is_empty(), "{v}: {:?}", s.limits);
        assert!(headroom(&s, &WAITS).iter().all(|h| !h.full), "{v}");
    }
}

#[test]
fn enforced_limits_with_slurmctld_usage_on_24_11_and_26_05() {
    for v in ["24.11", "26.05"] {
        let m = parse_assoc_mgr(&fixture(v, "scontrol_assoc_mgr_limits")).unwrap();
        let s = select(&m, "sduser", "sdcapture", "short", "sdcapture");
        assert_eq!(s.counted, Some(true), "{v}");
        assert!(!s.qos_user_missing, "{v}");
        let h = headroom(&s, &WAITS);
        assert_eq!(
            texts(&h),
            [
                "account sdcapture holds 1 of the 16 CPUs it allows",
                "account sdcapture holds 2 of the 4 GPUs it allows",
                "account sdcapture holds 1 of the 6 running jobs it allows",
                "account sdcapture holds 3 of the 30 queued or running jobs it allows",
                "you hold 2 of the 4 GPUs association sdcapture/sduser allows",
                "you hold 1 of the 5 running jobs association sdcapture/sduser allows",
                "you hold 3 of the 25 queued or running jobs association sdcapture/sduser allows",
                "the job asks 1; association sdcapture/sduser allows 3 GPUs per job",
                "all users of QOS sdcapture hold 2 of the 8 GPUs it allows",
                "all users of QOS sdcapture hold 1 of the 10 running jobs it allows",
                "the job asks 1; QOS sdcapture allows 8 CPUs per job",
                "the job asks 1; QOS sdcapture allows 4 GPUs per job",
                "the job asks 0:05:00; QOS sdcapture allows wall time 1:00:00 per job",
                "you hold 2 of the 2 GPUs QOS sdcapture allows per user",
                "you hold 1 of the 4 running jobs QOS sdcapture allows per user",
                "you hold 3 of the 20 queued or running jobs QOS sdcapture allows per user",
                "your account holds 2 of the 6 GPUs QOS sdcapture allows per account",
                "your account holds 1 of the 8 running jobs QOS sdcapture allows per account",
            ],
            "{v}"
        );
        let full: Vec<&str> = h
            .iter()
            .filter(|h| h.full)
            .map(|h| h.text.as_str())
            .collect();
        assert_eq!(
            full,
            ["you hold 2 of the 2 GPUs QOS sdcapture allows per user"],
            "{v}"
        );
        // The reason the capture's waiting job had: the QOS's per-user GPU limit.
        let i = blocking("QOSMaxGRESPerUser", &h).unwrap();
        assert_eq!(h[i].text, full[0]);
        let i = blocking("AssocGrpGRES", &h).unwrap();
        assert_eq!(
            h[i].text,
            "account sdcapture holds 2 of the 4 GPUs it allows"
        );
        let i = blocking("QOSMaxJobsPerAccountLimit", &h).unwrap();
        assert!(h[i]
            .text
            .contains("running jobs QOS sdcapture allows per account"));
        let i = blocking("AssocMaxJobsLimit", &h).unwrap();
        assert!(h[i].text.contains("association sdcapture/sduser"));
        assert_eq!(blocking("Priority", &h), None);
        assert_eq!(blocking("QOSGrpCPUMinutesLimit", &h), None);
    }
}

#[test]
fn on_22_05_without_enforced_limits_nothing_is_counted_and_the_pane_says_so() {
    // The 22.05 dev cluster ran with AccountingStorageEnforce=associations: every count is
    // 0 and the QOS lists no users or accounts, though sduser held a job under it.
    let m = parse_assoc_mgr(&fixture("22.05", "scontrol_assoc_mgr_limits")).unwrap();
    let q = &m.qos[0];
    assert_eq!(q.name, "sdcapture");
    assert!(q.users.is_empty() && q.accounts.is_empty());
    let s = select(&m, "sduser", "sdcapture", "short", "sdcapture");
    assert_eq!(s.counted, Some(false));
    let h = headroom(&s, &WAITS);
    assert!(
        h[0].text.starts_with("slurmctld counts no usage"),
        "{:?}",
        texts(&h)
    );
    assert!(h.iter().all(|h| !h.full));
    assert!(texts(&h).contains(&"account sdcapture allows 4 GPUs"));
    assert!(texts(&h).contains(&"the job asks 1; QOS sdcapture allows 4 GPUs per job"));
    // Not claimed as missing: with nothing counted no QOS lists its users.
    assert!(!texts(&h).iter().any(|t| t.contains("no per-user limits")));
}

#[test]
fn qos_users_by_name_or_by_uid_alone() {
    // 24.11 and later: `sduser(1001)`; 22.05's scontrol prints the uid alone.
    let out = "Current Association Manager state\n\nAssociation Records\n\n\
        ClusterName=dev Account=a UserName=u(1001) Partition= Priority=0 ID=6\n\
        \x20   GrpSubmitJobs=N(1) GrpWall=N(0.00)\n\nQOS Records\n\nQOS=q(1)\n\
        \x20   GrpJobs=N(0) GrpSubmitJobs=N(1)\n    Account Limits\n        No Accounts\n\
        \x20   User Limits\n      1002\n        MaxJobsPU=1(1)\n      1001\n\
        \x20       MaxJobsPU=2(0) MaxSubmitJobsPU=N(1)\n        MaxTRESPU=cpu=N(0),gres/gpu=8(8)\n";
    let m = parse_assoc_mgr(out).unwrap();
    assert_eq!(m.qos[0].users[1].uid, Some(1001));
    assert_eq!(m.qos[0].users[1].name, None);
    let s = select(&m, "u", "a", "p", "q");
    let h = headroom(
        &s,
        &Request {
            gpus: 2,
            ..Request::default()
        },
    );
    assert_eq!(
        texts(&h),
        [
            "you hold 8 of the 8 GPUs QOS q allows per user",
            "you hold 0 of the 2 running jobs QOS q allows per user",
        ]
    );
    assert!(h[0].full && !h[1].full);
    // Counted, but no entry of the user: said once.
    let other = out.replace("      1001\n", "      1003\n");
    let s = select(&parse_assoc_mgr(&other).unwrap(), "u", "a", "p", "q");
    assert!(s.qos_user_missing);
    assert_eq!(
        texts(&headroom(&s, &Request::default())),
        ["the QOS lists no per-user limits for you: slurmctld shows them once you hold a job under it"]
    );
}

#[test]
fn a_partition_association_wins_and_user_records_are_skipped() {
    let out = "Current Association Manager state\n\nUser Records\n\n\
        UserName=u(1001) DefAccount=a DefWckey= AdminLevel=None\n\nAssociation Records\n\n\
        ClusterName=dev Account=a UserName=u(1001) Partition= Priority=0 ID=6\n\
        \x20   MaxJobs=9(1) MaxSubmitJobs=N(2)\n\
        ClusterName=dev Account=a UserName=u(1001) Partition=polar Priority=0 ID=7\n\
        \x20   GrpSubmitJobs=N(1)\n    MaxJobs=2(1) MaxJobsAccrue= MaxSubmitJobs= MaxWallPJ=240\n";
    let m = parse_assoc_mgr(out).unwrap();
    assert_eq!(m.assocs.len(), 2);
    let s = select(&m, "u", "a", "polar", "normal");
    let h = headroom(&s, &Request::default());
    assert_eq!(
        texts(&h),
        [
            "you hold 1 of the 2 running jobs association a/u allows",
            "association a/u allows wall time 4:00:00 per job",
        ]
    );
    let s = select(&m, "u", "a", "short", "normal");
    assert_eq!(s.limits[0].max, 9);
}

#[test]
fn tallies_and_bad_output() {
    assert_eq!(
        tally("4(2)"),
        Some(Tally {
            max: Some(4),
            used: Some(2)
        })
    );
    assert_eq!(
        tally("N(2.81)"),
        Some(Tally {
            max: None,
            used: Some(3)
        })
    );
    assert_eq!(tally(""), None);
    assert_eq!(tally("x(1)"), None);
    assert_eq!(tres_tallies("cpu=8,gres/gpu=4").len(), 2);
    assert!(parse_assoc_mgr("").is_err());
    assert!(parse_assoc_mgr("slurm_load_assoc_mgr_info error: Invalid user\n").is_err());
    let e = parse_assoc_mgr("Current Association Manager state\n    GrpJobs=N(0)\n").unwrap_err();
    assert_eq!(e.line, 2);
    // Odd bytes and cut-off output never panic.
    let full = fixture("26.05", "scontrol_assoc_mgr_limits");
    for cut in (0..full.len()).step_by(97) {
        if let Some(s) = full.get(..cut) {
            let _ = parse_assoc_mgr(s);
        }
    }
    let _ = parse_assoc_mgr("Current Association Manager state\nQOS Records\nQOS=\u{0}(\n  x(\n");
}
