//! Argv builders. Each returns the program and its arguments as separate
//! strings, never a shell line; the transport escapes them.

use chrono::NaiveDateTime;

use super::jobid::JobId;
use super::state::JobState;
use super::time::{Edge, SlurmDuration};

/// Between fields. A control character: it cannot be typed into a job name
/// through any normal path and squeue/sinfo/sacct print it verbatim.
pub const FIELD_SEP: char = '\x1f';
/// Ends every squeue record, so a record can be told apart from a newline
/// inside a job name.
pub const RECORD_END: char = '\x1e';

/// squeue `--Format` fields, in order. The free text (work dir, name) comes last, the job id
/// between them and again at the end: a record is `ID␟…␟ID`, so a separator, terminator
/// or newline inside a name or path cannot spoil another record (`parse::frame`).
/// `JobArrayId` is `-o`'s `%i` (`7_3`, `7_[4-9]`, `8+1`; `JobId` would be `%A`), and the
/// fields from `ArrayJobId` on print what `%F %K %u %a %P %T %r %M %l %D %C %m %b %N %V %S
/// %q %Q %E %Z %j` print, byte for byte (compared on 22.05, 24.11 and 26.05). `Dependency`
/// (`%E`, as `scontrol` prints it) costs no RPC: squeue formats it from the job records the
/// one RPC already returns.
///
/// `tres-alloc` has no `-o` letter: the TRES a running job holds or a pending job asks for,
/// GPUs in all (`gres/gpu=3` for `--gpus-per-task=1 -n 3`) whether `--gres`, `--gpus`,
/// `--gpus-per-node` or `--gpus-per-task` asked; `tres-per-node` (`%b`) misses the last
/// three. It is second so that a record of the older `-o` format, whose second field is
/// `%F` (digits), is told apart from this one (`parse::squeue`).
pub const SQUEUE_FIELDS: &[&str] = &[
    "JobArrayId",
    "tres-alloc",
    "ArrayJobId",
    "ArrayTaskId",
    "UserName",
    "Account",
    "Partition",
    "State",
    "Reason",
    "TimeUsed",
    "TimeLimit",
    "NumNodes",
    "NumCPUs",
    "MinMemory",
    "tres-per-node",
    "NodeList",
    "SubmitTime",
    "StartTime",
    "QOS",
    "PriorityLong",
    "Dependency",
    "WorkDir",
    "JobArrayId",
    "Name",
    "JobArrayId",
];

/// As [`SQUEUE_FIELDS`]: the name last, closed by the job id.
pub const SQUEUE_START_FIELDS: &[&str] =
    &["%i", "%P", "%u", "%T", "%S", "%D", "%Y", "%r", "%j", "%i"];

pub const SACCT_FIELDS: &[&str] = &[
    "JobID",
    "JobIDRaw",
    "User",
    "UID",
    "Account",
    "Partition",
    "QOS",
    "State",
    "Reason",
    "ExitCode",
    "DerivedExitCode",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Elapsed",
    "Timelimit",
    "Priority",
    "NNodes",
    "NCPUS",
    "NodeList",
    "ReqTRES",
    "AllocTRES",
    "ReqMem",
    "WorkDir",
    "JobID",
    "JobName",
    "JobID",
];

pub const SINFO_FIELDS: &[&str] = &[
    "Partition",
    "Available",
    "Time",
    "Nodes",
    "StateLong",
    "CPUsState",
    "Gres",
    "GresUsed",
    "NodeList",
];

pub const SPRIO_FIELDS: &[&str] = &[
    "%i", "%r", "%u", "%Y", "%A", "%F", "%J", "%P", "%Q", "%N", "%T",
];

pub const SSHARE_FIELDS: &[&str] = &[
    "Account",
    "User",
    "RawShares",
    "NormShares",
    "RawUsage",
    "EffectvUsage",
    "FairShare",
];

pub(crate) fn percent_format(fields: &[&str]) -> String {
    let mut f = fields.join(&FIELD_SEP.to_string());
    f.push(RECORD_END);
    f
}

