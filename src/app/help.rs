//! `?`: the key list. Its lines are made when it opens (the focused pane's bindings, your
//! commands, the `:` commands and the notes; over the files view, that view's keys): nothing
//! they say changes while it is open, since every key but the moving ones closes it. Drawing
//! reads them, and the scroll is the overlay's own.

use crossterm::event::KeyEvent;
use ratatui::text::{Line, Span};

use super::component::{Keys, Out, Overlaid, OverlayKeys};
use super::custom::CustomCommands;
use super::live::LowUseRules;
use crate::keymap::{Action, Keymap, Pane};
use crate::theme::Theme;

/// The help overlay: open while it has lines.
#[derive(Debug, Default)]
pub struct HelpState {
    pub lines: Vec<Line<'static>>,
    /// The first line shown, when the lines are taller than the terminal.
    pub scroll: u16,
}

impl HelpState {
    pub fn is_open(&self) -> bool {
        !self.lines.is_empty()
    }

    /// How far it scrolls on a terminal `rows` high: its lines past a full-height box.
    pub fn max_scroll(&self, rows: u16) -> u16 {
        let shown = usize::from(rows.saturating_sub(2));
        u16::try_from(self.lines.len().saturating_sub(shown)).unwrap_or(u16::MAX)
    }
}

impl Overlaid for HelpState {
    fn is_open(&self) -> bool {
        HelpState::is_open(self)
    }

    fn close(&mut self) {
        *self = HelpState::default();
    }
}

/// The moving keys scroll it; any other key closes it.
impl OverlayKeys for HelpState {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &Keys) -> Out {
        let rows = cx.view.size.1;
        let page = rows.saturating_sub(3).max(1);
        let s = self.scroll;
        self.scroll = match cx.keymap.action(cx.focus, k) {
            Some(Action::Down) => s.saturating_add(1),
            Some(Action::Up) => s.saturating_sub(1),
            Some(Action::PageDown) => s.saturating_add(page),
            Some(Action::PageUp) => s.saturating_sub(page),
            Some(Action::Bottom) => u16::MAX,
            Some(Action::Top) => 0,
            _ => return Out::close(),
        }
        .min(self.max_scroll(rows));
        Out::none()
    }
}

/// What the key list is made from.
pub struct Parts<'a> {
    pub theme: &'a Theme,
    pub focus: Pane,
    pub keymap: &'a Keymap,
    pub read_only: bool,
    pub custom: &'a CustomCommands,
    /// The files view is open: its keys, and where it fetches to.
    pub files: Option<&'a std::path::Path>,
    pub low_use: LowUseRules,
    /// The `:` commands and what each does.
    pub commands: &'a [(&'a str, &'a str)],
}

/// The title of the `:` commands' part (the wide layout puts it in a column of its own).
pub const COMMANDS_TITLE: &str = "commands after :";

/// The key list as it opens.
pub fn opened(p: &Parts) -> HelpState {
    let lines = match p.files {
        Some(dir) => files_lines(p, dir),
        None => lines(p),
    };
    HelpState { lines, scroll: 0 }
}

