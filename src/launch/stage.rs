//! Staging on the login node, one remote command per step, each a fixed script that gets
//! paths and values as separate arguments (never pasted into shell text): create the job
//! directory, write files through stdin, check input paths, submit held, create the log
//! directory and release. Secrets travel only on the SSH channel's stdin. This module
//! builds the commands and reads their answers; `io::stage` runs them.

use crate::registry::Layout;

/// The sub-directories of a job directory (TAO's layout).
pub const SUBDIRS: [&str; 5] = ["specs", "env", "meta", "sbatch", "slurm-logs"];

fn sh(script: &str, args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v = vec!["sh".to_string(), "-c".into(), script.into(), "sh".into()];
    v.extend(args);
    v
}

/// A shell function: `unsafe_dirs DIR` prints `PATH<TAB>why` for each directory on the
/// way to DIR (DIR included, both the path as given and its physical form) through which
/// another user could replace what lies below: one owned by a user other than you or root,
/// or one that its group or others may write without the sticky bit. Empty when none.
pub const UNSAFE_DIRS_SH: &str = r#"unsafe_dirs() {
  me=$(id -u)
  phys=$(cd -- "$1" 2>/dev/null && pwd -P) || phys=$1
  for start in "$1" "$phys"; do
    d=$start
    while [ -n "$d" ]; do
      if [ -L "$d" ] || [ -e "$d" ]; then
        o=$(stat -c %u -- "$d") || { printf '%s\tnot readable by stat\n' "$d"; break; }
        if [ "$o" != 0 ] && [ "$o" != "$me" ]; then
          printf '%s\towned by %s\n' "$d" "$(stat -c %U -- "$d")"
        elif [ ! -L "$d" ]; then
          m=$((0$(stat -c %a -- "$d")))
          if [ $((m & 18)) -ne 0 ] && [ $((m & 512)) -eq 0 ]; then
            printf '%s\twritable by its group or others without the sticky bit (mode %s)\n' "$d" "$(stat -c %a -- "$d")"
          fi
        fi
      fi
      [ "$d" = / ] && break
      d=$(dirname -- "$d")
    done
  done | sort -u
}
"#;

/// Exit status of [`mkdirs_argv`]'s script when a directory above the job directory is
/// not safe from other users (its stderr: `PATH<TAB>why` lines).
pub const UNSAFE_EXIT: i32 = 13;

/// Creates the job directory and its sub-directories with `mode` (e.g. 0o700: private),
/// whatever the login node's umask, after the directories above it (made 0700 when
/// missing). One that exists already (the same launch submitted again after a lost answer)
/// is kept only when it is a directory of yours, not a link, and gets `mode` again. Then
/// checks that no other user can write into any directory above it (see
/// [`UNSAFE_DIRS_SH`]): if one can, removes what it made and exits [`UNSAFE_EXIT`].
pub fn mkdirs_argv(layout: &Layout, mode: u32) -> Vec<String> {
    let subdirs = SUBDIRS.iter().map(|d| format!("{}/{d}", layout.job_dir));
    let script = format!(
        r#"{UNSAFE_DIRS_SH}mode=$1; dir=$2; shift
umask 077
mkdir -p -- "$(dirname -- "$dir")" || exit 1
for d do
  if [ -L "$d" ]; then echo "$d is a symbolic link: slurmdash does not stage through links" >&2; exit 1; fi
  [ -d "$d" ] || mkdir -m "$mode" -- "$d" || exit 1
  [ -O "$d" ] || {{ echo "$d exists and is not a directory of yours: not used" >&2; exit 1; }}
  chmod "$mode" -- "$d" || exit 1
done
bad=$(unsafe_dirs "$(dirname -- "$dir")") || bad=$(printf '%s\tcannot be checked (stat failed)' "$dir")
if [ -n "$bad" ]; then
  shift
  rmdir -- "$@" "$dir" 2>/dev/null
  printf '%s\n' "$bad" >&2
  exit {UNSAFE_EXIT}
fi"#
    );
    sh(
        &script,
        [format!("{mode:o}"), layout.job_dir.clone()]
            .into_iter()
            .chain(subdirs),
    )
}

