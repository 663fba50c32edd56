use super::*;
use crate::slurm::parse::parse_scontrol_jobs;
use crate::slurm::reservation::{parse_reservations, Need};
use crate::slurm::time::parse_time;

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/slurm/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// 26.05's pending capture, moved to spare with 30 minutes and a maintenance reason.
fn job() -> Job {
    let mut d = parse_scontrol_jobs(&fixture("26.05/scontrol_job_pending.out"))
        .unwrap()
        .remove(0);
    d.partition = Some("spare".into());
    d.time_limit = crate::slurm::model::SlurmDuration::parse("30").ok();
    d.reason = Some("ReqNodeNotAvail,_Reserved_for_maintenance".into());
    d.to_job().unwrap()
}

fn hit() -> WindowHit {
    let res = parse_reservations(&fixture("22.05/scontrol_reservation.out")).unwrap();
    let usable = vec!["spare01".to_string(), "spare02".to_string()];
    let need = Need {
        usable: &usable,
        nodes: 1,
        time_limit: job().time_limit,
        from: parse_time("2026-12-28T21:17:03").unwrap().unwrap(),
    };
    crate::slurm::reservation::maintenance_hit(&res, &need).unwrap()
}

#[test]
fn the_json_has_the_keys_scripts_read() {
    let j = job();
    let change = why::Change::TimeLimit {
        from: j.time_limit,
        to: crate::slurm::model::SlurmDuration::from_secs(19 * 60),
    };
    let alt = Alternative {
        argv: change.argv("82"),
        check: vec![],
        words: change.words(),
        change,
        estimated_start: parse_time("2026-12-28T21:17:05").unwrap(),
        problem: None,
    };
    let rep = report(&j, None, Some(hit()), vec![alt]);
    let v = rep.to_json();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "alternatives",
            "estimate",
            "explanation",
            "id",
            "maintenance",
            "rank",
            "reason",
            "state"
        ]
    );
    assert_eq!(v["reason"], "ReqNodeNotAvail, Reserved for maintenance");
    assert!(v["explanation"]
        .as_str()
        .unwrap()
        .starts_with("a node it needs is down, drained or reserved"));
    assert_eq!(
        v["maintenance"],
        json!({"start": "2026-12-28T21:36:53", "end": "2026-12-28T23:36:53", "nodes": "spare[01-02]"})
    );
    assert_eq!(
        v["alternatives"],
        json!([{
            "change": "time limit 19:00 instead of 30:00",
            "argv": ["scontrol", "update", "JobId=82", "TimeLimit=19:00"],
            "estimated_start": "2026-12-28T21:17:05",
        }])
    );
    assert_eq!(v["rank"], Value::Null);
    assert_eq!(v["estimate"], "2026-11-23T16:13:10");
    let text = rep.text();
    assert!(
        text.contains("Window       maintenance 2026-12-28 21:36–23:36 on spare[01-02]: its 30:00 limit runs into it; 19:00 or less would end before it starts"),
        "{text}"
    );
    let alts = rep.alternatives_text();
    assert!(
        alts.contains("  1. time limit 19:00 instead of 30:00\n"),
        "{alts}"
    );
    assert!(
        alts.contains("     estimated start 2026-12-28T21:17:05\n"),
        "{alts}"
    );
    assert!(
        alts.contains("     scontrol update JobId=82 TimeLimit=19:00\n"),
        "{alts}"
    );
}

#[test]
fn a_job_that_is_not_pending_says_its_state() {
    let rep = Report::not_pending("7", "RUNNING");
    let v = rep.to_json();
    assert_eq!(v["state"], "RUNNING");
    assert_eq!(v["reason"], Value::Null);
    assert_eq!(v["maintenance"], Value::Null);
    assert_eq!(v["alternatives"], json!([]));
    assert!(v["error"]
        .as_str()
        .unwrap()
        .starts_with("job 7 is RUNNING, not pending"));
}

#[test]
fn a_held_job_has_no_estimate_and_no_alternatives_and_says_why() {
    let mut j = job();
    j.reason = Some("JobHeldUser".into());
    let rep = report(&j, None, None, vec![]);
    assert_eq!(rep.estimate, None);
    assert_eq!(rep.no_estimate, "none while held");
    assert!(rep
        .alternatives_text()
        .starts_with("No alternatives: it is held"));
    assert!(rep.text().contains("Estimate     none while held\n"));
}

#[test]
fn an_argv_line_quotes_only_what_needs_it() {
    let argv: Vec<String> = ["scontrol", "update", "JobId=5_[1-3]", "Partition=a b;$(x)"]
        .map(String::from)
        .to_vec();
    let line = argv_line(&argv);
    assert_eq!(line, "scontrol update 'JobId=5_[1-3]' 'Partition=a b;$(x)'");
    assert_eq!(shlex::split(&line).unwrap(), argv);
}
