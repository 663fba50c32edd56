use crate::action::JobMsg;
use chrono::NaiveDate;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::action::Msg;
use crate::app::tests::{app, code, id, jobs, loaded};
use crate::logview::found::GrepFile;
use crate::logview::grep::{GrepOutput, Hit};
use crate::logview::{TailEvent, TailKind};

fn at(h: u32, m: u32) -> chrono::NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 29)
        .and_then(|d| d.and_hms_opt(h, m, 0))
        .unwrap()
}

fn file(job: &str, stream: Stream, end: Option<chrono::NaiveDateTime>) -> GrepFile {
    GrepFile {
        job: id(job),
        stream,
        path: format!("/w/{job}.{stream}"),
        end,
        skipped: None,
    }
}

fn hit(file: usize, line: u64, text: &str) -> Hit {
    Hit {
        file,
        line,
        text: text.into(),
    }
}

/// Task 3 ended last but is listed first by a plain search; task 7 ended first.
pub(crate) fn report(first_error: bool) -> GrepReport {
    GrepReport {
        req: GrepRequest {
            pattern: "boom".into(),
            syntax: Syntax::Fixed,
            first_error,
            ids: vec![id("236")],
            arrays: vec![236],
            what: "array 236".into(),
            limits: Limits::default(),
            launches: Vec::new(),
        },
        files: vec![
            file("236_3", Stream::Stdout, Some(at(3, 10))),
            file("236_3", Stream::Stderr, Some(at(3, 10))),
            file("236_7", Stream::Stdout, Some(at(3, 2))),
            file("236_7", Stream::Stderr, Some(at(3, 2))),
            file("236_9", Stream::Stdout, None),
        ],
        found: GrepOutput {
            hits: vec![
                hit(1, 4, "ValueError: late"),
                hit(3, 1, "Traceback (most recent call last):"),
                hit(3, 5, "RuntimeError: boom"),
            ],
            status: Some(0),
            ..GrepOutput::default()
        },
        not_started: 0,
        guessed: false,
        complaint: None,
        error: None,
    }
}

