//! No bytes from the cluster make the budget's parsers panic, and a well-formed record
//! reads back what was written.

use proptest::prelude::*;

use super::tests::fixture_of;
use super::*;
use crate::slurm::limits::parse_assoc_mgr;

const FIXTURES: &[&str] = &[
    "usage_sacct_used.out",
    "usage_sacct_waits.out",
    "usage_assoc_mgr.out",
    "usage_assoc_mgr_limits.out",
];

const VERSIONS: &[&str] = &["22.05", "26.05"];

fn all(s: &str) {
    if let Ok(jobs) = parse_acct_jobs(s) {
        let _ = waits::similar(
            &jobs,
            waits::Size {
                partition: "short",
                cpus: 2,
                gpus: 0,
            },
            None,
        );
        let r = report(
            &Read {
                days: 7,
                sacct: &jobs,
                ..Read::default()
            },
            Vec::new(),
        );
        for a in &r.accounts {
            let _ = a.tightest();
        }
    }
    let _ = parse_assoc_mgr(s);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_panic_on_arbitrary_text(s in "\\PC*") {
        all(&s);
    }

    #[test]
    fn no_panic_on_separator_soup(s in "[0-9=,/()N:T \\-\u{1f}\nA-Za-z|]{0,200}") {
        all(&s);
    }

    #[test]
    fn no_panic_on_mutated_or_cut_real_output(
        which in 0..FIXTURES.len(),
        version in 0..VERSIONS.len(),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        insert in "[\u{1f}\n=,() A-Za-z0-9:-]{0,8}",
    ) {
        let real = fixture_of(VERSIONS[version], FIXTURES[which]);
        let mut chars: Vec<char> = real.chars().collect();
        let i = at.index(chars.len() + 1);
        chars.splice(i..i, insert.chars());
        let c = cut.index(chars.len().max(1));
        all(&chars.iter().collect::<String>());
        all(&chars[..c.min(chars.len())].iter().collect::<String>());
    }

    /// A record of any figures reads back as written, and the used figure is CPUs × time.
    #[test]
    fn a_record_reads_back(
        account in "[a-z][a-z0-9_-]{0,12}",
        cpus in 0u32..100_000,
        gpus in 0u32..64,
        secs in 0u64..100_000_000,
    ) {
        let gres = if gpus > 0 { format!(",gres/gpu={gpus}") } else { String::new() };
        let line = [
            "42", &account, "short", "COMPLETED", "2026-11-20T10:00:00", "2026-11-20T10:00:00",
            "2026-11-20T10:01:00", &secs.to_string(), &cpus.to_string(),
            &format!("cpu={cpus}{gres}"), "",
        ].join("\u{1f}");
        let jobs = parse_acct_jobs(&format!("{line}\n")).unwrap();
        prop_assert_eq!(jobs.len(), 1);
        prop_assert_eq!(jobs[0].gpus, gpus);
        prop_assert_eq!(jobs[0].waited_s(), Some(60));
        let r = report(&Read { days: 1, sacct: &jobs, ..Read::default() }, Vec::new());
        prop_assert_eq!(r.accounts[0].used.cpu_seconds, u64::from(cpus) * secs);
        prop_assert_eq!(r.accounts[0].used.gpu_seconds, u64::from(gpus) * secs);
    }
}
