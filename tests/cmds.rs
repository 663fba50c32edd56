//! The user's own commands (`[[commands]]`, issue 41) in the real binary, in a real terminal
//! (tmux), against the dev cluster with the default settings (the RPC budget on): a `login`
//! command on a key shows `scontrol show job`'s JobId line of the selected running job in its
//! pane; a `node` command runs inside the job, on its first node (srun's SLURMD_NODENAME and
//! SLURM_JOB_ID); a prompt's answer with `;` and spaces arrives as one argument and nothing else
//! runs; a `confirm` command asks first and does nothing on "no"; a job in another state says
//! why nothing ran; `:commands` lists them; the command log shows what ran, as "your key"; a
//! `pager` command's output opens in `less` and the dashboard comes back after it.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::tmux::*;
use common::*;

/// The default dev config with the commands of this test after it.
fn config(tag: &str, pwned: &str) -> PathBuf {
    let base = std::fs::read_to_string(dev_config_default()).expect("dev config");
    let commands = format!(
        r#"
[[commands]]
key = "J"
name = "show job"
states = ["RUNNING"]
command = "scontrol show job {{job_id}}"

[[commands]]
key = "H"
name = "where am I"
where = "node"
states = ["RUNNING"]
command = "printenv SLURMD_NODENAME SLURM_JOB_ID"

[[commands]]
key = "P"
name = "echo back"
command = "printf '<%s>\n' {{text}} {{job_id}}"
prompts = [{{ name = "text", default = "x" }}]

[[commands]]
key = "K"
name = "cancel it"
confirm = true
command = "scancel {{job_id}}"

[[commands]]
key = "B"
name = "job in pager"
pager = true
command = "scontrol show job {{job_id}}"

[[commands]]
key = "W"
name = "pending only"
states = ["PENDING"]
command = "touch {pwned}.pending"
"#
    );
    let dest = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cmds-{}-{tag}.toml", dev_slurm()));
    std::fs::write(&dest, format!("{base}{commands}")).expect("write the config");
    dest
}