/// The sentence for a job directory whose parents another user can write (the stderr of
/// [`mkdirs_argv`]'s script on [`UNSAFE_EXIT`]).
pub fn unsafe_refusal(job_dir: &str, stderr: &str) -> String {
    let dirs: Vec<String> = stderr
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, why)| format!("{p} is {why}"))
        .collect();
    format!(
        "not submitted: another user could replace the script in {job_dir} and run it as you: {}; fix: `chmod +t` or `chmod go-w` that directory (or ask its owner), or set [launch] results_root to a directory only you can write",
        dirs.join("; ")
    )
}

/// Writes stdin to `path` (mode 600: the job directory may be on a shared filesystem):
/// into a new temporary file beside it, renamed over `path` when whole. Never writes
/// through a link and never replaces what is not a file of yours.
pub fn write_argv(path: &str) -> Vec<String> {
    sh(
        r#"umask 077; f=$1
if [ -L "$f" ]; then echo "$f is a symbolic link: slurmdash does not write through links" >&2; exit 1; fi
if [ -e "$f" ] && { [ ! -f "$f" ] || [ ! -O "$f" ]; }; then echo "$f exists and is not a file of yours: not replaced" >&2; exit 1; fi
t=$(mktemp -- "$f.XXXXXX") || exit 1
cat > "$t" && mv -f -- "$t" "$f" || { rm -f -- "$t"; exit 1; }"#,
        [path.to_string()],
    )
}

/// Prints each path that does not exist, one per line.
pub fn missing_argv(paths: &[String]) -> Vec<String> {
    sh(
        "for p do [ -e \"$p\" ] || printf '%s\\n' \"$p\"; done",
        paths.iter().cloned(),
    )
}

/// The submission script ([`submit_script`]) reads `NAME=value` lines from stdin into its own
/// environment (shell built-ins only: no value reaches an argv), then:
/// - copies the staged script into a private temporary directory and checks the copy's
///   sha256 against the one computed on the laptop (`$4`); a changed script is refused
///   (exit 12), and so is an empty `$4` (nothing to check against). sbatch reads that checked copy on its stdin, so what runs is exactly the
///   bytes that were checked, whatever happens to the staged file meanwhile;
/// - unsets the user's `SBATCH_*` variables that would override an option the script sets
///   (see [`crate::launch::sbatch_env`]), naming each (`slurmdash-sbatch-env NAME`);
/// - looks for a job of this launch still queued or running (submitted from the job
///   directory under the launch's name, or, from older versions, from the staged script's
///   path), e.g. one whose answer was lost to a timeout or one Slurm requeued, and reports it
///   instead of submitting a second one into the same job directory;
/// - submits held with `--export=ALL` from the job directory (exit 10 when sbatch refuses),
///   creates the log directory Slurm will not create, arms the retry guard from a checked
///   copy of `sbatch/guard.sh` (sha256 `$6`), and releases (exit 11 when that is refused,
///   after cancelling the job).
///
/// Interrupted (the command timeout's SIGTERM, a hangup), it cancels the job it submitted:
/// nothing is left held or running that the caller was not told about. The last line is
/// `slurmdash-job ID new|existing SHA256`.
/// [`SUBMIT_SCRIPT_HEAD`], the user's overriding `SBATCH_*` variables unset
/// ([`crate::launch::sbatch_env::unset_sh`]), then [`SUBMIT_SCRIPT_TAIL`].
pub fn submit_script() -> String {
    format!(
        "{SUBMIT_SCRIPT_HEAD}{}{SUBMIT_SCRIPT_TAIL}",
        crate::launch::sbatch_env::unset_sh()
    )
}

