//! The launch form by keystrokes in the real binary, in tmux, against the dev cluster:
//! `n`, test-only, preview, Submit; the new job is selected and its output shows.

use crate::common;

use std::time::Duration;

use common::tmux::Tmux;
use common::*;

/// slurmdash in tmux on the dev cluster, with results in a scratch directory of the test's
/// own, a state directory of its own (its launch registry) and `launch` as the `[launch]`
/// table the form starts from; the dashboard is on screen.
struct Dashboard {
    t: Tmux,
    state: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl Dashboard {
    async fn start(r: &dyn slurmdash::remote::Remote, tag: &str, launch: &str) -> Dashboard {
        let base = scratch(r, tag).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let state = tempfile::tempdir().expect("state");
        let config =
            write_dev_config_with_results(dir.path(), &base, &format!("\n[launch]\n{launch}"));
        let state_dir = state.path().display().to_string();
        let t = Tmux::start_with(&config, &[], &[("SLURMDASH_STATE_DIR", &state_dir)]);
        t.wait("the dashboard", Duration::from_secs(20), |s| {
            s.contains("jobs")
        });
        Dashboard {
            t,
            state,
            _dir: dir,
        }
    }
}

#[tokio::test]
async fn launch_form_by_keystrokes_submits_and_shows_the_job_and_its_log() {
    let r = remote();
    let ui = Dashboard::start(
        &r,
        "launch-tui",
        "name = \"tui-job\"\ngpus = 1\ncpus_per_task = 1\ntime = \"2m\"\ncommand = \"echo tmux-launch-$SLURM_JOB_ID; sleep 2; echo tmux-done\"\n",
    )
    .await;
    let (t, state) = (&ui.t, &ui.state);
    t.keys(&["n"]);
    t.wait(
        "the form with validated values",
        Duration::from_secs(20),
        |s| {
            s.contains("launch a job on dev")
                && s.contains("→ tui-job on dev: 1 node(s) × 1 GPU(s)")
        },
    );
    t.keys(&["t"]);
    // Any answer ends the wait; only an estimate passes.
    let s = t.wait("the test-only answer", Duration::from_secs(30), |s| {
        s.contains("test-only: ")
    });
    assert!(s.contains("test-only: estimated start 20"), "{s}");
    // The estimate names one of partition short's (GPU) nodes.
    assert!(
        gpu_nodes()
            .iter()
            .any(|n| s.contains(&format!("on {n} (partition short)"))),
        "{s}"
    );
    t.keys(&["p"]);
    t.wait("the script preview", Duration::from_secs(5), |s| {
        s.contains("#SBATCH --job-name=tui-job") && s.contains("#SBATCH --requeue")
    });
    t.keys(&["Escape", "k", "k"]);
    t.wait("the Submit row selected", Duration::from_secs(5), |s| {
        s.contains("[ Submit ]")
    });
    t.keys(&["Enter"]);
    let id = t.submitted_job(Duration::from_secs(30));
    let s = t.wait(
        "the job's output in the log pane",
        Duration::from_secs(120),
        |s| s.contains(&format!("tmux-launch-{id}")) && s.contains("tmux-done"),
    );
    assert!(!s.contains("launch a job on dev"), "the form closed:\n{s}");
    let entries = slurmdash::registry::Registry::open(state.path())
        .load()
        .expect("registry");
    assert!(entries.iter().any(|e| e.job_id == id), "{entries:?}");
}

/// The form by keystrokes into a container job on two nodes: the user opens the form, sets
/// nodes, GPUs, the image and the command field by field, submits with ctrl-s, and reads each
/// node's rank in the log pane (main.out), printed inside the container by /bin/sh.
#[tokio::test]
async fn a_container_job_on_two_nodes_launched_from_the_form_prints_each_rank() {
    common::containers::ready();
    let r = remote();
    let ui = Dashboard::start(
        &r,
        "launch-tui-ct",
        "name = \"tui-ct\"\ngpus = 1\ncpus_per_task = 1\ntime = \"3m\"\ncommand = \"true\"\n",
    )
    .await;
    let t = &ui.t;
    t.keys(&["n"]);
    t.wait("the form", Duration::from_secs(20), |s| {
        s.contains("→ tui-ct on dev: 1 node(s) × 1 GPU(s)")
    });
    let command = "echo \"rank=$NODE_RANK of $WORLD_SIZE on $(hostname) $(grep '^ID=' /etc/os-release) shell=$0\"";
    for (key, value) in [
        ("nodes", "2"),
        // GPUs in all, split over the nodes
        ("gpus", "2"),
        ("image", common::containers::TINY_SQSH),
        ("command", command),
    ] {
        // Down to the field's row, as a user does: the selected row is the one marked `›`.
        let label = slurmdash::app::FIELDS
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|(_, label, _)| *label)
            .unwrap_or_else(|| panic!("no form field {key}"));
        let selected = |s: &str| {
            s.lines().any(|l| {
                l.split('›')
                    .nth(1)
                    .is_some_and(|r| r.trim_start().starts_with(label))
            })
        };
        for _ in 0..=slurmdash::app::FIELDS.len() {
            if selected(&t.screen()) {
                break;
            }
            t.keys(&["j"]);
        }
        t.wait(
            &format!("the {label} row selected"),
            Duration::from_secs(5),
            selected,
        );
        t.keys(&["Enter", "C-u"]);
        t.type_text(value);
        t.keys(&["Enter"]);
    }
    t.wait(
        "the form with two nodes and the image",
        Duration::from_secs(20),
        |s| s.contains("→ tui-ct on dev: 2 node(s) × 1 GPU(s)") && s.contains("tiny.sqsh"),
    );
    t.keys(&["C-s"]);
    let id = t.submitted_job(Duration::from_secs(30));
    let rank = |n: u32| format!("rank={n} of 2 on ");
    let s = t.wait(
        "both ranks in the log pane",
        Duration::from_secs(180),
        |s| s.contains(&rank(0)) && s.contains(&rank(1)),
    );
    // Each rank on a node of its own, inside the image (busybox: no bash, /bin/sh).
    let hosts: Vec<&str> = (0..2)
        .map(|n| {
            let line = s
                .lines()
                .find_map(|l| l.split(&rank(n)).nth(1))
                .unwrap_or_else(|| panic!("rank {n} on screen:\n{s}"));
            assert!(
                line.contains("ID=slurmdash-tiny shell=/bin/sh"),
                "rank {n} not in the image under /bin/sh: {line}"
            );
            line.split_whitespace().next().unwrap_or("")
        })
        .collect();
    assert_ne!(hosts[0], hosts[1], "two nodes:\n{s}");
    assert!(
        hosts.iter().all(|h| gpu_nodes().iter().any(|n| n == h)),
        "{hosts:?} are GPU nodes"
    );
    assert_eq!(
        final_state(&r, id, Duration::from_secs(120)).await,
        "COMPLETED"
    );
}
