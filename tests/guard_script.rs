//! `sbatch/guard.sh` on its own, against stand-in `sacct`, `squeue`, `sbatch`, `scontrol`,
//! `scancel` and `curl` (shell scripts on PATH that print what the test sets and log their
//! arguments): one case per path the guard can take. The real Slurm paths are proven in
//! `retry_guard.rs` and `retry_guard_node.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use slurmdash::launch::guard::{self, ChainLine, GuardPlan};
use slurmdash::registry::Layout;
use slurmdash::triage::Patterns;

struct Stage {
    _tmp: tempfile::TempDir,
    dir: String,
    bin: PathBuf,
    calls: PathBuf,
    sum: String,
    policy: String,
}

const STUBS: &[(&str, &str)] = &[
    // SACCT_SEQ (records split by `;`) answers one record per call, the last one repeating;
    // else SACCT_OUT every time.
    (
        "sacct",
        "if [ -n \"${SACCT_SEQ-}\" ]; then n=$(cat \"$CALLS.sacct\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > \"$CALLS.sacct\"; all=$(printf '%s\\n' \"$SACCT_SEQ\" | tr ';' '\\n'); rec=$(printf '%s\\n' \"$all\" | sed -n \"${n}p\"); [ -n \"$rec\" ] || rec=$(printf '%s\\n' \"$all\" | tail -n 1); printf '%s\\n' \"$rec\"; else printf '%s\\n' \"$SACCT_OUT\"; fi\n",
    ),
    (
        "squeue",
        "echo \"squeue $*\" >> \"$CALLS\"\ncase \"$*\" in *--jobs=*) [ -n \"${SQUEUE_JOB-}\" ] && printf '%s\\n' \"$SQUEUE_JOB\" ;; *) [ -n \"${SQUEUE_ME-}\" ] && printf '%s\\n' \"$SQUEUE_ME\" ;; esac\nexit 0\n",
    ),
    (
        "sbatch",
        "echo \"sbatch $*\" >> \"$CALLS\"\ncase \"$*\" in *--test-only*) [ -z \"${STUB_TEST_ONLY-}\" ] || { echo \"$STUB_TEST_ONLY\" >&2; exit 1; }; echo 'sbatch: Job 1 to start at now' >&2; exit 0 ;; esac\ncase \"$*\" in *--hold*) for a do printf '%s\\n' \"$a\"; done > \"$CALLS.hold-args\"; echo \"stdin $(sha256sum | cut -c1-64)\" >> \"$CALLS\"; echo \"${SLURMDASH_RESUME_ATTEMPT-unset}\" > \"$CALLS.resume\" ;; esac\nn=$(cat \"$CALLS.id\" 2>/dev/null || echo 100); n=$((n + 1)); echo $n > \"$CALLS.id\"; echo \"$n\"\n",
    ),
    ("scontrol", "echo \"scontrol $*\" >> \"$CALLS\"\n"),
    ("scancel", "echo \"scancel $*\" >> \"$CALLS\"\n"),
    ("sleep", ":\n"),
    (
        "curl",
        "echo \"curl $*\" >> \"$CALLS\"\necho \"config $(cat)\" >> \"$CALLS\"\nfor a do case $a in @*) echo \"body $(cat \"${a#@}\")\" >> \"$CALLS\" ;; esac; done\n",
    ),
];

fn stage(limit: u32, webhook: bool) -> Stage {
    stage_resuming(limit, webhook, "", 0)
}

/// [`stage`] for a launch that resumes after `resume` (e.g. `timeout`), `max` times at most.
fn stage_resuming(limit: u32, webhook: bool, resume: &str, max: u32) -> Stage {
    stage_plan(limit, webhook, resume, max, |p| p)
}

