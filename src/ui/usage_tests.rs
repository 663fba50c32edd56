//! Snapshots of `:usage` and of "similar jobs waited" beside a pending job's estimate, from
//! the 22.05 dev cluster's capture (scripts/capture-usage-fixtures).

use std::path::PathBuf;

use chrono::NaiveDateTime;
use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::*;
use crate::app::usage::{UsageState, WaitsState};
use crate::slurm::limits::parse_assoc_mgr;
use crate::slurm::parse::{parse_squeue, parse_sshare};
use crate::slurm::usage::{parse_acct_jobs, report, Read};
use crate::ui::detail::{DetailWidget, PendingView};
use crate::ui::queue::tests::text;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/slurm/22.05")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn at() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-11-26T12:07:00", "%Y-%m-%dT%H:%M:%S").unwrap()
}

/// The captured read, with a GrpTRESMins of 400 CPU-hours set on research by hand (the
/// dev cluster has none on the accounts its tests use) and slurmctld counting 310 against it.
fn captured(limit: bool) -> UsageState {
    let sacct = parse_acct_jobs(&fixture("usage_sacct_used.out")).unwrap();
    let queue = parse_squeue(&fixture("usage_squeue.out")).unwrap();
    let sshare = parse_sshare(&fixture("usage_sshare.out")).unwrap();
    let mut mgr = fixture("usage_assoc_mgr.out");
    if limit {
        mgr = mgr.replacen("GrpTRESMins=cpu=N(275)", "GrpTRESMins=cpu=24000(18600)", 1);
        assert!(mgr.contains("24000"), "the fixture changed");
    }
    let assoc = parse_assoc_mgr(&mgr).unwrap();
    let r = report(
        &Read {
            days: 7,
            user: Some("sduser"),
            sacct: &sacct,
            queue: &queue,
            sshare: &sshare,
            assoc: Some(&assoc),
        },
        Vec::new(),
    );
    UsageState {
        days: 7,
        report: Some(r),
        at: Some(at() - chrono::Duration::seconds(40)),
        loading: false,
        error: None,
    }
}

fn draw(u: &UsageState, w: u16, h: u16) -> String {
    let theme = crate::theme::Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    UsageWidget {
        usage: u,
        theme: &theme,
        now: at(),
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn usage_overlay_per_account_with_a_limit_and_the_pending_line() {
    let s = draw(&captured(true), 100, 26);
    assert!(s.contains("research"), "{s}");
    assert!(
        s.contains("78% of GrpTRESMins (account research): 310 of 400 CPU-h counted"),
        "{s}"
    );
    assert!(s.contains("no limit set"), "{s}");
    assert!(
        s.contains("your 4 pending jobs will cost up to 44.3 CPU-h if they run to their limit"),
        "{s}"
    );
    assert_snapshot!(s);
}

#[test]
fn usage_overlay_without_limits_reading_and_failed() {
    let s = draw(&captured(false), 100, 26);
    assert!(!s.contains("GrpTRESMins"), "{s}");
    assert_snapshot!("usage_overlay_no_limits", s);
    let reading = UsageState {
        days: 30,
        loading: true,
        ..UsageState::default()
    };
    let s = draw(&reading, 80, 5);
    assert!(s.contains("reading 30 days of your jobs"), "{s}");
    let failed = UsageState {
        days: 7,
        error: Some("`sacct --starttime=now-7days` on login1 failed: slurmdbd down".into()),
        ..UsageState::default()
    };
    assert!(draw(&failed, 100, 5).contains("could not read: `sacct --starttime=now-7days`"));
}

#[test]
fn bar_fills_with_the_fraction() {
    assert_eq!(bar(0.0), format!("[{}]", "░".repeat(24)));
    assert_eq!(bar(0.5), format!("[{}{}]", "█".repeat(12), "░".repeat(12)));
    assert_eq!(bar(7.0), format!("[{}]", "█".repeat(24)));
    assert_eq!(bar(f64::NAN), bar(0.0));
}

/// The held 2-CPU job in short: the user's CPU-only 1 to 4-CPU jobs there waited.
#[test]
fn detail_shows_similar_jobs_waited_under_the_estimate() {
    let jobs = parse_squeue(&fixture("usage_squeue.out")).unwrap();
    let j = jobs.iter().find(|j| j.id.as_str() == "12265").unwrap();
    let waits = WaitsState {
        jobs: parse_acct_jobs(&fixture("usage_sacct_waits.out")).unwrap(),
        at: Some(at()),
        ..WaitsState::default()
    };
    let waited = waits.for_job(j);
    assert!(waited.is_some());
    let theme = crate::theme::Theme::new(false);
    let draw = |waited| {
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 16));
        DetailWidget {
            job: Some(j),
            focused: true,
            pending: PendingView {
                waited,
                ..PendingView::default()
            },
            ..DetailWidget::blank(&theme, at())
        }
        .render(buf.area, &mut buf);
        text(&buf)
    };
    let s = draw(waited);
    assert!(s.contains("similar jobs waited "), "{s}");
    assert_snapshot!(s);
    // Nothing when there is no similar job.
    assert!(!draw(None).contains("similar jobs"));
}