pub const SUBMIT_SCRIPT_HEAD: &str = r#"script=$1; logs=$2; name=$3; want=$4; guard=${5-}; gwant=${6-}; pwant=${7-}; excl=${8-}
while IFS= read -r line; do
  case $line in *=*) export "$line" ;; esac
done
dir=${logs%/slurm-logs}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurmdash.XXXXXX") || { echo "cannot make a private temporary directory in ${TMPDIR:-/tmp}" >&2; exit 1; }
trap 'rm -rf -- "$tmp"' EXIT
cp -- "$script" "$tmp/job.sbatch" || { echo "cannot read $script" >&2; exit 1; }
sum=$(sha256sum < "$tmp/job.sbatch") || exit 1
sum=${sum%% *}
if [ -z "$want" ]; then
  echo "no sha256 of $script was recorded at launch: not submitted" >&2; exit 1
fi
if [ "$sum" != "$want" ]; then
  echo "$script changed since it was launched (sha256 $sum, recorded $want)" >&2; exit 12
fi
"#;

pub const SUBMIT_SCRIPT_TAIL: &str = r#"live() {
  q=$(squeue --me --noheader --format='%i|%T|%Z|%j|%o') || return 1
  printf '%s\n' "$q" | while IFS='|' read -r i st wd jn cmd; do
    [ "$cmd" = "$script" ] || { [ "$wd" = "$dir" ] && [ "$jn" = "$name" ]; } || continue
    case $st in COMPLETED|COMPLETING|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|SPECIAL_EXIT) ;; *) echo "$i" ;; esac
  done
}
found=$(live) || { echo "squeue failed: cannot tell whether this launch is already queued" >&2; exit 1; }
if [ -n "$found" ]; then
  id=${found%%[!0-9]*}
  mkdir -p "$logs/$name-$id"
  # A submission killed between its held sbatch and its release leaves the job held by
  # the user (reason JobHeldUser): adopting it releases it, or says what to do.
  r=$(squeue --noheader --jobs="$id" --format='%T|%r' 2>/dev/null | head -n 1)
  if [ "$r" = "PENDING|JobHeldUser" ]; then
    if e=$(scontrol release "$id" 2>&1); then echo "slurmdash-released $id"
    else echo "slurmdash-still-held $id $(printf '%s' "$e" | tr '\n' ' ' | cut -c1-300)"; fi
  fi
  echo "slurmdash-job $id existing $sum"; exit 0
fi
id=
cleanup() {
  trap - HUP INT TERM
  [ -n "$id" ] || id=$(live | head -n 1)
  if [ -n "$id" ]; then scancel "$id" && echo "interrupted: job $id cancelled" >&2; fi
  exit 1
}
trap cleanup HUP INT TERM
# A retry kept off the nodes that failed it: --exclude on the command line replaces the
# script's own, so both are given.
if [ -n "$excl" ]; then
  own=$(sed -n -e 's/^#SBATCH[[:space:]][[:space:]]*--exclude[= ][[:space:]]*\([^[:space:]]*\).*/\1/p' \
    -e 's/^#SBATCH[[:space:]][[:space:]]*-x[[:space:]]*\([^[:space:]]*\).*/\1/p' "$tmp/job.sbatch" | tr '\n' ',')
  own=${own%,}
  [ -z "$(printf '%s' "$own" | tr -d 'A-Za-z0-9_.,[]-')" ] || own=
  set -- "--exclude=$excl${own:+,$own}"
else
  set --
fi
out=$(cd -- "$dir" && sbatch --parsable --hold --export=ALL "$@" < "$tmp/job.sbatch") || exit 10
id=${out%%;*}
case $id in ''|*[!0-9]*) echo "sbatch printed: $out" >&2; id=; exit 1 ;; esac
if ! mkdir -p "$logs/$name-$id"; then
  scancel "$id"; echo "cannot create $logs/$name-$id: job $id cancelled" >&2; exit 1
