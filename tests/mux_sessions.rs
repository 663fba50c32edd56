//! A shared master carries every slurmdash process's sessions, and the login node's sshd
//! allows only `MaxSessions` (10 by default) at once on one connection: sessions it refuses
//! are asked for again, so commands from several processes at once all run.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{s, ssh_config, RuntimeDir};
use slurmdash::remote::{Remote, SharedMasters, SshOptions, SshRemote};

/// A remote as one slurmdash process makes it: the dev cluster's shared master in `rt`.
fn process(rt: &RuntimeDir) -> Arc<dyn Remote> {
    std::fs::create_dir_all(rt.slurmdash_dir()).expect("socket dir");
    let mut o = SshOptions::new(vec!["slurmdash-dev".into()]);
    o.ssh_config = Some(ssh_config());
    o.persist = Duration::from_secs(5);
    o.shared = Some(SharedMasters {
        dir: rt.slurmdash_dir(),
        cluster: "mux".into(),
        state_dir: None,
    });
    Arc::new(SshRemote::new(o).expect("ssh remote"))
}

#[tokio::test]
async fn three_processes_running_six_commands_each_over_one_master_all_succeed() {
    let rt = RuntimeDir::new();
    let remotes: Vec<Arc<dyn Remote>> = (0..3).map(|_| process(&rt)).collect();
    // All three attach to the same master before the burst.
    for r in &remotes {
        let out = r
            .run(&s(&["true"]), None, Duration::from_secs(30))
            .await
            .expect("first command");
        assert_eq!(out.code, Some(0));
    }
    assert_eq!(
        rt.sockets().len(),
        1,
        "one shared master: {:?}",
        rt.sockets()
    );
    let t0 = Instant::now();
    let mut runs = Vec::new();
    for (p, r) in remotes.iter().enumerate() {
        for i in 0..6 {
            let r = r.clone();
            runs.push(tokio::spawn(async move {
                let out = r
                    .run(
                        &s(&["sh", "-c", &format!("sleep 1; echo {p}-{i}")]),
                        None,
                        Duration::from_secs(30),
                    )
                    .await;
                (p, i, out)
            }));
        }
    }
    let mut ok = 0;
    for run in runs {
        let (p, i, out) = run.await.expect("task");
        let out = out.unwrap_or_else(|e| panic!("command {p}-{i} failed: {e}"));
        assert_eq!(out.stdout_lossy().trim(), format!("{p}-{i}"));
        ok += 1;
    }
    assert_eq!(ok, 18);
    println!(
        "18 one-second commands from 3 processes over one master (sshd allows 10 sessions at once): {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    for r in &remotes {
        r.close().await;
    }
}