/// [`stage_resuming`] with the plan changed by `f` (an adopted job's options).
fn stage_plan(
    limit: u32,
    webhook: bool,
    resume: &str,
    max: u32,
    f: impl FnOnce(GuardPlan) -> GuardPlan,
) -> Stage {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path().join("results");
    let layout = Layout::new(root.to_str().expect("utf-8"), "L1");
    for d in ["meta", "sbatch", "slurm-logs/train-7"] {
        std::fs::create_dir_all(Path::new(&layout.job_dir).join(d)).expect("mkdir");
    }
    let on = slurmdash::launch::resume::parse(resume).expect("resume list");
    let plan =
        GuardPlan::resuming(limit - 1, &on, max, &[], &Patterns::builtin(), None).expect("plan");
    let plan = f(GuardPlan {
        webhook: webhook.then(|| "https://hooks.example/T0KEN".to_string()),
        ..plan
    });
    // What `submit` stages, and the policy sha256 it pins on the guard's command line.
    let (files, policy) =
        guard::staged_files(&layout, &plan, "train", "short", Some("research")).expect("files");
    for (p, c) in &files {
        std::fs::write(p, c).expect("write");
    }
    let w = |p: String, c: &str| std::fs::write(p, c).expect("write");
    w(layout.script_path(), "#!/bin/bash\necho work\n");
    let sum = Command::new("sha256sum")
        .arg(layout.script_path())
        .output()
        .expect("sha256sum");
    let sum = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    for (name, body) in STUBS {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).expect("stub");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let calls = tmp.path().join("calls");
    Stage {
        dir: layout.job_dir.clone(),
        _tmp: tmp,
        bin,
        calls,
        sum,
        policy,
    }
}

impl Stage {
    fn log(&self, stream: &str, text: &str) {
        std::fs::write(
            format!("{}/slurm-logs/train-7/main.{stream}", self.dir),
            text,
        )
        .expect("log");
    }

    /// Runs `guard.sh run DIR 7 N SUM` with the stand-ins; returns the chain and the calls.
    fn run(&self, n: u32, sacct: &str, env: &[(&str, &str)]) -> (Vec<ChainLine>, String) {
        self.run_after(n, 0, sacct, env)
    }

    /// [`Stage::run`] for an attempt that came after `resumes` resumes.
    fn run_after(
        &self,
        n: u32,
        resumes: u32,
        sacct: &str,
        env: &[(&str, &str)],
    ) -> (Vec<ChainLine>, String) {
        self.run_with(&n.to_string(), &resumes.to_string(), sacct, env)
    }

    /// [`Stage::run_after`] with the attempt number and resume count as given on the
    /// command line.
    fn run_with(
        &self,
        n: &str,
        resumes: &str,
        sacct: &str,
        env: &[(&str, &str)],
    ) -> (Vec<ChainLine>, String) {
        let (chain, calls, stderr, ok) = self.run_raw(n, resumes, &[], sacct, env);
        assert!(ok, "guard.sh failed: {stderr}");
        (chain, calls)
    }

    /// Runs guard.sh; also returns its stderr and whether it exited 0.
    fn run_raw(
        &self,
        n: &str,
        resumes: &str,
        extra: &[&str],
        sacct: &str,
        env: &[(&str, &str)],
    ) -> (Vec<ChainLine>, String, String, bool) {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("sh")
            .arg(guard::script_path(&Layout::new(
                self.dir.trim_end_matches("/L1"),
                "L1",
            )))
            .args(["run", &self.dir, "7", n, &self.sum])
            .arg(guard::guard_sha256())
            .arg(resumes)
            .arg(&self.policy)
            .args(extra)
            .env("PATH", path)
            .env("CALLS", &self.calls)
            .env("SACCT_OUT", sacct)
            .env("SLURM_MEM_PER_NODE", "100")
            .envs(env.iter().copied())
            .output()
            .expect("run guard.sh");
        let chain = std::fs::read_to_string(guard::chain_path(&self.dir)).unwrap_or_default();
        let calls = std::fs::read_to_string(&self.calls).unwrap_or_default();
        (
            guard::parse_chain(&chain),
            calls,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.success(),
        )
    }
}

