//! Retries with the laptop closed: a small guard job beside each attempt of a launch.
//!
//! After the first attempt is queued (held), `sbatch/guard.sh arm` queues `sdguard-<name>`
//! (1 CPU, 100 MB, 10 min) with `--dependency=afternotok:<attempt>` and
//! `--kill-on-invalid-dep=yes`: it pends at no cost while the attempt runs, Slurm removes it
//! when the attempt succeeds, and only after a failure does it run. Then it classifies the
//! attempt with the dashboard's rules (sacct state and reason, the `[triage]` patterns as
//! POSIX EREs in `meta/triage-*.ere`, OOM before infrastructure), resubmits the staged
//! script on ERR_INFRA while attempts are left (checksum checked, a queued copy adopted),
//! arms the next guard, and appends each decision to `meta/chain.jsonl`. No slurmdash process
//! is needed anywhere. This module plans the files (`io::stage::guard_files` stages them),
//! reads the chain back and builds the guard-aware cancel; the script is `assets/guard.sh`.

use serde::Deserialize;

use crate::registry::Layout;
use crate::slurm::model::JobId;
use crate::triage::Patterns;

/// The fixed guard script, staged as `sbatch/guard.sh`.
pub const GUARD_SH: &str = include_str!("../../assets/guard.sh");

/// Prefix of every guard job's name.
pub const GUARD_PREFIX: &str = "sdguard-";

/// What a guarded launch needs besides its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardPlan {
    /// Attempts in all (the first plus the retries).
    pub max_attempts: u32,
    /// `[triage]` infra patterns (built-in first), as POSIX EREs.
    pub infra: Vec<String>,
    pub oom: Vec<String>,
    /// The webhook URL (`[retry] webhook` or `webhook_env`, `submit --webhook-env`): reaches the cluster only on
    /// stdin, into `meta/webhook.url` (mode 0600).
    pub webhook: Option<String>,
    /// Auto-resume after these end states (names of [`crate::launch::resume::ON`]), at
    /// most `max_resumes` times, apart from the retries.
    pub resume: Vec<String>,
    pub max_resumes: u32,
    /// `[retry] webhook_plain_http`: a plain `http://` webhook is accepted.
    pub webhook_plain_http: bool,
    /// An adopted job's own sbatch options (`slurmdash adopt`), one argument each: the
    /// guard passes them to every resubmission (`opt=` lines of `meta/guard.conf`, pinned
    /// with the policy). Empty for a launch, whose staged script carries its options.
    pub sbatch: Vec<String>,
    /// Nodes an adopted job was kept off (`--exclude`), merged by the guard with those a
    /// failed attempt ran on (`exclude=` in `meta/guard.conf`).
    pub exclude: String,
}

impl GuardPlan {
    /// The plan for a launch, or why it gets none (it then keeps the dashboard's retry).
    /// `retries`: the launch's own `retries`, else `[retry] max_retries`.
    pub fn new(
        retries: u32,
        secrets: &[String],
        patterns: &Patterns,
        webhook: Option<&str>,
    ) -> Result<GuardPlan, String> {
        GuardPlan::resuming(retries, &[], 0, secrets, patterns, webhook)
    }

    /// [`GuardPlan::new`] for a launch that also resumes after `resume` (at most
    /// `max_resumes` times): it gets a guard even with no retries.
    pub fn resuming(
        retries: u32,
        resume: &[String],
        max_resumes: u32,
        secrets: &[String],
        patterns: &Patterns,
        webhook: Option<&str>,
    ) -> Result<GuardPlan, String> {
        let resumes = !resume.is_empty() && max_resumes > 0;
        if retries == 0 && !resumes {
            return Err("retries are off for this launch".into());
        }
        if !secrets.is_empty() {
            return Err("a launch with secrets is retried by the dashboard only (a secret never touches the cluster's disk)".into());
        }
        let conv = |list: &[String]| -> Result<Vec<String>, String> {
            list.iter()
                .map(|p| to_ere(p).map_err(|e| format!("triage pattern `{p}`: {e}")))
                .collect()
        };
        Ok(GuardPlan {
            max_attempts: retries.saturating_add(1),
            infra: conv(patterns.infra.texts())?,
            oom: conv(patterns.oom.texts())?,
            webhook: webhook
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(str::to_string),
            resume: if resumes { resume.to_vec() } else { Vec::new() },
            max_resumes: if resumes { max_resumes } else { 0 },
            webhook_plain_http: false,
            sbatch: Vec::new(),
            exclude: String::new(),
        })
    }

