//! Log patterns that mark a failure as infrastructure or out-of-memory. Built-in patterns
//! cover what GPU clusters print (NCCL network errors, GPU Xid and ECC errors, Slurm node
//! failures, Pyxis/Enroot image imports, OOM kills); `[triage]` in the config adds more.

use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};

/// `[triage]` in the config: extra patterns, added to the built-in ones.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TriageConfig {
    /// Regular expressions (matched case-insensitively against each log line) that mark a
    /// failed job as an infrastructure failure (ERR_INFRA).
    pub infra_patterns: Vec<String>,
    /// Regular expressions that mark a failed job as out of memory (ERR_OOM).
    pub oom_patterns: Vec<String>,
}

/// A built-in pattern and, when the generic suggestion of its class does not fit, its own.
struct Builtin {
    re: &'static str,
    hint: Option<&'static str>,
}

const ENROOT_HINT: &str = "Pyxis/Enroot could not import the image: write `machine HOST login USER password PASSWORD` to ~/.config/enroot/.credentials on the cluster (never into the job's environment), then resubmit";
const GPU_HINT: &str = "A GPU failed (hardware): resubmit; if it repeats on the same node, exclude it (--exclude=NODE) and tell the admins";
const CUDA_OOM_HINT: &str =
    "GPU memory ran out: reduce the batch or model size, or spread the work over more GPUs";

const INFRA: &[Builtin] = &[
    // NCCL transport failures: `NCCL WARN NET/IB : Got completion from peer ...`,
    // `NCCL WARN Net : Call to recv from ... failed : Broken pipe`.
    Builtin {
        re: r"NCCL WARN (NET/\S+|Net)\s*:",
        hint: None,
    },
    Builtin {
        re: r"ncclRemoteError|remote process exited or there was a network error",
        hint: None,
    },
    Builtin {
        re: r"ncclSystemError|NCCL error.*unhandled system error",
        hint: None,
    },
    // PyTorch's NCCL watchdog: a collective that never completed.
    Builtin {
        re: r"Watchdog caught collective operation timeout",
        hint: None,
    },
    Builtin {
        re: r"uncorrectable ECC",
        hint: Some(GPU_HINT),
    },
    // `NVRM: Xid (PCI:0000:3b:00): 79, ...`, `XID 48`, `Xid error`.
    Builtin {
        re: r"\bXid\b\s*(\(PCI:|\d|error)",
        hint: Some(GPU_HINT),
    },
    Builtin {
        re: r"fallen off the bus",
        hint: Some(GPU_HINT),
    },
    Builtin {
        re: r"Socket timed out on send/recv operation",
        hint: None,
    },
    // slurmstepd: `*** JOB 7 ON node1 CANCELLED AT ... DUE TO NODE FAILURE, SEE SLURMCTLD LOG ...`
    Builtin {
        re: r"DUE TO NODE FAILURE",
        hint: None,
    },
    Builtin {
        re: r"srun: error: Node failure on",
        hint: None,
    },
    // `slurmstepd: error: pyxis:     [ERROR] Could not process JSON input`: Enroot got an
    // answer it could not read, typically a registry refusing a pull without credentials.
    Builtin {
        re: r"Could not process JSON input",
        hint: Some(ENROOT_HINT),
    },
    // `slurmstepd-gpu01: error: pyxis: failed to import docker image: host:5001#team/x:1`,
    // after Enroot's log; a registry with basic auth and no credentials prints no [ERROR],
    // only `[INFO] Authenticating with user: <anonymous>` before it.
    Builtin {
        re: r"pyxis: failed to import docker image",
        hint: Some(ENROOT_HINT),
    },
    Builtin {
        re: r"pyxis:.*returned error code: 40[13]",
        hint: Some(ENROOT_HINT),
    },
];