fn decision(chain: &[ChainLine]) -> &ChainLine {
    chain
        .iter()
        .find(|l| l.is_decision())
        .unwrap_or_else(|| panic!("no decision: {chain:?}"))
}

#[test]
fn an_nccl_line_is_infra_and_is_resubmitted_with_a_new_guard() {
    let s = stage(3, false);
    s.log(
        "err",
        "step 1\nNCCL WARN NET/IB : Got completion from peer\nTraceback\n",
    );
    let (chain, calls) = s.run(1, "FAILED|None|1:0", &[]);
    let d = decision(&chain);
    assert_eq!(d.class.as_deref(), Some("ERR_INFRA"));
    assert_eq!(
        d.evidence.as_deref(),
        Some("main.err: NCCL WARN NET/IB : Got completion from peer")
    );
    assert_eq!(d.decision.as_deref(), Some("retried as 101"));
    assert_eq!(d.next_id(), Some(101));
    // Held, then its guard (afternotok on the new attempt, number 2), then released.
    let lines: Vec<&str> = calls.lines().filter(|l| !l.starts_with("squeue")).collect();
    // The script reaches sbatch on stdin, the very bytes whose sha256 was checked.
    assert_eq!(lines[0], "sbatch --parsable --hold --export=ALL", "{calls}");
    assert_eq!(lines[1], format!("stdin {}", s.sum), "{calls}");
    assert!(
        lines[2].contains("--job-name=sdguard-train")
            && lines[2].contains("--dependency=afternotok:101")
            && lines[2].contains("--kill-on-invalid-dep=yes")
            && lines[2].contains(" run ")
            && lines[2].ends_with(&format!(
                " 101 2 {} {} 0 {} -",
                s.sum,
                guard::guard_sha256(),
                s.policy
            )),
        "{calls}"
    );
    assert_eq!(lines[3], "scontrol release 101");
    assert!(chain
        .iter()
        .any(|l| l.event == "armed" && l.job_id() == Some(101)));
    assert!(
        s.dir.len() > 1
            && std::path::Path::new(&format!("{}/slurm-logs/train-101", s.dir)).is_dir()
    );
}

#[test]
fn exit_1_is_a_program_error_and_nothing_is_submitted() {
    let s = stage(3, false);
    s.log("err", "ValueError: bad input\n");
    let (chain, calls) = s.run(1, "FAILED|None|1:0", &[]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("not retried: ERR_PROGRAM (exit code 1)")
    );
    assert!(!calls.contains("sbatch"), "{calls}");
}

#[test]
fn oom_lines_win_over_nccl_lines_and_stdout_is_read_after_stderr() {
    let s = stage(3, false);
    s.log("err", "");
    s.log(
        "out",
        "NCCL WARN NET/IB : peer gone\nslurmstepd: error: Detected 1 oom-kill event(s) in StepId=7.0\n",
    );
    let (chain, calls) = s.run(1, "FAILED|None|1:0", &[]);
    let d = decision(&chain);
    assert_eq!(d.class.as_deref(), Some("ERR_OOM"));
    assert!(
        d.evidence
            .as_deref()
            .unwrap_or("")
            .starts_with("main.out: slurmstepd"),
        "{d:?}"
    );
    assert!(!calls.contains("sbatch"));
}

#[test]
fn a_cancelled_attempt_starts_nothing() {
    let s = stage(3, false);
    let (chain, calls) = s.run(1, "CANCELLED by 1001|None|0:15", &[]);
    let d = decision(&chain);
    assert_eq!(d.decision.as_deref(), Some("cancelled"));
    assert_eq!(d.class.as_deref(), Some("ERR_CANCELLED"));
    assert!(!calls.contains("sbatch"));
}

#[test]
fn the_limit_ends_the_chain() {
    let s = stage(2, false);
    let (chain, calls) = s.run(2, "NODE_FAIL|None|0:0", &[]);
    assert_eq!(decision(&chain).decision.as_deref(), Some("limit reached"));
    assert!(!calls.contains("sbatch"));
}

