//! Triage of one finished job: read only what the classifier needs over the transport (the
//! last 64 KiB of stdout and stderr for a FAILED job, status.json for a COMPLETED one), then
//! classify with `triage::classify`.
//!
//! Where status.json is looked for, in order:
//! 1. `<results_dir>/status.json` when the caller knows the job's results dir (the launch
//!    registry's job dir);
//! 2. otherwise next to the job's stdout, but only when that directory is the job's own (its
//!    name holds the job id, e.g. TAO's `<job_dir>/slurm-logs/<name>-<id>/`), and for that
//!    TAO layout also in `<job_dir>`. A directory shared by many jobs (`~/logs/`) is never
//!    read: a stale status.json there belongs to some other job.

use crate::logview::Stream;
use crate::payload::DetailSource;
pub use crate::payload::TriageReport;
use crate::remote::{ReadPos, Remote, RemoteError};
use crate::slurm::logpath::log_paths;
use crate::slurm::model::{JobDetail, JobState};
use crate::triage::{classify, Patterns, TriageInput};

/// How much of the end of each log is read.
pub const TAIL_BYTES: u64 = 64 * 1024;
/// status.json larger than this is not read whole (TAO's grows by a line per epoch).
pub const STATUS_BYTES: u64 = 64 * 1024;

/// Where to look for status.json (see the module doc), most specific first.
pub fn status_candidates(
    detail: &JobDetail,
    stdout_path: Option<&str>,
    results_dir: Option<&str>,
) -> Vec<String> {
    if let Some(dir) = results_dir.filter(|d| !d.trim().is_empty()) {
        return vec![format!("{}/status.json", dir.trim_end_matches('/'))];
    }
    let Some(id) = detail.id.as_ref() else {
        return Vec::new();
    };
    let ids: Vec<String> = [
        Some(id.base().to_string()),
        detail.field("JobId").map(str::to_string),
    ]
    .into_iter()
    .flatten()
    .collect();
    let Some((dir, _)) = stdout_path.and_then(|p| p.rsplit_once('/')) else {
        return Vec::new();
    };
    let name = dir.rsplit('/').next().unwrap_or("");
    let own = ids.iter().any(|i| {
        name.split(|c: char| !c.is_ascii_digit())
            .any(|part| part == i.as_str())
    });
    if !own || dir.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("{dir}/status.json")];
    let above = dir.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
    if let Some((job_dir, "slurm-logs")) = above.rsplit_once('/') {
        if !job_dir.is_empty() {
            out.push(format!("{job_dir}/status.json"));
        }
    }
    out
}

