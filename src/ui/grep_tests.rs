use insta::assert_snapshot;

use super::*;
use crate::logview::grep::Skipped;
use crate::slurm::model::JobId;
use crate::ui::queue::tests::text;

fn render(s: &GrepState, w: u16, h: u16) -> String {
    let theme = Theme::new(false);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    GrepWidget {
        state: s,
        theme: &theme,
    }
    .render(buf.area, &mut buf);
    text(&buf)
}

fn landed(mut r: GrepReport) -> GrepState {
    let mut s = GrepState {
        open: true,
        waiting: Some(r.req.what.clone()),
        looking_for: if r.req.first_error {
            "first error".into()
        } else {
            format!("\"{}\"", r.req.pattern)
        },
        ..GrepState::default()
    };
    r.files[4].skipped = Some(Skipped::Missing);
    let sweep = |j: &JobId| j.array_task().map(|t| format!("LR=1e-{t} BATCH=32"));
    let _ = s.land(r, &sweep);
    s
}

#[test]
fn the_first_error_by_job_and_line_with_what_was_searched() {
    let mut r = crate::app::grep::tests::report(true);
    r.found.cut = true;
    r.found.status = None;
    r.not_started = 3;
    assert_snapshot!(render(&landed(r), 100, 12));
}

#[test]
fn a_plain_search_in_found_order() {
    let r = crate::app::grep::tests::report(false);
    assert_snapshot!(render(&landed(r), 80, 12));
}

#[test]
fn no_match_a_bad_regex_and_a_search_under_way() {
    let mut r = crate::app::grep::tests::report(false);
    r.found.hits.clear();
    r.found.status = Some(1);
    let none = render(&landed(r.clone()), 80, 6);
    r.found.status = Some(2);
    r.complaint = Some("Unmatched ( or \\(".into());
    let bad = render(&landed(r), 80, 6);
    let s = GrepState {
        open: true,
        waiting: Some("sweep 123".into()),
        looking_for: "/loss=nan/".into(),
        ..GrepState::default()
    };
    let waiting = render(&s, 80, 4);
    assert_snapshot!(format!("{none}\n{bad}\n{waiting}"));
}
