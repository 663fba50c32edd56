//! `:grep` and `:errors`: where the jobs' logs are (one batched exec: sacct for every job,
//! `scontrol show job` for those slurmctld still knows, whose paths are already expanded),
//! then one `grep` over all of them (`logview::grep`).

use std::collections::HashMap;
use std::time::Duration;

use crate::logview::found::{GrepFile, GrepReport, GrepRequest};
use crate::logview::grep::{grep_argv, parse_grep, Syntax};
use crate::logview::Stream;
use crate::remote::Remote;
use crate::slurm::batch;
use crate::slurm::command::{self, FIELD_SEP};
use crate::slurm::logpath::log_paths;
use crate::slurm::model::{JobDetail, JobId, JobState};
use crate::slurm::parse::parse_scontrol_jobs;

/// The most ids asked of scontrol one by one (the rest come from sacct alone).
pub const MAX_SCONTROL: usize = 20;
/// The most log files searched at once.
pub const MAX_FILES: usize = 1000;

const FIELDS: &[&str] = &[
    "JobID", "JobIDRaw", "JobName", "User", "State", "End", "WorkDir",
];
const STD_FIELDS: &[&str] = &["StdOut", "StdErr"];

/// sacct of `ids` (an array's job id brings all of its tasks), with the log paths where
/// sacct keeps them (`std`: 23.02 and later).
pub fn sacct_argv(ids: &[JobId], std: bool) -> Vec<String> {
    let mut fields = FIELDS.to_vec();
    if std {
        fields.extend(STD_FIELDS);
    }
    let mut argv = command::sacct_fields(&fields);
    let list: Vec<&str> = ids.iter().map(JobId::as_str).collect();
    argv.push(format!("--jobs={}", list.join(",")));
    argv.push(format!("--starttime={}", command::RECENT.arg()));
    argv
}

/// sacct's records as details enough for `log_paths`; records that do not read are
/// left out.
pub fn read_sacct_paths(out: &str) -> Vec<JobDetail> {
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(FIELD_SEP).collect();
            if f.len() != FIELDS.len() && f.len() != FIELDS.len() + STD_FIELDS.len() {
                return None;
            }
            let id: JobId = f[0].trim().parse().ok()?;
            let some = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
            Some(JobDetail {
                array_task: id.array_task().map(|t| t.to_string()),
                array_job_id: id.array_task().map(|_| id.base()),
                id: Some(id),
                name: f[2].to_string(),
                user: some(f[3]),
                state: Some(JobState::parse(f[4])),
                end_time: crate::slurm::time::parse_time(f[5]).ok().flatten(),
                work_dir: some(f[6]),
                stdout: f.get(7).and_then(|s| some(s)),
                stderr: f.get(8).and_then(|s| some(s)),
                fields: vec![("JobId".into(), f[1].trim().to_string())],
                ..JobDetail::default()
            })
        })
        .collect()
}

/// Where job `id`'s logs are (stdout, stderr, and whether Slurm's default name was
/// guessed): a launch's are where its script put them, exact on every version where sacct
/// keeps no paths (before 23.02) or only patterns; scontrol's expanded paths (a job
/// slurmctld still knows) stand.
fn paths_of(
    d: &JobDetail,
    id: &JobId,
    from_sacct: bool,
    launches: &[(u64, String, String)],
) -> Option<(String, String, bool)> {
    let found = log_paths(d, from_sacct)?;
    if d.stdout.is_some() && !from_sacct {
        return Some(found);
    }
    let Some((_, dir, name)) = launches.iter().find(|(b, _, _)| *b == id.base()) else {
        return Some(found);
    };
    let layout = crate::registry::Layout {
        local_id: String::new(),
        results_root: String::new(),
        job_dir: dir.clone(),
    };
    let (out, err) = match id.array_task() {
        Some(t) => layout.task_logs(name, id.base(), t),
        None => (
            layout.stdout(name, id.base()),
            layout.stderr(name, id.base()),
        ),
    };
    Some((out, err, false))
}

