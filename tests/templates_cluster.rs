//! Templates on the dev cluster, with real containers (Pyxis and Enroot, the registry's
//! busybox image): the shipped multi-step example (examples/templates/serve-and-eval.toml:
//! busybox httpd as the "model", wget as the "harness") picked in the launch form, saved
//! from the form as a template file of its own, and submitted; the harness's result file
//! holds the server's answer. A template file run by `slurmdash submit --template NAME`,
//! whose last step's exit code is the job's; a malformed file beside it is named with its
//! key and does not stop the others.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::containers as ct;
use common::tmux::Tmux;
use common::*;
use slurmdash::launch::LaunchSpec;

const JOB_LIMIT: Duration = Duration::from_secs(240);

/// The shipped example, with the registry this version's nodes reach.
fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/templates/serve-and-eval.toml");
    let text = std::fs::read_to_string(&path).expect("the example template");
    assert!(text.contains("10.220.26.1:5000#team/tiny:1.0"), "{text}");
    text.replace("10.220.26.1:5000", &ct::registry())
}

/// A config like the dev cluster's with its own results root, a state directory and an
/// XDG_CONFIG_HOME of the test's own, whose templates/ holds the example.
struct Setup {
    config: PathBuf,
    xdg: tempfile::TempDir,
    state: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl Setup {
    async fn new(r: &dyn slurmdash::remote::Remote, tag: &str) -> Setup {
        ct::ready();
        let base = scratch(r, tag).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_dev_config_with_results(dir.path(), &base, "");
        let xdg = tempfile::tempdir().expect("xdg");
        std::fs::create_dir_all(xdg.path().join("slurmdash/templates")).expect("templates dir");
        std::fs::write(
            self_templates(xdg.path()).join("serve-and-eval.toml"),
            example(),
        )
        .expect("example");
        Setup {
            config,
            xdg,
            state: tempfile::tempdir().expect("state"),
            _dir: dir,
        }
    }

    fn templates(&self) -> PathBuf {
        self_templates(self.xdg.path())
    }

    /// `slurmdash submit --template NAME` with this setup's config, templates and state.
    fn submit(&self, name: &str) -> std::process::Output {
        slurmdash_env(
            &self.config,
            &["submit", "--template", name],
            &[
                ("XDG_CONFIG_HOME", &self.xdg.path().display().to_string()),
                (
                    "SLURMDASH_STATE_DIR",
                    &self.state.path().display().to_string(),
                ),
            ],
        )
    }
}

fn self_templates(xdg: &Path) -> PathBuf {
    xdg.join("slurmdash/templates")
}

fn job_id(out: &str) -> u64 {
    out.split("Submitted job ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in:\n{out}"))
}

/// The file `name` in the job directory of the launch whose job is `id`.
async fn job_file(r: &dyn slurmdash::remote::Remote, state: &Path, id: u64, name: &str) -> String {
    let entries = slurmdash::registry::Registry::open(state)
        .load()
        .expect("registry");
    let e = entries
        .iter()
        .find(|e| e.job_id == id)
        .unwrap_or_else(|| panic!("job {id} not in the registry: {entries:?}"));
    let out = run(r, &["cat", &format!("{}/{name}", e.job_dir)]).await;
    assert!(
        out.success(),
        "{}/{name}: {}",
        e.job_dir,
        out.stderr_lossy()
    );
    out.stdout_lossy()
}

