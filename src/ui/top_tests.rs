use chrono::NaiveDate;
use insta::assert_snapshot;

use super::*;
use crate::slurm::top::{parse_sample, TopTarget};
use crate::ui::queue::tests::text;

fn at(s: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 29)
        .and_then(|d| d.and_hms_opt(4, 0, s))
        .unwrap()
}

/// The pane over the two-node job captured on Slurm 26.05 (a batch script running
/// `srun sh -c 'sleep 300 | cat & SLURMDASH_FAKE_GPU_MIB=2048 yes > /dev/null & wait'`).
fn two_nodes() -> TopState {
    let p = format!(
        "{}/tests/fixtures/slurm/26.05/top_two_nodes.out",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = std::fs::read_to_string(p).unwrap();
    let sample = parse_sample(&out, "SLURMDASH-TOP-fixture", "2611631").unwrap();
    TopState {
        open: true,
        target: Some(TopTarget {
            id: "2611631".parse().unwrap(),
            nodes: vec!["gpu01".into(), "gpu02".into()],
            nodes_skipped: 0,
            timeout_secs: 0,
        }),
        name: "top fixture".into(),
        sample: Some(sample),
        at: Some(at(2)),
        ..TopState::default()
    }
}

fn render(top: &TopState, held: bool, w: u16, h: u16) -> String {
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    TopWidget {
        top,
        theme: &theme,
        now: at(5),
        held,
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

#[test]
fn two_nodes_each_with_its_process_tree_steps_and_gpu_memory() {
    assert_snapshot!(render(&two_nodes(), false, 130, 26));
}

#[test]
fn a_failed_read_over_the_last_sample_and_a_held_repeat() {
    let mut top = two_nodes();
    top.error = Some(
        "srun --overlap into job 2611631 exited 1: srun: error: Unable to confirm allocation for job 2611631: Invalid job id specified".into(),
    );
    top.in_flight = Some(at(4));
    assert_snapshot!(render(&top, true, 110, 9));
}

#[test]
fn the_first_read_under_way() {
    let top = TopState {
        open: true,
        target: Some(TopTarget {
            id: "77".parse().unwrap(),
            nodes: vec!["cpu01".into()],
            nodes_skipped: 0,
            timeout_secs: 0,
        }),
        name: "train\x1b[31m".into(),
        in_flight: Some(at(4)),
        ..TopState::default()
    };
    assert_snapshot!(render(&top, false, 100, 5));
}

#[test]
fn a_job_that_ended_says_it_is_not_read_again() {
    let mut top = two_nodes();
    top.ended = true;
    let s = render(&top, false, 110, 6);
    assert!(s.contains("the job no longer runs: not read again"), "{s}");
    assert!(!s.contains("read again every"), "{s}");
}
