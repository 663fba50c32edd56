//! Key bindings as data: `"ctrl-d" = "page_down"` per pane, parsed and validated.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::{Deserialize, Serialize};

/// What a key means. Names are the strings used in the config's `[keys.*]` tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    Help,
    Up,
    Down,
    Top,
    Bottom,
    PageUp,
    PageDown,
    NextPane,
    PrevPane,
    /// Enter: expands a collapsed array row, otherwise zooms the focused pane.
    Select,
    Zoom,
    Refresh,
    Filter,
    Command,
    Escape,
    SortNext,
    SortReverse,
    ShowStdout,
    ShowStderr,
    Follow,
    ToggleWrap,
    Search,
    SearchNext,
    SearchPrev,
    Cancel,
    CancelNow,
    Mark,
    MarkRange,
    MarkAll,
    Hold,
    Release,
    Requeue,
    /// `scontrol top`: first among the user's own pending jobs.
    Prioritize,
    Edit,
    /// Open the launch form.
    NewJob,
    /// A shell in the selected running job (on one of its nodes).
    Shell,
    /// A local port to what the selected running job serves.
    Forward,
    /// `:history`: a week further back.
    HistoryOlder,
    /// `:history`: a week less far back.
    HistoryNewer,
    /// Launch a finished job again with the values its use suggests.
    Relaunch,
    /// The selected job's files: walk, preview, fetch.
    Files,
    /// Copy the selected job's id (its directory from the detail pane, the log's path from
    /// the log pane) to the terminal's clipboard.
    Copy,
    /// Choose and order the queue's columns; saved in the config.
    Columns,
    /// Put a job submitted elsewhere under slurmdash's care (`slurmdash adopt`).
    Adopt,
    /// The command log: every remote command run, why, its exit and cost (also `:log`).
    CommandLog,
    /// Job top: the selected running job's processes on each node (also `:jobtop`).
    JobTop,
    /// Where the selected array, sweep or marked jobs first broke: a search of their logs
    /// (also `:errors`).
    FirstError,
}

impl Action {
    /// Actions that change jobs on the cluster: refused in a read-only session.
    pub fn changes_jobs(self) -> bool {
        matches!(
            self,
            Action::Cancel
                | Action::CancelNow
                | Action::Hold
                | Action::Release
                | Action::Requeue
                | Action::Prioritize
                | Action::Edit
                | Action::Adopt
        )
    }

    /// One line for the help overlay.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "show / hide this help",
            Action::Up => "move up",
            Action::Down => "move down",
            Action::Top => "go to the top",
            Action::Bottom => "go to the bottom (log: resume follow)",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::NextPane => "focus the next pane",
            Action::PrevPane => "focus the previous pane",
            Action::Select => "expand a collapsed array / zoom the pane",
            Action::Zoom => "zoom the focused pane",
            Action::Refresh => "refresh / reconnect now",
            Action::Filter => "filter jobs by id, name, state, partition",
            Action::Command => "command line (:cluster NAME, :q)",
            Action::Escape => "close; clear marks, then the filter",
            Action::SortNext => "sort by the next column",
            Action::SortReverse => "reverse the sort order",
            Action::ShowStdout => "show stdout",
            Action::ShowStderr => "show stderr",
            Action::Follow => "follow the end of the log",
            Action::ToggleWrap => "wrap long lines on/off",
            Action::Search => "search the log",
            Action::SearchNext => "next match",
            Action::SearchPrev => "previous match",
            Action::Cancel => "cancel the selected or marked jobs (asks first)",
            Action::CancelNow => "cancel at once, no question (see quick_cancel)",
            Action::Mark => "mark / unmark the row for a bulk action",
            Action::MarkRange => "mark every row from the last marked one to here",
            Action::MarkAll => "mark every row shown (esc clears marks)",
            Action::Hold => "hold pending jobs (asks first)",
            Action::Release => "release held jobs (asks first)",
            Action::Requeue => "requeue running or finished jobs (asks first)",
            Action::Prioritize => "first among your pending jobs (asks first)",
            Action::Edit => "edit a pending job (time, partition, QOS, name)",
            Action::NewJob => "launch a job (form: templates, preview, test-only)",
            Action::Shell => "a shell on the running job's node",
            Action::Forward => "tunnel a port the running job serves",
            Action::HistoryOlder => ":history: a week further back",
            Action::HistoryNewer => ":history: a week less far back",
            Action::Relaunch => "relaunch a finished job or an array's failed tasks",
            Action::Files => "the job's files: walk, preview, fetch (:files)",
            Action::Copy => "copy the job id (detail: its dir; log: its path)",
            Action::Columns => "choose and order the columns (saved in the config)",
            Action::Adopt => "adopt a job run elsewhere: guard it (asks first)",
            Action::CommandLog => "command log: what ran, why, RPCs (also :log)",
            Action::JobTop => "job top: processes per node, CPU, GPU (:jobtop)",
            Action::FirstError => "first error of the array/sweep/marks (:errors)",
        }
    }
}

