//! `slurmdash adopt ID`: a job the user submitted elsewhere (plain `sbatch` in a terminal)
//! put under the care a launch gets. Pure: the remote commands, reading their answers, and
//! deciding from `scontrol show job` whether the job can be adopted and how the guard would
//! submit Slurm's own copy of its batch script again (the options it passes, and what a
//! resubmission cannot reproduce, said to the user). `io::adopt` runs it.

use crate::slurm::model::JobDetail;
use crate::slurm::model::JobState;

/// Marks the sections of [`probe_argv`]'s output.
const SHOW: &str = "--slurmdash-adopt-show--";
const GUARDS: &str = "--slurmdash-adopt-guards--";

/// Prints the login user's uid, `scontrol show job ID` and the user's queued guard jobs
/// (`id|name|dependency`), in marked sections; exit 3 when Slurm does not know the job.
pub fn probe_argv(id: u64) -> Vec<String> {
    let script = format!(
        r#"id -u || exit 1
echo '{SHOW}'
scontrol show job "$1" || exit 3
echo '{GUARDS}'
squeue --me --noheader --format='%i|%j|%E' 2>/dev/null
exit 0"#
    );
    vec![
        "sh".into(),
        "-c".into(),
        script,
        "sh".into(),
        id.to_string(),
    ]
}

/// Slurm's copy of the job's batch script, on stdout (Slurm 22.05 and later accept `-`).
pub fn batch_script_argv(id: u64) -> Vec<String> {
    vec![
        "scontrol".into(),
        "write".into(),
        "batch_script".into(),
        id.to_string(),
        "-".into(),
    ]
}

/// What [`probe_argv`] printed.
#[derive(Debug, Clone)]
pub struct Probe {
    pub uid: u32,
    pub job: JobDetail,
    /// Guard jobs of the user's: (guard id, the job id it waits on with `afternotok`).
    pub guards: Vec<(u64, u64)>,
}

pub fn parse_probe(out: &str) -> Result<Probe, String> {
    let (head, rest) = out
        .split_once(SHOW)
        .ok_or_else(|| format!("no answer from `id -u` and scontrol: {}", out.trim()))?;
    let uid = head
        .lines()
        .rev()
        .find_map(|l| l.trim().parse::<u32>().ok())
        .ok_or_else(|| format!("`id -u` printed no uid: {}", head.trim()))?;
    let (show, guards) = rest.split_once(GUARDS).unwrap_or((rest, ""));
    let jobs = crate::slurm::parse::scontrol::parse_scontrol_jobs(show.trim_start_matches('\n'))
        .map_err(|e| e.to_string())?;
    let job = jobs
        .into_iter()
        .next()
        .ok_or_else(|| "scontrol showed no job".to_string())?;
    let guards = guards
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '|');
            let id = f.next()?.trim().parse::<u64>().ok()?;
            let name = f.next()?;
            let dep = f.next()?;
            if !name.starts_with(crate::launch::guard::GUARD_PREFIX) {
                return None;
            }
            let on = dep.split("afternotok:").nth(1)?;
            let digits: String = on.chars().take_while(char::is_ascii_digit).collect();
            Some((id, digits.parse().ok()?))
        })
        .collect();
    Ok(Probe { uid, job, guards })
}

/// A job that can be adopted, and how the guard would resubmit it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adoptable {
    pub id: u64,
    /// The job's name as Slurm has it.
    pub name: String,
    /// The name in the job directory's layout (`slurm-logs/<dir_name>-<id>`, `sdguard-…`).
    pub dir_name: String,
    pub state: String,
    pub partition: String,
    pub account: Option<String>,
    /// sbatch options that submit the script again as it was submitted.
    pub sbatch: Vec<String>,
    /// `--exclude` of the job (merged by the guard with the nodes of a failed attempt).
    pub exclude: String,
    /// What a resubmission cannot reproduce, one sentence each.
    pub left_out: Vec<String>,
    /// Where Slurm writes this attempt's output and error (an empty StdErr: with the output).
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// Slurm requeues it itself after a node failure (`Requeue=1`).
    pub requeue: bool,
}

/// `scontrol show job` values meaning "none".
fn set(v: Option<&str>) -> Option<&str> {
    v.map(str::trim)
        .filter(|v| !matches!(*v, "" | "(null)" | "N/A" | "None" | "n/a" | "0"))
}

