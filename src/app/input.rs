//! Keys: a key goes to the overlay stack (`overlay.rs`), and when none is open to the
//! keymap's action (`on_action`); the one-line input at the bottom (`/` filter, `:`
//! command, `/` log search) and the `:` commands.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::component::{Keys, Out, OverlayKeys, Pass};
use super::{help, relaunch, shell, App, EditForm, Input, InputKind};
use crate::action::Cmd;
use crate::keymap::{Action, Pane};

/// Commands accepted on the `:` line, for the help overlay.
pub const COMMANDS: &[(&str, &str)] = &[
    ("q, quit", "quit"),
    ("r, refresh", "refresh / reconnect now"),
    ("cluster NAME", "show or add a cluster"),
    ("filter TEXT", "filter the queue"),
    ("cancel [ID...]", "cancel jobs (or marks)"),
    ("hold [ID...]", "hold pending jobs"),
    ("release [ID...]", "release held jobs"),
    ("requeue [ID...]", "requeue jobs"),
    ("top [ID...]", "first of your pending jobs"),
    ("shell [NODE]", "shell in the job"),
    ("forward PORT", "tunnel a job's port"),
    ("tunnels", "open tunnels"),
    ("untunnel PORT", "close a tunnel"),
    ("files", "the job's files"),
    ("events", "log of job changes"),
    ("deps", "your dependency chains"),
    ("partitions", "partitions at a glance"),
    ("sooner [N]", "pending job: start sooner"),
    ("history [DAYS]", "finished jobs ([ ] ±week)"),
    ("stats", "commands, bytes, RTT"),
    ("log", "remote commands (also @)"),
    ("jobtop", "job's processes (also t)"),
    ("commands", "your own commands (config)"),
    ("grep TEXT|/RE/", "search the sweep's logs"),
    ("errors", "first error in them (!)"),
    ("usage [DAYS]", "CPU/GPU-hours, limits (r)"),
    ("session [LABEL]", "launch a work session"),
    ("extend [ID]", "+30 min for a session"),
    ("ssh-config", "ssh lines to clipboard"),
];

/// The line being typed: esc drops it, enter hands it to its kind's owner, and the filter
/// applies as the user types.
impl OverlayKeys for Input {
    fn overlay_key(&mut self, k: &KeyEvent, _: &Keys) -> Out {
        let pass = match k.code {
            KeyCode::Esc => match self.kind {
                InputKind::CommandValue => Some(Pass::NoValue),
                InputKind::Filter => Some(Pass::Filter(String::new())),
                _ => None,
            },
            KeyCode::Enter => Some(Pass::Line(self.kind, std::mem::take(&mut self.text))),
            KeyCode::Backspace => {
                self.text.pop();
                return self.edited();
            }
            KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                self.text.clear();
                return self.edited();
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                self.text.push(c);
                return self.edited();
            }
            _ => return Out::none(),
        };
        Out {
            close: true,
            pass,
            ..Out::default()
        }
    }
}

impl Input {
    /// The filter applies as the user types.
    fn edited(&self) -> Out {
        match self.kind {
            InputKind::Filter => Out::pass(Pass::Filter(self.text.clone())),
            _ => Out::none(),
        }
    }
}

impl App {
    /// A typed line, entered (enter): to its kind's owner.
    pub(super) fn on_line(&mut self, kind: InputKind, text: &str) -> Vec<Cmd> {
        match kind {
            InputKind::Filter => Vec::new(),
            InputKind::Search => {
                let vp = self.log_viewport();
                self.logs.current_mut().set_search(text, vp);
                Vec::new()
            }
            InputKind::Command => self.run_command(text),
            InputKind::TemplateName => match self.overlays.form.as_mut() {
                Some(form) => form.save_as(text),
                None => Vec::new(),
            },
            InputKind::ScriptPath => match self.overlays.form.as_mut() {
                Some(form) => form.read_script(text),
                None => Vec::new(),
            },
            InputKind::CommandValue => {
                let out = self.overlays.custom.answer(text.to_string());
                self.apply(out)
            }
        }
    }