const OOM: &[Builtin] = &[
    // `slurmstepd: error: Detected 1 oom-kill event(s) in StepId=12.batch` (older),
    // `Detected 1 oom_kill event in StepId=...` (newer), kernel `oom-kill:constraint=...`.
    Builtin {
        re: r"oom[-_]kill",
        hint: None,
    },
    // srun: `srun: error: node1: task 0: Out Of Memory`
    Builtin {
        re: r"tasks? [0-9,-]+: Out Of Memory",
        hint: None,
    },
    Builtin {
        re: r"CUDA out of memory|CUDA error: out of memory",
        hint: Some(CUDA_OOM_HINT),
    },
];

/// One pattern list, compiled: the set finds a match, the texts name it in the evidence.
#[derive(Debug, Clone)]
pub struct PatternList {
    set: RegexSet,
    texts: Vec<String>,
    hints: Vec<Option<String>>,
}

/// A log line that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMatch {
    pub pattern: String,
    pub hint: Option<String>,
    pub line: String,
}

impl PatternList {
    fn build(
        builtins: &[Builtin],
        extra: &[String],
        key: &str,
    ) -> Result<PatternList, PatternError> {
        let mut texts = Vec::new();
        let mut hints = Vec::new();
        for b in builtins {
            texts.push(b.re.to_string());
            hints.push(b.hint.map(str::to_string));
        }
        for (i, p) in extra.iter().enumerate() {
            if p.trim().is_empty() {
                return Err(PatternError {
                    key: format!("triage.{key}[{i}]"),
                    reason: "is empty (it would match every line)".into(),
                });
            }
            Regex::new(&format!("(?i){p}")).map_err(|e| PatternError {
                key: format!("triage.{key}[{i}]"),
                reason: format!("`{p}` is not a valid regular expression: {e}"),
            })?;
            texts.push(p.clone());
            hints.push(None);
        }
        let set =
            RegexSet::new(texts.iter().map(|t| format!("(?i){t}"))).map_err(|e| PatternError {
                key: format!("triage.{key}"),
                reason: e.to_string(),
            })?;
        Ok(PatternList { set, texts, hints })
    }

    /// The last line of `text` (the one nearest the failure) that matches a pattern.
    /// Lines are split at `\n` and `\r` (progress bars redraw with `\r`).
    pub fn last_match(&self, text: &str) -> Option<LineMatch> {
        for line in text.rsplit(['\n', '\r']) {
            if line.trim().is_empty() {
                continue;
            }
            if let Some(i) = self.set.matches(line).iter().next() {
                return Some(LineMatch {
                    pattern: self.texts[i].clone(),
                    hint: self.hints[i].clone(),
                    line: clean_line(line),
                });
            }
        }
        None
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// The patterns as written (built-in first), e.g. for the cluster-side retry guard.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// A log line made safe and short for one line of the screen: control characters (ANSI
/// colours included) dropped, surrounding space trimmed, at most 200 characters.
fn clean_line(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip a CSI sequence `ESC [ ... final` or a lone escape.
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        if c == '\t' {
            out.push(' ');
        } else if !c.is_control() {
            out.push(c);
        }
    }
    let t = out.trim();
    if t.chars().count() > 200 {
        format!("{}…", t.chars().take(199).collect::<String>())
    } else {
        t.to_string()
    }
}

/// A user pattern that does not compile, with the config key that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub key: String,
    pub reason: String,
}

/// The compiled infrastructure and OOM patterns.
#[derive(Debug, Clone)]
pub struct Patterns {
    pub infra: PatternList,
    pub oom: PatternList,
}

impl Patterns {
    pub fn new(cfg: &TriageConfig) -> Result<Patterns, PatternError> {
        Ok(Patterns {
            infra: PatternList::build(INFRA, &cfg.infra_patterns, "infra_patterns")?,
            oom: PatternList::build(OOM, &cfg.oom_patterns, "oom_patterns")?,
        })
    }

    /// Only the built-in patterns.
    pub fn builtin() -> Patterns {
        match Patterns::new(&TriageConfig::default()) {
            Ok(p) => p,
            // The built-in patterns are constants covered by tests.
            Err(e) => unreachable!("built-in triage pattern {}: {}", e.key, e.reason),
        }
    }
}