    /// The `resume` and `max_resumes` lines of `meta/guard.conf` (none without resumes),
    /// then an adopted job's `opt=` and `exclude=` lines.
    pub fn resume_conf(&self) -> String {
        let mut s = String::new();
        if !self.resume.is_empty() {
            s = format!(
                "resume={}\nmax_resumes={}\n",
                self.resume.join(","),
                self.max_resumes
            );
        }
        for o in &self.sbatch {
            s.push_str(&format!("opt={}\n", o.replace(['\n', '\r'], " ")));
        }
        if !self.exclude.is_empty() {
            s.push_str(&format!(
                "exclude={}\n",
                self.exclude.replace(['\n', '\r'], " ")
            ));
        }
        s
    }
}

/// Hand-written POSIX EREs for the built-in patterns whose Rust form uses `\b` (no POSIX
/// equivalent); each is tested against the Rust regex on the same sample lines.
const BUILTIN_ERE: &[(&str, &str)] = &[(
    r"\bXid\b\s*(\(PCI:|\d|error)",
    r"(^|[^[:alnum:]_])Xid([[:space:]]*\(PCI:|[[:space:]]+([0-9]|error))",
)];

/// A Rust regex (as the dashboard matches it, case-insensitively) as a POSIX ERE for
/// `grep -E -i`. Handles the Perl classes (`\s \S \d \D \w \W`), escaped punctuation,
/// non-capturing groups, `(?i)` and lazy quantifiers; refuses what has no POSIX form.
pub fn to_ere(re: &str) -> Result<String, String> {
    if let Some((_, e)) = BUILTIN_ERE.iter().find(|(r, _)| *r == re) {
        return Ok((*e).to_string());
    }
    if re.contains(['\n', '\r']) {
        return Err("contains a line break".into());
    }
    let mut out = String::new();
    let cs: Vec<char> = re.chars().collect();
    let mut i = 0;
    let mut in_class = false;
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\\' => {
                let Some(&d) = cs.get(i + 1) else {
                    return Err("ends with a backslash".into());
                };
                i += 1;
                let class = match d {
                    's' => Some(("[[:space:]]", "[:space:]")),
                    'S' => Some(("[^[:space:]]", "")),
                    'd' => Some(("[0-9]", "0-9")),
                    'D' => Some(("[^0-9]", "")),
                    'w' => Some(("[[:alnum:]_]", "[:alnum:]_")),
                    'W' => Some(("[^[:alnum:]_]", "")),
                    _ => None,
                };
                if let Some((outside, inside)) = class {
                    if in_class {
                        if inside.is_empty() {
                            return Err(format!("`\\{d}` inside [...] has no POSIX form"));
                        }
                        out.push_str(inside);
                    } else {
                        out.push_str(outside);
                    }
                } else if d == 't' {
                    out.push('\t');
                } else if d.is_ascii_punctuation() {
                    if in_class {
                        if matches!(d, ']' | '\\' | '^' | '-' | '[') {
                            return Err(format!("`\\{d}` inside [...] has no simple POSIX form"));
                        }
                        out.push(d);
                    } else if ".[]()*+?{}|^$\\".contains(d) {
                        out.push('\\');
                        out.push(d);
                    } else {
                        out.push(d);
                    }
                } else {
                    return Err(format!(
                        "`\\{d}` has no POSIX ERE form (write it without it)"
                    ));
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // `[^]...` and `[]...`: a leading `]` is literal in both.
                if cs.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if cs.get(i + 1) == Some(&']') {
                    out.push(']');
                    i += 1;
                }
            }
            '[' if in_class => {
                if cs.get(i + 1) == Some(&':') {
                    // A POSIX class like [:alpha:], same in both.
                    let rest: String = cs[i..].iter().collect();
                    let Some(end) = rest.find(":]") else {
                        return Err("unclosed [: class".into());
                    };
                    out.push_str(&rest[..end + 2]);
                    i += rest[..end + 2].chars().count();
                    continue;
                }
                return Err("nested [...] has no POSIX form".into());
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '(' if !in_class && cs.get(i + 1) == Some(&'?') => {
                let rest: String = cs[i..].iter().collect();
                if rest.starts_with("(?:") {
                    out.push('(');
                    i += 3;
                    continue;
                } else if rest.starts_with("(?i)") {
                    i += 4;
                    continue;
                } else {
                    return Err(
                        "`(?...)` groups other than `(?:` and `(?i)` have no POSIX form".into(),
                    );
                }
            }
            '?' if !in_class
                && i > 0
                && matches!(cs[i - 1], '*' | '+' | '?' | '}')
                && !(i > 1 && cs[i - 2] == '\\') =>
            {
                // A lazy quantifier matches the same lines as the greedy one.
            }
            _ => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err("unclosed [".into());
    }
    if out.is_empty() {
        return Err("is empty".into());
    }
    Ok(out)
}

