use super::*;
use crate::slurm::state::Status;

fn row(fields: &[&str]) -> String {
    format!("{}\x1e\n", fields.join("\x1f"))
}

/// A framed record: the fixed fields, then work dir, id, name, id.
fn framed(fixed: &[&str], dir: &str, name: &str) -> String {
    let id = fixed[0];
    let mut f = fixed.to_vec();
    f.extend([dir, id, name, id]);
    row(&f)
}

/// The fixed fields of `command::SQUEUE_FIELDS`, `tres-alloc` second.
const FIXED_RUNNING: &[&str] = &[
    "42",
    "cpu=2,mem=1G,node=1,billing=2,gres/gpu=2",
    "42",
    "N/A",
    "sduser",
    "acct",
    "short",
    "RUNNING",
    "None",
    "1:02",
    "30:00",
    "1",
    "2",
    "1G",
    "gres:gpu:2",
    "node1",
    "2026-11-23T08:12:44",
    "2026-11-23T08:12:45",
    "normal",
    "4294901758",
    "(null)",
];

fn running(id: &str, dir: &str, name: &str) -> String {
    let mut f = FIXED_RUNNING.to_vec();
    f[0] = id;
    f[2] = id;
    framed(&f, dir, name)
}

#[test]
fn parses_a_row_with_hostile_name() {
    let out = running("42", "/home/sduser", "name | with, \"quotes\" ünïcode");
    let jobs = parse_squeue(&out).unwrap();
    let j = &jobs[0];
    assert_eq!(j.id.as_str(), "42");
    assert_eq!(j.name, "name | with, \"quotes\" ünïcode");
    assert_eq!(&*j.work_dir, "/home/sduser");
    assert_eq!(j.status(), Status::Running);
    assert_eq!(j.gpus(), 2);
    assert_eq!(j.reason, None);
    assert_eq!(j.time_used.known().unwrap().as_secs(), 62);
    assert_eq!(j.problem, None);
}

#[test]
fn name_and_work_dir_may_hold_separators_terminators_and_newlines() {
    let out = format!(
        "{}{}{}",
        running("41", "/tmp/w\x1ed", "wd"),
        running("42", "/tmp/a\x1fb\x1e\nc", "a\x1fb\x1e\n7\x1fc\nd"),
        running("43", "", "plain"),
    );
    let p = read_squeue(&out);
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    let names: Vec<(&str, &str, &str)> = p
        .items
        .iter()
        .map(|j| (j.id.as_str(), &*j.work_dir, j.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("41", "/tmp/w\x1ed", "wd"),
            ("42", "/tmp/a\x1fb\x1e\nc", "a\x1fb\x1e\n7\x1fc\nd"),
            ("43", "", "plain"),
        ]
    );
}

#[test]
fn a_bad_record_is_its_own_marked_row_and_the_others_read() {
    let mut bad = FIXED_RUNNING.to_vec();
    bad[0] = "44";
    bad[11] = "lots";
    let out = format!(
        "{}{}{}",
        running("42", "/d", "a"),
        framed(&bad, "/d", "b"),
        running("45", "/d", "c")
    );
    let p = read_squeue(&out);
    assert_eq!(p.items.len(), 3);
    assert_eq!(p.problems.len(), 1);
    let b = &p.items[1];
    assert_eq!((b.id.as_str(), b.name.as_str()), ("44", "b"));
    assert_eq!(b.status(), Status::Running);
    let why = b.problem.as_deref().unwrap();
    assert!(
        why.contains("nodes (NumNodes)") && why.contains("line 2"),
        "{why}"
    );
    assert!(p.items[0].problem.is_none() && p.items[2].problem.is_none());
    let e = parse_squeue(&out).unwrap_err();
    assert_eq!(e.line, 2);
}

#[test]
fn a_record_without_a_readable_id_is_only_a_problem() {
    let mut bad = FIXED_RUNNING.to_vec();
    bad[0] = "4\x072";
    let out = format!(
        "{}{}{}",
        running("42", "/d", "a"),
        framed(&bad, "/d", "b"),
        running("45", "/d", "c")
    );
    let p = read_squeue(&out);
    let ids: Vec<&str> = p.items.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["42", "45"]);
    assert_eq!(p.problems.len(), 1);
    assert!(p.items.iter().all(|j| j.problem.is_none()));
}

