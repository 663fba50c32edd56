//! The launch form driven through messages: no terminal, no cluster.

use crate::action::{InsightMsg, LaunchMsg};
use std::time::Duration;

use chrono::NaiveDate;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::action::Msg;
use crate::app::form_state::{LaunchContext, FIELDS};
use crate::app::App;
use crate::launch::facts::PartitionInfo;
use crate::launch::LaunchSpec;

fn part(name: &str, max_min: u64, default: bool) -> PartitionInfo {
    PartitionInfo {
        name: name.into(),
        is_default: default,
        max_time: Some(Duration::from_secs(max_min * 60)),
        nodes: 1,
        gpus_per_node: 8,
        gpus_total: 8,
        gpus_idle: 5,
        pending_jobs: 2,
        state: "UP".into(),
    }
}

fn facts() -> ClusterFacts {
    ClusterFacts {
        partitions: vec![
            part("short", 30, true),
            part("polar", 240, false),
            part("long", 2880, false),
        ],
        accounts: Some(vec!["research".into(), "vision".into()]),
        pyxis: Some(false),
        nodes: ["short", "polar", "long"]
            .iter()
            .map(|p| crate::launch::facts::NodeShape {
                node: "n1".into(),
                partition: (*p).into(),
                cpus: 16,
                mem_mb: 21504,
                gpus: 8,
                ..Default::default()
            })
            .collect(),
        sbatch_env: Vec::new(),
    }
}

fn app() -> App {
    let now = NaiveDate::from_ymd_opt(2026, 11, 23)
        .and_then(|d| d.and_hms_opt(12, 0, 0))
        .expect("time");
    let mut a = App::fixture(now);
    a.update(Msg::queue(Ok(Vec::new()), now, Duration::from_millis(5)));
    let defaults = LaunchSpec {
        name: "hello".into(),
        partition: "short".into(),
        account: "research".into(),
        gpus: 1,
        cpus_per_task: 1,
        time: "10m".into(),
        command: "echo hi".into(),
        ..LaunchSpec::default()
    };
    let mut big = defaults.clone();
    big.gpus = 8;
    big.name = "train8".into();
    a.clusters[0].launch = LaunchContext {
        defaults,
        templates: vec![("train-8gpu".into(), big)],
        origins: [(
            "train-8gpu".to_string(),
            "[templates.train-8gpu] in the config".to_string(),
        )]
        .into_iter()
        .collect(),
        template_problems: Vec::new(),
        last_used: None,
        results_root: Some("/lustre/fsw/me/results".into()),
        facts: None,
        registry_jobs: Vec::new(),
        reattaching: false,
        jump: None,
    };
    a
}

fn press(a: &mut App, code: KeyCode) -> Vec<Cmd> {
    a.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        press(a, KeyCode::Char(c));
    }
}

fn goto(a: &mut App, key: &str) {
    let row = FIELDS.iter().position(|f| f.0 == key).expect("field") + 1;
    if let Some(f) = a.overlays.form.as_mut() {
        f.row = row;
    }
}

fn opened() -> App {
    let mut a = app();
    assert_eq!(
        press(&mut a, KeyCode::Char('n')),
        vec![Cmd::FetchLaunchFacts, Cmd::FetchReservations]
    );
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    if let Some(f) = a.overlays.form.as_mut() {
        f.local_id = "20261123-120000-abcdef".into();
        f.revalidate();
    }
    a
}

fn render(a: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    term.draw(|f| crate::ui::draw(f, a)).expect("draw");
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn n_opens_the_form_and_edits_validate_inline() {
    let mut a = opened();
    let form = a.overlays.form.as_ref().expect("open");
    assert!(form.prepared.is_some(), "{:?}", form.problems);
    goto(&mut a, "time");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "2h");
    press(&mut a, KeyCode::Enter);
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.time, "2h");
    let msgs: Vec<&str> = form
        .problems_for("time")
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(msgs, ["time 2:00:00 is over partition short's MaxTime 30:00: shorten it or pick a partition with a longer limit"]);
    // Submitting is refused while a field is marked.
    goto(&mut a, "name");
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    assert!(press(&mut a, KeyCode::Enter).is_empty());
    assert!(a
        .overlays
        .form
        .as_ref()
        .and_then(|f| f.error.as_deref())
        .is_some_and(|e| e.contains("fix the marked fields")));
    // Picking a partition with a longer limit clears it.
    goto(&mut a, "partition");
    press(&mut a, KeyCode::Enter);
    assert_eq!(a.overlays.form.as_ref().and_then(|f| f.picker), Some(0));
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Enter);
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.partition, "polar");
    assert!(form.problems.is_empty());
}

#[test]
fn cpus_no_node_has_are_marked_in_the_form_and_nothing_is_submitted() {
    let mut a = opened();
    goto(&mut a, "cpus_per_task");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "17");
    // Marked while typing, before the edit is applied.
    let form = a.overlays.form.as_ref().expect("open");
    let msgs: Vec<&str> = form
        .problems_for("cpus_per_task")
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with("17 CPUs per task, but the largest node in short has 16"),
        "{msgs:?}"
    );
    press(&mut a, KeyCode::Enter);
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    assert!(press(&mut a, KeyCode::Enter).is_empty(), "nothing is sent");
    goto(&mut a, "mem");
    press(&mut a, KeyCode::Enter);
    typed(&mut a, "22G");
    press(&mut a, KeyCode::Enter);
    let form = a.overlays.form.as_ref().expect("open");
    assert!(form.problems_for("mem").any(|p| p
        .message
        .starts_with("22G memory per node, but the largest node in short has 21G")));
}

