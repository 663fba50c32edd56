//! Pure parsers: `&str -> Result<T, ParseError>`. A malformed line is an
//! error naming the line, never a silently dropped row.

mod fields;
pub(crate) mod frame;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod fuzz;
pub mod keyvalue;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props;
pub mod sacct;
pub mod sbatch;
pub mod scancel;
pub mod scontrol;
pub mod scontrol_op;
pub mod sinfo;
pub mod sprio;
pub mod squeue;
pub mod sshare;
mod work;

pub use sacct::{parse_sacct, read_sacct};
pub use sbatch::parse_sbatch;
pub use scancel::parse_scancel;
pub use scontrol::{parse_scontrol_jobs, parse_scontrol_partitions};
pub use scontrol_op::parse_scontrol_op;
pub use sinfo::parse_sinfo;
pub use sprio::parse_sprio;
pub use squeue::{parse_squeue, parse_squeue_start, read_squeue, read_squeue_start, Parsed};
pub use sshare::parse_sshare;

use chrono::NaiveDateTime;

use super::command::{FIELD_SEP, RECORD_END};
use super::error::{ParseError, ValueError};
use super::jobid::JobId;
use super::time::{parse_time, SlurmDuration};
use super::trim;
use fields::{split_on, Fields};

/// One record of a `RECORD_END`-terminated output, with the 1-based line
/// it starts on.
pub(crate) struct Record<'a> {
    pub line: usize,
    pub text: &'a str,
}

/// Splits output whose records end with `RECORD_END` + newline. Text after
/// the last terminator other than whitespace means a cut-off record.
pub(crate) fn terminated_records<'a>(
    command: &'static str,
    out: &'a str,
) -> Result<Vec<Record<'a>>, ParseError> {
    let mut recs = Vec::new();
    let mut line = 1;
    let mut rest = out;
    while let Some(end) = rest.find(RECORD_END) {
        let mut text = &rest[..end];
        if let Some(t) = text
            .strip_prefix("\r\n")
            .or_else(|| text.strip_prefix('\n'))
        {
            line += 1;
            text = t;
        }
        recs.push(Record { line, text });
        line += text.bytes().filter(|&b| b == b'\n').count();
        rest = &rest[end + RECORD_END.len_utf8()..];
    }
    if !rest.trim().is_empty() {
        let start = line + usize::from(rest.starts_with('\n'));
        return Err(ParseError::new(
            command,
            start,
            "record without terminator (output cut off, or format not applied)",
            rest.trim_start_matches(['\r', '\n']),
        ));
    }
    Ok(recs)
}

/// Plain newline-separated records, blank lines skipped.
pub(crate) fn lines(out: &str) -> impl Iterator<Item = Record<'_>> {
    out.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, text)| Record { line: i + 1, text })
}

/// Fields of one record, split with a bounded `splitn` so the last field
/// may contain the separator.
pub(crate) struct Row<'a> {
    pub command: &'static str,
    pub line: usize,
    pub text: &'a str,
    pub fields: Fields<'a>,
    /// Set by [`Row::lenient`] when the record had the wrong number of fields.
    pub error: Option<ParseError>,
}

impl<'a> Row<'a> {
    pub fn split(
        command: &'static str,
        rec: &Record<'a>,
        sep: char,
        n: usize,
        last_is_free: bool,
    ) -> Result<Row<'a>, ParseError> {
        let fields = split_on(rec.text, sep, n, last_is_free);
        if fields.len() != n {
            return Err(ParseError::new(
                command,
                rec.line,
                format!("expected {n} fields, found {}", fields.len()),
                rec.text,
            ));
        }
        Ok(Row {
            command,
            line: rec.line,
            text: rec.text,
            fields,
            error: None,
        })
    }

    /// Like `split` with the last field free, but a record with too few fields is still a
    /// row (the missing fields read as empty), with `error` saying so.
    pub fn lenient(command: &'static str, rec: &Record<'a>, sep: char, n: usize) -> Row<'a> {
        let fields = split_on(rec.text, sep, n, true);
        let error = (fields.len() != n).then(|| {
            ParseError::new(
                command,
                rec.line,
                format!("expected {n} fields, found {}", fields.len()),
                rec.text,
            )
        });
        Row {
            command,
            line: rec.line,
            text: rec.text,
            fields,
            error,
        }
    }

    pub fn split_fields(
        command: &'static str,
        rec: &Record<'a>,
        n: usize,
    ) -> Result<Row<'a>, ParseError> {
        Row::split(command, rec, FIELD_SEP, n, true)
    }

    pub fn err(&self, what: impl Into<String>) -> ParseError {
        ParseError::new(self.command, self.line, what, self.text)
    }

    fn wrap<T>(&self, name: &str, r: Result<T, ValueError>) -> Result<T, ParseError> {
        r.map_err(|e| self.err(format!("field {name}: {e}")))
    }

    pub fn str(&self, i: usize) -> &'a str {
        self.fields.get(i).copied().unwrap_or("")
    }

    pub fn string(&self, i: usize) -> String {
        self.str(i).to_string()
    }

    /// None for Slurm's "no value" words.
    pub fn opt(&self, i: usize) -> Option<String> {
        non_empty(self.str(i))
    }

    /// [`Row::opt`] without a copy: the field's text, trimmed, unless it is a "no value".
    pub fn opt_str(&self, i: usize) -> Option<&'a str> {
        let t = trim(self.str(i));
        (!is_no_value(t)).then_some(t)
    }

    pub fn job_id(&self, i: usize, name: &str) -> Result<JobId, ParseError> {
        self.wrap(name, trim(self.str(i)).parse::<JobId>())
    }

    pub fn time(&self, i: usize, name: &str) -> Result<Option<NaiveDateTime>, ParseError> {
        self.wrap(name, parse_time(self.str(i)))
    }

    pub fn duration(&self, i: usize, name: &str) -> Result<SlurmDuration, ParseError> {
        self.wrap(name, SlurmDuration::parse(self.str(i)))
    }

    pub fn num<T: std::str::FromStr>(&self, i: usize, name: &str) -> Result<T, ParseError> {
        let s = trim(self.str(i));
        s.parse::<T>()
            .map_err(|_| self.err(format!("field {name}: not a number: {s:?}")))
    }

    pub fn opt_num<T: std::str::FromStr>(
        &self,
        i: usize,
        name: &str,
    ) -> Result<Option<T>, ParseError> {
        if is_no_value(self.str(i)) {
            Ok(None)
        } else {
            self.num(i, name).map(Some)
        }
    }
}

pub(crate) fn non_empty(s: &str) -> Option<String> {
    let t = trim(s);
    (!is_no_value(t)).then(|| t.to_string())
}

/// One of Slurm's "no value" words (or blank), as `non_empty` sees them.
fn is_no_value(s: &str) -> bool {
    matches!(trim(s), "" | "N/A" | "(null)" | "None" | "n/a")
}