/// A `--Format` (`-O`) of `fields`: each unpadded and uncut (size 0), followed by
/// [`FIELD_SEP`], the last by [`RECORD_END`].
pub(crate) fn long_format(fields: &[&str]) -> String {
    let last = fields.len().saturating_sub(1);
    let parts: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let end = if i == last { RECORD_END } else { FIELD_SEP };
            format!("{f}:0{end}")
        })
        .collect();
    parts.join(",")
}

pub fn squeue_format() -> String {
    long_format(SQUEUE_FIELDS)
}

/// Whose jobs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    #[default]
    Me,
    User(String),
    /// Every user, hidden partitions included.
    All,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SqueueQuery {
    pub scope: Scope,
    pub partitions: Vec<String>,
    pub accounts: Vec<String>,
    pub states: Vec<JobState>,
    pub jobs: Vec<JobId>,
    /// `-r`: one row per array task instead of collapsed pending arrays.
    pub expand_arrays: bool,
}

fn scope_args(args: &mut Vec<String>, scope: &Scope) {
    match scope {
        Scope::Me => args.push("--me".into()),
        Scope::User(u) => args.push(format!("--user={u}")),
        Scope::All => args.push("--all".into()),
    }
}

fn filters(args: &mut Vec<String>, q: &SqueueQuery) {
    scope_args(args, &q.scope);
    if !q.partitions.is_empty() {
        args.push(format!("--partition={}", q.partitions.join(",")));
    }
    if !q.accounts.is_empty() {
        args.push(format!("--account={}", q.accounts.join(",")));
    }
    if !q.states.is_empty() {
        let s: Vec<&str> = q.states.iter().map(JobState::long_name).collect();
        args.push(format!("--states={}", s.join(",")));
    }
    if !q.jobs.is_empty() {
        args.push(format!("--jobs={}", join_ids(&q.jobs)));
    }
    if q.expand_arrays {
        args.push("--array".into());
    }
}

fn join_ids(ids: &[JobId]) -> String {
    ids.iter().map(JobId::as_str).collect::<Vec<_>>().join(",")
}

/// The poll: one squeue, parsed by `parse::squeue::parse_squeue`. `--local` spares
/// slurmctld the federation-info RPC (two RPCs instead of three); `StartTime` (`%S`) is the
/// scheduler's start estimate of a pending job, so no separate `squeue --start` is needed.
pub fn squeue(q: &SqueueQuery) -> Vec<String> {
    let mut args = vec!["squeue".to_string(), "--noheader".into(), "--local".into()];
    filters(&mut args, q);
    args.push(format!("--Format={}", squeue_format()));
    args
}

/// Start estimates of pending jobs with the nodes the scheduler expects (`%Y`); parsed by
/// `parse::squeue::parse_squeue_start`. The refresh does not run it (see [`squeue`]).
pub fn squeue_start(q: &SqueueQuery) -> Vec<String> {
    let mut args = vec!["squeue".to_string(), "--noheader".into(), "--start".into()];
    filters(&mut args, q);
    args.push(format!("--format={}", percent_format(SQUEUE_START_FIELDS)));
    args
}

fn sacct_base() -> Vec<String> {
    sacct_fields(SACCT_FIELDS)
}

/// `sacct` of the jobs' allocations (no steps), `fields` separated by [`FIELD_SEP`], no header.
pub fn sacct_fields(fields: &[&str]) -> Vec<String> {
    vec![
        "sacct".to_string(),
        "--noheader".into(),
        "--parsable2".into(),
        format!("--delimiter={FIELD_SEP}"),
        "--allocations".into(),
        format!("--format={}", fields.join(",")),
    ]
}

/// How far back sacct looks for jobs slurmdash saw in the queue or launched: 60 days. A job
/// older than that is looked up again with the whole history ([`since_ever`]) where one is wanted.
pub const RECENT: Edge = Edge::Ago(RECENT_SECS);
const RECENT_SECS: i64 = 60 * 86_400;

/// The whole accounting history: only for a job that [`RECENT`] did not find.
pub fn since_ever() -> Edge {
    Edge::At(
        chrono::NaiveDate::from_ymd_opt(1970, 1, 2)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .unwrap_or_default(),
    )
}

