//! The user's own commands (`[[commands]]`): their templates split into argv words and
//! filled in, where they run, and their output kept within bounds. Pure: the config checks
//! the templates with [`Template::parse`], App fills them with [`Template::expand`], the
//! workers run the [`CustomRun`] and answer with a [`CustomOutput`].
//!
//! A template is split into words once, shell-like (the text is the user's own, from their
//! config); a placeholder is filled in inside its word after the split, so a value with
//! spaces, quotes or `;` stays one argument and is never read by a shell.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The placeholders every template may use, with what they stand for.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("job_id", "the job's id as Slurm prints it (123, 123_4)"),
    ("array_task", "its array task (4), or nothing"),
    ("nodes", "its node list (gpu[01-02])"),
    ("first_node", "its first node"),
    ("workdir", "its working directory"),
    ("stdout", "its stdout file"),
    ("stderr", "its stderr file"),
    ("cluster", "the cluster's name in the config"),
    ("user", "the job's owner"),
    ("partition", "its partition"),
];

/// The placeholders that need no selected job.
pub const JOBLESS: &[&str] = &["cluster"];

/// Where a command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Where {
    /// On the login node, through the dashboard's connection.
    #[default]
    Login,
    /// Inside the job's allocation, on its first node (`srun --overlap`).
    Node,
    /// On this machine, as a process of its own (no shell).
    Laptop,
}

impl Where {
    pub fn word(self) -> &'static str {
        match self {
            Where::Login => "login",
            Where::Node => "node",
            Where::Laptop => "laptop",
        }
    }
}

/// One piece of a template word.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(String),
}

/// A template split into words, each a list of text and placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    words: Vec<Vec<Piece>>,
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_lowercase() || f == '_')
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '_')
}

impl Template {
    /// Splits `text` into words and finds the placeholders (`{name}`; braces around anything
    /// else, `{print $1}`, stay text). `known`: the names allowed besides [`PLACEHOLDERS`]
    /// (the command's prompts).
    pub fn parse(text: &str, known: &[&str]) -> Result<Template, String> {
        let words = shlex::split(text)
            .ok_or_else(|| format!("`{text}` has an unclosed quote or a trailing backslash"))?;
        if words.is_empty() {
            return Err("the command is empty".into());
        }
        let mut out = Vec::new();
        for w in words {
            let mut pieces = Vec::new();
            let mut rest = w.as_str();
            let mut text = String::new();
            while let Some(open) = rest.find('{') {
                let after = &rest[open + 1..];
                match after.find('}') {
                    Some(close) if is_name(&after[..close]) => {
                        let name = &after[..close];
                        if !PLACEHOLDERS.iter().any(|(p, _)| *p == name) && !known.contains(&name) {
                            let all: Vec<&str> = PLACEHOLDERS.iter().map(|(p, _)| *p).collect();
                            return Err(format!(
                                "unknown placeholder {{{name}}} (known: {}{}{})",
                                all.join(", "),
                                if known.is_empty() { "" } else { "; prompts: " },
                                known.join(", ")
                            ));
                        }
                        text.push_str(&rest[..open]);
                        if !text.is_empty() {
                            pieces.push(Piece::Text(std::mem::take(&mut text)));
                        }
                        pieces.push(Piece::Slot(name.to_string()));
                        rest = &after[close + 1..];
                    }
                    _ => {
                        text.push_str(&rest[..=open]);
                        rest = after;
                    }
                }
            }
            text.push_str(rest);
            if !text.is_empty() || pieces.is_empty() {
                pieces.push(Piece::Text(text));
            }
            out.push(pieces);
        }
        Ok(Template { words: out })
    }

    /// The placeholders it uses, each once, in order.
    pub fn slots(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for p in self.words.iter().flatten() {
            if let Piece::Slot(s) = p {
                if !seen.contains(&s.as_str()) {
                    seen.push(s);
                }
            }
        }
        seen
    }

    /// The argv, each placeholder replaced by `value(name)` inside its word. `Err`: the name
    /// of a placeholder with no value.
    pub fn expand(&self, value: &dyn Fn(&str) -> Option<String>) -> Result<Vec<String>, String> {
        self.words
            .iter()
            .map(|w| {
                let mut s = String::new();
                for p in w {
                    match p {
                        Piece::Text(t) => s.push_str(t),
                        Piece::Slot(name) => s.push_str(&value(name).ok_or_else(|| name.clone())?),
                    }
                }
                Ok(s)
            })
            .collect()
    }
}

