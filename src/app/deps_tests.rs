use crate::action::PollMsg;
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::action::{Cmd, Msg};
use crate::app::Overlay;
use crate::payload::Refresh;
use crate::slurm::deptree::tests::{jobs, rec};
use crate::slurm::deptree::NEVER_REASON;

fn at() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 27)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .unwrap()
}

fn app() -> App {
    App::fixture(at())
}

fn refresh(a: &mut App, recs: &[String]) -> Vec<Cmd> {
    a.update(Msg::Poll(PollMsg::Queue(Box::new(Refresh {
        result: Ok(jobs(recs)),
        extra: None,
        conn: None,
        at: at(),
        took: Duration::from_millis(10),
    }))))
}

fn key(a: &mut App, c: KeyCode) -> Vec<Cmd> {
    a.update(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

/// A → B → C, A → D; A is running.
fn chain(b_reason: &str, b_dep: &str) -> Vec<String> {
    vec![
        rec("10", "a", "RUNNING", "None", "(null)"),
        rec("11", "b", "PENDING", b_reason, b_dep),
        rec(
            "12",
            "c",
            "PENDING",
            "Dependency",
            "afterok:11(unfulfilled)",
        ),
        rec(
            "13",
            "d",
            "PENDING",
            "Dependency",
            "afterok:10(unfulfilled)",
        ),
        rec("14", "alone", "PENDING", "Priority", "(null)"),
    ]
}

/// The row ids of the tree, in order.
fn ids(a: &App) -> Vec<String> {
    a.overlays
        .deps
        .tree
        .iter()
        .map(|r| {
            r.node
                .map_or(String::new(), |n| a.overlays.deps.graph.nodes[n].id.clone())
        })
        .collect()
}

fn selected(a: &App) -> Option<String> {
    a.overlays
        .deps
        .selected_job()
        .map(|id| id.as_str().to_string())
}

/// `:deps` opens over the panes with the queue's chains; the queue's keys move on the tree
/// and enter selects the job in the queue and closes it.
#[test]
fn deps_opens_moves_and_selects_in_the_queue() {
    let mut a = app();
    refresh(&mut a, &chain("Dependency", "afterok:10(unfulfilled)"));
    a.run_command("deps");
    assert_eq!(a.top_overlay(), Some(Overlay::Deps));
    assert_eq!(ids(&a), ["10", "11", "12", "13"]);
    assert_eq!(selected(&a).as_deref(), Some("10"));
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Down);
    assert_eq!(selected(&a).as_deref(), Some("12"));
    key(&mut a, KeyCode::Char('G'));
    assert_eq!(selected(&a).as_deref(), Some("13"));
    key(&mut a, KeyCode::Char('g'));
    key(&mut a, KeyCode::Char('j'));
    let cmds = key(&mut a, KeyCode::Enter);
    assert_eq!(a.top_overlay(), None);
    assert_eq!(
        a.queue.shown().selected_id().map(|i| i.as_str()),
        Some("11")
    );
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::FetchDetail(id) if id.as_str() == "11")),
        "{cmds:?}"
    );
    // esc closes it too; a filter that hides the job is cleared by enter.
    a.run_command("deps");
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.top_overlay(), None);
    a.queue.shown_mut().set_filter("alone");
    a.run_command("deps");
    // The filter shows no job of a chain: nothing to draw.
    assert!(a.overlays.deps.tree.is_empty());
    key(&mut a, KeyCode::Esc);
    // A filter that shows D keeps D's chain (A's tree), and enter selects D in the queue.
    a.queue.shown_mut().set_filter("13");
    a.run_command("deps");
    assert_eq!(ids(&a), ["10", "11", "12", "13"]);
    assert_eq!(a.overlays.deps.filter.as_deref(), Some("13"));
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    assert_eq!(
        a.queue.shown().selected_id().map(|i| i.as_str()),
        Some("13")
    );
    // Enter on a job the filter hides clears the filter.
    a.run_command("deps");
    key(&mut a, KeyCode::Char('g'));
    key(&mut a, KeyCode::Enter);
    assert_eq!(
        a.queue.shown().selected_id().map(|i| i.as_str()),
        Some("10")
    );
    assert_eq!(a.queue.shown().filter(), "");
}

