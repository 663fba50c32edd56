//! A batch script's `#SBATCH` lines read as sbatch reads them, for `slurmdash submit SCRIPT`:
//! only lines that begin with `#SBATCH` in the leading block of comments and blank lines
//! (the first other line ends it); each line split into words as sbatch splits it
//! (whitespace, `'` and `"` quotes, `\` escapes, an unquoted `#` starts a comment). The
//! options slurmdash knows go into the [`LaunchSpec`] (and are validated as the form's
//! fields are); the rest pass to Slurm unchanged.

use std::fmt;

use super::LaunchSpec;

/// Largest script taken: Slurm's default `max_script_size` (4 MB).
pub const MAX_SCRIPT_BYTES: usize = 4 * 1024 * 1024;
/// Longest `#SBATCH` line taken.
pub const MAX_LINE_BYTES: usize = 4096;

/// One option of a `#SBATCH` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// 1-based line of the script.
    pub line: usize,
    /// The long option's name without dashes (`-p` is `partition`); an unknown short
    /// option keeps its dash (`-Z`).
    pub key: String,
    pub value: Option<String>,
    /// As written, after sbatch's unquoting (`-p gpu`, `--mem=64G`), for messages.
    pub text: String,
}

/// Why a script is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptError {
    Empty,
    TooLarge(usize),
    NoShebang,
    NotUtf8 { line: usize },
    Nul { line: usize },
    DosLineBreaks { line: usize },
    Control { line: usize, byte: u8 },
    LineTooLong { line: usize, len: usize },
    Unterminated { line: usize },
    MissingValue { line: usize, option: String },
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "the script is empty"),
            Self::TooLarge(n) => write!(
                f,
                "the script is {n} bytes; Slurm takes batch scripts up to {MAX_SCRIPT_BYTES} bytes"
            ),
            Self::NoShebang => write!(
                f,
                "the first line must start with #! and the interpreter (e.g. #!/bin/bash), as sbatch requires"
            ),
            Self::NotUtf8 { line } => write!(f, "line {line} is not UTF-8 text"),
            Self::Nul { line } => write!(f, "line {line} holds a NUL byte"),
            Self::DosLineBreaks { line } => write!(
                f,
                "line {line} ends with a DOS line break (\\r\\n), which sbatch refuses: convert it with dos2unix"
            ),
            Self::Control { line, byte } => write!(
                f,
                "line {line}: #SBATCH line holds the control byte 0x{byte:02x}"
            ),
            Self::LineTooLong { line, len } => write!(
                f,
                "line {line}: #SBATCH line is {len} bytes long (at most {MAX_LINE_BYTES})"
            ),
            Self::Unterminated { line } => {
                write!(f, "line {line}: #SBATCH line has an unterminated quote")
            }
            Self::MissingValue { line, option } => {
                write!(f, "line {line}: {option} needs a value")
            }
        }
    }
}

impl std::error::Error for ScriptError {}

/// Short options and their long names, those that take a value.
const SHORT_VALUED: &[(char, &str)] = &[
    ('A', "account"),
    ('a', "array"),
    ('B', "extra-node-info"),
    ('b', "begin"),
    ('C', "constraint"),
    ('c', "cpus-per-task"),
    ('D', "chdir"),
    ('d', "dependency"),
    ('e', "error"),
    ('F', "nodefile"),
    ('G', "gpus"),
    ('i', "input"),
    ('J', "job-name"),
    ('L', "licenses"),
    ('M', "clusters"),
    ('m', "distribution"),
    ('N', "nodes"),
    ('n', "ntasks"),
    ('o', "output"),
    ('p', "partition"),
    ('q', "qos"),
    ('S', "core-spec"),
    ('t', "time"),
    ('w', "nodelist"),
    ('x', "exclude"),
];