#[test]
fn a_changed_script_is_not_resubmitted() {
    let s = stage(3, false);
    std::fs::write(
        format!("{}/sbatch/job_L1.sbatch", s.dir),
        "#!/bin/bash\necho something else\n",
    )
    .expect("edit");
    let (chain, calls) = s.run(1, "FAILED|NodeDown|1:0", &[]);
    let d = decision(&chain);
    assert_eq!(d.evidence.as_deref(), Some("reason NodeDown"));
    assert!(
        d.decision
            .as_deref()
            .unwrap_or("")
            .contains("changed since it was launched"),
        "{d:?}"
    );
    assert!(!calls.contains("sbatch"));
}

#[test]
fn a_copy_already_queued_is_adopted() {
    let s = stage(3, false);
    // Submitted from the job directory under the launch's name (the script went on stdin).
    let me = format!("77|PENDING|{}|train|(null)", s.dir);
    let (chain, calls) = s.run(1, "NODE_FAIL|None|0:0", &[("SQUEUE_ME", &me)]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("retried as 77 (already queued)")
    );
    assert!(!calls.contains("--hold"), "{calls}");
    assert!(calls.contains("--dependency=afternotok:77"), "{calls}");
}

#[test]
fn a_job_slurm_requeued_gets_its_guard_back_and_no_decision() {
    let s = stage(3, false);
    let (chain, calls) = s.run(1, "NODE_FAIL|None|0:0", &[("SQUEUE_JOB", "PENDING")]);
    assert!(!chain.iter().any(ChainLine::is_decision), "{chain:?}");
    assert!(calls.contains("--dependency=afternotok:7 "), "{calls}");
    assert!(!calls.contains("--hold"));
}

#[test]
fn a_copy_queued_by_an_older_version_is_adopted_by_its_script_path() {
    let s = stage(3, false);
    let me = format!("78|RUNNING|/home/u|train|{}/sbatch/job_L1.sbatch", s.dir);
    let (chain, calls) = s.run(1, "NODE_FAIL|None|0:0", &[("SQUEUE_ME", &me)]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("retried as 78 (already queued)")
    );
    assert!(!calls.contains("--hold"), "{calls}");
    // Another launch's job of the same name elsewhere is not this launch's.
    let s = stage(3, false);
    let other = "79|PENDING|/lustre/other/L2|train|(null)";
    let (chain, _) = s.run(1, "NODE_FAIL|None|0:0", &[("SQUEUE_ME", other)]);
    assert_eq!(decision(&chain).decision.as_deref(), Some("retried as 101"));
}

#[test]
fn a_guard_sh_changed_on_disk_queues_no_guard() {
    let s = stage(3, false);
    let path = format!("{}/sbatch/guard.sh", s.dir);
    let mut g = std::fs::read_to_string(&path).expect("guard.sh");
    g.push_str("\necho planted\n");
    std::fs::write(&path, g).expect("write");
    let (chain, calls) = s.run(1, "NODE_FAIL|None|0:0", &[]);
    assert_eq!(decision(&chain).decision.as_deref(), Some("retried as 101"));
    assert!(!calls.contains("--dependency"), "{calls}");
    assert!(!chain.iter().any(|l| l.event == "armed"), "{chain:?}");
}

#[test]
fn a_webhook_file_that_is_not_a_url_is_never_given_to_curl() {
    let s = stage(3, true);
    std::fs::write(
        format!("{}/meta/webhook.url", s.dir),
        "https://x/\" output = \"/tmp/pwned\n",
    )
    .expect("plant");
    let (chain, calls) = s.run(1, "TIMEOUT|TimeLimit|0:0", &[]);
    assert!(decision(&chain).decision.is_some());
    assert!(!calls.contains("curl"), "{calls}");
}

