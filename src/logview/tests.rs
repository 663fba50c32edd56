use super::*;

const VP: Viewport = Viewport {
    width: 40,
    height: 10,
};

fn job() -> JobId {
    JobId::new(1234)
}

fn ev(kind: TailKind) -> TailEvent {
    TailEvent {
        job: job(),
        stream: Stream::Stdout,
        path: "/scratch/slurm-1234.out".into(),
        kind,
        credit: Default::default(),
    }
}

fn data(s: &str) -> TailEvent {
    ev(TailKind::Data {
        bytes: s.as_bytes().to_vec(),
        size: 1,
    })
}

fn pane_with(lines: usize) -> LogPane {
    let mut p = LogPane::new(Stream::Stdout);
    p.set_path("/scratch/slurm-1234.out");
    p.apply(ev(TailKind::Reset { offset: 0, size: 0 }));
    let text: String = (0..lines).map(|i| format!("line {i}\n")).collect();
    p.apply(data(&text));
    p
}

#[test]
fn scrolling_up_pauses_and_g_resumes() {
    let mut p = pane_with(100);
    assert!(p.is_following());
    p.scroll_up(3, VP);
    assert!(!p.is_following());
    assert_eq!(p.paused_top(), Some(87));
    // New lines do not move a paused view.
    p.apply(data("more\n"));
    assert_eq!(p.paused_top(), Some(87));
    p.page_up(VP);
    assert_eq!(p.paused_top(), Some(78));
    p.top();
    assert_eq!(p.paused_top(), Some(0));
    p.scroll_up(5, VP);
    assert_eq!(p.paused_top(), Some(0));
    p.bottom_and_follow();
    assert!(p.is_following());
}

#[test]
fn scrolling_down_to_the_end_resumes_follow() {
    let mut p = pane_with(100);
    p.scroll_up(15, VP);
    p.scroll_down(5, VP);
    assert_eq!(p.paused_top(), Some(80));
    assert!(!p.is_following());
    p.page_down(VP);
    assert_eq!(p.paused_top(), Some(89));
    p.scroll_down(1, VP);
    assert!(p.is_following());
}

#[test]
fn search_jumps_and_cycles() {
    let mut p = pane_with(100);
    p.set_search("LINE 1", VP);
    let s = p.search().expect("search");
    // line 1, 10..19, 100? no: 1 and 10-19 = 11 lines
    assert_eq!(s.count(), 11);
    // Following at the bottom: nothing below, so the last match above is picked.
    assert_eq!(s.current_seq(), Some(19));
    assert!(!p.is_following());
    p.next_match(VP);
    assert_eq!(p.search().and_then(Search::current_seq), Some(1));
    assert!(p.paused_top().is_some_and(|t| t <= 1));
    p.prev_match(VP);
    assert_eq!(p.search().and_then(Search::current_seq), Some(19));
    let top = p.paused_top().expect("paused");
    assert!((top..top + 10).contains(&19));
    p.set_search("", VP);
    assert!(p.search().is_none());
}

#[test]
fn search_on_visible_match_keeps_following() {
    let mut p = pane_with(100);
    p.set_search("line 99", VP);
    assert!(p.is_following());
    p.apply(data("line 99 again\n"));
    assert_eq!(p.search().map(Search::count), Some(2));
}

#[test]
fn events_for_other_targets_are_ignored() {
    let mut p = pane_with(3);
    let mut other = data("x\n");
    other.stream = Stream::Stderr;
    p.apply(other);
    let mut other = data("x\n");
    other.path = "/elsewhere".into();
    p.apply(other);
    assert_eq!(p.buffer().len(), 3);
    p.set_path("/scratch/slurm-1234.out");
    assert_eq!(p.buffer().len(), 3, "same path: nothing to reset");
    p.set_path("/scratch/other.out");
    assert!(p.buffer().is_empty());
    assert_eq!(p.status(), &PaneStatus::Loading);
}

#[test]
fn reset_clears_and_errors_keep_lines() {
    let mut p = pane_with(5);
    p.scroll_up(1, VP);
    p.apply(ev(TailKind::Reset {
        offset: 0,
        size: 10,
    }));
    assert!(p.buffer().is_empty());
    assert_eq!(p.status(), &PaneStatus::Live { size: 10 });
    p.apply(data("fresh\n"));
    p.apply(ev(TailKind::Error("connection dropped".into())));
    assert_eq!(p.buffer().len(), 1);
    assert!(p.message().is_none());
    assert_eq!(
        p.notice().as_deref(),
        Some("cannot read /scratch/slurm-1234.out: connection dropped")
    );
    assert_eq!(p.text_viewport(VP).height, 9);
    p.apply(data(""));
    assert!(p.notice().is_none());
}

#[test]
fn messages_for_each_state() {
    let mut p = LogPane::new(Stream::Stderr);
    assert_eq!(p.message().map(|m| m.0).as_deref(), Some("no job selected"));
    p.set_path("/p/err");
    p.set_job_pending(true);
    let head = |p: &LogPane| p.message().map(|m| m.0).unwrap_or_default();
    assert_eq!(head(&p), "waiting for /p/err (job is pending)");
    let e = |kind| TailEvent {
        job: job(),
        stream: Stream::Stderr,
        path: "/p/err".into(),
        kind,
        credit: Default::default(),
    };
    p.apply(e(TailKind::Missing));
    assert_eq!(head(&p), "waiting for /p/err (job is pending)");
    p.set_job_pending(false);
    assert_eq!(head(&p), "no such file: /p/err");
    p.apply(e(TailKind::Denied("ask your admin".into())));
    assert_eq!(head(&p), "permission denied: /p/err");
    p.apply(e(TailKind::NotRegular("a directory".into())));
    assert_eq!(head(&p), "not a regular file: /p/err");
    p.set_no_path();
    assert_eq!(head(&p), "no output file");
}

#[test]
fn human_sizes() {
    assert_eq!(human_bytes(512), "512 B");
    assert_eq!(human_bytes(1 << 30), "1.0 GiB");
    assert_eq!(human_bytes(1536 << 10), "1.5 MiB");
}

#[test]
fn go_to_line_waits_for_the_lines_then_shows_that_line() {
    let mut p = LogPane::new(Stream::Stdout);
    p.set_path("/scratch/slurm-1234.out");
    p.go_to_line(42, "line 41");
    assert!(p.is_following(), "nothing to show yet");
    p.apply(ev(TailKind::Reset { offset: 0, size: 0 }));
    let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
    p.apply(data(&text));
    assert!(!p.is_following());
    let s = p.search().expect("the line's text searched");
    assert_eq!(s.current_seq(), Some(41), "line 42 of the file");
    let rows = p.visible_rows(p.text_viewport(VP));
    assert!(rows.iter().any(|r| r.seq == 41), "on screen");
    // Later data does not move the view again.
    p.apply(data("line 100\n"));
    assert_eq!(p.search().and_then(Search::current_seq), Some(41));
}

#[test]
fn go_to_line_in_a_pane_holding_only_the_end_finds_the_text() {
    let mut p = LogPane::new(Stream::Stdout);
    p.set_path("/scratch/slurm-1234.out");
    p.apply(ev(TailKind::Reset { offset: 0, size: 0 }));
    // Lines 900..1000 of a file, numbered from 0 in the pane.
    let text: String = (900..1000).map(|i| format!("line {i}\n")).collect();
    p.apply(data(&text));
    p.go_to_line(951, "line 950");
    assert_eq!(p.search().and_then(Search::current_seq), Some(50));
}