/// `meta/guard.conf`: `key=value` lines the guard reads as data.
pub fn conf(
    layout: &Layout,
    name: &str,
    partition: &str,
    account: Option<&str>,
    max_attempts: u32,
) -> String {
    let one = |s: &str| s.replace(['\n', '\r'], " ");
    format!(
        "local_id={}\nname={}\npartition={}\naccount={}\nlimit={max_attempts}\nscript={}\n",
        one(&layout.local_id),
        one(name),
        one(partition.split(',').next().unwrap_or(partition)),
        one(account.unwrap_or("")),
        one(&layout.script_path()),
    )
}

/// The files of a guarded launch, as `(path, content)`: `sbatch/guard.sh`, `meta/guard.conf`,
/// the two ERE files and (when there is one) `meta/webhook.url`; and the sha256 that pins
/// the policy among them (see [`policy_sha256`]).
pub fn staged_files(
    layout: &Layout,
    plan: &GuardPlan,
    name: &str,
    partition: &str,
    account: Option<&str>,
) -> Result<(Vec<(String, String)>, String), String> {
    let meta = format!("{}/meta", layout.job_dir);
    let lines = |v: &[String]| {
        let mut s = v.join("\n");
        s.push('\n');
        s
    };
    let conf = conf(layout, name, partition, account, plan.max_attempts) + &plan.resume_conf();
    let (oom, infra) = (lines(&plan.oom), lines(&plan.infra));
    let policy = policy_sha256(&conf, &oom, &infra);
    let mut files = vec![
        (script_path(layout), GUARD_SH.to_string()),
        (format!("{meta}/guard.conf"), conf),
        (format!("{meta}/triage-infra.ere"), infra),
        (format!("{meta}/triage-oom.ere"), oom),
    ];
    if let Some(w) = &plan.webhook {
        files.push((
            format!("{meta}/webhook.url"),
            webhook_file_with(w, plan.webhook_plain_http)?,
        ));
    }
    Ok((files, policy))
}

/// What pins a guard's policy on its command line (where the job, which can write its own
/// job directory, cannot change it): the sha256 of the three `sha256sum` lines of
/// `meta/guard.conf`, `meta/triage-oom.ere` and `meta/triage-infra.ere`, as `guard.sh`
/// computes it from its private copies.
pub fn policy_sha256(conf: &str, oom: &str, infra: &str) -> String {
    let lines: String = [conf, oom, infra]
        .iter()
        .map(|c| format!("{}  -\n", crate::launch::script::sha256_hex(c.as_bytes())))
        .collect();
    crate::launch::script::sha256_hex(lines.as_bytes())
}

