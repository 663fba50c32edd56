//! The files view's state machine, driven through App messages: no terminal, no cluster.

use std::path::PathBuf;

use crossterm::event::KeyCode;

use super::super::tests::{app, code, id, jobs, key, loaded};
use super::super::App;
use super::*;
use crate::action::Msg;
use crate::jobfiles::list::{Kind, Listing};

const WORK: &str = "/lustre/fsw/sduser/capture-fixtures";

fn entry(name: &str, kind: Kind, size: u64) -> Entry {
    Entry {
        name: name.as_bytes().to_vec(),
        kind,
        size,
        mtime: 1_700_000_000,
    }
}

fn listing(entries: Vec<Entry>) -> Listing {
    let mut l = Listing {
        total: entries.len() as u64,
        entries,
    };
    l.sort();
    l
}

/// An App with job 237 selected, launched by slurmdash into /r/7.
fn launched() -> App {
    let mut a = app();
    a.update(loaded(jobs()));
    a.queue.shown_mut().select_id(&id("237"));
    a.clusters[0].chains.insert(
        237,
        crate::retry::Chain {
            local_id: "7".into(),
            job_dir: "/r/7".into(),
            name: "train".into(),
            attempt: 1,
            attempts: 1,
            max_attempts: 11,
            previous: Vec::new(),
            guard: None,
            sweep: Vec::new(),
            code: None,
            secrets: Vec::new(),
            spec_sha256: None,
        },
    );
    a.overlays.files.download_dir = PathBuf::from("/dl");
    a
}

fn files(cmds: &[Cmd]) -> Vec<FilesCmd> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::Files(f) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

fn listed(a: &mut App, seq: u64, entries: Vec<Entry>) {
    a.update(Msg::Files(FilesMsg::Listed {
        seq,
        result: Ok(listing(entries)),
    }));
}

fn job_dir() -> Vec<Entry> {
    vec![
        entry("specs", Kind::Dir, 4096),
        entry("slurm-logs", Kind::Dir, 4096),
        entry("request.json", Kind::File, 30),
        entry("model.ckpt", Kind::File, 300 << 20),
    ]
}

#[test]
fn y_shows_the_job_dir_and_work_dir_and_walks_without_climbing_above_them() {
    let mut a = launched();
    assert!(a.update(key('y')).is_empty());
    let v = a.overlays.files.view.as_ref().expect("open");
    assert_eq!(v.roots.len(), 2);
    assert_eq!(v.roots[0].path, b"/r/7");
    assert_eq!(v.roots[1].path, WORK.as_bytes());
    // Into the job dir.
    let cmds = files(&a.update(code(KeyCode::Enter)));
    assert_eq!(
        cmds,
        vec![FilesCmd::List {
            job: id("237"),
            dir: b"/r/7".to_vec(),
            seq: 1
        }]
    );
    listed(&mut a, 1, job_dir());
    let v = a.overlays.files.view.as_ref().expect("open");
    assert_eq!(v.rows(), 4);
    assert_eq!(
        v.selected_entry().map(Entry::display).as_deref(),
        Some("slurm-logs")
    );
    // Into slurm-logs, then back: the directory left is selected again.
    let cmds = files(&a.update(code(KeyCode::Enter)));
    assert!(matches!(&cmds[..], [FilesCmd::List { dir, seq: 2, .. }] if dir == b"/r/7/slurm-logs"));
    // An answer that came too late for a directory no longer shown is dropped.
    listed(&mut a, 1, vec![entry("stale", Kind::File, 1)]);
    assert!(a
        .overlays
        .files
        .view
        .as_ref()
        .expect("open")
        .listing
        .is_none());
    listed(&mut a, 2, vec![entry("train-237", Kind::Dir, 4096)]);
    let cmds = files(&a.update(code(KeyCode::Backspace)));
    assert!(matches!(&cmds[..], [FilesCmd::List { dir, seq: 3, .. }] if dir == b"/r/7"));
    listed(&mut a, 3, job_dir());
    let v = a.overlays.files.view.as_ref().expect("open");
    assert_eq!(
        v.selected_entry().map(Entry::display).as_deref(),
        Some("slurm-logs")
    );
    // Up from the root shows the roots; up again goes nowhere.
    assert!(a.update(key('h')).is_empty());
    assert!(a.overlays.files.view.as_ref().expect("open").root.is_none());
    assert!(a.update(code(KeyCode::Backspace)).is_empty());
    assert!(a.overlays.files.view.as_ref().expect("open").root.is_none());
    // Down to the work dir.
    a.update(key('j'));
    let cmds = files(&a.update(code(KeyCode::Enter)));
    assert!(matches!(&cmds[..], [FilesCmd::List { dir, .. }] if dir == WORK.as_bytes()));
    // esc closes the view; keys reach the queue again.
    a.update(code(KeyCode::Esc));
    assert!(a.overlays.files.view.is_none());
    assert!(a.run_command("files").is_empty());
    assert!(a.overlays.files.view.is_some(), ":files opens it too");
}