/// For launches made `oldest_secs` ago (the laptop's record; its clock may be off by a day
/// against the cluster's): [`RECENT`], or further back for an older launch.
pub fn since_launched(oldest_secs: i64) -> Edge {
    Edge::Ago(RECENT_SECS.max(oldest_secs.saturating_add(86_400)))
}

/// Accounting records for these jobs (finished ones included), among the jobs eligible or
/// running since `since`. A start is always given: with `--jobs` and no `--starttime`,
/// sacct searches from 1970, which is slow for slurmdbd on a large site.
pub fn sacct_jobs(ids: &[JobId], since: Edge) -> Vec<String> {
    let mut args = sacct_base();
    args.push(format!("--jobs={}", join_ids(ids)));
    args.push(format!("--starttime={}", since.arg()));
    args
}

/// Jobs that were eligible, running or finished since `since` (cluster time).
pub fn sacct_since(since: NaiveDateTime, scope: &Scope) -> Vec<String> {
    let mut args = sacct_base();
    args.push(format!("--starttime={}", since.format("%Y-%m-%dT%H:%M:%S")));
    args.push("--endtime=now".into());
    match scope {
        Scope::Me => {}
        Scope::User(u) => args.push(format!("--user={u}")),
        Scope::All => args.push("--allusers".into()),
    }
    args
}

/// `details` adds `-d` (per-node CPU/GRES lines, batch host).
/// `scontrol --local show job ID`: `--local` spares slurmctld the federation lookup (1 RPC
/// instead of 2, as sdiag counts them on 22.05).
pub fn scontrol_show_job(id: &JobId, details: bool) -> Vec<String> {
    let mut args = vec!["scontrol".to_string(), "--local".into()];
    if details {
        args.push("--details".into());
    }
    args.extend(["show".into(), "job".into(), id.as_str().to_string()]);
    args
}

pub fn scontrol_show_partition() -> Vec<String> {
    vec!["scontrol".into(), "show".into(), "partition".into()]
}

pub fn sinfo() -> Vec<String> {
    vec![
        "sinfo".into(),
        "--noheader".into(),
        format!("--Format={}", long_format(SINFO_FIELDS)),
    ]
}

/// Priority factors; empty `ids` means every pending job in `scope`.
/// sprio has no `--me`: `Scope::Me` lists everyone's pending jobs (the
/// ranking is what matters); filter by user on our side.
pub fn sprio(ids: &[JobId], scope: &Scope) -> Vec<String> {
    let mut args = vec!["sprio".to_string(), "--noheader".into()];
    if !ids.is_empty() {
        // sprio's --jobs takes an optional argument: it must be attached.
        args.push(format!("--jobs={}", join_ids(ids)));
    } else {
        match scope {
            Scope::User(u) => args.push(format!("--user={u}")),
            Scope::Me | Scope::All => {}
        }
    }
    args.push(format!("--format={}", percent_format(SPRIO_FIELDS)));
    args
}