/// `argv` inside running job `job` on `node` (its first node): one task of a step that
/// shares the job's resources (`--overlap`), the argv after `--`, each word one argument.
pub fn node_argv(job: &str, node: &str, argv: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "srun",
        "--overlap",
        "--quiet",
        &format!("--jobid={job}"),
        &format!("--nodelist={node}"),
        "--nodes=1",
        "--ntasks=1",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(argv.iter().cloned());
    v
}

/// What to run: the workers' part of a user's command.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomRun {
    /// The cluster it runs for (its connection; for `laptop`, only the label).
    pub cluster: u16,
    pub key: String,
    pub name: String,
    pub place: Where,
    /// The command as filled in (for `node`, without the `srun` around it).
    pub argv: Vec<String>,
    /// `node`: the job and the node it runs on.
    pub job: Option<String>,
    pub node: Option<String>,
    /// `None`: the cluster's `command_timeout_secs` (filled in by the worker).
    pub timeout: Option<Duration>,
    /// Hand the output to `$PAGER` instead of the pane.
    pub pager: bool,
}

impl CustomRun {
    /// The argv that is run: `argv` itself, or inside the job for `node`.
    pub fn full_argv(&self) -> Vec<String> {
        match (self.place, &self.job, &self.node) {
            (Where::Node, Some(j), Some(n)) => node_argv(j, n, &self.argv),
            _ => self.argv.clone(),
        }
    }
}

/// The most output kept of one command: the rest is counted, not kept.
pub const MAX_BYTES: usize = 1 << 20;
/// The most lines kept.
pub const MAX_LINES: usize = 20_000;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its exit code (`None`: killed by a signal).
    Exit(Option<i32>),
    /// It could not run, or did not finish in time: why.
    Failed(String),
}

/// A command's output, as shown: the text made safe to draw, within bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomOutput {
    pub run: CustomRun,
    pub ended: Ended,
    pub took: Duration,
    /// stdout then, when there was any, stderr under a line that says so.
    pub lines: Vec<String>,
    /// Bytes the command printed (stdout and stderr), kept or not.
    pub bytes: u64,
    /// Output was left out: more than [`MAX_BYTES`] or [`MAX_LINES`].
    pub cut: bool,
}

impl CustomOutput {
    pub fn new(
        run: CustomRun,
        ended: Ended,
        took: Duration,
        out: &Capture,
        err: &Capture,
    ) -> CustomOutput {
        let mut lines = safe_lines(&out.kept);
        let mut cut = out.cut();
        if !err.kept.is_empty() {
            lines.push("── stderr ──".into());
            lines.extend(safe_lines(&err.kept));
            cut |= err.cut();
        }
        if lines.len() > MAX_LINES {
            lines.truncate(MAX_LINES);
            cut = true;
        }
        CustomOutput {
            run,
            ended,
            took,
            lines,
            bytes: out.seen + err.seen,
            cut,
        }
    }

    pub fn success(&self) -> bool {
        self.ended == Ended::Exit(Some(0))
    }

    /// `exit 0`, `exit 2`, `killed by a signal`, `failed: …`.
    pub fn status_word(&self) -> String {
        match &self.ended {
            Ended::Exit(Some(c)) => format!("exit {c}"),
            Ended::Exit(None) => "killed by a signal".into(),
            Ended::Failed(why) => format!("did not run: {why}"),
        }
    }

    /// The output as one text (for `$PAGER`), with a first line naming the command.
    pub fn text(&self) -> String {
        let mut s = format!(
            "# {} ({}): {} · {} · {:.1} s\n",
            self.run.name,
            self.run.place.word(),
            crate::slurm::custom::shell_line(&self.run.full_argv()),
            self.status_word(),
            self.took.as_secs_f64()
        );
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        if self.cut {
            s.push_str(&cut_note(self.bytes));
            s.push('\n');
        }
        s
    }
}

/// The line that says output was left out.
pub fn cut_note(bytes: u64) -> String {
    format!(
        "… cut: the command printed {bytes} bytes; the first {} KiB / {MAX_LINES} lines are shown",
        MAX_BYTES >> 10
    )
}

