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
        out.push_str(&id.to_string());
        out.push_str(&first[digits..]);
        out.push(FIELD_SEP);
        // The array's job id (`ArrayJobId`, `%F`) is renumbered too: third in the
        // `--Format` records (after `tres-alloc`), second in the older `-o` ones.
        let is_id = |f: &str| f.bytes().all(|b| b.is_ascii_digit()) && !f.is_empty();
        let (mut field, mut rest) = rest.split_once(FIELD_SEP).unwrap_or((rest, ""));
        if !is_id(field) {
            out.push_str(field);
            out.push(FIELD_SEP);
            (field, rest) = rest.split_once(FIELD_SEP).unwrap_or((rest, ""));
        }
        if is_id(field) {
            out.push_str(&id.to_string());
        } else {
            out.push_str(field);
        }
        out.push(FIELD_SEP);
        // A framed record (`command::SQUEUE_FIELDS`) repeats the id before the name and
        // after it.
        let new_id = format!("{id}{}", &first[digits..]);
        let closing = format!("{FIELD_SEP}{first}");
        match rest.strip_suffix(closing.as_str()) {
            Some(body) => {
                let mid = format!("{FIELD_SEP}{first}{FIELD_SEP}");
                let body = match body.rfind(mid.as_str()) {
                    Some(i) => format!(
                        "{}{FIELD_SEP}{new_id}{FIELD_SEP}{}",
                        &body[..i],
                        &body[i + mid.len()..]
                    ),
                    None => body.to_string(),
                };
                out.push_str(&body);
                out.push(FIELD_SEP);
                out.push_str(&new_id);
            }
            None => out.push_str(rest),
        }
        out.push(RECORD_END);
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::slurm::parse::read_squeue;

    #[test]
    fn framed_records_stay_framed_with_new_ids() {
        let mut f = vec![
            "7_2", "cpu=1", "7", "2", "u", "a", "p", "PENDING", "None", "0:00", "1:00",
        ];
        f.extend([
            "1", "1", "1G", "N/A", "", "N/A", "N/A", "normal", "1", "(null)", "/d",
        ]);
        f.extend(["7_2", "n\x1fm", "7_2"]);
        let real = format!("{}\x1e\n", f.join("\x1f"));
        let p = read_squeue(&squeue_rows(&real, 3));
        assert!(p.problems.is_empty(), "{:?}", p.problems);
        let ids: Vec<&str> = p.items.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["1000000_2", "1000001_2", "1000002_2"]);
        assert_eq!(p.items[1].array_job_id, Some(1_000_001));
        assert!(p.items.iter().all(|j| j.name == "n\x1fm"));
    }
}
