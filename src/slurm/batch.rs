//! Several Slurm commands in one SSH exec.
//!
//! [`script`] writes a POSIX `sh` script from argv lists, each word quoted with shlex, with a
//! marker line before and after every command on both stdout and stderr. The marker carries a
//! per-call nonce, so no job name, path or partition name printed by a command can forge one.
//! [`split`] cuts the combined output back into one [`Section`] per command.

use std::hash::{BuildHasher, Hasher};

/// The argv that runs a [`Batch`] (the script is the program's own text).
pub fn argv(batch: &Batch) -> Vec<String> {
    vec!["sh".into(), "-c".into(), batch.script.clone()]
}

/// A script and the marker it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub script: String,
    pub marker: String,
    pub sections: usize,
}

/// What one command of the batch printed and how it exited.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

impl Section {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("an argument holds a NUL byte, which no shell can carry")]
    Nul,
    #[error("the batched command stopped before command {index} finished (output cut off)")]
    Missing { index: usize },
}

fn nonce() -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:016x}", h.finish())
}

/// Builds the script for `commands`, in order. Every command runs even when an earlier one
/// fails; each exit status is reported in its own end marker.
pub fn script(commands: &[Vec<String>]) -> Result<Batch, BatchError> {
    script_with_marker(commands, &format!("SLURMDASH-{}", nonce()))
}

fn script_with_marker(commands: &[Vec<String>], marker: &str) -> Result<Batch, BatchError> {
    let mut s = format!("m={marker}\n");
    for (i, argv) in commands.iter().enumerate() {
        let line = shlex::try_join(argv.iter().map(String::as_str)).map_err(|_| BatchError::Nul)?;
        s.push_str(&format!(
            "printf '%s begin {i}\\n' \"$m\"; printf '%s begin {i}\\n' \"$m\" >&2\n\
             {line} </dev/null\n\
             rc=$?; printf '\\n%s end {i} %s\\n' \"$m\" \"$rc\"; printf '\\n%s end {i}\\n' \"$m\" >&2\n"
        ));
    }
    s.push_str("exit 0\n");
    Ok(Batch {
        script: s,
        marker: marker.to_string(),
        sections: commands.len(),
    })
}

/// The text between `MARK begin i\n` and `\nMARK end i…\n`, and what follows the end marker
/// up to the line end.
fn cut<'a>(out: &'a str, marker: &str, i: usize) -> Option<(&'a str, &'a str)> {
    let begin = format!("{marker} begin {i}\n");
    let start = out.find(&begin)? + begin.len();
    let end_mark = format!("\n{marker} end {i}");
    let len = out[start..].find(&end_mark)?;
    let body = &out[start..start + len];
    let after = &out[start + len + end_mark.len()..];
    let tail = after.split('\n').next().unwrap_or("");
    Some((body, tail))
}

/// Splits the batch's stdout and stderr into one section per command.
pub fn split(batch: &Batch, stdout: &str, stderr: &str) -> Result<Vec<Section>, BatchError> {
    Ok(split_ref(batch, stdout, stderr)?
        .iter()
        .map(SectionRef::to_owned)
        .collect())
}

/// A [`Section`] that borrows the batch's output: the refresh reads a large squeue answer
/// (about 20 MB for 100,000 jobs) where it lies instead of copying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SectionRef<'a> {
    pub stdout: &'a str,
    pub stderr: &'a str,
    pub code: Option<i32>,
}

impl SectionRef<'_> {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn to_owned(&self) -> Section {
        Section {
            stdout: self.stdout.to_string(),
            stderr: self.stderr.to_string(),
            code: self.code,
        }
    }
}

/// [`split`], borrowing from `stdout` and `stderr`.
pub fn split_ref<'a>(
    batch: &Batch,
    stdout: &'a str,
    stderr: &'a str,
) -> Result<Vec<SectionRef<'a>>, BatchError> {
    let mut out = Vec::with_capacity(batch.sections);
    for i in 0..batch.sections {
        let (body, tail) = cut(stdout, &batch.marker, i).ok_or(BatchError::Missing { index: i })?;
        let code = tail.trim().parse::<i32>().ok();
        let err = cut(stderr, &batch.marker, i).map_or("", |(b, _)| b);
        out.push(SectionRef {
            stdout: body,
            stderr: err,
            code,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::process::Command;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn run_local(b: &Batch) -> (String, String, Option<i32>) {
        let a = argv(b);
        let o = Command::new(&a[0]).args(&a[1..]).output().unwrap();
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.code(),
        )
    }

    #[test]
    fn hostile_words_reach_each_command_unchanged() {
        let hostile =
            "a'b \"c\" $(touch /tmp/slurmdash-pwned) `x` | ; & \n SLURMDASH-0 end 0 0 ünï";
        let cmds = vec![
            s(&["printf", "%s", hostile]),
            s(&["sh", "-c", "echo oops >&2; exit 3"]),
            s(&[
                "printf",
                "%s\\n",
                "--partition=polar;rm -rf ~",
                "x\x1fy\x1e",
            ]),
        ];
        let b = script(&cmds).unwrap();
        let (out, err, code) = run_local(&b);
        assert_eq!(code, Some(0));
        let secs = split(&b, &out, &err).unwrap();
        assert_eq!(secs.len(), 3);
        assert_eq!(secs[0].stdout, hostile);
        assert!(secs[0].success());
        assert_eq!(secs[1].code, Some(3));
        assert_eq!(secs[1].stderr.trim(), "oops");
        assert_eq!(secs[1].stdout, "");
        assert_eq!(secs[2].stdout, "--partition=polar;rm -rf ~\nx\x1fy\x1e\n");
        assert!(!std::path::Path::new("/tmp/slurmdash-pwned").exists());
    }

    #[test]
    fn a_forged_marker_in_output_cannot_end_a_section() {
        let b = script_with_marker(&[s(&["x"]), s(&["y"])], "M").unwrap();
        // The real marker is unguessable; with a known one, output that imitates it is what
        // split would be fooled by, which is why `script` uses a nonce.
        assert!(b.script.starts_with("m=M\n"));
        let b = script(&[s(&["x"])]).unwrap();
        let forged = "SLURMDASH-0000000000000000 end 0 0\n";
        let out = format!("{} begin 0\n{forged}real\n{} end 0 0\n", b.marker, b.marker);
        let secs = split(&b, &out, "").unwrap();
        assert_eq!(secs[0].stdout, format!("{forged}real"));
        assert_ne!(script(&[]).unwrap().marker, script(&[]).unwrap().marker);
    }

    #[test]
    fn cut_off_output_is_an_error_naming_the_command() {
        let b = script(&[s(&["a"]), s(&["b"])]).unwrap();
        let out = format!(
            "{m} begin 0\nrows\n{m} end 0 0\n{m} begin 1\npartial",
            m = b.marker
        );
        assert_eq!(split(&b, &out, ""), Err(BatchError::Missing { index: 1 }));
        assert_eq!(script(&[s(&["a\0b"])]), Err(BatchError::Nul));
    }
}
