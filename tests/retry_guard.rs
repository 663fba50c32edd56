//! Retries with the laptop closed, on the dev cluster over real SSH: `slurmdash submit`
//! leaves a guard job (`sdguard-<name>`, afternotok on the attempt) and exits; no slurmdash
//! process runs afterwards. The guard re-runs an NCCL failure once (the second attempt
//! completes), records why an `exit 1` is not retried, is removed by Slurm after a success,
//! ends the chain on `slurmdash cancel` and on a plain scancel, and posts each decision to a
//! webhook whose token stays in a 0600 file. The dashboard's retry check run afterwards reads
//! the chain into the registry and shows it. Node failures: see `guard_node_down`.

use crate::common;
use crate::guard_helpers;

use std::time::Duration;

use common::*;
use guard_helpers::*;
use slurmdash::launch::guard::ChainLine;
use slurmdash::registry::Registry;

#[tokio::test(flavor = "multi_thread")]
async fn nccl_failure_is_retried_once_by_the_guard_and_the_webhook_hears_it() {
    let r = remote();
    let (base, posts) = listener().await;
    let token = format!("t0k3n{}", std::process::id());
    let hook = format!("{base}/hook/{token}");
    let name = tag("nccl");
    // The URL reaches slurmdash in a variable, never on its command line. The receiver
    // speaks plain http, which takes `[retry] webhook_plain_http = true`.
    let config = dev_config_plain_http_webhook();
    let l = submit_with(
        &config.path().join("slurmdash.toml"),
        &name,
        "if [ -e \"$SLURMDASH_JOB_DIR/once\" ]; then echo second attempt ok; else touch \"$SLURMDASH_JOB_DIR/once\"; echo 'gpu01:1:1 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12' >&2; exit 1; fi",
        &["--webhook-env", "SD_TEST_WEBHOOK"],
        &[("SD_TEST_WEBHOOK", &hook)],
    );
    let log = std::fs::read_to_string(l.state.path().join("debug.log")).expect("debug log");
    assert!(
        !log.is_empty() && !log.contains(&token),
        "the webhook's token is in the debug log:\n{log}"
    );
    println!(
        "guarded submit: {:.2} s, {} remote commands",
        l.took.as_secs_f64(),
        l.commands
    );
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.class.as_deref(), Some("ERR_INFRA"), "{d:?}");
    assert!(
        d.evidence
            .as_deref()
            .unwrap_or("")
            .contains("NCCL WARN NET/IB"),
        "{d:?}"
    );
    let second = d.next_id().unwrap_or_else(|| panic!("not retried: {d:?}"));
    // Kept off the node the NCCL error happened on.
    let node = sacct_fields(&r, l.job, "NodeList").await.stdout_lossy();
    let node = node.trim();
    assert_eq!(
        d.decision.as_deref(),
        Some(&*format!(
            "retried as {second}, not on {node} where it failed (--exclude={node})"
        ))
    );
    assert_eq!(final_state(&r, second, WAIT).await, "COMPLETED");
    let lines = chain(&r, &l.dir).await;
    let g2 = guard_of(&lines, second);
    // Slurm removes the second attempt's guard after its success; it never decides anything.
    let g2_state = final_state(&r, g2, WAIT).await;
    assert!(g2_state.starts_with("CANCELLED"), "{g2_state}");
    assert!(
        !lines
            .iter()
            .any(|x| x.is_decision() && x.job_id() == Some(second)),
        "{lines:?}"
    );
    wait_quiet(&r, &l.dir).await;
    let out = run(
        &r,
        &[
            "cat",
            &format!("{}/slurm-logs/{name}-{second}/main.out", l.dir),
        ],
    )
    .await;
    assert!(out.stdout_lossy().contains("second attempt ok"));

    // One POST per decision, with the job and class; the token only in the 0600 file.
    let got = wait_for("the webhook POST", Duration::from_secs(60), || async {
        let g = posts.lock().expect("lock").clone();
        (!g.is_empty()).then_some(g)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got_now = posts.lock().expect("lock").clone();
    assert_eq!(got_now.len(), 1, "{got_now:?}");
    let (line, body) = &got[0];
    assert_eq!(line, &format!("POST /hook/{token} HTTP/1.1"));
    let v: serde_json::Value = serde_json::from_str(body).expect("JSON body");
    assert_eq!(v["job"], l.job.to_string());
    assert_eq!(v["class"], "ERR_INFRA");
    assert_eq!(
        v["decision"],
        format!("retried as {second}, not on {node} where it failed (--exclude={node})")
    );
    let mode = run(
        &r,
        &["stat", "-c", "%a", &format!("{}/meta/webhook.url", l.dir)],
    )
    .await;
    assert_eq!(mode.stdout_lossy().trim(), "600");
    let grep = run(&r, &["grep", "-rl", &token, &l.dir]).await;
    assert_eq!(
        grep.stdout_lossy().trim(),
        format!("{}/meta/webhook.url", l.dir),
        "the token is only in webhook.url"
    );

    // A dashboard opened afterwards (the real binary in a terminal) shows the chain: the
    // badge in the queue and, for the second attempt, the guard's decision in the detail.
    let state_dir = l.state.path().display().to_string();
    let t =
        common::tmux::Tmux::start_with(&dev_config(), &[], &[("SLURMDASH_STATE_DIR", &state_dir)]);
    t.wait(
        "the retried launch with its badge",
        Duration::from_secs(60),
        |s| common::tmux::row(s, second).is_some_and(|row| row.contains("↻2/11")),
    );
    t.filter(&second.to_string(), Duration::from_secs(30));
    let screen = t.wait(
        "the chain in the detail pane",
        Duration::from_secs(30),
        |s| s.contains("cluster guard: attempt 1"),
    );
    assert!(
        common::tmux::left_pane_text(&screen).contains(&format!(
            "cluster guard: attempt 1 (job {}): retried as {second}",
            l.job
        )),
        "{screen}"
    );
    t.keys(&["q"]);
    drop(t);
    let chains = dashboard_check(&r, &l).await;
    let (_, c) = chains
        .iter()
        .find(|(id, _)| *id == second)
        .unwrap_or_else(|| panic!("{chains:?}"));
    assert_eq!(c.badge().as_deref(), Some("↻2/11"));
    let text = c.describe();
    assert!(
        text.contains(&format!("earlier: {} FAILED ERR_INFRA", l.job))
            && text.contains(&format!(
                "cluster guard: attempt 1 (job {}): retried as {second}",
                l.job
            )),
        "{text}"
    );
    println!("dashboard afterwards: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guard_sh_replaced_in_the_job_directory_is_never_run() {
    let r = remote();
    let name = tag("swapg");
    let l = submit(
        &name,
        "if [ -e \"$SLURMDASH_JOB_DIR/once\" ]; then sleep 10; echo second attempt ok; else touch \"$SLURMDASH_JOB_DIR/once\"; sleep 5; echo 'NCCL WARN NET/IB : Got completion from peer' >&2; exit 1; fi",
        &[],
    );
    // Whoever can write the job directory replaces the guard while the attempt runs.
    let planted = run(
        &r,
        &[
            "sh",
            "-c",
            "printf '#!/bin/sh\\ntouch \"$1/PWNED\"\\n' > \"$1/sbatch/guard.sh.new\" && mv -f \"$1/sbatch/guard.sh.new\" \"$1/sbatch/guard.sh\"",
            "sh",
            &l.dir,
        ],
    )
    .await;
    assert!(planted.success(), "{}", planted.stderr_lossy());
    let d = decision_for(&r, &l.dir, l.job).await;
    let second = d.next_id().unwrap_or_else(|| panic!("not retried: {d:?}"));
    // The second attempt's guard is the guard that was launched (queued from the copy
    // Slurm held for the first guard), not the file now in the job directory.
    let lines = chain(&r, &l.dir).await;
    let g2 = guard_of(&lines, second);
    let held = run(
        &r,
        &["scontrol", "write", "batch_script", &g2.to_string(), "-"],
    )
    .await;
    assert!(held.success(), "{}", held.stderr_lossy());
    assert!(
        held.stdout_lossy() == slurmdash::launch::guard::GUARD_SH,
        "guard {g2} runs another script:\n{}",
        held.stdout_lossy()
    );
    assert_eq!(final_state(&r, second, WAIT).await, "COMPLETED");
    assert!(final_state(&r, g2, WAIT).await.starts_with("CANCELLED"));
    wait_quiet(&r, &l.dir).await;
    let pwned = run(&r, &["test", "-e", &format!("{}/PWNED", l.dir)]).await;
    assert!(!pwned.success(), "the replaced guard.sh ran");
}

/// An attempt that fails as infrastructure on every node its partition has: each retry is
/// kept off the nodes tried before, and once none is left the guard says so and ends the
/// chain, instead of queueing an attempt that would wait forever (BadConstraints).
#[tokio::test(flavor = "multi_thread")]
async fn failing_on_every_node_ends_the_chain_instead_of_queueing_forever() {
    let r = remote();
    let l = submit(
        &tag("everywhere"),
        "echo 'gpu01:1:1 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12' >&2; exit 1",
        &[],
    );
    let mut job = l.job;
    let mut nodes = Vec::new();
    let last = loop {
        let d = decision_for(&r, &l.dir, job).await;
        nodes.push(
            sacct_fields(&r, job, "NodeList")
                .await
                .stdout_lossy()
                .trim()
                .to_string(),
        );
        match d.next_id() {
            Some(next) => {
                assert!(nodes.len() < 6, "still retrying after {nodes:?}: {d:?}");
                job = next;
            }
            None => break d,
        }
    };
    let said = last.decision.as_deref().unwrap_or_default();
    assert!(
        said.starts_with("not retried: no node is left to run it once ")
            && said.contains("Requested node configuration is not available"),
        "{last:?}"
    );
    for n in &nodes {
        assert!(
            said.contains(n.as_str()) || said.contains('['),
            "{n} not named: {said}"
        );
    }
    let distinct: std::collections::BTreeSet<_> = nodes.iter().collect();
    assert_eq!(
        distinct.len(),
        nodes.len(),
        "an attempt ran on a node tried before: {nodes:?}"
    );
    println!("attempts on {nodes:?}; the guard: {said}");
    // Nothing of the launch is left waiting.
    wait_quiet(&r, &l.dir).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_1_is_not_retried_and_the_chain_says_why() {
    let r = remote();
    let l = submit(&tag("exit"), "echo plain failure >&2; exit 1", &[]);
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(
        d.decision.as_deref(),
        Some("not retried: ERR_PROGRAM (exit code 1)"),
        "{d:?}"
    );
    assert!(d.next.is_none());
    tokio::time::sleep(Duration::from_secs(3)).await;
    wait_quiet(&r, &l.dir).await;
    let chains = dashboard_check(&r, &l).await;
    assert_eq!(chains.len(), 1, "{chains:?}");
    let entries = Registry::open(l.state.path()).load().expect("registry");
    assert_eq!(
        entries[0].attempts[0].state.as_deref(),
        Some("FAILED ERR_PROGRAM")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_guard_is_gone_after_a_success() {
    let r = remote();
    let l = submit(&tag("ok"), "echo fine", &[]);
    assert_eq!(final_state(&r, l.job, WAIT).await, "COMPLETED");
    let lines = chain(&r, &l.dir).await;
    let g = guard_of(&lines, l.job);
    let st = final_state(&r, g, WAIT).await;
    let reason = sacct_fields(&r, g, "Reason").await;
    println!(
        "Slurm {}: guard after a success: {st}, reason {}",
        dev_slurm(),
        reason.stdout_lossy().trim()
    );
    assert!(st.starts_with("CANCELLED"), "{st}");
    assert!(!chain(&r, &l.dir).await.iter().any(ChainLine::is_decision));
    // The guard never ran: no log of its own.
    let ls = run(&r, &["ls", &format!("{}/meta", l.dir)]).await;
    assert!(
        !ls.stdout_lossy().contains("guard-"),
        "{}",
        ls.stdout_lossy()
    );
    let chains = dashboard_check(&r, &l).await;
    assert_eq!(chains.len(), 1);
    let entries = Registry::open(l.state.path()).load().expect("registry");
    assert_eq!(
        entries[0].attempts[0].state.as_deref(),
        Some("COMPLETED COMPLETE")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_from_slurmdash_ends_the_chain() {
    let r = remote();
    let l = submit(&tag("cx"), "sleep 300", &[]);
    wait_running(&r, l.job).await;
    let g = guard_of(&chain(&r, &l.dir).await, l.job);
    let out = slurmdash(&["cancel", &l.job.to_string()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(final_state(&r, g, WAIT).await.starts_with("CANCELLED"));
    assert!(final_state(&r, l.job, WAIT).await.starts_with("CANCELLED"));
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.decision.as_deref(), Some("cancelled"));
    assert_eq!(d.attempt, 1, "{d:?}");
    assert_eq!(d.evidence.as_deref(), Some("cancelled from slurmdash"));
    tokio::time::sleep(Duration::from_secs(5)).await;
    wait_quiet(&r, &l.dir).await;
    let ls = run(&r, &["ls", &format!("{}/meta", l.dir)]).await;
    assert!(!ls.stdout_lossy().contains("guard-"), "the guard never ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_scancel_starts_nothing() {
    let r = remote();
    let l = submit(&tag("sc"), "sleep 300", &[]);
    wait_running(&r, l.job).await;
    let out = run(&r, &["scancel", &l.job.to_string()]).await;
    assert!(out.success());
    let d = decision_for(&r, &l.dir, l.job).await;
    assert_eq!(d.decision.as_deref(), Some("cancelled"), "{d:?}");
    assert_eq!(d.class.as_deref(), Some("ERR_CANCELLED"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    wait_quiet(&r, &l.dir).await;
    assert_eq!(
        chain(&r, &l.dir)
            .await
            .iter()
            .filter(|x| x.event == "armed")
            .count(),
        1
    );
}
