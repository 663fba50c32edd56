use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::tests::{app, code, jobs, key, loaded};
use super::super::App;
use super::*;
use crate::action::Msg;
use crate::app::overlay::Overlay;
use crate::config::commands::{check, CommandDef, PromptDef};
use crate::keymap::Keymap;
use crate::slurm::custom::{Capture, Ended};
use crate::slurm::model::JobState;

fn def(key: &str, place: Where, states: &[&str], command: &str) -> CommandDef {
    CommandDef {
        key: key.into(),
        name: format!("cmd {key}"),
        place,
        states: states.iter().map(|s| s.to_string()).collect(),
        command: command.into(),
        ..CommandDef::default()
    }
}

fn with_commands(a: &mut App) {
    let mut tail = def("P", Where::Login, &[], "tail -n {lines} {workdir}/x.log");
    tail.prompts = vec![PromptDef {
        name: "lines".into(),
        default: "100".into(),
    }];
    let mut kill = def(
        "K",
        Where::Login,
        &["RUNNING"],
        "scancel --signal=USR1 {job_id}",
    );
    kill.confirm = true;
    let mut pager = def("Z", Where::Login, &[], "seff {job_id}");
    pager.pager = true;
    let defs = vec![
        def("J", Where::Login, &["RUNNING"], "jobstats {job_id}"),
        def("H", Where::Node, &[], "hostname"),
        def("M", Where::Laptop, &[], "myquota --cluster={cluster}"),
        tail,
        kill,
        pager,
    ];
    a.overlays.custom = CustomCommands::new(check(&defs, &Keymap::default()).unwrap());
}

fn on(a: &mut App, id: &str, state: JobState, nodes: &str) {
    let mut js = jobs();
    let j = js.iter_mut().find(|j| j.id.as_str() == id).unwrap();
    j.state = state;
    j.node_list = Some(nodes.into());
    a.update(loaded(js));
    a.queue.shown_mut().select_id(&id.parse().unwrap());
}

fn runs(cmds: &[Cmd]) -> Vec<CustomRun> {
    cmds.iter()
        .filter_map(|c| match c {
            Cmd::Custom(r) => Some((**r).clone()),
            _ => None,
        })
        .collect()
}

fn ready() -> App {
    let mut a = app();
    with_commands(&mut a);
    on(&mut a, "237", JobState::Running, "gpu[01-02]");
    a
}

#[test]
fn its_key_runs_a_command_on_the_selected_job() {
    let mut a = ready();
    let r = runs(&a.update(key('J')));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].argv, ["jobstats", "237"]);
    assert_eq!(r[0].place, Where::Login);
    assert!(
        a.note.as_deref().unwrap().contains("running on login"),
        "{:?}",
        a.note
    );
}

#[test]
fn a_job_in_another_state_says_why_nothing_ran() {
    let mut a = app();
    with_commands(&mut a);
    on(&mut a, "237", JobState::Pending, "");
    assert!(runs(&a.update(key('J'))).is_empty());
    let note = a.note.clone().unwrap();
    assert!(
        note.contains("is for RUNNING jobs: job 237 is PENDING, nothing ran"),
        "{note}"
    );
    // Inside the job: a pending job has no nodes.
    assert!(runs(&a.update(key('H'))).is_empty());
    assert!(a.note.as_deref().unwrap().contains("runs inside the job"));
}

#[test]
fn a_node_command_runs_inside_the_job_on_its_first_node() {
    let mut a = ready();
    let r = runs(&a.update(key('H')));
    assert_eq!(r[0].node.as_deref(), Some("gpu01"));
    let full = r[0].full_argv();
    assert_eq!(full[0], "srun");
    assert!(full.contains(&"--jobid=237".to_string()), "{full:?}");
    assert!(full.contains(&"--nodelist=gpu01".to_string()), "{full:?}");
    assert_eq!(full.last().map(String::as_str), Some("hostname"));
}

