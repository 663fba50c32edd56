use super::*;
use crate::slurm::parse::parse_squeue;
use crate::slurm::synth::squeue_rows;

pub(crate) const ME: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");
const ME_R: &str = include_str!("../../tests/fixtures/slurm/squeue_me_r.out");

pub(crate) fn jobs(out: &str) -> Vec<Job> {
    parse_squeue(out).unwrap()
}

pub(crate) fn view(out: &str) -> QueueView {
    let mut v = QueueView::default();
    v.set_jobs(jobs(out));
    v
}

fn ids(v: &QueueView) -> Vec<String> {
    v.rows().map(|r| r.job.id.to_string()).collect()
}

fn select(v: &mut QueueView, id: &str) {
    let i = v.rows().position(|r| r.job.id.as_str() == id).unwrap();
    v.select_index(i);
}

fn sel(v: &QueueView) -> String {
    v.selected_id().unwrap().to_string()
}

#[test]
fn collapsed_record_is_one_row_with_its_task_count() {
    let v = view(ME);
    assert_eq!(v.len(), 20);
    let arr = v
        .rows()
        .find(|r| r.job.id.as_str() == "236_[4-99%4]")
        .unwrap();
    assert_eq!(
        arr.kind,
        RowKind::Collapsed {
            tasks: 96,
            truncated: false
        }
    );
    assert_eq!(name_suffix(&arr).unwrap(), " (96 tasks)");
    // Running tasks stay individual rows.
    for t in ["236_0", "236_1", "236_2", "236_3"] {
        let r = v.rows().find(|r| r.job.id.as_str() == t).unwrap();
        assert_eq!(r.kind, RowKind::Job);
    }
    let long = v.rows().find(|r| r.job.id.base() == 240).unwrap();
    assert!(matches!(
        long.kind,
        RowKind::Collapsed {
            truncated: true,
            ..
        }
    ));
}

#[test]
fn pending_tasks_printed_one_per_line_are_folded() {
    let raw = jobs(ME_R);
    let pending_236 = raw
        .iter()
        .filter(|j| j.id.base() == 236 && j.state == JobState::Pending)
        .count();
    assert_eq!(pending_236, 96);
    let v = view(ME_R);
    let arr: Vec<QueueRow> = v.rows().filter(|r| r.is_collapsed()).collect();
    let a236 = arr.iter().find(|r| r.job.id.base() == 236).unwrap();
    assert_eq!(a236.job.id.as_str(), "236_[4-99]");
    assert_eq!(
        a236.kind,
        RowKind::Collapsed {
            tasks: 96,
            truncated: false
        }
    );
    // With -r squeue lists every task, so the long array's count is exact.
    let a240 = arr.iter().find(|r| r.job.id.base() == 240).unwrap();
    let n240 = raw.iter().filter(|j| j.id.base() == 240).count() as u64;
    assert!(n240 > 9);
    assert_eq!(
        a240.kind,
        RowKind::Collapsed {
            tasks: n240,
            truncated: false
        }
    );
    // Same rows as without -r: the folding hides the difference.
    assert_eq!(v.len(), view(ME).len());
}

#[test]
fn expand_lists_the_tasks_and_folds_back() {
    let mut v = view(ME);
    select(&mut v, "236_[4-99%4]");
    let at = v.selected_index().unwrap();
    assert!(v.selected_is_collapsed());
    assert!(v.toggle_expand());
    assert_eq!(v.len(), 20 - 1 + 96);
    let tasks: Vec<QueueRow> = v
        .rows()
        .filter(|r| r.kind == RowKind::Task { synthetic: true })
        .collect();
    assert_eq!(tasks.len(), 96);
    assert_eq!(tasks[0].job.id.as_str(), "236_4");
    assert_eq!(tasks[95].job.id.as_str(), "236_99");
    assert_eq!(tasks[0].job.reason.as_deref(), Some("JobArrayTaskLimit"));
    // The collapsed row is gone: the first task took its place.
    assert_eq!(v.selected_index(), Some(at));
    assert_eq!(sel(&v), "236_4");
    assert!(v.selected_is_expanded());
    // Expansion survives a refresh.
    v.set_jobs(jobs(ME));
    assert_eq!(v.len(), 115);
    assert_eq!(sel(&v), "236_4");
    // On any task: fold back, selecting the array row.
    select(&mut v, "236_50");
    assert!(v.toggle_expand());
    assert_eq!(v.len(), 20);
    assert_eq!(sel(&v), "236_[4-99%4]");
    // A plain job neither expands nor folds.
    select(&mut v, "242");
    assert!(!v.toggle_expand());
}