fi
if [ -n "$guard" ]; then
  g=
  cp -- "$guard" "$tmp/guard.sh" && g=$(sha256sum < "$tmp/guard.sh")
  if [ "${g%% *}" = "$gwant" ]; then
    sh "$tmp/guard.sh" arm "$dir" "$id" 1 "$sum" "$gwant" 0 "$pwant" 2>"$tmp/guard.err" || echo "slurmdash-guard-failed $(tr '\n' ' ' < "$tmp/guard.err" | cut -c1-400)"
  else
    echo "$guard is not the guard slurmdash staged (sha256 ${g%% *}, expected $gwant): no guard armed" >&2
    echo "slurmdash-guard-failed"
  fi
fi
if ! scontrol release "$id"; then
  scancel "$id"; echo "job $id cancelled" >&2; exit 11
fi
trap - HUP INT TERM
echo "slurmdash-job $id new $sum""#;

pub fn submit_argv(layout: &Layout, name: &str, checksum: &str) -> Vec<String> {
    submit_argv_guarded(layout, name, checksum, None, "")
}

/// A Slurm host list as `--exclude` takes it (`gpu[01-02],cpu01`): only the characters
/// one may hold, nothing empty.
pub fn is_host_list(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.,[]-".contains(c))
}

/// With `guard` (the policy sha256, [`crate::launch::guard::policy_sha256`]), the staged
/// `sbatch/guard.sh` arms the first retry guard while the job is still held, with that
/// policy pinned on its command line (see [`crate::launch::guard`]). A non-empty `exclude`
/// (a host list, see [`is_host_list`]) keeps the job off those nodes, merged with the
/// script's own `--exclude`.
pub fn submit_argv_guarded(
    layout: &Layout,
    name: &str,
    checksum: &str,
    guard: Option<&str>,
    exclude: &str,
) -> Vec<String> {
    sh(
        &submit_script(),
        [
            layout.script_path(),
            format!("{}/slurm-logs", layout.job_dir),
            name.to_string(),
            checksum.to_string(),
            if guard.is_some() {
                crate::launch::guard::script_path(layout)
            } else {
                String::new()
            },
            if guard.is_some() {
                crate::launch::guard::guard_sha256()
            } else {
                String::new()
            },
            guard.unwrap_or_default().to_string(),
            if is_host_list(exclude) {
                exclude.to_string()
            } else {
                String::new()
            },
        ],
    )
}

/// The stdin for [`submit_script`]: one `NAME=value` line per secret.
pub fn secrets_stdin(secrets: &[(String, String)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (k, v) in secrets {
        if v.contains(['\n', '\r', '\0']) {
            return Err(format!(
                "secret {k} contains a line break, which cannot be passed to sbatch this way"
            ));
        }
        out.extend_from_slice(format!("{k}={v}\n").as_bytes());
    }
    Ok(out)
}

/// What [`submit_held`] achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub job_id: u64,
    /// The launch already had a job queued or running (nothing new was submitted).
    pub existing: bool,
    /// sha256 of the staged script that was (or is) queued.
    pub checksum: String,
    /// The retry guard armed beside it (`slurmdash-guard ID`), when one was asked for.
    pub guard: Option<u64>,
    /// Why the guard could not be armed (`slurmdash-guard-failed WHY`), when guard.sh said.
    pub guard_error: Option<String>,
    /// An adopted job (`existing`) that an interrupted submission had left held: `Ok` when
    /// it was released now, `Err(Slurm's words)` when the release was refused.
    pub released: Option<Result<(), String>>,
    /// The user's `SBATCH_*` variables that were unset so that the script's options win.
    pub unset_env: Vec<String>,
}

/// Why a submission gave no job id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmitError {
    /// The cluster answered no (sbatch refused, the script changed, a secret could not be
    /// passed): nothing of this submission is queued.
    Refused(String),
    /// The answer was lost (the connection dropped, the command timed out or was killed):
    /// the job may be queued. Submitting the same launch again adopts such a job instead
    /// of queueing a second one.
    Lost(String),
}

