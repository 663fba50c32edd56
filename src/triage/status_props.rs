//! Properties of the status.json parser: whatever bytes a job leaves in its status.json
//! (read as the last 64 KiB, decoded lossily), it never panics and an error says what was
//! wrong; records a program writes come back as written, also from a file cut at the front
//! by the tail read (whose first line is dropped) or torn at the end while still being
//! written.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::{parse_status_json, Reported};

/// Status words with the class a user expects of them, in any letter case.
fn word() -> impl Strategy<Value = (String, Reported)> {
    let known = prop::sample::select(vec![
        ("SUCCESS", Reported::Success),
        ("Succeeded", Reported::Success),
        ("COMPLETED", Reported::Success),
        ("complete", Reported::Success),
        ("Done", Reported::Success),
        ("ok", Reported::Success),
        ("FINISHED", Reported::Success),
        ("FAILURE", Reported::Failure),
        ("failed", Reported::Failure),
        ("Error", Reported::Failure),
        ("CANCELLED", Reported::Failure),
        ("canceled", Reported::Failure),
        ("KILLED", Reported::Failure),
        ("STARTED", Reported::NotFinal),
        ("RUNNING", Reported::NotFinal),
        ("", Reported::NotFinal),
    ]);
    let cased = (known, any::<u64>()).prop_map(|((w, r), bits)| {
        let w: String = w
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if bits >> (i % 64) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        (w, r)
    });
    // Free text (a progress note, unicode, quotes, control characters) is not final.
    let free = "epoch [0-9]{1,3}[\\PC\"\\\\\n\t\u{1}]{0,20}".prop_map(|w| (w, Reported::NotFinal));
    (prop_oneof![cased, free], "[ \t\n]{0,2}", "[ \t\n]{0,2}")
        .prop_map(|((w, r), a, b)| (format!("{a}{w}{b}"), r))
}

/// Text for a message: quotes, backslashes, newlines, control characters, unicode.
fn text() -> impl Strategy<Value = String> {
    "[\\PC\"\\\\\n\r\t\u{0}\u{1b}\u{7f}é名前 ]{0,60}"
}

#[derive(Debug, Clone)]
struct Rec {
    /// `status` as a string, as something else (a number), or absent.
    status: Option<Result<(String, Reported), i64>>,
    /// The key of the message (`message`, `error`, `detail`) and its text.
    message: Option<(&'static str, String)>,
}

impl Rec {
    fn json(&self) -> Value {
        let mut m = Map::new();
        m.insert("date".into(), json!("11/20/2026"));
        m.insert("verbosity".into(), json!("INFO"));
        // A nested status is not the record's.
        m.insert("kpi".into(), json!({"loss": 0.25, "status": "FAILURE"}));
        match &self.status {
            Some(Ok((w, _))) => {
                m.insert("status".into(), json!(w));
            }
            Some(Err(n)) => {
                m.insert("status".into(), json!(n));
            }
            None => {}
        }
        if let Some((k, t)) = &self.message {
            m.insert((*k).into(), json!(t));
        }
        Value::Object(m)
    }
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        prop_oneof![
            6 => word().prop_map(|w| Some(Ok(w))),
            1 => any::<i64>().prop_map(|n| Some(Err(n))),
            1 => Just(None),
        ],
        prop::option::of((
            prop::sample::select(vec!["message", "error", "detail"]),
            text(),
        )),
    )
        .prop_map(|(status, message)| Rec { status, message })
}

/// What a user should see for these records: the last string status, its class, and its
/// message trimmed and cut to 200 characters. None: no record has one.
fn expected(recs: &[Rec]) -> Option<(String, Reported, Option<String>)> {
    recs.iter().rev().find_map(|r| match &r.status {
        Some(Ok((w, class))) => {
            let m = r
                .message
                .as_ref()
                .map(|(_, t)| t.trim().chars().take(200).collect::<String>())
                .filter(|t| !t.is_empty());
            Some((w.trim().to_string(), class.clone(), m))
        }
        _ => None,
    })
}

/// How the records are laid out in the file.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// One object (the last record only), compact or pretty.
    Object {
        pretty: bool,
    },
    Array {
        pretty: bool,
    },
    /// One record a line (TAO's status logger), `\n` or `\r\n`.
    Lines {
        crlf: bool,
    },
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        any::<bool>().prop_map(|pretty| Layout::Object { pretty }),
        any::<bool>().prop_map(|pretty| Layout::Array { pretty }),
        any::<bool>().prop_map(|crlf| Layout::Lines { crlf }),
    ]
}

fn write(recs: &[Rec], l: Layout) -> String {
    let ser = |v: &Value, pretty: bool| {
        if pretty {
            serde_json::to_string_pretty(v)
        } else {
            serde_json::to_string(v)
        }
        .unwrap_or_default()
    };
    match l {
        Layout::Object { pretty } => recs
            .last()
            .map(|r| ser(&r.json(), pretty))
            .unwrap_or_default(),
        Layout::Array { pretty } => {
            ser(&Value::Array(recs.iter().map(Rec::json).collect()), pretty)
        }
        Layout::Lines { crlf } => recs
            .iter()
            .map(|r| ser(&r.json(), false) + if crlf { "\r\n" } else { "\n" })
            .collect(),
    }
}

