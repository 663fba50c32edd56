//! Shared helpers for tests that use the dev cluster (`scripts/dev-cluster up`).
#![allow(dead_code)]

pub mod app_driver;
pub mod arrays;
pub mod bastion;
pub mod containers;
pub mod launch;
pub mod limits;
pub mod logpane;
pub mod maintenance;
pub mod sshd;
pub mod tmux;
pub mod totp;

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use slurmdash::remote::{Remote, RunOutput, SshOptions, SshRemote};

pub const T: Duration = Duration::from_secs(30);

/// The Slurm version the cluster tests run against: `SLURMDASH_DEV_SLURM` (22.05, 24.11
/// or 26.05; `scripts/dev-cluster up --slurm V` brings that one up), default 22.05.
pub fn dev_slurm() -> String {
    std::env::var("SLURMDASH_DEV_SLURM")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "22.05".into())
}

/// The dev-cluster directory every version shares: the 2FA login (`totp_up`) and the
/// image registry serve all versions from the machine itself, whatever SLURMDASH_DEV_SLURM.
pub fn shared_dev_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".dev-cluster")
}

/// The selected version's client-side directory: `.dev-cluster` for 22.05,
/// `.dev-cluster/<V>` for the others (ssh config, slurmdash.toml, env).
pub fn dev_dir() -> PathBuf {
    let base = shared_dev_dir();
    let v = dev_slurm();
    let d = if v == "22.05" { base } else { base.join(&v) };
    assert!(
        d.join("slurmdash.toml").is_file() && d.join("ssh/config").is_file(),
        "{} is incomplete: run `scripts/dev-cluster up --slurm {v}` first (these tests need the dev cluster)",
        d.display()
    );
    d
}

/// A value of the dev cluster's env file (`scripts/dev-cluster env`), e.g. `SLURMDASH_DEV_NODES`.
pub fn dev_env(key: &str) -> String {
    let path = dev_dir().join("env");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| {
            panic!(
                "{key} not in {}: run `scripts/dev-cluster up` again",
                path.display()
            )
        })
}

