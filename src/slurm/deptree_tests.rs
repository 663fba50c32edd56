use super::*;
use crate::slurm::parse::parse_squeue;

/// A framed squeue record of the refresh's format, `%E` as Slurm prints it.
pub(crate) fn rec(id: &str, name: &str, state: &str, reason: &str, dep: &str) -> String {
    let f = [
        id,
        id,
        "N/A",
        "sduser",
        "research",
        "cpu",
        state,
        reason,
        "0:00",
        "1:00",
        "1",
        "1",
        "1G",
        "N/A",
        "",
        "2026-11-27T11:00:00",
        "N/A",
        "normal",
        "1",
        dep,
        "/home/sduser",
        id,
        name,
        id,
    ];
    format!("{}\x1e\n", f.join("\x1f"))
}

pub(crate) fn jobs(recs: &[String]) -> Vec<Job> {
    parse_squeue(&recs.concat()).unwrap()
}

fn nothing_known(_: u16, _: &str) -> Option<(String, JobState)> {
    None
}

/// The tree as lines: indent, id, how it waits on the row above, `never` when it can never
/// start.
fn lines(g: &DepGraph) -> Vec<String> {
    g.tree()
        .iter()
        .map(|r| {
            let pad = "  ".repeat(r.depth);
            match (r.node, &r.group) {
                (None, Some(name)) => format!("{pad}singleton {name}"),
                (Some(n), _) => {
                    let n = &g.nodes[n];
                    let mut s = format!("{pad}{}", n.id);
                    if let Some(k) = &r.kind {
                        s.push_str(&format!(" {k}"));
                    }
                    if n.never {
                        s.push_str(" never");
                    }
                    s
                }
                (None, None) => unreachable!(),
            }
        })
        .collect()
}

/// A chain A → B (afterok:A) → C (afterok:B), and D (afterok:A); A failed (its kept row
/// says so), so B and D can never start, and C, which needs B to end well, neither.
#[test]
fn a_failed_job_dooms_its_afterok_chain() {
    let j = jobs(&[
        rec("10", "a", "FAILED", "NonZeroExitCode", "(null)"),
        rec("11", "b", "PENDING", NEVER_REASON, "afterok:10(failed)"),
        rec(
            "12",
            "c",
            "PENDING",
            "Dependency",
            "afterok:11(unfulfilled)",
        ),
        rec(
            "13",
            "d",
            "PENDING",
            "Dependency",
            "afterok:10(unfulfilled)",
        ),
        rec("14", "alone", "RUNNING", "None", "(null)"),
    ]);
    let g = DepGraph::build(&j, nothing_known);
    assert_eq!(
        lines(&g),
        [
            "10",
            "  11 afterok never",
            "    12 afterok never",
            "  13 afterok never",
        ]
    );
    // A job in no chain is not in the graph.
    assert!(g.node(0, "14").is_none());
    let waiters: Vec<&str> = g
        .waiters(0, "10")
        .iter()
        .map(|(n, _)| n.id.as_str())
        .collect();
    assert_eq!(waiters, ["11", "13"]);
}

/// `afterok:A:B` sits under A and under B; a job that waits on one job twice is one row
/// naming both kinds.
#[test]
fn a_job_waiting_on_two_sits_under_each() {
    let j = jobs(&[
        rec("20", "a", "RUNNING", "None", "(null)"),
        rec("21", "b", "PENDING", "Priority", "(null)"),
        rec(
            "22",
            "x",
            "PENDING",
            "Dependency",
            "afterok:20(unfulfilled),afterok:21(unfulfilled)",
        ),
        rec(
            "23",
            "y",
            "PENDING",
            "Dependency",
            "afterok:21(unfulfilled),afterany:21(unfulfilled)",
        ),
    ]);
    let g = DepGraph::build(&j, nothing_known);
    assert_eq!(
        lines(&g),
        [
            "20",
            "  22 afterok",
            "21",
            "  22 afterok",
            "  23 afterok,afterany"
        ]
    );
}

/// `singleton` jobs are grouped by name: the one running and the one waiting for it.
#[test]
fn singleton_jobs_are_grouped_by_name() {
    let j = jobs(&[
        rec("30", "train", "RUNNING", "None", "(null)"),
        rec(
            "31",
            "train",
            "PENDING",
            "Dependency",
            "singleton(unfulfilled)",
        ),
        rec("32", "other", "PENDING", "Priority", "(null)"),
        rec(
            "33",
            "eval",
            "PENDING",
            "Dependency",
            "afterany:31(unfulfilled)",
        ),
    ]);
    let g = DepGraph::build(&j, nothing_known);
    assert_eq!(
        lines(&g),
        [
            "singleton train",
            "  30",
            "  31 singleton",
            "    33 afterany",
        ]
    );
    assert_eq!(g.singleton_of(0, "30"), Some("train"));
}

