//! Records holding every control byte in every field: the squeue and sacct parsers never
//! panic, and a record whose Slurm-written fields are clean comes back whole whatever its
//! free text (name, work dir) holds and whatever its neighbours hold.

use proptest::prelude::*;

use crate::slurm::command::{SACCT_FIELDS, SQUEUE_FIELDS, SQUEUE_START_FIELDS};
use crate::slurm::parse::{read_sacct, read_squeue, read_squeue_start};

/// Every control byte, and a few ordinary characters to put between them.
fn odd_char() -> impl Strategy<Value = char> {
    prop_oneof![
        (0u8..0x20).prop_map(char::from),
        Just('\x7f'),
        Just('a'),
        Just('/'),
        Just('7'),
        Just(' '),
        Just('é'),
    ]
}

fn odd_text() -> impl Strategy<Value = String> {
    prop::collection::vec(odd_char(), 0..12).prop_map(|v| v.into_iter().collect())
}

/// A real `tres-alloc`, the squeue field after the id.
const TRES: &str = "cpu=2,mem=1G,node=1,billing=2,gres/gpu=2";

/// Real values of the fixed squeue fields (after the id, `tres-alloc` and the array's id).
const SQUEUE_FIXED: &[&str] = &[
    "N/A",
    "sduser",
    "research",
    "short",
    "PENDING",
    "Priority",
    "0:00",
    "30:00",
    "1",
    "2",
    "1G",
    "gres:gpu:2",
    "",
    "2026-11-23T08:12:44",
    "N/A",
    "normal",
    "4294901758",
    "afterok:7(unfulfilled)",
];

#[derive(Debug, Clone)]
struct Rec {
    id: String,
    /// Which field got a control byte (None: a clean record).
    spoiled: Option<(usize, usize, char)>,
    dir: String,
    name: String,
}

fn rec(i: usize) -> impl Strategy<Value = Rec> {
    (
        prop::option::weighted(0.3, (0usize..32, 0usize..8, odd_char())),
        odd_text(),
        odd_text(),
    )
        .prop_map(move |(spoiled, dir, name)| Rec {
            id: (1000 + i).to_string(),
            spoiled,
            dir,
            name,
        })
}

fn recs() -> impl Strategy<Value = Vec<Rec>> {
    (1usize..8).prop_flat_map(|n| (0..n).map(rec).collect::<Vec<_>>())
}

/// `fields` with a control byte put into the one `spoiled` names.
fn spoil(mut fields: Vec<String>, spoiled: Option<(usize, usize, char)>) -> Vec<String> {
    if let Some((f, at, c)) = spoiled {
        let f = f % fields.len();
        let s = &mut fields[f];
        let at = s
            .char_indices()
            .map(|(i, _)| i)
            .chain([s.len()])
            .nth(at % (s.chars().count() + 1))
            .unwrap_or(s.len());
        s.insert(at, c);
    }
    fields
}

fn squeue_text(rs: &[Rec]) -> String {
    let mut out = String::new();
    for r in rs {
        // The id is one field printed four times: spoiling it spoils every copy.
        let mut fixed: Vec<String> = [r.id.clone(), TRES.to_string(), r.id.clone()]
            .into_iter()
            .chain(SQUEUE_FIXED.iter().map(|s| s.to_string()))
            .collect();
        let fixed_n = fixed.len();
        fixed.push(r.dir.clone());
        fixed.push(r.name.clone());
        let f = spoil(fixed, r.spoiled);
        let id = &f[0];
        let mut all: Vec<&str> = f[..fixed_n].iter().map(String::as_str).collect();
        all.extend([f[fixed_n].as_str(), id, f[fixed_n + 1].as_str(), id]);
        assert_eq!(all.len(), SQUEUE_FIELDS.len());
        out.push_str(&all.join("\x1f"));
        out.push_str("\x1e\n");
    }
    out
}

/// A record whose control byte (if any) went into its name or work dir.
fn clean(r: &Rec, fixed_n: usize) -> bool {
    match r.spoiled {
        None => true,
        Some((f, _, _)) => f % (fixed_n + 2) >= fixed_n,
    }
}