#[test]
fn expanding_a_cut_task_list_keeps_the_record_for_the_rest() {
    let mut v = view(ME);
    let rec = v
        .rows()
        .find(|r| r.job.id.base() == 240)
        .unwrap()
        .job
        .id
        .clone();
    assert!(v.select_id(&rec));
    assert!(v.toggle_expand());
    let listed: Vec<String> = v
        .rows()
        .filter(|r| r.job.id.base() == 240)
        .map(|r| r.job.id.to_string())
        .collect();
    // Nine complete elements before squeue's cut, then the record itself.
    assert_eq!(
        &listed[..3],
        &["240_7".to_string(), "240_11".into(), "240_18".into()]
    );
    assert_eq!(listed.len(), 10); // 7,11,18,28,29,44,63,96,99 + record
    assert_eq!(listed.last().unwrap(), rec.as_str());
}

#[test]
fn expanding_tasks_from_squeue_r_shows_the_real_rows() {
    let mut v = view(ME_R);
    select(&mut v, "236_[4-99]");
    assert!(v.toggle_expand());
    let tasks: Vec<QueueRow> = v
        .rows()
        .filter(|r| r.kind == RowKind::Task { synthetic: false })
        .collect();
    assert!(tasks.len() >= 96);
    assert!(tasks.iter().all(|r| r.job.id.array_task().is_some()));
}

#[test]
fn selection_follows_the_job_across_refreshes() {
    let mut v = view(ME);
    select(&mut v, "234");
    let mut reordered = jobs(ME);
    reordered.reverse();
    reordered.retain(|j| j.id.as_str() != "248");
    v.set_jobs(reordered);
    assert_eq!(sel(&v), "234");

    // The selected job vanished: the row now at its index is selected.
    select(&mut v, "235");
    let at = v.selected_index().unwrap();
    let mut gone = v.jobs().to_vec();
    gone.retain(|j| j.id.as_str() != "235");
    let expect = gone
        .get(at)
        .map(|j| j.id.to_string())
        .unwrap_or_else(|| gone.last().unwrap().id.to_string());
    v.set_jobs(gone);
    assert_eq!(v.selected_index(), Some(at));
    assert_eq!(sel(&v), expect);

    // Everything gone, then back: no panic, first row selected.
    v.set_jobs(Vec::new());
    assert_eq!(v.selected_id(), None);
    v.set_jobs(jobs(ME));
    assert_eq!(v.selected_index(), Some(0));
}

#[test]
fn a_collapsed_array_stays_selected_as_its_tasks_start() {
    let mut v = view(ME);
    select(&mut v, "236_[4-99%4]");
    let later = ME.replace("236_[4-99%4]", "236_[5-99%4]");
    v.set_jobs(jobs(&later));
    assert_eq!(sel(&v), "236_[5-99%4]");
}

#[test]
fn sort_by_every_column_both_ways() {
    let mut v = view(ME);
    select(&mut v, "233");
    for &col in Column::ALL {
        for desc in [false, true] {
            v.sort_by(Some(col), desc);
            assert_eq!(sel(&v), "233", "{col:?} keeps the selection");
            let rows: Vec<QueueRow> = v.rows().collect();
            assert_eq!(rows.len(), 20);
            for w in rows.windows(2) {
                match col.compare(&w[0], &w[1]) {
                    Some(o) => {
                        let o = if desc { o.reverse() } else { o };
                        assert_ne!(o, Ordering::Greater, "{col:?} desc={desc}");
                    }
                    // Missing values only after present ones.
                    None => assert!(
                        col.compare(&w[1], &w[1]).is_none(),
                        "{col:?}: a value after a missing one"
                    ),
                }
            }
        }
    }
}

