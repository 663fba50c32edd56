//! Dependency chains on the dev cluster. `slurmdash deps`: a chain of the user's jobs built
//! with `--dependency`, read back as a graph (edges from the job depended on to the job that
//! waits), one chain by id, and a dependency that can never be met once the job it waits
//! on is cancelled. The dashboard's `:deps`: a chain whose first job failed drawn as a tree
//! with the jobs that can never start marked, and one of them cancelled from it.

use crate::common;

use std::time::Duration;

use common::tmux::{fast_config, rand_suffix, refreshed, Tmux};
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

/// The line of the `:deps` view that draws job `id` after the tree's `lines` (`├─ `,
/// `│  └─ `, or nothing at the top), with its index.
fn tree_line<'a>(screen: &'a str, lines: &str, id: u64) -> Option<(usize, &'a str)> {
    let want = format!("{lines}{id} ");
    screen.lines().enumerate().find(|(_, l)| {
        let inner = l.trim_start_matches('│');
        let inner = inner
            .strip_prefix("› ")
            .or_else(|| inner.strip_prefix("  "))
            .unwrap_or(inner);
        inner.starts_with(&want)
    })
}

/// A chain A → B (afterok:A) → C (afterok:B), and D (afterok:A); A fails, so B, C and D can
/// never start. `:deps` draws B and D under A and C under B, each marked; `D` on B asks,
/// `y` cancels it, and squeue no longer lists it.
#[tokio::test(flavor = "multi_thread")]
async fn deps_view_draws_a_failed_chain_and_cancels_from_it() {
    let r = remote();
    let tag = format!("dv{}", rand_suffix() % 100_000);
    let job = |name: &str| format!("{tag}-{name}");
    let submit = |name: String, extra: Vec<String>| {
        let r = &r;
        async move {
            let mut a: Vec<&str> = vec!["-J", &name, "-p", "cpu", "-t", "1"];
            a.extend(extra.iter().map(String::as_str));
            sbatch(r, &a).await
        }
    };
    // A is held until the chain is in place, then fails at once.
    let a = submit(
        job("a"),
        vec!["--hold".into(), "--wrap".into(), "exit 1".into()],
    )
    .await;
    let _a = CancelOnDrop(a);
    let after = |id: u64| {
        vec![
            format!("--dependency=afterok:{id}"),
            "--wrap".into(),
            "true".into(),
        ]
    };
    let b = submit(job("b"), after(a)).await;
    let _b = CancelOnDrop(b);
    let c = submit(job("c"), after(b)).await;
    let _c = CancelOnDrop(c);
    let d = submit(job("d"), after(a)).await;
    let _d = CancelOnDrop(d);
    run(&r, &["scontrol", "release", &a.to_string()]).await;
    wait_for(
        "B and D never satisfied",
        Duration::from_secs(90),
        || async {
            let out = run(&r, &["squeue", "-h", "-j", &format!("{b},{d}"), "-o", "%r"])
                .await
                .stdout_lossy();
            (out.lines()
                .filter(|l| l.trim() == "DependencyNeverSatisfied")
                .count()
                == 2)
                .then_some(())
        },
    )
    .await;

    let tmp = tempfile::tempdir().expect("tempdir");
    let t = Tmux::start(&fast_config(tmp.path()), &[]);
    t.wait("the dashboard", Duration::from_secs(30), refreshed);
    t.filter(&tag, Duration::from_secs(60));
    t.keys(&[":"]);
    t.type_text("deps");
    t.keys(&["Enter"]);
    let s = t.wait("the chain in :deps", Duration::from_secs(30), |s| {
        s.contains("dependencies ·") && tree_line(s, "└─ ", d).is_some()
    });
    let (ia, _) = tree_line(&s, "", a).unwrap_or_else(|| panic!("A at the top:\n{s}"));
    let (ib, lb) = tree_line(&s, "├─ ", b).unwrap_or_else(|| panic!("B under A:\n{s}"));
    let (ic, lc) = tree_line(&s, "│  └─ ", c).unwrap_or_else(|| panic!("C under B:\n{s}"));
    let (id, ld) = tree_line(&s, "└─ ", d).unwrap_or_else(|| panic!("D under A:\n{s}"));
    assert_eq!([ib, ic, id], [ia + 1, ia + 2, ia + 3], "{s}");
    for l in [lb, lc, ld] {
        assert!(
            l.contains("afterok") && l.contains("can never start"),
            "{l}\n{s}"
        );
    }

    // Down to B, D asks, y cancels.
    let b_selected = |s: &str| s.lines().any(|l| l.contains(&format!("› ├─ {b} ")));
    for _ in 0..4 {
        if b_selected(&t.screen()) {
            break;
        }
        t.keys(&["j"]);
    }
    t.wait("B selected", Duration::from_secs(10), b_selected);
    t.keys(&["D"]);
    t.wait("the question", Duration::from_secs(15), |s| {
        s.contains(&format!("cancel {b} ({}, PENDING)?", job("b")))
    });
    t.keys(&["y"]);
    t.wait("the report", Duration::from_secs(15), |s| {
        s.contains(&format!("cancelled {b}"))
    });
    wait_for("B gone from squeue", Duration::from_secs(60), || async {
        let out = run(&r, &["squeue", "-h", "--me", "-o", "%i"])
            .await
            .stdout_lossy();
        (!out.lines().any(|l| l.trim() == b.to_string())).then_some(())
    })
    .await;
    // D is still there.
    let out = run(&r, &["squeue", "-h", "--me", "-o", "%i"])
        .await
        .stdout_lossy();
    assert!(out.lines().any(|l| l.trim() == d.to_string()), "{out}");
    t.keys(&["Escape", "q"]);
}