#[test]
fn templates_preview_test_only_and_submit() {
    let mut a = opened();
    a.overlays.form.as_mut().expect("open").row = 0;
    press(&mut a, KeyCode::Right);
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!((form.spec.name.as_str(), form.spec.gpus), ("train8", 8));
    press(&mut a, KeyCode::Left);
    press(&mut a, KeyCode::Char('p'));
    assert_eq!(a.overlays.form.as_ref().and_then(|f| f.preview), Some(0));
    press(&mut a, KeyCode::Esc);
    let cmds = press(&mut a, KeyCode::Char('t'));
    assert!(matches!(cmds.as_slice(), [Cmd::TestOnly(_)]), "{cmds:?}");
    a.update(Msg::Launch(LaunchMsg::TestOnly(crate::launch::stage::parse_test_only(
        "sbatch: Job 9 to start at 2026-11-23T12:00:05 using 1 processors on nodes gpu07 in partition short",
    ).ok_or_else(String::new))));
    let screen = render(&a, 120, 40);
    assert!(
        screen
            .contains("test-only: estimated start 2026-11-23T12:00:05 on gpu07 (partition short)"),
        "{screen}"
    );

    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    let cmds = press(&mut a, KeyCode::Enter);
    let prepared = match cmds.as_slice() {
        [Cmd::Submit { cluster, prepared }] if cluster == "dev" => prepared.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        press(&mut a, KeyCode::Enter).is_empty(),
        "a second enter does not submit twice"
    );
    let submitted = crate::launch::submit::Submitted {
        code: None,
        job_id: 4242,
        local_id: prepared.layout.local_id.clone(),
        job_dir: prepared.layout.job_dir.clone(),
        script_path: prepared.layout.script_path(),
        stdout: prepared.layout.stdout("hello", 4242),
        stderr: prepared.layout.stderr("hello", 4242),
        entry: crate::registry::Entry {
            local_id: prepared.layout.local_id.clone(),
            cluster: "dev".into(),
            job_id: 4242,
            job_dir: prepared.layout.job_dir.clone(),
            name: "hello".into(),
            submitted_at: chrono::Utc::now(),
            template: None,
            script: prepared.layout.script_path(),
            attempts: Vec::new(),
            secrets: Vec::new(),
            checksum: None,
            spec_sha256: None,
            requeue: false,
            guard: None,
            sweep: Vec::new(),
            code: None,
        },
        warnings: Vec::new(),
    };
    let cmds = a.update(Msg::Launch(LaunchMsg::Submitted(Box::new(Ok(submitted)))));
    assert!(a.overlays.form.is_none());
    assert_eq!(
        a.queue
            .shown()
            .selected_id()
            .map(|i| i.as_str().to_string()),
        Some("4242".into())
    );
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::PollQueue | Cmd::PollWith { .. }))
            && cmds.contains(&Cmd::FetchDetail(JobId::new(4242))),
        "{cmds:?}"
    );
    assert!(a
        .note
        .as_deref()
        .is_some_and(|n| n.contains("submitted job 4242")));
    // Re-opening starts from the last used values.
    press(&mut a, KeyCode::Char('n'));
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.choices.first().map(String::as_str), Some("last used"));
    assert_eq!(form.spec, prepared.spec);
}

#[test]
fn submitting_again_after_a_timeout_targets_the_same_job_directory() {
    let mut a = opened();
    let submit = |a: &mut App| match a
        .update(Msg::Key(KeyEvent::new(
            KeyCode::Char('s'),
            KeyModifiers::CONTROL,
        )))
        .as_slice()
    {
        [Cmd::Submit { prepared, .. }] => prepared.layout.clone(),
        other => panic!("{other:?}"),
    };
    let first = submit(&mut a);
    a.update(Msg::Launch(LaunchMsg::Submitted(Box::new(Err(
        "submitting x: `sh -c ...` on login1 did not finish within 30.0s and was abandoned".into(),
    )))));
    // The staging script finds a job already queued from this directory's script and
    // reports it instead of queueing a second: that needs the same launch id.
    assert_eq!(submit(&mut a), first);
}

#[test]
fn container_without_pyxis_is_flagged_and_failed_submit_keeps_the_form() {
    let mut a = opened();
    goto(&mut a, "image");
    press(&mut a, KeyCode::Enter);
    typed(&mut a, "nvcr.io/nvidia/pytorch:24.01-py3");
    press(&mut a, KeyCode::Enter);
    let form = a.overlays.form.as_ref().expect("open");
    assert!(form
        .problems_for("image")
        .any(|p| p.message.contains("no Pyxis")));
    assert!(render(&a, 120, 40).contains("! no Pyxis on this cluster"));
    if let Some(f) = a.overlays.form.as_mut() {
        f.busy = Some(Busy::Submitting);
    }
    a.update(Msg::Launch(LaunchMsg::Submitted(Box::new(Err(
        "input path not found on login1: /lustre/x".into(),
    )))));
    let form = a.overlays.form.as_ref().expect("still open");
    assert_eq!(
        form.error.as_deref(),
        Some("input path not found on login1: /lustre/x")
    );
    assert_eq!(form.busy, None);
}

#[test]
fn form_snapshots() {
    let mut a = opened();
    goto(&mut a, "gpus");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "16");
    press(&mut a, KeyCode::Enter);
    insta::assert_snapshot!("launch_form_with_problem", render(&a, 110, 42));
    goto(&mut a, "partition");
    press(&mut a, KeyCode::Enter);
    insta::assert_snapshot!("launch_form_partition_picker", render(&a, 110, 42));
    press(&mut a, KeyCode::Esc);
    goto(&mut a, "gpus");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "2");
    press(&mut a, KeyCode::Enter);
    press(&mut a, KeyCode::Char('p'));
    insta::assert_snapshot!("launch_form_preview", render(&a, 110, 42));
}

#[test]
fn registry_jobs_stay_in_the_queue_across_polls() {
    let mut a = app();
    let d = crate::slurm::parse::parse_sacct(include_str!(
        "../../tests/fixtures/slurm/sacct_finished.out"
    ))
    .expect("fixture");
    let jobs: Vec<Job> = d
        .iter()
        .filter_map(crate::slurm::model::JobDetail::to_job)
        .take(1)
        .collect();
    let id = jobs[0].id.clone();
    a.update(Msg::Launch(LaunchMsg::RegistryJobs(Ok(jobs))));
    assert!(a.queue.shown().jobs().iter().any(|j| j.id == id));
    a.update(Msg::queue(Ok(Vec::new()), a.now, Duration::from_millis(1)));
    assert!(
        a.queue.shown().jobs().iter().any(|j| j.id == id),
        "a finished registry job survives a poll"
    );
}

