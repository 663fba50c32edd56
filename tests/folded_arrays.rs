//! A folded pending array (`ID_[2-20]`) on the dev cluster: per-job commands (sprio) get the
//! array's own id, which sprio accepts, and the pending-job info says so.

use crate::common;

use common::*;
use slurmdash::io::{fetch, pending};
use slurmdash::slurm::command::SqueueQuery;
use slurmdash::slurm::model::JobId;

#[tokio::test]
async fn sprio_is_asked_about_the_arrays_own_id() {
    let r = remote();
    let dir = scratch(&r, "folded").await;
    // Not eligible for an hour: the tasks stay folded in one pending row.
    let id = sbatch(
        &r,
        &[
            "--begin=now+3600",
            "-a",
            "2-20",
            "-t",
            "1",
            "-D",
            &dir,
            "-J",
            "folded",
            "--wrap",
            "true",
        ],
    )
    .await;
    let outcome = async {
        let q = SqueueQuery {
            jobs: vec![JobId::new(id)],
            ..SqueueQuery::default()
        };
        let jobs = fetch::queue(&r, &q, T).await.expect("squeue");
        let job = jobs
            .into_iter()
            .find(|j| j.id.base() == id)
            .expect("the array in squeue");
        let info = pending::fetch(&r, &job, T).await.expect("pending info");
        // What sprio itself says about the folded id, for the record.
        let folded = run(&r, &["sprio", &format!("--jobs={}", job.id)]).await;
        (job, info, folded)
    }
    .await;
    run(&r, &["scancel", &id.to_string()]).await;
    let (job, info, folded) = outcome;

    assert_eq!(job.id.as_str(), format!("{id}_[2-20]"));
    assert!(
        folded.stderr_lossy().contains("Invalid job id"),
        "sprio still refuses the folded id: {}",
        folded.stderr_lossy()
    );
    assert_eq!(info.asked_as, Some(JobId::new(id)));
    assert!(info.problems.is_empty(), "{:?}", info.problems);
}