fn env_list(key: &str) -> Vec<String> {
    dev_env(key)
        .split(',')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every compute node's name (e.g. gpu01, gpu02, cpu01).
pub fn nodes() -> Vec<String> {
    env_list("SLURMDASH_DEV_NODES")
}

/// The nodes with GPUs (partitions short, polar, long).
pub fn gpu_nodes() -> Vec<String> {
    env_list("SLURMDASH_DEV_GPU_NODES")
}

/// The CPU-only nodes (partition cpu).
pub fn cpu_nodes() -> Vec<String> {
    env_list("SLURMDASH_DEV_CPU_NODES")
}

/// A Slurm command as root on this machine, which hosts the dev cluster (e.g. `scontrol
/// update nodename=N state=down`): in the version's chroot for 24.11/26.05.
pub fn slurm_admin(argv: &[&str]) -> Output {
    let root = dev_env("SLURMDASH_DEV_ROOT");
    let mut cmd = if root.is_empty() {
        Command::new(argv[0])
    } else {
        let mut c = Command::new("chroot");
        c.arg(&root).arg(argv[0]);
        c
    };
    cmd.args(&argv[1..])
        .output()
        .unwrap_or_else(|e| panic!("run {argv:?} on the cluster host: {e}"))
}

/// `scontrol update nodename=NODE ...` as root on the selected version's cluster (in its
/// chroot for 24.11/26.05).
pub fn scontrol_node(node: &str, args: &[&str]) -> Output {
    let name = format!("nodename={node}");
    let mut argv = vec!["scontrol", "update", &name];
    argv.extend_from_slice(args);
    slurm_admin(&argv)
}

/// The partition whose nodes the node-failure tests take down: `spare` (spare01, spare02)
/// holds no other test's jobs, so a node going down ends only the job of the test that took
/// it down. Those tests run one at a time (test group `spare-nodes`, .config/nextest.toml).
pub const SPARE: &str = "spare";

/// The nodes of partition [`SPARE`], of which a test takes one down: it must have several,
/// so the retry finds one up. They are the env file's `SLURMDASH_DEV_SPARE_NODES`.
pub async fn spare_nodes(r: &dyn Remote) -> Vec<String> {
    let out = run(r, &["sinfo", "-h", "-N", "-p", SPARE, "-o", "%N"]).await;
    let text = out.stdout_lossy();
    let nodes: Vec<String> = text.lines().map(|n| n.trim().to_string()).collect();
    assert!(
        nodes.len() >= 2,
        "partition {SPARE} needs several nodes (one goes down): {text:?}; run `scripts/dev-cluster up` again"
    );
    assert_eq!(
        nodes,
        env_list("SLURMDASH_DEV_SPARE_NODES"),
        "partition {SPARE} holds the spare nodes only"
    );
    nodes
}

/// The nodes job `id` runs on (`squeue -o %N`), empty when it runs nowhere.
pub async fn job_nodes(r: &dyn Remote, id: u64) -> String {
    run(r, &["squeue", "-h", "-j", &id.to_string(), "-o", "%N"])
        .await
        .stdout_lossy()
        .trim()
        .to_string()
}

/// The node's state as sinfo shows it (e.g. `idle`, `down*`, `completing`).
pub async fn node_state(r: &dyn Remote, node: &str) -> String {
    let st = run(r, &["sinfo", "-h", "-n", node, "-o", "%T"])
        .await
        .stdout_lossy();
    st.lines().next().unwrap_or("").to_string()
}

/// Whether a [`node_state`] is one of service: known, neither down nor drained.
pub fn in_service(state: &str) -> bool {
    !state.is_empty() && !state.contains("down") && !state.contains("drain")
}

/// Sets the node back to service however the test ends.
pub struct Resume(pub String);

impl Drop for Resume {
    fn drop(&mut self) {
        let _ = scontrol_node(&self.0, &["state=resume"]);
    }
}

/// The slurmdash config `scripts/dev-cluster up` writes for the dev cluster, as the tests use
/// it: with `persist_secs = 0`, so the SSH master that the test processes share ends a second
/// after the last slurmdash using it exits, and the suite leaves none behind. Tests of a master
/// that outlives slurmdash use [`dev_config_persist`] (with a [`RuntimeDir`] of their own).
pub fn dev_config() -> PathBuf {
    dev_config_persist(0)
}

/// The dev cluster's config as a user has it: the default slurmctld RPC budget (4 a
/// minute), for the tests of the answers the budget must never starve (why a job pends,
/// its live use, the queue's freshness, reconnecting, a job's end).
pub fn dev_config_default() -> PathBuf {
    dev_config_of(0, false)
}

/// The dev config for [`OTHER_USER`]: the same cluster reached as that user, with its own
/// results root.
pub fn dev_config_other() -> PathBuf {
    dev_config_as(OTHER_USER)
}

/// The dev cluster's config with `persist_secs = secs` in each cluster (a copy under the
/// target directory, rewritten only when it changes).
pub fn dev_config_persist(secs: u64) -> PathBuf {
    dev_config_of(secs, true)
}

fn dev_config_of(secs: u64, no_budget: bool) -> PathBuf {
    let src = dev_dir().join("slurmdash.toml");
    let text =
        std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
    assert!(
        !text.contains("max_rpcs_per_minute"),
        "the dev config sets no budget of its own: {}",
        src.display()
    );
    let text = if no_budget {
        without_budget(&text)
    } else {
        text
    };
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.trim_start().starts_with("[clusters.") {
            out.push_str(&format!("persist_secs = {secs}\n"));
        }
    }
    let budget = if no_budget { "" } else { "-default" };
    let dest = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("dev-{}-persist-{secs}{budget}.toml", dev_slurm()));
    if std::fs::read_to_string(&dest).ok().as_deref() != Some(out.as_str()) {
        // Test processes run at once: each writes its own file and renames it into place.
        let tmp = dest.with_extension(format!(
            "{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&tmp, &out).expect("write the test config");
        std::fs::rename(&tmp, &dest).expect("rename the test config");
    }
    dest
}

/// `text` (a slurmdash config) with no slurmctld RPC budget (`[poll] max_rpcs_per_minute =
/// 0`), unless it sets one: the tests wait for screens with deadlines, and with the default
/// budget a refresh comes every 40 s. The `[poll]` table goes before the first table, so
/// that lines a test appends still land in the last `[clusters.*]` one.
pub fn without_budget(text: &str) -> String {
    if text.contains("max_rpcs_per_minute") {
        return text.to_string();
    }
    let table = "[poll]\nmax_rpcs_per_minute = 0\n\n";
    match text
        .find("\n[")
        .map(|i| i + 1)
        .or(text.starts_with('[').then_some(0))
    {
        Some(i) => format!("{}{table}{}", &text[..i], &text[i..]),
        None => format!("{text}\n{table}"),
    }
}

/// A runtime directory of the test's own (`XDG_RUNTIME_DIR` for the slurmdash it runs), so
/// the masters slurmdash keeps there are this test's alone. Dropping it ends every master
/// still answering in it (`ssh -O exit`): no test leaves one behind.
pub struct RuntimeDir {
    pub dir: tempfile::TempDir,
}

impl RuntimeDir {
    pub fn new() -> RuntimeDir {
        // Short, under /tmp: socket paths are limited to about 100 bytes.
        let dir = tempfile::Builder::new()
            .prefix("sdrt")
            .tempdir_in("/tmp")
            .expect("runtime dir");
        RuntimeDir { dir }
    }

    /// The value for `XDG_RUNTIME_DIR`.
    pub fn env(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// Where slurmdash keeps its sockets in it.
    pub fn slurmdash_dir(&self) -> PathBuf {
        self.dir.path().join("slurmdash")
    }

    /// The master sockets in it.
    pub fn sockets(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.slurmdash_dir())
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many masters' log files (`ssh -E`, beside each socket) are in it: each master
    /// that was started here leaves one, after it has gone too.
    pub fn master_logs(&self) -> usize {
        std::fs::read_dir(self.slurmdash_dir())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                    .count()
            })
            .unwrap_or(0)
    }

    /// Live ssh masters started for this directory (their command line names it).
    pub fn masters(&self) -> Vec<u32> {
        ssh_processes_naming(&self.slurmdash_dir().display().to_string())
    }
}