#[test]
fn sort_examples_a_user_would_check() {
    let mut v = view(ME);
    v.set_filter("pending");
    v.sort_by(Some(Column::Start), false);
    // Earliest estimate first; jobs without an estimate after, either way.
    assert_eq!(
        &ids(&v)[..5],
        &["247", "248", "249+0", "249+1", "236_[4-99%4]"]
    );
    v.reverse_sort();
    assert_eq!(
        &ids(&v)[..5],
        &["249+1", "249+0", "248", "247", "236_[4-99%4]"]
    );
    v.set_filter("");
    v.sort_by(Some(Column::Gpus), true);
    assert_eq!(&ids(&v)[..2], &["233", "237"]);
    v.sort_by(Some(Column::Id), false);
    assert_eq!(&ids(&v)[..4], &["230", "231", "233", "234"]);
    let i236: Vec<String> = ids(&v)
        .into_iter()
        .filter(|s| s.starts_with("236"))
        .collect();
    assert_eq!(i236, ["236_0", "236_1", "236_2", "236_3", "236_[4-99%4]"]);
    v.sort_by(Some(Column::Name), false);
    assert_eq!(v.row(0).unwrap().job.name, "array-job");
    v.sort_by(Some(Column::Where), false);
    let pending_start = ids(&v);
    v.sort_by(Some(Column::Start), true);
    let last = ids(&v).last().unwrap().clone();
    assert!(v.rows().last().unwrap().job.start_time.is_none(), "{last}");
    assert_ne!(pending_start, ids(&v));
}

#[test]
fn cycle_walks_the_visible_columns_then_back_to_squeue_order() {
    let mut v = QueueView::new(vec![Column::Id, Column::Name, Column::State]);
    v.set_jobs(jobs(ME));
    let squeue_order = ids(&v);
    v.reverse_sort();
    assert!(v.sort().descending);
    let mut rev = squeue_order.clone();
    rev.reverse();
    assert_eq!(ids(&v), rev);
    let mut seen = Vec::new();
    for _ in 0..4 {
        v.cycle_sort();
        seen.push(v.sort().column);
        assert!(!v.sort().descending);
    }
    assert_eq!(
        seen,
        [
            Some(Column::Id),
            Some(Column::Name),
            Some(Column::State),
            None
        ]
    );
    assert_eq!(ids(&v), squeue_order);
    // A sort column dropped from the config falls back to squeue order.
    v.sort_by(Some(Column::State), false);
    v.set_columns(vec![Column::Id, Column::Name]);
    assert_eq!(v.sort().column, None);
    // What is drawn follows at once.
    assert_eq!(v.shown_columns(), [Column::Id, Column::Name]);
}

#[test]
fn filter_on_id_name_state_partition_ignoring_case() {
    let mut v = view(ME);
    let n = |v: &QueueView| v.len();
    v.set_filter("HOG");
    assert_eq!(ids(&v), ["248", "247", "234"]);
    v.set_filter("polar");
    assert_eq!(ids(&v), ["237"]);
    v.set_filter("running");
    assert_eq!(n(&v), 8);
    v.set_filter("pd");
    assert_eq!(n(&v), 12);
    v.set_filter("名前");
    assert_eq!(ids(&v), ["235"]);
    v.set_filter("\"double\"");
    assert_eq!(ids(&v), ["235"]);
    v.set_filter("236");
    assert_eq!(n(&v), 5);
    v.set_filter("nothing like this");
    assert!(v.is_empty());
    assert_eq!(v.selected_job(), None);
    v.set_filter("");
    assert_eq!(n(&v), 20);
    assert_eq!(v.total(), 20);
}

#[test]
fn filter_keeps_the_selection_when_it_stays_visible() {
    let mut v = view(ME);
    select(&mut v, "234");
    v.set_filter("hog");
    assert_eq!(sel(&v), "234");
    v.set_filter("");
    assert_eq!(sel(&v), "234");
}