#[test]
fn cut_off_output_marks_only_the_last_row() {
    let full = format!("{}{}", running("42", "/d", "a"), running("43", "/d", "b"));
    let cut = &full[..full.len() - 8];
    let p = read_squeue(cut);
    assert_eq!(p.items.len(), 2);
    assert!(p.items[0].problem.is_none());
    assert!(p.items[1].problem.is_some());
}

#[test]
fn older_unframed_output_still_reads() {
    // Captured before `%E` (and `tres-alloc`) was asked for.
    let mut f = FIXED_RUNNING[..FIXED_RUNNING.len() - 1].to_vec();
    f.remove(1);
    f.extend(["/home/sduser", "a\x1fb"]);
    let out = format!("{}{}", row(&f), row(&f));
    let jobs = parse_squeue(&out).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].name, "a\x1fb");
    let short = format!("{}{}", row(&f), row(&f[..5]));
    let e = parse_squeue(&short).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.what.contains("expected 20 fields, found 5"), "{e}");
}

/// A record of the older `-o` format (`%F` second, no `tres-alloc`), as the usage
/// fixtures were captured, reads with its GPUs per node × nodes; one of today's format
/// counts the GPUs of its TRES, however they were asked for.
#[test]
fn older_framed_records_read_beside_those_with_tres() {
    let mut old = FIXED_RUNNING.to_vec();
    old.remove(1);
    old[0] = "41";
    old[1] = "41";
    let mut gpus = FIXED_RUNNING.to_vec();
    gpus[0] = "43";
    gpus[2] = "43";
    gpus[1] = "cpu=3,mem=50M,node=1,billing=3,gres/gpu=3";
    gpus[14] = "N/A";
    let out = format!(
        "{}{}{}",
        framed(&old, "/d\x1f8", "old \x1f41\x1f"),
        running("42", "/d", "new"),
        framed(&gpus, "/d", "per task")
    );
    let p = read_squeue(&out);
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    type Seen<'a> = (&'a str, Option<u64>, &'a str, Option<&'a str>, u32);
    let got: Vec<Seen> = p
        .items
        .iter()
        .map(|j| {
            let tres = j.tres.as_deref();
            (
                j.id.as_str(),
                j.array_job_id,
                j.name.as_str(),
                tres,
                j.gpus(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("41", Some(41), "old \x1f41\x1f", None, 2),
            ("42", Some(42), "new", Some(FIXED_RUNNING[1]), 2),
            ("43", Some(43), "per task", Some(gpus[1]), 3),
        ]
    );
    assert_eq!(p.items[0].dependency, None);
    assert_eq!(p.items[2].tres_per_node, None);
    assert_eq!(p.items[0].time_used.to_string(), "1:02");
}

#[test]
fn empty_output_is_no_jobs() {
    assert!(parse_squeue("").unwrap().is_empty());
    assert!(parse_squeue("\n").unwrap().is_empty());
}

#[test]
fn start_estimates_are_framed_too() {
    let rec = |id: &str, name: &str| {
        format!(
            "{id}\x1fshort\x1fsduser\x1fPENDING\x1f2026-11-23T09:00:00\x1f1\x1f(null)\x1fPriority\x1f{name}\x1f{id}\x1e\n"
        )
    };
    let out = format!("{}{}", rec("7", "x\x1e\ny\x1fz"), rec("8", "w"));
    let v = parse_squeue_start(&out).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].name, "x\x1e\ny\x1fz");
    assert_eq!(v[1].id.as_str(), "8");
}

/// `%E` as the 26.05 dev cluster printed it: the dependency of each row, None for `(null)`
/// and for the older fixtures captured without it.
#[test]
fn the_dependency_of_each_row() {
    let mut f = FIXED_RUNNING.to_vec();
    f[7] = "PENDING";
    f[20] = "singleton(unfulfilled),afterany:6057(unfulfilled)";
    let out = format!("{}{}", framed(&f, "/d", "b"), running("43", "/d", "a"));
    let jobs = parse_squeue(&out).unwrap();
    assert_eq!(
        jobs[0].dependency.as_deref(),
        Some("singleton(unfulfilled),afterany:6057(unfulfilled)")
    );
    assert_eq!(jobs[1].dependency, None);
    let old = parse_squeue(include_str!(
        "../../../tests/fixtures/slurm/26.05/squeue_me.out"
    ))
    .unwrap();
    assert!(old.iter().all(|j| j.dependency.is_none()));
}