#[test]
fn a_job_with_one_directory_opens_in_it() {
    let mut a = app();
    a.update(loaded(jobs()));
    a.queue.shown_mut().select_id(&id("248"));
    let cmds = files(&a.update(key('y')));
    assert!(matches!(&cmds[..], [FilesCmd::List { dir, .. }] if dir == WORK.as_bytes()));
}

#[test]
fn preview_shows_json_indented_and_esc_goes_back_to_the_list() {
    let mut a = launched();
    a.update(key('y'));
    a.update(code(KeyCode::Enter));
    listed(&mut a, 1, job_dir());
    a.update(key('G')); // request.json: files sorted by name after the directories
    let cmds = files(&a.update(code(KeyCode::Enter)));
    let [FilesCmd::Preview { path, seq, .. }] = &cmds[..] else {
        panic!("{cmds:?}");
    };
    assert_eq!(path, b"/r/7/request.json");
    let body = br#"{"gpus":4,"name":"train"}"#.to_vec();
    a.update(Msg::Files(FilesMsg::Previewed {
        seq: *seq,
        result: Ok((body.len() as u64, body)),
    }));
    let p = a
        .overlays
        .files
        .view
        .as_ref()
        .and_then(|v| v.preview.as_ref())
        .expect("preview");
    let lines: Vec<String> = (0..p.pane.buffer().end_seq())
        .filter_map(|s| p.pane.buffer().get(s).map(|l| l.text().to_string()))
        .collect();
    assert_eq!(lines, ["{", "  \"gpus\": 4,", "  \"name\": \"train\"", "}"]);
    a.update(code(KeyCode::Esc));
    let v = a.overlays.files.view.as_ref().expect("still open");
    assert!(v.preview.is_none());
}

#[test]
fn binary_files_are_not_shown_as_text() {
    let mut a = launched();
    a.update(key('y'));
    a.update(code(KeyCode::Enter));
    listed(&mut a, 1, vec![entry("blob", Kind::File, 5)]);
    let cmds = files(&a.update(code(KeyCode::Enter)));
    let [FilesCmd::Preview { seq, .. }] = &cmds[..] else {
        panic!("{cmds:?}");
    };
    a.update(Msg::Files(FilesMsg::Previewed {
        seq: *seq,
        result: Ok((5, vec![0, 1, 2, 3, 4])),
    }));
    let p = a
        .overlays
        .files
        .view
        .as_ref()
        .and_then(|v| v.preview.as_ref())
        .expect("preview");
    let (head, detail) = p.pane.message().expect("a message instead of lines");
    assert!(detail.contains("binary file"), "{head} {detail}");
}

#[test]
fn fetch_progress_esc_stops_and_large_copies_ask_first() {
    let mut a = launched();
    a.clusters[0].read_only = true; // fetching changes no job: allowed
    a.update(key('y'));
    a.update(code(KeyCode::Enter));
    listed(&mut a, 1, job_dir());
    a.update(key('G'));
    let cmds = files(&a.update(key('f')));
    assert_eq!(
        cmds,
        vec![FilesCmd::Fetch {
            job: id("237"),
            src: b"/r/7/request.json".to_vec(),
            dir: false,
            dest: PathBuf::from("/dl/237/request.json"),
        }]
    );
    a.update(Msg::Files(FilesMsg::Progress {
        done: 12,
        total: 0,
        file: "/r/7/request.json".into(),
    }));
    let c = a
        .overlays
        .files
        .view
        .as_ref()
        .and_then(|v| v.copy.clone())
        .expect("copying");
    assert_eq!((c.done, c.total), (12, 30));
    // A second fetch waits for the first.
    assert!(files(&a.update(key('f'))).is_empty());
    // esc stops the copy, not the view.
    let cmds = files(&a.update(code(KeyCode::Esc)));
    assert_eq!(cmds, vec![FilesCmd::Stop { job: id("237") }]);
    let v = a.overlays.files.view.as_ref().expect("open");
    assert!(v.copy.is_none());
    assert!(v.status.as_deref().is_some_and(|s| s.contains("stopped")));

    // 300 MiB: asks, with the size; another key keeps it.
    a.update(key('k'));
    assert_eq!(
        a.overlays
            .files
            .view
            .as_ref()
            .and_then(|v| v.selected_entry())
            .map(Entry::display)
            .as_deref(),
        Some("model.ckpt")
    );
    assert!(files(&a.update(key('f'))).is_empty());
    let ask = a
        .overlays
        .files
        .view
        .as_ref()
        .and_then(|v| v.ask.clone())
        .expect("asks");
    assert_eq!(ask.bytes, 300 << 20);
    assert!(files(&a.update(key('n'))).is_empty());
    assert!(a
        .overlays
        .files
        .view
        .as_ref()
        .is_some_and(|v| v.ask.is_none() && v.copy.is_none()));
    a.update(key('f'));
    let cmds = files(&a.update(key('y')));
    assert!(matches!(&cmds[..], [FilesCmd::Fetch { src, .. }] if src == b"/r/7/model.ckpt"));
    let c = a
        .overlays
        .files
        .view
        .as_ref()
        .and_then(|v| v.copy.clone())
        .expect("copying");
    assert_eq!(c.total, 300 << 20, "the bar knows the size it asked about");
    a.update(Msg::Files(FilesMsg::Fetched {
        dest: PathBuf::from("/dl/237/model.ckpt"),
        result: Ok("300.0 MiB in 3.0 s (100.0 MiB/s), sha256 checked".into()),
    }));
    let v = a.overlays.files.view.as_ref().expect("open");
    assert!(v.copy.is_none());
    assert!(v
        .status
        .as_deref()
        .is_some_and(|s| s.contains("/dl/237/model.ckpt")));
}