#[test]
fn counts_by_state_count_array_tasks() {
    let v = view(ME);
    let c = v.counts_by_state();
    assert_eq!(c[0], (JobState::Pending, 4 + 96 + 2 + 9 + 4));
    assert_eq!(c[1], (JobState::Running, 8));
    assert_eq!(v.counts_label(), "115 PD · 8 R");
    assert_eq!(v.state_counts()[1], ("R".to_string(), 8));
    assert!(QueueView::default().counts_by_state().is_empty());
}

#[test]
fn counts_follow_each_refresh_and_each_cluster() {
    // Counted when the jobs change, not per frame: a refresh must still show in them.
    let mut v = view(ME);
    assert_eq!(v.counts_label(), "115 PD · 8 R");
    let mut running: Vec<Job> = jobs(ME)
        .into_iter()
        .filter(|j| j.state == JobState::Running)
        .collect();
    v.set_jobs(running.clone());
    assert_eq!(v.counts_label(), "8 R");
    // Two clusters: each one's counts, and all of them together.
    for j in running.iter_mut().take(3) {
        j.id.set_cluster(1);
    }
    v.set_jobs(running);
    assert_eq!(v.state_counts_of(0), vec![("R".to_string(), 5)]);
    assert_eq!(v.state_counts_of(1), vec![("R".to_string(), 3)]);
    assert_eq!(v.state_counts(), vec![("R".to_string(), 8)]);
    v.set_jobs(Vec::new());
    assert!(v.counts_by_state().is_empty());
}

#[test]
fn scrolling_a_huge_queue_keeps_the_selection_in_view() {
    let mut v = QueueView::default();
    v.set_jobs(parse_squeue(&squeue_rows(ME, 20_000)).unwrap());
    assert!(v.len() > 19_000);
    let h = 10;
    v.set_viewport(h);
    v.select_last();
    let len = v.len();
    assert_eq!(v.offset_for(h), len - h);
    // Moving up inside the window does not scroll.
    v.select_prev();
    assert_eq!(v.offset_for(h), len - h);
    v.page_up(h);
    assert_eq!(v.selected_index(), Some(len - 1 - 1 - h));
    assert_eq!(v.offset_for(h), len - 1 - 1 - h);
    v.select_first();
    assert_eq!(v.offset_for(h), 0);
    v.page_down(h);
    v.page_down(h);
    assert_eq!(v.selected_index(), Some(2 * h));
    assert_eq!(v.offset_for(h), 2 * h + 1 - h);
    // A click on the third visible row.
    v.click(2, h);
    assert_eq!(v.selected_index(), Some(2 * h + 1 - h + 2));
    // A smaller pane than the App said still shows the selection.
    let small = v.offset_for(3);
    let s = v.selected_index().unwrap();
    assert!(small <= s && s < small + 3);
}

#[test]
fn a_badge_widens_the_name_column_so_the_name_stays_readable() {
    let mut v = view(ME);
    let before = v.column_width(Column::Name).unwrap();
    let job = v
        .rows()
        .find(|r| r.job.id.array().is_none() && r.job.id.het_offset().is_none())
        .map(|r| r.job.clone())
        .unwrap();
    let plain: u64 = job.id.as_str().parse().unwrap();
    let badge = "↻2/10 resumed after TIMEOUT";
    v.set_badges(0, HashMap::from([(plain, badge.to_string())]));
    let after = v.column_width(Column::Name).unwrap();
    use unicode_width::UnicodeWidthStr;
    let want = (crate::queue::format::one_line(&job.name).width() + 1 + badge.width()).min(40);
    assert!(
        usize::from(after) >= want && after >= before,
        "name column {before} -> {after}, wanted {want}"
    );
}

/// A refresh of the very same records keeps the rows as they are; one whose record changed
/// in place (same ids, same length, a new state and a longer name) is shown as it now is.
#[test]
fn an_unchanged_refresh_keeps_the_rows_and_a_changed_record_shows() {
    let mut v = view(ME);
    let before = ids(&v);
    let same: Vec<Job> = v.jobs().to_vec();
    v.set_jobs(same);
    assert_eq!(ids(&v), before);
    let mut changed: Vec<Job> = v.jobs().to_vec();
    let i = changed
        .iter()
        .position(|j| j.state.status() == crate::slurm::model::Status::Pending)
        .unwrap();
    let wide = "a-much-longer-name-than-any-in-the-fixture";
    changed[i].state = JobState::Running;
    changed[i].name = wide.into();
    assert!(!changed[i].same(&v.jobs()[i]));
    let id = changed[i].id.clone();
    v.set_jobs(changed);
    let row = v.rows().find(|r| r.job.id == id).unwrap();
    assert_eq!(
        (row.job.state.status(), row.job.name.as_str()),
        (crate::slurm::model::Status::Running, wide)
    );
    let name_width = v.widths.iter().find(|(c, _)| *c == Column::Name).unwrap().1;
    assert!(usize::from(name_width) >= 20, "{name_width}");
}