const ME_26: &str = include_str!("../../../tests/fixtures/slurm/26.05/squeue_me.out");

/// The second of two identical answers (an idle queue) is the first one's records again:
/// equal to a fresh read, none parsed or allocated anew.
#[test]
fn an_unchanged_answer_is_the_same_records_again() {
    let mut last = Reuse::default();
    let first = read_squeue_reusing(ME_26, &mut last, &|_| {});
    assert_eq!(last.reused, 0);
    let second = read_squeue_reusing(ME_26, &mut last, &|_| {});
    assert_eq!(second.items.len(), 21);
    assert_eq!(last.reused, 21);
    assert!(first
        .items
        .iter()
        .zip(&second.items)
        .all(|(a, b)| a.same(b)));
    assert_eq!(second, read_squeue(ME_26));
}

/// One record whose text changed (its time used moved on) is read anew; the others are
/// reused, in squeue's order.
#[test]
fn a_changed_record_is_read_anew_and_the_others_reused() {
    let mut last = Reuse::default();
    let first = read_squeue_reusing(ME_26, &mut last, &|_| {});
    let moved = ME_26.replacen("\u{1f}0:13\u{1f}", "\u{1f}0:43\u{1f}", 1);
    assert_ne!(moved, ME_26);
    let second = read_squeue_reusing(&moved, &mut last, &|_| {});
    assert_eq!(second, read_squeue(&moved));
    assert_eq!(last.reused, 20);
    let changed: Vec<usize> = (0..21)
        .filter(|&i| !first.items[i].same(&second.items[i]))
        .collect();
    assert_eq!(changed, [0]);
    assert_eq!(second.items[0].time_used.to_string(), "0:43");
    // A job that left and came back is read anew too: only the last answer is kept.
    let without: String = moved.split_inclusive('\u{1e}').skip(1).collect();
    read_squeue_reusing(&without, &mut last, &|_| {});
    let back = read_squeue_reusing(&moved, &mut last, &|_| {});
    assert_eq!(last.reused, 20);
    assert!(!back.items[0].same(&second.items[0]));
}

/// A record that did not read cleanly is read (and reported, with its line) every time.
#[test]
fn a_record_with_a_problem_is_never_reused() {
    let mut bad = FIXED_RUNNING.to_vec();
    bad[0] = "44";
    bad[11] = "lots";
    let out = format!("{}{}", running("42", "/d", "a"), framed(&bad, "/d", "b"));
    let mut last = Reuse::default();
    let first = read_squeue_reusing(&out, &mut last, &|_| {});
    let second = read_squeue_reusing(&out, &mut last, &|_| {});
    assert_eq!(last.reused, 1);
    assert_eq!(second.problems.len(), 1);
    assert_eq!(second.problems, first.problems);
    assert!(first.items[0].same(&second.items[0]));
    assert!(!first.items[1].same(&second.items[1]));
    assert!(second.items[1].problem.is_some());
}

/// The label (which cluster) is given once, to a record read anew; a reused record keeps it.
#[test]
fn a_reused_record_keeps_its_label() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = AtomicUsize::new(0);
    let label = |j: &mut JobRecord| {
        calls.fetch_add(1, Ordering::SeqCst);
        j.id.set_cluster(2);
    };
    let mut last = Reuse::default();
    read_squeue_reusing(ME_26, &mut last, &label);
    let again = read_squeue_reusing(ME_26, &mut last, &label);
    assert_eq!(calls.load(Ordering::SeqCst), 21);
    assert!(again.items.iter().all(|j| j.id.cluster() == 2));
}

/// The dashboard's own framed records (`ID␟…␟DIR␟ID␟NAME␟ID␞`) are reused the same way.
#[test]
fn framed_records_are_reused() {
    let out = format!(
        "{}{}",
        running("42", "/d", "a"),
        running("43", "/d", "name with \u{1f} in it")
    );
    let mut last = Reuse::default();
    let first = read_squeue_reusing(&out, &mut last, &|_| {});
    let second = read_squeue_reusing(&out, &mut last, &|_| {});
    assert_eq!(last.reused, 2);
    assert!(first
        .items
        .iter()
        .zip(&second.items)
        .all(|(a, b)| a.same(b)));
    assert_eq!(second.items[1].name, "name with \u{1f} in it");
}

