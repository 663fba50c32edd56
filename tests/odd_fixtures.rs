//! Odd cases captured from the dev cluster (tests/fixtures/odd/).

use slurmdash::slurm::logpath::log_paths;
use slurmdash::slurm::parse::parse_scontrol_jobs;

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/fixtures/odd/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// scontrol prints `slurm-2256_4294967294.out` (NO_VAL for the task id) for an array whose
/// tasks are all pending: the dashboard shows the pattern per task instead.
#[test]
fn a_pending_arrays_logs_are_the_pattern_per_task() {
    let d = parse_scontrol_jobs(&fixture("scontrol_pending_array.out")).expect("parses");
    let d = &d[0];
    assert_eq!(d.id.as_ref().map(|i| i.as_str()), Some("2256_[2-20]"));
    // As scontrol printed it; the log panes resolve it per task.
    assert_eq!(
        d.stdout.as_deref(),
        Some("/home/sduser/slurm-2256_4294967294.out")
    );
    let (out, err, guessed) = log_paths(d, false).expect("paths");
    assert_eq!(out, "/home/sduser/slurm-2256_%a.out");
    assert_eq!(err, out);
    assert!(!guessed);
}