/// The tree refreshes with the queue, keeping the selected job selected; once A failed,
/// B, C and D are marked as never able to start.
#[test]
fn deps_refreshes_with_the_queue() {
    let mut a = app();
    refresh(&mut a, &chain("Dependency", "afterok:10(unfulfilled)"));
    a.run_command("deps");
    key(&mut a, KeyCode::Char('G'));
    assert_eq!(selected(&a).as_deref(), Some("13"));
    let mut later = chain(NEVER_REASON, "afterok:10(failed)");
    later[0] = rec("10", "a", "FAILED", "NonZeroExitCode", "(null)");
    later[3] = rec("13", "d", "PENDING", NEVER_REASON, "afterok:10(failed)");
    refresh(&mut a, &later);
    assert_eq!(a.top_overlay(), Some(Overlay::Deps));
    assert_eq!(selected(&a).as_deref(), Some("13"));
    let never: Vec<&str> = a
        .overlays
        .deps
        .graph
        .nodes
        .iter()
        .filter(|n| n.never)
        .map(|n| n.id.as_str())
        .collect();
    assert_eq!(never, ["11", "12", "13"]);
}

/// `D` (and `d`) on a row asks to cancel that job through the cancel question; `y` is
/// "no" to nothing here: it opens the job's files as in the queue, `Y` copies its id.
#[test]
fn cancel_and_copy_from_deps() {
    let mut a = app();
    refresh(&mut a, &chain(NEVER_REASON, "afterok:10(failed)"));
    a.run_command("deps");
    key(&mut a, KeyCode::Char('j'));
    assert!(key(&mut a, KeyCode::Char('D')).is_empty());
    assert_eq!(a.top_overlay(), Some(Overlay::Confirm));
    let c = a.overlays.confirm.clone().unwrap();
    assert!(c.prompt.starts_with("cancel 11 (b"), "{}", c.prompt);
    let cmds = key(&mut a, KeyCode::Char('y'));
    let op = cmds
        .iter()
        .find_map(|c| match c {
            Cmd::Op(op) => Some(op.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(op.kind, OpKind::Cancel);
    assert_eq!(op.ids, [JobId::new(11)]);
    // The view is still open under the question that was answered.
    assert_eq!(a.top_overlay(), Some(Overlay::Deps));
    // Any other key keeps the job.
    key(&mut a, KeyCode::Char('d'));
    assert!(key(&mut a, KeyCode::Char('n')).is_empty());
    let cmds = key(&mut a, KeyCode::Char('Y'));
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::Clipboard(t) if t == "11")),
        "{cmds:?}"
    );
    assert_eq!(
        a.queue.shown().selected_id().map(|i| i.as_str()),
        Some("11")
    );
}

/// A read-only session asks nothing and cancels nothing.
#[test]
fn read_only_cancels_nothing_from_deps() {
    let mut a = app();
    a.clusters[0].read_only = true;
    refresh(&mut a, &chain("Dependency", "afterok:10(unfulfilled)"));
    a.run_command("deps");
    assert!(key(&mut a, KeyCode::Char('D')).is_empty());
    assert!(a.overlays.confirm.is_none());
    assert!(a.note.as_deref().unwrap_or("").contains("read-only"));
}