#[test]
fn a_submitted_job_stays_selected_through_a_stale_poll_and_sacct_is_asked_when_it_leaves() {
    let mut a = opened();
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    let prepared = match press(&mut a, KeyCode::Enter).as_slice() {
        [Cmd::Submit { prepared, .. }] => prepared.clone(),
        other => panic!("{other:?}"),
    };
    let s = crate::launch::submit::Submitted {
        code: None,
        job_id: 77,
        local_id: "l".into(),
        job_dir: prepared.layout.job_dir.clone(),
        script_path: prepared.layout.script_path(),
        stdout: String::new(),
        stderr: String::new(),
        entry: crate::registry::Entry {
            local_id: "l".into(),
            cluster: "dev".into(),
            job_id: 77,
            job_dir: String::new(),
            name: "hello".into(),
            submitted_at: chrono::Utc::now(),
            template: None,
            script: String::new(),
            attempts: Vec::new(),
            secrets: Vec::new(),
            checksum: None,
            spec_sha256: None,
            guard: None,
            sweep: Vec::new(),
            code: None,
            requeue: false,
        },
        warnings: Vec::new(),
    };
    a.update(Msg::Launch(LaunchMsg::Submitted(Box::new(Ok(s)))));
    // A poll that started before the submission comes back without the job.
    let cmds = a.update(Msg::queue(Ok(Vec::new()), a.now, Duration::from_millis(1)));
    assert_eq!(a.queue.shown().selected_id(), Some(&JobId::new(77)));
    assert!(
        cmds.contains(&Cmd::LoadRegistryJobs("dev".into())),
        "{cmds:?}"
    );
    // sacct says it completed: no more lookups, the row shows the final state.
    let mut done = a.clusters[0].launch.registry_jobs[0].clone();
    done.state = JobState::Completed;
    a.update(Msg::Launch(LaunchMsg::RegistryJobs(Ok(vec![done]))));
    let cmds = a.update(Msg::queue(Ok(Vec::new()), a.now, Duration::from_millis(1)));
    assert!(
        !cmds.iter().any(|c| matches!(c, Cmd::LoadRegistryJobs(_))),
        "{cmds:?}"
    );
    assert_eq!(
        a.queue.shown().selected_job().map(|j| j.state.clone()),
        Some(JobState::Completed)
    );
}

#[test]
fn validation_runs_as_the_user_types() {
    let mut a = opened();
    goto(&mut a, "time");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "45m");
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.time, "10m", "not applied before enter");
    assert!(
        form.problems_for("time")
            .any(|p| p.message.contains("MaxTime 30:00")),
        "{:?}",
        form.problems
    );
    press(&mut a, KeyCode::Backspace);
    press(&mut a, KeyCode::Backspace);
    press(&mut a, KeyCode::Backspace);
    typed(&mut a, "5m");
    assert!(a.overlays.form.as_ref().expect("open").problems.is_empty());
    press(&mut a, KeyCode::Esc);
    goto(&mut a, "gpus");
    press(&mut a, KeyCode::Enter);
    typed(&mut a, "x");
    assert!(a
        .overlays
        .form
        .as_ref()
        .expect("open")
        .problems_for("gpus")
        .any(|p| p.message.contains("whole number")));
    press(&mut a, KeyCode::Esc);
    let form = a.overlays.form.as_ref().expect("open");
    assert!(
        form.problems.is_empty() && form.spec.gpus == 1,
        "esc drops the edit"
    );
}

#[test]
fn a_read_only_session_does_not_open_the_form() {
    let mut a = app();
    a.clusters[0].read_only = true;
    assert!(press(&mut a, KeyCode::Char('n')).is_empty());
    assert!(a.overlays.form.is_none());
    assert!(a.note.as_deref().is_some_and(|n| n.contains("read-only")));
}