impl Drop for RuntimeDir {
    fn drop(&mut self) {
        for s in self.sockets() {
            master_exit(&s);
        }
        // A master whose socket was taken from it (what a broken lock would do) no longer
        // answers there: it is found by its command line, which names this directory.
        for pid in self.masters() {
            // SAFETY: kill() has no memory-safety preconditions.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
        }
    }
}

/// `ssh -S SOCKET -O exit`: ends the master there, if one answers.
pub fn master_exit(sock: &Path) {
    let _ = Command::new("ssh")
        .arg("-S")
        .arg(sock)
        .args(["-O", "exit", "none"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// The pid of the master answering on `sock` (`ssh -O check`), if any.
pub fn master_pid(sock: &Path) -> Option<u32> {
    let out = Command::new("ssh")
        .arg("-S")
        .arg(sock)
        .args(["-O", "check", "none"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let t = text(&out.stderr);
    let rest = &t[t.find("pid=")? + 4..];
    rest[..rest.find(')')?].trim().parse().ok()
}

/// Live (not zombie) `ssh` processes whose command line contains `needle`.
pub fn ssh_processes_naming(needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let state = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| Some(s[s.rfind(')')? + 2..].chars().next()? != 'Z'));
            cmd.starts_with("ssh ") && cmd.contains(needle) && state == Some(true)
        })
        .collect()
}

/// Waits (at most `limit`) until `f` holds; panics with `what` otherwise.
pub fn wait_until(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out after {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Cancels job `0` when dropped, a failing test included (a job left running would hold
/// its node and keep the tests that need whole nodes waiting): `scancel` through the dev
/// ssh alias, waited for.
pub struct CancelOnDrop(pub u64);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        scancel_as("slurmdash-dev", &[self.0]);
    }
}

/// [`CancelOnDrop`] for jobs of [`OTHER_USER`] (through [`OTHER_ALIAS`]).
pub struct CancelOther(pub Vec<u64>);

impl Drop for CancelOther {
    fn drop(&mut self) {
        scancel_as(OTHER_ALIAS, &self.0);
    }
}

/// [`CancelOnDrop`] for jobs of the user of ssh alias `.0`.
pub struct CancelAs(pub String, pub Vec<u64>);

impl Drop for CancelAs {
    fn drop(&mut self) {
        scancel_as(&self.0, &self.1);
    }
}

/// The ssh alias of a dev-cluster account `sdX` of scripts/dev-cluster's SHELL_USERS:
/// `slurmdash-dev-X`.
pub fn alias_of(user: &str) -> String {
    let suffix = user.strip_prefix("sd").expect("an sd<name> account");
    format!("slurmdash-dev-{suffix}")
}

/// The dev config reached as `user` ([`OTHER_USER`] or one of scripts/dev-cluster's
/// SHELL_USERS) through its ssh alias, with its own results root (a copy under the target
/// directory).
pub fn dev_config_as(user: &str) -> PathBuf {
    assert!(
        user == OTHER_USER
            || dev_env("SLURMDASH_DEV_SHELL_USERS")
                .split(',')
                .any(|u| u == user),
        "{user} is not a dev-cluster account: run `scripts/dev-cluster up` again"
    );
    let text = std::fs::read_to_string(dev_config()).expect("dev config");
    let text = text
        .replace(
            "hosts = [\"slurmdash-dev\"]",
            &format!("hosts = [\"{}\"]", alias_of(user)),
        )
        .replace("sduser", user);
    let dest =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dev-{}-{user}.toml", dev_slurm()));
    let tmp = dest.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, &text).expect("write the config");
    std::fs::rename(&tmp, &dest).expect("rename the config");
    dest
}

/// `scancel IDS` as the user of ssh alias `alias`, waited for; errors ignored (a drop).
fn scancel_as(alias: &str, ids: &[u64]) {
    let _ = std::process::Command::new("ssh")
        .arg("-F")
        .arg(ssh_config())
        .arg(alias)
        .arg("scancel")
        .args(ids.iter().map(u64::to_string))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

pub fn ssh_config() -> PathBuf {
    dev_dir().join("ssh/config")
}

pub fn remote() -> SshRemote {
    remote_as("slurmdash-dev")
}

/// The dev cluster's second test user (`sdother`, ssh alias `slurmdash-dev-other`). A test
/// whose dashboard must show only its own jobs (every job of the user is on screen, and the
/// status bar shows the latest change of any) runs as this user, in test group
/// `other-user` (.config/nextest.toml): one such test at a time.
pub const OTHER_ALIAS: &str = "slurmdash-dev-other";
pub const OTHER_USER: &str = "sdother";

/// A remote for the ssh alias `alias` of the dev ssh config (e.g. [`OTHER_ALIAS`]).
pub fn remote_as(alias: &str) -> SshRemote {
    let mut o = SshOptions::new(vec![alias.into()]);
    o.ssh_config = Some(ssh_config());
    // The default connect timeout, as a user has it: a login on this loaded 2-core machine
    // can take longer than a shorter one allows.
    SshRemote::new(o).expect("ssh remote")
}

pub fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

pub async fn run(r: &dyn Remote, argv: &[&str]) -> RunOutput {
    r.run(&s(argv), None, T)
        .await
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}

/// A fresh directory for one test under the test user's scratch tree.
pub async fn scratch(r: &dyn Remote, tag: &str) -> String {
    scratch_of(r, "sduser", tag).await
}

/// [`scratch`] in `user`'s scratch tree (`r` logged in as that user).
pub async fn scratch_of(r: &dyn Remote, user: &str, tag: &str) -> String {
    let out = run(
        r,
        &[
            "mktemp",
            "-d",
            &format!("/lustre/fsw/{user}/test-{tag}.XXXXXX"),
        ],
    )
    .await;
    assert!(out.success(), "mktemp: {}", out.stderr_lossy());
    out.stdout_lossy().trim().to_string()
}

/// Submits with sbatch (argv as given, `--parsable` added) and returns the job id.
pub async fn sbatch(r: &dyn Remote, args: &[&str]) -> u64 {
    let mut argv = vec!["sbatch", "--parsable"];
    argv.extend_from_slice(args);
    let out = run(r, &argv).await;
    assert!(out.success(), "sbatch {args:?}: {}", out.stderr_lossy());
    parsable_job_id(&out.stdout_lossy())
}

/// A one-CPU, one-minute job named `name` that runs `true`, submitted with `args` added
/// (e.g. `--hold`); returns its id.
pub async fn sbatch_true(r: &dyn Remote, name: &str, args: &[&str]) -> u64 {
    let mut argv = vec!["-J", name, "-c", "1", "-t", "1"];
    argv.extend_from_slice(args);
    argv.extend(["--wrap", "true"]);
    sbatch(r, &argv).await
}

/// A job over partition polar's MaxTime (it asks for 10 hours), named `name`, that runs
/// `true` in `dir`: it stays pending with reason PartitionTimeLimit. Returns its id.
pub async fn sbatch_too_long(r: &dyn Remote, name: &str, dir: &str) -> u64 {
    let argv = [
        "-J",
        name,
        "-p",
        "polar",
        "--time=10:00:00",
        "-c",
        "1",
        "-D",
        dir,
    ];
    let mut argv = argv.to_vec();
    argv.extend(["--wrap", "true"]);
    sbatch(r, &argv).await
}

/// `sacct` of job `ID`'s allocation (not its steps): `FIELDS` (comma-separated), one line,
/// `|` between, no header.
pub fn sacct_argv<'a>(fields: &'a str, id: &'a str) -> [&'a str; 8] {
    ["sacct", "-n", "-X", "-P", "-o", fields, "-j", id]
}

/// [`sacct_argv`] run on the login node.
pub async fn sacct_fields(r: &dyn Remote, id: u64, fields: &str) -> RunOutput {
    run(r, &sacct_argv(fields, &id.to_string())).await
}

/// The job's state as sacct records it (e.g. `COMPLETED`, `CANCELLED by 1001`).
pub async fn sacct_state(r: &dyn Remote, id: u64) -> String {
    let out = sacct_fields(r, id, "State").await;
    assert!(
        out.success(),
        "sacct -j {id} failed ({:?}): {}",
        out.code,
        out.stderr_lossy()
    );
    out.stdout_lossy().trim().to_string()
}

/// Waits (at most `limit`) until sacct records a final state for the job (none of PENDING,
/// RUNNING, REQUEUED, COMPLETING), and returns it.
pub async fn final_state(r: &dyn Remote, id: u64, limit: Duration) -> String {
    wait_for(&format!("job {id} to end"), limit, || async {
        let s = sacct_state(r, id).await;
        let done = !s.is_empty()
            && !["PENDING", "RUNNING", "REQUEUED", "COMPLETING"]
                .iter()
                .any(|w| s.starts_with(w));
        done.then_some(s)
    })
    .await
}

/// The file's content on the login node (the test fails if `cat` does).
pub async fn cat(r: &dyn Remote, path: &str) -> String {
    let out = run(r, &["cat", path]).await;
    assert!(out.success(), "cat {path}: {}", out.stderr_lossy());
    out.stdout_lossy()
}

/// Writes `text` to `path` on the login node (data on stdin, the path an argument), making
/// its directory first.
pub async fn put(r: &dyn Remote, path: &str, text: &str) {
    let out = r
        .run(
            &s(&[
                "sh",
                "-c",
                "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"",
                "sh",
                path,
            ]),
            Some(text.as_bytes()),
            T,
        )
        .await
        .expect("write a file on the cluster");
    assert!(out.success(), "writing {path}: {}", out.stderr_lossy());
}

/// The job id in what `sbatch --parsable` printed (`ID` or `ID;CLUSTER`).
pub fn parsable_job_id(printed: &str) -> u64 {
    printed
        .trim()
        .split(';')
        .next()
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("sbatch printed {printed:?}"))
}

/// The value of a `LABEL VALUE` line `slurmdash submit` printed (e.g. `stdout:`).
pub fn printed_field<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no `{label}` in {out}"))
}