/// An error a user can act on: it names the file and says what is wrong with it.
fn check_error(e: &str) -> Result<(), TestCaseError> {
    prop_assert!(e.starts_with("status.json "), "{e:?}");
    prop_assert!(e.len() > "status.json ".len(), "{e:?}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_bytes_give_a_status_or_an_error_naming_the_file(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        match parse_status_json(&String::from_utf8_lossy(&bytes)) {
            Ok(s) => {
                prop_assert_eq!(s.status.trim(), s.status.as_str());
                if let Some(m) = &s.message {
                    prop_assert!(m.chars().count() <= 200 && !m.trim().is_empty());
                }
            }
            Err(e) => check_error(&e)?,
        }
    }

    /// JSON punctuation and status-like words in any order, nested as deep as it goes.
    #[test]
    fn json_soup_gives_a_status_or_an_error_naming_the_file(
        s in "([\\[\\]{}:,\" \n\r0-9]|\"status\"|\"SUCCESS\"|\\\\u00|null|NaN){0,300}",
    ) {
        if let Err(e) = parse_status_json(&s) {
            check_error(&e)?;
        }
    }

    #[test]
    fn records_as_written_come_back(
        recs in prop::collection::vec(rec(), 1..6),
        l in layout(),
        bom in any::<bool>(),
    ) {
        let mut text = write(&recs, l);
        if bom {
            text.insert(0, '\u{feff}');
        }
        let recs = match l {
            Layout::Object { .. } => &recs[recs.len() - 1..],
            _ => &recs[..],
        };
        match (parse_status_json(&text), expected(recs)) {
            (Ok(s), Some((status, reported, message))) => {
                prop_assert_eq!(s.status, status, "{}", text);
                prop_assert_eq!(s.reported, reported, "{}", text);
                prop_assert_eq!(s.message, message, "{}", text);
            }
            (Err(e), None) => prop_assert!(e.contains("\"status\""), "{e}"),
            (got, want) => {
                return Err(TestCaseError::fail(format!("{text:?}: got {got:?}, want {want:?}")))
            }
        }
    }

    /// TAO's status.json grows a line per epoch and is read as its last 64 KiB, so the
    /// first line read may be the end of a record; the last may be half written. Every
    /// whole record left decides as it would in the whole file.
    #[test]
    fn a_tail_read_or_a_torn_last_line_keeps_the_whole_records(
        recs in prop::collection::vec(rec(), 1..8),
        crlf in any::<bool>(),
        from in any::<prop::sample::Index>(),
        to in any::<prop::sample::Index>(),
    ) {
        let eol = if crlf { "\r\n" } else { "\n" };
        let lines: Vec<String> = recs
            .iter()
            .map(|r| serde_json::to_string(&r.json()).unwrap_or_default())
            .collect();
        let text: String = lines.iter().map(|l| format!("{l}{eol}")).collect();
        let bytes = text.as_bytes();
        let a = from.index(bytes.len() + 1);
        let b = a + to.index(bytes.len() - a + 1);
        let read = String::from_utf8_lossy(&bytes[a..b]);
        // As the triage reads it: a read from past the start drops its first line.
        let kept = super::status::from_tail(&read, a as u64);
        // The records whose line lies wholly inside [a, b), and not first in a read that
        // starts past the file's start (the reader cannot tell that line is whole).
        let mut start = 0;
        let mut whole = Vec::new();
        for (r, l) in recs.iter().zip(&lines) {
            if start >= a && (a == 0 || start > a) && start + l.len() <= b {
                whole.push(r.clone());
            }
            start += l.len() + eol.len();
        }
        match (parse_status_json(kept), expected(&whole)) {
            (Ok(s), Some((status, reported, message))) => {
                prop_assert_eq!(s.status, status, "{:?}", kept);
                prop_assert_eq!(s.reported, reported);
                prop_assert_eq!(s.message, message);
            }
            (Err(e), None) => check_error(&e)?,
            (got, want) => {
                return Err(TestCaseError::fail(format!("{kept:?}: got {got:?}, want {want:?}")))
            }
        }
    }
}

/// A tail read that starts inside a record and stops right after its nested object reads
/// that object alone, which is valid JSON with a "status": it must not decide the job.
#[test]
fn a_nested_object_cut_out_by_the_tail_read_is_not_a_record() {
    let record = r#"{"date":"11/20/2026","kpi":{"loss":0.25,"status":"FAILURE"},"status":"done"}"#;
    let file = format!("{record}\r\n{record}\r\n");
    let at = file.rfind(r#"{"loss""#).unwrap_or(0);
    let end = at + r#"{"loss":0.25,"status":"FAILURE"}"#.len();
    let kept = super::status::from_tail(&file[at..end], at as u64);
    assert!(
        parse_status_json(kept).is_err(),
        "{kept:?} read as a status"
    );
    // From the start, the whole records decide: the last says done.
    let whole = parse_status_json(super::status::from_tail(&file, 0)).map(|s| s.status);
    assert_eq!(whole.as_deref(), Ok("done"));
}