/// Fair share for `scope` (sshare lists the caller's own associations by default).
pub fn sshare(scope: &Scope) -> Vec<String> {
    let mut args = vec![
        "sshare".to_string(),
        "--noheader".into(),
        "--parsable2".into(),
        format!("--format={}", SSHARE_FIELDS.join(",")),
    ];
    match scope {
        Scope::Me => {}
        Scope::User(u) => args.push(format!("--users={u}")),
        Scope::All => args.push("--all".into()),
    }
    args
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SbatchOptions {
    pub job_name: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub time: Option<SlurmDuration>,
    pub nodes: Option<u32>,
    pub ntasks: Option<u32>,
    pub cpus_per_task: Option<u32>,
    /// As Slurm takes it: `4G`, `500M`.
    pub mem: Option<String>,
    /// `gpu:2`, `gpu:a100:1`.
    pub gres: Option<String>,
    pub array: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub chdir: Option<String>,
    pub dependency: Option<String>,
    pub hold: bool,
    /// Passed through before the script, e.g. `--exclusive`.
    pub extra: Vec<String>,
    pub script_args: Vec<String>,
}

/// Always `--parsable`: the reply is `ID` or `ID;cluster`.
pub fn sbatch(script: &str, o: &SbatchOptions) -> Vec<String> {
    let mut a = vec!["sbatch".to_string(), "--parsable".into()];
    let mut opt = |name: &str, v: &Option<String>| {
        if let Some(v) = v {
            a.push(format!("--{name}={v}"));
        }
    };
    opt("job-name", &o.job_name);
    opt("partition", &o.partition);
    opt("account", &o.account);
    opt("qos", &o.qos);
    opt("time", &o.time.map(|t| t.to_slurm()));
    opt("nodes", &o.nodes.map(|n| n.to_string()));
    opt("ntasks", &o.ntasks.map(|n| n.to_string()));
    opt("cpus-per-task", &o.cpus_per_task.map(|n| n.to_string()));
    opt("mem", &o.mem);
    opt("gres", &o.gres);
    opt("array", &o.array);
    opt("output", &o.output);
    opt("error", &o.error);
    opt("chdir", &o.chdir);
    opt("dependency", &o.dependency);
    if o.hold {
        a.push("--hold".into());
    }
    a.extend(o.extra.iter().cloned());
    a.push(script.to_string());
    a.extend(o.script_args.iter().cloned());
    a
}

/// `--verbose`: without it scancel says nothing about ids that are unknown
/// or already finished (and exits 0 either way).
pub fn scancel(ids: &[JobId]) -> Vec<String> {
    let mut a = vec!["scancel".to_string(), "--verbose".into()];
    a.extend(ids.iter().map(|i| i.as_str().to_string()));
    a
}

/// One POSIX shell line from argv, each word quoted as needed, for the
/// rare case where several commands must share one SSH exec (join the lines
/// with `;` or `&&`). Fails only on a NUL byte, which no shell can carry.
pub fn shell_line(argv: &[String]) -> Result<String, shlex::QuoteError> {
    shlex::try_join(argv.iter().map(String::as_str))
}

/// Remote procedure calls a command costs the cluster's daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RpcCost {
    /// slurmctld
    pub ctld: u64,
    /// slurmdbd (the accounting database)
    pub dbd: u64,
}

impl std::ops::AddAssign for RpcCost {
    fn add_assign(&mut self, o: RpcCost) {
        self.ctld += o.ctld;
        self.dbd += o.dbd;
    }
}

/// The live sample's fixed remote script (`slurm::live`); job id, timeout and nodes reach it
/// only as arguments.
pub const LIVE_SCRIPT: &str = include_str!("live_sample.sh");

/// The live sample script's name (`$0`).
pub const LIVE_NAME: &str = "slurmdash-live";

/// `sh -c SCRIPT NAME MARKER JOB TIMEOUT`: how a job's sample (live, top) starts its argv; the
/// script's `$0`, the marker its answer is framed with, the job and each srun's time limit.
pub fn sample_argv(script: &str, name: &str, marker: &str, id: &JobId, secs: u64) -> Vec<String> {
    let secs = secs.to_string();
    ["sh", "-c", script, name, marker, id.as_str(), &secs]
        .map(String::from)
        .into()
}

/// How many times the live sample script's per-node loop runs (its `srun` line), from its
/// argv: one per node after the fixed arguments (marker, job, timeout). `None` for any other
/// argv.
fn live_nodes_in_argv(argv: &[String]) -> Option<usize> {
    (argv.get(3).map(String::as_str) == Some(LIVE_NAME)
        && argv.get(2).map(String::as_str) == Some(LIVE_SCRIPT))
    .then(|| argv.len().saturating_sub(4 + 3))
}

/// What `argv` costs slurmctld and slurmdbd, counted per user with `sdiag` on the dev
/// clusters of Slurm 22.05, 24.11 and 26.05 (where they differ, the larger figure): squeue
/// asks for jobs and partitions (2) and, without `--local`, the federation (3); sinfo for
/// nodes and partitions (2) and, without `--local`, the federation (3); `scontrol show job`
/// 2 (1 with `--local`); `scontrol show config` 2; `srun --overlap` into a job 2; sstat 3 (2
/// on 24.11 and 26.05, 3 on 22.05); `sbatch --test-only` 2; any other scontrol (`scontrol show
/// reservation` among them), sprio, sshare, scancel and sbatch 1;
/// sacct goes to slurmdbd only, 3 RPCs and one more each for TRES and QOS fields (counted
/// on 22.05), sacctmgr 1.
/// `sh -c SCRIPT` (a batch of commands) costs what its lines cost, each line once (a loop's
/// body is counted once, except the live sample's `srun`: once per node it names, none
/// without GPU nodes); anything else (tail, cat, stat) costs nothing.
/// `tests/rpc_cost_cluster.rs` runs each read the dashboard plans and checks these figures
/// against sdiag's.
pub fn rpc_cost(argv: &[String]) -> RpcCost {
    let mut total = RpcCost::default();
    rpc_parts(argv, &mut |_, c| total += c);
    total
}