/// `meta/webhook.url`: the URL alone on one line, a data file the guard validates and
/// hands to curl on curl's stdin (never a curl config file that could name files to read
/// or write, never in a command line). Only the characters a URL may hold are accepted.
///
/// Only `https://`: the URL's token and the posted evidence (lines of the job's output)
/// would cross the network in clear text over `http://`. Plain `http://` is accepted only
/// for the node itself (`localhost`, `127.0.0.1`, `[::1]`: a relay running on the node),
/// where nothing leaves the machine, or with `[retry] webhook_plain_http = true`
/// ([`webhook_file_with`]).
pub fn webhook_file(url: &str) -> Result<String, String> {
    webhook_file_with(url, false)
}

/// [`webhook_file`], accepting any `http://` URL when `plain_http`.
pub fn webhook_file_with(url: &str, plain_http: bool) -> Result<String, String> {
    let u = url.trim();
    let http_ok = is_loopback_http(u) || (plain_http && u.starts_with("http://"));
    if !(u.starts_with("https://") || http_ok) {
        return Err(if u.starts_with("http://") {
            format!(
                "webhook `{}` is plain http: its token and the posted job output would cross the network unencrypted; use an https:// URL (http:// only to localhost, 127.0.0.1 or [::1], or anywhere with [retry] webhook_plain_http = true)",
                redact(u)
            )
        } else {
            format!("webhook must be an https:// URL, not `{}`", redact(u))
        });
    }
    if let Some(c) = u.chars().find(|c| !is_url_char(*c)) {
        return Err(format!(
            "webhook URL contains {c:?}, which a URL cannot hold (percent-encode it)"
        ));
    }
    Ok(format!("{u}\n"))
}

/// `http://` to the node itself: `localhost`, `127.0.0.1` or `[::1]`, then a port, path,
/// query or the end (so `http://localhost.evil.example` is not one).
fn is_loopback_http(u: &str) -> bool {
    ["http://localhost", "http://127.0.0.1", "http://[::1]"]
        .iter()
        .any(|p| {
            u.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/', '?', '#']))
        })
}

/// RFC 3986's unreserved, reserved and `%` characters: what `guard.sh` accepts in a URL.
fn is_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c)
}

/// sha256 (hex) of [`GUARD_SH`]: what the submission and every guard check the staged
/// copy against before running or queueing it.
pub fn guard_sha256() -> String {
    crate::launch::script::sha256_hex(GUARD_SH.as_bytes())
}

/// A URL with its path and query hidden (they often hold a token), for messages.
pub fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?']).next().unwrap_or("");
            let host = host.rsplit('@').next().unwrap_or(host);
            format!("{scheme}://{host}/…")
        }
        None => "…".into(),
    }
}

pub fn script_path(layout: &Layout) -> String {
    format!("{}/sbatch/guard.sh", layout.job_dir)
}

pub fn chain_path(job_dir: &str) -> String {
    format!("{}/meta/chain.jsonl", job_dir.trim_end_matches('/'))
}

/// One line of `meta/chain.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(default)]
pub struct ChainLine {
    pub time: String,
    /// `armed` (a guard was queued for `job`) or `decision`.
    pub event: String,
    /// The attempt's Slurm job id.
    pub job: String,
    pub attempt: u32,
    pub guard: Option<String>,
    pub state: Option<String>,
    pub class: Option<String>,
    pub evidence: Option<String>,
    pub decision: Option<String>,
    /// The next attempt's job id, for `retried as N`.
    pub next: Option<String>,
}

impl ChainLine {
    pub fn job_id(&self) -> Option<u64> {
        self.job.parse().ok()
    }
    pub fn next_id(&self) -> Option<u64> {
        self.next.as_deref().and_then(|n| n.parse().ok())
    }
    pub fn is_decision(&self) -> bool {
        self.event == "decision" && self.decision.is_some()
    }
    /// For the detail pane: `attempt 1 (job 812): retried as 813 · ERR_INFRA: main.err: …`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "attempt {} (job {}): {}",
            self.attempt,
            self.job,
            self.decision.as_deref().unwrap_or("?")
        );
        if let (Some(c), Some(e)) = (&self.class, &self.evidence) {
            if !c.is_empty() && !self.decision.as_deref().unwrap_or("").contains(e.as_str()) {
                s.push_str(&format!(" · {c}: {e}"));
            }
        }
        s
    }
}

