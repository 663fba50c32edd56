//! The whole screen on ratatui's TestBackend: every pane together, the status bar in its
//! states and the help overlay, from real fixture output and a fixed clock.

use slurmdash::action::{InsightMsg, JobMsg, PollMsg};
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use slurmdash::action::Msg;
use slurmdash::app::App;
use slurmdash::io::fetch::DetailSource;
use slurmdash::logview::{TailEvent, TailKind};
use slurmdash::remote::ConnState;
use slurmdash::slurm::parse::{parse_scontrol_jobs, parse_squeue};

const SQUEUE: &str = include_str!("fixtures/slurm/squeue_me.out");
const SCONTROL_RUNNING: &str = include_str!("fixtures/slurm/scontrol_job_running.out");

fn now() -> NaiveDateTime {
    // Shortly after the fixtures were captured, so ages read like a live session.
    let jobs = parse_squeue(SQUEUE).expect("fixture");
    jobs.iter()
        .filter_map(|j| j.submit_time)
        .max()
        .map(|t| t + chrono::Duration::seconds(95))
        .unwrap_or_else(|| {
            NaiveDate::from_ymd_opt(2026, 11, 23)
                .and_then(|d| d.and_hms_opt(12, 0, 0))
                .expect("time")
        })
}

/// An App of cluster `dev` at the fixed clock, on a `w` x `h` screen, with nothing yet.
fn bare_app(w: u16, h: u16) -> App {
    let mut a = App::fixture(now());
    a.size = (w, h);
    a
}

fn app(w: u16, h: u16) -> App {
    let mut a = bare_app(w, h);
    a.update(Msg::Poll(PollMsg::Conn {
        state: ConnState::Connected {
            host: "login1".into(),
        },
        host: Some("login1".into()),
    }));
    a.update(Msg::queue(
        Ok(parse_squeue(SQUEUE).expect("fixture")),
        now() - chrono::Duration::seconds(3),
        Duration::from_millis(20),
    ));
    a
}