/// The Slurm commands in `argv` that cost the daemons something, each with its cost: what
/// [`rpc_cost`] sums, named for `:stats` (`squeue`, `sstat`, `scontrol show job`, ...).
pub fn rpc_parts(argv: &[String], each: &mut dyn FnMut(String, RpcCost)) {
    let program = argv.first().map(|p| p.rsplit('/').next().unwrap_or(p));
    match program {
        Some("sh" | "bash") if argv.get(1).map(String::as_str) == Some("-c") => {
            // The live sample's srun line runs once per node it names (none: not at all).
            let per_node = live_nodes_in_argv(argv);
            for line in argv.get(2).map(String::as_str).unwrap_or("").lines() {
                if let Some(words) = shlex::split(line) {
                    rpc_parts(&words, &mut |name, cost| match per_node {
                        Some(n) if name == "srun" => (0..n).for_each(|_| each(name.clone(), cost)),
                        _ => each(name, cost),
                    });
                }
            }
        }
        // `exec scancel "$@"` (the cancel script's last line).
        Some("exec") => rpc_parts(&argv[1..], each),
        // `q=$(squeue --me …)`: the command substituted.
        Some(p) if p.contains("=$(") => {
            let mut words = argv.to_vec();
            if let Some(first) = p.split_once("=$(").map(|(_, prog)| prog.to_string()) {
                words[0] = first;
            }
            if let Some(last) = words.last_mut() {
                if let Some(w) = last.strip_suffix(')') {
                    *last = w.to_string();
                }
            }
            rpc_parts(&words, each)
        }
        Some("timeout") => {
            // `timeout [-k 5s] [-s SIG] DURATION argv…`
            let mut i = 1;
            while let Some(a) = argv.get(i) {
                match a.as_str() {
                    "-k" | "-s" => i += 2,
                    a if a.starts_with('-') => i += 1,
                    _ => break,
                }
            }
            rpc_parts(argv.get(i + 1..).unwrap_or(&[]), each);
        }
        Some(p) => {
            let cost = program_cost(argv);
            if cost != RpcCost::default() {
                let name = match p {
                    // `scontrol show job`, `scontrol show assoc_mgr`: the first two words.
                    "scontrol" => {
                        let words: Vec<&str> = argv[1..]
                            .iter()
                            .map(String::as_str)
                            .filter(|w| !w.starts_with('-'))
                            .take(2)
                            .collect();
                        format!("scontrol {}", words.join(" "))
                            .trim_end()
                            .to_string()
                    }
                    "sbatch" if argv.iter().any(|a| a == "--test-only") => {
                        "sbatch --test-only".to_string()
                    }
                    p => p.to_string(),
                };
                each(name, cost);
            }
        }
        None => {}
    }
}

/// slurmdbd RPCs of one sacct: 3 (its connection and the job query), one more to list the
/// TRES when a field names them, one more to list the QOS when QOS is a field.
fn sacct_dbd(argv: &[String]) -> u64 {
    let fields = argv
        .iter()
        .find_map(|a| a.strip_prefix("--format="))
        .unwrap_or("");
    let named = |f: &dyn Fn(&str) -> bool| fields.split(',').any(|x| f(&x.to_ascii_lowercase()));
    3 + u64::from(named(&|x| x.contains("tres"))) + u64::from(named(&|x| x == "qos"))
}

