use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::payload::Ran;

fn at(s: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(12, 0, s % 60))
        .unwrap()
}

fn rec(why: Why, words: &[&str]) -> CommandRecord {
    let argv: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let mut r = CommandRecord::new(at(0), why, &argv, 0);
    r.took = Duration::from_millis(100);
    r.bytes_in = 10;
    r
}

fn tail_read(path: &str, bytes: u64) -> CommandRecord {
    let mut r = rec(Why::Tail, &["sh", "-c", "read", path]);
    r.key = Some(format!("read {path}"));
    r.bytes_in = bytes;
    r
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

#[test]
fn the_ring_keeps_the_newest_500() {
    let mut log = CmdLog::default();
    for i in 0..MAX_ENTRIES + 37 {
        log.push(0, rec(Why::Refresh, &["squeue", &i.to_string()]));
    }
    assert_eq!(log.len(), MAX_ENTRIES);
    assert_eq!(log.total, (MAX_ENTRIES + 37) as u64);
    let newest = log.shown().next().unwrap();
    assert_eq!(newest.rec.argv[1], (MAX_ENTRIES + 36).to_string());
    let oldest = log.shown().last().unwrap();
    assert_eq!(oldest.rec.argv[1], "37");
}

#[test]
fn the_ring_is_capped_in_memory_too() {
    let mut log = CmdLog::default();
    let big = "x".repeat(crate::payload::RECORD_ARGV_MAX);
    for _ in 0..MAX_ENTRIES {
        log.push(0, rec(Why::Launch, &["sbatch", &big]));
    }
    assert!(log.weight() <= MAX_WEIGHT, "{}", log.weight());
    assert!(log.len() < MAX_ENTRIES, "{}", log.len());
    assert!(log.len() > 100, "{}", log.len());
}

#[test]
fn reads_of_the_same_log_fold_into_one_entry_with_a_count() {
    let mut log = CmdLog::default();
    log.push(0, tail_read("/home/me/a.out", 100));
    log.push(0, rec(Why::Refresh, &["squeue"]));
    log.push(0, tail_read("/home/me/a.out", 50));
    log.push(0, tail_read("/home/me/b.out", 7));
    log.push(0, tail_read("/home/me/a.out", 1));
    let rows: Vec<&CommandRecord> = log.shown().map(|e| &e.rec).collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].key.as_deref(), Some("read /home/me/a.out"));
    assert_eq!(rows[0].count, 3);
    assert_eq!(rows[0].bytes_in, 151);
    assert_eq!(rows[0].took, Duration::from_millis(300));
    assert_eq!(rows[1].count, 1);
    assert_eq!(rows[2].argv, vec!["squeue".to_string()]);
    // Another cluster's read of the same path is its own entry.
    log.push(1, tail_read("/home/me/a.out", 1));
    assert_eq!(log.len(), 4);
}

#[test]
fn the_selection_stays_on_its_entry_as_new_ones_arrive() {
    let mut log = CmdLog::default();
    log.push(0, rec(Why::Refresh, &["squeue", "1"]));
    log.push(0, rec(Why::Key, &["scancel", "2"]));
    log.open();
    let _ = log.on_key(&key('j'), 10);
    assert_eq!(log.selected().unwrap().rec.argv[1], "1");
    log.push(0, rec(Why::Refresh, &["squeue", "3"]));
    assert_eq!(log.selected().unwrap().rec.argv[1], "1");
    assert_eq!(log.selected_row(), 2);
    // At the top the selection follows the newest.
    let _ = log.on_key(&key('g'), 10);
    log.push(0, rec(Why::Refresh, &["squeue", "4"]));
    assert_eq!(log.selected().unwrap().rec.argv[1], "4");
}

#[test]
fn f_cycles_the_kinds_and_filters_the_rows() {
    let mut log = CmdLog::default();
    log.push(0, rec(Why::Refresh, &["squeue"]));
    log.push(0, rec(Why::Key, &["scancel", "7"]));
    log.open();
    let out = log.on_key(&key('f'), 10);
    assert_eq!(log.filter, Some(Why::Refresh));
    assert_eq!(out.note.as_deref(), Some("command log: refresh only"));
    assert_eq!(log.shown().count(), 1);
    let _ = log.on_key(&key('f'), 10);
    assert_eq!(log.filter, Some(Why::Key));
    assert_eq!(log.selected().unwrap().rec.argv[0], "scancel");
    for _ in 0..Why::ALL.len() - 1 {
        let _ = log.on_key(&key('f'), 10);
    }
    assert_eq!(log.filter, None);
    assert_eq!(log.shown().count(), 2);
}

#[test]
fn y_copies_the_selected_argv_quoted_for_a_shell() {
    let mut log = CmdLog::default();
    log.push(
        0,
        rec(Why::Key, &["scontrol", "update", "JobId=5", "Comment=a b"]),
    );
    log.open();
    let out = log.on_key(&key('y'), 10);
    let [Cmd::Clipboard(line)] = &out.cmds[..] else {
        panic!("{:?}", out.cmds)
    };
    // The line a shell splits back into the very argv.
    assert_eq!(
        shlex::split(line).unwrap(),
        ["scontrol", "update", "JobId=5", "Comment=a b"]
    );
    assert!(out.note.unwrap().contains("OSC 52"));
    // A cut argv is not copied.
    let mut big = rec(Why::Launch, &["sbatch", &"x".repeat(20_000)]);
    big.ran = Ran::Exit(Some(0));
    log.push(0, big);
    let _ = log.on_key(&key('g'), 10);
    let out = log.on_key(&key('y'), 10);
    assert!(out.cmds.is_empty());
    assert!(out.note.unwrap().contains("too long"));
}

#[test]
fn esc_closes_the_full_entry_first_then_the_log() {
    let mut log = CmdLog::default();
    log.push(0, rec(Why::Refresh, &["squeue"]));
    log.open();
    let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
    let _ = log.on_key(&KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), 10);
    assert!(log.expanded);
    let _ = log.on_key(&esc, 10);
    assert!(!log.expanded && log.open);
    let _ = log.on_key(&esc, 10);
    assert!(!log.open);
}

/// Through the App: a worker's record lands in the log, `@` opens it over the panes, `y`
/// asks for the clipboard, esc closes it; `:log` opens it too.
#[test]
fn the_app_keeps_the_workers_records_and_at_opens_the_log() {
    use crate::action::Msg;
    let mut a = crate::app::App::fixture(at(0));
    a.update(Msg::Cluster(
        0,
        Box::new(Msg::Ran(Box::new(rec(Why::Key, &["scancel", "--", "42"])))),
    ));
    assert_eq!(a.overlays.cmdlog.len(), 1);
    a.update(Msg::Key(key('@')));
    assert_eq!(a.top_overlay(), Some(crate::app::Overlay::CmdLog));
    let cmds = a.update(Msg::Key(key('y')));
    assert_eq!(cmds, vec![Cmd::Clipboard("scancel -- 42".into())]);
    a.update(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    assert_eq!(a.top_overlay(), None);
    a.run_command("log");
    assert!(a.overlays.cmdlog.open);
}