fn key(a: &mut App, code: KeyCode) {
    a.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn render(a: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(a.size.0, a.size.1)).expect("terminal");
    t.draw(|f| slurmdash::ui::draw(f, a)).expect("draw");
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// The running fixture job selected, its detail loaded and a few log lines tailed.
fn with_running_job(a: &mut App) {
    let detail = parse_scontrol_jobs(SCONTROL_RUNNING).expect("fixture")[0].clone();
    let id = detail.id.clone().expect("id");
    key(a, KeyCode::Char('/'));
    for c in id.as_str().chars() {
        key(a, KeyCode::Char(c));
    }
    key(a, KeyCode::Enter);
    let cmds = a.update(Msg::Job(JobMsg::Detail {
        id: id.clone(),
        result: Box::new(Ok((detail, DetailSource::Scontrol))),
    }));
    let Some(slurmdash::action::Cmd::Tail(targets)) = cmds.first() else {
        panic!("no tail started: {cmds:?}");
    };
    let (job, stream, path) = targets[0].clone();
    a.update(Msg::Job(JobMsg::Tail(TailEvent {
        job,
        stream,
        path,
        kind: TailKind::Data {
            bytes: b"epoch 1 loss=0.93\nepoch 2 loss=0.71\r\x1b[32mepoch 3 loss=0.52\x1b[0m\n"
                .to_vec(),
            size: 56,
        },
        credit: Default::default(),
    })));
}

#[test]
fn whole_screen_with_a_running_job_selected() {
    let mut a = app(140, 40);
    with_running_job(&mut a);
    let s = render(&a);
    assert!(s.contains("epoch 3 loss=0.52"), "{s}");
    assert!(
        !s.contains("epoch 2"),
        "a \\r-overwritten line shows its latest state"
    );
    assert!(s.contains("login1 connected"), "{s}");
    assert!(s.contains("updated 3s ago"), "{s}");
    insta::assert_snapshot!(s);
}

/// The running fixture job writes stdout and stderr to one file (Slurm's default): a tall
/// terminal shows that file once, not the same text twice.
#[test]
fn tall_terminal_shows_one_pane_when_stdout_and_stderr_are_one_file() {
    let mut a = app(140, 50);
    with_running_job(&mut a);
    let s = render(&a);
    assert!(s.contains("┌ stdout+stderr "), "{s}");
    assert!(!s.contains("┌ stderr "), "{s}");
    assert_eq!(s.matches("epoch 3 loss=0.52").count(), 1, "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn tall_terminal_shows_stdout_and_stderr_together_when_they_differ() {
    let mut a = app(140, 50);
    let mut detail = parse_scontrol_jobs(SCONTROL_RUNNING).expect("fixture")[0].clone();
    detail.stderr = Some("/lustre/fsw/sduser/capture-fixtures/logs/errors.err".into());
    let id = detail.id.clone().expect("id");
    key(&mut a, KeyCode::Char('/'));
    for c in id.as_str().chars() {
        key(&mut a, KeyCode::Char(c));
    }
    key(&mut a, KeyCode::Enter);
    a.update(Msg::Job(JobMsg::Detail {
        id,
        result: Box::new(Ok((detail, DetailSource::Scontrol))),
    }));
    let s = render(&a);
    assert!(s.contains("┌ stdout ") && s.contains("┌ stderr "), "{s}");
    let mut short = app(140, 40);
    with_running_job(&mut short);
    let s = render(&short);
    assert!(
        s.contains("┌ stdout+stderr ") && !s.contains("┌ stderr "),
        "{s}"
    );
}

#[test]
fn help_overlay_lists_the_bindings_of_the_focused_pane() {
    let mut a = app(120, 44);
    key(&mut a, KeyCode::Tab);
    key(&mut a, KeyCode::Tab);
    key(&mut a, KeyCode::Char('?'));
    let s = render(&a);
    assert!(s.contains("keys in the log pane"), "{s}");
    assert!(s.contains("search the log"), "{s}");
    assert!(
        !s.contains("filter jobs by id"),
        "queue-only binding shown in the log pane"
    );
    insta::assert_snapshot!(s);
}

/// On a wide terminal too short for one column, the keys and the commands stand side by
/// side: every binding's words whole, and a gap between the two columns.
#[test]
fn help_in_two_columns_shows_every_binding_whole() {
    let mut a = app(200, 50);
    key(&mut a, KeyCode::Char('?'));
    let s = render(&a);
    let keys = s
        .lines()
        .find(|l| l.contains("keys in the queue pane"))
        .expect(&s);
    assert!(keys.contains("  commands after :"), "side by side: {s}");
    for (action, _) in a.keymap.bindings(slurmdash::keymap::Pane::Queue) {
        let words = action.describe();
        let row = s.lines().find(|l| l.contains(words));
        let row = row.unwrap_or_else(|| panic!("{action:?}: {words:?} cut: {s}"));
        let after = &row[row.find(words).unwrap_or(0) + words.len()..];
        assert!(
            after.starts_with("  ") || after.starts_with(" │"),
            "{action:?}: the next column runs on: {row}"
        );
    }
    insta::assert_snapshot!(s);
}

#[test]
fn status_bar_shows_stale_data_reconnecting_and_the_failed_command() {
    let mut a = app(120, 30);
    a.update(Msg::Tick(now() + chrono::Duration::seconds(60)));
    a.update(Msg::Poll(PollMsg::Conn {
        state: ConnState::Reconnecting {
            attempt: 3,
            last_error: "master died".into(),
            retry_in: None,
        },
        host: None,
    }));
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(Msg::queue(
        Err(
            "`squeue --me` on login1 failed (exit 1): slurm_load_jobs error: Socket timed out"
                .into(),
        ),
        now(),
        Duration::from_secs(10),
    ));
    let s = render(&a);
    let status = status_bar(&s);
    assert!(status.contains("reconnecting, attempt 3"), "{status}");
    assert!(status.contains("updated 1m ago"), "{status}");
    assert!(
        status.contains("error: `squeue --me` on login1 failed"),
        "{status}"
    );
    insta::assert_snapshot!(status);
}

/// The screen's last two lines: the status bar.
fn status_bar(s: &str) -> String {
    let status: Vec<&str> = s.lines().rev().take(2).collect();
    format!("{}\n{}", status[1], status[0])
}

fn ch(a: &mut App, c: char) {
    key(a, KeyCode::Char(c));
}

fn select(a: &mut App, id: &str) {
    assert!(
        a.queue.shown_mut().select_id(&id.parse().expect("id")),
        "{id} shown"
    );
}

#[test]
fn marks_a_confirmation_and_rows_being_cancelled() {
    let mut a = app(140, 40);
    select(&mut a, "248");
    ch(&mut a, ' ');
    ch(&mut a, ' ');
    ch(&mut a, 'd');
    let s = render(&a);
    assert!(s.contains(" 2 marked "), "{s}");
    assert!(
        s.contains("cancel 2 marked jobs (248, 247)?"),
        "the question names the jobs: {s}"
    );
    assert!(s.contains("y/enter: cancel · any other key: no"), "{s}");
    let marked_rows = s
        .lines()
        .filter(|l| l.starts_with("*248 ") || l.starts_with("*247 "))
        .count();
    assert_eq!(
        marked_rows, 2,
        "each marked row carries a * on the border: {s}"
    );
    insta::assert_snapshot!("confirm", s);
    ch(&mut a, 'y');
    let s = render(&a);
    let busy = s.lines().filter(|l| l.contains("cancelling…")).count();
    assert_eq!(busy, 2, "{s}");
    insta::assert_snapshot!("cancelling", s);
}

#[test]
fn edit_form_shows_fields_limits_and_problems() {
    let mut a = app(140, 40);
    select(&mut a, "242");
    ch(&mut a, 'E');
    a.update(Msg::Insight(InsightMsg::Limits(Ok(
        slurmdash::slurm::parse::parse_scontrol_partitions(include_str!(
            "fixtures/slurm/scontrol_partition.out"
        ))
        .expect("fixture"),
    ))));
    let s = render(&a);
    assert!(
        s.contains("! time limit 2:00:00 exceeds short's MaxTime 30:00: the job cannot start"),
        "the limit that keeps the job pending is pointed out: {s}"
    );
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    for c in "1:00:00".chars() {
        ch(&mut a, c);
    }
    let s = render(&a);
    assert!(s.contains("edit pending job 242"), "{s}");
    assert!(s.contains("1:00:00█  (was 2:00:00)"), "{s}");
    assert!(
        s.contains("✗ time limit 1:00:00 exceeds short's MaxTime 30:00"),
        "{s}"
    );
    insta::assert_snapshot!(s);
}

#[test]
fn read_only_help_says_what_is_disabled() {
    let mut a = app(120, 50);
    a.clusters[0].read_only = true;
    ch(&mut a, '?');
    let s = render(&a);
    assert!(
        s.contains("read-only: cancel, hold, release, requeue, top, edit are disabled"),
        "{s}"
    );
    assert!(
        s.contains("✗ cancel the selected or marked jobs (asks first)"),
        "{s}"
    );
    // The commands follow the keys: at this size, below them (G scrolls there).
    key(&mut a, KeyCode::Char('G'));
    let s = render(&a);
    assert!(s.contains(":cancel [ID...]"), "commands listed: {s}");
}

#[test]
fn two_clusters_share_the_queue_and_the_status_bar_says_which_one_failed() {
    use slurmdash::app::ClusterState;
    let mut a = bare_app(160, 30);
    let polar = a.add_cluster(ClusterState::new(
        "polar",
        "your jobs",
        Duration::from_secs(5),
        now(),
    ));
    let some = |ids: &[&str]| -> Vec<_> {
        parse_squeue(SQUEUE)
            .expect("fixture")
            .into_iter()
            .filter(|j| ids.contains(&j.id.as_str()))
            .collect()
    };
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::queue(
            Ok(some(&["237", "248", "247", "241"])),
            now() - chrono::Duration::seconds(3),
            Duration::from_millis(20),
        )),
    ));
    let few = some(&["237", "248"]);
    a.handle(Msg::Cluster(
        polar,
        Box::new(Msg::queue(
            Ok(few),
            now() - chrono::Duration::seconds(40),
            Duration::from_millis(20),
        )),
    ));
    a.handle(Msg::Cluster(
        polar,
        Box::new(Msg::queue(
            Err("`squeue --me` on polar-login failed (exit 1): Socket timed out".into()),
            now(),
            Duration::from_secs(10),
        )),
    ));
    let s = render(&a);
    let header = s.lines().find(|l| l.contains("JOBID")).expect("header");
    assert!(header.contains("CLUSTER"), "{header}");
    let polar_rows: Vec<&str> = s.lines().filter(|l| l.contains("polar (stale)")).collect();
    assert_eq!(polar_rows.len(), 2, "{s}");
    assert!(
        s.lines()
            .any(|l| l.starts_with("│237 ") && l.contains(" dev ")),
        "{s}"
    );
    let status = status_bar(&s);
    assert!(status.contains(" dev "), "{status}");
    assert!(status.contains(" polar refresh failed"), "{status}");
    assert!(
        status.contains("error: polar: `squeue --me` on polar-login failed"),
        "{status}"
    );
    insta::assert_snapshot!(s);
}

