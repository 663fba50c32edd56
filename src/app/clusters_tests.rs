//! Several clusters in one App: messages come labelled with their cluster, the same job id
//! on two clusters is two rows, commands go to the cluster of the jobs they name.

use crate::action::PollMsg;
use std::time::Duration;

use super::tests::{app, code, jobs, key, now};
use super::*;
use crate::payload::Refresh;

/// The dev fixture's jobs on cluster 0 ("dev") and the same ids on cluster 1 ("polar").
fn two() -> App {
    let mut a = app();
    let ix = a.add_cluster(ClusterState::new(
        "polar",
        "your jobs",
        Duration::from_secs(5),
        now(),
    ));
    assert_eq!(ix, 1);
    for ix in [0, 1] {
        a.handle(Msg::Cluster(
            ix,
            Box::new(Msg::queue(Ok(jobs()), now(), Duration::from_millis(5))),
        ));
    }
    a
}

fn rows_of(a: &App, id: &str) -> Vec<String> {
    a.queue
        .shown()
        .jobs()
        .iter()
        .filter(|j| j.id.as_str() == id)
        .map(|j| j.cluster.to_string())
        .collect()
}

fn select(a: &mut App, cluster: u16, id: &str) {
    let want: JobId = id.parse::<JobId>().expect("id").on(cluster);
    a.queue.shown_mut().select_id(&want);
    a.handle(Msg::Resize(120, 40));
    assert_eq!(a.queue.shown().selected_id(), Some(&want));
}

#[test]
fn the_same_id_on_two_clusters_is_two_rows_named_by_cluster() {
    let a = two();
    assert_eq!(a.queue.shown().len(), 2 * jobs().len());
    assert_eq!(rows_of(&a, "237"), ["dev", "polar"]);
    assert!(a
        .queue
        .shown()
        .shown_columns()
        .contains(&crate::queue::Column::Cluster));
    assert!(
        !app()
            .queue
            .shown()
            .shown_columns()
            .contains(&crate::queue::Column::Cluster),
        "one cluster: no CLUSTER column"
    );
}

#[test]
fn a_refresh_replaces_only_its_own_clusters_rows() {
    let mut a = two();
    let fewer: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| j.id.as_str() != "237")
        .collect();
    a.handle(Msg::Cluster(
        1,
        Box::new(Msg::queue(Ok(fewer), now(), Duration::from_millis(5))),
    ));
    // 237 left polar's squeue: kept (until sacct says how it ended) but dev's is untouched.
    assert_eq!(rows_of(&a, "237"), ["dev", "polar"]);
    let dev_rows = a
        .queue
        .shown()
        .jobs()
        .iter()
        .filter(|j| j.id.cluster() == 0)
        .count();
    assert_eq!(dev_rows, jobs().len());
}

#[test]
fn cancelling_a_job_goes_to_its_cluster_with_slurms_id() {
    let mut a = two();
    select(&mut a, 1, "248");
    let cmds = a.handle(key('D'));
    let ops: Vec<&(u16, Cmd)> = cmds
        .iter()
        .filter(|(_, c)| matches!(c, Cmd::Op(_)))
        .collect();
    assert_eq!(ops.len(), 1, "{cmds:?}");
    let (ix, Cmd::Op(op)) = ops[0] else {
        unreachable!()
    };
    assert_eq!(*ix, 1, "to polar's workers");
    assert_eq!(op.ids.len(), 1);
    assert_eq!(op.ids[0].as_str(), "248", "Slurm sees its own id");
    assert_eq!(a.queue.shown().busy(&op.ids[0]), Some("cancelling…"));
    let dev_248 = "248".parse::<JobId>().expect("id");
    assert_eq!(
        a.queue.shown().busy(&dev_248),
        None,
        "dev's 248 is not touched"
    );
}

#[test]
fn a_cluster_that_fails_keeps_its_rows_as_stale_and_the_others_carry_on() {
    let mut a = two();
    a.handle(Msg::Cluster(
        1,
        Box::new(Msg::Poll(PollMsg::Queue(Box::new(Refresh {
            result: Err("`squeue` on polar-login failed (exit 1): Socket timed out".into()),
            extra: None,
            conn: None,
            at: now(),
            took: Duration::from_secs(10),
        })))),
    ));
    let polar_237 = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.id.cluster() == 1 && j.id.as_str() == "237")
        .cloned()
        .expect("polar's rows stay");
    let dev_237 = a
        .queue
        .shown()
        .jobs()
        .iter()
        .find(|j| j.id.cluster() == 0 && j.id.as_str() == "237")
        .cloned()
        .expect("dev's rows stay");
    assert!(a.queue.shown().is_stale(&polar_237));
    assert!(!a.queue.shown().is_stale(&dev_237));
    let polar = a.cluster_by_ix(1).expect("polar");
    assert!(polar
        .status
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("Socket timed out")));
    assert!(a.cluster_by_ix(0).expect("dev").status.last_error.is_none());
}

#[test]
fn each_cluster_refreshes_on_its_own_and_the_answer_goes_back_to_it() {
    let mut a = two();
    let cmds = a.handle(Msg::Cluster(1, Box::new(Msg::Poll(PollMsg::PollDue))));
    assert_eq!(cmds, vec![(1, Cmd::PollQueue)]);
    // polar's refresh is out; dev's timer still gets dev a refresh.
    let cmds = a.handle(Msg::Cluster(0, Box::new(Msg::Poll(PollMsg::PollDue))));
    assert_eq!(cmds, vec![(0, Cmd::PollQueue)]);
}