#[test]
fn a_directory_is_sized_first_then_fetched() {
    let mut a = launched();
    a.update(key('y'));
    a.update(code(KeyCode::Enter));
    listed(&mut a, 1, job_dir());
    let cmds = files(&a.update(key('f'))); // specs/
    assert_eq!(
        cmds,
        vec![FilesCmd::Plan {
            job: id("237"),
            src: b"/r/7/slurm-logs".to_vec(),
            dest: PathBuf::from("/dl/237/slurm-logs"),
        }]
    );
    let cmds = files(&a.update(Msg::Files(FilesMsg::Planned {
        src: b"/r/7/slurm-logs".to_vec(),
        dest: PathBuf::from("/dl/237/slurm-logs"),
        result: Ok(2048),
    })));
    assert!(matches!(&cmds[..], [FilesCmd::Fetch { dir: true, .. }]));
    // A fetch that ends after the view closed is told on the status bar.
    a.update(key('q'));
    assert!(a.overlays.files.view.is_none());
    a.update(Msg::Files(FilesMsg::Fetched {
        dest: PathBuf::from("/dl/237/slurm-logs"),
        result: Err("tail failed".into()),
    }));
    assert!(a
        .note
        .as_deref()
        .is_some_and(|n| n.contains("fetch failed: tail failed")));
}

#[test]
fn no_job_or_no_directory_is_explained() {
    let mut a = app();
    assert!(a.update(key('y')).is_empty());
    assert!(a.overlays.files.view.is_none());
    assert!(a
        .note
        .as_deref()
        .is_some_and(|n| n.contains("no job selected")));
}

#[test]
fn a_click_while_the_files_view_is_open_does_not_reach_the_queue_under_it() {
    let mut a = launched();
    a.update(Msg::Resize(120, 40));
    a.update(key('y'));
    let before = a.queue.shown().selected_id().cloned();
    let areas = a.areas();
    for row in areas.queue.y + 2..areas.queue.y + areas.queue.height.saturating_sub(1) {
        let click = crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
            column: areas.queue.x + 2,
            row,
            modifiers: crossterm::event::KeyModifiers::NONE,
        };
        assert!(a.update(Msg::Mouse(click)).is_empty());
    }
    assert_eq!(a.queue.shown().selected_id().cloned(), before);
    assert!(a.overlays.files.view.is_some());
    // Closed, clicks on two rows select them.
    a.update(code(KeyCode::Esc));
    assert!(a.overlays.files.view.is_none());
    let click = |row: u16| {
        Msg::Mouse(crossterm::event::MouseEvent {
            kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
            column: areas.queue.x + 2,
            row,
            modifiers: crossterm::event::KeyModifiers::NONE,
        })
    };
    a.update(click(areas.queue.y + 2));
    let first = a.queue.shown().selected_id().cloned();
    a.update(click(areas.queue.y + 3));
    assert_ne!(a.queue.shown().selected_id().cloned(), first);
}

#[test]
fn help_and_quit_go_to_the_app_unless_a_large_copy_waits_for_its_answer() {
    use crossterm::event::{KeyEvent, KeyModifiers};
    let mut a = launched();
    a.update(key('y'));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let help = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE);
    assert_eq!(
        a.overlays.files.on_key(&view!(a, 0), help, 2).then,
        Some(crate::keymap::Action::Help)
    );
    assert_eq!(
        a.overlays.files.on_key(&view!(a, 0), ctrl_c, 2).then,
        Some(crate::keymap::Action::Quit)
    );
    // A large copy asks first: any key but y or enter answers no, ctrl-c included.
    a.overlays.files.view.as_mut().expect("open").ask = Some(Ask {
        src: b"/r/7/model.ckpt".to_vec(),
        dir: false,
        dest: PathBuf::from("/dl/237/model.ckpt"),
        bytes: 300 << 20,
    });
    let out = a.overlays.files.on_key(&view!(a, 0), ctrl_c, 2);
    assert!(
        out.cmds.is_empty() && out.note.is_none() && out.then.is_none(),
        "ctrl-c answered the question, got {out:?}"
    );
    let v = a.overlays.files.view.as_ref().expect("still open");
    assert_eq!(v.status.as_deref(), Some("not fetched"));
    assert!(v.ask.is_none());
}