/// The panes, which are also the key modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pane {
    Queue,
    Detail,
    Log,
}

impl Pane {
    pub const ALL: [Pane; 3] = [Pane::Queue, Pane::Detail, Pane::Log];
    pub fn title(self) -> &'static str {
        match self {
            Pane::Queue => "queue",
            Pane::Detail => "detail",
            Pane::Log => "log",
        }
    }
}

/// A key with its modifiers, normalised so that `G` and `shift-g` are the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    code: KeyCodeOrd,
    ctrl: bool,
    alt: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum KeyCodeOrd {
    Char(char),
    F(u8),
    Named(&'static str),
}

const NAMED: [(&str, KeyCode); 14] = [
    ("enter", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("backspace", KeyCode::Backspace),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pgup", KeyCode::PageUp),
    ("pgdn", KeyCode::PageDown),
    ("delete", KeyCode::Delete),
];

impl Key {
    pub fn from_event(ev: &KeyEvent) -> Option<Key> {
        let code = match ev.code {
            KeyCode::Char(c) if ev.modifiers.contains(KeyModifiers::CONTROL) => {
                KeyCodeOrd::Char(c.to_ascii_lowercase())
            }
            KeyCode::Char(c) => KeyCodeOrd::Char(c),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            other => KeyCodeOrd::Named(NAMED.iter().find(|(_, k)| *k == other)?.0),
        };
        Some(Key {
            code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        })
    }

    /// Parses `"ctrl-d"`, `"G"`, `"shift-tab"`, `"space"`, `"pgdn"`, `"f1"`, `"?"`.
    pub fn parse(s: &str) -> Result<Key, String> {
        let mut ctrl = false;
        let mut alt = false;
        let mut shift = false;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = lower.strip_prefix("ctrl-").filter(|r| !r.is_empty()) {
                ctrl = true;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower.strip_prefix("alt-").filter(|r| !r.is_empty()) {
                alt = true;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower.strip_prefix("shift-").filter(|r| !r.is_empty()) {
                shift = true;
                rest = &rest[rest.len() - r.len()..];
            } else {
                break;
            }
        }
        let lower = rest.to_ascii_lowercase();
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) if ctrl => KeyCodeOrd::Char(c.to_ascii_lowercase()),
            (Some(c), None) => KeyCodeOrd::Char(if shift { c.to_ascii_uppercase() } else { c }),
            _ if lower == "space" => KeyCodeOrd::Char(' '),
            _ if shift && lower == "tab" => KeyCodeOrd::Named("backtab"),
            _ => {
                if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    KeyCodeOrd::F(n)
                } else if let Some((name, _)) = NAMED.iter().find(|(n, _)| *n == lower) {
                    KeyCodeOrd::Named(name)
                } else {
                    return Err(format!(
                        "`{s}` is not a key (examples: \"j\", \"G\", \"ctrl-d\", \"enter\", \"pgdn\", \"space\", \"f1\")"
                    ));
                }
            }
        };
        Ok(Key { code, ctrl, alt })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("ctrl-")?;
        }
        if self.alt {
            f.write_str("alt-")?;
        }
        match self.code {
            KeyCodeOrd::Char(' ') => f.write_str("space"),
            KeyCodeOrd::Char(c) => write!(f, "{c}"),
            KeyCodeOrd::F(n) => write!(f, "f{n}"),
            KeyCodeOrd::Named(n) => f.write_str(n),
        }
    }
}

/// Bindings that apply in every pane, then per pane. A pane binding wins over a global one.
#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    global: BTreeMap<Key, Action>,
    panes: BTreeMap<Pane, BTreeMap<Key, Action>>,
}

