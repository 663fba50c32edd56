//! `slurmdash deps` on the dev cluster: a chain of the user's jobs built with
//! `--dependency`, read back as a graph (edges from the job depended on to the job that
//! waits), one chain by id, and a dependency that can never be met once the job it waits
//! on is cancelled.

mod common;

use std::time::Duration;

use common::tmux::rand_suffix;
use common::*;
use serde_json::Value;

fn deps_json(args: &[&str]) -> Value {
    let mut a = vec!["deps", "--json"];
    a.extend_from_slice(args);
    let out = slurmdash(&a);
    assert!(out.status.success(), "deps: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn has_edge(v: &Value, from: u64, to: u64, kind: &str) -> bool {
    let (from, to) = (from.to_string(), to.to_string());
    v["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .any(|e| e["from"] == *from && e["to"] == *to && e["type"] == kind)
}

fn node(v: &Value, id: u64) -> Option<&Value> {
    let id = id.to_string();
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["id"] == *id)
}

#[tokio::test(flavor = "multi_thread")]
async fn dependency_chains_as_a_graph_and_a_chain_that_can_never_start() {
    let r = remote();
    let tag = format!("deps{}", rand_suffix() % 100_000);
    let job = |name: &str| format!("{tag}-{name}");
    // A held first job, so nothing runs while the test reads the chain.
    let a = sbatch(
        &r,
        &[
            "-J",
            &job("a"),
            "-p",
            "cpu",
            "-t",
            "1",
            "--hold",
            "--wrap",
            "true",
        ],
    )
    .await;
    let _a = CancelOnDrop(a);
    let b = sbatch(
        &r,
        &[
            "-J",
            &job("b"),
            "-p",
            "cpu",
            "-t",
            "1",
            &format!("--dependency=afterok:{a}"),
            "--wrap",
            "true",
        ],
    )
    .await;
    let _b = CancelOnDrop(b);
    let c = sbatch(
        &r,
        &[
            "-J",
            &job("c"),
            "-p",
            "cpu",
            "-t",
            "1",
            &format!("--dependency=afterok:{b}?afternotok:{a}"),
            "--wrap",
            "true",
        ],
    )
    .await;
    let _c = CancelOnDrop(c);
    // An unrelated job of the user's: not part of the chain.
    let other = sbatch(
        &r,
        &[
            "-J",
            &job("other"),
            "-p",
            "cpu",
            "-t",
            "1",
            "--hold",
            "--wrap",
            "true",
        ],
    )
    .await;
    let _other = CancelOnDrop(other);

    let v = deps_json(&[]);
    assert!(has_edge(&v, a, b, "afterok"), "{v:#}");
    assert!(has_edge(&v, b, c, "afterok"), "{v:#}");
    assert!(has_edge(&v, a, c, "afternotok"), "{v:#}");
    assert_eq!(node(&v, b).expect("b")["name"], job("b"));
    assert_eq!(node(&v, b).expect("b")["can_start"], true);
    // Only jobs in a chain are nodes.
    assert!(node(&v, other).is_none(), "{v:#}");

    // One chain by id: c's chain is a, b and c.
    let one = deps_json(&[&c.to_string()]);
    let mut ids: Vec<String> = one["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("id").to_string())
        .collect();
    ids.sort();
    let mut want = vec![a.to_string(), b.to_string(), c.to_string()];
    want.sort();
    assert_eq!(ids, want);

    // a cancelled: b's afterok can never be met; c can still start (afternotok of a).
    run(&r, &["scancel", &a.to_string()]).await;
    let v = wait_for(
        "b's dependency marked failed",
        Duration::from_secs(60),
        || async {
            let v = deps_json(&[]);
            (node(&v, b).is_some_and(|n| n["can_start"] == false)).then_some(v)
        },
    )
    .await;
    // c's `?afternotok:a` is met by the cancel, which meets its whole dependency: Slurm
    // drops it, and c is in no chain any more.
    assert!(node(&v, c).is_none_or(|n| n["can_start"] == true), "{v:#}");
    assert!(!has_edge(&v, a, c, "afternotok"), "{v:#}");
    let out = slurmdash(&["deps", &b.to_string()]);
    let t = text(&out.stdout);
    assert!(t.contains("can never start on its dependencies"), "{t}");
}
