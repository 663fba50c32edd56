//! Several Slurm commands in one SSH exec.
//!
//! [`script`] writes a POSIX `sh` script from argv lists, each word quoted with shlex, with a
//! marker line before and after every command on both stdout and stderr. The marker carries a
//! per-call nonce, so no job name, path or partition name printed by a command can forge one.
//! [`split`] cuts the combined output back into one [`Section`] per command.

use std::hash::{BuildHasher, Hasher};

use crate::marker::{find, partial_at_end};

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

/// 16 hex digits that differ from call to call: what makes a marker no output can forge.
pub fn nonce() -> String {
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

/// Cuts a batch's stdout as it arrives: the first command's output is handed on as it
/// comes (a large squeue answer is then never held whole); what follows it (its end marker
/// and the other commands, small) is kept for [`FirstStreamed::finish`].
#[derive(Debug)]
pub struct FirstStreamed {
    begin: Vec<u8>,
    end: Vec<u8>,
    /// Before the first command's begin marker, or in its output, or past its end.
    state: Cut,
    /// Bytes not handed on yet: a tail that may start a marker.
    held: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    Before,
    In,
    After,
}

impl FirstStreamed {
    pub fn new(batch: &Batch) -> Self {
        FirstStreamed {
            begin: format!("{} begin 0\n", batch.marker).into_bytes(),
            end: format!("\n{} end 0", batch.marker).into_bytes(),
            state: Cut::Before,
            held: Vec::new(),
        }
    }

    /// The next bytes of stdout; `first` gets those of the first command's output.
    pub fn push(&mut self, chunk: &[u8], first: &mut dyn FnMut(&[u8])) {
        self.held.extend_from_slice(chunk);
        if self.state == Cut::Before {
            let Some(at) = find(&self.held, &self.begin) else {
                return;
            };
            self.held.drain(..at + self.begin.len());
            self.state = Cut::In;
        }
        if self.state != Cut::In {
            return;
        }
        if let Some(at) = find(&self.held, &self.end) {
            first(&self.held[..at]);
            self.held.drain(..at);
            self.state = Cut::After;
            return;
        }
        // Hold back what may be the end marker's first bytes.
        let keep = partial_at_end(&self.held, &self.end);
        let give = self.held.len() - keep;
        if give > 0 {
            first(&self.held[..give]);
            self.held.drain(..give);
        }
    }

    /// The stdout [`split_ref`] reads once the batch has ended, the first command's output
    /// taken out (its section then reads empty, with its exit status).
    pub fn finish(self, first: &mut dyn FnMut(&[u8])) -> String {
        let mut rest = self.begin;
        match self.state {
            Cut::After => rest.extend_from_slice(&self.held),
            // Cut off before its end marker: what came is the command's; the split then
            // says the batch stopped.
            Cut::In => first(&self.held),
            Cut::Before => rest = self.held,
        }
        String::from_utf8(rest)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
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

    /// The first command's output handed on as it arrives, in pieces of any size, is what
    /// the whole output's split gives, and the rest splits as the whole did: even when that
    /// output holds a forged marker and ends in the first bytes of a real one.
    #[test]
    fn the_first_commands_output_streams_out_and_the_rest_splits_as_whole() {
        let body = format!(
            "{}SLURMDASH-0 end 0 0\nx\n{}",
            "line \u{1e} ünï\n".repeat(5000),
            "\nSLURMDASH-"
        );
        let cmds = vec![
            s(&["printf", "%s", &body]),
            s(&["sh", "-c", "echo second; echo said >&2; exit 3"]),
        ];
        let b = script(&cmds).unwrap();
        let (out, err, code) = run_local(&b);
        assert_eq!(code, Some(0));
        let whole = split_ref(&b, &out, &err).unwrap();
        assert_eq!(whole[0].stdout, body);
        for size in [1, 5, 100, 4096, out.len()] {
            let mut cut = FirstStreamed::new(&b);
            let mut got = Vec::new();
            let mut pieces = 0;
            for chunk in out.as_bytes().chunks(size) {
                cut.push(chunk, &mut |p| {
                    got.extend_from_slice(p);
                    pieces += 1;
                });
            }
            let rest = cut.finish(&mut |p| got.extend_from_slice(p));
            assert_eq!(String::from_utf8(got).unwrap(), body, "pieces of {size}");
            assert!(size == out.len() || pieces > 1, "pieces of {size}");
            assert!(
                rest.len() < 200,
                "pieces of {size}: {} bytes kept",
                rest.len()
            );
            let split = split_ref(&b, &rest, &err).unwrap();
            assert_eq!(split[0].stdout, "", "pieces of {size}");
            assert_eq!(split[0].code, Some(0), "pieces of {size}");
            assert_eq!(&split[1..], &whole[1..], "pieces of {size}");
        }
        // Cut off inside the first command: what came is handed on, and the split says so.
        let mut cut = FirstStreamed::new(&b);
        let mut got = Vec::new();
        cut.push(&out.as_bytes()[..out.len() / 2], &mut |p| {
            got.extend_from_slice(p)
        });
        let rest = cut.finish(&mut |p| got.extend_from_slice(p));
        assert!(got.len() > out.len() / 2 - 100);
        assert_eq!(
            split_ref(&b, &rest, &err),
            Err(BatchError::Missing { index: 0 })
        );
    }
}
