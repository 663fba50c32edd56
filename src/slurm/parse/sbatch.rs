use crate::slurm::error::ParseError;
use crate::slurm::model::SubmitReply;

const CMD: &str = "sbatch";

/// sbatch's stdout: `Submitted batch job 123` (optionally `on cluster X`),
/// or with `--parsable` `123` / `123;cluster`.
pub fn parse_sbatch(out: &str) -> Result<SubmitReply, ParseError> {
    for (i, line) in out.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let bad = |what: &str| ParseError::new(CMD, i + 1, what, line);
        if let Some(rest) = l.strip_prefix("Submitted batch job ") {
            let (id, cluster) = match rest.split_once(" on cluster ") {
                Some((id, c)) => (id, Some(c.trim().to_string())),
                None => (rest, None),
            };
            let job_id = id
                .trim()
                .parse()
                .map_err(|_| bad("job id is not a number"))?;
            return Ok(SubmitReply { job_id, cluster });
        }
        let (id, cluster) = match l.split_once(';') {
            Some((id, c)) => (id, Some(c.to_string())),
            None => (l, None),
        };
        if let Ok(job_id) = id.parse() {
            return Ok(SubmitReply { job_id, cluster });
        }
        return Err(bad("not an sbatch reply"));
    }
    Err(ParseError::new(CMD, 0, "empty reply: no job id", ""))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn all_reply_forms() {
        assert_eq!(
            parse_sbatch("Submitted batch job 123\n").unwrap().job_id,
            123
        );
        let r = parse_sbatch("Submitted batch job 7 on cluster dev\n").unwrap();
        assert_eq!((r.job_id, r.cluster.as_deref()), (7, Some("dev")));
        assert_eq!(parse_sbatch("123\n").unwrap().job_id, 123);
        let r = parse_sbatch("123;dev\n").unwrap();
        assert_eq!(r.cluster.as_deref(), Some("dev"));
        assert!(parse_sbatch("").is_err());
        assert!(parse_sbatch("sbatch: error: Batch job submission failed\n").is_err());
    }
}
