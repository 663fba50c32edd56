//! What can be recovered of a job slurmdash did not launch, to launch it again: its batch
//! script (`scontrol write batch_script ID -` while slurmctld knows the job, `sacct -B`
//! where the cluster stores scripts) and, from a script `sbatch --wrap` wrote, its command;
//! from any other script, its `#SBATCH` directives.

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

/// One `#SBATCH` option as the script wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The long option name without dashes (`-t` is `time`).
    pub key: String,
    pub value: Option<String>,
    /// As written (`-t 5`, `--mem=200M`), for messages.
    pub text: String,
}

/// Short options sbatch scripts use, as their long names.
const SHORT: &[(char, &str)] = &[
    ('A', "account"),
    ('a', "array"),
    ('C', "constraint"),
    ('c', "cpus-per-task"),
    ('D', "chdir"),
    ('d', "dependency"),
    ('e', "error"),
    ('G', "gpus"),
    ('i', "input"),
    ('J', "job-name"),
    ('L', "licenses"),
    ('M', "clusters"),
    ('N', "nodes"),
    ('n', "ntasks"),
    ('o', "output"),
    ('p', "partition"),
    ('q', "qos"),
    ('t', "time"),
    ('w', "nodelist"),
    ('x', "exclude"),
];

/// Long options that take no value.
const FLAGS: &[&str] = &[
    "exclusive",
    "requeue",
    "no-requeue",
    "hold",
    "overcommit",
    "oversubscribe",
    "contiguous",
    "wait",
    "parsable",
    "test-only",
    "no-kill",
    "spread-job",
    "use-min-nodes",
    "ignore-pbs",
    "verbose",
    "quiet",
];

/// The `#SBATCH` options of a batch script, in order, as sbatch reads them: lines starting
/// with `#SBATCH` before the first line that is neither blank nor a comment; a `#` after
/// the options ends them. A token that is not an option is skipped.
pub fn sbatch_directives(script: &str) -> Vec<Directive> {
    let mut out = Vec::new();
    for (n, line) in script.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        let t = line.trim_start();
        if n == 0 && t.starts_with("#!") {
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('#') {
            break;
        }
        let Some(rest) = t.strip_prefix("#SBATCH") else {
            continue;
        };
        if !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let rest = rest.split(" #").next().unwrap_or("");
        let tokens = shlex::split(rest)
            .unwrap_or_else(|| rest.split_whitespace().map(str::to_string).collect());
        let mut i = 0;
        while i < tokens.len() {
            let tok = &tokens[i];
            i += 1;
            let next_value = |i: &mut usize| {
                let v = tokens.get(*i).filter(|v| !v.starts_with('-')).cloned();
                if v.is_some() {
                    *i += 1;
                }
                v
            };
            if let Some(long) = tok.strip_prefix("--") {
                let (key, value) = match long.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None if FLAGS.contains(&long) => (long.to_string(), None),
                    None => (long.to_string(), next_value(&mut i)),
                };
                let text = match &value {
                    Some(v) if tok.contains('=') => format!("--{key}={v}"),
                    Some(v) => format!("--{key} {v}"),
                    None => format!("--{key}"),
                };
                out.push(Directive { key, value, text });
            } else if let Some(short) = tok.strip_prefix('-') {
                let mut chars = short.chars();
                let Some(c) = chars.next() else { continue };
                let Some((_, key)) = SHORT.iter().find(|(s, _)| *s == c) else {
                    out.push(Directive {
                        key: c.to_string(),
                        value: None,
                        text: tok.clone(),
                    });
                    continue;
                };
                let attached = chars.as_str().trim_start_matches('=');
                let value = if attached.is_empty() {
                    next_value(&mut i)
                } else {
                    Some(attached.to_string())
                };
                let text = match &value {
                    Some(v) if attached.is_empty() => format!("-{c} {v}"),
                    _ => tok.clone(),
                };
                out.push(Directive {
                    key: (*key).to_string(),
                    value,
                    text,
                });
            }
        }
    }
    out
}

/// The number of lines of a script, as the form shows it.
pub fn script_lines(script: &str) -> usize {
    script.lines().count()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Each directive's key and value.
    fn keys(d: &[Directive]) -> Vec<(&str, Option<&str>)> {
        d.iter()
            .map(|d| (d.key.as_str(), d.value.as_deref()))
            .collect()
    }

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
    fn directives_of_real_batch_scripts() {
        for (v, text) in [
            (
                "22.05",
                include_str!("../../../tests/fixtures/slurm/22.05/batch_script_multiline.out"),
            ),
            (
                "26.05",
                include_str!("../../../tests/fixtures/slurm/26.05/batch_script_multiline.out"),
            ),
        ] {
            let d = sbatch_directives(text);
            assert_eq!(
                keys(&d),
                [
                    ("job-name", Some("train-small")),
                    ("partition", Some("short")),
                    ("cpus-per-task", Some("2")),
                    ("mem", Some("200M")),
                    ("time", Some("00:03:00")),
                    ("output", Some("/tmp/train-%j.out")),
                    ("mail-type", Some("END,FAIL")),
                    ("qos", Some("normal")),
                    ("ntasks-per-node", Some("1")),
                    ("no-requeue", None),
                ],
                "{v}"
            );
            assert_eq!(d[1].text, "-p short", "{v}");
            assert_eq!(d[8].text, "--ntasks-per-node 1", "{v}");
            assert_eq!(script_lines(text), 20, "{v}");
            assert_eq!(wrapped_command(text), None, "{v}");
        }
        // Attached short values, several options on one line, odd tokens.
        let d = sbatch_directives("#!/bin/sh\n#SBATCH -t5 -N2 --exclusive -Z\n#SBATCHX -p no\n");
        assert_eq!(
            keys(&d),
            [
                ("time", Some("5")),
                ("nodes", Some("2")),
                ("exclusive", None),
                ("Z", None)
            ]
        );
        assert!(sbatch_directives("").is_empty());
        assert!(sbatch_directives("\u{0}\u{ff}#SBATCH -p x").is_empty());
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