/// From the form: `n`, the template row, → until the example is picked (its steps and
/// file shown), `w` saves it as `my-eval` (a 0600 file that reads back with its steps),
/// ctrl-s submits; the job completes and the harness wrote the server's answer.
#[tokio::test]
async fn the_serve_and_eval_template_runs_from_the_form_and_saves_as_a_file() {
    let r = remote();
    let s = Setup::new(&r, "tpl-form").await;
    let xdg = s.xdg.path().display().to_string();
    let state = s.state.path().display().to_string();
    let t = Tmux::start_with(
        &s.config,
        &[],
        &[("SLURMDASH_STATE_DIR", &state), ("XDG_CONFIG_HOME", &xdg)],
    );
    t.wait("the dashboard", Duration::from_secs(20), |s| {
        s.contains("jobs")
    });
    t.keys(&["n"]);
    t.wait("the form", Duration::from_secs(20), |s| {
        s.contains("launch a job on dev") && s.contains("→ ")
    });
    // Up to the template row, then → through the choices (defaults, the example).
    t.keys(&["k"]);
    let picked = |s: &str| s.contains("◀ serve-and-eval ▶");
    for _ in 0..4 {
        if picked(&t.screen()) {
            break;
        }
        t.keys(&["Right"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    let screen = t.wait(
        "the example picked and validated",
        Duration::from_secs(20),
        |s| picked(s) && s.contains("→ serve-and-eval on dev"),
    );
    assert!(
        screen.contains("steps, in order: model (") && screen.contains(" eval ("),
        "{screen}"
    );
    assert!(
        screen.contains("serve-and-eval.toml"),
        "its file:\n{screen}"
    );

    // Saved from the form as a template file of its own.
    t.keys(&["w", "C-u"]);
    t.type_text("my-eval");
    t.keys(&["Enter"]);
    t.wait("the template saved", Duration::from_secs(10), |s| {
        s.contains("◀ my-eval ▶")
    });
    let saved = s.templates().join("my-eval.toml");
    let meta = std::fs::metadata(&saved).expect("the saved template");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let back: LaunchSpec =
        toml::from_str(&std::fs::read_to_string(&saved).expect("read")).expect("parses");
    assert_eq!(back.steps.len(), 2, "{back:?}");
    assert_eq!(back.name, "serve-and-eval");

    t.keys(&["C-s"]);
    let id = t.submitted_job(Duration::from_secs(60));
    assert_eq!(final_state(&r, id, JOB_LIMIT).await, "COMPLETED");
    assert_eq!(
        job_file(&r, s.state.path(), id, "result.txt").await,
        "the answer is 42\n"
    );
}

/// `submit --template NAME` of template files: one whose harness reads a token of its own
/// from the server (completed, the token in result.txt), one whose last step exits 3 (the
/// job's exit code is 3 and the server was stopped); a malformed file beside them is named
/// with its key and `submit --template` of it says so.
#[tokio::test]
async fn submit_template_runs_a_template_file_and_ends_with_the_last_steps_code() {
    let r = remote();
    let s = Setup::new(&r, "tpl-cli").await;
    let token = format!("token-{}", tmux::rand_suffix());
    let mut spec: LaunchSpec = toml::from_str(&example()).expect("example");
    spec.steps[0].command = spec.steps[0].command.replace("the answer is 42", &token);
    slurmdash::config::template_files::save(&s.templates(), "cli-eval", &spec, false)
        .expect("saved");
    let mut failing = spec.clone();
    failing.steps[1].command.push_str("; exit 3");
    slurmdash::config::template_files::save(&s.templates(), "cli-fail", &failing, false)
        .expect("saved");
    std::fs::write(s.templates().join("broken.toml"), "gpus = \"two\"\n").expect("bad file");

    let bad = s.submit("broken");
    let err = text(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        err.contains("broken.toml") && err.contains("key `gpus`"),
        "{err}"
    );

    let ok = s.submit("cli-eval");
    let out = format!("{}{}", text(&ok.stdout), text(&ok.stderr));
    assert!(ok.status.success(), "{out}");
    let id = job_id(&out);
    let fail = s.submit("cli-fail");
    let out = format!("{}{}", text(&fail.stdout), text(&fail.stderr));
    assert!(fail.status.success(), "{out}");
    let fail_id = job_id(&out);

    assert_eq!(final_state(&r, id, JOB_LIMIT).await, "COMPLETED");
    assert_eq!(
        job_file(&r, s.state.path(), id, "result.txt").await,
        format!("{token}\n")
    );
    assert_eq!(final_state(&r, fail_id, JOB_LIMIT).await, "FAILED");
    let code = run(
        &r,
        &[
            "sacct",
            "-j",
            &fail_id.to_string(),
            "-X",
            "-n",
            "-P",
            "-o",
            "ExitCode",
        ],
    )
    .await
    .stdout_lossy();
    assert_eq!(code.trim(), "3:0", "the last step's exit code");
    let err = job_file(
        &r,
        s.state.path(),
        fail_id,
        &format!("slurm-logs/serve-and-eval-{fail_id}/main.err"),
    )
    .await;
    assert!(
        err.contains("slurmdash: step model is ready")
            && err.contains("step eval (the last) ended with exit code 3; stopping the others"),
        "{err}"
    );
}
