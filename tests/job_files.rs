//! A job's files on the dev cluster over real SSH: `slurmdash fetch` of a file and a
//! directory with odd names (identical by sha256), a partial file resumed, relative paths
//! of a launched job, a missing path refused; the dashboard's files view in tmux (walk,
//! preview, fetch); and the rate of a 100 MB fetch beside scp's (printed, not asserted).

use crate::common;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::launch::LaunchSetup;
use common::tmux::{fast_config, rand_suffix, row, Tmux};
use common::{dev_config, remote, run, s, sbatch, scratch, ssh_config, text, wait_job_running};
use slurmdash::jobfiles::encode_arg;
use slurmdash::remote::Remote;

const LIMIT: Duration = Duration::from_secs(90);

/// Runs a fixed script on the cluster with arguments (never pasted into it).
async fn sh(r: &dyn Remote, script: &str, args: &[&str]) -> String {
    let mut argv = vec!["sh", "-c", script, "sh"];
    argv.extend_from_slice(args);
    let out = run(r, &argv).await;
    assert!(out.success(), "{script}: {}", out.stderr_lossy());
    out.stdout_lossy()
}

/// sha256 of a remote file whose path may hold any byte.
async fn remote_sha(r: &dyn Remote, path: &[u8]) -> String {
    let out = sh(
        r,
        "p=$(printf '%bx' \"$1\"); p=${p%x}; sha256sum < \"$p\"",
        &[&encode_arg(path)],
    )
    .await;
    out.split_whitespace().next().expect("sum").to_string()
}

fn local_sha(path: &Path) -> String {
    // On stdin: sha256sum escapes a file name holding a newline in its output.
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let out = Command::new("sha256sum")
        .stdin(file)
        .output()
        .expect("sha256sum");
    text(&out.stdout)
        .split_whitespace()
        .next()
        .expect("sum")
        .to_string()
}

/// A job running in `dir` (its work directory) until the test cancels it.
async fn job_in(dir: &str, tag: &str) -> u64 {
    let r = remote();
    let id = sbatch(
        &r,
        &[
            "-J",
            tag,
            "-c",
            "1",
            "-t",
            "5",
            "--chdir",
            dir,
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 280",
        ],
    )
    .await;
    wait_job_running(&r, id, "the job to run", LIMIT).await;
    id
}

fn fetch(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slurmdash"));
    c.arg("--config").arg(dev_config()).arg("fetch").args(args);
    c.envs(env.iter().copied())
        .env_remove("SLURM_HOSTNAME")
        .stdin(Stdio::null());
    c.output().expect("run slurmdash fetch")
}

/// The odd names a job's results may hold, made on the cluster with printf escapes.
const ODD: &[&[u8]] = &[
    b"two\nlines",
    b"\xff\xfe not utf-8",
    b"-rf",
    b"it's \"q\" $(x)",
];