/// Short options without a value.
const SHORT_FLAGS: &[(char, &str)] = &[
    ('H', "hold"),
    ('h', "help"),
    ('k', "no-kill"),
    ('O', "overcommit"),
    ('Q', "quiet"),
    ('s', "oversubscribe"),
    ('V', "version"),
    ('v', "verbose"),
    ('W', "wait"),
];

/// Long options that take a value only after `=` (none, or an optional one).
const LONG_FLAGS: &[&str] = &[
    "contiguous",
    "exclusive",
    "get-user-env",
    "help",
    "hold",
    "ignore-pbs",
    "no-kill",
    "no-requeue",
    "overcommit",
    "oversubscribe",
    "parsable",
    "quiet",
    "reboot",
    "requeue",
    "spread-job",
    "test-only",
    "usage",
    "use-min-nodes",
    "verbose",
    "version",
    "wait",
];

/// The `#SBATCH` options of `bytes`, a batch script, in order. The whole script must be
/// UTF-8 without NUL bytes or DOS line breaks and begin with `#!`; its `#SBATCH` lines must
/// be free of control bytes, at most [`MAX_LINE_BYTES`] long and quoted properly.
pub fn parse(bytes: &[u8]) -> Result<Vec<Directive>, ScriptError> {
    if bytes.is_empty() {
        return Err(ScriptError::Empty);
    }
    if bytes.len() > MAX_SCRIPT_BYTES {
        return Err(ScriptError::TooLarge(bytes.len()));
    }
    let line_of = |at: usize| bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let text = std::str::from_utf8(bytes).map_err(|e| ScriptError::NotUtf8 {
        line: line_of(e.valid_up_to()),
    })?;
    if let Some(at) = text.find('\0') {
        return Err(ScriptError::Nul { line: line_of(at) });
    }
    if let Some(at) = text.find("\r\n") {
        return Err(ScriptError::DosLineBreaks { line: line_of(at) });
    }
    if !text.starts_with("#!") {
        return Err(ScriptError::NoShebang);
    }
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let n = i + 1;
        let Some(rest) = line.strip_prefix("#SBATCH") else {
            let t = line.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            break;
        };
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            // `#SBATCHX`: a comment.
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            return Err(ScriptError::LineTooLong {
                line: n,
                len: line.len(),
            });
        }
        if let Some(b) = line
            .bytes()
            .find(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        {
            return Err(ScriptError::Control { line: n, byte: b });
        }
        let words = words(rest).ok_or(ScriptError::Unterminated { line: n })?;
        options(n, &words, &mut out)?;
    }
    Ok(out)
}

/// A `#SBATCH` line's words as sbatch splits them; None when a quote is not closed.
fn words(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(e) = chars.next() {
                    word.get_or_insert_with(String::new).push(e);
                }
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '#') => break,
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    out.extend(word);
    Some(out)
}

fn options(line: usize, words: &[String], out: &mut Vec<Directive>) -> Result<(), ScriptError> {
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        let mut take = |option: &str| -> Result<String, ScriptError> {
            let v = words
                .get(i)
                .cloned()
                .ok_or_else(|| ScriptError::MissingValue {
                    line,
                    option: option.to_string(),
                })?;
            i += 1;
            Ok(v)
        };
        if let Some(long) = w.strip_prefix("--") {
            let (key, value, text) = match long.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string()), w.clone()),
                None if LONG_FLAGS.contains(&long) => (long.to_string(), None, w.clone()),
                None => {
                    let v = take(w)?;
                    (long.to_string(), Some(v.clone()), format!("{w} {v}"))
                }
            };
            out.push(Directive {
                line,
                key,
                value,
                text,
            });
        } else if let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut chars = short.chars();
            let c = chars.next().unwrap_or('-');
            let attached = chars.as_str();
            if let Some((_, key)) = SHORT_VALUED.iter().find(|(s, _)| *s == c) {
                let (value, text) = if attached.is_empty() {
                    let v = take(w)?;
                    (v.clone(), format!("{w} {v}"))
                } else {
                    (attached.trim_start_matches('=').to_string(), w.clone())
                };
                out.push(Directive {
                    line,
                    key: (*key).to_string(),
                    value: Some(value),
                    text,
                });
            } else if let Some((_, key)) = SHORT_FLAGS
                .iter()
                .find(|(s, _)| *s == c && attached.is_empty())
            {
                out.push(Directive {
                    line,
                    key: (*key).to_string(),
                    value: None,
                    text: w.clone(),
                });
            } else {
                out.push(Directive {
                    line,
                    key: w.clone(),
                    value: None,
                    text: w.clone(),
                });
            }
        } else {
            // A word that is no option: sbatch would take it as the script's name. Kept
            // for the user to see, never passed on.
            out.push(Directive {
                line,
                key: String::new(),
                value: Some(w.clone()),
                text: w.clone(),
            });
        }
    }
    Ok(())
}