#[test]
fn a_recovered_multi_line_script_is_the_forms_command_and_is_staged_beside_the_script() {
    let mut a = app();
    let used = crate::slurm::eff::parse_eff(include_str!(
        "../../tests/fixtures/slurm/22.05/sacct_eff.out"
    ))
    .expect("sacct fixture")
    .into_iter()
    .find(|u| u.detail.name == "tmo")
    .expect("tmo");
    let body = include_str!("../../tests/fixtures/slurm/26.05/batch_script_multiline.out");
    let id = JobId::new(77);
    let cmds = a.update(Msg::Launch(LaunchMsg::Recovered {
        id: id.clone(),
        result: Box::new(Ok(crate::launch::relaunch::Recovered {
            used,
            script: Some(body.into()),
            script_from: "scontrol write batch_script".into(),
            me: Some("sduser".into()),
        })),
    }));
    assert_eq!(cmds, vec![Cmd::FetchLaunchFacts, Cmd::FetchReservations]);
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    if let Some(f) = a.overlays.form.as_mut() {
        f.local_id = "20261123-120000-abcdef".into();
        f.revalidate();
    }
    let note = a.note.clone().unwrap_or_default();
    assert!(
        note.contains(
            "its 20-line batch script from scontrol write batch_script runs as the command"
        ),
        "{note}"
    );
    assert!(
        note.contains("#SBATCH --output=/tmp/train-%j.out (not carried over)"),
        "{note}"
    );
    let form = a.overlays.form.as_ref().expect("open");
    assert!(form.problems.is_empty(), "{:?}", form.problems);
    let screen = render(&a, 110, 42);
    assert!(
        screen
            .contains("the job's recovered batch script: 20 lines (type a command to replace it)"),
        "{screen}"
    );
    insta::assert_snapshot!("launch_form_recovered_script", screen);
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    let cmds = press(&mut a, KeyCode::Enter);
    let prepared = match cmds.as_slice() {
        [Cmd::Submit { prepared, .. }] => prepared.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(prepared.plan.batch_script.as_deref(), Some(body));
    let s = &prepared.script;
    assert!(
        s.contains(&crate::launch::script::sha256_hex(body.as_bytes())),
        "{s}"
    );
    assert!(
        s.contains("recovered=/lustre/fsw/me/results/20261123-120000-abcdef/sbatch/recovered.sh"),
        "{s}"
    );
    assert!(!s.contains("iteration") && !s.contains("srun"), "{s}");
    assert!(
        s.contains("#SBATCH --qos=normal\n#SBATCH --ntasks-per-node=1\n"),
        "{s}"
    );
    assert!(s.contains("#SBATCH --no-requeue"), "{s}");
    assert!(s.contains("#SBATCH --cpus-per-task=2"), "{s}");
}

/// What `L` recovers of the fixture's `tmo` job (sduser's), as seen by `me`.
fn recovered_tmo(id: &JobId, me: &str) -> Msg {
    let used = crate::slurm::eff::parse_eff(include_str!(
        "../../tests/fixtures/slurm/22.05/sacct_eff.out"
    ))
    .expect("sacct fixture")
    .into_iter()
    .find(|u| u.detail.name == "tmo")
    .expect("tmo");
    Msg::Launch(LaunchMsg::Recovered {
        id: id.clone(),
        result: Box::new(Ok(crate::launch::relaunch::Recovered {
            used,
            script: Some(
                "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nsleep 300\n".into(),
            ),
            script_from: "scontrol write batch_script".into(),
            me: Some(me.into()),
        })),
    })
}

/// `L` on a job of another user (here, what an operator sees relaunching sduser's job):
/// no secret of the operator's last launch is carried over, the form says whose script it
/// is, and Submit asks once more before it runs.
#[test]
fn another_users_job_is_relaunched_only_after_the_form_says_whose_it_is() {
    let mut a = app();
    a.clusters[0].launch.last_used = Some(LaunchSpec {
        secrets: vec!["HF_TOKEN".into()],
        ..LaunchSpec::default()
    });
    let id = JobId::new(48);
    a.update(recovered_tmo(&id, "operator"));
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    let form = a.overlays.form.as_ref().expect("open");
    assert!(form.spec.secrets.is_empty(), "{:?}", form.spec.secrets);
    let screen = render(&a, 110, 42);
    assert!(
        screen.contains("job 48 is sduser's, not yours: its script would run as operator"),
        "{screen}"
    );
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    assert!(
        press(&mut a, KeyCode::Enter).is_empty(),
        "submitted at once"
    );
    let screen = render(&a, 110, 42);
    assert!(
        screen.contains("sduser's script would run as operator: enter on Submit again"),
        "{screen}"
    );
    let cmds = press(&mut a, KeyCode::Enter);
    assert!(matches!(cmds.as_slice(), [Cmd::Submit { .. }]), "{cmds:?}");

    // The same job relaunched by its own user asks nothing more.
    let mut own = app();
    own.update(recovered_tmo(&id, "sduser"));
    own.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    assert!(own.overlays.form.as_ref().expect("open").foreign.is_none());
    own.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    let cmds = press(&mut own, KeyCode::Enter);
    assert!(matches!(cmds.as_slice(), [Cmd::Submit { .. }]), "{cmds:?}");
}

/// The user's own SBATCH_* variables in the preview: the one the script overrides (its
/// time limit) says the form wins, the one it does not set applies.
#[test]
fn the_preview_says_which_sbatch_variables_of_the_login_apply() {
    let mut a = app();
    press(&mut a, KeyCode::Char('n'));
    let mut f = facts();
    f.sbatch_env = vec![
        ("SBATCH_TIMELIMIT".into(), "1:00".into()),
        ("SBATCH_QOS".into(), "high".into()),
    ];
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(f))));
    press(&mut a, KeyCode::Char('p'));
    let screen = render(&a, 110, 42);
    assert!(
        screen.contains("SBATCH_TIMELIMIT=1:00: not used, the form's time limit wins"),
        "{screen}"
    );
    assert!(
        screen.contains("SBATCH_QOS=high: applies to this job (the form does not set it)"),
        "{screen}"
    );
}

/// The registry's launches reach the App as soon as they are read (at start, and after a
/// submission or an adoption), not at the first retry check, which may come much later:
/// `L` on a finished launch then reads its own spec, not sacct's options of a job
/// slurmdash did not launch.
#[test]
fn l_on_a_launch_reads_its_spec_as_soon_as_the_registry_is_read() {
    let mut a = app();
    let d = crate::slurm::parse::parse_sacct(include_str!(
        "../../tests/fixtures/slurm/sacct_finished.out"
    ))
    .expect("fixture");
    let jobs: Vec<Job> = d
        .iter()
        .filter_map(crate::slurm::model::JobDetail::to_job)
        .take(1)
        .collect();
    let id = jobs[0].id.clone();
    a.update(Msg::Launch(LaunchMsg::RegistryJobs(Ok(jobs))));
    assert_eq!(a.queue.shown().selected_id(), Some(&id));
    // Not known as a launch yet: its options are recovered from sacct.
    assert_eq!(
        press(&mut a, KeyCode::Char('L')),
        vec![Cmd::Recover(id.clone())]
    );
    let at = chrono::Utc::now();
    a.update(Msg::Launch(LaunchMsg::Launches(vec![
        crate::registry::Entry {
            local_id: "L1".into(),
            cluster: "dev".into(),
            job_id: id.base(),
            job_dir: "/r/L1".into(),
            name: "train".into(),
            submitted_at: at,
            template: None,
            script: "/r/L1/sbatch/job_L1.sbatch".into(),
            attempts: vec![crate::registry::Attempt {
                job_id: id.base(),
                submitted_at: at,
                state: None,
            }],
            secrets: Vec::new(),
            checksum: None,
            spec_sha256: None,
            guard: None,
            sweep: Vec::new(),
            code: None,
            requeue: false,
        },
    ])));
    assert_eq!(
        press(&mut a, KeyCode::Char('L')),
        vec![Cmd::Relaunch {
            id,
            job_dir: "/r/L1".into()
        }]
    );
}

/// `L` on launch 48 (this laptop recorded its spec's sha256 as `launched`), reading a spec
/// whose sha256 is `read`.
fn relaunched(launched: Option<&str>, read: &str) -> App {
    let mut a = app();
    let id = JobId::new(48);
    a.clusters[0].chains.insert(
        48,
        crate::retry::Chain {
            local_id: "L48".into(),
            job_dir: "/r/L48".into(),
            name: "hello".into(),
            attempt: 1,
            attempts: 1,
            max_attempts: 11,
            previous: Vec::new(),
            guard: None,
            sweep: Vec::new(),
            code: None,
            secrets: Vec::new(),
            spec_sha256: launched.map(str::to_string),
        },
    );
    let spec = LaunchSpec {
        name: "hello".into(),
        partition: "short".into(),
        account: "research".into(),
        gpus: 1,
        cpus_per_task: 1,
        time: "10m".into(),
        command: "curl -s https://example.org/x | sh".into(),
        ..LaunchSpec::default()
    };
    let cmds = a.update(Msg::Launch(LaunchMsg::Relaunch {
        id,
        result: Box::new(Ok(crate::launch::relaunch::Relaunchable {
            spec,
            spec_sha256: read.into(),
            used: None,
        })),
    }));
    assert_eq!(cmds, vec![Cmd::FetchLaunchFacts, Cmd::FetchReservations]);
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    if let Some(f) = a.overlays.form.as_mut() {
        f.local_id = "20261123-120000-abcdef".into();
        f.revalidate();
    }
    a
}