async fn read_text(
    remote: &dyn Remote,
    path: &str,
    max: u64,
) -> Result<Option<String>, RemoteError> {
    match remote.read_file(path, ReadPos::Tail(max), max).await {
        Ok(c) => Ok(Some(String::from_utf8_lossy(&c.data).into_owned())),
        Err(RemoteError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Classifies a finished job from its detail; `Ok(None)` for a job that has not finished.
/// Transport failures to read a log are notes (the state alone still classifies), except a
/// lost connection, which is an error so the caller can try again.
pub async fn triage_job(
    remote: &dyn Remote,
    detail: &JobDetail,
    source: DetailSource,
    results_dir: Option<&str>,
    patterns: &Patterns,
) -> Result<Option<TriageReport>, String> {
    let Some(state) = detail.state.as_ref() else {
        return Ok(None);
    };
    if !state.is_finished() {
        return Ok(None);
    }
    let paths = log_paths(detail, source == DetailSource::Sacct);
    let mut notes = Vec::new();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if *state == JobState::Failed {
        if let Some((out, err, _)) = &paths {
            let mut wanted = vec![(Stream::Stdout, out.as_str())];
            if err != out {
                wanted.push((Stream::Stderr, err.as_str()));
            }
            for (stream, path) in wanted {
                let text = match read_text(remote, path, TAIL_BYTES).await {
                    Ok(Some(t)) => t,
                    Ok(None) => {
                        notes.push(format!("{stream} log {path} not found"));
                        continue;
                    }
                    Err(e) if e.is_transient() => return Err(e.to_string()),
                    Err(e) => {
                        notes.push(e.to_string());
                        continue;
                    }
                };
                match stream {
                    Stream::Stdout => stdout = text,
                    Stream::Stderr => stderr = text,
                }
            }
            if err == out {
                // One file holds both streams; the classifier looks at it as stderr first.
                stderr = std::mem::take(&mut stdout);
            }
        } else {
            notes.push("the log paths are unknown (no work dir)".into());
        }
    }
    let mut status_json = None;
    let mut status_path = None;
    if *state == JobState::Completed {
        let stdout_path = paths.as_ref().map(|(o, _, _)| o.as_str());
        for p in status_candidates(detail, stdout_path, results_dir) {
            match remote
                .read_file(&p, ReadPos::Tail(STATUS_BYTES), STATUS_BYTES)
                .await
            {
                Ok(c) => {
                    let text = String::from_utf8_lossy(&c.data);
                    status_json =
                        Some(crate::triage::status::from_tail(&text, c.offset).to_string());
                    status_path = Some(p);
                    break;
                }
                Err(RemoteError::NotFound { .. }) => {}
                Err(e) if e.is_transient() => return Err(e.to_string()),
                Err(e) => notes.push(e.to_string()),
            }
        }
    }
    let Some(input) = TriageInput::from_detail(detail, &stdout, &stderr, status_json.as_deref())
    else {
        return Ok(None);
    };
    Ok(classify(&input, patterns).map(|triage| TriageReport {
        triage,
        status_path,
        notes,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::FakeRemote;
    use crate::slurm::model::JobId;
    use crate::triage::Class;

    fn detail(state: JobState, stdout: &str, stderr: Option<&str>) -> JobDetail {
        JobDetail {
            id: Some(JobId::new(4242)),
            name: "train".into(),
            user: Some("alice".into()),
            state: Some(state),
            exit_code: Some((1, 0)),
            work_dir: Some("/home/alice".into()),
            stdout: Some(stdout.into()),
            stderr: stderr.map(str::to_string),
            ..JobDetail::default()
        }
    }

    #[tokio::test]
    async fn failed_job_reads_only_log_tails() {
        let r = FakeRemote::new("login1");
        let big = format!(
            "{}\nsrun: error: Node failure on n3\n",
            "x\n".repeat(100_000)
        );
        r.set_file("/home/alice/o.out", "all good\n");
        r.set_file("/home/alice/e.err", big);
        let d = detail(
            JobState::Failed,
            "/home/alice/o.out",
            Some("/home/alice/e.err"),
        );
        let rep = triage_job(&r, &d, DetailSource::Scontrol, None, &Patterns::builtin())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rep.triage.class, Class::Infra);
        let reads = r.reads();
        assert_eq!(reads.len(), 2, "{reads:?}");
        assert!(reads
            .iter()
            .all(|(_, pos, max)| *pos == ReadPos::Tail(TAIL_BYTES) && *max == TAIL_BYTES));
    }

    #[tokio::test]
    async fn one_file_for_both_streams_is_read_once_and_missing_logs_are_notes() {
        let r = FakeRemote::new("login1");
        r.set_file("/home/alice/slurm-4242.out", "Traceback\nValueError: x\n");
        let d = detail(JobState::Failed, "/home/alice/slurm-4242.out", None);
        let rep = triage_job(&r, &d, DetailSource::Scontrol, None, &Patterns::builtin())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rep.triage.class, Class::Program);
        assert_eq!(r.reads().len(), 1);
        let d = detail(JobState::Failed, "/gone/o.out", None);
        let rep = triage_job(&r, &d, DetailSource::Scontrol, None, &Patterns::builtin())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rep.triage.class, Class::Program);
        assert!(rep.notes[0].contains("/gone/o.out"), "{:?}", rep.notes);
    }

    #[tokio::test]
    async fn states_that_decide_alone_read_nothing() {
        let r = FakeRemote::new("login1");
        for s in [JobState::Timeout, JobState::NodeFail, JobState::Cancelled] {
            let d = detail(s, "/home/alice/o.out", None);
            let rep = triage_job(&r, &d, DetailSource::Scontrol, None, &Patterns::builtin())
                .await
                .unwrap();
            assert!(rep.is_some());
        }
        let d = detail(JobState::Running, "/home/alice/o.out", None);
        let rep = triage_job(&r, &d, DetailSource::Scontrol, None, &Patterns::builtin())
            .await
            .unwrap();
        assert!(rep.is_none());
        assert!(r.reads().is_empty());
    }

    #[tokio::test]
    async fn completed_reads_status_json_from_the_results_dir() {
        let r = FakeRemote::new("login1");
        r.set_file("/res/job1/status.json", "{\"status\": \"FAILURE\"}\n");
        let d = detail(JobState::Completed, "/home/alice/o.out", None);
        let rep = triage_job(
            &r,
            &d,
            DetailSource::Scontrol,
            Some("/res/job1/"),
            &Patterns::builtin(),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(rep.triage.class, Class::Error);
        assert_eq!(rep.status_path.as_deref(), Some("/res/job1/status.json"));
        // No results dir and a shared log dir: status.json there is not the job's.
        r.set_file("/home/alice/status.json", "{\"status\": \"FAILURE\"}\n");
        let rep = triage_job(&r, &d, DetailSource::Scontrol, None, &Patterns::builtin())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rep.triage.class, Class::Complete);
        assert_eq!(rep.status_path, None);
    }

    #[test]
    fn status_json_is_looked_for_only_in_the_jobs_own_directories() {
        let d = detail(JobState::Completed, "", None);
        assert_eq!(
            status_candidates(&d, Some("/j/slurm-logs/train-4242/main.out"), None),
            vec![
                "/j/slurm-logs/train-4242/status.json".to_string(),
                "/j/status.json".to_string()
            ]
        );
        assert_eq!(
            status_candidates(&d, Some("/runs/4242/out.log"), None),
            vec!["/runs/4242/status.json".to_string()]
        );
        assert!(status_candidates(&d, Some("/home/alice/logs/slurm-4242.out"), None).is_empty());
        assert!(status_candidates(&d, Some("/runs/142421/out.log"), None).is_empty());
        assert_eq!(
            status_candidates(&d, Some("/x/y.out"), Some("/res/a")),
            vec!["/res/a/status.json".to_string()]
        );
    }
}