/// A batch script (its bytes, read on this machine) made the launch: it becomes the batch
/// step, and its `#SBATCH` options set what they name. What the script does not ask for is
/// what sbatch gives without options (one node, one CPU a task, no GPU, no container);
/// time, memory, partition and account stay those of the config (or template) when it names
/// none. `stem`: the file's name without extension, the launch's name unless `-J` names it.
/// Used by `slurmdash submit SCRIPT` and the form's `o`.
pub fn from_script(
    spec: &mut LaunchSpec,
    stem: &str,
    bytes: Vec<u8>,
) -> Result<FromScript, String> {
    let dirs = parse(&bytes).map_err(|e| e.to_string())?;
    let body = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    spec.nodes = 1;
    spec.gpus = 0;
    spec.cpus_per_task = 1;
    spec.image.clear();
    spec.command.clear();
    spec.steps.clear();
    spec.batch_script = body;
    if !stem.is_empty() {
        // What a launch's name may hold; `#SBATCH -J` may name it otherwise.
        spec.name = super::adopt::name_chars(stem);
    }
    apply(spec, &dirs)
}

/// What the script's directives did to the spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FromScript {
    /// Read into the launch's fields, as written (`-p short`).
    pub read: Vec<String>,
    /// Passed to Slurm unchanged, as `#SBATCH` options (`--comment="a b"`).
    pub passed: Vec<String>,
    /// Left out, each with why.
    pub ignored: Vec<String>,
}

/// One option as an `#SBATCH` line carries it to sbatch: the value quoted when sbatch's
/// splitting would change it.
pub fn render_option(key: &str, value: Option<&str>) -> String {
    let Some(v) = value else {
        return format!("--{key}");
    };
    let plain = !v.is_empty()
        && !v
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | '#'));
    if plain {
        format!("--{key}={v}")
    } else {
        let mut q = String::from("\"");
        for c in v.chars() {
            if matches!(c, '"' | '\\') {
                q.push('\\');
            }
            q.push(c);
        }
        q.push('"');
        format!("--{key}={q}")
    }
}