/// A sweep's ended tasks keep their own rows (the dashboard shows a launch's ended jobs):
/// the fold counts them among the ended runs, never as pending.
#[test]
fn a_sweeps_ended_tasks_keep_their_rows_and_count_as_ended() {
    let mut v = view(ME);
    let mut js = v.jobs().to_vec();
    let ended: Vec<JobId> = js
        .iter()
        .filter(|j| j.id.base() == 236 && j.id.array_task().is_some_and(|t| t < 2))
        .map(|j| j.id.clone())
        .collect();
    assert_eq!(ended.len(), 2, "two running tasks in the fixture");
    for j in js.iter_mut().filter(|j| ended.contains(&j.id)) {
        j.state = JobState::Failed;
    }
    v.set_jobs(js);
    v.set_sweeps(0, HashMap::from([(236, 110)]));
    let row = v
        .rows()
        .find(|r| r.job.id.base() == 236 && r.is_collapsed())
        .unwrap();
    assert_eq!(
        name_suffix(&row).unwrap(),
        " (sweep of 110: 2 running, 96 pending, 12 ended)"
    );
    let rows: Vec<String> = v.rows().map(|r| r.job.id.to_string()).collect();
    for id in &ended {
        assert!(
            v.rows().any(|r| &r.job.id == id),
            "{id} has its own row: {rows:?}"
        );
    }
}

#[test]
fn a_sweep_is_one_row_with_its_counts_until_expanded() {
    let mut v = view(ME);
    let before = v.len();
    v.set_sweeps(0, HashMap::from([(236, 110)]));
    // 236_0..3 run, 236_[4-99%4] wait: one row for the 100 in the queue.
    assert_eq!(v.len(), before - 4);
    let row = v.rows().find(|r| r.job.id.base() == 236).unwrap();
    assert_eq!(row.job.id.as_str(), "236_[0-99]");
    assert_eq!(row.job.state, JobState::Running);
    assert_eq!(
        row.kind,
        RowKind::Sweep {
            tasks: 100,
            running: 4,
            total: 110
        }
    );
    assert_eq!(
        name_suffix(&row).unwrap(),
        " (sweep of 110: 4 running, 96 pending, 10 ended)"
    );
    assert!(row.is_collapsed());
    // Selected, it stays selected across a refresh; enter lists its tasks.
    select(&mut v, "236_[0-99]");
    v.set_jobs(jobs(ME_R));
    assert_eq!(sel(&v), "236_[0-99]");
    assert!(v.toggle_expand());
    assert!(v.rows().any(|r| r.job.id.as_str() == "236_2"));
    assert!(!v.rows().any(|r| matches!(r.kind, RowKind::Sweep { .. })));
    // Not a sweep any more (the registry says so): the usual rows.
    assert!(v.toggle_expand());
    v.set_sweeps(0, HashMap::new());
    assert!(v.rows().any(|r| r.job.id.as_str() == "236_0"));
}

/// `s` seconds after noon on 29 Nov 2026.
fn t(s: i64) -> chrono::NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(2026, 11, 29)
        .unwrap()
        .and_hms_opt(12, 0, 0)
        .unwrap()
        + chrono::Duration::seconds(s)
}

