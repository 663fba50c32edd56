//! The code you launched, on the dev cluster (issue 40): `slurmdash submit --code snapshot`
//! run from a sub-directory of a git repository on this machine with a committed file
//! changed but not committed, an untracked file and a big file `.slurmdashignore` leaves out
//! (bigger than `code_max_mb`). The job runs in `<job_dir>/code/<sub-directory>` and sees
//! the uncommitted content and the untracked file, not the ignored one; a second launch of
//! the same content uploads nothing (submit says it reused `.code/<hash>`, whose inode stays
//! the same and whose mtime marks the use) and removes a snapshot unused for longer than
//! `KEEP_DAYS`; the registry records the commit and the dirty count.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::launch::LaunchSetup;
use common::*;

const RUNS: Duration = Duration::from_secs(180);

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// The repository: `src/train.py` committed as v1 and changed to v2 on disk, `src/notes.txt`
/// untracked, `src/big.ckpt` (3 MB) left out by `.slurmdashignore`, and a long path.
fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path();
    git(p, &["init", "-q"]);
    std::fs::create_dir_all(p.join("src")).expect("mkdir");
    std::fs::write(p.join("src/train.py"), "print('v1 committed')\n").expect("write");
    std::fs::write(
        p.join(".slurmdashignore"),
        "# checkpoints stay home\n*.ckpt\n",
    )
    .expect("write");
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "first"]);
    std::fs::write(p.join("src/train.py"), "print('v2 uncommitted')\n").expect("write");
    std::fs::write(p.join("src/notes.txt"), "untracked notes\n").expect("write");
    std::fs::write(p.join("src/big.ckpt"), vec![7u8; 3 * 1024 * 1024]).expect("write");
    d
}

fn submit(setup: &LaunchSetup, dir: &Path, name: &str) -> (serde_json::Value, String) {
    let name_set = format!("name={name}");
    let out = setup
        .submit_command()
        .current_dir(dir)
        .args(["--code", "snapshot", "--json", "--set", "code_max_mb=1"])
        .args(["--set", "partition=cpu", "--set", "gpus=0", "--set", "cpus_per_task=1"])
        .args(["--set", "time=5m", "--set", "mem=50M", "--set", &name_set, "--"])
        .args([
            "sh",
            "-c",
            "echo cwd=$(pwd); cat train.py notes.txt; ls; test -e big.ckpt && echo BIG-HERE || echo no-big",
        ])
        .output()
        .expect("run slurmdash submit");
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (v, stderr)
}

async fn main_out(r: &dyn slurmdash::remote::Remote, v: &serde_json::Value, name: &str) -> String {
    let id = v["job_id"].as_u64().expect("job_id");
    let job_dir = v["job_dir"].as_str().expect("job_dir");
    let state = final_state(r, id, RUNS).await;
    let logs = format!("{job_dir}/slurm-logs/{name}-{id}");
    if !state.starts_with("COMPLETED") {
        let err = run(r, &["cat", &format!("{logs}/main.err")]).await;
        panic!("job {id} ended {state}; main.err:\n{}", err.stdout_lossy());
    }
    cat(r, &format!("{logs}/main.out")).await
}