#[test]
fn the_webhook_gets_each_decision_with_its_url_only_on_curls_stdin() {
    let s = stage(3, true);
    let (_, calls) = s.run(1, "TIMEOUT|TimeLimit|0:0", &[]);
    let curl = calls
        .lines()
        .find(|l| l.starts_with("curl "))
        .unwrap_or_else(|| panic!("{calls}"));
    assert!(curl.contains(" -K - "), "{curl}");
    assert!(!curl.contains("T0KEN"));
    assert!(
        calls
            .lines()
            .any(|l| l == "config url = \"https://hooks.example/T0KEN\""),
        "{calls}"
    );
    let body = calls
        .lines()
        .find_map(|l| l.strip_prefix("body "))
        .unwrap_or_else(|| panic!("{calls}"));
    let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
    assert_eq!(v["job"], "7");
    assert_eq!(v["class"], "ERR_TIMEOUT");
    assert_eq!(v["decision"], "not retried: ERR_TIMEOUT (state TIMEOUT)");
}

#[test]
fn the_new_attempt_does_not_inherit_the_guards_allocation() {
    let s = stage(3, false);
    // A stand-in sbatch that records what it sees of the guard's own allocation.
    std::fs::write(
        s.bin.join("sbatch"),
        "#!/bin/sh\necho \"sbatch $* mem=${SLURM_MEM_PER_NODE-unset}\" >> \"$CALLS\"\necho 101\n",
    )
    .expect("stub");
    let (_, calls) = s.run(1, "BOOT_FAIL|None|0:0", &[]);
    assert!(
        calls.contains("--hold --export=ALL") && calls.contains("mem=unset"),
        "{calls}"
    );
}

#[test]
fn the_new_attempt_keeps_the_sites_slurm_conf() {
    let s = stage(3, false);
    std::fs::write(
        s.bin.join("sbatch"),
        "#!/bin/sh\necho \"sbatch conf=${SLURM_CONF-unset} job=${SLURM_JOB_ID-unset}\" >> \"$CALLS\"\necho 101\n",
    )
    .expect("stub");
    let (chain, calls) = s.run(
        1,
        "BOOT_FAIL|None|0:0",
        &[("SLURM_CONF", "/site/b/slurm.conf"), ("SLURM_JOB_ID", "8")],
    );
    assert!(
        calls.contains("conf=/site/b/slurm.conf job=unset"),
        "{calls}"
    );
    assert_eq!(decision(&chain).next_id(), Some(101), "{chain:?}");
}

#[test]
fn a_refused_resubmission_quotes_sbatchs_own_error() {
    let s = stage(3, false);
    std::fs::write(
        s.bin.join("sbatch"),
        "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified' >&2\nexit 1\n",
    )
    .expect("stub");
    let (chain, _) = s.run(1, "BOOT_FAIL|None|0:0", &[]);
    let d = decision(&chain).decision.clone().unwrap_or_default();
    assert!(
        d.starts_with("not retried: sbatch refused the new attempt: sbatch: error: Batch job submission failed: Invalid account"),
        "{d}"
    );
}

