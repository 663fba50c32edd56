use super::{lines, non_empty, Row};
use crate::slurm::command::SSHARE_FIELDS;
use crate::slurm::error::ParseError;
use crate::slurm::model::SshareRow;

const CMD: &str = "sshare";

/// Output of `command::sshare` (`--parsable2`: `|` between fields; account
/// and user names cannot contain `|`).
pub fn parse_sshare(out: &str) -> Result<Vec<SshareRow>, ParseError> {
    let mut rows = Vec::new();
    for rec in lines(out) {
        let r = Row::split(CMD, &rec, '|', SSHARE_FIELDS.len(), false)?;
        let float = |i: usize, name: &str| -> Result<Option<f64>, ParseError> {
            match non_empty(r.str(i)) {
                None => Ok(None),
                Some(s) if s == "inf" || s == "parent" => Ok(None),
                Some(_) => r.num(i, name).map(Some),
            }
        };
        let int = |i: usize, name: &str| -> Result<Option<u64>, ParseError> {
            match non_empty(r.str(i)) {
                None => Ok(None),
                Some(s) if s == "parent" => Ok(None),
                Some(_) => r.num(i, name).map(Some),
            }
        };
        rows.push(SshareRow {
            account: r.str(0).trim().to_string(),
            user: non_empty(r.str(1)),
            raw_shares: int(2, "RawShares")?,
            norm_shares: float(3, "NormShares")?,
            raw_usage: int(4, "RawUsage")?,
            effective_usage: float(5, "EffectvUsage")?,
            fairshare: float(6, "FairShare")?,
        });
    }
    Ok(rows)
}