#[tokio::test(flavor = "multi_thread")]
async fn own_commands_run_on_the_login_node_inside_the_job_and_ask_first() {
    let r = remote();
    let tag = format!("uc{}", rand_suffix() % 100_000);
    let pwned = format!("/tmp/slurmdash-pwned-{tag}");
    let id = sbatch(
        &r,
        &[
            "-J",
            &tag,
            "-c",
            "1",
            "-t",
            "5",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 300",
        ],
    )
    .await;
    wait_job_running(&r, id, "the job to run", Duration::from_secs(60)).await;
    let node = job_nodes(&r, id).await;
    let first = node.trim().to_string();

    let t = Tmux::start_with(&config(&tag, &pwned), &[], &[("PAGER", "less")]);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.keys(&["/"]);
    t.type_text(&tag);
    t.keys(&["Enter"]);
    t.wait("the job alone", Duration::from_secs(30), |s| {
        row(s, id).is_some()
    });

    // J: `scontrol show job ID` on the login node; the pane shows its JobId line.
    t.keys(&["J"]);
    let s = t.wait("scontrol's output", Duration::from_secs(30), |s| {
        s.contains(&format!("JobId={id} ")) && s.contains("exit 0")
    });
    assert!(s.contains(&format!("$ scontrol show job {id}")), "{s}");
    assert!(s.contains("J show job · on login"), "{s}");
    t.keys(&["Escape"]);

    // H: inside the job, on its first node.
    t.keys(&["H"]);
    let s = t.wait("srun's output", Duration::from_secs(45), |s| {
        s.contains("H where am I") && (s.contains("exit ") || s.contains("did not run"))
    });
    eprintln!(
        "the node command on Slurm {}:\n{}",
        dev_slurm(),
        non_blank(&s)
    );
    assert!(s.contains("exit 0"), "{s}");
    assert!(
        s.contains(&format!("on {first}")) && s.lines().any(|l| l.contains(&format!("│{first} "))),
        "not on {first}: {s}"
    );
    assert!(
        s.lines().any(|l| l.contains(&format!("│{id} "))),
        "SLURM_JOB_ID is not {id}: {s}"
    );
    t.keys(&["Escape"]);

    // P: the prompt's answer, hostile, arrives as one argument; nothing else runs.
    t.keys(&["P"]);
    t.wait("the prompt", Duration::from_secs(10), |s| {
        s.contains("text: x") && s.contains("for P \"echo back\" on job")
    });
    t.keys(&["C-u"]);
    let hostile = format!("a b; touch {pwned}");
    t.type_text(&hostile);
    t.keys(&["Enter"]);
    let s = t.wait("printf's output", Duration::from_secs(30), |s| {
        s.contains("P echo back") && s.contains("exit 0")
    });
    assert!(s.contains(&format!("<{hostile}>")), "{s}");
    assert!(s.contains(&format!("<{id}>")), "{s}");
    let there = run(&r, &["test", "-e", &pwned]).await;
    assert!(
        !there.success(),
        "{pwned} was created: the answer ran as a command"
    );
    t.keys(&["Escape"]);

    // W applies to pending jobs only: the note says why nothing ran.
    t.keys(&["W"]);
    t.wait("the note", Duration::from_secs(10), |s| {
        s.contains(&format!(
            "is for PENDING jobs: job {id} is RUNNING, nothing ran"
        ))
    });

    // K asks first; "n" leaves the job running.
    t.keys(&["K"]);
    t.wait("the question", Duration::from_secs(10), |s| {
        s.contains(&format!("run K \"cancel it\" on login: `scancel {id}`?"))
    });
    t.keys(&["n"]);
    t.wait("nothing changed", Duration::from_secs(10), |s| {
        s.contains("nothing changed")
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let state = run(&r, &["squeue", "-h", "-o", "%T", "-j", &id.to_string()]).await;
    assert_eq!(state.stdout_lossy().trim(), "RUNNING");

    // :commands lists them with where they run.
    t.keys(&[":"]);
    t.type_text("commands");
    t.keys(&["Enter"]);
    let s = t.wait("the list", Duration::from_secs(10), |s| {
        s.contains("your commands ([[commands]]")
    });
    assert!(
        s.lines()
            .any(|l| l.contains("H") && l.contains("where am I") && l.contains("node")),
        "{s}"
    );
    t.keys(&["Escape"]);

    // The command log shows what ran, as the user's key.
    t.keys(&["@"]);
    t.wait(
        "scontrol in the command log",
        Duration::from_secs(10),
        |s| {
            s.lines().any(|l| {
                l.contains("your key")
                    && l.contains("scontrol show job")
                    && l.contains(&id.to_string())
            }) && s
                .lines()
                .any(|l| l.contains("your key") && l.contains("srun --overlap"))
        },
    );
    t.keys(&["Escape"]);

    // B: the output in $PAGER (less) over the whole terminal; q gives the dashboard back,
    // and the file it read is gone.
    t.keys(&["B"]);
    let s = t.wait("less with the output", Duration::from_secs(30), |s| {
        s.contains(&format!(
            "# job in pager (login): scontrol show job {id} · exit 0"
        ))
    });
    assert!(s.contains(&format!("JobId={id} ")), "{s}");
    assert!(!s.contains("your commands"), "{s}");
    let paged: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .expect("temp dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read_to_string(p)
                .is_ok_and(|t| t.contains(&format!("scontrol show job {id} · exit 0")))
        })
        .collect();
    assert_eq!(paged.len(), 1, "the file less shows: {paged:?}");
    t.keys(&["q"]);
    t.wait("the dashboard again", Duration::from_secs(10), |s| {
        s.contains("back from $PAGER")
    });
    assert!(!paged[0].exists(), "{} is left", paged[0].display());

    // K again, "y": it runs, and the job is cancelled.
    t.keys(&["K"]);
    t.wait("the question", Duration::from_secs(10), |s| {
        s.contains("cancel it")
    });
    t.keys(&["y"]);
    t.wait("scancel's output", Duration::from_secs(30), |s| {
        s.contains("K cancel it") && s.contains("exit 0")
    });
    let end = final_state(&r, id, Duration::from_secs(60)).await;
    assert!(end.starts_with("CANCELLED"), "job {id} is {end}");
    let there = run(&r, &["test", "-e", &format!("{pwned}.pending")]).await;
    assert!(!there.success(), "the pending-only command ran");

    t.keys(&["Escape", "q"]);
    let s = t.wait("slurmdash to exit", Duration::from_secs(10), |s| {
        s.contains("EXITED:")
    });
    assert!(s.contains("EXITED:0"), "{s}");
}