const SPEC_CHANGED: &str = "the job's specs/launch.json changed since it was launched: check the command and environment before you submit";

/// The job rewrote its own `specs/launch.json` (its command, environment or image, which
/// `L` takes from there): the form says so, and Submit asks once more before it runs.
#[test]
fn a_relaunch_from_a_rewritten_spec_warns_and_asks_before_it_submits() {
    let mut a = relaunched(Some("aaaa"), "bbbb");
    let form = a.overlays.form.as_ref().expect("open");
    assert!(form.problems.is_empty(), "{:?}", form.problems);
    let screen = render(&a, 110, 42);
    let shown = screen
        .lines()
        .filter_map(|l| l.split('│').nth(2))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(shown.contains(&format!("⚠ {SPEC_CHANGED}")), "{screen}");
    insta::assert_snapshot!("launch_form_relaunch_of_a_rewritten_spec", screen);
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    assert!(
        press(&mut a, KeyCode::Enter).is_empty(),
        "submitted at once"
    );
    let screen = render(&a, 110, 42);
    assert!(
        screen
            .contains("job 48's specs/launch.json is not the one launched: enter on Submit again"),
        "{screen}"
    );
    let cmds = press(&mut a, KeyCode::Enter);
    assert!(matches!(cmds.as_slice(), [Cmd::Submit { .. }]), "{cmds:?}");
}

/// The spec as launched, or a launch recorded before slurmdash kept the spec's hash: no
/// warning, Submit submits.
#[test]
fn a_relaunch_from_the_spec_as_launched_asks_nothing_more() {
    for (launched, read) in [(Some("aaaa"), "aaaa"), (None, "bbbb")] {
        let mut a = relaunched(launched, read);
        assert!(
            a.overlays
                .form
                .as_ref()
                .expect("open")
                .spec_changed
                .is_none(),
            "{launched:?}"
        );
        assert!(!render(&a, 110, 42).contains("specs/launch.json changed"));
        a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
        let cmds = press(&mut a, KeyCode::Enter);
        assert!(matches!(cmds.as_slice(), [Cmd::Submit { .. }]), "{cmds:?}");
    }
}

/// `w` on a relaunch that still has its questions (another user's script, a rewritten
/// spec) asks them first, as Submit does: a template would launch that script later with
/// no question at all.
#[test]
fn w_on_an_unconfirmed_relaunch_asks_the_questions_before_the_name() {
    let template_name = |a: &App| {
        a.overlays.input.as_ref().map(|i| i.kind) == Some(crate::app::InputKind::TemplateName)
    };
    let error = |a: &App| {
        a.overlays
            .form
            .as_ref()
            .and_then(|f| f.error.clone())
            .unwrap_or_default()
    };

    let mut a = relaunched(Some("aaaa"), "bbbb");
    assert!(press(&mut a, KeyCode::Char('w')).is_empty());
    assert!(!template_name(&a), "asked for a name at once");
    assert_eq!(
        error(&a),
        "job 48's specs/launch.json is not the one launched: w again to save what the form shows as a template, esc to leave"
    );
    assert!(press(&mut a, KeyCode::Char('w')).is_empty());
    assert!(template_name(&a), "the second w asks for the name");

    let mut a = app();
    a.update(recovered_tmo(&JobId::new(48), "operator"));
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    press(&mut a, KeyCode::Char('w'));
    assert!(!template_name(&a), "asked for a name at once");
    assert_eq!(
        error(&a),
        "sduser's script would run as operator: w again to save it as a template, esc to leave"
    );
    press(&mut a, KeyCode::Char('w'));
    assert!(template_name(&a));
    typed(&mut a, "theirs");
    let cmds = press(&mut a, KeyCode::Enter);
    assert!(
        matches!(cmds.as_slice(), [Cmd::SaveTemplate { name, .. }] if name == "theirs"),
        "{cmds:?}"
    );
}

/// What `L` on task `799_4` of the fixture's array (6 tasks, 1 and 4 exited 1) reads: the
/// array's tasks (all COMPLETED when `all_done`) and what is recovered of the task.
fn rerun_read(all_done: bool) -> (JobId, Msg) {
    let mut tasks = crate::slurm::eff::parse_eff(include_str!(
        "../../tests/fixtures/slurm/22.05/sacct_eff_array.out"
    ))
    .expect("sacct fixture");
    if all_done {
        for t in &mut tasks {
            t.detail.state = Some(JobState::Completed);
        }
    }
    let id: JobId = "799_4".parse().expect("id");
    let used = tasks
        .iter()
        .find(|u| u.detail.id.as_ref() == Some(&id))
        .cloned()
        .expect("799_4");
    let msg = Msg::Launch(LaunchMsg::Rerun {
        id: id.clone(),
        result: Box::new(crate::launch::relaunch::RerunRead {
            array: Ok(crate::launch::relaunch::ArrayRead {
                tasks,
                max_array_size: 1001,
            }),
            source: crate::launch::relaunch::RerunSource::Recovered(Box::new(Ok(crate::launch::relaunch::Recovered {
                used,
                script: Some(
                    "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ncase $SLURM_ARRAY_TASK_ID in 1|4) exit 1;; esac; sleep 2\n".into(),
                ),
                script_from: "scontrol write batch_script".into(),
                me: Some("sduser".into()),
            }))),
        }),
    });
    (id, msg)
}

#[test]
fn l_on_an_array_with_failed_tasks_opens_the_form_on_exactly_those() {
    let mut a = app();
    let (_, msg) = rerun_read(false);
    a.update(msg);
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.array, "1,4");
    assert_eq!(
        form.rerun.as_deref(),
        Some("rerun the 2 tasks that did not complete: 1,4")
    );
    let note = a.note.clone().unwrap_or_default();
    assert!(
        note.starts_with("array 799: rerun the 2 tasks that did not complete: 1,4"),
        "{note}"
    );
    let screen = render(&a, 110, 42);
    assert!(
        screen.contains("↻ rerun the 2 tasks that did not complete: 1,4"),
        "{screen}"
    );
    // Submitted, the script asks for exactly those indices, each task logging on its own.
    a.overlays.form.as_mut().expect("open").row = FormState::submit_row();
    let cmds = press(&mut a, KeyCode::Enter);
    let prepared = match cmds.as_slice() {
        [Cmd::Submit { prepared, .. }] => prepared.clone(),
        other => panic!("{other:?}"),
    };
    let s = &prepared.script;
    assert!(s.contains("#SBATCH --array=1,4\n"), "{s}");
    assert!(s.contains("/slurm-logs/%x-%A/main-%a.out"), "{s}");
}

