//! A cluster shared with other people, on the dev cluster over real SSH: another user
//! (`sdother`) or anything else that can write where slurmdash stages a launch never gets
//! its own script run as you. A job directory under a directory others can write is
//! refused (with the directory and the fix) until that directory has the sticky bit; a
//! script replaced between staging and submission is not submitted, and what sbatch runs
//! is byte for byte what was staged; staging never writes through a planted link nor over
//! a file of someone else.

use crate::common;

use common::launch::LaunchSetup;
use common::*;
use slurmdash::io::stage;
use slurmdash::launch::script::sha256_hex;
use slurmdash::registry::Layout;
use slurmdash::remote::Remote;

fn tag(what: &str) -> String {
    format!("{what}{}", std::process::id() % 100_000)
}

/// `slurmdash submit` of a one-CPU job named `name` running `true`.
fn submit(s: &LaunchSetup, name: &str) -> std::process::Output {
    let name = format!("name={name}");
    let mut c = s.submit_command();
    for kv in [
        name.as_str(),
        "gpus=0",
        "cpus_per_task=1",
        "mem=20M",
        "time=1m",
        "requeue=false",
    ] {
        c.arg("--set").arg(kv);
    }
    c.args(["--", "true"]).output().expect("slurmdash submit")
}

async fn queued_named(r: &dyn Remote, name: &str) -> String {
    run(
        r,
        &[
            "squeue",
            "--me",
            "--noheader",
            "--name",
            name,
            "--format=%i",
        ],
    )
    .await
    .stdout_lossy()
    .trim()
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_dir_under_a_directory_others_can_write_is_refused_until_it_is_sticky() {
    let r = remote();
    let base = scratch(&r, "open").await;
    assert!(run(&r, &["chmod", "0777", &base]).await.success());
    let s = LaunchSetup::under(base.clone());
    let name = tag("open");

    let out = submit(&s, &name);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "submitted under a 0777 directory");
    assert!(
        err.contains(&format!(
            "{base} is writable by its group or others without the sticky bit (mode 777)"
        )),
        "{err}"
    );
    assert!(
        err.contains("another user could replace the script") && err.contains("chmod +t"),
        "{err}"
    );
    assert_eq!(queued_named(&r, &name).await, "", "nothing was queued");
    let left = run(&r, &["ls", "-A", &s.root]).await.stdout_lossy();
    assert_eq!(left.trim(), "", "the refused job directory was removed");

    // doctor says the same before anything is launched.
    let doc = slurmdash_with(&s.config, &["doctor"]);
    let said = text(&doc.stdout);
    assert!(!doc.status.success(), "{said}");
    assert!(
        said.contains("[FAIL] results root")
            && said.contains(&format!("{base} is writable by its group or others")),
        "{said}"
    );
    assert!(
        said.contains("-> `chmod +t` or `chmod go-w` each directory named"),
        "the refusal names the fix: {said}"
    );
    assert!(
        said.contains("[ok]   job directories: mode 0700"),
        "the default job_dir_mode passes: {said}"
    );

    // A job_dir_mode that lets the group write each job directory: doctor refuses it too,
    // with the fix.
    let dir = tempfile::tempdir().expect("tempdir");
    let group_writable = dir.path().join("slurmdash.toml");
    let config = std::fs::read_to_string(&s.config).expect("read config");
    std::fs::write(
        &group_writable,
        format!("{config}\n\n[launch]\njob_dir_mode = \"0770\"\n"),
    )
    .expect("write config");
    let doc = slurmdash_with(&group_writable, &["doctor"]);
    let said = text(&doc.stdout);
    assert!(!doc.status.success(), "{said}");
    assert!(
        said.contains(
            "[FAIL] job directories: job_dir_mode `0770` lets other users write the job directory"
        ),
        "{said}"
    );
    assert!(
        said.contains("-> set [launch] job_dir_mode = \"0700\" (or \"0750\") in the config"),
        "the refusal names the fix: {said}"
    );

    // The sticky bit keeps others from replacing what is yours: then it launches.
    assert!(run(&r, &["chmod", "1777", &base]).await.success());
    let out = submit(&s, &name);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let id = printed_job_id(&text(&out.stdout));
    assert_eq!(
        final_state(&r, id, std::time::Duration::from_secs(120)).await,
        "COMPLETED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_results_root_inside_another_users_directory_is_refused() {
    let r = remote();
    let other = remote_as(OTHER_ALIAS);
    let base = scratch_of(&other, OTHER_USER, "lent").await;
    // The other user lends a directory everyone may write.
    assert!(run(&other, &["chmod", "0777", &base]).await.success());
    let s = LaunchSetup::under(base.clone());
    let name = tag("lent");
    let out = submit(&s, &name);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "submitted into {base}");
    assert!(
        err.contains(&format!("{base} is owned by {OTHER_USER}")),
        "{err}"
    );
    assert_eq!(queued_named(&r, &name).await, "");
    run(&r, &["rmdir", &s.root]).await;
    run(&other, &["rm", "-rf", &base]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_replaced_after_staging_is_not_submitted_and_sbatch_runs_the_staged_bytes() {
    let r = remote();
    let base = scratch(&r, "swap").await;
    let name = tag("swap");
    let l = Layout::new(&format!("{base}/results"), &name);
    stage::make_dirs(&r, &l, 0o700, T).await.expect("job dir");
    let script = format!(
        "#!/bin/sh\n#SBATCH --job-name={name}\n#SBATCH --time=1\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=20M\n#SBATCH --output=/dev/null\necho as launched\n"
    );
    let sum = sha256_hex(script.as_bytes());
    stage::write_file(&r, &l.script_path(), script.as_bytes(), T)
        .await
        .expect("staged");

    // Replaced between staging and submission: refused, nothing queued.
    let swap = run(
        &r,
        &[
            "sh",
            "-c",
            "printf '#!/bin/sh\\necho not what you launched\\n' > \"$1\"",
            "sh",
            &l.script_path(),
        ],
    )
    .await;
    assert!(swap.success());
    let err = stage::submit_held(&r, &l, &name, &[], &sum, T)
        .await
        .expect_err("a replaced script was submitted");
    assert!(
        matches!(&err, slurmdash::launch::stage::SubmitError::Refused(m) if m.contains("edited the staged script")),
        "{err}"
    );
    assert_eq!(queued_named(&r, &name).await, "");
    // Without a checksum to check against (a launch an older slurmdash recorded), nothing is
    // submitted either.
    let err = stage::submit_held(&r, &l, &name, &[], "", T)
        .await
        .expect_err("submitted with no checksum to check");
    assert!(
        matches!(&err, slurmdash::launch::stage::SubmitError::Refused(m) if m.contains("no sha256 of") && m.contains("was recorded at launch: not submitted")),
        "{err}"
    );
    assert_eq!(queued_named(&r, &name).await, "");

    // The script as staged goes; Slurm holds exactly those bytes.
    let put_back = run(
        &r,
        &[
            "sh",
            "-c",
            "printf '%s' \"$2\" > \"$1\"",
            "sh",
            &l.script_path(),
            &script,
        ],
    )
    .await;
    assert!(put_back.success());
    let q = stage::submit_held(&r, &l, &name, &[], &sum, T)
        .await
        .expect("submitted");
    assert_eq!(q.checksum, sum);
    let held = run(
        &r,
        &[
            "scontrol",
            "write",
            "batch_script",
            &q.job_id.to_string(),
            "-",
        ],
    )
    .await;
    assert!(held.success(), "{}", held.stderr_lossy());
    assert_eq!(held.stdout_lossy(), script);
    run(&r, &["scancel", &q.job_id.to_string()]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn staging_never_writes_through_a_planted_link_or_over_another_users_file() {
    let r = remote();
    let other = remote_as(OTHER_ALIAS);
    let base = scratch(&r, "link").await;
    // A directory others may add to (sticky, as /tmp): links, and a file of someone else.
    let plant = run(
        &r,
        &[
            "sh",
            "-c",
            "cd \"$1\" && chmod 1777 . && printf precious > victim && ln -s victim link && ln -s nowhere dangling",
            "sh",
            &base,
        ],
    )
    .await;
    assert!(plant.success(), "{}", plant.stderr_lossy());
    let theirs = format!("{base}/theirs");
    let planted = run(
        &other,
        &["sh", "-c", "printf 'not yours' > \"$1\"", "sh", &theirs],
    )
    .await;
    assert!(planted.success(), "{}", planted.stderr_lossy());
    for (name, said) in [
        ("link", "is a symbolic link"),
        ("dangling", "is a symbolic link"),
        ("theirs", "is not a file of yours"),
    ] {
        let path = format!("{base}/{name}");
        let err = stage::write_file(&r, &path, b"evil", T)
            .await
            .expect_err("wrote through");
        assert!(err.contains(said), "{name}: {err}");
    }
    let cat = |f: &str| {
        let p = format!("{base}/{f}");
        let r = &r;
        async move { run(r, &["cat", &p]).await.stdout_lossy() }
    };
    assert_eq!(cat("victim").await, "precious");
    assert_eq!(cat("theirs").await, "not yours");
    let nowhere = run(&r, &["test", "-e", &format!("{base}/nowhere")]).await;
    assert!(!nowhere.success(), "the dangling link's target was created");

    // A file of yours is replaced whole, mode 600, and nothing temporary stays.
    let mine = format!("{base}/mine");
    stage::write_file(&r, &mine, b"one", T)
        .await
        .expect("write");
    stage::write_file(&r, &mine, b"two", T)
        .await
        .expect("rewrite");
    assert_eq!(cat("mine").await, "two");
    let mode = run(&r, &["stat", "-c", "%a", &mine]).await.stdout_lossy();
    assert_eq!(mode.trim(), "600");
    let ls = run(&r, &["ls", "-A", &base]).await.stdout_lossy();
    assert_eq!(
        ls.split_whitespace().collect::<Vec<_>>(),
        ["dangling", "link", "mine", "theirs", "victim"],
        "no temporary file left"
    );
    run(&other, &["rm", "-f", &theirs]).await;
}

/// `L` takes the command, environment and image from `specs/launch.json`, which the job can
/// rewrite: the laptop keeps the sha256 of the spec as staged, and the spec `L` reads has
/// that hash until something changes the file.
#[tokio::test(flavor = "multi_thread")]
async fn the_spec_relaunch_reads_has_the_hash_recorded_at_launch_until_it_is_rewritten() {
    let r = remote();
    let s = LaunchSetup::new("spec").await;
    let name = tag("spec");
    let out = submit(&s, &name);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let id = printed_job_id(&text(&out.stdout));
    let entry = s.registry().load().expect("registry").remove(0);
    let launched = entry.spec_sha256.clone().expect("spec hash recorded");
    let job = slurmdash::slurm::model::JobId::new(id);
    let read = slurmdash::io::history::relaunch(&r, &job, &entry.job_dir, T)
        .await
        .expect("relaunch reads the spec");
    assert_eq!(read.spec_sha256, launched, "the spec as staged");
    assert_eq!(read.spec.command, "true");

    // What a job could do to its own spec: another command.
    let spec = format!("{}/specs/launch.json", entry.job_dir);
    let edit = run(
        &r,
        &[
            "sed",
            "-i",
            "s/\"command\":\"true\"/\"command\":\"id\"/",
            &spec,
        ],
    )
    .await;
    assert!(edit.success(), "{}", edit.stderr_lossy());
    let read = slurmdash::io::history::relaunch(&r, &job, &entry.job_dir, T)
        .await
        .expect("relaunch reads the spec");
    assert_eq!(read.spec.command, "id", "the file was rewritten");
    assert_ne!(read.spec_sha256, launched);
}

/// `L` on another user's finished job, in the second test user's dashboard (`--all`, as an
/// operator would look at everyone's jobs): the form says whose job it is and that its
/// script would run as you; the first Submit only asks again and queues nothing; the second
/// submits it, as you. (Not launched by slurmdash and not the user's own, the job's batch
/// script cannot be read: the user types the command.)
#[tokio::test(flavor = "multi_thread")]
async fn relaunching_another_users_job_says_whose_it_is_and_asks_twice() {
    use common::tmux::{non_blank, refreshed, row, Tmux};
    use std::time::Duration;
    let r = remote();
    let other = remote_as(OTHER_ALIAS);
    let name = tag("fgn");
    let id = sbatch(
        &r,
        &[
            "-J",
            &name,
            "-c",
            "1",
            "--mem=50M",
            "-t",
            "2",
            "--chdir",
            "/tmp",
            "--wrap",
            "sleep 8",
        ],
    )
    .await;
    let state = tempfile::tempdir().expect("state");
    let state_dir = state.path().display().to_string();
    let t = Tmux::start_with(
        &dev_config_other(),
        &["--all"],
        &[("SLURMDASH_STATE_DIR", &state_dir)],
    );
    t.wait("the first refresh", Duration::from_secs(60), refreshed);
    t.filter(&name, Duration::from_secs(60));
    t.wait("sduser's job ended", Duration::from_secs(120), |s| {
        row(s, id).is_some_and(|r| r.contains("COMPLETED"))
    });
    // `L` asks sacct; until it has the ended job, press it again. The form and its note
    // come in one frame, written in pieces: tmux can show the form's top over the old
    // screen, so the form counts as open once the note (the last line) shows too.
    let form = t.press_until(
        &["L"],
        "the relaunch form",
        Duration::from_secs(8),
        Duration::from_secs(90),
        |s| {
            s.contains("launch a job on dev")
                && s.contains(&format!("relaunch of {id} (not launched by slurmdash"))
        },
        |_, _| {},
    );
    assert!(
        form.contains(&format!(
            "job {id} is sduser's, not yours: its script would run as {OTHER_USER}"
        )),
        "{}",
        non_blank(&form)
    );
    // The command row, edited (found by its label: fields come and go above it).
    t.press_until(
        &["Down"],
        "the command row selected",
        Duration::from_millis(300),
        Duration::from_secs(20),
        |s| s.contains("› command "),
        |_, _| {},
    );
    t.keys(&["Enter"]);
    t.type_text("echo relaunched-by-other");
    t.keys(&["Enter"]);
    t.wait("the command set", Duration::from_secs(10), |s| {
        s.contains("› command               echo relaunched-by-other")
    });
    t.keys(&["C-s"]);
    t.wait("the form asking again", Duration::from_secs(10), |s| {
        s.contains(&format!(
            "sduser's script would run as {OTHER_USER}: enter on Submit again"
        ))
    });
    std::thread::sleep(Duration::from_secs(3));
    let mine = run(
        &other,
        &[
            "sacct",
            "-X",
            "-n",
            "-P",
            "--name",
            &name,
            "-o",
            "jobid,user",
        ],
    )
    .await
    .stdout_lossy();
    assert!(
        !mine.contains(OTHER_USER),
        "the first Submit queued a job: {mine}"
    );
    t.keys(&["C-s"]);
    let new = t.submitted_job(Duration::from_secs(30));
    let user = wait_for(
        "the relaunch in accounting",
        Duration::from_secs(60),
        || async {
            let out = run(
                &other,
                &[
                    "sacct",
                    "-X",
                    "-n",
                    "-P",
                    "-j",
                    &new.to_string(),
                    "-o",
                    "user",
                ],
            )
            .await
            .stdout_lossy();
            let u = out.trim().to_string();
            (!u.is_empty()).then_some(u)
        },
    )
    .await;
    assert_eq!(user, OTHER_USER, "job {new} ran as {user}");
}
