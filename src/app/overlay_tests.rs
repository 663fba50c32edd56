//! The overlay stack: what is listed for combinations of open overlays, that a key reaches
//! the topmost one only, and that the screen draws them in the same order (the one on top
//! of the list is the one the user sees whole).

use crate::action::{InsightMsg, LaunchMsg};
use crossterm::event::{KeyCode, MouseButton, MouseEvent, MouseEventKind};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use super::super::tests::{app, code, id, jobs, key, loaded, now};
use super::*;
use crate::action::Msg;
use crate::keymap::{Action, Pane};

/// Every kind, in stacking order, from the overlay list (one insight view stands for the
/// three; only one is open at a time).
fn order() -> Vec<Overlay> {
    Overlay::all()
}

/// An App with the fixture queue and pending job 248 selected (it has a work dir, so its
/// files open; it is pending, so it can be edited; it can be cancelled).
fn loaded_app() -> App {
    let mut a = app();
    a.update(loaded(jobs()));
    a.queue.shown_mut().select_id(&id("248"));
    a.update(Msg::Resize(120, 40));
    a
}

/// Opens `o` the way the user does (a command, an action), whatever is open already.
fn open(a: &mut App, o: Overlay) {
    match o {
        Overlay::Insight(v) => {
            a.run_command(match v {
                View::Partitions => "partitions",
                View::Stats => "stats",
                View::Usage => "usage",
            });
        }
        Overlay::Events => {
            a.run_command("events");
        }
        Overlay::Deps => {
            a.run_command("deps");
        }
        Overlay::Top => {
            // Over a running job; the pending one stays selected for what follows.
            let keep = a.queue.shown().selected_id().cloned();
            let running = a
                .queue
                .shown()
                .jobs()
                .iter()
                .find(|j| j.status() == crate::slurm::model::Status::Running)
                .map(|j| j.id.clone())
                .unwrap();
            a.queue.shown_mut().select_id(&running);
            a.run_command("jobtop");
            if let Some(k) = keep {
                a.queue.shown_mut().select_id(&k);
            }
        }
        Overlay::CmdLog => {
            a.run_command("log");
        }
        Overlay::Custom => {
            let def = crate::config::commands::CommandDef {
                key: "J".into(),
                name: "jobstats".into(),
                command: "jobstats {job_id}".into(),
                ..Default::default()
            };
            let own = crate::config::commands::check(&[def], &crate::keymap::Keymap::default());
            a.overlays.custom = super::super::custom::CustomCommands::new(own.unwrap());
            a.run_command("commands");
        }
        Overlay::Grep => {
            a.run_command("grep boom");
        }
        Overlay::Files => {
            a.on_action(Action::Files);
        }
        Overlay::Columns => {
            a.on_action(Action::Columns);
        }
        Overlay::Edit => {
            a.on_action(Action::Edit);
        }
        Overlay::Form => {
            a.open_form();
        }
        Overlay::Input => {
            a.on_action(Action::Command);
        }
        Overlay::Confirm => {
            a.on_action(Action::Cancel);
        }
        Overlay::Help => {
            a.on_action(Action::Help);
        }
    }
    a.note = None;
}

fn with(open_in_order: &[Overlay]) -> App {
    let mut a = loaded_app();
    for o in open_in_order {
        open(&mut a, *o);
    }
    a
}

fn screen(a: &App) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(a.size.0, a.size.1)).unwrap();
    t.draw(|f| crate::ui::draw(f, a)).unwrap();
    t.backend().buffer().clone()
}

fn esc() -> Msg {
    code(KeyCode::Esc)
}

#[test]
fn the_list_is_bottom_first_in_one_order_whatever_was_opened_first() {
    assert!(loaded_app().open_overlays().is_empty());
    assert_eq!(loaded_app().top_overlay(), None);
    assert_eq!(
        with(&[Overlay::Events, Overlay::Help]).open_overlays(),
        [Overlay::Events, Overlay::Help]
    );
    assert_eq!(
        with(&[Overlay::Files, Overlay::Confirm]).open_overlays(),
        [Overlay::Files, Overlay::Confirm]
    );
    assert_eq!(
        with(&[Overlay::Files, Overlay::Form]).open_overlays(),
        [Overlay::Files, Overlay::Form]
    );
    assert_eq!(
        with(&[Overlay::Files, Overlay::Input]).open_overlays(),
        [Overlay::Files, Overlay::Input]
    );
    assert_eq!(
        with(&[Overlay::Insight(View::Partitions), Overlay::Help]).open_overlays(),
        [Overlay::Insight(View::Partitions), Overlay::Help]
    );
    // Opened the other way round, the stack is the same: it is read from the state.
    assert_eq!(
        with(&[Overlay::Help, Overlay::Events]).open_overlays(),
        [Overlay::Events, Overlay::Help]
    );
    let mut reversed = order();
    reversed.reverse();
    let all = with(&reversed);
    assert_eq!(all.open_overlays(), order());
    assert_eq!(all.top_overlay(), Some(Overlay::Help));
}

