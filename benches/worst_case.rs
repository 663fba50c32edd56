//! Prints how long the parts of a refresh that grow with the queue take on listings built
//! to be their worst case, beside an honest listing of the same size: the framing of a
//! squeue answer where 40 jobs are named to close their record early and then hold ~340
//! fake record starts each (issue 37: such names made every `--all` view rescan the rest
//! of the answer once per fake start), and the dependency chains of a queue of many roots,
//! links and `singleton` names. Run with `cargo bench --bench worst_case` (`-- N` for N
//! jobs, 20,000 by default). Figures, not assertions.

use std::time::{Duration, Instant};

use slurmdash::slurm::deptree::{DepGraph, MAX_ROWS};
use slurmdash::slurm::parse::{parse_squeue, read_squeue};

const TERM: &str = "\u{1e}\n";

/// One framed squeue record (`command::SQUEUE_FIELDS`).
fn rec(id: &str, name: &str, state: &str, dep: &str) -> String {
    let f = [
        id,
        "cpu=1,mem=1G,node=1,billing=1",
        id,
        "N/A",
        "sduser",
        "research",
        "cpu",
        state,
        "None",
        "0:00",
        "1:00",
        "1",
        "1",
        "1G",
        "N/A",
        "",
        "N/A",
        "N/A",
        "normal",
        "4294901758",
        dep,
        "/home/sduser/run",
        id,
        name,
        id,
    ];
    format!("{}{TERM}", f.join("\x1f"))
}

/// `n` jobs; `hostile` of them (spread through the listing) named to close their record
/// early and then start ~340 fake records; the others with an ordinary name of the same
/// length, so both listings are the same size.
fn listing(n: usize, hostile: usize, fake: bool) -> String {
    let every = n / hostile.max(1);
    (0..n)
        .map(|i| {
            let id = (1_000_000 + i).to_string();
            let name = if i % every == 0 && i / every < hostile {
                let fakes = format!("9\x1f{TERM}").repeat(340);
                if fake {
                    format!("x\x1f{id}{TERM}{fakes}")
                } else {
                    "x".repeat(id.len() + 3 + fakes.len())
                }
            } else {
                "train".to_string()
            };
            rec(&id, &name, "PENDING", "(null)")
        })
        .collect()
}

/// `n` jobs: a third running, each waited on by one of a third, the last third each the
/// one job of its own `singleton` name.
fn chains(n: usize) -> String {
    (0..n / 3)
        .flat_map(|i| {
            let (root, waits, single) = (3 * i + 1, 3 * i + 2, 3 * i + 3);
            [
                rec(&root.to_string(), "r", "RUNNING", "(null)"),
                rec(
                    &waits.to_string(),
                    "w",
                    "PENDING",
                    &format!("afterok:{root}(unfulfilled)"),
                ),
                rec(
                    &single.to_string(),
                    &format!("s{i}"),
                    "PENDING",
                    "singleton(unfulfilled)",
                ),
            ]
        })
        .collect()
}

/// Best and mean of `runs` runs of `f`.
fn time(runs: u32, mut f: impl FnMut()) -> (Duration, Duration) {
    let (mut best, mut total) = (Duration::MAX, Duration::ZERO);
    for _ in 0..runs {
        let t = Instant::now();
        f();
        let took = t.elapsed();
        best = best.min(took);
        total += took;
    }
    (best, total / runs)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    for (what, fake) in [("honest", false), ("hostile", true)] {
        let out = listing(n, 40, fake);
        let p = read_squeue(&out);
        // A hostile job's name ends at its early close; the rest of it is one odd record.
        assert!(p.items.len() >= n, "{what}: {:?}", p.problems.first());
        let (best, mean) = time(5, || {
            let _ = read_squeue(&out);
        });
        println!(
            "squeue answer, {n} jobs, {:.1} MB, {what} names: best {:.1} ms, mean {:.1} ms",
            out.len() as f64 / 1e6,
            ms(best),
            ms(mean)
        );
    }
    let jobs = parse_squeue(&chains(n)).expect("synthetic chains parse");
    let (best, mean) = time(5, || {
        let g = DepGraph::build(&jobs, |_, _| None);
        // Past MAX_ROWS rows only the groups' headings are added.
        assert!(g.tree().len() >= (jobs.len() / 3 * 4).min(MAX_ROWS));
    });
    println!(
        "dependency chains of {} jobs ({} roots, {} links, {} singleton names), graph and tree: best {:.1} ms, mean {:.1} ms",
        jobs.len(),
        n / 3,
        n / 3,
        n / 3,
        ms(best),
        ms(mean)
    );
}
