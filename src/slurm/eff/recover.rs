//! What can be recovered of a job slurmdash did not launch, to launch it again: its batch
//! script (`scontrol write batch_script ID -` while slurmctld knows the job, `sacct -B`
//! where the cluster stores scripts) and, from a script `sbatch --wrap` wrote, its command.

use crate::slurm::jobid::JobId;

pub fn scontrol_batch_script(id: &JobId) -> Vec<String> {
    vec![
        "scontrol".into(),
        "write".into(),
        "batch_script".into(),
        id.as_str().to_string(),
        "-".into(),
    ]
}

pub fn sacct_batch_script(id: &JobId) -> Vec<String> {
    vec![
        "sacct".into(),
        "--batch-script".into(),
        format!("--jobs={}", id.as_str()),
    ]
}

/// The script in `sacct -B` output (`Batch Script for ID`, a rule, the script); None when
/// the cluster did not store it (`NONE`) or the output is not that.
pub fn parse_sacct_script(out: &str) -> Option<String> {
    let mut lines = out.lines();
    lines
        .next()?
        .starts_with("Batch Script for")
        .then_some(())?;
    lines.next()?.starts_with("---").then_some(())?;
    let body: Vec<&str> = lines.collect();
    let text = body.join("\n");
    let t = text.trim();
    (!t.is_empty() && t != "NONE").then(|| format!("{t}\n"))
}

/// The command of a script `sbatch --wrap` made; None for any other script.
pub fn wrapped_command(script: &str) -> Option<String> {
    let mut lines = script.lines();
    lines.next()?.starts_with("#!").then_some(())?;
    (lines.next()? == "# This script was created by sbatch --wrap.").then_some(())?;
    let rest: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    match rest.as_slice() {
        [one] => Some((*one).to_string()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wrap_scripts_give_their_command() {
        let s = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi; sleep 20\n";
        assert_eq!(wrapped_command(s).as_deref(), Some("echo hi; sleep 20"));
        assert_eq!(
            wrapped_command("#!/bin/bash\n#SBATCH -t 1\npython x.py\n"),
            None
        );
    }

    #[test]
    fn sacct_batch_script_output() {
        let none = "Batch Script for 2\n--------------------------------------------------------------------------------\nNONE\n\n";
        assert_eq!(parse_sacct_script(none), None);
        let some = "Batch Script for 2\n-----\n#!/bin/bash\npython x.py\n";
        assert_eq!(
            parse_sacct_script(some).as_deref(),
            Some("#!/bin/bash\npython x.py\n")
        );
        assert_eq!(parse_sacct_script("sacct: error"), None);
    }
}