/// The value of SLURMDASH_RESUME_ATTEMPT the resubmission's sbatch saw.
fn resume_seen(s: &Stage) -> String {
    std::fs::read_to_string(format!("{}.resume", s.calls.display()))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn a_timeout_is_resumed_when_asked_with_the_resume_number_and_its_own_count() {
    let s = stage_resuming(3, false, "timeout,preempt", 4);
    let (chain, calls) = s.run_after(3, 1, "TIMEOUT|None|0:0", &[]);
    let d = decision(&chain);
    assert_eq!(d.class.as_deref(), Some("ERR_TIMEOUT"));
    assert_eq!(
        d.decision.as_deref(),
        Some("resumed after TIMEOUT as 101 (resume 2 of 4)")
    );
    assert_eq!(d.next_id(), Some(101));
    assert_eq!(resume_seen(&s), "2", "{calls}");
    // Attempt 3 with retries limit 3: only 1 of its 2 earlier attempts was a retry, so the
    // retries are not used up; the next guard carries the count of resumes.
    let arm = calls
        .lines()
        .find(|l| l.contains("--job-name=sdguard-train"))
        .unwrap_or_else(|| panic!("no guard armed: {calls}"));
    assert!(
        arm.ends_with(&format!(
            " 101 4 {} {} 2 {} -",
            s.sum,
            guard::guard_sha256(),
            s.policy
        )),
        "{arm}"
    );
    assert!(calls.contains("scontrol release 101"), "{calls}");
}

#[test]
fn a_preempted_attempt_is_resumed_not_retried_when_preempt_is_on() {
    let s = stage_resuming(1, false, "preempt", 2);
    let (chain, _) = s.run(1, "PREEMPTED|None|0:15", &[]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("resumed after PREEMPTED as 101 (resume 1 of 2)")
    );
    assert_eq!(resume_seen(&s), "1");
}

#[test]
fn resumes_stop_at_max_resumes_and_other_states_are_not_resumed() {
    let s = stage_resuming(3, false, "timeout", 2);
    let (chain, calls) = s.run_after(3, 2, "TIMEOUT|None|0:0", &[]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("not resumed: resume limit reached (2 of max_resumes 2)")
    );
    assert!(!calls.contains("sbatch"), "{calls}");

    let s = stage_resuming(3, false, "timeout", 2);
    s.log("err", "ValueError: bad input\n");
    let (chain, calls) = s.run(1, "FAILED|None|1:0", &[]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("not retried: ERR_PROGRAM (exit code 1)")
    );
    assert!(!calls.contains("sbatch"), "{calls}");

    // Without resume, a timeout stays what it was: not retried.
    let s = stage(3, false);
    let (chain, calls) = s.run(1, "TIMEOUT|None|0:0", &[]);
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some("not retried: ERR_TIMEOUT (state TIMEOUT)")
    );
    assert!(!calls.contains("sbatch"), "{calls}");
}

/// slurmdbd may show a failed job as FAILED with exit code 0:0 for a moment: the guard reads
/// again and tells the real code; a FAILED that stays 0:0 is taken as it is, not waited on
/// for good.
#[test]
fn a_failed_record_without_its_exit_code_yet_is_read_again() {
    let s = stage(3, false);
    let seq = "FAILED|None|0:0;FAILED|None|0:0;FAILED|None|1:0";
    let (chain, _) = s.run(1, "", &[("SACCT_SEQ", seq)]);
    let d = decision(&chain);
    assert_eq!(d.evidence.as_deref(), Some("exit code 1"), "{d:?}");
    assert_eq!(
        d.decision.as_deref(),
        Some("not retried: ERR_PROGRAM (exit code 1)"),
        "{d:?}"
    );
    let s = stage(3, false);
    let (chain, _) = s.run(1, "FAILED|None|0:0", &[]);
    assert_eq!(decision(&chain).evidence.as_deref(), Some("exit code 0"));
}

/// The job can write its own job directory: one that raises `max_resumes` (and `limit`) in
/// meta/guard.conf, or makes every line an infrastructure error, gets no more resumes or
/// retries than were launched: the guard finds the policy changed and does nothing.
#[test]
fn a_job_that_rewrites_its_guard_conf_gets_no_more_resumes() {
    let s = stage_resuming(1, false, "timeout", 2);
    let conf = format!("{}/meta/guard.conf", s.dir);
    let text = std::fs::read_to_string(&conf).expect("conf");
    assert!(text.contains("max_resumes=2\n"), "{text}");
    std::fs::write(
        &conf,
        text.replace("max_resumes=2", "max_resumes=1000")
            .replace("limit=1", "limit=1000"),
    )
    .expect("rewrite");
    let (chain, calls, stderr, _) = s.run_raw("3", "2", &[], "TIMEOUT|None|0:0", &[]);
    let d = decision(&chain).decision.clone().unwrap_or_default();
    assert!(
        d.starts_with(
            "not retried or resumed: meta/guard.conf or meta/triage-*.ere changed since the launch"
        ),
        "{d}"
    );
    assert!(stderr.contains("changed since the launch"), "{stderr}");
    assert!(!calls.contains("sbatch"), "{calls}");

    // Triage patterns rewritten to call any failure an infrastructure error: no retry.
    let s = stage(3, false);
    std::fs::write(format!("{}/meta/triage-infra.ere", s.dir), ".\n").expect("ere");
    s.log("err", "ValueError: bad input\n");
    let (chain, calls, _, _) = s.run_raw("1", "0", &[], "FAILED|None|1:0", &[]);
    assert!(
        decision(&chain)
            .decision
            .as_deref()
            .unwrap_or("")
            .contains("changed since the launch"),
        "{chain:?}"
    );
    assert!(!calls.contains("sbatch"), "{calls}");
}