#[test]
fn l_on_an_array_whose_tasks_all_completed_is_a_plain_relaunch() {
    let mut a = app();
    let (_, msg) = rerun_read(true);
    a.update(msg);
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.array, "");
    assert_eq!(form.rerun, None);
    let note = a.note.clone().unwrap_or_default();
    assert!(note.starts_with("relaunch of 799_4"), "{note}");
    assert!(
        note.ends_with("(array 799: all 6 tasks completed: nothing to rerun)"),
        "{note}"
    );
}

#[test]
fn w_saves_the_form_as_a_template_asking_before_it_replaces_one() {
    let mut a = opened();
    goto(&mut a, "gpus");
    press(&mut a, KeyCode::Enter);
    press(&mut a, KeyCode::Backspace);
    typed(&mut a, "2");
    press(&mut a, KeyCode::Enter);
    // `w` asks for the name on the bottom line.
    assert!(press(&mut a, KeyCode::Char('w')).is_empty());
    assert_eq!(
        a.overlays.input.as_ref().map(|i| i.kind),
        Some(crate::app::InputKind::TemplateName)
    );
    // A name that is not one file name is refused, saying why; nothing is written.
    typed(&mut a, "../evil");
    assert!(press(&mut a, KeyCode::Enter).is_empty());
    let err = a
        .overlays
        .form
        .as_ref()
        .and_then(|f| f.error.clone())
        .unwrap_or_default();
    assert!(err.contains("has a `/`"), "{err}");
    // A good one: the dashboard is asked to write the form's values.
    press(&mut a, KeyCode::Char('w'));
    typed(&mut a, "eval-2gpu");
    let cmds = press(&mut a, KeyCode::Enter);
    let spec = match cmds.as_slice() {
        [Cmd::SaveTemplate {
            name,
            spec,
            overwrite: false,
        }] if name == "eval-2gpu" => spec.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(spec.gpus, 2);
    // It exists: the form asks; another key keeps it, `y` replaces it.
    let path = std::path::PathBuf::from("/home/me/.config/slurmdash/templates/eval-2gpu.toml");
    let exists = crate::config::template_files::SaveError::Exists(path.clone());
    a.update(Msg::Launch(LaunchMsg::TemplateSaved {
        name: "eval-2gpu".into(),
        spec: spec.clone(),
        result: Err(exists.clone()),
    }));
    let err = a
        .overlays
        .form
        .as_ref()
        .and_then(|f| f.error.clone())
        .unwrap_or_default();
    assert!(
        err.contains("exists") && err.contains("y overwrites"),
        "{err}"
    );
    assert!(press(&mut a, KeyCode::Char('n')).is_empty());
    assert!(
        a.overlays.form.is_some(),
        "the answer is not taken as a form key"
    );
    a.update(Msg::Launch(LaunchMsg::TemplateSaved {
        name: "eval-2gpu".into(),
        spec: spec.clone(),
        result: Err(exists),
    }));
    assert!(matches!(
        press(&mut a, KeyCode::Char('y')).as_slice(),
        [Cmd::SaveTemplate {
            overwrite: true,
            ..
        }]
    ));
    // Saved: listed among the templates with its file, and picked.
    a.update(Msg::Launch(LaunchMsg::TemplateSaved {
        name: "eval-2gpu".into(),
        spec,
        result: Ok(path),
    }));
    let f = a.overlays.form.as_ref().expect("form");
    assert_eq!(f.choices[f.choice], "eval-2gpu");
    assert_eq!(
        f.origins[f.choice],
        "/home/me/.config/slurmdash/templates/eval-2gpu.toml"
    );
    let screen = render(&a, 110, 42);
    assert!(screen.contains("◀ eval-2gpu ▶"), "{screen}");
    assert!(
        screen.contains("from /home/me/.config/slurmdash/templates/eval-2gpu.toml"),
        "{screen}"
    );
    assert!(
        a.note
            .as_deref()
            .unwrap_or("")
            .contains("--template eval-2gpu"),
        "{:?}",
        a.note
    );
}

#[test]
fn a_template_with_steps_shows_them_and_needs_no_command() {
    let mut a = app();
    let mut steps = a.clusters[0].launch.defaults.clone();
    steps.command.clear();
    steps.template = Some("serve-and-eval".into());
    steps.steps = vec![
        crate::launch::steps::StepSpec {
            name: "model".into(),
            command: "httpd -f -p $SLURMDASH_STEP_MODEL_PORT".into(),
            ready: "http://localhost/".into(),
            port: Some(0),
            ..Default::default()
        },
        crate::launch::steps::StepSpec {
            name: "eval".into(),
            command: "wget -O - http://$SLURMDASH_STEP_MODEL_HOST:18080/".into(),
            ..Default::default()
        },
    ];
    a.clusters[0]
        .launch
        .templates
        .push(("serve-and-eval".into(), steps));
    a.clusters[0].launch.origins.insert(
        "serve-and-eval".into(),
        "/home/me/.config/slurmdash/templates/serve-and-eval.toml".into(),
    );
    a.clusters[0].launch.template_problems = vec![
        "template file /home/me/.config/slurmdash/templates/bad.toml: key `gpu`: unknown field"
            .into(),
    ];
    press(&mut a, KeyCode::Char('n'));
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    if let Some(f) = a.overlays.form.as_mut() {
        f.local_id = "20261123-120000-abcdef".into();
        f.row = 0;
    }
    press(&mut a, KeyCode::Right);
    press(&mut a, KeyCode::Right);
    let f = a.overlays.form.as_ref().expect("form");
    assert_eq!(f.choices[f.choice], "serve-and-eval");
    assert!(f.prepared.is_some(), "{:?}", f.problems);
    let script = &f.prepared.as_ref().expect("prepared").script;
    assert!(
        script.contains("slurmdash_step_http localhost \"$SLURMDASH_STEP_MODEL_PORT\" /"),
        "{script}"
    );
    insta::assert_snapshot!("launch_form_with_steps", render(&a, 110, 42));
    // A step's container on a cluster without Pyxis is refused before anything is staged.
    let f = a.overlays.form.as_mut().expect("form");
    f.spec.steps[0].image = "reg:5000#srv:1".into();
    f.revalidate();
    assert!(
        f.problems
            .iter()
            .any(|p| p.message.contains("steps' containers would fail")),
        "{:?}",
        f.problems
    );
}

/// `:session` opens the form (no GPUs) with the defaults' 24 CPUs per task, more than the
/// 16 of short's nodes: they are fitted to a whole node and the form says so; 24 typed into
/// the field is the user's and is refused as it is.
#[test]
fn a_session_form_fits_its_default_cpus_and_keeps_what_is_typed() {
    let mut a = app();
    a.clusters[0].launch.defaults.cpus_per_task = 24;
    assert_eq!(
        a.run_command("session"),
        vec![Cmd::FetchLaunchFacts, Cmd::FetchReservations]
    );
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    let f = a.overlays.form.as_ref().expect("form");
    assert_eq!(f.spec.cpus_per_task, 16, "{:?}", f.error);
    assert!(
        f.error.as_deref().is_some_and(|e| e.starts_with(
            "CPUs per task: 16, not the default 24 (more than the largest node in short has): a whole node of 16 CPUs and 21G"
        )),
        "{:?}",
        f.error
    );
    assert!(
        !f.problems
            .iter()
            .any(|p| p.field == crate::launch::validate::Field::Cpus),
        "{:?}",
        f.problems
    );
    goto(&mut a, "cpus_per_task");
    press(&mut a, KeyCode::Enter);
    press(&mut a, KeyCode::Backspace);
    press(&mut a, KeyCode::Backspace);
    typed(&mut a, "24");
    press(&mut a, KeyCode::Enter);
    let f = a.overlays.form.as_ref().expect("form");
    assert_eq!(f.spec.cpus_per_task, 24);
    assert!(
        f.problems.iter().any(|p| p
            .message
            .starts_with("24 CPUs per task, but the largest node in short has 16")),
        "{:?}",
        f.problems
    );
}

/// `o` in the form: a path on the bottom line, read by the local worker; the form becomes
/// a launch of the script, its `#SBATCH` options in the fields, and says what it did.
#[test]
fn o_fills_the_form_from_your_own_script_and_says_what_it_read() {
    let mut a = opened();
    assert!(press(&mut a, KeyCode::Char('o')).is_empty());
    typed(&mut a, "~/jobs/train.sbatch");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![Cmd::ReadScript("~/jobs/train.sbatch".into())]
    );
    let script = "#!/bin/bash\n#SBATCH -p polar\n#SBATCH -t 2:00:00\n#SBATCH --gres=gpu:2\n#SBATCH --comment=\"keep # this\"\n#SBATCH --output=/tmp/x-%j.out\npython train.py\n";
    a.update(Msg::Launch(LaunchMsg::ScriptRead {
        path: "~/jobs/train.sbatch".into(),
        result: Ok(script.as_bytes().to_vec()),
    }));
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.name, "train");
    assert_eq!(form.spec.partition, "polar");
    assert_eq!(form.spec.batch_script, script);
    assert!(form.problems.is_empty(), "{:?}", form.problems);
    let screen = render(&a, 110, 46);
    for want in [
        "from train.sbatch: runs as the batch step",
        "read into the fields: -p polar -t 2:00:00 --gres=gpu:2",
        "passed to Slurm unchanged: --comment=\"keep # this\"",
        "left out: --output=/tmp/x-%j.out",
    ] {
        assert!(screen.contains(want), "no `{want}` in\n{screen}");
    }
    insta::assert_snapshot!("launch_form_from_a_script", screen);
    // A file that cannot be read leaves the form as it was and says why.
    let before = a.overlays.form.as_ref().expect("open").spec.clone();
    a.update(Msg::Launch(LaunchMsg::ScriptRead {
        path: "/nope.sh".into(),
        result: Err("/nope.sh: No such file or directory (os error 2)".into()),
    }));
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec, before);
    assert!(
        form.error
            .as_deref()
            .is_some_and(|e| e.contains("script not read: /nope.sh: No such file")),
        "{:?}",
        form.error
    );
    // Bytes that are not a script: refused, the form unchanged.
    a.update(Msg::Launch(LaunchMsg::ScriptRead {
        path: "/bin/ls".into(),
        result: Ok(vec![0x7f, b'E', b'L', b'F', 0, 1, 2]),
    }));
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec, before);
    assert!(
        form.error
            .as_deref()
            .is_some_and(|e| e.contains("the form is as it was")),
        "{:?}",
        form.error
    );
}

