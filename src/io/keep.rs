//! Keeps the batch script of a selected job slurmdash did not launch, while slurmctld still
//! has it (see [`crate::kept_scripts`]): one `scontrol write batch_script ID -` per job, once,
//! after the detail pane's read, never on a refresh.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use crate::io::fetch::stdout_of;
use crate::kept_scripts::KeptScripts;
use crate::registry::Registry;
use crate::remote::Remote;
use crate::slurm::eff::recover::scontrol_batch_script;
use crate::slurm::model::JobDetail;

/// What [`keep`] did, for the debug log and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepOutcome {
    /// Written to this file.
    Written(std::path::PathBuf),
    /// Not asked for: why.
    Skipped(&'static str),
    /// Asked for and not kept: the error.
    Failed(String),
}

/// Which jobs this dashboard already asked about (kept, launched by slurmdash, or refused),
/// so a job is asked about once per session however often it is selected; and the login
/// user of each cluster (`id -un`, asked once).
#[derive(Default)]
pub struct Asked(Mutex<HashSet<String>>, Mutex<HashMap<String, String>>);

impl Asked {
    fn first_time(&self, id: &str) -> bool {
        self.0
            .lock()
            .map(|mut s| s.insert(id.to_string()))
            .unwrap_or(false)
    }

    async fn me(&self, remote: &dyn Remote, cluster: &str, timeout: Duration) -> Option<String> {
        if let Some(m) = self.1.lock().ok().and_then(|m| m.get(cluster).cloned()) {
            return Some(m);
        }
        let argv = ["id".to_string(), "-un".into()];
        let me = stdout_of(remote, &argv, None, timeout).await.ok()?;
        let me = me.trim().to_string();
        if me.is_empty() {
            return None;
        }
        if let Ok(mut m) = self.1.lock() {
            m.insert(cluster.to_string(), me.clone());
        }
        Some(me)
    }
}

/// The job whose script a detail read may keep: one slurmctld answered for (sacct's jobs
/// are past it), unless keeping is off (`[ui] keep_scripts = false`).
pub fn to_keep(
    read: &Result<(JobDetail, crate::payload::DetailSource), String>,
    keep_scripts: bool,
) -> Option<JobDetail> {
    match read {
        Ok((d, crate::payload::DetailSource::Scontrol)) if keep_scripts => Some(d.clone()),
        _ => None,
    }
}

