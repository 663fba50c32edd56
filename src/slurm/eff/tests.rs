use super::*;
use crate::efficiency::Efficiency;
use crate::slurm::model::{JobState, Partition};

fn fixture(v: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/slurm/{v}/sacct_eff.out",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn by_name<'a>(jobs: &'a [JobUse], name: &str) -> &'a JobUse {
    jobs.iter()
        .find(|j| j.detail.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

fn parts() -> Vec<Partition> {
    let p = |name: &str, max: u64| Partition {
        name: name.into(),
        state: "UP".into(),
        max_time: SlurmDuration::from_secs(max),
        total_cpus: 32,
        total_nodes: 2,
        tres: Some("cpu=32,mem=32G,node=2,billing=32,gres/gpu=16".into()),
        ..Partition::default()
    };
    vec![p("short", 1800), p("polar", 4 * 3600), p("long", 2 * 86400)]
}

#[test]
fn both_versions_read_with_steps_attached() {
    for v in ["22.05", "26.05"] {
        let jobs = parse_eff(&fixture(v)).unwrap_or_else(|e| panic!("{v}: {e}"));
        let burn = by_name(&jobs, "burn two|cores");
        assert_eq!(burn.elapsed_s, Some(47), "{v}");
        assert_eq!(burn.time_limit_s, Some(300), "{v}");
        assert_eq!(burn.core_s, Some(94), "{v}");
        assert!(burn.total_cpu_s.unwrap() > 28.0, "{v}");
        let steps: Vec<&str> = burn.steps.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(steps, ["batch", "0"], "{v}");
        let rss = burn.steps[0].max_rss.unwrap();
        assert!((300..330).contains(&(rss >> 20)), "{v}: {rss}");
        assert_eq!(burn.steps[0].max_rss_node.as_deref(), Some("gpu01"));
        assert_eq!(burn.steps[1].max_rss, None, "{v}: a 1 s step has no MaxRSS");
    }
}

#[test]
fn report_matches_sacct_figures_and_says_what_would_do() {
    for v in ["22.05", "26.05"] {
        let jobs = parse_eff(&fixture(v)).unwrap();
        let e = Efficiency::compute(by_name(&jobs, "burn two|cores"), &parts());
        assert_eq!(e.cpus, Some(2));
        assert_eq!(e.mem_requested_bytes, Some(1 << 30));
        assert_eq!(e.mem_peak_step.as_deref(), Some("batch"));
        let cpu = e.cpu_efficiency.unwrap();
        assert!((cpu - e.cpu_time_s.unwrap() / 94.0).abs() < 1e-3, "{v}");
        assert!(
            e.verdict.starts_with("asked 1G, peaked 3")
                && e.verdict.contains(": 400M would do")
                && e.verdict.contains("of 2 CPUs: 1 would do"),
            "{v}: {}",
            e.verdict
        );
        assert_eq!(e.suggestion.mem.as_deref(), Some("400M"));
        assert_eq!(e.triage.as_deref(), Some("COMPLETE"));
        assert!(e.notes.is_empty(), "{v}: {:?}", e.notes);
    }
}

#[test]
fn a_short_job_says_why_it_has_no_memory_peak() {
    for v in ["22.05", "26.05"] {
        let jobs = parse_eff(&fixture(v)).unwrap();
        let e = Efficiency::compute(by_name(&jobs, "quick"), &[]);
        assert_eq!(e.mem_peak_bytes, None);
        assert!(
            e.notes[0].contains("30 s accounting interval"),
            "{:?}",
            e.notes
        );
        assert!(!e.verdict.contains("peaked 0"), "{}", e.verdict);
    }
}

#[test]
fn timeout_names_a_longer_time_and_the_partition_that_allows_it() {
    for v in ["22.05", "26.05"] {
        let jobs = parse_eff(&fixture(v)).unwrap();
        let t = by_name(&jobs, "tmo");
        assert_eq!(t.detail.state, Some(JobState::Timeout));
        let e = Efficiency::compute(t, &parts());
        assert_eq!(e.verdict, "ran out of time at 1:00: 2m would fit short");
        assert_eq!(e.suggestion.time_s, Some(120));
        assert_eq!(e.triage.as_deref(), Some("ERR_TIMEOUT"));
        // The same job at 4 h in polar: 5 h needs `long`.
        let mut long = t.clone();
        long.time_limit_s = Some(4 * 3600);
        long.detail.partition = Some("polar".into());
        let e = Efficiency::compute(&long, &parts());
        assert_eq!(
            e.verdict,
            "ran out of time at 4:00:00: 5h would need partition long"
        );
        assert_eq!(e.suggestion.partition.as_deref(), Some("long"));
        // Nothing longer than 2 days: the largest is offered.
        long.time_limit_s = Some(47 * 3600);
        let e = Efficiency::compute(&long, &parts());
        assert_eq!(e.suggestion.time_s, Some(2 * 86400), "{}", e.verdict);
    }
}

#[test]
fn gpus_without_telemetry_say_so() {
    let jobs = parse_eff(&fixture("22.05")).unwrap();
    let e = Efficiency::compute(by_name(&jobs, "gpujob"), &[]);
    assert_eq!(e.gpus, 2);
    assert_eq!(e.gpu_utilization, None);
    assert!(e.notes.iter().any(|n| n.contains("no GPU utilisation")));
}

#[test]
fn gpu_utilisation_from_tres_usage_where_recorded() {
    let jobs = parse_eff(&fixture("22.05")).unwrap();
    let mut j = by_name(&jobs, "gpujob").clone();
    j.steps[0].gpu_util = Some(12.0);
    j.elapsed_s = Some(600);
    let e = Efficiency::compute(&j, &[]);
    assert_eq!(e.gpu_utilization, Some(12.0));
    assert!(
        e.verdict.contains("2 GPUs 12% busy: 1 would do"),
        "{}",
        e.verdict
    );
    assert_eq!(e.suggestion.gpus, Some(1));
    assert_eq!(
        tres_value(
            "cpu=00:00:17,gres/gpuutil=87,gres/gpumem=100M",
            "gres/gpuutil"
        ),
        Some("87")
    );
}

#[test]
fn odd_records_cost_only_themselves() {
    let out = fixture("22.05");
    let mut lines: Vec<String> = out.lines().map(String::from).collect();
    lines[0] = lines[0].replacen("\x1f47\x1f", "\x1fsoon\x1f", 1);
    lines.insert(2, "garbage".into());
    let p = read_eff(&(lines.join("\n") + "\n"));
    assert_eq!(p.problems.len(), 2, "{:?}", p.problems);
    assert!(p.items.iter().any(|j| j.detail.name == "quick"));
    assert!(read_eff("").items.is_empty());
    assert_eq!(read_eff("x|y\n").problems.len(), 1);
}

#[test]
fn out_of_memory_asks_for_more() {
    for v in ["22.05", "26.05"] {
        let jobs = parse_eff(&fixture(v)).unwrap();
        let e = Efficiency::compute(by_name(&jobs, "oom"), &[]);
        assert_eq!(e.state, "OUT_OF_MEMORY");
        assert_eq!(e.triage.as_deref(), Some("ERR_OOM"));
        assert_eq!(e.verdict, "ran out of memory at 100M: ask for 150M", "{v}");
        assert_eq!(e.suggestion.mem.as_deref(), Some("150M"));
    }
}

#[test]
fn windows_page_back_from_a_minute_after_now() {
    let w = windows(0, 30, 7);
    assert_eq!(w.len(), 5);
    assert_eq!(w[0], (Edge::Ago(7 * 86_400), NEWEST_END));
    assert_eq!(w[4], (Edge::Ago(30 * 86_400), Edge::Ago(28 * 86_400)));
    assert_eq!(NEWEST_END.arg(), "now+60seconds");
    assert_eq!(
        windows(7, 7, 7),
        [(Edge::Ago(14 * 86_400), Edge::Ago(7 * 86_400))]
    );
    let a = sacct_ended(Edge::Ago(60), NEWEST_END, false);
    assert!(a.contains(&"--allocations".to_string()));
    assert!(a.contains(&"--starttime=now-60seconds".to_string()));
}