/// A count past 2^63 wraps in sh's arithmetic and passes every `-ge` check: it is refused
/// by its form (digits only, at most 9) before any arithmetic, with a message naming it.
#[test]
fn a_huge_count_is_refused_by_its_form() {
    let huge = "99999999999999999999";
    // In guard.conf as staged (pinned, so not a rewrite): refused, not resumed.
    let s = stage_resuming(1, false, "timeout", 2);
    let conf = format!("{}/meta/guard.conf", s.dir);
    let text = std::fs::read_to_string(&conf)
        .expect("conf")
        .replace("max_resumes=2", &format!("max_resumes={huge}"));
    std::fs::write(&conf, &text).expect("conf");
    let read = |f: &str| std::fs::read_to_string(format!("{}/meta/{f}", s.dir)).expect("ere");
    let s = Stage {
        policy: guard::policy_sha256(&text, &read("triage-oom.ere"), &read("triage-infra.ere")),
        ..s
    };
    let (chain, calls, stderr, ok) = s.run_raw("1", "0", &[], "TIMEOUT|None|0:0", &[]);
    let want = format!(
        "max_resumes in meta/guard.conf '{huge}' is not a whole number of at most 9 digits"
    );
    assert!(!ok && stderr.contains(&want), "{stderr}");
    assert_eq!(
        decision(&chain).decision.as_deref(),
        Some(format!("not retried or resumed: {want}").as_str())
    );
    assert!(!calls.contains("sbatch"), "{calls}");

    // On the command line: the resume count.
    let s = stage_resuming(1, false, "timeout", 2);
    let (_, calls, stderr, ok) = s.run_raw("1", huge, &[], "TIMEOUT|None|0:0", &[]);
    assert!(
        !ok && stderr.contains(&format!("resume count '{huge}' is not a whole number")),
        "{stderr}"
    );
    assert!(!calls.contains("sbatch"), "{calls}");
}