#[test]
fn esc_closes_only_the_top_overlay_and_the_next_esc_the_one_below() {
    let order = order();
    for (i, below) in order.iter().enumerate() {
        for top in &order[i + 1..] {
            let mut a = with(&[*below, *top]);
            assert_eq!(
                a.open_overlays(),
                [*below, *top],
                "{below:?} then {top:?} open"
            );
            a.update(esc());
            assert_eq!(
                a.open_overlays(),
                [*below],
                "esc with {top:?} over {below:?}"
            );
            a.update(esc());
            assert!(
                a.open_overlays().is_empty(),
                "second esc with {below:?} left: {:?}",
                a.open_overlays()
            );
        }
    }
}

#[test]
fn esc_in_help_over_stats_closes_help_and_stats_stays() {
    let mut a = loaded_app();
    for c in ":stats".chars() {
        a.update(key(c));
    }
    a.update(code(KeyCode::Enter));
    assert_eq!(a.overlays.view, Some(View::Stats));
    // The view lets the keymap's keys through: `?` opens help over it.
    a.update(key('?'));
    assert!(a.overlays.help.is_open());
    a.update(esc());
    assert!(!a.overlays.help.is_open());
    assert_eq!(a.overlays.view, Some(View::Stats));
    a.update(esc());
    assert_eq!(a.overlays.view, None);
}

/// `:usage` open, its first read answered (so `r` would read again).
fn usage_read() -> App {
    let mut a = loaded_app();
    open(&mut a, Overlay::Insight(View::Usage));
    let days = a.clusters[0].usage.days;
    a.update(Msg::Insight(InsightMsg::Usage {
        days,
        result: Box::new(Err("sacct: no accounting storage".into())),
        at: now(),
    }));
    assert!(!a.clusters[0].usage.loading);
    a
}

#[test]
fn r_in_usage_reads_again_only_when_the_usage_view_is_on_top() {
    let mut a = usage_read();
    let read = a.update(key('r'));
    assert!(
        read.iter().any(|c| matches!(c, Cmd::FetchUsage { .. })),
        "{read:?}"
    );
    a.update(Msg::Insight(InsightMsg::Usage {
        days: a.clusters[0].usage.days,
        result: Box::new(Err("again".into())),
        at: now(),
    }));
    // Help over it: `r` closes help and reads nothing.
    a.update(key('?'));
    assert!(a.update(key('r')).is_empty());
    assert!(!a.overlays.help.is_open());
    assert_eq!(a.overlays.view, Some(View::Usage));
    // The command line over it: `r` is typed.
    a.update(key(':'));
    assert!(a.update(key('r')).is_empty());
    assert_eq!(
        a.overlays.input.as_ref().map(|i| i.text.as_str()),
        Some("r")
    );
    a.update(esc());
    assert!(a.overlays.input.is_none());
    assert_eq!(a.overlays.view, Some(View::Usage));
}

#[test]
fn a_relaunch_form_arriving_over_the_files_view_takes_the_keys() {
    let mut a = loaded_app();
    a.update(key('y'));
    let files_at = a.overlays.files.view.as_ref().map(|v| v.selected);
    assert!(files_at.is_some(), "files view open");
    // `L` was pressed before `y`; its answer opens the form over the files view.
    a.update(Msg::Launch(LaunchMsg::Relaunch {
        id: id("230"),
        result: Box::new(Ok(crate::launch::relaunch::Relaunchable {
            spec: crate::launch::LaunchSpec::default(),
            spec_sha256: String::new(),
            used: None,
        })),
    }));
    assert_eq!(a.open_overlays(), [Overlay::Files, Overlay::Form]);
    let row = a.overlays.form.as_ref().map(|f| f.row);
    a.update(key('j'));
    assert_ne!(
        a.overlays.form.as_ref().map(|f| f.row),
        row,
        "j moved the form's row"
    );
    assert_eq!(a.overlays.files.view.as_ref().map(|v| v.selected), files_at);
    a.update(esc());
    assert_eq!(a.open_overlays(), [Overlay::Files]);
}

