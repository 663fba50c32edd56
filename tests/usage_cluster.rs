//! The budget against the dev cluster: `slurmdash usage --json` and the `:usage` overlay in
//! the real binary (tmux), with a job run under an account of the test's own (`sdusage`,
//! which nothing else uses) that has `GrpTRESMins` set; and "similar jobs waited" beside a
//! held job's estimate in the detail pane.

use crate::common;

use std::time::Duration;

use common::tmux::{rand_suffix, refreshed, Tmux};
use common::*;
use serde_json::Value;

const ACCT: &str = "sdusage";

fn usage_json(days: &str) -> Value {
    let out = slurmdash(&["usage", "--days", days, "--json"]);
    assert!(
        out.status.success(),
        "{:?} {}",
        out.status,
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

fn num(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number: {x}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_counts_a_jobs_cpu_seconds_under_its_account_against_its_limit() {
    // Dropped last (after the jobs are cancelled), so the association can go.
    let _own = limits::OwnLimits::add(ACCT);
    for args in [
        &[
            "-i",
            "modify",
            "account",
            "where",
            "name=sdusage",
            "set",
            "GrpTRESMins=cpu=6000",
        ][..],
        &[
            "-i",
            "modify",
            "user",
            "where",
            "name=sduser",
            "account=sdusage",
            "set",
            "GrpTRESMins=cpu=3000",
        ],
    ] {
        let o = limits::sacctmgr(args);
        assert!(o.status.success(), "sacctmgr {args:?}: {}", text(&o.stderr));
    }
    let r = remote();
    let dir = scratch(&r, "usage").await;
    let tag = format!("us{}", rand_suffix() % 100_000);
    let submit = |name: String, c: &'static str, t: &'static str, wrap: &'static str| {
        let (r, dir) = (&r, dir.clone());
        async move {
            // slurmctld hears of the new account from slurmdbd within seconds.
            wait_for(
                "sbatch under the new account",
                Duration::from_secs(60),
                || {
                    let (name, dir) = (name.clone(), dir.clone());
                    async move {
                        let argv = [
                            "sbatch",
                            "--parsable",
                            "-A",
                            ACCT,
                            "--qos",
                            ACCT,
                            "-J",
                            &name,
                            "-c",
                            c,
                            "--mem=100M",
                            "-t",
                            t,
                            "-D",
                            &dir,
                            "--wrap",
                            wrap,
                        ];
                        let out = run(r, &argv).await;
                        out.success().then(|| parsable_job_id(&out.stdout_lossy()))
                    }
                },
            )
            .await
        }
    };
    // A 2-CPU job of ~20 s that ends, and one that keeps running.
    let burn = submit(format!("{tag}-burn"), "2", "2", "sleep 20").await;
    let _burn = CancelOnDrop(burn);
    let held = submit(format!("{tag}-run"), "1", "5", "sleep 300").await;
    let _held = CancelOnDrop(held);
    assert_eq!(
        final_state(&r, burn, Duration::from_secs(180)).await,
        "COMPLETED"
    );
    let elapsed: u64 = sacct_fields(&r, burn, "ElapsedRaw")
        .await
        .stdout_lossy()
        .trim()
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("ElapsedRaw");
    assert!(elapsed >= 19, "the job ran {elapsed} s");

    // slurmdbd's selection by time lags `sacct -j` by seconds.
    let v = wait_for(
        "the job under sdusage in `usage`",
        Duration::from_secs(120),
        || async {
            let v = usage_json("1");
            (v["accounts"][ACCT]["used"]["jobs"].as_u64() >= Some(1)).then_some(v)
        },
    )
    .await;
    // What a user checks: the job's 2 CPUs × its elapsed time, under its account.
    let a = &v["accounts"][ACCT];
    assert!(
        num(a, &["used", "cpu_seconds"]) >= (2 * elapsed) as f64,
        "used {} < 2 × {elapsed} s: {a:#}",
        a["used"]
    );
    assert!(num(a, &["used", "cpu_hours"]) >= (2 * elapsed) as f64 / 3600.0 - 1e-9);
    assert!(num(a, &["used_by_partition", "short", "cpu_seconds"]) >= (2 * elapsed) as f64);
    // The other job, running (or pending while other tests hold the nodes): 1 CPU,
    // committed to its 5-minute limit.
    assert!(num(a, &["committed", "cpu_seconds"]) >= 300.0, "{a:#}");
    // Every account's three figures are there and numeric.
    for (name, acct) in v["accounts"].as_object().expect("accounts") {
        for key in ["used", "in_flight", "committed"] {
            for f in ["cpu_hours", "gpu_hours", "cpu_seconds", "gpu_seconds"] {
                assert!(acct[key][f].is_number(), "{name}.{key}.{f}: {acct:#}");
            }
        }
    }
    // The limits set above, read from slurmctld.
    let limits = a["limits"].as_array().expect("limits");
    let has = |on: &str, min: u64| {
        limits
            .iter()
            .any(|l| l["on"] == on && l["tres"] == "cpu" && l["limit_minutes"] == min)
    };
    assert!(has("account sdusage", 6000), "{limits:?}");
    assert!(has("user sduser in sdusage", 3000), "{limits:?}");

    // The text says the same per account.
    let out = slurmdash(&["usage"]);
    let t = text(&out.stdout);
    assert!(out.status.success() && t.contains(ACCT), "{t}");
    assert!(t.contains("of GrpTRESMins ("), "{t}");

    // The overlay in the real binary.
    let ui = Tmux::start(&dev_config(), &[]);
    ui.wait(
        "the dashboard with the queue loaded",
        Duration::from_secs(30),
        refreshed,
    );
    ui.keys(&[":", "usage", "Enter"]);
    let s = ui.wait("the :usage overlay", Duration::from_secs(60), |s| {
        s.contains("usage · last 7 days · read") && s.contains(ACCT)
    });
    assert!(s.contains("of GrpTRESMins (user sduser in sdusage)"), "{s}");
    assert!(s.contains("in flight") && s.contains("committed"), "{s}");
    // r reads again. The read may be done before a screen capture sees "reading…", so
    // the first read is let age past 2 s first: a fresh age afterwards is the new read.
    ui.wait(
        "the first read older than 2 s",
        Duration::from_secs(30),
        |s| usage_age(s).is_some_and(|a| a >= 3),
    );
    ui.keys(&["r"]);
    ui.wait("read again", Duration::from_secs(60), |s| {
        s.contains("reading 7 days of use again")
            || s.contains("reading…")
            || usage_age(s).is_some_and(|a| a < 3)
    });
    ui.wait("the read done", Duration::from_secs(60), |s| {
        s.contains("usage · last 7 days · read")
    });
    ui.keys(&["Escape"]);
    ui.wait("the overlay closed", Duration::from_secs(10), |s| {
        !s.contains("usage · last 7 days")
    });

    // A held 1-CPU job in short: the user's many 1-CPU jobs there waited.
    let name = format!("{tag}-held");
    let waiting = sbatch(
        &r,
        &[
            "-J", &name, "-p", "short", "-c", "1", "-t", "5", "--hold", "-D", &dir, "--wrap",
            "true",
        ],
    )
    .await;
    let _waiting = CancelOnDrop(waiting);
    ui.keys(&["r"]);
    ui.filter(&name, Duration::from_secs(30));
    let s = ui.wait("similar jobs waited", Duration::from_secs(60), |s| {
        s.contains(&format!("job {waiting}")) && s.contains("similar jobs waited ")
    });
    let line = s
        .lines()
        .find(|l| l.contains("similar jobs waited "))
        .expect("line");
    assert!(line.contains(" jobs)") || line.contains(" job)"), "{line}");
    ui.keys(&["q"]);
}

/// The age of the overlay's read in seconds, from its title ("read just now", "read 12s
/// ago", "read 2m ago"); None while it reads or when closed.
fn usage_age(screen: &str) -> Option<u64> {
    let rest = screen.split("usage · last 7 days · read ").nth(1)?;
    if rest.starts_with("just now") {
        return Some(0);
    }
    let word = rest.split(' ').next()?;
    let (n, unit) = word.split_at(word.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    // "12s", "2m5s", "1h3m", "2d": the first unit decides.
    Some(match unit.chars().next()? {
        's' => n,
        'm' => n * 60,
        'h' => n * 3600,
        _ => n * 86400,
    })
}