/// A job named in a dependency that left the queue: its state from what the dashboard
/// still knows, else unknown; a job that completed leaves `afternotok` unmet for ever,
/// and a doomed job leaves `afterany` open (it ends when cancelled).
#[test]
fn jobs_that_left_the_queue_and_other_kinds() {
    let j = jobs(&[
        rec(
            "41",
            "b",
            "PENDING",
            "Dependency",
            "afternotok:40(unfulfilled)",
        ),
        rec(
            "42",
            "c",
            "PENDING",
            "Dependency",
            "afterany:41(unfulfilled)",
        ),
        rec("43", "d", "PENDING", "Dependency", "afterok:7(unfulfilled)"),
        rec(
            "44",
            "e",
            "PENDING",
            "Dependency",
            "afterok:40(failed)?afterany:7(unfulfilled)",
        ),
    ]);
    let known = |_: u16, id: &str| (id == "40").then(|| ("a".to_string(), JobState::Completed));
    let g = DepGraph::build(&j, known);
    let a = g.node(0, "40").unwrap();
    assert_eq!(
        (a.name.as_str(), a.state.clone()),
        ("a", Some(JobState::Completed))
    );
    assert!(a.job.is_none());
    assert_eq!(g.node(0, "7").unwrap().state, None);
    assert_eq!(
        lines(&g),
        [
            "7",
            "  43 afterok",
            "  44 afterany",
            "40",
            "  41 afternotok never",
            "    42 afterany",
            "  44 afterok",
        ]
    );
}

/// No job with a dependency: nothing is built.
#[test]
fn no_dependency_no_graph() {
    let j = jobs(&[rec("1", "a", "RUNNING", "None", "(null)")]);
    assert!(DepGraph::build(&j, nothing_known).is_empty());
    assert!(DepGraph::build(&[], nothing_known).tree().is_empty());
}

/// A long chain (each job afterok the one before, the first failed) is marked through in
/// one pass per job, and a lattice where each job waits on both jobs of the layer before
/// (which repeats whole subtrees under each parent) stops at [`MAX_ROWS`] rows.
#[test]
fn long_chains_and_lattices_stay_bounded() {
    let n = 3000;
    let mut recs = vec![rec("1", "j", "FAILED", "None", "(null)")];
    for i in 2..=n {
        recs.push(rec(
            &i.to_string(),
            "j",
            "PENDING",
            "Dependency",
            &format!("afterok:{}(unfulfilled)", i - 1),
        ));
    }
    let g = DepGraph::build(&jobs(&recs), nothing_known);
    assert_eq!(g.nodes.iter().filter(|n| n.never).count(), n - 1);
    assert_eq!(g.tree().len(), n);
    let mut recs = vec![
        rec("1", "a", "RUNNING", "None", "(null)"),
        rec("2", "b", "RUNNING", "None", "(null)"),
    ];
    for layer in 1..30 {
        for k in 0..2 {
            let id = layer * 2 + 1 + k;
            let dep = format!(
                "afterok:{}(unfulfilled),afterok:{}(unfulfilled)",
                id - k - 2,
                id - k - 1
            );
            recs.push(rec(&id.to_string(), "x", "PENDING", "Dependency", &dep));
        }
    }
    let g = DepGraph::build(&jobs(&recs), nothing_known);
    assert_eq!(g.tree().len(), MAX_ROWS);
}

/// Many roots, many links and many `singleton` names: building the graph and its tree
/// takes a few steps per job, not one per job for each of them.
#[test]
fn building_is_linear_in_the_jobs() {
    let k = 2000;
    let mut recs = Vec::new();
    for i in 0..k {
        let (root, waits, single) = (3 * i + 1, 3 * i + 2, 3 * i + 3);
        recs.push(rec(&root.to_string(), "r", "RUNNING", "None", "(null)"));
        recs.push(rec(
            &waits.to_string(),
            "w",
            "PENDING",
            "Dependency",
            &format!("afterok:{root}(unfulfilled)"),
        ));
        recs.push(rec(
            &single.to_string(),
            &format!("s{i}"),
            "PENDING",
            "Dependency",
            "singleton(unfulfilled)",
        ));
    }
    let j = jobs(&recs);
    STEPS.with(|c| c.set(0));
    let g = DepGraph::build(&j, nothing_known);
    let tree = g.tree();
    let steps = STEPS.with(std::cell::Cell::get);
    // Each root with its waiter under it, each group's heading with its job.
    assert_eq!(tree.len(), 4 * k);
    assert_eq!(g.groups.len(), k);
    assert_eq!(g.waiters(0, "1").len(), 1);
    assert!(
        steps > 0 && steps <= 4 * j.len(),
        "{steps} steps for {} jobs",
        j.len()
    );
}