/// The config's `[keys]` table: `[keys.global]`, `[keys.queue]`, `[keys.detail]`, `[keys.log]`.
pub type KeyConfig = BTreeMap<String, BTreeMap<String, Action>>;

const DEFAULT_GLOBAL: &[(&str, Action)] = &[
    ("q", Action::Quit),
    ("ctrl-c", Action::Quit),
    ("?", Action::Help),
    ("tab", Action::NextPane),
    ("backtab", Action::PrevPane),
    ("enter", Action::Select),
    ("z", Action::Zoom),
    ("r", Action::Refresh),
    (":", Action::Command),
    ("esc", Action::Escape),
    ("j", Action::Down),
    ("down", Action::Down),
    ("k", Action::Up),
    ("up", Action::Up),
    ("g", Action::Top),
    ("home", Action::Top),
    ("G", Action::Bottom),
    ("end", Action::Bottom),
    ("pgup", Action::PageUp),
    ("ctrl-u", Action::PageUp),
    ("pgdn", Action::PageDown),
    ("ctrl-d", Action::PageDown),
    ("o", Action::ShowStdout),
    ("e", Action::ShowStderr),
    ("d", Action::Cancel),
    ("D", Action::CancelNow),
    ("h", Action::Hold),
    ("u", Action::Release),
    ("R", Action::Requeue),
    ("T", Action::Prioritize),
    ("E", Action::Edit),
    ("n", Action::NewJob),
    ("x", Action::Shell),
    ("F", Action::Forward),
    ("L", Action::Relaunch),
    ("y", Action::Files),
    ("Y", Action::Copy),
    ("@", Action::CommandLog),
    ("t", Action::JobTop),
    ("!", Action::FirstError),
];

const DEFAULT_QUEUE: &[(&str, Action)] = &[
    ("[", Action::HistoryOlder),
    ("]", Action::HistoryNewer),
    ("/", Action::Filter),
    ("s", Action::SortNext),
    ("S", Action::SortReverse),
    ("space", Action::Mark),
    ("V", Action::MarkRange),
    ("ctrl-a", Action::MarkAll),
    ("c", Action::Columns),
    ("A", Action::Adopt),
];

const DEFAULT_LOG: &[(&str, Action)] = &[
    ("/", Action::Search),
    ("n", Action::SearchNext),
    ("N", Action::SearchPrev),
    ("f", Action::Follow),
    ("w", Action::ToggleWrap),
];

fn table(pairs: &[(&str, Action)]) -> BTreeMap<Key, Action> {
    pairs
        .iter()
        .filter_map(|(k, a)| Key::parse(k).ok().map(|k| (k, *a)))
        .collect()
}

impl Default for Keymap {
    fn default() -> Self {
        let mut panes = BTreeMap::new();
        panes.insert(Pane::Queue, table(DEFAULT_QUEUE));
        panes.insert(Pane::Detail, BTreeMap::new());
        panes.insert(Pane::Log, table(DEFAULT_LOG));
        Keymap {
            global: table(DEFAULT_GLOBAL),
            panes,
        }
    }
}