#[test]
fn a_prompt_is_asked_and_its_answer_stays_one_argument() {
    let mut a = ready();
    assert!(runs(&a.update(key('P'))).is_empty());
    let input = a.overlays.input.clone().unwrap();
    assert_eq!(input.label.as_deref(), Some("lines: "));
    assert_eq!(input.text, "100");
    assert!(input.hint.as_deref().unwrap().contains("on job 237"));
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    for c in "5; touch /tmp/pwned".chars() {
        a.update(key(c));
    }
    let r = runs(&a.update(code(KeyCode::Enter)));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].argv[..3], ["tail", "-n", "5; touch /tmp/pwned"]);
    // Esc on the prompt gives the command up.
    a.update(key('P'));
    assert!(runs(&a.update(code(KeyCode::Esc))).is_empty());
    assert_eq!(a.note.as_deref(), Some("P \"cmd P\": nothing ran"));
    assert!(a.overlays.input.is_none());
    assert!(runs(&a.update(code(KeyCode::Enter))).is_empty());
    assert!(r[0].argv[3].ends_with("/x.log"), "{:?}", r[0].argv);
}

#[test]
fn a_confirmed_command_asks_first() {
    let mut a = ready();
    assert!(runs(&a.update(key('K'))).is_empty());
    let q = a.overlays.confirm.clone().unwrap();
    assert!(
        q.prompt == "run K \"cmd K\" on login: `scancel --signal=USR1 237`?",
        "{}",
        q.prompt
    );
    assert!(runs(&a.update(key('n'))).is_empty());
    assert_eq!(a.note.as_deref(), Some("nothing changed"));
    a.update(key('K'));
    let r = runs(&a.update(key('y')));
    assert_eq!(r[0].argv, ["scancel", "--signal=USR1", "237"]);
}

#[test]
fn a_command_that_needs_no_job_runs_without_one() {
    let mut a = app();
    with_commands(&mut a);
    let r = runs(&a.update(key('M')));
    assert_eq!(r[0].argv, ["myquota", "--cluster=dev"]);
    assert!(runs(&a.update(key('J'))).is_empty());
    assert!(a.note.as_deref().unwrap().contains("select a job first"));
}

fn ended(run: CustomRun, code: i32) -> Msg {
    let mut o = Capture::default();
    o.push(b"JobID 237\n");
    let out = CustomOutput::new(
        run,
        Ended::Exit(Some(code)),
        Duration::from_millis(800),
        &o,
        &Capture::default(),
    );
    Msg::Cluster(0, Box::new(Msg::Custom(Box::new(out))))
}

#[test]
fn the_output_opens_in_its_pane_or_goes_to_the_pager() {
    let mut a = ready();
    let r = runs(&a.update(key('J'))).remove(0);
    a.update(ended(r, 0));
    assert_eq!(a.top_overlay(), Some(Overlay::Custom));
    assert!(
        a.note.as_deref().unwrap().contains("exit 0"),
        "{:?}",
        a.note
    );
    a.update(code(KeyCode::Esc));
    assert_eq!(a.top_overlay(), None);

    let r = runs(&a.update(key('Z'))).remove(0);
    let cmds = a.update(ended(r, 0));
    let [Cmd::Pager(text)] = &cmds[..] else {
        panic!("{cmds:?}")
    };
    assert!(
        text.contains("seff 237") && text.contains("JobID 237"),
        "{text}"
    );
    assert_eq!(a.top_overlay(), None);
}

#[test]
fn the_list_runs_the_selected_command_on_enter() {
    let mut a = ready();
    a.run_command("commands");
    assert_eq!(a.top_overlay(), Some(Overlay::Custom));
    assert_eq!(a.overlays.custom.shown, Some(Shown::List));
    let r = runs(&a.update(code(KeyCode::Enter)));
    assert_eq!(r[0].argv, ["jobstats", "237"]);
    assert_eq!(a.top_overlay(), None);
    let mut empty = app();
    empty.run_command("commands");
    assert!(empty.note.as_deref().unwrap().contains("add [[commands]]"));
}

#[test]
fn help_lists_the_commands() {
    let mut a = ready();
    a.update(key('?'));
    let lines: Vec<String> = a
        .overlays
        .help
        .lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect())
        .collect();
    assert!(lines.iter().any(|l| l.contains("your commands")));
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("J ") && l.contains("cmd J (login, RUNNING jobs)")),
        "{lines:#?}"
    );
}

#[test]
fn the_rpc_budget_never_holds_a_command_the_user_asked_for() {
    let mut a = ready();
    a.clusters[0].budget = crate::app::budget::Budget::new(1);
    // Every press goes out at once, however little the budget leaves for reads.
    for _ in 0..5 {
        let out = a.handle(key('J'));
        let sent = out
            .iter()
            .filter(|(ix, c)| *ix == 0 && matches!(c, Cmd::Custom(_)))
            .count();
        assert_eq!(sent, 1, "{out:?}");
    }
    assert!(a.clusters[0].budget.held().is_empty());
}
