use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::*;
use crate::app::deps::DepsState;
use crate::slurm::deptree::tests::{jobs, rec};
use crate::slurm::deptree::NEVER_REASON;
use crate::slurm::model::JobState;
use crate::ui::detail::DetailWidget;
use crate::ui::queue::tests::{now, text};

/// A chain A → B → C and A → D after A failed, a job that waits on two, a `singleton`
/// pair, and a job named in a dependency that left the queue.
fn state() -> DepsState {
    let j = jobs(&[
        rec("10", "prep", "FAILED", "NonZeroExitCode", "(null)"),
        rec("11", "train", "PENDING", NEVER_REASON, "afterok:10(failed)"),
        rec(
            "12",
            "eval",
            "PENDING",
            "Dependency",
            "afterok:11(unfulfilled)",
        ),
        rec(
            "13",
            "report",
            "PENDING",
            NEVER_REASON,
            "afterok:10(failed)",
        ),
        rec("20", "sweep", "RUNNING", "None", "(null)"),
        rec(
            "21",
            "merge",
            "PENDING",
            "Dependency",
            "afterok:20(unfulfilled),afterany:7(unfulfilled)",
        ),
        rec("30", "nightly", "RUNNING", "None", "(null)"),
        rec(
            "31",
            "nightly",
            "PENDING",
            "Dependency",
            "singleton(unfulfilled)",
        ),
    ]);
    let mut s = DepsState::default();
    s.rebuild(
        &j,
        |_, id| (id == "7").then(|| ("fetch".to_string(), JobState::Completed)),
        None,
    );
    s
}

fn render(s: &DepsState, w: u16, h: u16) -> String {
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    DepsWidget {
        deps: s,
        theme: &theme,
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn deps_tree() {
    let mut s = state();
    s.cursor = 3;
    let t = render(&s, 100, 14);
    assert!(t.contains("› ├─ 11"), "{t}");
    assert_snapshot!(t);
}

#[test]
fn deps_empty() {
    let t = render(&DepsState::default(), 100, 5);
    assert!(t.contains("no dependency chains"), "{t}");
    assert_snapshot!(t);
}

/// The detail pane of a job in a chain: what it waits on with each one's state and
/// whether it can still be met (C waits on B, which can never start), and what waits on
/// it.
#[test]
fn detail_shows_states_and_waiters() {
    let s = state();
    let j = jobs(&[rec(
        "11",
        "train",
        "PENDING",
        NEVER_REASON,
        "afterok:10(failed)",
    )]);
    let c = jobs(&[rec(
        "12",
        "eval",
        "PENDING",
        "Dependency",
        "afterok:11(unfulfilled)",
    )]);
    let theme = Theme::new(false);
    let draw = |job| {
        let mut buf = Buffer::empty(Rect::new(0, 0, 90, 30));
        DetailWidget {
            job: Some(job),
            deps: Some(&s.graph),
            ..DetailWidget::blank(&theme, now())
        }
        .render(buf.area, &mut buf);
        text(&buf)
    };
    let b = draw(&j[0]);
    assert!(b.contains("afterok 10 prep (FAILED) · never"), "{b}");
    assert!(
        b.contains("Waited on by 12 eval (afterok) · PENDING · can never start"),
        "{b}"
    );
    assert_snapshot!("detail_deps_b", b);
    let c = draw(&c[0]);
    assert!(
        c.contains("afterok 11 train (PENDING) · never: it can never start itself"),
        "{c}"
    );
    assert!(c.contains("can never start on its dependencies"), "{c}");
    assert_snapshot!("detail_deps_c", c);
}
