//! The user's own commands (`[[commands]]`, `:commands`): a key runs one on the selected
//! job. The component fills the template from the job (its id, nodes, files...), asks the
//! command's prompts one after another on the bottom line, asks first when it is marked
//! `confirm`, and hands the run to the cluster's workers (`Cmd::Custom`, recorded in the
//! command log under "your key"; a request of the user's, never held by the RPC budget). Its
//! output comes back as `Msg::Custom` and opens in the output pane, or goes to `$PAGER`.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent};

use super::component::{Out, View};
use super::confirm::{Answer, Choice, Confirm};
use super::prompt::{Input, InputKind};
use crate::action::Cmd;
use crate::config::commands::UserCommand;
use crate::keymap::Key;
use crate::slurm::custom::{CustomOutput, CustomRun, Where};
use crate::slurm::model::Status;

/// What the pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// `:commands`: every command with its key.
    List,
    /// The last command's output.
    Output,
}

/// A command waiting for its prompts' answers.
#[derive(Debug, Clone, PartialEq)]
struct Asking {
    cmd: usize,
    values: BTreeMap<String, String>,
    /// Answers so far, in the order of the prompts.
    answers: usize,
    run: CustomRun,
}

/// The commands, the one being asked about, and the pane.
#[derive(Debug, Clone, Default)]
pub struct CustomCommands {
    pub commands: Vec<UserCommand>,
    asking: Option<Asking>,
    pub shown: Option<Shown>,
    pub output: Option<CustomOutput>,
    /// The first output line shown; the selected row of the list.
    pub scroll: usize,
    pub row: usize,
}

/// `J "jobstats"`.
fn label(c: &UserCommand) -> String {
    format!("{} \"{}\"", c.key, c.def.name)
}

impl CustomCommands {
    pub fn new(commands: Vec<UserCommand>) -> Self {
        CustomCommands {
            commands,
            ..Default::default()
        }
    }

    /// The command on `k`, if one is.
    pub fn on(&self, k: &KeyEvent) -> Option<usize> {
        let key = Key::from_event(k)?;
        self.commands.iter().position(|c| c.key == key)
    }

    /// `:commands`.
    pub fn open_list(&mut self) -> Out {
        if self.commands.is_empty() {
            return Out::note(
                "no commands of your own: add [[commands]] to the config (see config.example.toml)",
            );
        }
        self.shown = Some(Shown::List);
        self.row = 0;
        Out::none()
    }

    /// Command `i` on the selected job: its values, then its prompts, its question, or
    /// the run. Nothing runs when it does not apply, and the note says why.
    pub fn start(&mut self, v: &View, i: usize) -> Out {
        let Some(c) = self.commands.get(i) else {
            return Out::none();
        };
        let what = label(c);
        let job = v.queue.selected_job();
        let mut values = BTreeMap::new();
        values.insert("cluster".to_string(), v.cluster.name.clone());
        let (mut job_id, mut node) = (None, None);
        if c.needs_job() {
            let Some(job) = job else {
                return Out::note(format!("{what}: select a job first (nothing ran)"));
            };
            let id = job.id.as_str().to_string();
            if !c.states.is_empty() && !c.states.contains(&job.state) {
                return Out::note(format!(
                    "{what} is for {} jobs: job {id} is {}, nothing ran",
                    c.states_word(),
                    job.state.long_name()
                ));
            }
            let nodes = job.nodes();
            if c.def.place == Where::Node && (job.status() != Status::Running || nodes.is_empty()) {
                return Out::note(format!(
                    "{what} runs inside the job: job {id} is {}, it has no nodes to run on (nothing ran)",
                    job.state.long_name()
                ));
            }
            values.insert("job_id".into(), id.clone());
            values.insert(
                "array_task".into(),
                job.array_task.as_deref().unwrap_or("").to_string(),
            );
            let mut put = |k: &str, val: Option<String>| {
                if let Some(val) = val.filter(|s| !s.is_empty()) {
                    values.insert(k.to_string(), val);
                }
            };
            put("nodes", job.node_list.as_deref().map(str::to_string));
            put("first_node", nodes.first().cloned());
            put("workdir", Some(job.work_dir.to_string()));
            put("user", Some(job.user.to_string()));
            put("partition", Some(job.partition.to_string()));
            if v.logs.job.as_ref().is_some_and(|j| j.as_str() == id) {
                if let Some((out, err)) = &v.logs.paths {
                    put("stdout", Some(out.clone()));
                    put("stderr", Some(err.clone()));
                }
            }
            job_id = Some(id);
            node = nodes.first().cloned();
        }
        // Every value but the prompts' is known now: one missing is said before any prompt.
        let prompts: Vec<&str> = c.def.prompts.iter().map(|p| p.name.as_str()).collect();
        if let Some(missing) = c
            .template
            .slots()
            .into_iter()
            .find(|s| !prompts.contains(s) && !values.contains_key(*s))
        {
            let id = job_id.as_deref().unwrap_or("?");
            let why = match missing {
                "stdout" | "stderr" => {
                    " (its log paths are still being read: try again in a moment)"
                }
                "nodes" | "first_node" => " (it has no nodes yet)",
                _ => "",
            };
            return Out::note(format!(
                "{what}: job {id} has no {{{missing}}}{why}; nothing ran"
            ));
        }
        let run = CustomRun {
            cluster: v.cluster.ix,
            key: c.key.to_string(),
            name: c.def.name.clone(),
            place: c.def.place,
            argv: Vec::new(),
            job: job_id,
            node,
            timeout: c.timeout(),
            pager: c.def.pager,
        };
        self.asking = Some(Asking {
            cmd: i,
            values,
            answers: 0,
            run,
        });
        self.next()
    }