/// Reads `dirs` into `spec`: the fields slurmdash knows (name, partition, account, nodes,
/// GPUs, CPUs per task, memory, time, array, working directory, requeue, mail, signal) are
/// set, for validation as the form's; options that would undo slurmdash's layout or its
/// submission (output files, holding, waiting, another cluster) are left out; the rest go
/// to `spec.extra_sbatch` unchanged. An error names the line of a value slurmdash cannot
/// take (a node range, a GPU count that is not a number).
pub fn apply(spec: &mut LaunchSpec, dirs: &[Directive]) -> Result<FromScript, String> {
    let mut r = FromScript::default();
    let mut per_node: Option<u32> = None;
    let mut total: Option<u32> = None;
    let mut ntasks: Option<(u32, &Directive)> = None;
    for d in dirs {
        let v = d.value.as_deref().unwrap_or("");
        let num = |what: &str| -> Result<u32, String> {
            v.trim().parse::<u32>().map_err(|_| {
                format!(
                    "line {}: `{}`: slurmdash takes {what} as a whole number",
                    d.line, d.text
                )
            })
        };
        let mut read = true;
        match d.key.as_str() {
            "" => {
                r.ignored
                    .push(format!("`{}` (line {}: not an option)", d.text, d.line));
                read = false;
            }
            "job-name" => spec.name = v.to_string(),
            "partition" => spec.partition = v.to_string(),
            "account" => spec.account = v.to_string(),
            "nodes" => spec.nodes = num("the node count")?,
            "cpus-per-task" => spec.cpus_per_task = num("CPUs per task")?,
            "mem" => spec.mem = v.to_string(),
            "time" => spec.time = v.to_string(),
            "array" => spec.array = v.to_string(),
            "chdir" => spec.workdir = v.to_string(),
            "requeue" => spec.requeue = true,
            "no-requeue" => spec.requeue = false,
            "mail-type" => spec.mail_type = v.to_string(),
            "mail-user" => spec.mail_user = v.to_string(),
            "signal" => spec.signal = v.to_string(),
            "gpus" | "gpus-per-node" if v.trim().parse::<u32>().is_ok() => {
                let n = num("GPUs")?;
                if d.key == "gpus" {
                    total = Some(n);
                } else {
                    per_node = Some(n);
                }
            }
            "gres" if gpu_gres(v).is_some() => per_node = gpu_gres(v),
            "ntasks" => {
                ntasks = Some((num("the task count")?, d));
                read = false;
            }
            "output" | "error" | "input" | "open-mode" => {
                r.ignored.push(format!(
                    "{} (slurmdash writes the job's output to slurm-logs/<name>-<job id>/main.out and main.err)",
                    d.text
                ));
                read = false;
            }
            "hold" | "wait" | "parsable" | "test-only" | "help" | "usage" | "version" => {
                r.ignored.push(format!(
                    "{} (slurmdash submits the job held and releases it once its log directory exists)",
                    d.text
                ));
                read = false;
            }
            "clusters" => {
                r.ignored.push(format!(
                    "{} (slurmdash submits to the cluster it is connected to; --cluster chooses it)",
                    d.text
                ));
                read = false;
            }
            k if k.starts_with('-') => {
                // An unknown short option: sbatch decides.
                spec.extra_sbatch.push(k.to_string());
                r.passed.push(k.to_string());
                read = false;
            }
            k => {
                let o = render_option(k, d.value.as_deref());
                spec.extra_sbatch.push(o.clone());
                r.passed.push(o);
                read = false;
            }
        }
        if read {
            r.read.push(d.text.clone());
        }
    }
    match (per_node, total) {
        (Some(g), _) => spec.gpus = g.saturating_mul(spec.nodes.max(1)),
        (None, Some(g)) => spec.gpus = g,
        (None, None) => {}
    }
    if let Some((n, d)) = ntasks {
        // slurmdash's script asks for one task a node; the script's tasks spread over its
        // nodes as sbatch would.
        let o = format!("--ntasks-per-node={}", n.max(1).div_ceil(spec.nodes.max(1)));
        r.read.push(format!("{} (as {o})", d.text));
        spec.extra_sbatch.push(o);
    }
    Ok(r)
}