#[test]
fn a_log_tail_goes_to_every_cluster_each_with_its_own_targets() {
    let a = two();
    let t = |c: u16| {
        (
            "237".parse::<JobId>().expect("id").on(c),
            crate::logview::Stream::Stdout,
            "/x".to_string(),
        )
    };
    let mut out = Vec::new();
    a.route(0, vec![Cmd::Tail(vec![t(1)])], &mut out);
    assert_eq!(
        out,
        vec![(0, Cmd::Tail(Vec::new())), (1, Cmd::Tail(vec![t(1)]))],
        "dev stops its tails, polar tails its job"
    );
}

#[test]
fn cluster_command_focuses_a_shown_cluster_and_adds_another() {
    let mut a = two();
    for c in ":cluster polar".chars() {
        a.handle(key(c));
    }
    a.handle(code(crossterm::event::KeyCode::Enter));
    assert_eq!(a.view_cluster(), 1, "polar's first row is selected");
    assert_eq!(a.shown().name, "polar");
    for c in ":cluster gpu3".chars() {
        a.handle(key(c));
    }
    let cmds = a.handle(code(crossterm::event::KeyCode::Enter));
    assert!(
        cmds.iter()
            .any(|(_, c)| *c == Cmd::AddCluster("gpu3".into())),
        "{cmds:?}"
    );
}

#[test]
fn the_launch_form_stays_on_the_cluster_it_was_opened_for() {
    let mut a = two();
    select(&mut a, 1, "248");
    let cmds = a.handle(key('n'));
    assert!(cmds.contains(&(1, Cmd::FetchLaunchFacts)), "{cmds:?}");
    // Another cluster's refresh arrives and the selection moves to dev's rows.
    a.handle(Msg::Cluster(
        0,
        Box::new(Msg::queue(Ok(jobs()), now(), Duration::from_millis(5))),
    ));
    a.queue
        .shown_mut()
        .select_id(&"237".parse::<JobId>().expect("id"));
    a.handle(Msg::Resize(120, 40));
    assert_eq!(a.view_cluster(), 1);
    assert_eq!(a.shown().name, "polar", "the form's keys work on polar");
}

#[test]
fn events_view_scrolls_over_every_cluster_s_events() {
    let mut a = two();
    for (ix, n) in [(0u16, 3usize), (1, 4)] {
        for i in 0..n {
            let now = a.now;
            a.clusters[ix].push_event(
                None,
                "",
                EventKind::Note,
                &format!("note {i} of cluster {ix}"),
                now,
            );
        }
    }
    a.handle(key(':'));
    for c in "events".chars() {
        a.handle(key(c));
    }
    a.handle(code(crossterm::event::KeyCode::Enter));
    assert!(a.overlays.events_view.open);
    for _ in 0..20 {
        a.handle(key('k'));
    }
    assert_eq!(
        a.overlays.events_view.scroll, 6,
        "7 events in all: 6 lines up at most"
    );
    let logs: Vec<(Option<&str>, &Events)> = a
        .clusters()
        .map(|c| (Some(c.name.as_str()), &c.events))
        .collect();
    assert_eq!(merged_events(&logs).len(), 7);
    a.handle(code(crossterm::event::KeyCode::Esc));
    assert!(!a.overlays.events_view.open);
}

/// With two clusters, `:partitions`, `:stats`, `:usage` and `:events` stay open while the
/// selection moves to the other cluster's rows and back (the keys a full-screen view lets
/// through move the queue under it); `:partitions` then reads the partitions of the cluster
/// now on screen.
#[test]
fn every_overlay_stays_open_while_the_selection_moves_across_clusters() {
    use super::insight::View;
    let run = |a: &mut App, cmd: &str| {
        a.handle(key(':'));
        for c in cmd.chars() {
            a.handle(key(c));
        }
        a.handle(code(crossterm::event::KeyCode::Enter))
    };
    for (cmd, want) in [
        ("partitions", Some(View::Partitions)),
        ("stats", Some(View::Stats)),
        ("usage", Some(View::Usage)),
        ("events", None),
    ] {
        let mut a = two();
        select(&mut a, 0, "248");
        assert_eq!(a.view_cluster(), 0);
        run(&mut a, cmd);
        let open = |a: &App| match want {
            Some(v) => a.overlays.view == Some(v),
            None => a.overlays.events_view.open,
        };
        assert!(open(&a), ":{cmd} opened");
        // To the other cluster's row and back, as the user would with the view open.
        select(&mut a, 1, "248");
        assert_eq!(a.view_cluster(), 1);
        let cmds = a.handle(Msg::Tick(now() + chrono::Duration::seconds(1)));
        assert!(open(&a), ":{cmd} still open on the other cluster's row");
        if want == Some(View::Partitions) {
            assert!(
                cmds.iter()
                    .any(|(ix, c)| *ix == 1 && matches!(c, Cmd::FetchPartitions)),
                "the partitions of the cluster now on screen are read: {cmds:?}"
            );
        }
        select(&mut a, 0, "248");
        a.handle(Msg::Tick(now() + chrono::Duration::seconds(2)));
        assert!(open(&a), ":{cmd} still open back on the first cluster");
        a.handle(code(crossterm::event::KeyCode::Esc));
        assert!(!open(&a), "esc closes :{cmd}");
    }
}