#[test]
fn the_line_typed_over_the_files_view_gets_the_letters() {
    let mut a = with(&[Overlay::Files]);
    a.on_action(Action::Search);
    assert_eq!(a.open_overlays(), [Overlay::Files, Overlay::Input]);
    for c in "qjk".chars() {
        a.update(key(c));
    }
    assert_eq!(
        a.overlays.input.as_ref().map(|i| i.text.as_str()),
        Some("qjk")
    );
    assert!(
        a.overlays.files.view.is_some(),
        "q went to the line, not the files view"
    );
}

#[test]
fn a_question_over_the_files_view_is_answered_first() {
    let mut a = with(&[Overlay::Files, Overlay::Confirm]);
    let cmds = a.update(key('y'));
    assert!(cmds.iter().any(|c| matches!(c, Cmd::Op(_))), "{cmds:?}");
    assert_eq!(a.open_overlays(), [Overlay::Files]);
}

#[test]
fn the_mouse_reaches_the_panes_only_under_the_typed_line() {
    // A click on the detail pane focuses it, unless something covers the panes.
    let click = |a: &App| {
        let d = a.areas().detail.expect("detail pane shown");
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: d.x + 2,
            row: d.y + 2,
            modifiers: crossterm::event::KeyModifiers::NONE,
        })
    };
    for o in order() {
        let mut a = with(&[o]);
        assert_eq!(a.focus, Pane::Queue);
        let m = click(&a);
        a.update(m);
        assert_eq!(
            a.focus == Pane::Detail,
            o == Overlay::Input,
            "a click with {o:?} open"
        );
    }
}

/// The cells `o` paints over the panes when it is the only overlay open.
fn painted_alone(o: Overlay) -> (Buffer, Vec<(u16, u16)>) {
    let base = screen(&loaded_app());
    let alone = screen(&with(&[o]));
    let mut cells = Vec::new();
    for y in 0..base.area.height {
        for x in 0..base.area.width {
            if base[(x, y)] != alone[(x, y)] {
                cells.push((x, y));
            }
        }
    }
    assert!(!cells.is_empty(), "{o:?} draws something");
    (alone, cells)
}

#[test]
fn the_screen_draws_the_stack_bottom_first_so_the_top_one_is_seen_whole() {
    let order = order();
    for (i, below) in order.iter().enumerate() {
        for top in &order[i + 1..] {
            // Help over the files view lists the files view's keys: checked below.
            if (*below, *top) == (Overlay::Files, Overlay::Help) {
                continue;
            }
            // `open` gives the App its own commands to list for `:commands`, and help
            // lists them too: that help is longer than the one painted alone.
            if (*below, *top) == (Overlay::Custom, Overlay::Help) {
                continue;
            }
            let (alone, cells) = painted_alone(*top);
            let both = screen(&with(&[*below, *top]));
            let hidden: Vec<_> = cells
                .iter()
                .filter(|c| both[**c] != alone[**c])
                .take(5)
                .collect();
            assert!(
                hidden.is_empty(),
                "{top:?} over {below:?}: cells drawn over it at {hidden:?}"
            );
        }
    }
}

#[test]
fn help_over_the_files_view_is_drawn_over_it() {
    let a = with(&[Overlay::Files, Overlay::Help]);
    let s = screen(&a);
    let (w, h) = (s.area.width, s.area.height);
    let text = |y: u16, from: u16| -> String { (from..w).map(|x| s[(x, y)].symbol()).collect() };
    // Help's box: the corner of the row whose border carries its title.
    let (left, top) = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .find(|&(x, y)| s[(x, y)].symbol() == "┌" && text(y, x).starts_with("┌ help "))
        .expect("help's top border");
    let bottom = (top + 1..h)
        .find(|&y| s[(left, y)].symbol() == "└")
        .expect("help's bottom border");
    // Inside the box only help's text, which for the files view names its keys: nothing
    // of the files view shows through.
    for y in top + 1..bottom {
        assert_eq!(s[(left, y)].symbol(), "│", "row {y}: {}", text(y, 0));
    }
    let first: String = a.overlays.help.lines[0]
        .spans
        .iter()
        .map(|s| s.content.as_ref())
        .collect();
    assert!(
        text(top + 1, left).contains(first.trim()),
        "{}",
        text(top + 1, left)
    );
}