/// Runs the search `req` asks for.
pub async fn search(remote: &dyn Remote, req: GrepRequest, timeout: Duration) -> GrepReport {
    let (details, from_sacct) = match locate(remote, &req, timeout).await {
        Ok(d) => d,
        Err(e) => return GrepReport::failed(req, e),
    };
    let mut files: Vec<GrepFile> = Vec::new();
    let mut not_started = 0;
    let mut guessed = false;
    for d in &details {
        let Some(id) = d.id.clone() else { continue };
        if id.array_pending().is_some() {
            not_started += id.array_pending().map_or(1, |s| s.task_count() as usize);
            continue;
        }
        let Some((out, err, guess)) =
            paths_of(d, &id, from_sacct.contains(id.as_str()), &req.launches)
        else {
            continue;
        };
        guessed |= guess;
        let streams = if out == err {
            vec![(Stream::Stdout, out)]
        } else {
            vec![(Stream::Stdout, out), (Stream::Stderr, err)]
        };
        for (stream, path) in streams {
            if files.iter().any(|f| f.path == path) {
                continue;
            }
            files.push(GrepFile {
                job: id.clone(),
                stream,
                path,
                end: d.end_time,
                skipped: None,
            });
        }
    }
    files.truncate(MAX_FILES);
    let mut report = GrepReport {
        req,
        files,
        found: Default::default(),
        not_started,
        guessed,
        complaint: None,
        error: None,
    };
    if report.files.is_empty() {
        return report;
    }
    let paths: Vec<String> = report.files.iter().map(|f| f.path.clone()).collect();
    let r = &report.req;
    let argv = grep_argv(r.syntax, &r.pattern, &paths, r.limits);
    // grep's own limit, and a little for the round trip.
    let wait = timeout.max(Duration::from_secs(r.limits.secs + 10));
    let out = match remote.run(&argv, None, wait).await {
        Ok(o) => o,
        Err(e) => {
            report.error = Some(format!("grep on the login node: {e}"));
            return report;
        }
    };
    match parse_grep(&out.stdout, &paths) {
        Ok(found) => {
            for (i, why) in &found.skipped {
                if let Some(f) = report.files.get_mut(*i) {
                    f.skipped = Some(*why);
                }
            }
            if found.status == Some(2) && found.hits.is_empty() {
                let said = out.stderr_lossy();
                let said = said.trim();
                report.complaint = Some(if said.is_empty() {
                    "grep failed (exit 2)".into()
                } else {
                    crate::logview::grep::escape(said)
                });
            }
            report.found = found;
        }
        Err(e) => report.error = Some(e.to_string()),
    }
    report
}

/// The jobs' details: sacct's for all, scontrol's (paths expanded) for those slurmctld
/// still knows; and the ids whose detail came from sacct.
async fn locate(
    remote: &dyn Remote,
    req: &GrepRequest,
    timeout: Duration,
) -> Result<(Vec<JobDetail>, std::collections::HashSet<String>), String> {
    let mut cmds = vec![sacct_argv(&req.ids, true)];
    for id in req.ids.iter().take(MAX_SCONTROL) {
        cmds.push(command::scontrol_show_job(id, false));
    }
    let host = || remote.host().unwrap_or_else(|| "the cluster".into());
    let run = |cmds: Vec<Vec<String>>| async move {
        let b = batch::script(&cmds).map_err(|e| format!("building the log lookup: {e}"))?;
        let out = remote
            .run(&batch::argv(&b), None, timeout)
            .await
            .map_err(|e| e.to_string())?;
        batch::split(&b, &out.stdout_lossy(), &out.stderr_lossy())
            .map_err(|e| format!("the log lookup (sacct, scontrol) on {}: {e}", host()))
    };
    let mut sections = run(cmds.clone()).await?;
    // Slurm before 23.02: sacct has no StdOut/StdErr fields.
    if sections
        .first()
        .is_some_and(|s| !s.success() && s.stderr.contains("Invalid field"))
    {
        cmds[0] = sacct_argv(&req.ids, false);
        sections = run(cmds).await?;
    }
    let mut by_id: HashMap<String, JobDetail> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut from_sacct = std::collections::HashSet::new();
    if let Some(s) = sections.first().filter(|s| s.success()) {
        for d in read_sacct_paths(&s.stdout) {
            let Some(id) = d.id.as_ref().map(|i| i.as_str().to_string()) else {
                continue;
            };
            if !wanted(req, d.id.as_ref()) {
                continue;
            }
            from_sacct.insert(id.clone());
            order.push(id.clone());
            by_id.insert(id, d);
        }
    }
    for s in sections.iter().skip(1).filter(|s| s.success()) {
        let Ok(details) = parse_scontrol_jobs(&s.stdout) else {
            continue;
        };
        for d in details {
            let Some(id) = d.id.as_ref().map(|i| i.as_str().to_string()) else {
                continue;
            };
            if !wanted(req, d.id.as_ref()) {
                continue;
            }
            from_sacct.remove(&id);
            if !by_id.contains_key(&id) {
                order.push(id.clone());
            }
            by_id.insert(id, d);
        }
    }
    if by_id.is_empty() {
        let why = sections
            .first()
            .filter(|s| !s.success())
            .map(|s| format!(": sacct said {}", s.stderr.trim()))
            .unwrap_or_default();
        return Err(format!(
            "neither slurmctld nor sacct knows {}{why}",
            req.what
        ));
    }
    let details = order.into_iter().filter_map(|i| by_id.remove(&i)).collect();
    Ok((details, from_sacct))
}

