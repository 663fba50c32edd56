//! No input makes a parser panic: arbitrary text, separator soup, and real
//! fixture output with bytes inserted, removed or cut off.

use std::path::PathBuf;

use proptest::prelude::*;

use crate::slurm::jobid::JobId;
use crate::slurm::model::gpus_in_tres;
use crate::slurm::parse::*;
use crate::slurm::state::JobState;
use crate::slurm::time::SlurmDuration;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/slurm")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn all_parsers(s: &str) {
    let _ = parse_squeue(s);
    let _ = parse_squeue_start(s);
    let _ = parse_sacct(s);
    let _ = parse_scontrol_jobs(s);
    let _ = parse_scontrol_partitions(s);
    let _ = parse_sinfo(s);
    let _ = parse_sprio(s);
    let _ = parse_sshare(s);
    let _ = parse_sbatch(s);
    let ids: Vec<JobId> = vec!["1".parse().unwrap()];
    let _ = parse_scancel(&ids, s, 1);
    let _ = s.parse::<JobId>();
    let _ = SlurmDuration::parse(s);
    let _ = JobState::parse(s);
    let _ = gpus_in_tres(s);
    let _ = crate::slurm::time::parse_time(s);
    let ctx = crate::slurm::logpath::LogContext::default();
    let _ = crate::slurm::logpath::resolve_log_path(s, &ctx);
}

const FIXTURES: &[&str] = &[
    "squeue_me.out",
    "squeue_me_r.out",
    "squeue_start.out",
    "scontrol_job_running.out",
    "scontrol_job_array.out",
    "scontrol_partition.out",
    "sinfo.out",
    "sprio.out",
    "sshare.out",
    "sacct_finished.out",
    "sacct_since.out",
    "squeue_long_array.out",
    "scontrol_job_newline.out",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_parser_panics_on_arbitrary_text(s in "\\PC*") {
        all_parsers(&s);
    }

    #[test]
    fn no_parser_panics_on_separator_soup(s in "[0-9_\\[\\]%+.:=/ \\-\u{1f}\u{1e}\nA-Za-z()|,;]{0,200}") {
        all_parsers(&s);
    }

    #[test]
    fn no_parser_panics_on_mutated_real_output(
        which in 0..FIXTURES.len(),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        insert in "[\u{1f}\u{1e}\n=| A-Za-z0-9:-]{0,8}",
    ) {
        let real = fixture(FIXTURES[which]);
        let mut chars: Vec<char> = real.chars().collect();
        if !chars.is_empty() {
            let i = at.index(chars.len());
            chars.splice(i..i, insert.chars());
            let c = cut.index(chars.len());
            chars.remove(c);
        }
        let s: String = chars.into_iter().collect();
        all_parsers(&s);
        // Truncation anywhere must also be safe.
        let t: String = real.chars().take(cut.index(real.chars().count().max(1))).collect();
        all_parsers(&t);
    }

    #[test]
    fn duration_round_trips(secs in 0u64..10_000_000) {
        let d = SlurmDuration::from_secs(secs);
        prop_assert_eq!(SlurmDuration::parse(&d.to_slurm()).unwrap(), d);
    }

    /// Any job name and work dir survive squeue's format, separators and
    /// newlines included (only the record terminator itself cannot appear).
    #[test]
    fn any_name_round_trips_through_squeue_format(
        name in "[^\u{1e}]{0,40}",
        dir in "/[^\u{1e}\u{1f}\n]{0,30}",
    ) {
        let real = fixture("squeue_me.out");
        let first = real.split('\u{1e}').next().unwrap().to_string();
        let mut fields: Vec<String> = first.splitn(21, '\u{1f}').map(str::to_string).collect();
        fields[19] = dir.clone();
        fields[20] = name.clone();
        let out = format!("{}\u{1e}\n", fields.join("\u{1f}"));
        let jobs = parse_squeue(&out).unwrap();
        prop_assert_eq!(jobs.len(), 1);
        prop_assert_eq!(&jobs[0].name, &name);
        prop_assert_eq!(&jobs[0].work_dir, &dir);
    }
}