/// A job id as the user typed it: digits only (an array task or het component is refused).
pub fn parse_id(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() {
        return t.parse().map_err(|_| format!("job id `{t}` is too large"));
    }
    Err(format!(
        "`{t}` is not a job id such as 123456 (array tasks and heterogeneous jobs are not adopted)"
    ))
}

/// `name` in what a launch's name may hold: letters, digits, `.`, `_` and `-` (any other
/// character becomes `-`), at most 64 of them.
pub fn name_chars(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .take(64)
        .collect()
}

/// The name in the job directory's layout: what a launch's name may hold.
pub fn dir_name(name: &str) -> String {
    let s = name_chars(name).trim_start_matches(['.', '-']).to_string();
    if s.is_empty() {
        "job".into()
    } else {
        s
    }
}

/// `--FLAG=VALUE` when the value is set.
fn opt(o: &mut Vec<String>, flag: &str, v: Option<&str>) {
    if let Some(v) = set(v) {
        o.push(format!("--{flag}={v}"));
    }
}

/// Whether job `id` (of `probe`) can be adopted by the login user, and how. `results_root`:
/// the cluster's job directories (a job running in one was launched by slurmdash).
pub fn check(id: u64, probe: &Probe, results_root: &str) -> Result<Adoptable, String> {
    let j = &probe.job;
    let get = |k: &str| {
        j.fields
            .iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.as_str())
    };
    let state = j
        .state
        .as_ref()
        .map(|s| s.long_name().to_string())
        .unwrap_or_else(|| "UNKNOWN".into());
    match j.uid {
        Some(u) if u == probe.uid => {}
        Some(u) => {
            return Err(format!(
                "job {id} belongs to {} (uid {u}), not to you (uid {}): slurmdash adopts only your own jobs",
                j.user.as_deref().unwrap_or("another user"),
                probe.uid
            ))
        }
        None => return Err(format!("scontrol does not say whose job {id} is: not adopted")),
    }
    if j.array_job_id.is_some() {
        return Err(format!(
            "job {id} is part of job array {}: the guard follows single jobs (`slurmdash rerun ID --failed` reruns an array's failed tasks)",
            j.array_job_id.unwrap_or(id)
        ));
    }
    if j.het_job_id.is_some() {
        return Err(format!("job {id} is a heterogeneous job: not adopted"));
    }
    if !matches!(
        j.state,
        Some(JobState::Pending) | Some(JobState::Running) | Some(JobState::Configuring)
    ) {
        return Err(format!(
            "job {id} is {state}: only a running or pending job can be adopted"
        ));
    }
    if get("BatchFlag").map(str::trim) == Some("0") {
        return Err(format!(
            "job {id} has no batch script (an salloc or srun job): there is nothing to submit again"
        ));
    }
    if j.name.starts_with(crate::launch::guard::GUARD_PREFIX) {
        return Err(format!(
            "job {id} is a slurmdash retry guard, not a job to adopt"
        ));
    }
    if let Some((g, _)) = probe.guards.iter().find(|(_, on)| *on == id) {
        return Err(format!(
            "job {id} is already under slurmdash's care: guard job {g} waits on it; nothing done"
        ));
    }
    let root = format!("{}/", results_root.trim_end_matches('/'));
    if let Some(wd) = j.work_dir.as_deref().filter(|w| w.starts_with(&root)) {
        return Err(format!(
            "job {id} was launched by slurmdash (it runs in its job directory {wd}): nothing done"
        ));
    }
    let mut o: Vec<String> = Vec::new();
    let mut left: Vec<String> = Vec::new();
    opt(&mut o, "job-name", Some(j.name.as_str()));
    let partition = j.partition.clone().unwrap_or_default();
    opt(&mut o, "partition", Some(partition.as_str()));
    opt(&mut o, "account", j.account.as_deref());
    opt(&mut o, "qos", j.qos.as_deref());
    if let Some(t) =
        set(get("TimeLimit")).filter(|t| !matches!(*t, "UNLIMITED" | "Partition_Limit"))
    {
        opt(&mut o, "time", Some(t));
    }
    opt(&mut o, "time-min", get("TimeMin"));
    if let Some(n) = set(get("NumNodes")) {
        let n = match n.split_once('-') {
            Some((a, b)) if a == b => a,
            _ => n,
        };
        if n.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            opt(&mut o, "nodes", Some(n));
        }
    }
    if let Some(n) = set(get("NumTasks")).filter(|n| n.bytes().all(|b| b.is_ascii_digit())) {
        opt(&mut o, "ntasks", Some(n));
    }
    if let Some(n) = set(get("CPUs/Task")).filter(|n| n.bytes().all(|b| b.is_ascii_digit())) {
        opt(&mut o, "cpus-per-task", Some(n));
    }
    if let Some(n) = get("NtasksPerN:B:S:C")
        .and_then(|v| v.split(':').next())
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()) && *n != "0")
    {
        opt(&mut o, "ntasks-per-node", Some(n));
    }
    if let Some(m) = get("MinMemoryNode") {
        o.push(format!("--mem={}", m.trim()));
    } else if let Some(m) = get("MinMemoryCPU") {
        o.push(format!("--mem-per-cpu={}", m.trim()));
    }
    opt(&mut o, "tmp", get("MinTmpDiskNode"));
    let gres = |v: &str| -> Vec<String> {
        v.split(',')
            .map(|g| {
                g.trim()
                    .trim_start_matches("gres:")
                    .trim_start_matches("gres/")
                    .to_string()
            })
            .filter(|g| !g.is_empty())
            .collect()
    };
    if let Some(t) = set(get("TresPerNode")) {
        opt(&mut o, "gres", Some(gres(t).join(",").as_str()));
    }
    for (key, flag) in [
        ("TresPerJob", "gpus"),
        ("TresPerTask", "gpus-per-task"),
        ("TresPerSocket", "gpus-per-socket"),
    ] {
        let Some(t) = set(get(key)) else { continue };
        for g in gres(t) {
            if let Some(n) = g.strip_prefix("gpu:").or_else(|| g.strip_prefix("gpu=")) {
                opt(&mut o, flag, Some(n));
            } else if !g.starts_with("cpu=") {
                left.push(format!("{key}={g}: not passed again"));
            }
        }
    }
    opt(&mut o, "chdir", j.work_dir.as_deref());
    opt(&mut o, "nodelist", get("ReqNodeList"));
    opt(&mut o, "constraint", get("Features"));
    opt(&mut o, "licenses", get("Licenses"));
    opt(&mut o, "reservation", get("Reservation"));
    opt(&mut o, "nice", get("Nice"));
    opt(&mut o, "comment", get("Comment"));
    if let Some(t) = set(get("MailType")).filter(|t| *t != "NONE") {
        opt(&mut o, "mail-type", Some(t));
        opt(&mut o, "mail-user", get("MailUser"));
    }
    if let Some(i) = set(j.stdin.as_deref()).filter(|i| *i != "/dev/null") {
        opt(&mut o, "input", Some(i));
    }
    if get("Contiguous").map(str::trim) == Some("1") {
        o.push("--contiguous".into());
    }
    match (
        get("Exclusive").map(str::trim),
        get("OverSubscribe").map(str::trim),
    ) {
        (Some("YES"), _) | (None, Some("NO")) => o.push("--exclusive".into()),
        (Some("USER"), _) => o.push("--exclusive=user".into()),
        (Some("MCS"), _) => o.push("--exclusive=mcs".into()),
        (_, Some("YES")) => o.push("--oversubscribe".into()),
        _ => {}
    }
    if get("Reboot").map(str::trim) == Some("1") {
        o.push("--reboot".into());
    }
    let requeue = j.requeue.unwrap_or(false);
    o.push(if requeue { "--requeue" } else { "--no-requeue" }.into());
    let exclude = set(get("ExcNodeList"))
        .filter(|x| crate::launch::stage::is_host_list(x))
        .unwrap_or("")
        .to_string();
    if let Some(d) = set(j.dependency.as_deref()) {
        left.push(format!(
            "dependency {d}: not repeated (it named jobs of this submission's time)"
        ));
    }
    if let Some(d) = set(get("Deadline")) {
        left.push(format!("deadline {d}: not repeated"));
    }
    if let Some(b) = set(get("BeginTime")).filter(|_| j.state == Some(JobState::Pending)) {
        left.push(format!("begin time {b}: not repeated"));
    }
    let shown_out = set(j.stdout.as_deref()).map(str::to_string);
    let shown_err = set(j.stderr.as_deref()).map(str::to_string);
    left.push(format!(
        "output: this attempt writes to {}; a resubmission writes to slurm-logs/{}-<job id>/main.out and main.err in the job directory",
        match (&shown_out, &shown_err) {
            (Some(a), Some(b)) if a != b => format!("{a} and {b}"),
            (Some(a), _) => a.clone(),
            _ => "where Slurm was told".into(),
        },
        dir_name(&j.name)
    ));
    left.push("environment: this attempt has the environment sbatch was run in; a resubmission gets the login environment of the guard (--export=ALL)".into());
    left.push("options that `scontrol show job` does not show (e.g. --signal, --open-mode, --export=…) unless the script's own #SBATCH lines hold them".into());
    Ok(Adoptable {
        id,
        name: j.name.clone(),
        dir_name: dir_name(&j.name),
        state,
        partition,
        account: j.account.clone(),
        sbatch: o,
        exclude,
        left_out: left,
        stdout: shown_out,
        stderr: shown_err,
        requeue,
    })
}

