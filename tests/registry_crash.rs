//! The registry survives kill -9 in the middle of a write: a child process rewrites it in
//! a tight loop and is killed with SIGKILL at random moments; every load afterwards
//! succeeds with either the old or the new content.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use slurmdash::registry::{Attempt, Entry, Registry};

const CHILD: &str = "SLURMDASH_REGISTRY_WRITER_DIR";

fn entry(n: u64) -> Entry {
    let now = Utc::now();
    Entry {
        local_id: format!("id-{n}"),
        cluster: "dev".into(),
        job_id: n,
        job_dir: format!("/lustre/r/id-{n}/{}", "x".repeat(200)),
        name: "crash".into(),
        submitted_at: now,
        template: None,
        script: "/lustre/r/s.sbatch".into(),
        attempts: vec![Attempt {
            job_id: n,
            submitted_at: now,
            state: None,
        }],
        secrets: Vec::new(),
        checksum: None,
        spec_sha256: None,
        requeue: false,
        guard: None,
        sweep: Vec::new(),
        code: None,
    }
}

/// The child the test below starts and kills: keeps adding entries until killed. Ignored,
/// so a normal run never runs it on its own; it refuses to run without the directory.
#[test]
#[ignore = "started (and killed) by kill_9_during_writes_never_corrupts_the_registry"]
fn writer_child() {
    let dir = std::env::var_os(CHILD)
        .unwrap_or_else(|| panic!("{CHILD} is not set: this test is run by kill_9_during_writes_never_corrupts_the_registry"));
    let r = Registry::open(dir);
    let start = r.load().map(|e| e.len() as u64).unwrap_or(0);
    for n in start.. {
        r.add(entry(n)).expect("add");
    }
}

/// Loads the registry, checking that it reads and holds `id-0`, `id-1`, ... in order.
fn load_checked(r: &Registry, round: u64, when: &str) -> usize {
    let entries = r
        .load()
        .unwrap_or_else(|e| panic!("round {round}: registry unreadable {when}: {e}"));
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(
            e.local_id,
            format!("id-{i}"),
            "round {round}: entry {i} damaged {when}"
        );
    }
    entries.len()
}

#[test]
fn kill_9_during_writes_never_corrupts_the_registry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = Registry::open(dir.path());
    let mut last = 0usize;
    for round in 0..25u64 {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "writer_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn writer");
        // Kill it only once it has written in this round (so that it is writing when killed,
        // however slow the machine is to start it); the deadline only keeps a writer that
        // never writes from hanging the test.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if load_checked(&r, round, "while the writer writes") > last {
                break;
            }
            let early = child.try_wait().expect("writer status");
            assert!(
                early.is_none(),
                "round {round}: the writer exited by itself: {early:?}"
            );
            assert!(
                Instant::now() < deadline,
                "round {round}: the writer wrote nothing in 120 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // A different moment of its write loop each round.
        std::thread::sleep(Duration::from_millis((round * 7) % 23));
        // The writer must still be writing when it is killed (not finished or failed).
        let early = child.try_wait().expect("writer status");
        assert!(
            early.is_none(),
            "round {round}: the writer exited by itself: {early:?}"
        );
        // SIGKILL: no destructor, no cleanup.
        child.kill().expect("kill -9");
        let _ = child.wait();
        let now = load_checked(&r, round, "after kill -9");
        assert!(
            now > last,
            "round {round}: entries went from {last} to {now}"
        );
        last = now;
    }
    println!("{last} registry writes across 25 kills");
}
