//! Resolving `--output`/`--error` filename patterns the way slurmstepd does
//! for batch jobs (Slurm's `fname.c`, 22.05), so the dashboard can find the
//! log file from `StdOut=` when Slurm did not expand it.

/// Slurm's NO_VAL: what `%a` prints for a job that is not an array task.
pub const NO_VAL: u64 = 0xffff_fffe;
/// Step id of the batch script (SLURM_BATCH_SCRIPT): what `%s` prints in
/// batch output file names.
pub const BATCH_STEP: u64 = 0xffff_fffb;
const MAX_WIDTH: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogContext {
    pub job_id: u64,
    /// Set for array tasks only.
    pub array_job_id: Option<u64>,
    pub array_task_id: Option<u32>,
    pub job_name: String,
    pub user: String,
    /// The batch host (first allocated node); `%N` stays as is until known.
    pub node: Option<String>,
    pub work_dir: String,
    /// A pending array's tasks, still folded (`3_[2-20]`): `%a` stays in the path, one
    /// file per task.
    pub pending_tasks: bool,
}

impl LogContext {
    /// From `scontrol show job` / sacct. None without a job id or work dir.
    pub fn from_detail(d: &crate::slurm::model::JobDetail) -> Option<LogContext> {
        let id = d.id.as_ref()?;
        let task = id.array_task();
        let array_job_id = task.map(|_| d.array_job_id.unwrap_or(id.base()));
        // For an array task the real job id is not in `A_T`; scontrol's
        // JobId= is kept in the raw fields.
        let job_id = d
            .field("JobId")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(id.base());
        Some(LogContext {
            job_id,
            array_job_id,
            array_task_id: task,
            job_name: d.name.clone(),
            user: d.user.clone().unwrap_or_default(),
            node: d.batch_host.clone().or_else(|| {
                d.node_list
                    .as_deref()
                    .filter(|n| !n.contains(['[', ',']))
                    .map(str::to_string)
            }),
            work_dir: d.work_dir.clone()?,
            pending_tasks: false,
        })
    }

    /// As `from_detail`, for the files to show: a folded pending array (`3_[2-20]`) keeps
    /// `%a`, one file per task, where Slurm itself would print NO_VAL.
    pub fn per_task(d: &crate::slurm::model::JobDetail) -> Option<LogContext> {
        let mut ctx = LogContext::from_detail(d)?;
        ctx.pending_tasks = d.id.as_ref().is_some_and(|i| i.array_pending().is_some());
        Some(ctx)
    }
}

/// scontrol's StdOut/StdErr of a pending array holds Slurm's NO_VAL where the task id goes
/// (`slurm-3_4294967294.out`, seen on 22.05 and 24.11): a file that will never exist. This
/// gives the pattern per task instead (`slurm-3_%a.out`); other paths are unchanged.
pub fn per_task_pattern(path: &str) -> String {
    path.replace(&NO_VAL.to_string(), "%a")
}

/// Slurm's default when no `--output` was given.
pub fn default_pattern(is_array_task: bool) -> &'static str {
    if is_array_task {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    }
}

/// Expands `%j %J %A %a %x %u %N %n %s %t %%` with optional zero-pad width
/// (`%4j` → `0042`, at most 10), leaves unknown `%X` untouched, joins a
/// relative result onto the work dir. A pattern holding `\` is not expanded
/// at all: Slurm strips the backslashes and uses it literally.
pub fn resolve_log_path(pattern: &str, ctx: &LogContext) -> String {
    // scontrol prints a folded pending array's path with NO_VAL for `%a`.
    let per_task;
    let pattern = if ctx.pending_tasks {
        per_task = per_task_pattern(pattern);
        per_task.as_str()
    } else {
        pattern
    };
    let absolute = pattern.starts_with('/');
    if pattern.contains('\\') {
        let literal = strip_backslashes(pattern);
        // fname.c appends an escaped relative name to the work dir without a '/'.
        return if absolute {
            literal
        } else {
            format!("{}{}", ctx.work_dir, literal)
        };
    }
    let mut out = String::new();
    if !absolute {
        out.push_str(&ctx.work_dir);
        if !out.ends_with('/') {
            out.push('/');
        }
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            out.push('%');
            i += 2;
            continue;
        }
        let mut j = i + 1;
        let mut width = 0usize;
        while let Some(d) = chars.get(j).and_then(|c| c.to_digit(10)) {
            width = (width * 10 + d as usize).min(1000);
            j += 1;
        }
        let width = width.min(MAX_WIDTH);
        let Some(&spec) = chars.get(j) else {
            out.extend(&chars[i..]);
            break;
        };
        let num = |n: u64| format!("{n:0width$}");
        let text = match spec {
            'a' if ctx.pending_tasks => None,
            'a' => Some(num(ctx.array_task_id.map_or(NO_VAL, u64::from))),
            'A' => Some(num(match (ctx.array_job_id, ctx.array_task_id) {
                (Some(a), Some(_)) => a,
                _ => ctx.job_id,
            })),
            'j' => Some(num(ctx.job_id)),
            'J' => Some(format!("{}.{}", num(ctx.job_id), BATCH_STEP)),
            's' => Some(num(BATCH_STEP)),
            'n' | 't' => Some(num(0)),
            'N' => ctx.node.clone(),
            'u' => Some(ctx.user.clone()),
            'x' => Some(ctx.job_name.clone()),
            _ => None,
        };
        match text {
            Some(t) => out.push_str(&t),
            None => out.extend(&chars[i..=j]),
        }
        i = j + 1;
    }
    out
}