/// The GPUs a node of `--gres` asks for, when it asks for untyped GPUs only (`gpu`,
/// `gpu:4`); a typed or mixed request passes to Slurm as written.
fn gpu_gres(v: &str) -> Option<u32> {
    let v = v.trim().strip_prefix("gres/").unwrap_or(v.trim());
    match v.split(':').collect::<Vec<_>>().as_slice() {
        ["gpu"] => Some(1),
        ["gpu", n] => n.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TRAIN: &str = include_str!("../../tests/fixtures/scripts/train.sbatch");

    fn keys(d: &[Directive]) -> Vec<(&str, Option<&str>)> {
        d.iter()
            .map(|d| (d.key.as_str(), d.value.as_deref()))
            .collect()
    }

    #[test]
    fn a_realistic_script_is_read_as_sbatch_reads_it() {
        let d = parse(TRAIN.as_bytes()).unwrap();
        assert_eq!(
            keys(&d),
            [
                ("job-name", Some("sd-script")),
                ("partition", Some("short")),
                ("nodes", Some("1")),
                ("time", Some("0:05:00")),
                ("cpus-per-task", Some("1")),
                ("mem", Some("100M")),
                ("account", Some("research")),
                ("gres", Some("gpu:1")),
                ("mail-type", Some("END,FAIL")),
                ("signal", Some("USR1@60")),
                ("comment", Some("bring your own # script")),
                ("exclusive", None),
                ("open-mode", Some("append")),
                ("kill-on-invalid-dep", Some("yes")),
                ("output", Some("/tmp/train-%j.out")),
                ("requeue", None),
            ]
        );
        // The #SBATCH after the first command is not read, as sbatch does not.
        assert!(d.iter().all(|d| d.key != "qos"));
        assert_eq!(d[1].text, "-p short");
        assert_eq!(d[3].text, "-t 0:05:00");
        assert_eq!(d[1].line, 4);
    }

    #[test]
    fn known_directives_fill_the_spec_and_the_rest_pass_through() {
        let d = parse(TRAIN.as_bytes()).unwrap();
        let mut spec = LaunchSpec {
            gpus: 0,
            cpus_per_task: 1,
            ..LaunchSpec::default()
        };
        let r = apply(&mut spec, &d).unwrap();
        assert_eq!(spec.name, "sd-script");
        assert_eq!(
            (spec.partition.as_str(), spec.account.as_str()),
            ("short", "research")
        );
        assert_eq!((spec.nodes, spec.gpus, spec.cpus_per_task), (1, 1, 1));
        assert_eq!((spec.mem.as_str(), spec.time.as_str()), ("100M", "0:05:00"));
        assert_eq!(spec.mail_type, "END,FAIL");
        assert_eq!(spec.signal, "USR1@60");
        assert!(spec.requeue);
        assert_eq!(
            spec.extra_sbatch,
            [
                "--comment=\"bring your own # script\"",
                "--exclusive",
                "--kill-on-invalid-dep=yes"
            ]
        );
        assert_eq!(r.passed, spec.extra_sbatch);
        assert_eq!(r.ignored.len(), 2, "{:?}", r.ignored);
        assert!(r.ignored[0].starts_with("--open-mode=append"));
        assert!(r.ignored[1].starts_with("--output=/tmp/train-%j.out"));
        assert!(r.read.contains(&"-N 1".to_string()));
        // What passes is read back by sbatch's splitting as it was written.
        let line = format!("#!/bin/sh\n#SBATCH {}\n", spec.extra_sbatch[0]);
        assert_eq!(
            keys(&parse(line.as_bytes()).unwrap()),
            [("comment", Some("bring your own # script"))]
        );
    }

    #[test]
    fn short_forms_quotes_and_comments() {
        let s = "#!/bin/bash\n# a comment\n\n#SBATCH -N2 -c 4 -t4:00:00 -J 'my job' # trailing\n#SBATCH --gpus-per-node 2 -p=gpu\n#SBATCH --constraint=\"a100|h100\" -H -Z\n  #SBATCH -p indented-is-a-comment\n#SBATCHX -p not-one\n#SBATCH --comment=a\\ b#c\nsrun hostname\n";
        let d = parse(s.as_bytes()).unwrap();
        assert_eq!(
            keys(&d),
            [
                ("nodes", Some("2")),
                ("cpus-per-task", Some("4")),
                ("time", Some("4:00:00")),
                ("job-name", Some("my job")),
                ("gpus-per-node", Some("2")),
                ("partition", Some("gpu")),
                ("constraint", Some("a100|h100")),
                ("hold", None),
                ("-Z", None),
                ("comment", Some("a b")),
            ]
        );
        let mut spec = LaunchSpec::default();
        let r = apply(&mut spec, &d).unwrap();
        assert_eq!((spec.nodes, spec.gpus), (2, 4));
        assert_eq!(
            spec.extra_sbatch,
            ["--constraint=a100|h100", "-Z", "--comment=\"a b\""]
        );
        assert!(r.ignored[0].starts_with("-H (slurmdash submits"));
    }

    #[test]
    fn values_slurmdash_cannot_take_are_errors_naming_the_line() {
        let d = parse(b"#!/bin/sh\n#SBATCH -N 2-4\n").unwrap();
        let e = apply(&mut LaunchSpec::default(), &d).unwrap_err();
        assert!(e.contains("line 2") && e.contains("-N 2-4"), "{e}");
        // A typed GPU request passes as written; --gpus counts the whole job.
        let d = parse(b"#!/bin/sh\n#SBATCH --gres=gpu:a100:2 -N 2\n#SBATCH -G 3 -n 8\n").unwrap();
        let mut spec = LaunchSpec {
            gpus: 0,
            ..LaunchSpec::default()
        };
        apply(&mut spec, &d).unwrap();
        assert_eq!(spec.gpus, 3);
        assert_eq!(
            spec.extra_sbatch,
            ["--gres=gpu:a100:2", "--ntasks-per-node=4"]
        );
    }

    #[test]
    fn hostile_scripts_give_errors_not_panics() {
        use ScriptError::*;
        assert_eq!(parse(b""), Err(Empty));
        assert_eq!(parse(b"echo hi\n"), Err(NoShebang));
        assert_eq!(
            parse(b"#!/bin/sh\n#SBATCH -p a\n\xff\xfe\n"),
            Err(NotUtf8 { line: 3 })
        );
        assert_eq!(
            parse(b"#!/bin/sh\r\n#SBATCH -p a\r\n"),
            Err(DosLineBreaks { line: 1 })
        );
        assert_eq!(parse(b"#!/bin/sh\necho \0\n"), Err(Nul { line: 2 }));
        assert_eq!(
            parse(b"#!/bin/sh\n#SBATCH -p \x1b[31mred\n"),
            Err(Control {
                line: 2,
                byte: 0x1b
            })
        );
        assert_eq!(
            parse(b"#!/bin/sh\n#SBATCH --comment='open\n"),
            Err(Unterminated { line: 2 })
        );
        assert_eq!(
            parse(b"#!/bin/sh\n#SBATCH --comment\n"),
            Err(MissingValue {
                line: 2,
                option: "--comment".into()
            })
        );
        let long = format!("#!/bin/sh\n#SBATCH --comment={}\n", "x".repeat(5000));
        assert!(matches!(
            parse(long.as_bytes()),
            Err(LineTooLong { line: 2, .. })
        ));
        let huge = vec![b'#'; MAX_SCRIPT_BYTES + 1];
        assert!(matches!(parse(&huge), Err(TooLarge(_))));
        // Control bytes after the directives are the script's business.
        assert!(parse(b"#!/bin/sh\necho \x1b[1m\n").unwrap().is_empty());
        // Odd but harmless: a lone dash, a stray word, trailing backslash.
        let d = parse(b"#!/bin/sh\n#SBATCH - word \\\n").unwrap();
        let r = apply(&mut LaunchSpec::default(), &d).unwrap();
        assert_eq!(r.ignored.len(), 2, "{r:?}");
        for e in [
            Empty,
            NoShebang,
            NotUtf8 { line: 1 },
            Control { line: 1, byte: 1 },
        ] {
            assert!(!e.to_string().is_empty());
        }
    }
}