/// The job id `slurmdash submit` printed (the word after `job`).
pub fn printed_job_id(out: &str) -> u64 {
    out.split_whitespace()
        .skip_while(|w| *w != "job")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {out}"))
}

/// `sacct` of the jobs that ended (COMPLETED or FAILED) in the last hour, by end time: the
/// selection `slurmdash history` reads, which lags `sacct -j` by seconds.
pub const SACCT_ENDED: &[&str] = &[
    "sacct",
    "-n",
    "-X",
    "-P",
    "-o",
    "JobID",
    "--state=CD,F",
    "--starttime=now-3600seconds",
    "--endtime=now+60seconds",
];

/// Whether [`SACCT_ENDED`]'s output lists job `id`.
pub fn lists_job(sacct: &str, id: u64) -> bool {
    sacct.lines().any(|l| l.trim() == id.to_string())
}

/// Polls `f` every 500 ms until it returns Some, or panics after `limit` with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until `squeue` says job `id` is RUNNING, or panics after `limit` with `what`.
pub async fn wait_job_running(r: &dyn Remote, id: u64, what: &str, limit: Duration) {
    wait_for(what, limit, || async {
        let out = run(r, &["squeue", "-h", "-o", "%T", "-j", &id.to_string()]).await;
        (out.stdout_lossy().trim() == "RUNNING").then_some(())
    })
    .await;
}