    pub fn run_command(&mut self, line: &str) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let mut words = line.split_whitespace();
        let head = words.next().unwrap_or("");
        let rest: Vec<&str> = words.collect();
        match (head, rest.as_slice()) {
            ("", _) => Vec::new(),
            ("q" | "quit", _) => {
                self.quit = true;
                vec![Cmd::Quit]
            }
            ("r" | "refresh", _) => self.clusters[ix].refresh_now(
                self.queue.shown().selected_job(),
                self.queue.shown().jobs(),
                self.now,
            ),
            ("cluster", [name]) => {
                if self.focus_cluster_named(name) {
                    self.say(format!("cluster `{name}`: in view"));
                    return self.selection_changed();
                }
                self.say(format!("adding cluster `{name}`…"));
                vec![Cmd::AddCluster((*name).to_string())]
            }
            ("cluster", _) => {
                self.say(":cluster needs one name, e.g. :cluster polar");
                Vec::new()
            }
            ("forward", [port]) => {
                let out = self.tunnels.forward(&view!(self, ix), port, None);
                self.apply(out)
            }
            ("forward", [port, node]) => {
                let out = self.tunnels.forward(&view!(self, ix), port, Some(node));
                self.apply(out)
            }
            ("forward", _) => {
                self.say(":forward needs the job's port, e.g. :forward 8888 [NODE]");
                Vec::new()
            }
            ("tunnels", _) => {
                let out = self.tunnels.describe();
                self.apply(out)
            }
            ("files", _) => {
                let out = self.overlays.files.open(&view!(self, ix));
                self.apply(out)
            }
            ("untunnel", [port]) => {
                let out = self.tunnels.untunnel(port);
                self.apply(out)
            }
            ("shell", []) => {
                let out = super::shell::open(&view!(self, ix), None);
                self.apply(out)
            }
            ("shell", [node]) => {
                let out = super::shell::open(&view!(self, ix), Some(node));
                self.apply(out)
            }
            ("shell", _) => {
                self.say(":shell takes at most one node, e.g. :shell gpu02");
                Vec::new()
            }
            ("filter", words) => {
                self.queue.shown_mut().set_filter(&words.join(" "));
                self.selection_changed()
            }
            ("partitions" | "parts", _) => {
                self.overlays.view = Some(super::insight::View::Partitions);
                let mut cmds = self.clusters[ix].insight.partitions_due(true, self.now);
                cmds.extend(self.clusters[ix].maintenance.asked(self.now));
                cmds
            }
            ("sooner", []) => {
                let out = self.sooner.ask(&view!(self, ix));
                self.apply(out)
            }
            ("sooner", [n]) => match n.parse::<usize>() {
                Ok(n) if n > 0 => {
                    let out = self.sooner.apply(&view!(self, ix), n);
                    self.apply(out)
                }
                _ => self.apply(super::component::Out::note(format!(
                    ":sooner N applies change N (1, 2, 3) that :sooner listed (not `{n}`)"
                ))),
            },
            ("stats", _) => {
                self.overlays.view = Some(super::insight::View::Stats);
                Vec::new()
            }
            ("history", []) => self.open_history(None),
            ("history", [days]) => match days.parse::<u32>() {
                Ok(d) if d > 0 => self.open_history(Some(d)),
                _ => {
                    self.say(format!(
                        ":history takes a number of days, e.g. :history 30 (not `{days}`)"
                    ));
                    Vec::new()
                }
            },
            ("usage", days @ ([] | [_])) => match super::usage::days_arg(days.first().copied()) {
                Ok(days) => {
                    self.overlays.view = Some(super::insight::View::Usage);
                    self.clusters[ix].usage.open(days)
                }
                Err(why) => self.apply(super::component::Out::note(why)),
            },
            ("deps", _) => {
                let out = self
                    .overlays
                    .deps
                    .open_view(&view!(self, ix), &self.history);
                self.apply(out)
            }
            ("session", label @ ([] | [_])) => {
                let mut cmds = self.open_form();
                if let Some(form) = self.overlays.form.as_mut() {
                    let out =
                        super::session::prefill(form, &view!(self, ix), label.first().copied());
                    cmds.extend(self.apply(out));
                }
                cmds
            }
            ("extend", id @ ([] | [_])) => {
                let out = super::session::extend_session(&view!(self, ix), id.first().copied());
                self.apply(out)
            }
            ("ssh-config", _) => {
                let out = super::session::copy_ssh_config(&view!(self, ix));
                self.apply(out)
            }
            ("commands", _) => {
                let out = self.overlays.custom.open_list();
                self.apply(out)
            }
            ("grep", _) => {
                let arg = line.trim_start().strip_prefix("grep").unwrap_or("");
                let out = match super::grep::read_pattern(arg) {
                    Ok((pattern, syntax)) => {
                        self.overlays
                            .grep
                            .start(&view!(self, ix), pattern, syntax, false)
                    }
                    Err(e) => super::component::Out::note(e),
                };
                self.apply(out)
            }
            ("errors", _) => {
                let out = self.overlays.grep.start_errors(&view!(self, ix));
                self.apply(out)
            }
            ("log", _) => {
                self.overlays.cmdlog.open();
                Vec::new()
            }
            ("jobtop", _) => self.open_top(),
            ("events", _) => {
                self.overlays.events_view.open = true;
                self.overlays.events_view.scroll = 0;
                Vec::new()
            }
            (other, ids) => {
                if let Some(kind) = crate::slurm::ops::OpKind::from_verb(other) {
                    return self.run_op_command(kind, ids);
                }
                self.say(format!(
                    "unknown command :{other} (known: q, refresh, cluster NAME, filter TEXT, cancel, hold, release, requeue, top, events, deps, partitions, sooner, history, stats, log, jobtop, commands, grep, errors, usage, session, extend, ssh-config; ? lists keys)"
                ));
                Vec::new()
            }
        }
    }

    pub(super) fn on_key(&mut self, k: KeyEvent) -> Vec<Cmd> {
        let ix = self.view_cluster();
        if k.kind != crossterm::event::KeyEventKind::Press {
            return Vec::new();
        }
        if k.code == KeyCode::Char('z') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return vec![Cmd::Suspend];
        }
        self.unsay();
        self.clusters[ix].insight.last_key = Some(self.now);
        self.on_overlay_key(k)
    }

    /// Rows (or lines) one page moves in the focused pane.
    fn page(&self) -> usize {
        usize::from(self.size.1.saturating_sub(8) / 2).max(1)
    }

    pub fn on_action(&mut self, a: Action) -> Vec<Cmd> {
        let ix = self.view_cluster();
        let page = self.page();
        match a {
            Action::Quit => {
                self.quit = true;
                return vec![Cmd::Quit];
            }
            Action::Help => {
                let ix = self.view_cluster();
                self.overlays.help = help::opened(&help::Parts {
                    theme: &self.theme,
                    focus: self.focus,
                    keymap: &self.keymap,
                    read_only: self.clusters[ix].read_only,
                    custom: &self.overlays.custom,
                    files: (self.overlays.files.view.is_some())
                        .then_some(self.overlays.files.download_dir.as_path()),
                    low_use: self.live.rules(),
                    commands: COMMANDS,
                });
            }
            Action::NextPane | Action::PrevPane => {
                let i = Pane::ALL.iter().position(|p| *p == self.focus).unwrap_or(0);
                let n = Pane::ALL.len();
                let j = if a == Action::NextPane {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.focus = Pane::ALL[j];
            }
            Action::Zoom => self.zoom = !self.zoom,
            Action::Select => {
                if self.focus == Pane::Queue
                    && (self.queue.shown().selected_is_collapsed()
                        || self.queue.shown().selected_is_expanded())
                {
                    self.queue.shown_mut().toggle_expand();
                    return self.selection_changed();
                }
                self.zoom = !self.zoom;
            }
            Action::Refresh => {
                return self.clusters[ix].refresh_now(
                    self.queue.shown().selected_job(),
                    self.queue.shown().jobs(),
                    self.now,
                )
            }
            Action::Filter => {
                self.overlays.input =
                    Some(Input::new(InputKind::Filter, self.queue.shown().filter()));
            }
            Action::Command => self.overlays.input = Some(Input::new(InputKind::Command, "")),
            Action::Search => self.overlays.input = Some(Input::new(InputKind::Search, "")),
            Action::Escape => {
                if self.zoom {
                    self.zoom = false;
                } else if self.queue.shown_mut().clear_marks() {
                    self.say("marks cleared");
                } else if !self.queue.shown().filter().is_empty() {
                    self.queue.shown_mut().set_filter("");
                    return self.selection_changed();
                } else if self.history.open {
                    return self.close_history();
                } else {
                    self.logs.current_mut().clear_search();
                }
            }
            Action::SortNext => self.queue.shown_mut().cycle_sort(),
            Action::SortReverse => self.queue.shown_mut().reverse_sort(),
            Action::ShowStdout => self.logs.show(crate::logview::Stream::Stdout),
            Action::ShowStderr => self.logs.show(crate::logview::Stream::Stderr),
            Action::Follow => self.logs.current_mut().bottom_and_follow(),
            Action::ToggleWrap => self.logs.current_mut().toggle_wrap(),
            Action::SearchNext => {
                let vp = self.log_viewport();
                self.logs.current_mut().next_match(vp);
            }
            Action::SearchPrev => {
                let vp = self.log_viewport();
                self.logs.current_mut().prev_match(vp);
            }
            Action::Up | Action::Down | Action::Top | Action::Bottom => {
                return self.move_in_focus(a, page)
            }
            Action::PageUp | Action::PageDown => return self.move_in_focus(a, page),
            Action::Cancel
            | Action::CancelNow
            | Action::Hold
            | Action::Release
            | Action::Requeue
            | Action::Prioritize => return self.on_job_action(a),
            Action::Edit => match EditForm::open(&view!(self, ix)) {
                Ok(form) => {
                    self.overlays.edit = Some(form);
                    if self.clusters[ix].partitions.is_none() {
                        return vec![Cmd::FetchLimits(ix)];
                    }
                }
                Err(why) => self.say(why),
            },
            Action::Mark => {
                if self.queue.shown_mut().toggle_mark() {
                    self.queue.shown_mut().select_next();
                    return self.selection_changed();
                }
            }
            Action::MarkRange => {
                let n = self.queue.shown_mut().mark_range();
                self.say(format!(
                    "marked {n} rows ({} in all)",
                    self.queue.shown().mark_count()
                ));
            }
            Action::MarkAll => {
                let n = self.queue.shown_mut().mark_all_shown();
                self.say(format!("marked {n} rows (esc clears)"));
            }
            Action::NewJob => return self.open_form(),
            Action::Shell => {
                let out = shell::open(&view!(self, ix), None);
                return self.apply(out);
            }
            Action::Forward => {
                let out = self.tunnels.open_forward(&view!(self, ix));
                return self.apply(out);
            }
            Action::HistoryOlder | Action::HistoryNewer => {
                let v = view!(self, ix, queue: &self.queue.jobs);
                let older = a == Action::HistoryOlder;
                let out = self.history.page_days(&v, &mut self.queue.history, older);
                return self.history_out(out);
            }
            Action::Relaunch => {
                let out = relaunch::relaunch(&view!(self, ix));
                return self.apply(out);
            }
            Action::Files => {
                let out = self.overlays.files.open(&view!(self, ix));
                return self.apply(out);
            }
            Action::Copy => {
                let out = super::copy::copy(&view!(self, ix), self.focus);
                return self.apply(out);
            }
            Action::Columns => return self.open_columns(),
            Action::Adopt => {
                let out = super::adopt::ask(&view!(self, ix));
                return self.apply(out);
            }
            Action::CommandLog => self.overlays.cmdlog.open(),
            Action::JobTop => return self.open_top(),
            Action::FirstError => {
                let out = self.overlays.grep.start_errors(&view!(self, ix));
                return self.apply(out);
            }
        }
        Vec::new()
    }
}
