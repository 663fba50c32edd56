//! A job that writes its log as fast as it can (up to 100 MB a second) is followed in the
//! dashboard for a minute, then for a minute more with a shell opened from the dashboard
//! (`x`), which holds the dashboard's loop: slurmdash's resident memory stays under 100 MB
//! throughout, and back from the shell the log pane says how much it skipped and goes on with
//! fresh lines. Heavy (two minutes of a core writing, and SSH carrying what it can): the full
//! suite runs it on one Slurm version only.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tmux::{fast_config, rand_suffix, row, Tmux};
use common::{put, remote, run, sbatch, scratch, ssh_config, wait_job_running};
use slurmdash::remote::Remote;

const LIMIT: Duration = Duration::from_secs(60);
/// How long each phase follows the flood.
const PHASE: Duration = Duration::from_secs(60);
/// The target: slurmdash's resident memory, in KiB.
const MAX_RSS_KB: u64 = 100 * 1000 * 1000 / 1024;
/// Past this the sampler stops slurmdash (kill -9) so that a regression cannot take the
/// machine's memory with it; the test then fails with the figure.
const RUNAWAY_KB: u64 = 1 << 20;

/// The job: 1000-byte lines `flood NNNNNN xxx…` (NNNNNN counts 10 MB bursts), ten bursts
/// a second at most, until the file `$2` exists (or ten minutes passed); the disk use stays
/// under about 600 MB because what lies more than 500 MB behind the end is punched out (the
/// file keeps its size, so `tail -F` sees no truncation). Then a line `calm N` every half
/// second until the job is cancelled.
const FLOOD: &str = r#"#!/bin/sh
out=$1 stop=$2
pad=$(printf '%0986d' 0)
burst=0
end=$(( $(date +%s) + 600 ))
while [ ! -e "$stop" ] && [ "$(date +%s)" -lt "$end" ]; do
    s=$(date +%s)
    k=0
    while [ "$k" -lt 10 ]; do
        k=$((k + 1))
        burst=$((burst + 1))
        yes "$(printf 'flood %06d' "$burst") $pad" | head -c 10000000
    done
    size=$(stat -c %s "$out")
    if [ "$size" -gt 600000000 ]; then
        fallocate -p -o 0 -l $((size - 500000000)) "$out"
    fi
    while [ "$(date +%s)" = "$s" ]; do sleep 0.05; done
done
i=0
while :; do
    i=$((i + 1))
    echo "calm $i"
    sleep 0.5
done
"#;

/// Cancels the job and removes its directory however the test ends.
struct Cleanup {
    id: u64,
    dir: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let cancel = vec!["scancel".to_string(), self.id.to_string()];
        let clean = vec!["rm".to_string(), "-rf".into(), self.dir.clone()];
        for argv in [cancel, clean] {
            let _ = Command::new("ssh")
                .arg("-F")
                .arg(ssh_config())
                .arg("slurmdash-dev")
                .args(argv)
                .stdin(Stdio::null())
                .output();
        }
    }
}

/// A figure of /proc/PID/status in KiB (`VmRSS`, `VmHWM`).
fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The slurmdash process under the tmux session's pane.
fn slurmdash_pid(t: &Tmux) -> Option<u32> {
    let out = t
        .cmd()
        .args(["list-panes", "-t", &t.name, "-F", "#{pane_pid}"])
        .output()
        .ok()?;
    let pane: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
    let mut todo = vec![pane];
    while let Some(p) = todo.pop() {
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        if comm.trim() == "slurmdash" {
            return Some(p);
        }
        todo.extend(children(p));
    }
    None
}