/// Keeps the script of `d` (read from slurmctld) on `cluster` unless it is not a batch job,
/// it is another user's (selected under `--all`: their script is not for this laptop to
/// keep), slurmdash launched it (its staged script is on the cluster), or it is kept already.
pub async fn keep(
    remote: &dyn Remote,
    registry: &Registry,
    cluster: &str,
    asked: &Asked,
    d: &JobDetail,
    timeout: Duration,
) -> KeepOutcome {
    let (Some(id), Some(submit)) = (d.id.as_ref(), d.submit_time) else {
        return KeepOutcome::Skipped("no job id or submit time");
    };
    if d.field("BatchFlag") != Some("1") {
        return KeepOutcome::Skipped("not a batch job");
    }
    if !asked.first_time(id.as_str()) {
        return KeepOutcome::Skipped("asked already");
    }
    // `UserId=alice(1001)`: only the login user's own jobs.
    let Some(owner) = d
        .field("UserId")
        .map(|u| u.split('(').next().unwrap_or(u).trim())
        .filter(|u| !u.is_empty())
    else {
        return KeepOutcome::Skipped("no owner in scontrol's answer");
    };
    match asked.me(remote, cluster, timeout).await {
        Some(me) if me == owner => {}
        Some(_) => return KeepOutcome::Skipped("another user's job"),
        None => return KeepOutcome::Failed("`id -un` did not name the login user".into()),
    }
    let store = KeptScripts::under(registry.dir());
    if store.has(cluster, id.as_str(), submit) {
        return KeepOutcome::Skipped("kept already");
    }
    let launched = id.as_str().parse::<u64>().ok().is_some_and(|n| {
        registry.load().is_ok_and(|entries| {
            entries.iter().any(|e| {
                e.cluster == cluster && (e.job_id == n || e.attempts.iter().any(|a| a.job_id == n))
            })
        })
    });
    if launched {
        return KeepOutcome::Skipped("launched by slurmdash");
    }
    let script = match stdout_of(remote, &scontrol_batch_script(id), None, timeout).await {
        Ok(s) if !s.trim().is_empty() => s,
        Ok(_) => return KeepOutcome::Failed("scontrol write batch_script printed nothing".into()),
        Err(e) => return KeepOutcome::Failed(e),
    };
    match store.keep(cluster, id.as_str(), submit, &script) {
        Ok(path) => KeepOutcome::Written(path),
        Err(e) => KeepOutcome::Failed(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::remote::fake::{FakeRemote, FakeReply};

    const T: Duration = Duration::from_secs(5);

    fn running() -> JobDetail {
        crate::slurm::parse::parse_scontrol_jobs(include_str!(
            "../../tests/fixtures/slurm/26.05/scontrol_job_running.out"
        ))
        .unwrap()
        .remove(0)
    }

    fn scripts(r: &FakeRemote) -> usize {
        r.calls()
            .iter()
            .filter(|c| c.get(1).map(String::as_str) == Some("write"))
            .count()
    }

    #[tokio::test]
    async fn a_selected_job_s_script_is_kept_once_and_read_back_by_its_submit_time() {
        let d = tempfile::tempdir().unwrap();
        let reg = Registry::open(d.path());
        let r = FakeRemote::default();
        r.on(&["id", "-un"], vec![FakeReply::ok("sduser\n")]);
        let script = "#!/bin/bash\n#SBATCH -c 2\necho hi\n";
        r.on(
            &["scontrol", "write", "batch_script", "69", "-"],
            vec![FakeReply::ok(script)],
        );
        let asked = Asked::default();
        let job = running();
        let out = keep(&r, &reg, "dev", &asked, &job, T).await;
        assert!(matches!(out, KeepOutcome::Written(_)), "{out:?}");
        let store = KeptScripts::under(d.path());
        let submit = job.submit_time.unwrap();
        assert_eq!(store.get("dev", "69", submit).unwrap().script, script);
        // Selected again, in this session or the next: not asked again.
        assert_eq!(
            keep(&r, &reg, "dev", &asked, &job, T).await,
            KeepOutcome::Skipped("asked already")
        );
        assert_eq!(
            keep(&r, &reg, "dev", &Asked::default(), &job, T).await,
            KeepOutcome::Skipped("kept already")
        );
        assert_eq!(scripts(&r), 1);
    }

    #[test]
    fn only_what_slurmctld_answered_is_kept_and_only_when_on() {
        use crate::payload::DetailSource;
        let read = Ok((running(), DetailSource::Scontrol));
        assert_eq!(to_keep(&read, true).and_then(|d| d.id), running().id);
        assert!(to_keep(&read, false).is_none());
        assert!(to_keep(&Ok((running(), DetailSource::Sacct)), true).is_none());
        assert!(to_keep(&Err("ssh: timed out".into()), true).is_none());
    }

    #[tokio::test]
    async fn launched_interactive_and_refused_jobs_are_not_kept() {
        let d = tempfile::tempdir().unwrap();
        let reg = Registry::open(d.path());
        let r = FakeRemote::default();
        r.on(&["id", "-un"], vec![FakeReply::ok("sduser\n")]);
        r.on(
            &["scontrol", "write", "batch_script"],
            vec![FakeReply::fail(
                1,
                "slurm_job_batch_script: Access/permission denied\n",
            )],
        );
        // slurmdash launched it: its staged script is on the cluster.
        reg.add(crate::registry::tests::entry("l1", 69)).unwrap();
        let job = running();
        assert_eq!(
            keep(&r, &reg, "dev", &Asked::default(), &job, T).await,
            KeepOutcome::Skipped("launched by slurmdash")
        );
        // The same id on another cluster is another job: asked, and refused.
        let out = keep(&r, &reg, "other", &Asked::default(), &job, T).await;
        match out {
            KeepOutcome::Failed(e) => assert!(e.contains("permission denied"), "{e}"),
            o => panic!("{o:?}"),
        }
        // srun/salloc jobs have no batch script.
        let mut interactive = running();
        for (k, v) in interactive.fields.iter_mut() {
            if k == "BatchFlag" {
                *v = "0".into();
            }
        }
        assert_eq!(
            keep(&r, &reg, "other", &Asked::default(), &interactive, T).await,
            KeepOutcome::Skipped("not a batch job")
        );
        assert_eq!(scripts(&r), 1);
        assert!(!KeptScripts::under(d.path()).dir().join("other").exists());
    }

    /// Under `--all` the user selects other users' jobs: their scripts are not kept on
    /// this laptop (nor even asked for); the user's own are.
    #[tokio::test]
    async fn another_user_s_job_is_not_kept() {
        let d = tempfile::tempdir().unwrap();
        let reg = Registry::open(d.path());
        let r = FakeRemote::default();
        r.on(&["id", "-un"], vec![FakeReply::ok("alice\n")]);
        r.on(
            &["scontrol", "write", "batch_script"],
            vec![FakeReply::ok("#!/bin/bash\necho theirs\n")],
        );
        let job = running();
        assert_eq!(
            keep(&r, &reg, "dev", &Asked::default(), &job, T).await,
            KeepOutcome::Skipped("another user's job")
        );
        assert_eq!(scripts(&r), 0);
        assert!(!KeptScripts::under(d.path()).dir().join("dev").exists());
    }
}
