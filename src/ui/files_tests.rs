//! Snapshots of the files view: a listing with odd names and a cut count, a copy's progress
//! bar, a large copy's question, and a preview in the log viewer.

use std::path::PathBuf;
use std::time::Duration;

use chrono::NaiveDate;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::buffer::Buffer;

use super::*;
use crate::action::Msg;
use crate::jobfiles::list::Listing;
use crate::jobfiles::{FilesCmd, FilesMsg};
use crate::ui::queue::tests::text;

const SQUEUE: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");

fn now() -> chrono::NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .unwrap()
}

fn key(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

/// Seconds since the epoch of `now()` minus `ago` seconds, in local time.
fn mtime(ago: i64) -> i64 {
    use chrono::TimeZone;
    chrono::Local
        .from_local_datetime(&now())
        .single()
        .unwrap()
        .timestamp()
        - ago
}

fn app_in_dir() -> App {
    let mut a = App::fixture(now());
    a.size = (100, 16);
    let jobs = crate::slurm::parse::parse_squeue(SQUEUE).unwrap();
    a.update(Msg::queue(Ok(jobs), now(), Duration::from_millis(5)));
    a.queue.shown_mut().select_id(&"237".parse().unwrap());
    a.overlays.files.download_dir = PathBuf::from("/home/u/Downloads/slurmdash");
    let cmds = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('y'),
        KeyModifiers::NONE,
    )));
    let seq = cmds
        .iter()
        .find_map(|c| match c {
            crate::action::Cmd::Files(FilesCmd::List { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap();
    let e = |name: &[u8], kind, size, ago| Entry {
        name: name.to_vec(),
        kind,
        size,
        mtime: mtime(ago),
    };
    let mut l = Listing {
        entries: vec![
            e(b"slurm-logs", Kind::Dir, 4096, 3600),
            e(b"latest", Kind::Link { to_dir: true }, 9, 60),
            e(b"metrics.csv", Kind::File, 48_213, 30),
            e(b"two\nlines \xff.txt", Kind::File, 12, 7200),
            e(b"model.ckpt", Kind::File, 734 << 20, 86_400 * 2),
        ],
        total: 5_012,
    };
    l.sort();
    a.update(Msg::Files(FilesMsg::Listed { seq, result: Ok(l) }));
    a
}

fn render(a: &App) -> String {
    let mut buf = Buffer::empty(Rect::new(0, 0, a.size.0, a.size.1));
    FilesWidget {
        app: a,
        status_rows: 1,
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn files_view_listing_progress_and_question() {
    let mut a = app_in_dir();
    let listing = render(&a);
    a.update(key(KeyCode::Down));
    a.update(key(KeyCode::Down));
    a.update(key(KeyCode::Char('f'))); // metrics.csv
    a.update(Msg::Files(FilesMsg::Progress {
        done: 20_000,
        total: 0,
        file: String::new(),
    }));
    let copying = render(&a);
    a.update(key(KeyCode::Esc));
    a.update(key(KeyCode::Down)); // model.ckpt, 734 MiB
    a.update(key(KeyCode::Char('f')));
    let asking = render(&a);
    assert_snapshot!(format!("{listing}\n{copying}\n{asking}"));
}

#[test]
fn files_view_preview_of_a_csv_in_the_log_viewer() {
    let mut a = app_in_dir();
    a.update(key(KeyCode::Down));
    a.update(key(KeyCode::Down));
    let cmds = a.update(key(KeyCode::Enter));
    let seq = cmds
        .iter()
        .find_map(|c| match c {
            crate::action::Cmd::Files(FilesCmd::Preview { seq, .. }) => Some(*seq),
            _ => None,
        })
        .unwrap();
    let body = b"step,loss,acc\n1,2.31,0.10\n2,1.87,0.32\n3,1.12,0.61\n".to_vec();
    a.update(Msg::Files(FilesMsg::Previewed {
        seq,
        result: Ok((body.len() as u64, body)),
    }));
    assert_snapshot!(render(&a));
}