/// `path`'s inode and mtime (seconds).
async fn inode_and_mtime(r: &dyn slurmdash::remote::Remote, path: &str) -> (u64, u64) {
    let out = run(r, &["stat", "-c", "%i %Y", path]).await.stdout_lossy();
    let mut f = out
        .split_whitespace()
        .map(|x| x.parse::<u64>().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_job_runs_the_code_on_disk_and_the_same_content_is_uploaded_once() {
    let r = remote();
    let setup = LaunchSetup::new("code-snapshot").await;
    let repo = repo();
    let name = format!("sdcode{}", std::process::id() % 100000);

    let (v, stderr) = submit(&setup, &repo.path().join("src"), &name);
    let id = v["job_id"].as_u64().unwrap_or_else(|| panic!("{v}"));
    let _cancel = CancelOnDrop(id);
    let job_dir = v["job_dir"].as_str().expect("job_dir").to_string();
    let hash = v["code"]["hash"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    assert_eq!(v["code"]["dirty"], 3, "{v}");
    let cache = format!("{}/.code/{hash}", setup.root);
    assert!(stderr.contains(&format!("uploaded to {cache}")), "{stderr}");
    assert!(stderr.contains("code "), "{stderr}");

    let out = main_out(&r, &v, &name).await;
    assert!(out.contains(&format!("cwd={job_dir}/code/src")), "{out}");
    assert!(out.contains("print('v2 uncommitted')"), "{out}");
    assert!(!out.contains("v1 committed"), "{out}");
    assert!(out.contains("untracked notes"), "{out}");
    assert!(out.contains("no-big") && !out.contains("BIG-HERE"), "{out}");

    // The staged copy is private.
    let mode = run(
        &r,
        &["stat", "-c", "%a", &format!("{}/.code", setup.root), &cache],
    )
    .await
    .stdout_lossy();
    assert_eq!(
        mode.split_whitespace().collect::<Vec<_>>(),
        ["700", "700"],
        "{mode}"
    );
    let (inode, used) = inode_and_mtime(&r, &cache).await;
    // An old snapshot no launch used for longer than the cache keeps one.
    let stale = format!("{}/.code/{}", setup.root, "e".repeat(64));
    let days = format!("{} days ago", slurmdash::launch::code::KEEP_DAYS + 1);
    let made = run(
        &r,
        &[
            "sh",
            "-c",
            "mkdir -p \"$1\" && touch -d \"$2\" \"$1\"",
            "sh",
            &stale,
            &days,
        ],
    )
    .await;
    assert!(made.success(), "{}", made.stderr_lossy());

    // The same content again: nothing uploaded, the cache the same directory (its mtime
    // marks the use), the job runs it; the stale snapshot is gone and submit says so.
    std::thread::sleep(Duration::from_millis(1100));
    let name2 = format!("{name}b");
    let (v2, stderr2) = submit(&setup, &repo.path().join("src"), &name2);
    let id2 = v2["job_id"].as_u64().unwrap_or_else(|| panic!("{v2}"));
    let _cancel2 = CancelOnDrop(id2);
    assert_eq!(v2["code"]["hash"], hash.as_str(), "{v2}");
    assert!(
        stderr2.contains(&format!("reused {cache} (nothing uploaded)")),
        "{stderr2}"
    );
    let (inode2, used2) = inode_and_mtime(&r, &cache).await;
    assert_eq!(inode, inode2, "the snapshot was uploaded again");
    assert!(used2 > used, "the use is not marked: {used} then {used2}");
    assert!(
        stderr2.contains("removed 1 snapshot no launch used for 30 days"),
        "{stderr2}"
    );
    assert!(
        !run(&r, &["test", "-e", &stale]).await.success(),
        "{stale} kept"
    );
    let out2 = main_out(&r, &v2, &name2).await;
    assert!(out2.contains("print('v2 uncommitted')"), "{out2}");

    // The registry records the commit and the dirty count.
    let head = Command::new("git")
        .arg("-C")
        .arg(repo.path())
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("git");
    let head = text(&head.stdout).trim().to_string();
    let entries = setup.registry().load().expect("registry");
    for id in [id, id2] {
        let e = entries
            .iter()
            .find(|e| e.job_id == id)
            .unwrap_or_else(|| panic!("job {id} not in the registry: {entries:?}"));
        let c = e
            .code
            .as_ref()
            .unwrap_or_else(|| panic!("no code recorded: {e:?}"));
        assert_eq!(
            (c.commit.as_str(), c.dirty, c.hash.as_str()),
            (head.as_str(), 3, hash.as_str())
        );
    }
}

/// `L` on a finished launch that carried a snapshot runs that snapshot again: the form's
/// `code snapshot` field says `same` with its commit, nothing is uploaded, and the new job
/// sees the code as it was launched although the file on this machine changed since.
#[tokio::test(flavor = "multi_thread")]
async fn a_relaunch_runs_the_snapshot_the_job_ran_not_the_code_now() {
    let r = remote();
    let setup = LaunchSetup::new("code-relaunch").await;
    let repo = repo();
    let name = format!("sdcodeL{}", std::process::id() % 100000);
    let (v, _) = submit(&setup, &repo.path().join("src"), &name);
    let id = v["job_id"].as_u64().unwrap_or_else(|| panic!("{v}"));
    let _cancel = CancelOnDrop(id);
    let hash = v["code"]["hash"].as_str().expect("hash").to_string();
    assert!(main_out(&r, &v, &name).await.contains("v2 uncommitted"));
    // The code moves on after the launch.
    std::fs::write(repo.path().join("src/train.py"), "print('v3 later')\n").expect("write");

    let state = setup.state.path().display().to_string();
    let ui = common::tmux::Tmux::start_with(
        &setup.config,
        &[],
        &[("SLURMDASH_STATE_DIR", state.as_str())],
    );
    ui.wait("the launch in the queue", Duration::from_secs(90), |s| {
        common::tmux::row(s, id).is_some_and(|r| r.contains("COMPLETED"))
    });
    ui.filter(&id.to_string(), Duration::from_secs(30));
    let s = ui.press_until(
        &["L"],
        "the relaunch form",
        Duration::from_secs(10),
        Duration::from_secs(90),
        |s| s.contains(&format!("relaunch of {id}")) && s.contains("code snapshot"),
        |t, s| {
            if s.contains("launch a job on") {
                t.keys(&["Escape"]);
            }
        },
    );
    let row = s
        .lines()
        .find(|l| l.contains("code snapshot"))
        .expect("code row");
    assert!(row.contains(" same"), "{row}");
    let short: String = v["code"]["commit"]
        .as_str()
        .expect("commit")
        .chars()
        .take(7)
        .collect();
    assert!(
        s.contains(&format!(
            "the snapshot the job ran (code {short} + 3 changed files)"
        )),
        "the form does not name the snapshot:\n{s}"
    );
    ui.keys(&["C-s"]);
    let id2 = ui.submitted_job(Duration::from_secs(120));
    let _cancel2 = CancelOnDrop(id2);
    ui.keys(&["q"]);

    let entries = setup.registry().load().expect("registry");
    let e = entries
        .iter()
        .find(|e| e.job_id == id2)
        .unwrap_or_else(|| panic!("job {id2} not in the registry: {entries:?}"));
    let c = e.code.as_ref().unwrap_or_else(|| panic!("no code: {e:?}"));
    assert_eq!(
        (c.hash.as_str(), c.dirty, c.subdir.as_str()),
        (hash.as_str(), 3, "src")
    );
    let v2 = serde_json::json!({ "job_id": id2, "job_dir": e.job_dir });
    let out = main_out(&r, &v2, &name).await;
    assert!(
        out.contains(&format!("cwd={}/code/src", e.job_dir)),
        "{out}"
    );
    assert!(out.contains("print('v2 uncommitted')"), "{out}");
    assert!(!out.contains("v3 later"), "{out}");
}

/// Outside a git repository the launch is refused, naming the directory; nothing recorded.
#[test]
fn outside_a_repository_the_snapshot_is_refused() {
    let setup = LaunchSetup::under("/lustre/fsw/sduser/unused".into());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = setup
        .submit_command()
        .current_dir(dir.path())
        .args(["--code", "snapshot", "--set", "partition=cpu", "--", "true"])
        .output()
        .expect("run slurmdash submit");
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("needs a git repository")
            && stderr.contains(&dir.path().display().to_string()),
        "{stderr}"
    );
    assert!(setup.registry().load().expect("registry").is_empty());
}