fn lines(p: &Parts) -> Vec<Line<'static>> {
    let t = p.theme;
    let mut lines = vec![Line::from(Span::styled(
        format!("keys in the {} pane", p.focus.title()),
        t.title(),
    ))];
    if p.read_only {
        lines.push(Line::from(Span::styled(
            "read-only: cancel, hold, release, requeue, top, edit are disabled",
            t.warn(),
        )));
        lines.push(dim(
            t,
            "  (a shell, tunnels and fetching files change no job: allowed)",
        ));
    }
    for (action, keys) in p.keymap.bindings(p.focus) {
        let disabled = p.read_only && action.changes_jobs();
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<18}", keys.join(", ")), t.key()),
            if disabled {
                Span::styled(format!("✗ {}", action.describe()), t.dim())
            } else {
                Span::raw(action.describe())
            },
        ]));
    }
    lines.push(key_line(
        t,
        "in the form (n)",
        "o from a script · w save as template · ←→ pick one".into(),
    ));
    lines.push(key_line(
        t,
        "a session's end",
        format!(
            "asks: {} 30 more minutes · {} end it (y confirms)",
            super::session::EXTEND_KEY,
            super::session::END_KEY
        ),
    ));
    if !p.custom.commands.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "your commands ([[commands]], :commands)",
            t.title(),
        )));
        for c in &p.custom.commands {
            lines.push(key_line(
                t,
                &c.key.to_string(),
                format!(
                    "{} ({}, {} jobs)",
                    c.def.name,
                    c.def.place.word(),
                    c.states_word()
                ),
            ));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(COMMANDS_TITLE, t.title())));
    for (cmd, what) in p.commands {
        lines.push(Line::from(vec![
            Span::styled(format!("  :{cmd:<17}"), t.key()),
            Span::raw(what.to_string()),
        ]));
    }
    if p.focus == Pane::Queue {
        lines.push(Line::from(""));
        lines.push(dim(t, idle_mark_help(p.low_use.minutes)));
        lines.push(dim(t, low_use_help(&p.low_use)));
        lines.push(dim(
            t,
            "PROGRESS: read from the logs opened (tqdm, step/epoch N/M, N%) · ! limit first",
        ));
        lines.push(dim(
            t,
            "PROGRESS once a job ended: done (completed) or N% ended (where it stopped)",
        ));
    }
    lines.push(Line::from(""));
    lines.push(dim(
        t,
        "mouse: click selects, wheel scrolls · esc closes views · keys but ↑↓ close this help",
    ));
    lines
}

/// Over the files view: its keys.
fn files_lines(p: &Parts, download_dir: &std::path::Path) -> Vec<Line<'static>> {
    let t = p.theme;
    let mut lines = vec![Line::from(Span::styled(
        "keys in the files view",
        t.title(),
    ))];
    for (k, what) in super::files::KEYS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<28}"), t.key()),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(dim(
        t,
        format!(
            "fetched files go to {}/JOB/ (config: [files] download_dir); a partial file resumes, every file is checked by sha256",
            download_dir.display()
        ),
    ));
    if p.read_only {
        lines.push(dim(
            t,
            "read-only session: fetching only reads the cluster, so it is allowed",
        ));
    }
    lines.push(dim(t, "keys but ↑↓ close this help"));
    lines
}

fn dim(t: &Theme, text: impl Into<String>) -> Line<'static> {
    Line::from(Span::styled(text.into(), t.dim()))
}

fn key_line(t: &Theme, keys: &str, what: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("  {keys:<18}"), t.key()),
        Span::raw(what),
    ])
}

/// The words on the queue's `u` mark.
fn low_use_help(r: &LowUseRules) -> String {
    let mut tests = Vec::new();
    if r.cpu_percent > 0 {
        tests.push(format!("cores busy under {} % of its cores", r.cpu_percent));
    }
    if r.mem_percent > 0 {
        tests.push(format!(
            "peak memory under {} % of its request",
            r.mem_percent
        ));
    }
    if r.minutes == 0 || tests.is_empty() {
        return "u (much less used than asked) is off: [ui] low_cpu_percent, low_mem_percent, idle_gpu_minutes".into();
    }
    format!(
        "u {} in the live samples of the last {} min ([ui] low_cpu_percent, low_mem_percent); z wins",
        tests.join(" or "),
        r.minutes
    )
}

/// The words on the queue's left-border marks.
fn idle_mark_help(minutes: u64) -> String {
    match minutes {
        0 => "left border: * marked · z (GPUs idle) is off: [ui] idle_gpu_minutes = 0".into(),
        m => format!(
            "left border: * marked · z every GPU at 0 % in the live samples of the last {m} min ([ui] idle_gpu_minutes)"
        ),
    }
}