impl SubmitError {
    pub fn message(&self) -> &str {
        match self {
            SubmitError::Refused(m) | SubmitError::Lost(m) => m,
        }
    }
}

impl std::fmt::Display for SubmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl From<SubmitError> for String {
    fn from(e: SubmitError) -> String {
        e.message().to_string()
    }
}

/// The `slurmdash-job ID new|existing SUM` line.
pub fn parse_queued(out: &str) -> Option<Queued> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("slurmdash-job "))?;
    let mut w = line.split_whitespace().skip(1);
    let job_id: u64 = w.next()?.parse().ok()?;
    let existing = match w.next()? {
        "new" => false,
        "existing" => true,
        _ => return None,
    };
    let checksum = w.next()?.to_string();
    let guard = out
        .lines()
        .find_map(|l| l.strip_prefix("slurmdash-guard "))
        .and_then(|g| g.trim().parse().ok());
    let guard_error = out
        .lines()
        .find_map(|l| l.strip_prefix("slurmdash-guard-failed"))
        .map(|w| w.trim().trim_start_matches("guard.sh: ").to_string())
        .filter(|w| !w.is_empty());
    let released = out.lines().find_map(|l| {
        if l.strip_prefix("slurmdash-released ")?.trim() == job_id.to_string() {
            return Some(Ok(()));
        }
        None
    });
    let released = released.or_else(|| {
        out.lines().find_map(|l| {
            let rest = l.strip_prefix("slurmdash-still-held ")?;
            let (id, why) = rest.split_once(' ').unwrap_or((rest, ""));
            (id == job_id.to_string()).then(|| Err(why.trim().to_string()))
        })
    });
    Some(Queued {
        job_id,
        existing,
        checksum,
        guard,
        guard_error,
        released,
        unset_env: crate::launch::sbatch_env::unset_in(out),
    })
}

/// The sentence for a failed submission: Slurm's own words, and what to change.
pub fn refusal(code: Option<i32>, stderr: &str, script: &str) -> String {
    let words: Vec<&str> = stderr
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("sbatch: error: ")
                .trim_start_matches("Batch job submission failed: ")
        })
        .filter(|l| !l.is_empty())
        .collect();
    let said = words.join("; ");
    match code {
        Some(10) => format!(
            "sbatch refused the job: {said}; {}; nothing was queued",
            advice(&said)
        ),
        Some(11) => format!(
            "Slurm would not release the held job: {said}; {}",
            advice(&said)
        ),
        Some(12) => format!("not submitted: {said}; someone or something edited the staged script, so resubmitting it would not run what was launched (launch it again from the form or `slurmdash submit`)"),
        _ => format!(
            "submitting {script} failed ({}): {said}",
            code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"))
        ),
    }
}

/// What to change, for the refusals Slurm words in a known way.
pub fn advice(said: &str) -> &'static str {
    let s = said.to_ascii_lowercase();
    if s.contains("node configuration is not available")
        || s.contains("partition configuration not available")
    {
        "ask for fewer CPUs or GPUs or less memory per node (the request, extra sbatch options included, fits no node), or pick a partition with larger nodes"
    } else if s.contains("invalid account") {
        "pick one of your accounts (`sacctmgr show assoc user=$USER` lists them)"
    } else if s.contains("invalid qos") {
        "change or drop --qos in the extra sbatch options"
    } else if s.contains("time limit") {
        "shorten the time limit or pick a partition with a longer MaxTime"
    } else if s.contains("invalid partition") {
        "pick a partition this cluster has"
    } else if s.contains("gres") {
        "change the GPU (--gres) request, in the GPUs field or the extra sbatch options"
    } else if s.contains("qosmax") || s.contains("assocmax") || s.contains("policy") {
        "ask for less, or use another QOS or account: a limit of yours is reached"
    } else {
        "change what Slurm names and submit again"
    }
}