    /// The next prompt, or the question, or the run.
    fn next(&mut self) -> Out {
        let Some(a) = self.asking.as_ref() else {
            return Out::none();
        };
        let Some(c) = self.commands.get(a.cmd) else {
            return Out::none();
        };
        if let Some(p) = c.def.prompts.get(a.answers) {
            let mut input = Input::new(InputKind::CommandValue, &p.default);
            input.label = Some(format!("{}: ", p.name));
            let on = a
                .run
                .job
                .as_deref()
                .map(|j| format!(" on job {j}"))
                .unwrap_or_default();
            input.hint = Some(format!(
                "for {}{on} ({} of {}) · enter: {} · esc: cancel",
                label(c),
                a.answers + 1,
                c.def.prompts.len(),
                if a.answers + 1 == c.def.prompts.len() {
                    "run"
                } else {
                    "next"
                }
            ));
            return Out::prompt(input);
        }
        let Some(a) = self.asking.take() else {
            return Out::none();
        };
        let argv = match c.template.expand(&|n| a.values.get(n).cloned()) {
            Ok(argv) => argv,
            Err(missing) => {
                return Out::note(format!(
                    "{}: no value for {{{missing}}}; nothing ran",
                    label(c)
                ))
            }
        };
        let mut run = a.run;
        run.argv = argv;
        if c.def.confirm {
            let line = crate::slurm::custom::shell_line(&run.argv);
            let shown: String = line.chars().take(80).collect();
            let more = if shown.len() < line.len() { "…" } else { "" };
            return Out::confirm(Confirm {
                prompt: format!("run {} on {}: `{shown}{more}`?", label(c), run.place.word()),
                choices: vec![Choice {
                    key: 'y',
                    label: "run it".into(),
                    answer: Answer::Custom(Box::new(run)),
                }],
            });
        }
        self.run(run)
    }

    /// Esc on a prompt: the command is given up.
    pub fn cancel(&mut self) -> Out {
        match self.asking.take().and_then(|a| self.commands.get(a.cmd)) {
            Some(c) => Out::note(format!("{}: nothing ran", label(c))),
            None => Out::none(),
        }
    }

    /// A prompt's answer (enter on the bottom line).
    pub fn answer(&mut self, text: String) -> Out {
        let Some(a) = self.asking.as_mut() else {
            return Out::none();
        };
        let Some(c) = self.commands.get(a.cmd) else {
            return Out::none();
        };
        if let Some(p) = c.def.prompts.get(a.answers) {
            a.values.insert(p.name.clone(), text);
            a.answers += 1;
        }
        self.next()
    }

    /// Sends `run` to its cluster's workers.
    pub fn run(&mut self, run: CustomRun) -> Out {
        let on = match (&run.place, &run.node) {
            (Where::Node, Some(n)) => format!("on {n}"),
            (p, _) => format!("on {}", p.word()),
        };
        let note = format!("{} \"{}\": running {on}…", run.key, run.name);
        Out::cmds(vec![Cmd::Custom(Box::new(run))]).with_note(note)
    }

    /// A command ended: its output in the pane, or to `$PAGER`.
    pub fn finished(&mut self, out: CustomOutput) -> Out {
        let r = &out.run;
        let note = format!(
            "{} \"{}\": {} in {:.1} s",
            r.key,
            r.name,
            out.status_word(),
            out.took.as_secs_f64()
        );
        if r.pager && !matches!(out.ended, crate::slurm::custom::Ended::Failed(_)) {
            let text = out.text();
            self.output = Some(out);
            return Out::cmds(vec![Cmd::Pager(text)]).with_note(note);
        }
        self.output = Some(out);
        self.shown = Some(Shown::Output);
        self.scroll = 0;
        Out::note(note)
    }

    /// A key while the pane is open; `page`: its rows.
    pub fn on_key(&mut self, v: &View, k: &KeyEvent, page: usize) -> Out {
        let Some(shown) = self.shown else {
            return Out::none();
        };
        let (pos, max) = match shown {
            Shown::List => (self.row, self.commands.len().saturating_sub(1)),
            Shown::Output => (
                self.scroll,
                self.output
                    .as_ref()
                    .map_or(0, |o| (o.lines.len() + 2).saturating_sub(page)),
            ),
        };
        let moved = match k.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.shown = None;
                return Out::none();
            }
            KeyCode::Down | KeyCode::Char('j') => pos.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => pos.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => pos.saturating_add(page),
            KeyCode::PageUp => pos.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => 0,
            KeyCode::Char('G') | KeyCode::End => max,
            KeyCode::Enter if shown == Shown::List => {
                self.shown = None;
                return self.start(v, self.row);
            }
            _ => {
                // A command's own key runs it from here too.
                if let Some(i) = self.on(k) {
                    self.shown = None;
                    return self.start(v, i);
                }
                pos
            }
        };
        match shown {
            Shown::List => self.row = moved.min(max),
            Shown::Output => self.scroll = moved.min(max),
        }
        Out::none()
    }
}

/// Open while the list or an output is shown.
impl super::component::Overlaid for CustomCommands {
    fn is_open(&self) -> bool {
        self.shown.is_some()
    }

    fn close(&mut self) {
        self.shown = None;
    }
}

impl super::component::OverlayKeys for CustomCommands {
    fn overlay_key(&mut self, k: &KeyEvent, cx: &super::component::Keys) -> Out {
        // The frame, the command line and the status bar.
        self.on_key(&cx.view, k, cx.page(5))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "custom_tests.rs"]
mod tests;
