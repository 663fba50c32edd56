//! `:usage` and the waits of similar jobs driven through messages: reads only when asked
//! (opening with nothing cached, `r`, a pending job's selection with an old read), never
//! per refresh.

use crate::action::InsightMsg;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::App;
use super::*;
use crate::action::Msg;
use crate::app::insight::View;
use crate::slurm::model::Status;
use crate::slurm::parse::parse_squeue;
use crate::slurm::usage::{parse_acct_jobs, UsageReport};

const SQUEUE: &str = include_str!("../../tests/fixtures/slurm/22.05/usage_squeue.out");
const WAITS: &str = include_str!("../../tests/fixtures/slurm/22.05/usage_sacct_waits.out");

fn now() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-11-26T12:07:00", "%Y-%m-%dT%H:%M:%S").unwrap()
}

fn app() -> App {
    let mut a = App::fixture(now());
    a.update(refresh());
    a
}

fn refresh() -> Msg {
    Msg::queue(
        Ok(parse_squeue(SQUEUE).unwrap()),
        now(),
        Duration::from_millis(10),
    )
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn select(a: &mut App, want: &str) -> Vec<Cmd> {
    let i = a
        .queue
        .shown()
        .rows()
        .position(|r| r.job.id.as_str() == want)
        .unwrap();
    a.queue.shown_mut().select_index(i);
    a.selection_changed()
}

fn report(days: u32) -> UsageReport {
    UsageReport {
        days,
        user: Some("sduser".into()),
        accounts: Vec::new(),
        problems: Vec::new(),
    }
}

fn reads(cmds: &[Cmd]) -> usize {
    cmds.iter()
        .filter(|c| matches!(c, Cmd::FetchUsage { .. } | Cmd::FetchWaits))
        .count()
}

#[test]
fn usage_is_read_on_open_cached_and_read_again_on_r() {
    let mut a = app();
    assert_eq!(a.run_command("usage"), vec![Cmd::FetchUsage { days: 7 }]);
    assert_eq!(a.overlays.view, Some(View::Usage));
    // One read at a time: `r` while reading asks nothing.
    assert!(a.update(key('r')).is_empty());
    a.update(Msg::Insight(InsightMsg::Usage {
        days: 7,
        result: Box::new(Ok(report(7))),
        at: now(),
    }));
    assert!(!a.clusters[0].usage.loading);
    // Closing and opening again shows the cached read.
    a.update(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    assert_eq!(a.overlays.view, None);
    assert!(a.run_command("usage").is_empty());
    // `r` in the overlay reads again; refreshes never do.
    assert_eq!(a.update(key('r')), vec![Cmd::FetchUsage { days: 7 }]);
    assert_eq!(reads(&a.update(refresh())), 0);
    a.update(Msg::Insight(InsightMsg::Usage {
        days: 7,
        result: Box::new(Err(
            "`sacct --starttime=now-7days` on login1 failed: x".into()
        )),
        at: now(),
    }));
    // A failed read keeps the last report and says why.
    assert!(a.clusters[0].usage.report.is_some());
    assert!(a.clusters[0]
        .usage
        .error
        .as_deref()
        .unwrap()
        .contains("sacct"));
    // Another window is another read.
    assert_eq!(
        a.run_command("usage 30"),
        vec![Cmd::FetchUsage { days: 30 }]
    );
    assert!(a.run_command("usage x").is_empty());
    assert!(a
        .note
        .as_deref()
        .unwrap()
        .contains(":usage takes a number of days"));
}

#[test]
fn r_outside_the_overlay_is_still_refresh() {
    let mut a = app();
    let cmds = a.update(key('r'));
    assert_eq!(reads(&cmds), 0, "{cmds:?}");
}

#[test]
fn waits_are_read_when_a_pending_job_is_selected_at_most_every_ttl() {
    let mut a = App::fixture(now());
    // The first row is selected with the first refresh: a pending job, one read.
    let cmds = a.update(refresh());
    assert_eq!(
        a.queue.shown().selected_job().unwrap().status(),
        Status::Pending
    );
    assert_eq!(reads(&cmds), 1, "{cmds:?}");
    // One read at a time, and none for a running job.
    assert_eq!(reads(&select(&mut a, "12265")), 0);
    assert_eq!(reads(&select(&mut a, "12311")), 0);
    a.update(Msg::Insight(InsightMsg::Waits {
        result: Ok(parse_acct_jobs(WAITS).unwrap()),
        at: now(),
    }));
    // Another pending job within the TTL, and refreshes: no read.
    assert_eq!(reads(&select(&mut a, "12313")), 0);
    assert_eq!(reads(&a.update(refresh())), 0);
    let held = a.queue.shown().selected_job().cloned().unwrap();
    assert_eq!(held.id.as_str(), "12313");
    // After the TTL the next pending selection reads again.
    a.now = now() + chrono::Duration::seconds(crate::slurm::usage::waits::TTL_SECS);
    assert_eq!(reads(&select(&mut a, "12265")), 1);
    // The 2-CPU job in short is compared with the user's 1 to 4-CPU CPU-only jobs there.
    let j = a.queue.shown().selected_job().cloned().unwrap();
    let w = a.clusters[0].waits.for_job(&j).unwrap();
    assert!(
        w.jobs >= 1 && w.min_s <= w.median_s && w.median_s <= w.max_s,
        "{w:?}"
    );
}

#[test]
fn r_in_the_overlay_says_what_it_reads_and_other_keys_pass() {
    let mut u = UsageState::default();
    assert_eq!(u.open(Some(30)), vec![Cmd::FetchUsage { days: 30 }]);
    u.on_read(30, Ok(report(30)), now());
    let r = KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE);
    let out = u.on_key(&r).expect("r is the overlay's");
    assert_eq!(out.cmds, vec![Cmd::FetchUsage { days: 30 }]);
    assert_eq!(out.note.as_deref(), Some("reading 30 days of use again…"));
    // One read at a time: a second r is still the overlay's, and reads nothing.
    let again = u.on_key(&r).expect("r is the overlay's");
    assert!(again.cmds.is_empty());
    let j = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE);
    assert!(u.on_key(&j).is_none(), "other keys go to the keymap");
}

#[test]
fn usage_days_are_one_to_3650() {
    assert_eq!(days_arg(None).ok(), Some(None));
    assert_eq!(days_arg(Some("1")).ok(), Some(Some(1)));
    assert_eq!(days_arg(Some("3650")).ok(), Some(Some(3650)));
    for bad in ["0", "3651", "x", "-3"] {
        let note = days_arg(Some(bad)).expect_err(bad);
        assert!(note.contains(&format!("(not `{bad}`)")), "{bad}: {note}");
    }
}