/// `sbatch --test-only` with the script on stdin: nothing is staged or queued.
pub fn test_only_argv() -> Vec<String> {
    vec!["sbatch".into(), "--test-only".into()]
}

/// The scheduler's answer to `--test-only`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    pub start: String,
    pub nodes: String,
    pub partition: String,
    /// The whole line sbatch printed.
    pub text: String,
}

/// `sbatch: Job 828 to start at 2026-11-23T10:54:39 using 1 processors on nodes gpu07 in
/// partition short` (on stderr).
pub fn parse_test_only(out: &str) -> Option<Estimate> {
    let line = out.lines().find(|l| l.contains(" to start at "))?;
    let after = |key: &str| {
        line.split_once(key)
            .map(|(_, r)| r.split_whitespace().next().unwrap_or("").to_string())
    };
    Some(Estimate {
        start: after(" to start at ")?,
        nodes: after(" on nodes ").unwrap_or_default(),
        partition: after(" in partition ").unwrap_or_default(),
        text: line.trim().trim_start_matches("sbatch: ").to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn test_only_reply() {
        let e = parse_test_only("sbatch: Job 828 to start at 2026-11-23T10:54:39 using 1 processors on nodes gpu07 in partition short\n").unwrap();
        assert_eq!(
            (e.start.as_str(), e.nodes.as_str(), e.partition.as_str()),
            ("2026-11-23T10:54:39", "gpu07", "short")
        );
        assert!(parse_test_only(
            "allocation failure: Requested node configuration is not available"
        )
        .is_none());
    }

    #[test]
    fn secrets_go_to_stdin_never_to_argv() {
        let layout = Layout::new("/lustre/r", "id1");
        let argv = submit_argv(&layout, "train", "ab12");
        let secrets = vec![("HF_TOKEN".to_string(), "hf_s3cr3t value'\"$x".to_string())];
        let stdin = secrets_stdin(&secrets).unwrap();
        assert!(argv.iter().all(|a| !a.contains("s3cr3t")));
        assert_eq!(stdin, b"HF_TOKEN=hf_s3cr3t value'\"$x\n");
        assert!(secrets_stdin(&[("A".into(), "x\ny".into())]).is_err());
        assert_eq!(argv[4], "/lustre/r/id1/sbatch/job_id1.sbatch");
        assert_eq!(argv[7], "ab12");
    }

    #[test]
    fn the_job_dir_gets_its_mode_whatever_the_umask() {
        let argv = mkdirs_argv(&Layout::new("/lustre/r", "id1"), 0o750);
        assert_eq!(argv[4], "750");
        assert_eq!(argv[5], "/lustre/r/id1");
        assert!(argv.contains(&"/lustre/r/id1/slurm-logs".to_string()));
    }

    #[test]
    fn the_submission_answer_and_refusals() {
        let q = parse_queued("noise\nslurmdash-job 812 existing 9f86d0\n").unwrap();
        assert_eq!(
            (q.job_id, q.existing, q.checksum.as_str()),
            (812, true, "9f86d0")
        );
        assert!(!parse_queued("slurmdash-job 9 new ab").unwrap().existing);
        assert!(parse_queued("812\n").is_none());
        let e = refusal(
            Some(11),
            "slurm_suspend error: Requested partition configuration not available now\njob 5 cancelled\n",
            "/r/s.sbatch",
        );
        assert!(e.starts_with("Slurm would not release the held job: slurm_suspend error: Requested partition configuration not available now; job 5 cancelled; ask for fewer CPUs"), "{e}");
        let e = refusal(
            Some(10),
            "sbatch: error: Batch job submission failed: Invalid qos specification\n",
            "/r/s.sbatch",
        );
        assert_eq!(e, "sbatch refused the job: Invalid qos specification; change or drop --qos in the extra sbatch options; nothing was queued");
        assert!(refusal(Some(12), "x changed since it was launched", "x")
            .contains("edited the staged script"));
    }
}