/// A streamed answer fed in pieces of `size` bytes; the most it held at once.
fn streamed(out: &str, last: &mut Reuse, size: usize) -> (Parsed<Job>, usize) {
    let mut s = SqueueStream::new(last, &|_| {});
    let mut most = 0;
    for piece in out.as_bytes().chunks(size) {
        s.push(piece);
        most = most.max(s.held());
    }
    (s.finish(), most)
}

/// A large framed answer with odd records among the plain ones: separators, terminators and
/// newlines inside names, multi-byte text, a field that does not read, a record whose id does
/// not read, and a last record cut off.
fn large_answer() -> String {
    let mut out = String::new();
    for i in 0..4000u32 {
        let id = (1000 + i).to_string();
        let name = match i % 500 {
            7 => "sep \u{1f} in it".to_string(),
            11 => format!("term \u{1e}\n and \u{1f}{id} in it"),
            13 => "ünï ✓ 日本語 名前".repeat(3),
            _ => format!("train-{i}"),
        };
        if i % 997 == 5 {
            let mut bad = FIXED_RUNNING.to_vec();
            bad[0] = &id;
            bad[11] = "lots";
            out.push_str(&framed(&bad, "/d", &name));
        } else if i == 2222 {
            out.push_str("x99\u{1f}no id\u{1f}x99\u{1e}\n");
        } else {
            out.push_str(&running(&id, "/lustre/results/ü", &name));
        }
    }
    out.push_str(&running("9999", "/d", "cut")[..40]);
    out
}

/// Read as it arrives, in pieces of any size, an answer gives exactly the listing and the
/// problems (with their lines) it gives read whole, while holding only a bounded part of it.
#[test]
fn a_streamed_answer_reads_as_the_whole_one_and_is_never_held_whole() {
    let out = large_answer();
    assert!(out.len() > 2 * STREAM_STEP, "{}", out.len());
    let whole = read_squeue(&out);
    assert_eq!(whole.items.len(), 4000);
    assert_eq!(whole.problems.len(), 7, "{:?}", whole.problems);
    for size in [1, 7, 4096, 65536, out.len()] {
        let mut last = Reuse::default();
        let (got, most) = streamed(&out, &mut last, size);
        assert_eq!(got, whole, "pieces of {size} bytes");
        if size < out.len() {
            assert!(
                most < STREAM_STEP + size + 4096,
                "pieces of {size}: held {most} of {} bytes",
                out.len()
            );
        }
        // The next answer, the same, is the same records again.
        let (again, _) = streamed(&out, &mut last, size);
        assert_eq!(last.reused, 4000 - 6, "pieces of {size}");
        assert!(got.items[..5]
            .iter()
            .zip(&again.items)
            .all(|(a, b)| a.same(b)));
    }
}

/// The older unframed output of captured fixtures, streamed, reads as it does whole.
#[test]
fn a_streamed_unframed_answer_reads_as_the_whole_one() {
    let out = ME_26.repeat(400);
    assert!(out.len() > STREAM_STEP);
    let (got, _) = streamed(&out, &mut Reuse::default(), 8192);
    assert_eq!(got, read_squeue(&out));
    assert_eq!(got.items.len(), 21 * 400);
}

/// Once the worker labels records otherwise (a second cluster was added: records now carry
/// the cluster's name), those read before are read anew, and then reused with the new label.
#[test]
fn records_read_under_another_labelling_are_read_anew() {
    let mut last = Reuse::default();
    read_squeue_reusing(ME_26, &mut last, &|_| {});
    last.labelled(1);
    let name = |j: &mut JobRecord| j.cluster = "beta".into();
    let named = read_squeue_reusing(ME_26, &mut last, &name);
    assert_eq!(last.reused, 0);
    assert!(named.items.iter().all(|j| j.cluster == "beta"));
    last.labelled(1);
    let again = read_squeue_reusing(ME_26, &mut last, &name);
    assert_eq!(last.reused, 21);
    assert!(again.items.iter().all(|j| j.cluster == "beta"));
}
