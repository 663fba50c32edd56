//! scontrol's multi-line `Key=Value` blocks. Values may contain spaces
//! (job names, reasons, paths), so a few keys are read to the end of their
//! line and `Reason` runs up to `Dependency=`.

use super::work::scanned;

/// Keys that scontrol prints alone on their line (or last on it), whose
/// values are taken verbatim to the end of the line.
const REST_OF_LINE: &[&str] = &[
    "JobName",
    "Command",
    "WorkDir",
    "StdErr",
    "StdIn",
    "StdOut",
    "Comment",
    "AdminComment",
    "SystemComment",
    "Power",
    "SubmitLine",
];

fn is_key(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_:/-".contains(c))
}

/// One block (record) as ordered key/value pairs.
pub fn parse_block(block: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, raw_line) in block.lines().enumerate() {
        let indented = raw_line.starts_with(char::is_whitespace);
        let line = raw_line.trim();
        if line.is_empty() {
            continue;
        }
        // A record's first line is not indented; any later unindented line
        // is the continuation of a value that held a newline.
        if i > 0 && !indented {
            if let Some(last) = out.last_mut() {
                last.1.push('\n');
                last.1.push_str(raw_line);
                continue;
            }
        }
        parse_line(line, &mut out);
    }
    out
}

fn parse_line(line: &str, out: &mut Vec<(String, String)>) {
    // Where `Reason` ends, if anywhere: looked for once, not once per `Reason=`.
    let dependency = line.rfind(" Dependency=");
    scanned(line.len());
    let mut rest = line;
    loop {
        let Some((key, after)) = rest.split_once('=') else {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(rest);
            }
            return;
        };
        if REST_OF_LINE.contains(&key) {
            out.push((key.to_string(), after.to_string()));
            return;
        }
        // `after` is the end of `line`.
        let after_at = line.len() - after.len();
        if key == "Reason" {
            if let Some(at) = dependency.and_then(|d| d.checked_sub(after_at)) {
                out.push((key.to_string(), after[..at].to_string()));
                rest = &after[at + 1..];
                continue;
            }
        }
        // The value runs to the next ` Key=` token (or a JobName=, which
        // always runs to the end of the line). Each word after a space is
        // looked at up to its end only.
        let mut end = after.len();
        let mut search = 0;
        while let Some(sp) = after[search..].find(' ') {
            scanned(sp + 1);
            let at = search + sp;
            let tail = &after[at + 1..];
            let next_key = tail.split(['=', ' ']).next().unwrap_or("");
            scanned(next_key.len() + 1);
            if tail.len() > next_key.len()
                && tail.as_bytes()[next_key.len()] == b'='
                && is_key(next_key)
            {
                end = at;
                break;
            }
            search = at + 1;
        }
        out.push((key.to_string(), after[..end].to_string()));
        if end >= after.len() {
            return;
        }
        rest = &after[end + 1..];
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn get<'a>(kv: &'a [(String, String)], k: &str) -> &'a str {
        kv.iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.as_str())
            .unwrap()
    }

    #[test]
    fn values_with_spaces() {
        let b = "JobId=5 JobName=my job  Foo=bar\n   JobState=PENDING Reason=launch failed requeued held Dependency=(null)\n   Requeue=1 Restarts=0\n   WorkDir=/tmp/a b\n";
        let kv = parse_block(b);
        assert_eq!(get(&kv, "JobName"), "my job  Foo=bar");
        assert_eq!(get(&kv, "Reason"), "launch failed requeued held");
        assert_eq!(get(&kv, "Dependency"), "(null)");
        assert_eq!(get(&kv, "Restarts"), "0");
        assert_eq!(get(&kv, "WorkDir"), "/tmp/a b");
    }

    #[test]
    fn underscored_reason_from_real_scontrol() {
        // Captured from 22.05: squeue %r prints this reason with spaces,
        // scontrol with underscores.
        let b = "JobId=71 JobName=gpu-two\n   JobState=PENDING Reason=Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions Dependency=(null)\n";
        let kv = parse_block(b);
        assert_eq!(
            get(&kv, "Reason"),
            "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions"
        );
    }

    /// A long value of many words and no `Key=` after them is read looking at each byte a
    /// few times, not once for each space before it.
    #[test]
    fn a_long_value_of_many_words_is_read_in_one_pass() {
        let words = "a ".repeat(20_000);
        let b = format!("JobId=5 Foo={words}\n   Bar=1 Baz={words}x=y\n");
        let (kv, work) = super::super::work::scanned_by(|| parse_block(&b));
        assert!(get(&kv, "Foo") == words.trim_end());
        assert_eq!(get(&kv, "Bar"), "1");
        assert!(get(&kv, "Baz") == words.trim_end());
        assert_eq!(get(&kv, "x"), "y");
        assert!(
            work <= 4 * b.len(),
            "{work} bytes looked at for {}",
            b.len()
        );
    }

    #[test]
    fn complex_keys() {
        let kv = parse_block(
            "X=1\n   AllocNode:Sid=h:12 ReqB:S:C:T=0:0:*:* Socks/Node=* TRES=cpu=1,mem=1G\n",
        );
        assert_eq!(get(&kv, "AllocNode:Sid"), "h:12");
        assert_eq!(get(&kv, "Socks/Node"), "*");
        assert_eq!(get(&kv, "TRES"), "cpu=1,mem=1G");
    }
}