#[test]
fn a_session_near_its_end_asks_to_extend_and_its_row_says_extending() {
    let mut a = app(140, 30);
    let mut jobs = parse_squeue(SQUEUE).expect("fixture");
    let j = jobs
        .iter_mut()
        .find(|j| j.id.as_str() == "237")
        .expect("237");
    j.name = "session-notebook".into();
    j.time_limit = slurmdash::slurm::model::SlurmDuration::Known(Duration::from_secs(3600));
    j.time_used = slurmdash::slurm::model::SlurmDuration::Known(Duration::from_secs(50 * 60 + 20));
    // Launched from here (in the registry), and no key pressed lately.
    a.clusters[0].launch.registry_jobs.push(j.clone());
    a.clusters[0].insight.last_key = None;
    a.update(Msg::Poll(PollMsg::PollDue));
    a.update(Msg::queue(Ok(jobs), now(), Duration::from_millis(20)));
    select(&mut a, "237");
    let s = render(&a);
    assert!(
        s.contains("session 237 (session-notebook) ends in 10 minutes: extend it?"),
        "{s}"
    );
    assert!(
        s.contains("+: 30 more minutes · !: end it now… · any other key: no"),
        "{s}"
    );
    insta::assert_snapshot!("session_question", s);
    ch(&mut a, '+');
    let s = render(&a);
    assert!(s.contains("extending…"), "{s}");
    assert!(
        s.contains("asking the cluster to extend 237 by 30 minutes…"),
        "{s}"
    );
    insta::assert_snapshot!("session_extending", s);
}

/// On an 80x24 terminal the help is taller than the screen: it says which lines it shows,
/// the moving keys scroll it to its last line, and any other key closes it.
#[test]
fn help_on_a_small_terminal_scrolls_to_every_key() {
    let mut a = app(80, 24);
    key(&mut a, KeyCode::Char('?'));
    let s = render(&a);
    assert!(s.contains("help 1–22 of "), "{s}");
    assert!(s.contains("move up"), "{s}");
    assert!(!s.contains("mouse: click selects"), "{s}");
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Down);
    assert_eq!(a.overlays.help.scroll, 2);
    assert!(render(&a).contains("help 3–24 of "));
    key(&mut a, KeyCode::Char('G'));
    let s = render(&a);
    assert!(s.contains("mouse: click selects"), "the last line: {s}");
    assert!(s.contains(":usage [DAYS]"), "{s}");
    assert_eq!(a.overlays.help.scroll, a.overlays.help.max_scroll(a.size.1));
    insta::assert_snapshot!(s);
    key(&mut a, KeyCode::Char('g'));
    assert_eq!(a.overlays.help.scroll, 0);
    key(&mut a, KeyCode::Char('x'));
    assert!(!a.overlays.help.is_open(), "any other key closes the help");
}
