use super::*;
use crate::logview::Stream;
use proptest::prelude::*;

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/progress/",
            $name
        ))
        .as_slice()
    };
}

fn t(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
}

fn at(secs: i64) -> NaiveDateTime {
    t("2026-11-29T10:00:00") + chrono::Duration::seconds(secs)
}

fn latest(text: &[u8]) -> Reading {
    Patterns::default().latest(text).unwrap()
}

#[test]
fn a_real_tqdm_log_reads_as_its_last_bar() {
    let r = latest(fixture!("tqdm_two_bars.err"));
    assert_eq!(r.source, Source::Tqdm);
    assert_eq!((r.done, r.total), (Some(2000), Some(2000)));
    assert_eq!(r.fraction, 1.0);
    // Cut inside the second bar: the last whole update before the cut.
    let text = fixture!("tqdm_two_bars.err");
    let s = std::str::from_utf8(text).unwrap();
    let cut = s.find("1000/2000").unwrap() + 40;
    let r = latest(&text[..cut]);
    assert_eq!((r.done, r.total), (Some(1000), Some(2000)));
    assert_eq!(r.fraction, 0.5);
    assert_eq!(r.remaining, Some(0));
}

#[test]
fn tqdm_remaining_in_hours_and_unit_scaled_counts() {
    let text = fixture!("tqdm_hours.err");
    let s = std::str::from_utf8(text).unwrap();
    // The hours bar: `6200/10000 [5:05:00<3:06:56, 2.95s/it]`.
    let end = s.find("1234it").unwrap();
    let r = latest(&text[..end]);
    assert_eq!((r.done, r.total), (Some(6200), Some(10000)));
    assert_eq!(r.remaining, Some(3 * 3600 + 6 * 60 + 56));
    // The whole file ends with a unit-scaled bar (`1.50M/4.00M`): tqdm's percent.
    let r = latest(text);
    assert_eq!(r.source, Source::Tqdm);
    assert_eq!(r.fraction, 0.38);
    assert_eq!(r.done, None);
    assert_eq!(r.remaining, Some(16 * 60 + 40));
}

#[test]
fn epochs_count_the_one_under_way_as_begun() {
    let r = latest(fixture!("keras_epochs.out"));
    assert_eq!(r.source, Source::Epoch);
    assert_eq!((r.done, r.total), (Some(3), Some(10)));
    assert!((r.fraction - 0.2).abs() < 1e-9);
    for line in ["Epoch [3/10] loss 0.2", "epoch: 3 of 10", "EPOCH 3 / 10"] {
        let r = latest(line.as_bytes());
        assert_eq!((r.source, r.total), (Source::Epoch, Some(10)), "{line}");
    }
}

#[test]
fn the_latest_line_wins_across_readers() {
    let text = fixture!("steps_and_eval.out");
    let r = latest(text);
    assert_eq!(
        (r.source, r.done, r.total),
        (Source::Step, Some(300), Some(5000))
    );
    let s = std::str::from_utf8(text).unwrap();
    let cut = s.find("[2026-11-28 23:16:04]").unwrap();
    let r = latest(&text[..cut]);
    assert_eq!(r.source, Source::Percent);
    assert!((r.fraction - 0.415).abs() < 1e-9);
    // On one line, the first reader in order: the bar, not its percent nor the epoch.
    let r = latest("Epoch 3/10:  45%|████▌     | 450/1000 [01:23<01:40, 5.4it/s]".as_bytes());
    assert_eq!((r.source, r.done), (Source::Tqdm, Some(450)));
    assert_eq!(r.remaining, Some(100));
    let r = latest(b"[7/20] compiling");
    assert_eq!((r.source, r.done), (Source::Fraction, Some(7)));
}

#[test]
fn nothing_that_is_not_progress() {
    let p = Patterns::default();
    for text in [
        "",
        "loss 0.3 lr 1e-4",
        "1234it [01:00, 20.57it/s]",
        "step 3/0",
        "used 250% of a CPU",
        "date 2026/11/29",
    ] {
        assert_eq!(p.latest(text.as_bytes()), None, "{text}");
    }
}