/// The TIME column of a running job counts on between refreshes (from when its cluster's
/// list was read, or from a newer read of that one job), never past its limit; a pending
/// job's stays `-`, and without a known read time nothing is added.
#[test]
fn a_running_jobs_time_counts_on_between_reads_up_to_its_limit() {
    let mut js = jobs(ME);
    let run = js
        .iter()
        .position(|j| j.state == JobState::Running)
        .unwrap();
    let pend = js
        .iter()
        .position(|j| j.state == JobState::Pending)
        .unwrap();
    js[run].time_used = crate::slurm::model::SlurmDuration::from_secs(40);
    js[run].time_limit = crate::slurm::model::SlurmDuration::from_secs(600);
    let (run_id, pend_id) = (js[run].id.clone(), js[pend].id.clone());
    let mut v = QueueView::default();
    v.set_jobs(js);
    let job = |v: &QueueView, id: &JobId| v.jobs().iter().find(|j| &j.id == id).unwrap().clone();
    let r = job(&v, &run_id);
    assert_eq!(
        v.time_text(&r, t(30)),
        "40s/10m",
        "no read time known: as read"
    );
    v.set_listed_at(run_id.cluster(), t(0));
    assert_eq!(v.time_text(&r, t(0)), "40s/10m");
    assert_eq!(v.time_text(&r, t(25)), "1m5s/10m");
    assert_eq!(v.time_text(&r, t(3600)), "10m/10m", "never past the limit");
    let p = job(&v, &pend_id);
    assert!(
        v.time_text(&p, t(25)).starts_with("-/"),
        "{}",
        v.time_text(&p, t(25))
    );
    // A newer read of the pending job says it started 5 s ago: its row counts from that read.
    assert!(v.patch_job(&pend_id, t(20), |r| {
        r.state = JobState::Running;
        r.time_used = crate::slurm::model::SlurmDuration::from_secs(5);
        r.time_limit = crate::slurm::model::SlurmDuration::from_secs(600);
    }));
    let p = job(&v, &pend_id);
    assert_eq!(v.time_text(&p, t(30)), "15s/10m");
    // The next list is the newest read of every row again.
    let again = v.jobs().to_vec();
    v.set_listed_at(run_id.cluster(), t(60));
    let mut again = again;
    let i = again.iter().position(|j| j.id == pend_id).unwrap();
    again[i].time_used = crate::slurm::model::SlurmDuration::from_secs(45);
    v.set_jobs(again);
    let p = job(&v, &pend_id);
    assert_eq!(v.time_text(&p, t(70)), "55s/10m");
}

/// With two clusters, a refresh of one sets every row again: a row of the other cluster
/// that a newer read patched keeps counting from that read, not from its cluster's older
/// list, until its own cluster is listed again.
#[test]
fn another_clusters_refresh_keeps_a_patched_rows_read_time() {
    let mut js = jobs(ME);
    js.retain(|j| j.state == JobState::Pending);
    js.truncate(1);
    let mut other = js[0].clone();
    other.id.set_cluster(1);
    js.push(other);
    let b = js[1].id.clone();
    let mut v = QueueView::default();
    v.set_jobs(js);
    v.set_listed_at(0, t(0));
    v.set_listed_at(1, t(0));
    // Cluster 1's pending job started: its detail, read at 20 s, says 5 s used.
    assert!(v.patch_job(&b, t(20), |r| {
        r.state = JobState::Running;
        r.time_used = crate::slurm::model::SlurmDuration::from_secs(5);
        r.time_limit = crate::slurm::model::SlurmDuration::from_secs(600);
    }));
    let row = |v: &QueueView| v.jobs().iter().find(|j| j.id == b).unwrap().clone();
    // Cluster 0 is listed again at 40 s (its rows changed); cluster 1's rows are kept.
    let mut again = v.jobs().to_vec();
    again[0].time_limit = crate::slurm::model::SlurmDuration::from_secs(1200);
    v.set_listed_at(0, t(40));
    v.set_jobs(again);
    assert_eq!(
        v.time_text(&row(&v), t(50)),
        "35s/10m",
        "from the detail at 20 s"
    );
    // Cluster 1's own list supersedes the patch.
    let mut again = v.jobs().to_vec();
    again[1].time_used = crate::slurm::model::SlurmDuration::from_secs(50);
    v.set_listed_at(1, t(45));
    v.set_jobs(again);
    assert_eq!(v.time_text(&row(&v), t(50)), "55s/10m");
}
