//! The command log (`@`, `:log`): every remote command the dashboard ran, newest first, kept
//! in a bounded ring ([`MAX_ENTRIES`] entries and about [`MAX_WEIGHT`] bytes, the oldest let
//! go first). Records arrive as `Msg::Ran` from the workers (`worker/recorder.rs`), their
//! secrets already taken out. Reads from an offset of the same followed log fold into one
//! entry with a count, so a log read every few seconds does not push everything else out.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};

use super::component::Out;
use crate::action::Cmd;
use crate::payload::{CommandRecord, Why};

/// The most entries kept.
pub const MAX_ENTRIES: usize = 500;
/// About the most memory the entries hold (argv, stderr heads), bytes.
pub const MAX_WEIGHT: usize = 2 << 20;

/// One entry: the record and a number that stays with it (the selection follows it).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub rec: CommandRecord,
    /// Its argv on one line ([`one_line`]), worked out when it came.
    pub line: String,
}

/// The argv on one line: quoted for a shell, line breaks shown as ⏎, control bytes as ?.
/// A long `sh -c SCRIPT [NAME ARGS…]` (a refresh's batch, a log read, a live sample, the
/// cancel that ends guards first) shows the Slurm commands its script runs, `sh -c ‹squeue;
/// sacct› ARGS`, or `‹script, N lines›` when it runs none, so that the arguments stay in
/// view; enter shows the script whole.
pub fn one_line(r: &CommandRecord) -> String {
    let a = &r.argv;
    let line = match a.get(2) {
        Some(script)
            if matches!(a[0].as_str(), "sh" | "bash") && a[1] == "-c" && script.len() > 40 =>
        {
            let mut slurm: Vec<String> = Vec::new();
            crate::slurm::command::rpc_parts(&a[..3], &mut |name, _| {
                if !slurm.contains(&name) {
                    slurm.push(name);
                }
            });
            let inner = if slurm.is_empty() {
                format!("script, {} lines", script.lines().count())
            } else {
                slurm.join("; ")
            };
            let rest = a.get(3..).unwrap_or(&[]);
            let rest =
                shlex::try_join(rest.iter().map(String::as_str)).unwrap_or_else(|_| rest.join(" "));
            format!("{} -c ‹{inner}› {rest}", a[0])
                .trim_end()
                .to_string()
        }
        _ => r.shell_line(),
    };
    line.chars()
        .map(|c| match c {
            '\n' => '⏎',
            c if c.is_control() => '?',
            c => c,
        })
        .collect()
}

/// The log and its view.
#[derive(Debug, Clone, Default)]
pub struct CmdLog {
    /// Newest first.
    entries: VecDeque<Entry>,
    weight: usize,
    next_seq: u64,
    /// Records ever received (entries folded or let go included).
    pub total: u64,
    pub open: bool,
    /// The entry selected, by its number; `None`: the newest shown.
    selected: Option<u64>,
    /// Only this kind shown; `None`: all.
    pub filter: Option<Why>,
    /// The selected entry shown whole (enter).
    pub expanded: bool,
}