#[test]
fn user_patterns_come_after_the_builtins_and_builtins_can_be_left_out() {
    let cfg = ProgressConfig {
        builtins: vec!["tqdm".into()],
        patterns: vec![r"done (?P<done>\d+) of (?P<total>\d+)".into()],
    };
    let p = Patterns::new(&cfg).unwrap();
    let r = p.latest(b"at 50%\ndone 3 of 12\n").unwrap();
    assert_eq!(
        (r.source, r.done, r.total),
        (Source::Custom(0), Some(3), Some(12))
    );
    assert_eq!(p.latest(b"at 50%\n"), None);
    let cfg = ProgressConfig {
        builtins: vec![],
        patterns: vec![r"(?P<percent>\d+) pct, (?P<remaining>[0-9:]+) left".into()],
    };
    let r = Patterns::new(&cfg)
        .unwrap()
        .latest(b"12 pct, 1:00:00 left")
        .unwrap();
    assert_eq!((r.fraction, r.remaining), (0.12, Some(3600)));
}

#[test]
fn bad_config_names_its_key() {
    let bad = |builtins: Vec<&str>, patterns: Vec<&str>| {
        Patterns::new(&ProgressConfig {
            builtins: builtins.into_iter().map(String::from).collect(),
            patterns: patterns.into_iter().map(String::from).collect(),
        })
        .unwrap_err()
    };
    let e = bad(vec!["tqdm", "bogus"], vec![]);
    assert_eq!(e.key, "progress.builtins");
    assert!(e.reason.contains("bogus"), "{}", e.reason);
    let e = bad(vec![], vec![r"(?P<percent>\d+)%", r"(unclosed"]);
    assert_eq!(e.key, "progress.patterns[1]");
    let e = bad(vec![], vec![r"step (\d+)/(\d+)"]);
    assert_eq!(e.key, "progress.patterns[0]");
    assert!(e.reason.contains("(?P<done>"), "{}", e.reason);
}

#[test]
fn updates_split_across_pieces_are_read_whole() {
    let p = Patterns::default();
    let mut tr = Tracker::default();
    assert!(tr.feed(
        &p,
        Stream::Stderr,
        b"\r 10%|#   | 10/100 [00:10<01:3",
        at(0)
    ));
    // The first piece ended inside the bar: its percent alone.
    assert_eq!(tr.reading().unwrap().remaining, None);
    tr.feed(&p, Stream::Stderr, b"0, 1.0it/s]", at(1));
    assert_eq!(tr.reading().unwrap().remaining, Some(90));
    assert_eq!(tr.reading().unwrap().done, Some(10));
    // Another stream's piece does not join this one.
    assert!(!tr.feed(&p, Stream::Stdout, b"no progress here\n", at(2)));
    tr.feed(
        &p,
        Stream::Stderr,
        b"\r 20%|##  | 20/100 [00:20<01:20, 1.0it/s]",
        at(10),
    );
    assert_eq!(tr.reading().unwrap().done, Some(20));
}

#[test]
fn eta_from_the_observed_rate_never_from_one_reading() {
    let p = Patterns::default();
    let mut tr = Tracker::default();
    // Read when the log is opened: written some time before, so no rate from it.
    tr.feed(&p, Stream::Stdout, b"step 100/1000\n", at(0));
    assert_eq!(tr.finish(), None);
    // Seen again unchanged: still nothing.
    tr.feed(&p, Stream::Stdout, b"step 100/1000\n", at(30));
    assert_eq!(tr.finish(), None);
    // The first change starts the measure; the second gives a rate.
    tr.feed(&p, Stream::Stdout, b"step 200/1000\n", at(60));
    assert_eq!(tr.finish(), None);
    tr.feed(&p, Stream::Stdout, b"step 300/1000\n", at(120));
    // 100 steps a minute, 700 left: 7 minutes after the last change.
    assert_eq!(tr.finish(), Some(at(120 + 420)));
    // Silence does not move the estimate.
    tr.feed(&p, Stream::Stdout, b"loss 0.2\n", at(150));
    assert_eq!(tr.finish(), Some(at(540)));
    // A new bar (another total) starts over.
    tr.feed(&p, Stream::Stdout, b"step 1/50\n", at(200));
    assert_eq!(tr.finish(), None);
}