/// The argv as a line a shell would split back into it (for showing).
pub fn shell_line(argv: &[String]) -> String {
    let plain = |a: &str| {
        !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=./:,+@%".contains(c))
    };
    argv.iter()
        .map(|a| match plain(a) {
            true => a.clone(),
            false => shlex::try_quote(a)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| format!("{a:?}")),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Output gathered within [`MAX_BYTES`]: the first bytes kept, all of them counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    pub kept: Vec<u8>,
    pub seen: u64,
}

impl Capture {
    pub fn push(&mut self, b: &[u8]) {
        self.seen += b.len() as u64;
        let room = MAX_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&b[..b.len().min(room)]);
    }

    pub fn cut(&self) -> bool {
        self.seen > self.kept.len() as u64
    }
}

/// Bytes as lines safe to draw: invalid UTF-8 as U+FFFD, tabs as spaces, every other control
/// character (escape sequences, carriage returns) as `·`.
pub fn safe_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\n')
        .map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            let mut s = String::with_capacity(l.len());
            for c in l.chars() {
                match c {
                    '\t' => s.push_str("    "),
                    c if c.is_control() => s.push('·'),
                    c => s.push(c),
                }
            }
            s
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn values(name: &str) -> Option<String> {
        match name {
            "job_id" => Some("123".into()),
            "first_node" => Some("gpu01".into()),
            "lines" => Some("a; touch /tmp/pwned".into()),
            _ => None,
        }
    }

    #[test]
    fn placeholders_are_filled_after_the_split_so_a_value_stays_one_argument() {
        let t =
            Template::parse("tail -n {lines} 'job {job_id}.out' x{job_id}y", &["lines"]).unwrap();
        assert_eq!(t.slots(), vec!["lines", "job_id"]);
        assert_eq!(
            t.expand(&values).unwrap(),
            ["tail", "-n", "a; touch /tmp/pwned", "job 123.out", "x123y"]
        );
    }

    #[test]
    fn braces_that_are_not_a_placeholder_stay_text() {
        let t = Template::parse("awk '{print $1}' {job_id}", &[]).unwrap();
        assert_eq!(t.expand(&values).unwrap(), ["awk", "{print $1}", "123"]);
        let t = Template::parse("echo {", &[]).unwrap();
        assert_eq!(t.expand(&values).unwrap(), ["echo", "{"]);
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        let e = Template::parse("seff {jobid}", &[]).unwrap_err();
        assert!(e.contains("unknown placeholder {jobid}"), "{e}");
        assert!(e.contains("job_id"), "{e}");
        assert!(Template::parse("echo 'open", &[])
            .unwrap_err()
            .contains("unclosed quote"));
        assert!(Template::parse("   ", &[]).unwrap_err().contains("empty"));
    }

    #[test]
    fn a_missing_value_is_named() {
        let t = Template::parse("ls {workdir}", &[]).unwrap();
        assert_eq!(t.expand(&values).unwrap_err(), "workdir");
    }

    #[test]
    fn a_node_command_runs_inside_the_job_after_the_options() {
        let argv = node_argv("123", "gpu01", &["echo".into(), "--jobid=9; rm".into()]);
        assert_eq!(
            argv,
            [
                "srun",
                "--overlap",
                "--quiet",
                "--jobid=123",
                "--nodelist=gpu01",
                "--nodes=1",
                "--ntasks=1",
                "--",
                "echo",
                "--jobid=9; rm"
            ]
        );
    }

    #[test]
    fn the_shown_line_quotes_only_what_a_shell_would_split() {
        let argv: Vec<String> = ["srun", "--jobid=12", "a; b", "it's", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = shell_line(&argv);
        assert_eq!(line, "srun --jobid=12 'a; b' \"it's\" ''");
        assert_eq!(shlex::split(&line).unwrap(), argv);
    }

    #[test]
    fn output_is_bounded_and_safe_to_draw() {
        let mut c = Capture::default();
        c.push(b"a\x1b[31mred\tx\r\n\xff\xfe\n");
        assert_eq!(safe_lines(&c.kept), ["a·[31mred    x", "\u{fffd}\u{fffd}"]);
        let mut big = Capture::default();
        big.push(&vec![b'x'; MAX_BYTES + 10]);
        assert!(big.cut());
        assert_eq!(big.kept.len(), MAX_BYTES);
        assert_eq!(big.seen, MAX_BYTES as u64 + 10);
    }
}