fn expected(r: &Rec, fixed_n: usize) -> (String, String) {
    let f = spoil(vec![String::new(); fixed_n], None);
    drop(f);
    let mut free = spoil(
        vec![String::new(); fixed_n]
            .into_iter()
            .chain([r.dir.clone(), r.name.clone()])
            .collect(),
        r.spoiled,
    );
    let name = free.pop().unwrap_or_default();
    let dir = free.pop().unwrap_or_default();
    (dir, name)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn squeue_keeps_every_clean_record(rs in recs()) {
        let out = squeue_text(&rs);
        let p = read_squeue(&out);
        let fixed_n = SQUEUE_FIXED.len() + 3;
        for r in rs.iter().filter(|r| clean(r, fixed_n)) {
            let (dir, name) = expected(r, fixed_n);
            let got: Vec<_> = p.items.iter().filter(|j| j.id.as_str() == r.id).collect();
            prop_assert_eq!(got.len(), 1, "{:?} in {:?}", r, out);
            prop_assert_eq!(&got[0].name, &name);
            prop_assert_eq!(&*got[0].work_dir, dir.as_str());
            prop_assert_eq!(&got[0].problem, &None);
        }
        let _ = read_squeue_start(&out);
        let _ = read_sacct(&out);
    }

    #[test]
    fn sacct_keeps_every_clean_record(rs in recs()) {
        let fixed_n = SACCT_FIELDS.len() - 4;
        let mut out = String::new();
        for r in &rs {
            let mut f: Vec<String> = vec![String::new(); fixed_n];
            f[0] = r.id.clone();
            f[1] = r.id.clone();
            f[2] = "sduser".into();
            f[7] = "COMPLETED".into();
            f[9] = "0:0".into();
            f[11] = "2026-11-23T08:12:44".into();
            f[15] = "00:01:00".into();
            f.extend([r.dir.clone(), r.name.clone()]);
            let f = spoil(f, r.spoiled);
            let id = &f[0];
            let mut all: Vec<&str> = f[..fixed_n].iter().map(String::as_str).collect();
            all.extend([f[fixed_n].as_str(), id, f[fixed_n + 1].as_str(), id]);
            out.push_str(&all.join("\x1f"));
            out.push('\n');
        }
        let p = read_sacct(&out);
        for r in rs.iter().filter(|r| clean(r, fixed_n)) {
            let (dir, name) = expected(r, fixed_n);
            let got: Vec<_> = p
                .items
                .iter()
                .filter(|d| d.id.as_ref().map(|i| i.as_str()) == Some(r.id.as_str()))
                .collect();
            prop_assert_eq!(got.len(), 1, "{:?} in {:?}", r, out);
            prop_assert_eq!(&got[0].name, &name);
            prop_assert_eq!(got[0].work_dir.clone().unwrap_or_default(), dir.trim().to_string());
        }
        let _ = read_squeue(&out);
    }

    #[test]
    fn squeue_start_keeps_every_clean_record(rs in recs()) {
        let fixed_n = SQUEUE_START_FIELDS.len() - 2;
        let mut out = String::new();
        for r in &rs {
            let mut f: Vec<String> = [r.id.as_str(), "short", "sduser", "PENDING",
                "2026-11-23T09:00:00", "1", "(null)", "Priority"]
                .iter().map(|s| s.to_string()).collect();
            f.push(String::new());
            f.push(r.name.clone());
            let f = spoil(f, r.spoiled);
            let id = &f[0];
            let mut all: Vec<&str> = f[..fixed_n].iter().map(String::as_str).collect();
            all.extend([f[fixed_n + 1].as_str(), id]);
            out.push_str(&all.join("\x1f"));
            out.push_str("\x1e\n");
        }
        let p = read_squeue_start(&out);
        for r in rs.iter().filter(|r| clean(r, fixed_n)) {
            let (_, name) = expected(r, fixed_n);
            let got: Vec<_> = p.items.iter().filter(|s| s.id.as_str() == r.id).collect();
            prop_assert_eq!(got.len(), 1, "{:?} in {:?}", r, out);
            prop_assert_eq!(&got[0].name, &name);
        }
    }
}