/// Every readable line of a chain file (a torn or foreign line is skipped).
pub fn parse_chain(text: &str) -> Vec<ChainLine> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| serde_json::from_str::<ChainLine>(l).ok())
        .collect()
}

/// Prints each chain file framed by `==> PATH` (a JSON line never starts with `=`); one
/// remote command for every guarded launch.
pub const READ_CHAINS: &str =
    "for f do printf '==> %s\\n' \"$f\"; tail -n 200 -- \"$f\" 2>/dev/null; done; exit 0";

pub fn read_chains_argv(job_dirs: &[String]) -> Vec<String> {
    let mut v = vec![
        "sh".to_string(),
        "-c".into(),
        READ_CHAINS.into(),
        "sh".into(),
    ];
    v.extend(job_dirs.iter().map(|d| chain_path(d)));
    v
}

/// The output of [`READ_CHAINS`], per chain path.
pub fn split_chains(out: &str) -> Vec<(String, Vec<ChainLine>)> {
    let mut res: Vec<(String, String)> = Vec::new();
    for line in out.split_inclusive('\n') {
        if let Some(p) = line.strip_prefix("==> ") {
            res.push((p.trim_end_matches('\n').to_string(), String::new()));
        } else if let Some((_, t)) = res.last_mut() {
            t.push_str(line);
        }
    }
    res.into_iter().map(|(p, t)| (p, parse_chain(&t))).collect()
}

/// Cancels the guards of the given jobs first (found by name and dependency in one
/// squeue), records `cancelled` in each launch's chain, then runs scancel on the jobs
/// themselves as `command::scancel` does (its stderr and exit status are the command's).
///
/// A guard runs in its launch's job directory (`--chdir`), which is where its chain is;
/// guards queued by older versions are known by their command, `JOB_DIR/sbatch/guard.sh`.
/// The job id is matched as data only (quoted shell patterns), never put in a regex or a
/// program's text.
pub const CANCEL_SCRIPT: &str = r#"q=$(squeue --me --noheader --format='%i|%j|%E|%Z|%o' 2>/dev/null)
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for id do
  case $id in -*) continue ;; esac
  printf '%s\n' "$q" | while IFS='|' read -r gi gn dep wd cmd; do
    case $gn in sdguard-*) ;; *) continue ;; esac
    case $dep in *"afternotok:$id("*|*"afternotok:$id") ;; *) continue ;; esac
    if scancel "$gi" 2>/dev/null; then
      case $cmd in */sbatch/guard.sh) d=${cmd%/sbatch/guard.sh} ;; *) d=$wd ;; esac
      case $d in /*)
        n=
        while IFS= read -r l; do
          case $l in *"\"event\":\"armed\",\"job\":\"$id\",\"attempt\":"[0-9]*)
            a=${l#*"\"event\":\"armed\",\"job\":\"$id\",\"attempt\":"}; n=${a%%[!0-9]*} ;;
          esac
        done < "$d/meta/chain.jsonl" 2>/dev/null
        ( umask 077; printf '{"time":"%s","event":"decision","job":"%s","attempt":%s,"state":"CANCELLED","class":"ERR_CANCELLED","evidence":"cancelled from slurmdash","decision":"cancelled"}\n' "$now" "$id" "${n:-0}" >> "$d/meta/chain.jsonl" ) 2>/dev/null ;;
      esac
    fi
  done
done
exec scancel "$@""#;

/// `command::scancel`, guards first.
pub fn cancel_argv(ids: &[JobId]) -> Vec<String> {
    let mut v = vec![
        "sh".to_string(),
        "-c".into(),
        CANCEL_SCRIPT.into(),
        "sh".into(),
    ];
    v.extend(crate::slurm::command::scancel(ids).into_iter().skip(1));
    v
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