/// The job id and job directory `slurmdash submit` printed (`Submitted job ID ...` and
/// `job dir: DIR` lines); panics with the output when either is missing.
pub fn submitted_job_and_dir(stdout: &str) -> (u64, String) {
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Submitted job "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|j| j.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("job dir: "))
        .unwrap_or_else(|| panic!("{stdout}"))
        .trim()
        .to_string();
    (id, dir)
}

/// Writes `dir/slurmdash.toml`: the dev config with results under `{base}/results` and a
/// 2 s poll, both in its last `[clusters.*]` table, then `tail`.
pub fn write_dev_config_with_results(dir: &Path, base: &str, tail: &str) -> PathBuf {
    let cfg: String = std::fs::read_to_string(dev_config())
        .expect("dev config")
        .lines()
        .filter(|l| !l.starts_with("results_root"))
        .map(|l| format!("{l}\n"))
        .collect();
    let config = dir.join("slurmdash.toml");
    std::fs::write(
        &config,
        format!("{cfg}results_root = \"{base}/results\"\npoll_interval_secs = 2\n{tail}"),
    )
    .expect("config");
    config
}

/// `GET /` on 127.0.0.1:`port`; the whole answer, or why not.
pub fn http_get(port: u16) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut body = String::new();
    s.read_to_string(&mut body).map_err(|e| e.to_string())?;
    Ok(body)
}