/// The view's own answer to a key: what it hands the router (select, then close or copy;
/// cancel; a note when the row is no job).
#[test]
fn a_key_on_the_tree_says_what_the_router_does() {
    let mut a = app();
    refresh(&mut a, &chain("Dependency", "afterok:10(unfulfilled)"));
    a.run_command("deps");
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    let d = a
        .overlays
        .deps
        .on_key(&view!(a, 0), &enter, Some(Action::Select), 10);
    assert!(
        d.select.as_ref().is_some_and(|id| id.as_str() == "10") && d.close && d.then.is_none(),
        "{d:?}"
    );
    let y = KeyEvent::new(KeyCode::Char('Y'), KeyModifiers::NONE);
    let d = a
        .overlays
        .deps
        .on_key(&view!(a, 0), &y, Some(Action::Copy), 10);
    assert!(
        d.select.is_some() && !d.close && d.then == Some(Action::Copy),
        "{d:?}"
    );
    let d = a
        .overlays
        .deps
        .on_key(&view!(a, 0), &enter, Some(Action::Cancel), 10);
    assert!(d.confirm.is_some(), "the cancel question: {d:?}");
    let mut empty = DepsState::default();
    let out = empty.on_key(&view!(a, 0), &enter, Some(Action::Select), 10);
    assert!(out
        .note
        .is_some_and(|n| n.contains("not a job of the queue")));
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    let d = a.overlays.deps.on_key(&view!(a, 0), &esc, None, 10);
    assert!(d.cmds.is_empty() && d.note.is_none(), "{d:?}");
    assert!(!a.overlays.deps.open);
}

/// Moves the queue's selection to job `id` with `j`/`k`, as a user would.
fn select(a: &mut App, id: &str) {
    let n = a.queue.shown().jobs().len();
    for up in [false, true] {
        for _ in 0..=n {
            if a.queue.shown().selected_id().map(|j| j.as_str()) == Some(id) {
                return;
            }
            key(a, KeyCode::Char(if up { 'k' } else { 'j' }));
        }
    }
    panic!("job {id} is not in the queue");
}

/// The chains are built only while something reads them: not while the selected job is in
/// no chain and `:deps` is closed; for the detail pane once a job of a chain is selected
/// (once per refresh however the selection moves); with every refresh while `:deps` is open.
#[test]
fn chains_are_built_only_when_read() {
    let mut a = app();
    let recs = chain("Dependency", "afterok:10(unfulfilled)");
    refresh(&mut a, &recs);
    select(&mut a, "14");
    let before = a.overlays.deps.builds;
    refresh(&mut a, &recs);
    refresh(&mut a, &recs);
    assert!(a.overlays.deps.graph.is_empty() && a.overlays.deps.tree.is_empty());
    assert_eq!(a.overlays.deps.builds, before);
    // 11 waits on 10 and 12 waits on it: the detail pane shows both.
    select(&mut a, "11");
    assert_eq!(a.overlays.deps.builds, before + 1);
    let waiters = |a: &App, id: &str| -> Vec<String> {
        let w = a.overlays.deps.graph.waiters(0, id);
        w.iter().map(|(n, _)| n.id.clone()).collect()
    };
    assert_eq!(waiters(&a, "11"), ["12"]);
    assert_eq!(
        a.overlays.deps.graph.node(0, "10").map(|n| n.name.as_str()),
        Some("a")
    );
    select(&mut a, "12");
    select(&mut a, "10");
    assert_eq!(a.overlays.deps.builds, before + 1);
    refresh(&mut a, &recs);
    assert_eq!(a.overlays.deps.builds, before + 2);
    assert_eq!(waiters(&a, "10"), ["11", "13"]);
    // 14 again: after the next refresh nothing is built or kept.
    select(&mut a, "14");
    refresh(&mut a, &recs);
    assert!(a.overlays.deps.graph.is_empty());
    assert_eq!(a.overlays.deps.builds, before + 2);
    a.run_command("deps");
    assert_eq!(a.overlays.deps.builds, before + 3);
    assert_eq!(ids(&a), ["10", "11", "12", "13"]);
    refresh(&mut a, &recs);
    assert_eq!(a.overlays.deps.builds, before + 4);
    key(&mut a, KeyCode::Esc);
    refresh(&mut a, &recs);
    assert_eq!(a.overlays.deps.builds, before + 4);
    assert!(a.overlays.deps.graph.is_empty());
}
