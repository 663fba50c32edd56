//! The `:events` view: the log of job changes, newest at the bottom, over the whole screen
//! but the status bar. esc or q closes it; j/k, PgUp/PgDn, g/G scroll.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::theme::Theme;
use crate::app::{Event, EventKind, Events};
use crate::slurm::model::Status;

pub struct EventsWidget<'a> {
    /// Each cluster's log, with its name when several clusters are shown.
    pub logs: Vec<(Option<&'a str>, &'a Events)>,
    /// Lines scrolled up from the newest.
    pub scroll: usize,
    pub theme: &'a Theme,
}

fn kind_style(k: EventKind, t: &Theme) -> Style {
    match k {
        EventKind::Started => t.status_style(Status::Running),
        EventKind::Completed => t.status_style(Status::Complete),
        EventKind::Failed => t.error(),
        EventKind::Cancelled | EventKind::CancelledByYou => t.status_style(Status::Canceled),
        EventKind::Requeued | EventKind::Retried => t.warn(),
        EventKind::LeftQueue | EventKind::Note => t.dim(),
    }
}

fn line(cluster: Option<&str>, width: usize, e: &Event, t: &Theme) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("{}  ", e.at.format("%m-%d %H:%M:%S")),
        t.dim(),
    )];
    if let Some(c) = cluster {
        spans.push(Span::styled(format!("{c:<width$}  "), t.title()));
    }
    spans.push(Span::styled(e.text.clone(), kind_style(e.kind, t)));
    Line::from(spans)
}

/// The logs merged here (the screen draws the merge `EventsView` keeps, with [`draw`]).
impl Widget for EventsWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let all = crate::app::merged_events(&self.logs);
        let names = self.logs.iter().map(|(c, _)| *c);
        draw(
            all.len(),
            |i| all[i],
            names,
            self.scroll,
            self.theme,
            area,
            buf,
        );
    }
}

/// `n` events, the `i`th (oldest first) from `event`, from logs named `names`.
fn draw<'a>(
    n: usize,
    event: impl Fn(usize) -> (Option<&'a str>, &'a Event),
    names: impl Iterator<Item = Option<&'a str>>,
    scroll: usize,
    t: &Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    Clear.render(area, buf);
    let (mut width, mut logs) = (0, 0);
    for c in names {
        width = width.max(c.map_or(0, str::len));
        logs += 1;
    }
    let whose = if logs > 1 { " · all clusters" } else { "" };
    let title = format!(" events · {n}{whose} · esc closes · j/k scroll ");
    let block = Block::bordered()
        .border_style(t.border(true))
        .title(Span::styled(title, t.title()));
    let inner = block.inner(area);
    let height = usize::from(inner.height);
    let lines: Vec<Line> = if n == 0 {
        vec![Line::styled(
            "no job changes yet: starts, ends, failures and cancellations of your jobs appear here",
            t.dim(),
        )]
    } else {
        // Newest at the bottom; `scroll` lines up from the newest.
        let end = n - scroll.min(n - 1);
        let start = end.saturating_sub(height);
        (start..end)
            .map(|i| {
                let (c, e) = event(i);
                line(c, width, e, t)
            })
            .collect()
    };
    Paragraph::new(lines).block(block).render(area, buf);
}

/// `:events`: every cluster's log, named when there are several.
impl super::overlay::DrawOverlay for crate::app::EventsView {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let multi = app.multi();
        let name = |ix: u16| multi.then(|| app.clusters[ix].name.as_str());
        let event = |i: usize| {
            let (ix, at) = self.merged[i];
            (name(ix), &app.clusters[ix].events.log[at])
        };
        let names = app.clusters().map(|c| name(c.ix));
        let over = super::overlay::above_status(f, areas);
        let n = self.merged.len();
        draw(
            n,
            event,
            names,
            self.scroll,
            &app.theme,
            over,
            f.buffer_mut(),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::action::{JobMsg, LaunchMsg, PollMsg};
    use std::time::Duration;

    use chrono::{NaiveDate, NaiveDateTime};
    use insta::assert_snapshot;

    use super::*;
    use crate::action::Msg;
    use crate::app::App;
    use crate::payload::{PollExtra, Refresh, RetryEvent};
    use crate::slurm::model::{CancelOutcome, Job, JobDetail, JobState};
    use crate::slurm::ops::{JobOp, OpKind, OpReport};
    use crate::slurm::parse::parse_squeue;
    use crate::ui::queue::tests::text;

    fn at(min: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 11, 23)
            .and_then(|d| d.and_hms_opt(12, min, 5))
            .unwrap()
    }

    /// A row of the real squeue fixture as job `id` called `name`, in `state` (on node
    /// `gpu07` while running).
    fn job(id: &str, name: &str, state: JobState) -> Job {
        let mut j = parse_squeue(include_str!("../../tests/fixtures/slurm/squeue_me.out"))
            .unwrap()
            .remove(0);
        j.id = id.parse().unwrap();
        j.name = name.into();
        j.node_list = (state.status() == Status::Running).then(|| "gpu07".into());
        j.state = state;
        j
    }