/// Asks 127.0.0.1:`port` for its page every 300 ms until the answer holds `marker`; the
/// answer, or a panic after `limit` with the last failure.
pub fn page_through_forward(port: u16, marker: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        match http_get(port) {
            Ok(p) if p.contains(marker) => return p,
            other => assert!(
                start.elapsed() < limit,
                "no page through the forward: {other:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Reads `slurmdash forward`'s stdout (`out`, taken from `child`) until it says
/// `forwarding http://127.0.0.1:PORT/`; returns that local port and all it said so far.
/// Panics with its stderr if it ends first.
pub fn forwarding_port(child: &mut Child, out: &mut impl BufRead) -> (u16, String) {
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).expect("read") == 0 {
            let mut err = String::new();
            let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("slurmdash forward ended early:\n{said}\n{err}");
        }
        said.push_str(&line);
        if let Some(rest) = line.strip_prefix("forwarding http://127.0.0.1:") {
            let local = rest
                .split('/')
                .next()
                .and_then(|p| p.parse::<u16>().ok())
                .expect("local port");
            return (local, said);
        }
    }
}

/// Runs the slurmdash binary with the dev cluster's config.
pub fn slurmdash(args: &[&str]) -> Output {
    slurmdash_with(&dev_config(), args)
}

pub fn slurmdash_with(config: &Path, args: &[&str]) -> Output {
    slurmdash_env(config, args, &[])
}

/// [`slurmdash_with`] with environment variables for slurmdash (e.g. `XDG_RUNTIME_DIR`,
/// `SLURMDASH_STATE_DIR`).
pub fn slurmdash_env(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    slurmdash_command(config)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run slurmdash")
}

/// The slurmdash binary with `--config CONFIG`, without the environment variables that
/// would override the config (`SLURM_HOSTNAME`, `SLURM_PARTITION`, ...).
pub fn slurmdash_command(config: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slurmdash"));
    c.arg("--config")
        .arg(config)
        .env_remove("SLURM_HOSTNAME")
        .env_remove("SLURM_USER")
        .env_remove("SLURM_PARTITION")
        .env_remove("SLURM_ACCOUNT")
        .env_remove("SSH_KEY_PATH")
        .env_remove("SLURM_BASE_RESULTS_DIR");
    c
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The count of a user's line in the "Remote Procedure Call statistics by user" section of
/// `sdiag` or `sacctmgr show stats` (`  sduser(1001) count:12 ave_time:...`); 0 if absent.
fn rpc_count_of(stats: &str, user: &str) -> u64 {
    let part = stats
        .split("Remote Procedure Call statistics by user")
        .nth(1)
        .unwrap_or("");
    part.lines()
        .find_map(|l| {
            let (name, rest) = l.trim_start().split_once('(')?;
            (name.trim() == user).then_some(rest)?;
            let count = rest.split("count:").nth(1)?;
            count.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// The RPCs `user` has sent so far, as the cluster itself counts them (as root on this
/// machine): slurmctld's (`sdiag`) and slurmdbd's (`sacctmgr show stats`). A difference of
/// two readings is what that user cost the daemons in between, when nothing else ran as that
/// user meanwhile.
pub fn rpcs_of(user: &str) -> (u64, u64) {
    let ctld = slurm_admin(&["sdiag"]);
    assert!(ctld.status.success(), "sdiag: {}", text(&ctld.stderr));
    let dbd = slurm_admin(&["sacctmgr", "-n", "show", "stats"]);
    assert!(
        dbd.status.success(),
        "sacctmgr show stats: {}",
        text(&dbd.stderr)
    );
    (
        rpc_count_of(&text(&ctld.stdout), user),
        rpc_count_of(&text(&dbd.stdout), user),
    )
}

/// A lock on this machine, across test processes and Slurm versions, held until dropped: for
/// what the versions' clusters share (the test users' homes, e.g. `~/.config/enroot`),
/// which tests of two versions running side by side must not change under each other.
pub struct MachineLock(std::fs::File);

impl MachineLock {
    pub fn take(name: &str) -> MachineLock {
        let path = std::env::temp_dir().join(format!("slurmdash-test-{name}.lock"));
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        f.lock()
            .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
        MachineLock(f)
    }
}