#[tokio::test]
async fn fetch_copies_a_file_and_a_directory_with_odd_names_identically_and_resumes() {
    let r = remote();
    let tag = format!("files-{}", rand_suffix());
    let dir = scratch(&r, &tag).await;
    // A 3 MiB file whose name holds a space, a quote and a leading dash; a directory of odd
    // names, a sub-directory, an empty one and a link.
    let big = "-odd 'big' file.bin";
    sh(&r, "head -c 3145728 /dev/urandom > \"$1/$2\"", &[&dir, big]).await;
    sh(
        &r,
        "cd \"$1\" && mkdir -p 'res dir/sub' 'res dir/empty' && cd 'res dir' && \
         printf 'a\\n' > \"$(printf 'two\\nlines')\" && printf 'b' > \"$(printf '\\377\\376 not utf-8')\" && \
         head -c 70000 /dev/urandom > ./-rf && printf 'c' > \"it's \\\"q\\\" \\$(x)\" && \
         printf 'deep' > sub/deep.txt && ln -s /etc/passwd link",
        &[&dir],
    )
    .await;
    let id = job_in(&dir, &tag).await;
    let local = tempfile::tempdir().expect("tempdir");
    let dest = local.path().join("big.bin");

    // A relative path resolves against the job's work directory.
    let out = fetch(&[&id.to_string(), big, dest.to_str().expect("utf-8")], &[]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let lines: Vec<&str> = said.lines().collect();
    assert!(
        lines[0].contains("is 3145728 bytes (3.0 MiB)"),
        "size first: {said}"
    );
    assert!(
        lines
            .last()
            .is_some_and(|l| l.contains("fetched 3145728 bytes")
                && l.contains("MiB/s")
                && l.contains("on both sides")),
        "{said}"
    );
    let want = remote_sha(&r, format!("{dir}/{big}").as_bytes()).await;
    assert_eq!(local_sha(&dest), want);
    assert!(
        text(&out.stderr).contains('%'),
        "a progress line: {}",
        text(&out.stderr)
    );

    // A copy cut short (its partial file beside DEST) resumes from its size.
    let whole = std::fs::read(&dest).expect("read");
    std::fs::remove_file(&dest).expect("rm");
    let part = dest.with_file_name(format!(
        ".{}.slurmdash-part",
        dest.file_name().expect("name").to_string_lossy()
    ));
    std::fs::write(&part, &whole[..1_000_000]).expect("cut");
    let out = fetch(
        &[
            &id.to_string(),
            &format!("{dir}/{big}"),
            dest.to_str().expect("utf-8"),
        ],
        &[],
    );
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("resumed from 1000000 bytes"), "{said}");
    assert_eq!(local_sha(&dest), want);
    assert!(!part.exists(), "the partial file was renamed into place");

    // The directory, file by file: every file identical, the link named as skipped.
    let into = local.path().join("dl");
    std::fs::create_dir(&into).expect("mkdir");
    let out = fetch(
        &[&id.to_string(), "res dir", into.to_str().expect("utf-8")],
        &[],
    );
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(said.contains("fetched 5 files"), "{said}");
    assert!(
        said.contains("not copied (links, special files): link"),
        "{said}"
    );
    let got = into.join("res dir");
    let mut names: Vec<Vec<u8>> = ODD.iter().map(|n| n.to_vec()).collect();
    names.push(b"sub/deep.txt".to_vec());
    for n in &names {
        let here = got.join(std::ffi::OsStr::from_bytes(n));
        let mut there = format!("{dir}/res dir/").into_bytes();
        there.extend_from_slice(n);
        assert_eq!(local_sha(&here), remote_sha(&r, &there).await, "{n:?}");
    }
    assert!(got.join("empty").is_dir());

    // A name that is not UTF-8, given on the command line as the bytes it is.
    let odd = local.path().join("odd.bin");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .args(["fetch", &id.to_string()])
        .arg(std::ffi::OsStr::from_bytes(b"res dir/\xff\xfe not utf-8"))
        .arg(&odd)
        .env_remove("SLURM_HOSTNAME")
        .stdin(Stdio::null())
        .output()
        .expect("fetch");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("\\xff\\xfe not utf-8"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read(&odd).expect("read"), b"b");

    // A path that is not there: exit 1, naming what failed and what to do.
    let out = fetch(&[&id.to_string(), "no/such.txt"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("no such file") && err.contains("no/such.txt"),
        "{err}"
    );

    run(&r, &["scancel", &id.to_string()]).await;
}

#[tokio::test]
async fn fetch_takes_relative_paths_of_a_launched_job_below_its_job_directory() {
    let r = remote();
    let tag = format!("filesl-{}", rand_suffix());
    let base = scratch(&r, &tag).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let launch = LaunchSetup::under(base);
    let cfg = &launch.config;
    let st = launch.state.path().to_str().expect("utf-8");
    let out = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(cfg)
        .args([
            "submit",
            "--set",
            "name=files-launch",
            "--set",
            "gpus=0",
            "--set",
            "cpus_per_task=1",
            "--set",
            "time=2m",
            "--",
            "echo",
            "hello from the job",
        ])
        .env("SLURMDASH_STATE_DIR", st)
        .env_remove("SLURM_HOSTNAME")
        .stdin(Stdio::null())
        .output()
        .expect("submit");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    let id: u64 = said
        .split_whitespace()
        .skip_while(|w| *w != "job")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {said}"));
    let job_dir = said
        .lines()
        .find_map(|l| l.strip_prefix("job dir:"))
        .map(str::trim)
        .expect("job dir")
        .to_string();
    let fetch_with = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_slurmdash"))
            .arg("--config")
            .arg(cfg)
            .arg("fetch")
            .args(args)
            .env("SLURMDASH_STATE_DIR", st)
            .env_remove("SLURM_HOSTNAME")
            .stdin(Stdio::null())
            .output()
            .expect("fetch")
    };
    let dest = tmp.path().join("launch.json");
    let out = fetch_with(&[
        &id.to_string(),
        "specs/launch.json",
        dest.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let there = run(&r, &["cat", &format!("{job_dir}/specs/launch.json")]).await;
    assert_eq!(std::fs::read(&dest).expect("read"), there.stdout);
    // The whole job directory's sbatch/ and meta/ (a directory, relative too).
    let out = fetch_with(&[&id.to_string(), "meta", tmp.path().to_str().expect("utf-8")]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let there = run(&r, &["cat", &format!("{job_dir}/meta/request.json")]).await;
    assert_eq!(
        std::fs::read(tmp.path().join("meta/request.json")).expect("read"),
        there.stdout
    );
    run(&r, &["scancel", &id.to_string()]).await;
}

#[tokio::test]
async fn fetching_100_mb_prints_its_rate_beside_scp() {
    let r = remote();
    let tag = format!("filesbig-{}", rand_suffix());
    let dir = scratch(&r, &tag).await;
    sh(
        &r,
        "head -c 104857600 /dev/urandom > \"$1/big.bin\"",
        &[&dir],
    )
    .await;
    let id = job_in(&dir, &tag).await;
    let local = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let out = fetch(
        &[
            &id.to_string(),
            "big.bin",
            local.path().to_str().expect("utf-8"),
        ],
        &[],
    );
    let ours = t0.elapsed();
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let t1 = Instant::now();
    let scp = Command::new("scp")
        .arg("-q")
        .arg("-F")
        .arg(ssh_config())
        .arg(format!("slurmdash-dev:{dir}/big.bin"))
        .arg(local.path().join("scp.bin"))
        .output()
        .expect("scp");
    let theirs = t1.elapsed();
    let mib = 100.0;
    println!(
        "fetch of 100 MiB: slurmdash fetch {:.2} s ({:.1} MiB/s, including connecting, the sha256 on both sides and the job lookup); scp {:.2} s ({:.1} MiB/s){}",
        ours.as_secs_f64(),
        mib / ours.as_secs_f64(),
        theirs.as_secs_f64(),
        mib / theirs.as_secs_f64(),
        if scp.status.success() { String::new() } else { format!(" (scp failed: {})", text(&scp.stderr)) }
    );
    println!("slurmdash said: {}", text(&out.stdout).trim());
    assert_eq!(
        local_sha(&local.path().join("big.bin")),
        remote_sha(&r, format!("{dir}/big.bin").as_bytes()).await
    );
    run(&r, &["scancel", &id.to_string()]).await;
    run(&r, &["rm", "-f", &format!("{dir}/big.bin")]).await;
}

#[tokio::test]
async fn the_files_view_walks_previews_and_fetches_in_the_real_dashboard() {
    let r = remote();
    let tag = format!("filestui-{}", rand_suffix());
    let dir = scratch(&r, &tag).await;
    sh(
        &r,
        "cd \"$1\" && mkdir logs && printf 'first line of the log\\n' > logs/a.log && \
         printf 'step,loss\\n1,2.5\\n2,1.25\\n' > notes.csv",
        &[&dir],
    )
    .await;
    let id = job_in(&dir, &tag).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let dl: PathBuf = tmp.path().join("downloads");
    let mut text_cfg = std::fs::read_to_string(&cfg).expect("cfg");
    text_cfg.push_str(&format!("\n[files]\ndownload_dir = \"{}\"\n", dl.display()));
    std::fs::write(&cfg, text_cfg).expect("cfg");
    let t = Tmux::start(&cfg, &["--read-only"]);
    t.wait("the running job", LIMIT, |s| row(s, id).is_some());
    t.filter(&tag, Duration::from_secs(30));
    t.wait("only the job", LIMIT, |s| {
        s.contains("jobs 1") && row(s, id).is_some()
    });
    // The work directory is the job's only one: the view opens in it (`y` does the same).
    t.keys(&[":", "files", "Enter"]);
    t.wait("the listing", LIMIT, |s| {
        s.contains(&format!("files · job {id}")) && s.contains("logs/") && s.contains("notes.csv")
    });
    // Into logs/, and back.
    t.keys(&["Enter"]);
    t.wait("logs/ listed", LIMIT, |s| {
        s.contains("a.log") && s.contains("1 entries")
    });
    t.keys(&["BSpace"]);
    t.wait("back up", LIMIT, |s| s.contains("notes.csv"));
    // A preview of the CSV in the log viewer, its columns aligned.
    t.keys(&["j", "Enter"]);
    t.wait("the preview", LIMIT, |s| {
        s.contains("preview") && s.contains("step  loss") && s.contains("2     1.25")
    });
    // Fetch it from the preview (read-only sessions may fetch).
    t.keys(&["f"]);
    t.wait("the fetch done", LIMIT, |s| {
        s.contains("fetched") && s.contains("sha256 checked")
    });
    let got = dl.join(id.to_string()).join("notes.csv");
    assert_eq!(
        std::fs::read(&got).expect("fetched file"),
        b"step,loss\n1,2.5\n2,1.25\n"
    );
    t.keys(&["Escape", "Escape"]);
    t.wait("the queue again", LIMIT, |s| {
        !s.contains("files · job") && row(s, id).is_some()
    });
    t.keys(&["q"]);
    t.wait("the dashboard exits", LIMIT, |s| s.contains("EXITED:0"));
    run(&r, &["scancel", &id.to_string()]).await;
    let _ = s(&[]);
}

/// ctrl-c mid-way through `slurmdash fetch` over a DEST that holds an earlier file: the
/// copy was going to a partial file beside DEST (0600), which is removed; DEST is as it was.
#[tokio::test]
async fn ctrl_c_during_a_fetch_leaves_dest_as_it_was_and_no_partial_file() {
    use std::os::unix::fs::PermissionsExt;
    let r = remote();
    let tag = format!("filesint-{}", rand_suffix());
    let dir = scratch(&r, &tag).await;
    sh(
        &r,
        "head -c 314572800 /dev/zero > \"$1/large.bin\"",
        &[&dir],
    )
    .await;
    let id = job_in(&dir, &tag).await;
    let _cancel = common::CancelOnDrop(id);
    let local = tempfile::tempdir().expect("tempdir");
    let dest = local.path().join("large.bin");
    let before = b"results of an earlier run, kept until a whole new copy is here\n";
    std::fs::write(&dest, before).expect("write dest");
    let part = local.path().join(".large.bin.slurmdash-part");
    let mut child = Command::new(env!("CARGO_BIN_EXE_slurmdash"))
        .arg("--config")
        .arg(dev_config())
        .args(["fetch", &id.to_string(), "large.bin"])
        .arg(&dest)
        .env_remove("SLURM_HOSTNAME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fetch");
    // As soon as new bytes arrive beside DEST, ctrl-c (SIGINT) it.
    let t0 = Instant::now();
    let partial_mode = loop {
        match std::fs::metadata(&part) {
            Ok(m) if m.len() > before.len() as u64 => break m.permissions().mode() & 0o777,
            _ => {}
        }
        assert!(t0.elapsed() < LIMIT, "the copy never started");
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            panic!(
                "fetch ended ({status}) before a byte was seen beside DEST:\n{}{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    assert_eq!(
        std::fs::read(&dest).expect("dest"),
        before,
        "DEST changed mid-way"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("wait");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{}{err}", text(&out.stdout));
    assert!(
        err.contains("stopped by SIGINT")
            && err.contains("removed")
            && err.contains("is as it was before"),
        "{err}"
    );
    assert_eq!(
        partial_mode, 0o600,
        "the partial copy was readable by others"
    );
    assert_eq!(std::fs::read(&dest).expect("dest"), before, "DEST changed");
    let left: Vec<_> = std::fs::read_dir(local.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("large.bin")], "leftovers");
    run(&r, &["scancel", &id.to_string()]).await;
    run(&r, &["rm", "-f", &format!("{dir}/large.bin")]).await;
}