#[test]
fn a_bar_read_again_with_later_output_keeps_its_time() {
    let p = Patterns::default();
    let mut tr = Tracker::default();
    let bar = "\r 50%|█████     | 50/100 [00:50<00:50,  1.00it/s]";
    tr.feed(&p, Stream::Stderr, bar.as_bytes(), at(0));
    assert_eq!(tr.finish(), Some(at(50)));
    // The program logs a line while the bar stands unfinished: the bar is the latest
    // reading still, from when it was written.
    assert!(!tr.feed(&p, Stream::Stderr, b"\nsaving checkpoint\n", at(30)));
    assert_eq!(tr.finish(), Some(at(50)));
    assert_eq!(tr.seen_at(), Some(at(0)));
}

#[test]
fn tqdm_gives_its_own_remaining_time() {
    let p = Patterns::default();
    let mut tr = Tracker::default();
    tr.feed(
        &p,
        Stream::Stderr,
        "\r 62%|██████▏   | 6200/10000 [5:05:00<3:06:56,  2.95s/it]".as_bytes(),
        at(0),
    );
    assert_eq!(tr.finish(), Some(at(3 * 3600 + 6 * 60 + 56)));
}

fn job(state: &str, used: u64, limit: u64) -> Job {
    let me = include_str!("../../tests/fixtures/slurm/squeue_me.out");
    let mut j = crate::slurm::parse::parse_squeue(me).unwrap().remove(0);
    j.state = crate::slurm::model::JobState::parse(state);
    j.time_used = SlurmDuration::from_secs(used);
    j.time_limit = SlurmDuration::from_secs(limit);
    j
}

#[test]
fn the_summary_says_when_the_limit_comes_first() {
    let p = Patterns::default();
    let mut tr = Tracker::default();
    tr.feed(
        &p,
        Stream::Stderr,
        "\r 62%|██████▏   | 6200/10000 [5:05:00<5:10:00,  2.95s/it]".as_bytes(),
        at(0),
    );
    // Ran 5 h of 8 h when listed: 3 h left.
    let j = job("RUNNING", 5 * 3600, 8 * 3600);
    let s = tr.summary(Some(&j), Some(at(0))).unwrap();
    assert_eq!(s.line(at(0)), "62 % · ETA 5 h 10 m · limit in 3 h");
    assert_eq!(s.cell(at(0)), "62% 5h10m!");
    assert!(s.late());
    assert_eq!(
        s.source_line(at(12)),
        "6200/10000 · tqdm bar · read 12 s ago"
    );
    // With a day's limit it finishes in time.
    let j = job("RUNNING", 5 * 3600, 24 * 3600);
    let s = tr.summary(Some(&j), Some(at(0))).unwrap();
    assert!(!s.late());
    assert_eq!(s.cell(at(600)), "62% 5h");
    // A pending or finished job has no limit ahead.
    // Under one percent is not 0.
    let mut slow = Tracker::default();
    slow.feed(&p, Stream::Stdout, b"step 5/600\n", at(0));
    let s = slow
        .summary(Some(&job("RUNNING", 10, 120)), Some(at(0)))
        .unwrap();
    assert_eq!(s.cell(at(0)), "<1%");
    assert!(s.line(at(0)).starts_with("<1 % · "), "{}", s.line(at(0)));
    let j = job("COMPLETED", 5 * 3600, 8 * 3600);
    assert_eq!(tr.summary(Some(&j), Some(at(0))).unwrap().limit_end, None);
}

#[test]
fn spaced_durations() {
    assert_eq!(spaced(0), "0 s");
    assert_eq!(spaced(45), "45 s");
    assert_eq!(spaced(3600), "1 h");
    assert_eq!(spaced(5 * 3600 + 600), "5 h 10 m");
    assert_eq!(spaced(2 * 86400 + 4 * 3600 + 59), "2 d 4 h");
    assert_eq!(spaced(61), "1 m 1 s");
}