/// Whether a record found is one of the jobs asked for (sacct of an array's task id also
/// lists nothing else, but scontrol of an array's job id lists every task).
fn wanted(req: &GrepRequest, id: Option<&JobId>) -> bool {
    let Some(id) = id else { return false };
    req.arrays.contains(&id.base())
        || req
            .ids
            .iter()
            .any(|w| w.as_str() == id.as_str() || (w.base() == id.base() && id.array().is_none()))
}

/// Whether `syntax` reads `pattern` as a regular expression (for the pane's title).
pub fn is_regex(syntax: Syntax) -> bool {
    syntax != Syntax::Fixed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sacct_records_give_paths_per_task() {
        let sep = FIELD_SEP;
        let out = format!(
            "5_7{sep}12{sep}sw{sep}sduser{sep}FAILED{sep}2026-11-29T03:06:11{sep}/w{sep}slurm-logs/%x-%A/main-%a.out{sep}slurm-logs/%x-%A/main-%a.err\n\
             5_[8-9]{sep}5{sep}sw{sep}sduser{sep}PENDING{sep}Unknown{sep}/w{sep}x{sep}\n\
             junk\n"
        );
        let d = read_sacct_paths(&out);
        assert_eq!(d.len(), 2);
        let (o, e, guessed) = log_paths(&d[0], true).unwrap();
        assert_eq!(o, "/w/slurm-logs/sw-5/main-7.out");
        assert_eq!(e, "/w/slurm-logs/sw-5/main-7.err");
        assert!(!guessed);
        assert!(d[0].end_time.is_some());
        assert!(d[1].id.as_ref().unwrap().array_pending().is_some());
    }

    /// A sweep task slurmctld forgot, read from a sacct that keeps no log paths (22.05): a
    /// launch's task is found in its job directory, not under Slurm's default name; a job
    /// slurmdash did not launch keeps the guess; scontrol's expanded path stands.
    #[test]
    fn a_launchs_task_is_found_in_its_job_directory_where_sacct_keeps_no_paths() {
        let sep = FIELD_SEP;
        let out = format!(
            "5_7{sep}12{sep}sw{sep}sduser{sep}FAILED{sep}2026-11-29T03:06:11{sep}/w\n\
             9_1{sep}21{sep}other{sep}sduser{sep}FAILED{sep}2026-11-29T03:06:11{sep}/w\n"
        );
        let d = read_sacct_paths(&out);
        let launches = vec![(5, "/r/20261129-1".to_string(), "sw".to_string())];
        let id = d[0].id.clone().unwrap();
        assert_eq!(
            paths_of(&d[0], &id, true, &launches).unwrap(),
            (
                "/r/20261129-1/slurm-logs/sw-5/main-7.out".to_string(),
                "/r/20261129-1/slurm-logs/sw-5/main-7.err".to_string(),
                false
            )
        );
        let other = d[1].id.clone().unwrap();
        let (o, _, guessed) = paths_of(&d[1], &other, true, &launches).unwrap();
        assert!(guessed, "{o}");
        assert!(o.ends_with("slurm-9_1.out"), "{o}");
        let mut known = d[0].clone();
        known.stdout = Some("/elsewhere/o.out".into());
        known.stderr = Some("/elsewhere/o.err".into());
        assert_eq!(
            paths_of(&known, &id, false, &launches).unwrap().0,
            "/elsewhere/o.out"
        );
    }
}