fn strip_backslashes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if chars.peek() == Some(&'\\') {
                out.push('\\');
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// stdout and stderr paths with Slurm's filename patterns resolved; stderr defaults to
/// stdout as in Slurm. `from_accounting`: the detail came from sacct, which does not keep the
/// paths, so Slurm's default names stand in and the returned flag says they are guesses.
pub fn log_paths(
    detail: &crate::slurm::model::JobDetail,
    from_accounting: bool,
) -> Option<(String, String, bool)> {
    // A folded pending array's logs are one file per task (`%a`), not Slurm's NO_VAL name.
    let ctx = LogContext::per_task(detail)?;
    let guessed = detail.stdout.is_none() && from_accounting;
    let out_pattern = detail
        .stdout
        .clone()
        .unwrap_or_else(|| default_pattern(detail.array_task.is_some()).to_string());
    let err_pattern = detail.stderr.clone().unwrap_or_else(|| out_pattern.clone());
    Some((
        resolve_log_path(&out_pattern, &ctx),
        resolve_log_path(&err_pattern, &ctx),
        guessed,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ctx() -> LogContext {
        LogContext {
            job_id: 128,
            array_job_id: None,
            array_task_id: None,
            job_name: "train run".into(),
            user: "sduser".into(),
            node: Some("node1".into()),
            work_dir: "/lustre/fsw/sduser".into(),
            pending_tasks: false,
        }
    }

    #[test]
    fn plain_job() {
        let c = ctx();
        assert_eq!(
            resolve_log_path("slurm-%j.out", &c),
            "/lustre/fsw/sduser/slurm-128.out"
        );
        assert_eq!(
            resolve_log_path("/abs/%x-%u-%N.log", &c),
            "/abs/train run-sduser-node1.log"
        );
        assert_eq!(resolve_log_path("/a/%A_%a", &c), "/a/128_4294967294");
        assert_eq!(resolve_log_path("/a/job%4j.out", &c), "/a/job0128.out");
        assert_eq!(resolve_log_path("/a/%J", &c), "/a/128.4294967291");
        assert_eq!(resolve_log_path("/a/%%j%n%t%q", &c), "/a/%j00%q");
        assert_eq!(resolve_log_path("/a/x%", &c), "/a/x%");
        assert_eq!(resolve_log_path("/a/x%3", &c), "/a/x%3");
    }

    #[test]
    fn array_task() {
        let c = LogContext {
            job_id: 131,
            array_job_id: Some(128),
            array_task_id: Some(3),
            ..ctx()
        };
        assert_eq!(
            resolve_log_path("out/%A_%a.log", &c),
            "/lustre/fsw/sduser/out/128_3.log"
        );
        assert_eq!(resolve_log_path("/o/%j-%3a", &c), "/o/131-003");
        assert_eq!(
            resolve_log_path(default_pattern(true), &c),
            "/lustre/fsw/sduser/slurm-128_3.out"
        );
    }

    #[test]
    fn a_pending_arrays_no_val_path_becomes_the_pattern_per_task() {
        // scontrol show job 2215 (tasks 2-20 pending), dev cluster, Slurm 22.05.8:
        // `StdOut=/home/sduser/slurm-2215_4294967294.out`; 24.11 prints the same.
        let printed = "/home/sduser/slurm-2215_4294967294.out";
        assert_eq!(per_task_pattern(printed), "/home/sduser/slurm-2215_%a.out");
        assert_eq!(per_task_pattern("/o/run-12.log"), "/o/run-12.log");
        let c = LogContext {
            job_id: 2215,
            pending_tasks: true,
            work_dir: "/home/sduser".into(),
            ..ctx()
        };
        assert_eq!(
            resolve_log_path(printed, &c),
            "/home/sduser/slurm-2215_%a.out"
        );
        assert_eq!(
            resolve_log_path("%A_%4a.out", &c),
            "/home/sduser/2215_%4a.out"
        );
    }

    #[test]
    fn escapes_and_unknown_node() {
        let c = LogContext {
            node: None,
            ..ctx()
        };
        assert_eq!(resolve_log_path("/a/%N.out", &c), "/a/%N.out");
        assert_eq!(resolve_log_path("/a/\\%j.out", &c), "/a/%j.out");
        assert_eq!(resolve_log_path("/a/b\\\\c%j", &c), "/a/b\\c%j");
        assert_eq!(resolve_log_path("/a/%99j", &c), "/a/0000000128");
    }
}