/// Issue 39: the form warns when its time limit runs into a maintenance window on its
/// partition's nodes, and says what would start at once there, as the fields change.
#[test]
fn the_form_warns_of_maintenance_and_says_what_starts_now() {
    let mut a = app();
    assert_eq!(
        press(&mut a, KeyCode::Char('n')),
        vec![Cmd::FetchLaunchFacts, Cmd::FetchReservations],
        "the reservations were never read: the form asks for them"
    );
    let mut f = facts();
    for n in &mut f.nodes {
        n.state = "mixed".into();
        n.cpus_idle = 12;
        n.mem_alloc_mb = 4096;
        n.gpus_used = 3;
    }
    a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(f))));
    let now = a.now;
    let text = format!(
        "ReservationName=maint StartTime={} EndTime={} Duration=02:00:00\n   Nodes=n1 NodeCnt=1 CoreCnt=16 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES\n   TRES=cpu=16\n   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a\n   MaxStartDelay=(null)\n",
        (now + chrono::Duration::minutes(90)).format("%Y-%m-%dT%H:%M:%S"),
        (now + chrono::Duration::minutes(210)).format("%Y-%m-%dT%H:%M:%S"),
    );
    let items = crate::slurm::reservation::parse_reservations(&text).expect("reservation");
    a.update(Msg::Insight(InsightMsg::Reservations {
        result: Box::new(Ok(crate::slurm::reservation::Reservations { now, items })),
        at: now,
    }));
    if let Some(f) = a.overlays.form.as_mut() {
        f.local_id = "20261123-120000-abcdef".into();
    }
    // On short (30 min MaxTime) a 10 minute job ends well before the window.
    let o = &a.overlays.form.as_ref().expect("form").outlook;
    assert_eq!(o.maintenance, None);
    assert_eq!(
        o.starts_now,
        Some((
            "up to 5 GPUs for up to 30m (MaxTime) start now on short; yours fits".to_string(),
            true
        ))
    );
    // polar, 4 hours: into the window; typed, not yet entered, already says so.
    goto(&mut a, "partition");
    if let Some(f) = a.overlays.form.as_mut() {
        f.spec.partition = "polar".into();
        f.revalidate();
    }
    goto(&mut a, "time");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "4h");
    let o = &a.overlays.form.as_ref().expect("form").outlook;
    assert_eq!(
        o.maintenance.as_deref(),
        Some("your 4h limit runs into maintenance 2026-11-23 13:30–15:30 on n1 (in 1h30m); a limit of 1h29m or less starts before it")
    );
    assert_eq!(
        o.starts_now,
        Some((
            "up to 5 GPUs for up to 1h29m (until maintenance 13:30) start now on polar; yours would wait".to_string(),
            false
        ))
    );
    press(&mut a, KeyCode::Enter);
    insta::assert_snapshot!(
        "launch_form_maintenance_and_starts_now",
        render(&a, 110, 42)
    );
    // A limit that ends before it: the warning goes, the request starts now.
    goto(&mut a, "time");
    press(&mut a, KeyCode::Enter);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "60m");
    press(&mut a, KeyCode::Enter);
    let o = &a.overlays.form.as_ref().expect("form").outlook;
    assert_eq!(o.maintenance, None);
    assert!(o.starts_now.as_ref().is_some_and(|s| s.1), "{o:?}");
    // A minute later the window is a minute closer (the clock handed over on the tick).
    a.update(Msg::Tick(now + chrono::Duration::minutes(11)));
    let o = &a.overlays.form.as_ref().expect("form").outlook;
    assert!(
        o.starts_now
            .as_ref()
            .is_some_and(|s| s.0.contains("for up to 1h18m") && s.1),
        "{o:?}"
    );
}