    /// A queue refresh at minute `min`, with the sacct answer that came with it.
    fn refresh(a: &mut App, min: u32, jobs: Vec<Job>, sacct: Option<PollExtra>) {
        a.update(Msg::Tick(at(min)));
        a.update(Msg::Poll(PollMsg::Queue(Box::new(Refresh {
            result: Ok(jobs),
            extra: sacct,
            conn: None,
            at: at(min),
            took: Duration::from_millis(10),
        }))));
    }

    fn render(e: &Events, w: u16, h: u16) -> String {
        render_at(e, w, h, 0)
    }

    fn render_at(e: &Events, w: u16, h: u16, scroll: usize) -> String {
        let theme = Theme::new(false);
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        EventsWidget {
            logs: vec![(None, e)],
            scroll,
            theme: &theme,
        }
        .render(buf.area, &mut buf);
        text(&buf)
    }

    /// Each kind of event as the program logs it: the App driven through the messages its
    /// workers send (queue refreshes, sacct answers, a retry check, a cancel's report).
    #[test]
    fn events_view() {
        use JobState::{Completed, Pending, Running};
        let mut a = App::fixture(at(0));
        let empty = render(&a.clusters[0].events, 90, 5);
        let eval = || job("104", "eval", Running);
        let sweep = || job("106", "sweep", Pending);
        let queue = |train| {
            vec![
                job("101", "train", train),
                job("102", "prep", Running),
                eval(),
                sweep(),
            ]
        };
        refresh(&mut a, 0, queue(Pending), None);
        // 101 starts.
        refresh(&mut a, 1, queue(Running), None);
        // 102 leaves squeue and sacct never knows how it ended.
        refresh(
            &mut a,
            2,
            vec![job("101", "train", Running), eval(), sweep()],
            None,
        );
        let asked = |id: &str| PollExtra {
            asked: vec![id.parse().unwrap()],
            ..PollExtra::default()
        };
        for _ in 0..crate::app::departures::SACCT_TRIES {
            let jobs = vec![job("101", "train", Running), eval(), sweep()];
            refresh(&mut a, 2, jobs, Some(asked("102")));
        }
        // 101 leaves squeue; sacct says it failed.
        refresh(&mut a, 3, vec![eval(), sweep()], None);
        let failed = PollExtra {
            finished: vec![JobDetail {
                id: Some("101".parse().unwrap()),
                state: Some(JobState::Failed),
                ..JobDetail::default()
            }],
            ..asked("101")
        };
        refresh(&mut a, 3, vec![eval(), sweep()], Some(failed));
        // squeue lists 104 as COMPLETED for a while.
        refresh(
            &mut a,
            4,
            vec![job("104", "eval", Completed), sweep()],
            None,
        );
        // The retry check resubmitted 101.
        a.update(Msg::Tick(at(5)));
        a.update(Msg::Launch(LaunchMsg::Retries(Ok((
            vec![RetryEvent::Resubmitted {
                local_id: "L1".into(),
                failed: 101,
                new: 105,
                attempt: 2,
                max_attempts: 10,
                resumed: None,
                excluded: None,
            }],
            Vec::new(),
        )))));
        // The user cancels 106 from slurmdash.
        a.update(Msg::Tick(at(6)));
        let op = JobOp::new(OpKind::Cancel, ["106".parse().unwrap()]);
        a.update(Msg::Job(JobMsg::OpDone {
            op: op.clone(),
            result: Ok(OpReport {
                op,
                outcomes: vec![("106".parse().unwrap(), CancelOutcome::Cancelled)],
            }),
        }));
        let e = &a.clusters[0].events;
        let kinds: Vec<EventKind> = e.log.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::Started,
                EventKind::LeftQueue,
                EventKind::Failed,
                EventKind::Completed,
                EventKind::Retried,
                EventKind::CancelledByYou
            ]
        );
        let all = render(e, 90, 10);
        let scrolled = render_at(e, 90, 5, 3);
        assert_snapshot!(format!("{empty}{all}{scrolled}"));
    }

    #[test]
    fn events_of_several_clusters_in_time_order_with_their_names() {
        let theme = Theme::new(false);
        let (mut a, mut b) = (Events::default(), Events::default());
        let change = |log: &mut Events, min: u32, before: Job, after: Job| {
            log.on_jobs(&[before], &[], at(min));
            let events = log.on_jobs(&[after], &[], at(min));
            log.record(events, "");
        };
        let mut on_gpu01 = job("101", "train", JobState::Running);
        on_gpu01.node_list = Some("gpu01".into());
        change(&mut a, 1, job("101", "train", JobState::Pending), on_gpu01);
        change(
            &mut b,
            2,
            job("7", "eval", JobState::Running),
            job("7", "eval", JobState::Failed),
        );
        change(
            &mut a,
            3,
            job("101", "train", JobState::Running),
            job("101", "train", JobState::Completed),
        );
        let mut buf = Buffer::empty(Rect::new(0, 0, 70, 6));
        EventsWidget {
            logs: vec![(Some("polar"), &a), (Some("gpu3"), &b)],
            scroll: 0,
            theme: &theme,
        }
        .render(buf.area, &mut buf);
        assert_snapshot!(text(&buf));
    }
}