/// What one Slurm program's argv costs (no `sh -c` or `timeout` around it).
fn program_cost(argv: &[String]) -> RpcCost {
    let word = |w: &str| argv.iter().skip(1).any(|a| a == w);
    let (ctld, dbd) = match argv.first().map(|p| p.rsplit('/').next().unwrap_or(p)) {
        // REQUEST_JOB_STATE alone (sdiag on 24.11 and 26.05, job state cache on or off).
        Some("squeue") if word("--only-job-state") => (1, 0),
        Some("squeue") => (if word("--local") { 2 } else { 3 }, 0),
        Some("sinfo") => (if word("--local") { 2 } else { 3 }, 0),
        Some("sacct") => (0, sacct_dbd(argv)),
        Some("sacctmgr") => (0, 1),
        Some("scontrol") if word("show") && word("job") => (if word("--local") { 1 } else { 2 }, 0),
        Some("scontrol") if word("show") && word("config") => (2, 0),
        Some("srun") => (2, 0),
        Some("sstat") => (3, 0),
        // REQUEST_JOB_WILL_RUN and the partitions' info, on every version.
        Some("sbatch") if word("--test-only") => (2, 0),
        Some("scontrol" | "sprio" | "sshare" | "scancel" | "sbatch") => (1, 0),
        _ => (0, 0),
    };
    RpcCost { ctld, dbd }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn squeue_defaults_to_own_jobs_and_one_argv_per_option() {
        let a = squeue(&SqueueQuery::default());
        assert_eq!(&a[..4], &["squeue", "--noheader", "--local", "--me"]);
        let fmt = a.last().unwrap();
        assert!(fmt.starts_with("--Format=JobArrayId:0\x1f,tres-alloc:0\x1f,ArrayJobId:0\x1f,"));
        assert!(fmt.ends_with(
            "Dependency:0\x1f,WorkDir:0\x1f,JobArrayId:0\x1f,Name:0\x1f,JobArrayId:0\x1e"
        ));
        assert_eq!(fmt.matches('\x1f').count(), SQUEUE_FIELDS.len() - 1);
    }

    #[test]
    fn squeue_filters_are_pushed_to_slurm() {
        let q = SqueueQuery {
            scope: Scope::All,
            partitions: vec!["short".into(), "long".into()],
            accounts: vec!["ml".into()],
            states: vec![JobState::Pending, JobState::Running],
            jobs: vec!["12_[1-3]".parse().unwrap()],
            expand_arrays: true,
        };
        let a = squeue(&q);
        for want in [
            "--all",
            "--partition=short,long",
            "--account=ml",
            "--states=PENDING,RUNNING",
            "--jobs=12_[1-3]",
            "--array",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} in {a:?}");
        }
        let a = squeue(&SqueueQuery {
            scope: Scope::User("bob".into()),
            ..Default::default()
        });
        assert!(a.contains(&"--user=bob".to_string()));
    }

    #[test]
    fn sbatch_keeps_hostile_values_in_one_argument() {
        let o = SbatchOptions {
            job_name: Some("-x; rm -rf / 'q' \"d\"".into()),
            time: Some(SlurmDuration::from_secs(4 * 3600)),
            gres: Some("gpu:2".into()),
            hold: true,
            ..Default::default()
        };
        let a = sbatch("/home/u/my script.sh", &o);
        assert_eq!(a[0..2], ["sbatch", "--parsable"]);
        assert!(a.contains(&"--job-name=-x; rm -rf / 'q' \"d\"".to_string()));
        assert!(a.contains(&"--time=4:00:00".to_string()));
        assert!(a.contains(&"--hold".to_string()));
        assert_eq!(a.last().unwrap(), "/home/u/my script.sh");
    }

    #[test]
    fn shell_line_quotes_hostile_words() {
        let o = SbatchOptions {
            job_name: Some("a'b \"c\" $(rm -rf ~) `x` | ; ünï".into()),
            ..Default::default()
        };
        let argv = sbatch("/tmp/my script.sh", &o);
        let line = shell_line(&argv).unwrap();
        assert_eq!(shlex::split(&line).unwrap(), argv);
        let q = shell_line(&squeue(&SqueueQuery::default())).unwrap();
        assert_eq!(shlex::split(&q).unwrap(), squeue(&SqueueQuery::default()));
        assert!(shell_line(&["a\0b".to_string()]).is_err());
    }

    #[test]
    fn other_builders() {
        let ids: Vec<JobId> = vec!["5".parse().unwrap(), "6_2".parse().unwrap()];
        assert_eq!(scancel(&ids), ["scancel", "--verbose", "5", "6_2"]);
        assert_eq!(
            scontrol_show_job(&ids[1], true),
            ["scontrol", "--local", "--details", "show", "job", "6_2"]
        );
        let s = sacct_jobs(&ids, RECENT);
        assert!(s.contains(&"--jobs=5,6_2".to_string()));
        // Never from 1970 (sacct's default with --jobs): 60 days back, or the launch's age.
        assert!(s.contains(&"--starttime=now-5184000seconds".to_string()));
        assert_eq!(since_launched(3600), RECENT);
        assert_eq!(since_launched(90 * 86_400), Edge::Ago(91 * 86_400));
        assert!(
            sacct_jobs(&ids, since_ever()).contains(&"--starttime=1970-01-02T00:00:00".to_string())
        );
        assert!(s.contains(&"--delimiter=\x1f".to_string()));
        let since = chrono::NaiveDate::from_ymd_opt(2026, 11, 23)
            .unwrap()
            .and_hms_opt(8, 0, 0)
            .unwrap();
        assert!(sacct_since(since, &Scope::All)
            .contains(&"--starttime=2026-11-23T08:00:00".to_string()));
        assert!(sprio(&ids, &Scope::Me).contains(&"--jobs=5,6_2".to_string()));
        assert!(sshare(&Scope::All).contains(&"--all".to_string()));
        assert!(sinfo()[2].contains("GresUsed:0\x1f"));
    }

    #[test]
    fn rpc_cost_of_the_refresh_and_of_a_batch() {
        let q = squeue(&SqueueQuery::default());
        assert_eq!(rpc_cost(&q), RpcCost { ctld: 2, dbd: 0 });
        let plain: Vec<String> = ["squeue", "--me"].map(String::from).to_vec();
        assert_eq!(rpc_cost(&plain).ctld, 3, "federation info without --local");
        let id: JobId = "7".parse().unwrap();
        let b = crate::slurm::batch::script(&[q.clone(), sacct_jobs(&[id], RECENT)]).unwrap();
        let cost = rpc_cost(&crate::slurm::batch::argv(&b));
        // sacct: 3, its TRES fields 1, its QOS field 1.
        assert_eq!(cost, RpcCost { ctld: 2, dbd: 5 });
        let bare: Vec<String> = ["sacct", "-j", "7"].map(String::from).to_vec();
        assert_eq!(rpc_cost(&bare), RpcCost { ctld: 0, dbd: 3 });
        let config: Vec<String> = ["scontrol", "show", "config"].map(String::from).to_vec();
        assert_eq!(rpc_cost(&config).ctld, 2);
        let mut wrapped: Vec<String> = ["timeout", "-k", "5s", "31.0s"].map(String::from).to_vec();
        wrapped.extend(q);
        assert_eq!(rpc_cost(&wrapped).ctld, 2);
        let will_run: Vec<String> = ["sbatch", "--test-only", "--wrap=true"]
            .map(String::from)
            .to_vec();
        assert_eq!(rpc_cost(&will_run).ctld, 2);
        let resv: Vec<String> = ["scontrol", "show", "reservation"]
            .map(String::from)
            .to_vec();
        assert_eq!(rpc_cost(&resv).ctld, 1);
        let tail: Vec<String> = ["tail", "-c", "+1", "-F", "x"].map(String::from).to_vec();
        assert_eq!(rpc_cost(&tail), RpcCost::default());
    }

    /// The guard-aware cancel (`launch::guard::cancel_argv`): its squeue in a command
    /// substitution and its `exec scancel` are counted, as sdiag counts them.
    #[test]
    fn rpc_cost_counts_exec_and_a_command_substitution() {
        let script = "q=$(squeue --me --noheader --format='%i|%j' 2>/dev/null)\nfor id do :; done\nexec scancel \"$@\"";
        let argv: Vec<String> = ["sh", "-c", script, "sh", "--verbose", "42"]
            .map(String::from)
            .to_vec();
        let plain: Vec<String> = ["squeue", "--me"].map(String::from).to_vec();
        assert_eq!(rpc_cost(&argv).ctld, rpc_cost(&plain).ctld + 1);
    }
}