impl Keymap {
    /// The defaults with the user's `[keys.*]` tables applied on top. Errors name the key.
    pub fn with_overrides(cfg: &KeyConfig) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        for (section, binds) in cfg {
            let target = match section.as_str() {
                "global" => &mut map.global,
                "queue" => map.panes.entry(Pane::Queue).or_default(),
                "detail" => map.panes.entry(Pane::Detail).or_default(),
                "log" => map.panes.entry(Pane::Log).or_default(),
                other => {
                    return Err(format!(
                        "keys.{other}: unknown section (use global, queue, detail or log)"
                    ))
                }
            };
            for (k, a) in binds {
                let key = Key::parse(k).map_err(|e| format!("keys.{section}.\"{k}\": {e}"))?;
                target.insert(key, *a);
            }
        }
        Ok(map)
    }

    pub fn action(&self, pane: Pane, ev: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(ev)?;
        self.panes
            .get(&pane)
            .and_then(|m| m.get(&key))
            .or_else(|| self.global.get(&key))
            .copied()
    }

    /// What `key` does anywhere: in every pane (`"all panes"`) or in one (`"log pane"`).
    pub fn bound_anywhere(&self, key: &Key) -> Option<(String, Action)> {
        if let Some(a) = self.global.get(key) {
            return Some(("all panes".into(), *a));
        }
        self.panes
            .iter()
            .find_map(|(p, m)| m.get(key).map(|a| (format!("{} pane", p.title()), *a)))
    }

    /// Every binding that applies in `pane`, grouped by action, for the help overlay.
    /// The first key that does `action` in `pane` (for hints such as "E to edit").
    pub fn key_for(&self, action: Action, pane: Pane) -> Option<String> {
        self.bindings(pane)
            .into_iter()
            .find(|(a, _)| *a == action)
            .and_then(|(_, keys)| keys.into_iter().next())
    }

    pub fn bindings(&self, pane: Pane) -> Vec<(Action, Vec<String>)> {
        let mut merged: BTreeMap<Key, Action> = self.global.clone();
        if let Some(m) = self.panes.get(&pane) {
            merged.extend(m.iter().map(|(k, a)| (*k, *a)));
        }
        let mut by_action: BTreeMap<Action, Vec<String>> = BTreeMap::new();
        for (k, a) in merged {
            by_action.entry(a).or_default().push(k.to_string());
        }
        by_action.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn key_strings_parse_and_print_back() {
        for s in [
            "j", "G", "ctrl-d", "enter", "esc", "pgdn", "space", "f1", "?", "/", "backtab", "alt-x",
        ] {
            assert_eq!(Key::parse(s).expect(s).to_string(), s);
        }
        assert_eq!(Key::parse("shift-g").expect("shift-g").to_string(), "G");
        assert_eq!(
            Key::parse("shift-tab").expect("shift-tab").to_string(),
            "backtab"
        );
        assert_eq!(Key::parse("Ctrl-D").expect("Ctrl-D").to_string(), "ctrl-d");
        assert!(Key::parse("ctrl-").is_err());
        assert!(Key::parse("hyper-x").unwrap_err().contains("not a key"));
    }

    #[test]
    fn shifted_letters_from_the_terminal_match_their_binding() {
        let map = Keymap::default();
        let g = ev(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(map.action(Pane::Queue, &g), Some(Action::Bottom));
        let cd = ev(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(map.action(Pane::Log, &cd), Some(Action::PageDown));
    }

    #[test]
    fn pane_bindings_override_global_ones() {
        let map = Keymap::default();
        let slash = ev(KeyCode::Char('/'), KeyModifiers::NONE);
        assert_eq!(map.action(Pane::Queue, &slash), Some(Action::Filter));
        assert_eq!(map.action(Pane::Log, &slash), Some(Action::Search));
        assert_eq!(map.action(Pane::Detail, &slash), None);
    }

    #[test]
    fn config_overrides_rebind_and_errors_name_the_key() {
        let cfg: KeyConfig =
            toml::from_str("[global]\nx = \"quit\"\n[log]\n\"ctrl-f\" = \"page_down\"\n")
                .expect("toml");
        let map = Keymap::with_overrides(&cfg).expect("valid");
        let x = ev(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(map.action(Pane::Queue, &x), Some(Action::Quit));
        let cf = ev(KeyCode::Char('f'), KeyModifiers::CONTROL);
        assert_eq!(map.action(Pane::Log, &cf), Some(Action::PageDown));

        let bad: KeyConfig = toml::from_str("[log]\n\"hyper-q\" = \"quit\"\n").expect("toml");
        let err = Keymap::with_overrides(&bad).unwrap_err();
        assert!(err.contains("keys.log.\"hyper-q\""), "{err}");
        let bad: Result<KeyConfig, _> = toml::from_str("[log]\nq = \"explode\"\n");
        assert!(bad.unwrap_err().to_string().contains("unknown variant"));
    }

    #[test]
    fn help_lists_every_binding_of_the_pane() {
        let map = Keymap::default();
        let log = map.bindings(Pane::Log);
        let search = log
            .iter()
            .find(|(a, _)| *a == Action::Search)
            .expect("search");
        assert_eq!(search.1, vec!["/"]);
        let down = log.iter().find(|(a, _)| *a == Action::Down).expect("down");
        assert!(down.1.contains(&"j".to_string()) && down.1.contains(&"down".to_string()));
        assert!(map
            .bindings(Pane::Queue)
            .iter()
            .all(|(a, _)| *a != Action::Search));
    }
}
