//! Large synthetic squeue outputs built from real rows, for benchmarks and
//! scale tests (a 20,000-job fixture would be megabytes if committed).

use super::command::{FIELD_SEP, RECORD_END};

/// `n` records cycling through the records of `real` (output of
/// `command::squeue`), with job ids renumbered from 1,000,000 so every row
/// is distinct. Array/het suffixes are kept.
pub fn squeue_rows(real: &str, n: usize) -> String {
    let records: Vec<&str> = real
        .split(RECORD_END)
        .map(|r| r.trim_start_matches(['\r', '\n']))
        .filter(|r| !r.is_empty())
        .collect();
    let mut out = String::with_capacity(n * real.len() / records.len().max(1) + 64);
    if records.is_empty() {
        return out;
    }
    for i in 0..n {
        let rec = records[i % records.len()];
        let id = 1_000_000 + i as u64;
        let (first, rest) = rec.split_once(FIELD_SEP).unwrap_or((rec, ""));
        let digits = first.bytes().take_while(u8::is_ascii_digit).count();
        let (second, rest) = rest.split_once(FIELD_SEP).unwrap_or((rest, ""));
        let second_is_id = second.bytes().all(|b| b.is_ascii_digit()) && !second.is_empty();
        out.push_str(&id.to_string());
        out.push_str(&first[digits..]);
        out.push(FIELD_SEP);
        if second_is_id {
            out.push_str(&id.to_string());
        } else {
            out.push_str(second);
        }
        out.push(FIELD_SEP);
        out.push_str(rest);
        out.push(RECORD_END);
        out.push('\n');
    }
    out
}