/// The options of a resubmission that write into the job directory's layout.
pub fn output_opts(job_dir: &str, dir_name: &str) -> [String; 2] {
    let d = format!("{job_dir}/slurm-logs/{dir_name}-%j");
    [
        format!("--output={d}/main.out"),
        format!("--error={d}/main.err"),
    ]
}

/// Checks Slurm's copy of the script, copies a checked guard into a private directory and
/// arms it beside the running job, after linking the attempt's output into the layout:
/// `$1` job dir, `$2` job id, `$3` sha256 of the staged script, `$4` the guard's sha256,
/// `$5` policy sha256, `$6` staged script, `$7` layout name, `$8` stdout, `$9` stderr (either
/// may be empty). Prints guard.sh's `slurmdash-guard ID`; exit 12 when the staged script
/// is not what was checked, 14 when the guard is not.
pub const ARM_SCRIPT: &str = r#"dir=$1; id=$2; sum=$3; gwant=$4; pwant=$5; script=$6; name=$7; out=${8-}; err=${9-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurmdash.XXXXXX") || { echo "cannot make a private temporary directory" >&2; exit 1; }
trap 'rm -rf -- "$tmp"' EXIT
cp -- "$script" "$tmp/job.sbatch" || exit 1
s=$(sha256sum < "$tmp/job.sbatch") || exit 1
[ "${s%% *}" = "$sum" ] || { echo "$script changed since it was staged (sha256 ${s%% *}, recorded $sum)" >&2; exit 12; }
cp -- "$dir/sbatch/guard.sh" "$tmp/guard.sh" || exit 1
g=$(sha256sum < "$tmp/guard.sh") || exit 1
[ "${g%% *}" = "$gwant" ] || { echo "$dir/sbatch/guard.sh is not the guard slurmdash staged" >&2; exit 14; }
logs=$dir/slurm-logs/$name-$id
mkdir -p -- "$logs" || exit 1
case $out in /*) ln -s -- "$out" "$logs/main.out" 2>/dev/null ;; esac
case $err in /*) [ "$err" = "$out" ] || ln -s -- "$err" "$logs/main.err" 2>/dev/null ;; esac
exec sh "$tmp/guard.sh" arm "$dir" "$id" 1 "$sum" "$gwant" 0 "$pwant""#;

pub fn arm_argv(
    job_dir: &str,
    id: u64,
    sum: &str,
    policy: &str,
    script: &str,
    a: &Adoptable,
) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        ARM_SCRIPT.into(),
        "sh".into(),
        job_dir.into(),
        id.to_string(),
        sum.into(),
        crate::launch::guard::guard_sha256(),
        policy.into(),
        script.into(),
        a.dir_name.clone(),
        a.stdout.clone().unwrap_or_default(),
        a.stderr.clone().unwrap_or_default(),
    ]
}

/// The guard id in [`ARM_SCRIPT`]'s output.
pub fn parse_armed(out: &str) -> Option<u64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("slurmdash-guard "))
        .and_then(|g| g.trim().parse().ok())
}

#[cfg(test)]
#[path = "adopt_tests.rs"]
mod tests;