/// `code = snapshot` in the form says what happens to the user's files at submit.
#[test]
fn a_code_snapshot_in_the_form_says_what_is_sent_and_where_it_runs() {
    let mut a = opened();
    goto(&mut a, "code");
    press(&mut a, KeyCode::Enter);
    typed(&mut a, "snapshot");
    press(&mut a, KeyCode::Enter);
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.code, "snapshot");
    assert!(form.problems.is_empty(), "{:?}", form.problems);
    let screen = render(&a, 110, 48);
    for want in [
        "code snapshot         snapshot",
        "code: at submit, the git repository this dashboard was started in",
        "minus .slurmdashignore; at most 100 MB",
    ] {
        assert!(screen.contains(want), "no `{want}` in\n{screen}");
    }
    // A word that is not a mode is refused on the field, the form as it was.
    goto(&mut a, "code");
    press(&mut a, KeyCode::Enter);
    let _ = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "git");
    press(&mut a, KeyCode::Enter);
    let form = a.overlays.form.as_ref().expect("open");
    assert_eq!(form.spec.code, "snapshot");
    assert!(
        form.error
            .as_deref()
            .is_some_and(|e| e.contains("code is `snapshot` or `none`, not `git`")),
        "{:?}",
        form.error
    );
}

/// Submit pressed before the partitions are read goes on by itself once they are: the form
/// says it will, and never asks to be pressed again.
#[test]
fn submit_before_the_partitions_are_read_goes_on_once_they_are() {
    let mut a = app();
    press(&mut a, KeyCode::Char('n'));
    let cmds = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    )));
    assert!(cmds.is_empty(), "{cmds:?}");
    let form = a.overlays.form.as_ref().expect("open");
    assert!(
        form.error
            .as_deref()
            .is_some_and(|e| e.contains("submitting as soon as the cluster's partitions are read")),
        "{:?}",
        form.error
    );
    let cmds = a.update(Msg::Launch(LaunchMsg::LaunchFacts(Ok(facts()))));
    assert!(matches!(cmds.as_slice(), [Cmd::Submit { .. }]), "{cmds:?}");
    assert_eq!(
        a.overlays.form.as_ref().and_then(|f| f.busy.clone()),
        Some(Busy::Submitting)
    );

    // When the read fails, nothing is submitted and the form says so.
    let mut a = app();
    press(&mut a, KeyCode::Char('n'));
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    )));
    let cmds = a.update(Msg::Launch(LaunchMsg::LaunchFacts(Err(
        "sinfo: timed out".into()
    ))));
    assert!(cmds.is_empty(), "{cmds:?}");
    let e = a
        .overlays
        .form
        .as_ref()
        .and_then(|f| f.error.clone())
        .unwrap_or_default();
    assert!(
        e.contains("not submitted: reading partitions: sinfo: timed out"),
        "{e}"
    );
}

/// A relaunch of a launch that ran a code snapshot runs it again: the field reads `same` and
/// the form names the snapshot; `snapshot` there takes the code as it is now.
#[test]
fn a_relaunch_form_runs_the_snapshot_the_job_ran() {
    let mut a = opened();
    let ran = crate::registry::CodeRecord {
        commit: "abc1234def".into(),
        dirty: 3,
        hash: "0f".repeat(32),
        subdir: "src".into(),
    };
    if let Some(f) = a.overlays.form.as_mut() {
        f.spec.code = "snapshot".into();
        f.spec.code_ran = Some(ran);
        crate::launch::relaunch::choose_code(&mut f.spec, None).expect("same");
        f.revalidate();
    }
    let screen = render(&a, 110, 48);
    for want in [
        "code snapshot         same",
        "code: the snapshot the job ran (code abc1234 + 3 changed files), from the",
        "(.code/0f0f0f0f0f0f); nothing is sent",
    ] {
        assert!(screen.contains(want), "no `{want}` in\n{screen}");
    }
    goto(&mut a, "code");
    press(&mut a, KeyCode::Enter);
    let _ = a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    typed(&mut a, "snapshot");
    press(&mut a, KeyCode::Enter);
    let screen = render(&a, 110, 48);
    assert!(
        screen.contains("code: at submit, the git repository this dashboard was started in"),
        "{screen}"
    );
}
