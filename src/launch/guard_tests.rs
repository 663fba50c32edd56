#![allow(clippy::unwrap_used)]

use super::*;
use crate::triage::TriageConfig;

/// Lines the built-in patterns are about, and near misses.
const SAMPLES: &[&str] = &[
    "gpu01:123:456 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<43123> with error 12",
    "NCCL WARN Net : Call to recv from 10.1.1.1<1234> failed : Broken pipe",
    "NCCL WARN NET/Socket: connection closed",
    "NCCL WARN Network is fine",
    "torch.distributed.DistBackendError: NCCL error in: ..., unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
    "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed",
    "remote process exited or there was a network error",
    "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
    "NVRM: Xid(PCI:0000:3b:00): 48",
    "XID 48 on gpu 3",
    "Xid error on device",
    "Xid79",
    "myXid 79",
    "Xiderror",
    "uncorrectable ECC error encountered",
    "srun: error: Socket timed out on send/recv operation",
    "slurmstepd: error: *** JOB 7 ON gpu01 CANCELLED AT 2026-11-24T01:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
    "srun: error: Node failure on gpu02",
    "slurmstepd: error: pyxis:     [ERROR] Could not process JSON input",
    "slurmstepd-gpu01: error: pyxis: failed to import docker image: host:5001#team/x:1",
    "pyxis: importing docker image ... returned error code: 401",
    "pyxis: something returned error code: 404",
    "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=12.batch",
    "Detected 1 oom_kill event in StepId=3.0",
    "srun: error: gpu01: task 0: Out Of Memory",
    "srun: error: gpu01: tasks 0-3,5: Out Of Memory",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError: CUDA error: out of memory",
    "Traceback (most recent call last):",
    "ValueError: bad input",
    "loss 0.123 step 100",
    "java.lang.OutOfMemoryError: Java heap space",
    "custom-failure 42 on rack7",
];