fn jobs_of(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| match r {
            Row::Job { job, .. } => Some(job.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_first_error_preset_puts_the_job_that_ended_first_on_top() {
    let none = |_: &JobId| None;
    assert_eq!(jobs_of(&rows(&report(true), &none)), ["236_7", "236_3"]);
    assert_eq!(
        jobs_of(&rows(&report(false), &none)),
        ["236_3", "236_7"],
        "a plain search keeps the order the logs were found in"
    );
    let r = rows(&report(true), &|j: &JobId| {
        (j.array_task() == Some(7)).then(|| "LR=1e-3".to_string())
    });
    assert_eq!(
        r[0],
        Row::Job {
            job: id("236_7"),
            sweep: Some("LR=1e-3".into()),
            end: Some(at(3, 2)),
            hits: 2
        }
    );
    assert_eq!(
        r[2],
        Row::Hit {
            job: id("236_7"),
            stream: Stream::Stderr,
            line: 5,
            text: "RuntimeError: boom".into()
        }
    );
}

#[test]
fn a_pattern_is_a_fixed_string_unless_between_slashes() {
    assert_eq!(
        read_pattern(" step 1/10 ").unwrap(),
        ("step 1/10".into(), Syntax::Fixed)
    );
    assert_eq!(
        read_pattern("/loss=[0-9]+/").unwrap(),
        ("loss=[0-9]+".into(), Syntax::Regex)
    );
    assert_eq!(read_pattern("/").unwrap(), ("/".into(), Syntax::Fixed));
    assert!(read_pattern("").unwrap_err().contains(":grep TEXT"));
    assert!(read_pattern("//").is_err());
}

#[test]
fn the_preset_holds_the_triage_patterns_and_finds_a_traceback() {
    let p = first_error_pattern(&crate::triage::Patterns::builtin());
    assert!(p.contains("CUDA out of memory"), "{p}");
    assert!(p.contains(r"Traceback \(most recent call last\)"));
    // Run by the local grep, as on the login node.
    for (line, hit) in [
        ("Traceback (most recent call last):", true),
        ("RuntimeError: boom", true),
        (
            "slurmstepd: error: *** JOB 7 ON cpu01 CANCELLED AT 2026-11-29 DUE TO TIME LIMIT ***",
            true,
        ),
        ("torch.OutOfMemoryError: CUDA out of memory.", true),
        ("common line from task 3", false),
        ("epoch 3 errors=0", false),
    ] {
        let out = std::process::Command::new("grep")
            .args(["-E", "-i", "-q", "-e", &p])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(format!("{line}\n").as_bytes())?;
                c.wait()
            })
            .unwrap();
        assert_eq!(out.success(), hit, "{line}");
    }
}

#[test]
fn keys_move_over_the_matching_lines_and_enter_opens_the_log() {
    let mut g = GrepState {
        waiting: Some("array 236".into()),
        ..GrepState::default()
    };
    let none = |_: &JobId| None;
    let out = g.land(report(true), &none);
    assert_eq!(out.note.as_deref(), Some("3 matching lines in 2 jobs"));
    assert_eq!(g.selected, 1, "the first matching line, under its job");
    let k = |c| KeyEvent::new(c, KeyModifiers::NONE);
    let _ = g.on_key(&k(KeyCode::Char('j')), 10);
    assert_eq!(g.selected, 2);
    let _ = g.on_key(&k(KeyCode::Char('j')), 10);
    assert_eq!(g.selected, 4, "the next job's header is skipped");
    let _ = g.on_key(&k(KeyCode::Char('j')), 10);
    assert_eq!(g.selected, 4, "stays on the last");
    let _ = g.on_key(&k(KeyCode::Char('g')), 10);
    let _ = g.on_key(&k(KeyCode::Char('j')), 10);
    let out = g.on_key(&k(KeyCode::Enter), 10);
    assert_eq!(out.select, Some(id("236_7")));
    assert_eq!(out.then, Some(Action::ShowStderr));
    assert_eq!(out.focus, Some(Pane::Log));
    assert!(out.close);
    assert_eq!(
        g.jump,
        Some(Jump {
            job: id("236_7"),
            stream: Stream::Stderr,
            line: 5,
            text: "RuntimeError: boom".into()
        })
    );
}

/// Through the App: `:grep` on a task searches its whole array, the answer opens the pane,
/// enter selects the task and its log pane shows the line once the log arrives.
#[test]
fn the_app_searches_the_selected_array_and_enter_shows_the_line() {
    let mut a = app();
    a.update(loaded(jobs()));
    assert!(a.queue.shown_mut().select_id(&id("236_2")));
    let cmds = a.run_command("grep  two  words");
    let Some(Cmd::Grep(req)) = cmds.first() else {
        panic!("expected a search, got {cmds:?}");
    };
    assert_eq!(
        req.pattern, "two  words",
        "spaces inside the pattern are kept"
    );
    assert_eq!(req.arrays, vec![236]);
    assert_eq!(req.what, "array 236");
    assert_eq!(a.top_overlay(), Some(crate::app::Overlay::Grep));

    // The answer: task 236_1's stderr, line 2.
    let mut r = report(false);
    r.files = vec![file("236_1", Stream::Stderr, None)];
    r.found.hits = vec![hit(0, 2, "RuntimeError: boom")];
    a.update(Msg::Cluster(0, Box::new(Msg::Grep(Box::new(r)))));
    assert_eq!(a.overlays.grep.rows.len(), 2);
    a.update(code(KeyCode::Enter));
    assert_eq!(a.top_overlay(), None);
    assert_eq!(a.queue.shown().selected_id(), Some(&id("236_1")));
    assert_eq!(a.focus, Pane::Log);
    assert_eq!(a.logs.shown, Stream::Stderr);

    a.logs.stderr.set_path("/w/236_1.err");
    let mut text = String::new();
    for i in 1..=200 {
        text.push_str(&format!("line {i}\n"));
    }
    text = text.replace("line 2\n", "RuntimeError: boom\n");
    a.update(Msg::Job(JobMsg::Tail(TailEvent {
        job: id("236_1"),
        stream: Stream::Stderr,
        path: "/w/236_1.err".into(),
        kind: TailKind::Data {
            size: text.len() as u64,
            bytes: text.into_bytes(),
        },
        credit: Default::default(),
    })));
    let pane = &a.logs.stderr;
    assert!(!pane.is_following(), "the view stays at the line");
    let s = pane.search().expect("the line's text is searched");
    assert_eq!(s.current_seq(), Some(1), "line 2 is the second line");
}

#[test]
fn bang_and_errors_search_the_marked_jobs() {
    let mut a = app();
    a.update(loaded(jobs()));
    a.queue.shown_mut().select_id(&id("237"));
    a.update(crate::app::tests::key(' '));
    a.queue.shown_mut().select_id(&id("242"));
    a.update(crate::app::tests::key(' '));
    let cmds = a.update(crate::app::tests::key('!'));
    let Some(Cmd::Grep(req)) = cmds.first() else {
        panic!("expected a search, got {cmds:?}");
    };
    assert!(req.first_error);
    assert_eq!(req.syntax, Syntax::RegexNoCase);
    assert_eq!(req.what, "2 marked jobs");
    assert_eq!(req.ids.len(), 2);
    a.update(code(KeyCode::Esc));
    assert_eq!(a.top_overlay(), None);
    let cmds = a.run_command("errors");
    assert!(matches!(cmds.first(), Some(Cmd::Grep(_))));
}

/// A job slurmctld has forgotten: the dashboard's detail comes from sacct without paths, so
/// the log pane would guess Slurm's default name; the paths the search found are used.
#[test]
fn a_forgotten_jobs_log_is_tailed_where_the_search_found_it() {
    let mut a = app();
    a.update(loaded(jobs()));
    assert!(a.queue.shown_mut().select_id(&id("236_1")));
    let _ = a.run_command("errors");
    let mut r = report(true);
    r.files = vec![
        file("236_1", Stream::Stdout, None),
        file("236_1", Stream::Stderr, None),
    ];
    r.found.hits = vec![hit(1, 2, "RuntimeError: boom")];
    a.update(Msg::Cluster(0, Box::new(Msg::Grep(Box::new(r)))));
    a.update(code(KeyCode::Enter));
    let detail = crate::slurm::model::JobDetail {
        id: Some(id("236_1")),
        array_job_id: Some(236),
        array_task: Some("1".into()),
        work_dir: Some("/w".into()),
        user: Some("sduser".into()),
        ..Default::default()
    };
    let cmds = a.update(Msg::Job(JobMsg::Detail {
        id: id("236_1"),
        result: Box::new(Ok((detail, crate::payload::DetailSource::Sacct))),
    }));
    let tails: Vec<_> = cmds
        .iter()
        .filter_map(|c| match c {
            Cmd::Tail(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tails,
        vec![vec![
            (id("236_1"), Stream::Stdout, "/w/236_1.stdout".to_string()),
            (id("236_1"), Stream::Stderr, "/w/236_1.stderr".to_string()),
        ]],
        "not Slurm's default slurm-236_1.out"
    );
    assert!(!a.logs.guessed);
}