/// Compiled once for the property tests.
fn builtins() -> &'static Patterns {
    static P: std::sync::OnceLock<Patterns> = std::sync::OnceLock::new();
    P.get_or_init(Patterns::default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(
        pieces in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..8),
    ) {
        let p = builtins();
        let mut tr = Tracker::default();
        for (i, b) in pieces.iter().enumerate() {
            let stream = if i % 2 == 0 { Stream::Stdout } else { Stream::Stderr };
            tr.feed(p, stream, b, at(i as i64));
            if let Some(r) = tr.reading() {
                prop_assert!((0.0..=1.0).contains(&r.fraction));
            }
            let _ = tr.finish();
        }
    }

    #[test]
    fn progress_like_text_never_panics(
        s in r"(\r|\n|step |epoch |\[|\]|/|%|\||<|:|[0-9]{1,25}| |█|\?){0,60}",
    ) {
        let p = builtins();
        let mut tr = Tracker::default();
        tr.feed(p, Stream::Stderr, s.as_bytes(), at(0));
        tr.feed(p, Stream::Stderr, s.as_bytes(), at(5));
        if let Some(r) = tr.reading() {
            prop_assert!((0.0..=1.0).contains(&r.fraction));
        }
        let j = job("RUNNING", 10, 100);
        if let Some(sum) = tr.summary(Some(&j), Some(at(0))) {
            let _ = (sum.line(at(9)), sum.cell(at(9)), sum.source_line(at(9)));
        }
    }
}

/// Not a timing assertion: prints what reading a flood costs (`--nocapture`).
#[test]
fn a_flood_of_progress_lines_costs_little() {
    let line =
        "\r 45%|████▌     | 450/1000 [01:23<01:40,  5.40it/s] step 450/1000 epoch 3/10 12.5%";
    let text = line.repeat(1 << 20 >> 7);
    let p = Patterns::default();
    let t0 = std::time::Instant::now();
    for _ in 0..20 {
        assert!(p.latest(text.as_bytes()).is_some());
    }
    println!(
        "latest() over a {} KiB piece of progress lines: {:?}",
        text.len() >> 10,
        t0.elapsed() / 20
    );
    let plain = "loss 0.2 lr 1e-4 grad norm 1.3 tokens 123456\n".repeat(1 << 20 >> 6);
    let t0 = std::time::Instant::now();
    for _ in 0..20 {
        assert!(p.latest(plain.as_bytes()).is_none());
    }
    println!(
        "latest() over a {} KiB piece with none: {:?}",
        plain.len() >> 10,
        t0.elapsed() / 20
    );
}

/// Once the job has ended there is nothing left to estimate: a completed job's cell says
/// `done` whatever its last bar read (tqdm's last redraw often stops short of 100), one that
/// failed or was cancelled says where it got to, and neither names an ETA or the limit.
#[test]
fn an_ended_job_shows_done_or_where_it_stopped_never_an_eta() {
    let p = Patterns::default();
    let mut tr = Tracker::default();
    tr.feed(&p, Stream::Stdout, b"step 590/600\n", at(0));
    tr.feed(&p, Stream::Stdout, b"step 598/600\n", at(60));
    let running = tr
        .summary(Some(&job("RUNNING", 600, 3600)), Some(at(60)))
        .unwrap();
    assert!(
        running.cell(at(60)).starts_with("99%"),
        "{}",
        running.cell(at(60))
    );
    let done = tr
        .summary(Some(&job("COMPLETED", 600, 3600)), Some(at(60)))
        .unwrap();
    assert_eq!(done.cell(at(60)), "done");
    assert_eq!(done.line(at(60)), "99 % · the job completed");
    for state in ["FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"] {
        let s = tr
            .summary(Some(&job(state, 600, 3600)), Some(at(60)))
            .unwrap();
        assert_eq!(s.cell(at(60)), "99% ended", "{state}");
        assert_eq!(s.line(at(60)), "99 % · where it stopped", "{state}");
    }
}