/// The lines of `samples` that `grep -E -i` matches with `ere`.
fn grep_matches(ere: &str, samples: &[&str]) -> Vec<String> {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let pf = dir.path().join("p.ere");
    std::fs::write(&pf, format!("{ere}\n")).unwrap();
    let mut child = std::process::Command::new("grep")
        .args(["-E", "-i", "-f"])
        .arg(&pf)
        .env("LC_ALL", "C.UTF-8")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = samples.join("\n");
    input.push('\n');
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn each_ere_matches_the_same_sample_lines_as_the_rust_regex() {
    let cfg = TriageConfig {
        infra_patterns: vec![
            r"custom-failure \d+ on rack\d".into(),
            r"(?:Socket|Pipe) timed out".into(),
        ],
        oom_patterns: vec![r"java\.lang\.OutOfMemoryError".into()],
    };
    let patterns = Patterns::new(&cfg).unwrap();
    let plan = GuardPlan::new(2, &[], &patterns, None).unwrap();
    let lists = [
        (patterns.infra.texts(), &plan.infra),
        (patterns.oom.texts(), &plan.oom),
    ];
    let mut checked = 0;
    for (rust, eres) in lists {
        assert_eq!(rust.len(), eres.len());
        for (r, e) in rust.iter().zip(eres.iter()) {
            let re = regex::Regex::new(&format!("(?i){r}")).unwrap();
            let want: Vec<String> = SAMPLES
                .iter()
                .filter(|l| re.is_match(l))
                .map(|l| l.to_string())
                .collect();
            let got = grep_matches(e, SAMPLES);
            assert_eq!(got, want, "Rust `{r}` vs ERE `{e}`");
            assert!(!want.is_empty(), "no sample line for `{r}`");
            checked += 1;
        }
    }
    assert!(checked >= 19, "{checked}");
}

#[test]
fn patterns_with_no_posix_form_are_refused_by_name() {
    assert!(to_ere(r"(?=x)").is_err());
    assert!(to_ere(r"foo\bbar").is_err());
    assert!(to_ere(r"\p{L}+").is_err());
    assert_eq!(to_ere(r"a\.b\/c").unwrap(), r"a\.b/c");
    assert_eq!(to_ere(r"x+?y").unwrap(), "x+y");
    assert_eq!(to_ere(r"[\d,-]+").unwrap(), "[0-9,-]+");
}

#[test]
fn no_guard_for_secrets_or_zero_retries() {
    let p = Patterns::builtin();
    assert!(GuardPlan::new(0, &[], &p, None).is_err());
    let e = GuardPlan::new(3, &["HF_TOKEN".into()], &p, None).unwrap_err();
    assert!(e.contains("secrets"), "{e}");
    assert_eq!(GuardPlan::new(3, &[], &p, None).unwrap().max_attempts, 4);
    // Resumes alone get a guard (with no retries), but not with secrets.
    let on = vec!["timeout".to_string()];
    let g = GuardPlan::resuming(0, &on, 5, &[], &p, None).unwrap();
    assert_eq!((g.max_attempts, g.max_resumes), (1, 5));
    assert_eq!(g.resume_conf(), "resume=timeout\nmax_resumes=5\n");
    assert!(GuardPlan::resuming(0, &on, 0, &[], &p, None).is_err());
    assert!(GuardPlan::resuming(2, &on, 5, &["HF_TOKEN".into()], &p, None).is_err());
}

#[test]
fn webhook_file_holds_only_a_url() {
    let f = webhook_file(" https://ntfy.example/t0ken?x=1&y=%22 ").unwrap();
    assert_eq!(f, "https://ntfy.example/t0ken?x=1&y=%22\n");
    assert!(webhook_file("ftp://x").is_err());
    // Plain http would carry the token and the job's output in clear text: only to the
    // node itself.
    let e = webhook_file("http://hooks.example/T0KEN").unwrap_err();
    assert!(
        e.contains("is plain http") && e.contains("use an https:// URL"),
        "{e}"
    );
    assert!(!e.contains("T0KEN"), "{e}");
    for bad in [
        "http://localhost.evil.example/x",
        "http://127.0.0.1.evil.example/",
    ] {
        assert!(webhook_file(bad).is_err(), "{bad}");
    }
    for ok in [
        "http://localhost:8080/hook",
        "http://127.0.0.1/x",
        "http://[::1]:9/",
    ] {
        assert!(webhook_file(ok).is_ok(), "{ok}");
    }
    // Nothing that could end the URL inside curl's config line or add another option.
    for bad in [
        "https://x/\nheader = y",
        "https://x/\"\noutput = \"/home/u/.bashrc",
        "https://x/a b",
        "https://x/\\",
    ] {
        let e = webhook_file(bad).unwrap_err();
        assert!(e.contains("cannot hold"), "{bad:?}: {e}");
    }
    assert_eq!(
        redact("https://user:pw@hooks.example:8443/T000/B000?tok=1"),
        "https://hooks.example:8443/…"
    );
}

#[test]
fn the_guard_hash_is_the_staged_scripts() {
    let h = guard_sha256();
    assert_eq!(h.len(), 64);
    assert!(h.bytes().all(|b| b.is_ascii_hexdigit()));
    let out = std::process::Command::new("sha256sum")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/guard.sh"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&h));
}

#[test]
fn chain_lines_read_back_and_torn_lines_are_skipped() {
    let out = "==> /r/a/meta/chain.jsonl\n\
{\"time\":\"t\",\"event\":\"armed\",\"job\":\"5\",\"attempt\":1,\"guard\":\"6\"}\n\
{\"time\":\"t\",\"event\":\"decision\",\"job\":\"5\",\"attempt\":1,\"state\":\"FAILED\",\"class\":\"ERR_INFRA\",\"evidence\":\"main.err: NCCL WARN NET/IB : x\",\"decision\":\"retried as 7\",\"next\":\"7\"}\n\
{\"time\":\"t\",\"event\":\"deci\n\
==> /r/b/meta/chain.jsonl\n";
    let chains = split_chains(out);
    assert_eq!(chains.len(), 2);
    let (p, lines) = &chains[0];
    assert_eq!(p, "/r/a/meta/chain.jsonl");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].guard.as_deref(), Some("6"));
    assert!(lines[1].is_decision());
    assert_eq!(lines[1].next_id(), Some(7));
    assert_eq!(
        lines[1].describe(),
        "attempt 1 (job 5): retried as 7 · ERR_INFRA: main.err: NCCL WARN NET/IB : x"
    );
    assert!(chains[1].1.is_empty());
}

#[test]
fn cancel_keeps_scancels_arguments_and_cancels_guards_first() {
    let argv = cancel_argv(&[JobId::new(5), JobId::new(6)]);
    assert_eq!(&argv[..2], ["sh", "-c"]);
    assert_eq!(&argv[3..], ["sh", "--verbose", "5", "6"]);
    assert!(argv[2].ends_with("exec scancel \"$@\""));
}

/// An array id holds `[`, which a regex would read as a bracket expression (`7_[1-3]`
/// matching job `7_1`): the cancel records the attempt armed for that very id.
#[test]
fn cancel_records_the_attempt_of_the_very_id_given() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("job");
    std::fs::create_dir_all(dir.join("meta")).unwrap();
    let chain = dir.join("meta/chain.jsonl");
    std::fs::write(
        &chain,
        "{\"time\":\"t\",\"event\":\"armed\",\"job\":\"7_[1-3]\",\"attempt\":2,\"guard\":\"90\"}\n{\"time\":\"t\",\"event\":\"armed\",\"job\":\"7_1\",\"attempt\":5,\"guard\":\"91\"}\n",
    )
    .unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let stub = |name: &str, body: &str| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    stub(
        "squeue",
        &format!(
            "echo '90|sdguard-train|afternotok:7_[1-3]|{}|x'\n",
            dir.display()
        ),
    );
    stub("scancel", "exit 0\n");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", CANCEL_SCRIPT, "sh", "7_[1-3]"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = parse_chain(&std::fs::read_to_string(&chain).unwrap());
    let cancelled = lines.iter().find(|l| l.is_decision()).unwrap();
    assert_eq!((cancelled.job.as_str(), cancelled.attempt), ("7_[1-3]", 2));
}