impl CmdLog {
    /// Takes in a finished command of cluster `cluster`.
    pub fn push(&mut self, cluster: u16, mut rec: CommandRecord) {
        rec.cluster = cluster;
        self.total += 1;
        let same = rec.key.as_ref().and_then(|key| {
            self.entries.iter().position(|e| {
                e.rec.key.as_ref() == Some(key) && e.rec.cluster == cluster && e.rec.why == rec.why
            })
        });
        let seq = match same.and_then(|i| self.entries.remove(i)) {
            Some(old) => {
                self.weight = self.weight.saturating_sub(old.rec.weight());
                let o = old.rec;
                rec.count = rec.count.saturating_add(o.count);
                rec.bytes_in += o.bytes_in;
                rec.bytes_out += o.bytes_out;
                rec.rpcs += o.rpcs;
                rec.took += o.took;
                if rec.stderr_head.is_empty() {
                    rec.stderr_head = o.stderr_head;
                }
                old.seq
            }
            None => {
                self.next_seq += 1;
                self.next_seq
            }
        };
        self.weight += rec.weight();
        let line = one_line(&rec);
        self.entries.push_front(Entry { seq, rec, line });
        while self.entries.len() > MAX_ENTRIES
            || (self.weight > MAX_WEIGHT && self.entries.len() > 1)
        {
            if let Some(e) = self.entries.pop_back() {
                self.weight = self.weight.saturating_sub(e.rec.weight());
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The memory the entries hold, roughly.
    pub fn weight(&self) -> usize {
        self.weight
    }

    /// The entries the filter lets through, newest first.
    pub fn shown(&self) -> impl Iterator<Item = &Entry> {
        let f = self.filter;
        self.entries
            .iter()
            .filter(move |e| f.is_none_or(|w| e.rec.why == w))
    }

    /// The row of the selected entry among those shown.
    pub fn selected_row(&self) -> usize {
        self.selected
            .and_then(|s| self.shown().position(|e| e.seq == s))
            .unwrap_or(0)
    }

    pub fn selected(&self) -> Option<&Entry> {
        self.shown().nth(self.selected_row())
    }

    pub fn open(&mut self) {
        self.open = true;
        self.selected = None;
        self.expanded = false;
    }

    fn select_row(&mut self, row: usize) {
        let n = self.shown().count();
        let row = row.min(n.saturating_sub(1));
        // The top row follows the newest entry.
        self.selected = if row == 0 {
            None
        } else {
            self.shown().nth(row).map(|e| e.seq)
        };
    }

    /// A key while the log is open; `page`: rows on a page.
    pub fn on_key(&mut self, k: &KeyEvent, page: usize) -> Out {
        let row = self.selected_row();
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') if self.expanded => self.expanded = false,
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('@') => self.open = false,
            KeyCode::Down | KeyCode::Char('j') => self.select_row(row + 1),
            KeyCode::Up | KeyCode::Char('k') => self.select_row(row.saturating_sub(1)),
            KeyCode::PageDown => self.select_row(row + page),
            KeyCode::PageUp => self.select_row(row.saturating_sub(page)),
            KeyCode::Char('g') | KeyCode::Home => self.select_row(0),
            KeyCode::Char('G') | KeyCode::End => self.select_row(usize::MAX),
            KeyCode::Enter => self.expanded = !self.expanded,
            KeyCode::Char('f') => {
                self.filter = next_filter(self.filter);
                self.selected = None;
                return Out::note(format!("command log: {}", filter_word(self.filter)));
            }
            KeyCode::Char('y') => return self.copy(),
            _ => {}
        }
        Out::none()
    }

    /// `y`: the selected argv as one line for a shell, to the clipboard.
    fn copy(&self) -> Out {
        let Some(e) = self.selected() else {
            return Out::note("nothing to copy: no command recorded yet");
        };
        if e.rec.argv_cut {
            return Out::note("not copied: this command's argv was too long to keep whole");
        }
        let line = e.rec.shell_line();
        if line
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Out::note("not copied: the command holds control characters");
        }
        let shown: String = line.chars().take(60).collect();
        let more = if shown.len() < line.len() { "…" } else { "" };
        Out::note(format!(
            "copied `{}{more}` to the clipboard (through the terminal: OSC 52)",
            shown.replace('\n', "⏎")
        ))
        .with_cmd(Cmd::Clipboard(line))
    }
}

impl super::component::Overlaid for CmdLog {
    fn is_open(&self) -> bool {
        self.open
    }

    fn close(&mut self) {
        self.open = false;
    }
}

impl super::component::OverlayKeys for CmdLog {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        // The full entry replaces the list: a page is the screen less the frame, the
        // header and the status bar.
        self.on_key(k, cx.page(5))
    }
}

/// The filter after `f`: all, then each kind in turn, then all again.
pub fn next_filter(f: Option<Why>) -> Option<Why> {
    match f {
        None => Some(Why::ALL[0]),
        Some(w) => {
            let i = Why::ALL.iter().position(|x| *x == w).unwrap_or(0);
            Why::ALL.get(i + 1).copied()
        }
    }
}

/// `all commands`, `refresh only`.
pub fn filter_word(f: Option<Why>) -> String {
    match f {
        None => "all commands".into(),
        Some(w) => format!("{} only", w.word()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "cmdlog_tests.rs"]
mod tests;