/// Samples slurmdash's VmRSS every 100 ms; the highest figure since the last `take`.
struct Sampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let killed = Arc::new(AtomicBool::new(false));
        let (p, s, k) = (peak.clone(), stop.clone(), killed.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some(rss) = status_kb(pid, "VmRSS") {
                    p.fetch_max(rss, Ordering::Relaxed);
                    if rss > RUNAWAY_KB && !k.swap(true, Ordering::Relaxed) {
                        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Sampler {
            peak,
            stop,
            killed,
            thread: Some(thread),
        }
    }

    /// The peak since the last call (KiB), starting anew.
    fn take(&self) -> u64 {
        self.peak.swap(0, Ordering::Relaxed)
    }

    fn check_alive(&self, what: &str) {
        assert!(
            !self.killed.load(Ordering::Relaxed),
            "{what}: slurmdash passed {} MiB resident and was stopped",
            RUNAWAY_KB / 1024
        );
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The highest `flood NNNNNN` burst number on the screen.
fn last_burst(screen: &str) -> u64 {
    screen
        .split("flood ")
        .skip(1)
        .filter_map(|rest| rest.get(..6)?.parse().ok())
        .max()
        .unwrap_or(0)
}

/// The highest `calm N` on the screen.
fn last_calm(screen: &str) -> u64 {
    screen
        .split("calm ")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// `412.0 MiB` (as the pane prints sizes) in bytes.
fn parse_size(text: &str) -> Option<u64> {
    let mut it = text.split_whitespace();
    let n: f64 = it.next()?.parse().ok()?;
    let unit = match it.next()? {
        "B" => 1u64,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return None,
    };
    Some((n * unit as f64) as u64)
}

/// The total the log pane's title says it skipped (`… · skipped 5.8 GiB ┐`).
fn title_skipped(screen: &str) -> Option<u64> {
    let rest = screen.split("· skipped ").nth(1)?;
    parse_size(rest.split(['┐', '─', '·']).next()?.trim())
}

async fn file_size(r: &dyn Remote, path: &str) -> u64 {
    let out = run(r, &["stat", "-c", "%s", path]).await;
    out.stdout_lossy().trim().parse().unwrap_or(0)
}

fn mb(kb: u64) -> f64 {
    kb as f64 * 1024.0 / 1e6
}

#[tokio::test]
async fn a_flooding_log_keeps_the_dashboard_small_with_and_without_a_shell_open() {
    let r = remote();
    let dir = scratch(&r, "flood").await;
    let script = format!("{dir}/flood.sh");
    let out = format!("{dir}/main.out");
    let stop = format!("{dir}/stop");
    put(&r, &script, FLOOD).await;
    let tag = format!("flood-{}", rand_suffix());
    let id = sbatch(
        &r,
        &[
            "-J", &tag, "-c", "1", "-t", "10", "-o", &out, &script, &out, &stop,
        ],
    )
    .await;
    let _cleanup = Cleanup {
        id,
        dir: dir.clone(),
    };
    wait_job_running(&r, id, "the job to run", LIMIT).await;

    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = fast_config(tmp.path());
    let t = Tmux::start(&cfg, &[]);
    t.wait("the flooding job", LIMIT, |s| row(s, id).is_some());
    let pid = slurmdash_pid(&t).expect("the slurmdash process under the tmux pane");
    let sampler = Sampler::start(pid);
    t.filter(&tag, Duration::from_secs(30));
    let s = t.wait("the flood in the log pane", LIMIT, |s| last_burst(s) > 0);
    let first = last_burst(&s);

    // A minute of following.
    let (size0, t0) = (file_size(&r, &out).await, Instant::now());
    let mut seen = vec![first];
    while t0.elapsed() < PHASE {
        std::thread::sleep(Duration::from_secs(5));
        sampler.check_alive("following the flood");
        seen.push(last_burst(&t.screen()));
    }
    let written = file_size(&r, &out).await - size0;
    let hwm_follow = status_kb(pid, "VmHWM").unwrap_or(0);
    let peak_follow = sampler.take().max(hwm_follow);
    let s = t.screen();
    println!(
        "following, no shell: peak VmRSS {:.1} MB (VmHWM {:.1} MB) over {:?}; the job wrote \
         {:.0} MB ({:.0} MB/s); bursts on screen {seen:?}; the title says skipped {}",
        mb(peak_follow),
        mb(hwm_follow),
        t0.elapsed(),
        written as f64 / 1e6,
        written as f64 / 1e6 / t0.elapsed().as_secs_f64(),
        title_skipped(&s).map_or("nothing".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
    );
    assert!(
        seen.last() > seen.first(),
        "fresh lines kept coming while following: {seen:?}\n{s}"
    );
    assert!(
        peak_follow < MAX_RSS_KB,
        "slurmdash peaked at {:.1} MB resident following the flood",
        mb(peak_follow)
    );

    // A minute with a shell open from the dashboard: its loop waits for the shell. The peak
    // figure (VmHWM) starts anew.
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
    let before_shell = last_burst(&t.screen());
    t.keys(&["x"]);
    t.wait("the shell's prompt", LIMIT, |s| {
        s.contains(&format!("a shell in job {id}")) && s.trim_end().ends_with(['$', '#', '>'])
    });
    let (size1, t1) = (file_size(&r, &out).await, Instant::now());
    while t1.elapsed() < PHASE {
        std::thread::sleep(Duration::from_secs(1));
        sampler.check_alive("a shell open");
    }
    let in_shell = file_size(&r, &out).await - size1;
    let hwm_shell = status_kb(pid, "VmHWM").unwrap_or(0);
    let peak_shell = sampler.take().max(hwm_shell);
    println!(
        "a shell open for {:?}: peak VmRSS {:.1} MB (VmHWM since the shell opened {:.1} MB); \
         the job wrote {:.0} MB meanwhile",
        t1.elapsed(),
        mb(peak_shell),
        mb(hwm_shell),
        in_shell as f64 / 1e6,
    );
    assert!(
        peak_shell < MAX_RSS_KB,
        "slurmdash peaked at {:.1} MB resident with a shell open",
        mb(peak_shell)
    );
    // The flood stops (calm lines follow) before the dashboard comes back.
    run(&r, &["touch", &stop]).await;
    t.keys(&["exit", "Enter"]);
    let s = t.wait("the dashboard back, past the flood", LIMIT, |s| {
        s.contains(&format!("back from the shell in job {id}")) && last_calm(s) > 0
    });
    let skipped = title_skipped(&s).unwrap_or(0);

    // The note where the pane skipped ahead: `/` in the log pane finds it.
    t.keys(&["Tab", "Tab", "/"]);
    t.type_text("skipped");
    t.keys(&["Enter"]);
    let s = t.wait("the skip note found", LIMIT, |s| s.contains("… skipped "));
    let lines: Vec<&str> = s.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("… skipped "))
        .expect("the note's row");
    let note = lines[at]
        .split("… skipped ")
        .nth(1)
        .and_then(|r| parse_size(r.split('…').next()?.trim()));
    let below = lines[at + 1..].join("\n");
    assert!(
        last_burst(&below) > before_shell || last_calm(&below) > 0,
        "the lines after the note are newer than the last seen before the shell \
         (flood {before_shell}):\n{s}"
    );
    // Following again, new lines keep coming.
    t.keys(&["f"]);
    let calm = last_calm(&t.wait("calm lines", LIMIT, |s| last_calm(s) > 0));
    t.wait("a newer calm line", LIMIT, |s| last_calm(s) > calm);
    sampler.check_alive("back from the shell");
    let peak_back = sampler.take().max(status_kb(pid, "VmHWM").unwrap_or(0));
    println!(
        "back from the shell: peak VmRSS {:.1} MB (since the shell opened, catching up \
         included); the pane's note says {}, its title skipped {:.1} MB in all",
        mb(peak_back),
        note.map_or("?".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
        skipped as f64 / 1e6,
    );
    assert!(
        note.is_some_and(|b| b >= in_shell / 2),
        "the note counts most of what was written while the shell was open \
         ({in_shell} bytes):\n{s}"
    );
    assert!(
        peak_back < MAX_RSS_KB,
        "slurmdash peaked at {:.1} MB resident catching up after the shell",
        mb(peak_back)
    );
    drop(sampler);
    t.keys(&["Escape", "q"]);
    t.wait("slurmdash exits", LIMIT, |s| s.contains("EXITED:0"));
}
