//! `status.json` in a job's results dir: the program's own word on how it ended (the TAO
//! convention). Either one JSON object or JSON lines, one status record per line (TAO's
//! status logger appends `{"date": .., "status": "STARTED", "message": ..}` records and ends
//! with `SUCCESS` or `FAILURE`); the last record with a `status` field counts.

/// What the last status record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    Success,
    Failure,
    /// A status that is not final (`STARTED`, `RUNNING`, ...): the program stopped
    /// reporting before it finished.
    NotFinal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusFile {
    pub reported: Reported,
    /// The status word as written.
    pub status: String,
    /// The record's `message` (or `error`), if any.
    pub message: Option<String>,
}

const SUCCESS: &[&str] = &[
    "success",
    "succeeded",
    "complete",
    "completed",
    "done",
    "ok",
    "finished",
];
const FAILURE: &[&str] = &[
    "failure",
    "failed",
    "fail",
    "error",
    "errored",
    "canceled",
    "cancelled",
    "killed",
];

/// Parses status.json text. Err says why it could not be read as status records.
/// What of a status.json read from byte `offset` on (its last 64 KiB) can hold whole
/// records: all of it when read from the start; else what follows the first line break,
/// as the first line may be the end of a record, and such an end can itself be valid JSON
/// (a nested object such as `{"loss":0.25,"status":"FAILURE"}` that is not the record's).
pub fn from_tail(text: &str, offset: u64) -> &str {
    if offset == 0 {
        return text;
    }
    match text.find('\n') {
        Some(i) => &text[i + 1..],
        None => "",
    }
}

pub fn parse_status_json(text: &str) -> Result<StatusFile, String> {
    let text = text.trim_start_matches('\u{feff}').trim();
    if text.is_empty() {
        return Err("status.json is empty".into());
    }
    let records: Vec<serde_json::Value> = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(a)) => a,
        Ok(v) => vec![v],
        // JSON lines. A line that does not parse is left out: the first may be the end of
        // a record (the file is read from its last 64 KiB), the last one half written.
        Err(whole) => {
            let v: Vec<serde_json::Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if v.is_empty() {
                return Err(format!("status.json is not JSON: {whole}"));
            }
            v
        }
    };
    let last = records
        .iter()
        .rev()
        .find_map(|r| {
            let status = r.get("status")?.as_str()?.trim().to_string();
            Some((status, r))
        })
        .ok_or_else(|| "status.json has no \"status\" field".to_string())?;
    let (status, record) = last;
    let word = status.to_ascii_lowercase();
    let reported = if SUCCESS.contains(&word.as_str()) {
        Reported::Success
    } else if FAILURE.contains(&word.as_str()) {
        Reported::Failure
    } else {
        Reported::NotFinal
    };
    let message = ["message", "error", "detail"]
        .iter()
        .find_map(|k| record.get(*k).and_then(|m| m.as_str()))
        .map(|m| m.trim().chars().take(200).collect::<String>())
        .filter(|m| !m.is_empty());
    Ok(StatusFile {
        reported,
        status,
        message,
    })
}