/// After an infrastructure failure the new attempt is kept off the nodes the failed one
/// ran on (sacct's NodeList), merged with the script's own --exclude (which the command
/// line would otherwise replace) and with the nodes earlier retries left out; the chain
/// says so and the next guard carries the list on.
#[test]
fn an_infra_retry_excludes_the_failed_nodes_merged_with_earlier_ones() {
    let s = stage(3, false);
    let script = std::fs::read_to_string(format!("{}/sbatch/job_L1.sbatch", s.dir));
    let script = script.expect("staged script");
    let own = script.replacen("\n", "\n#SBATCH --exclude=cpu01\n", 1);
    std::fs::write(format!("{}/sbatch/job_L1.sbatch", s.dir), &own).expect("script");
    let sum = Command::new("sh")
        .args(["-c", "sha256sum < \"$1\" | cut -c1-64", "sh"])
        .arg(format!("{}/sbatch/job_L1.sbatch", s.dir))
        .output()
        .expect("sha256sum");
    let s = Stage {
        sum: String::from_utf8_lossy(&sum.stdout).trim().to_string(),
        ..s
    };
    let (chain, calls, stderr, ok) =
        s.run_raw("2", "0", &["gpu01"], "NODE_FAIL|None|0:0|spare[01-02]", &[]);
    assert!(ok, "{stderr}");
    let d = decision(&chain);
    assert_eq!(
        d.decision.as_deref(),
        Some("retried as 101, not on spare[01-02] where it failed (--exclude=gpu01,spare[01-02],cpu01)"),
        "{d:?}"
    );
    let resubmit = calls
        .lines()
        .find(|l| l.contains("--hold"))
        .unwrap_or_else(|| panic!("not resubmitted: {calls}"));
    assert!(
        resubmit.ends_with(" --exclude=gpu01,spare[01-02],cpu01"),
        "{resubmit}"
    );
    let arm = calls
        .lines()
        .find(|l| l.contains("--job-name=sdguard-train"))
        .unwrap_or_else(|| panic!("no guard armed: {calls}"));
    assert!(arm.ends_with(" gpu01,spare[01-02]"), "{arm}");

    // Kept off every node that could run it, the attempt is not queued to wait forever:
    // the scheduler's check (`sbatch --test-only`) refuses it and the chain ends, saying why.
    let s = stage(3, false);
    let refused = "allocation failure: Requested node configuration is not available";
    let (chain, calls) = s.run(
        1,
        "NODE_FAIL|None|0:0|gpu02",
        &[("STUB_TEST_ONLY", refused)],
    );
    let d = decision(&chain);
    let said = d.decision.as_deref().unwrap_or_default();
    assert!(
        said.starts_with("not retried: no node is left to run it once gpu02, where attempts failed, is left out (sbatch --test-only: allocation failure: Requested node configuration"),
        "{d:?}"
    );
    assert!(
        calls.contains("--test-only") && !calls.contains("--hold"),
        "{calls}"
    );

    // A program error is not moved anywhere; nor is a preemption.
    let s = stage(3, false);
    let (_, calls) = s.run(1, "PREEMPTED|None|0:15|gpu02", &[]);
    assert!(
        calls.contains("--hold") && !calls.contains("--exclude"),
        "{calls}"
    );
}

/// An adopted job (`slurmdash adopt`): its own options reach the resubmission one argument
/// each (a name with a space stays one), its `--exclude` is merged with the failed node, and
/// a job that rewrites an `opt=` line gets no retry (the policy pin covers them).
#[test]
fn an_adopted_jobs_options_reach_sbatch_one_argument_each() {
    let opts = |p: GuardPlan| GuardPlan {
        sbatch: vec![
            "--job-name=my job".into(),
            "--partition=short".into(),
            "--chdir=/home/u/a b".into(),
            "--no-requeue".into(),
        ],
        exclude: "cpu01".into(),
        ..p
    };
    let s = stage_plan(3, false, "", 0, opts);
    let (chain, calls) = s.run(1, "NODE_FAIL|None|0:0|gpu02", &[]);
    let d = decision(&chain);
    assert_eq!(
        d.decision.as_deref(),
        Some("retried as 101, not on gpu02 where it failed (--exclude=gpu02,cpu01)"),
        "{d:?}"
    );
    let args = std::fs::read_to_string(format!("{}.hold-args", s.calls.display()))
        .unwrap_or_else(|_| panic!("not resubmitted: {calls}"));
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args,
        [
            "--parsable",
            "--hold",
            "--export=ALL",
            "--job-name=my job",
            "--partition=short",
            "--chdir=/home/u/a b",
            "--no-requeue",
            "--exclude=gpu02,cpu01",
        ]
    );

    // Rewritten by the job: nothing is resubmitted.
    let s = stage_plan(3, false, "", 0, opts);
    let conf = format!("{}/meta/guard.conf", s.dir);
    let text = std::fs::read_to_string(&conf).expect("guard.conf");
    std::fs::write(&conf, text.replace("--partition=short", "--partition=long")).expect("write");
    let (chain, calls, _, ok) = s.run_raw("1", "0", &[], "NODE_FAIL|None|0:0|gpu02", &[]);
    assert!(!ok && !calls.contains("--hold"), "{calls}");
    assert!(
        decision(&chain)
            .decision
            .as_deref()
            .unwrap_or("")
            .contains("meta/guard.conf or meta/triage-*.ere changed"),
        "{chain:?}"
    );
}
