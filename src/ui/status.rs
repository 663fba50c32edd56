//! The two bottom lines: where we are connected, how fresh the data is, counts per state,
//! and the input line or the last error.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::app::{App, ClusterState, Status};
use crate::payload::ConnState;

/// Tests read these here, where they are drawn.
pub use crate::app::status_view::{budget_text, maintenance_text};

pub struct StatusWidget<'a> {
    pub app: &'a App,
}

/// "updated 3s ago" and whether that is stale (more than three poll intervals).
pub fn freshness(app: &App) -> (String, bool) {
    freshness_of(&app.shown().status, app.now)
}

fn freshness_of(status: &Status, now: chrono::NaiveDateTime) -> (String, bool) {
    let every = status.poll_interval.as_secs().max(1);
    match status.last_ok {
        None if status.polling => ("loading…".into(), false),
        None => ("not updated yet".into(), true),
        Some(t) => {
            let age = (now - t).num_seconds().max(0);
            let text = if age < 60 {
                format!("updated {age}s ago")
            } else if age < 3600 {
                format!("updated {}m ago", age / 60)
            } else {
                format!("updated {}h ago", age / 3600)
            };
            (text, age as u64 > 3 * every + 2)
        }
    }
}

fn conn_text(c: &ConnState, host: Option<&str>) -> (String, bool) {
    match c {
        ConnState::NotConnected => ("connecting…".into(), false),
        ConnState::Connecting { host, attempt } if *attempt > 1 => {
            (format!("connecting to {host} (attempt {attempt})"), true)
        }
        ConnState::Connecting { host, .. } => (format!("connecting to {host}"), false),
        ConnState::Connected { host: h } => (format!("{} connected", host.unwrap_or(h)), false),
        ConnState::Reconnecting {
            attempt,
            retry_in: Some(d),
            ..
        } if d.as_secs() > 0 => (
            format!(
                "disconnected, attempt {attempt} failed · next try in {}s (r: now)",
                d.as_secs()
            ),
            true,
        ),
        ConnState::Reconnecting { attempt, .. } => {
            (format!("reconnecting, attempt {attempt}"), true)
        }
        // Not retried by itself (a refused login): `r` tries once more.
        ConnState::Failed { reason } => (
            format!("login failed, not retried (r: try again): {reason}"),
            true,
        ),
        ConnState::LoginNeeded { .. } => (
            "login needed: run `slurmdash login` in a terminal (resumes by itself)".into(),
            true,
        ),
    }
}

/// One cluster's part of the first line when several are shown: its name, its connection
/// when something is wrong with it, how fresh its rows are and their counts.
fn cluster_spans<'a>(app: &App, c: &ClusterState, t: &crate::theme::Theme) -> Vec<Span<'a>> {
    let (conn, conn_bad) = conn_text(&c.status.conn, c.status.host.as_deref());
    let (fresh, stale) = freshness_of(&c.status, app.now);
    let parts = crate::app::status_view::of(&app.status_parts, c.ix);
    let mut spans = vec![Span::styled(format!(" {} ", c.name), t.title())];
    if conn_bad {
        spans.push(Span::styled(format!("{conn} · "), t.error()));
    } else if c.status.last_error.is_some() {
        spans.push(Span::styled("refresh failed · ", t.error()));
    }
    spans.push(Span::styled(
        fresh,
        if stale { t.warn() } else { Style::default() },
    ));
    if c.status.polling && !parts.held {
        spans.push(Span::styled(" ⟳", t.dim()));
    }
    // A refresh held by the RPC budget or paused by slurmctld's rate limit says so.
    if parts.held || parts.paused {
        spans.push(Span::styled(parts.budget.clone(), t.dim()));
    }
    let text = match parts.counts.as_str() {
        "" => "no jobs",
        counts => counts,
    };
    spans.push(Span::styled(format!(" · {text}"), Style::default()));
    if let Some(m) = &parts.maintenance {
        spans.push(Span::styled(format!(" · {m}"), t.warn()));
    }
    spans
}

/// The error to show on the second line: the cluster in view first, then any other
/// (named, when several are shown).
fn shown_error(app: &App) -> Option<String> {
    let shown = app.shown();
    if let Some(e) = &shown.status.last_error {
        return Some(if app.multi() {
            format!("{}: {e}", shown.name)
        } else {
            e.clone()
        });
    }
    app.clusters().filter(|c| c.ix != shown.ix).find_map(|c| {
        c.status
            .last_error
            .as_ref()
            .map(|e| format!("{}: {e}", c.name))
    })
}

impl Widget for StatusWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self.app;
        let t = &app.theme;
        let sep = Span::styled(" · ", t.dim());
        if app.multi() {
            let mut spans = Vec::new();
            for (i, c) in app.clusters().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" │", t.dim()));
                }
                spans.extend(cluster_spans(app, c, t));
            }
            let line1 = Line::from(spans);
            let line2 = second_line(app);
            Paragraph::new(vec![line1, line2]).render(area, buf);
            return;
        }
        let (conn, conn_bad) =
            conn_text(&app.shown().status.conn, app.shown().status.host.as_deref());
        let (fresh, stale) = freshness(app);
        let parts = crate::app::status_view::of(&app.status_parts, app.shown().ix);
        let mut spans = vec![
            Span::styled(format!(" {} ", app.shown().name), t.title()),
            Span::styled(
                conn,
                if conn_bad {
                    t.error()
                } else {
                    Style::default()
                },
            ),
            sep.clone(),
            Span::styled(fresh, if stale { t.warn() } else { Style::default() }),
            Span::styled(
                format!(
                    " (every {}s{})",
                    app.shown().status.poll_interval.as_secs(),
                    parts.budget
                ),
                if parts.paused { t.warn() } else { t.dim() },
            ),
        ];
        if app.shown().status.polling && !parts.held {
            spans.push(Span::styled(" ⟳", t.dim()));
        }
        spans.push(sep.clone());
        if parts.counts.is_empty() {
            spans.push(Span::raw(format!("no jobs ({})", app.shown().scope)));
        } else {
            spans.push(Span::raw(parts.counts.clone()));
        }
        if let Some(m) = &parts.maintenance {
            spans.push(sep.clone());
            spans.push(Span::styled(m.clone(), t.warn()));
        }
        let line1 = Line::from(spans);
        let line2 = second_line(app);
        Paragraph::new(vec![line1, line2]).render(area, buf);
    }
}

/// The question, the line being typed, a note, the last error, the last job event, or the
/// keys to try.
pub(super) fn second_line(app: &App) -> Line<'static> {
    let t = &app.theme;
    {
        if let Some(c) = &app.overlays.confirm {
            Line::from(vec![
                Span::styled(format!(" {} ", c.prompt), t.warn()),
                Span::styled(format!("  {}", c.hint()), t.dim()),
            ])
        } else if let Some(input) = &app.overlays.input {
            Line::from(vec![
                Span::styled(
                    input
                        .label
                        .clone()
                        .unwrap_or_else(|| input.kind.prompt().to_string()),
                    t.title(),
                ),
                Span::raw(input.text.clone()),
                Span::styled("█", Style::default().add_modifier(Modifier::SLOW_BLINK)),
                Span::styled(
                    format!(
                        "   {}",
                        input
                            .hint
                            .as_deref()
                            .unwrap_or("enter: apply · esc: cancel")
                    ),
                    t.dim(),
                ),
            ])
        } else if let Some(note) = &app.note {
            Line::from(Span::styled(format!(" {note}"), t.warn()))
        } else if let Some(err) = shown_error(app) {
            Line::from(Span::styled(format!(" error: {err}"), t.error()))
        } else if let Some(ev) = app.shown().events.status_line(app.now) {
            Line::from(Span::styled(format!(" {ev}"), t.title()))
        } else {
            Line::from(Span::styled(
                if app.shown().read_only {
                    " read-only session · ? help · / filter · s sort · tab pane · enter zoom · o/e stdout/stderr · : command · q quit"
                } else {
                    " ? help · n new job · d cancel · space mark · / filter · s sort · tab pane · o/e stdout/stderr · : command · q quit"
                },
                t.dim(),
            ))
        }
    }
}

/// The line being typed and the question are the status bar's bottom line: drawn again
/// over whatever an overlay below them left there.
fn bottom_line_over(f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
    let s = areas.status;
    if s.height >= 2 {
        let line = Rect::new(s.x, s.y + s.height - 1, s.width, 1);
        f.render_widget(ratatui::widgets::Clear, line);
        f.render_widget(Paragraph::new(second_line(app)), line);
    }
}

impl super::overlay::DrawOverlay for Option<crate::app::Input> {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        bottom_line_over(f, app, areas);
    }
}

impl super::overlay::DrawOverlay for Option<crate::app::Confirm> {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        bottom_line_over(f, app, areas);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The next window within a day is named on the status bar; one further ahead, or
    /// over on the cluster's clock, is not.
    #[test]
    fn the_status_bar_names_maintenance_within_a_day() {
        use crate::slurm::reservation::{parse_reservations, Reservations};
        let at = |d: u32, h: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 11, d)
                .and_then(|d| d.and_hms_opt(h, 0, 0))
                .expect("a time")
        };
        let res = |start: chrono::NaiveDateTime| {
            let text = format!(
                "ReservationName=m StartTime={} EndTime={} Duration=02:00:00\n   Nodes=gpu[01-08] NodeCnt=8 Flags=MAINT,SPEC_NODES\n",
                start.format("%Y-%m-%dT%H:%M:%S"),
                (start + chrono::Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S")
            );
            parse_reservations(&text).expect("parses")
        };
        let mut c = ClusterState::new("dev", "your jobs", Duration::from_secs(5), at(28, 10));
        assert_eq!(maintenance_text(&c, at(28, 10)), None, "not read yet");
        c.maintenance.on_read(
            Ok(Reservations {
                now: at(28, 10),
                items: res(at(28, 13)),
            }),
            at(28, 10),
        );
        assert_eq!(
            maintenance_text(&c, at(28, 10)).as_deref(),
            Some("maintenance in 3h00m on gpu[01-08]")
        );
        assert_eq!(
            maintenance_text(&c, at(28, 14)).as_deref(),
            Some("maintenance now, until 15:00 on gpu[01-08]")
        );
        assert_eq!(maintenance_text(&c, at(28, 16)), None, "over");
        c.maintenance.on_read(
            Ok(Reservations {
                now: at(28, 10),
                items: res(at(30, 13)),
            }),
            at(28, 10),
        );
        assert_eq!(maintenance_text(&c, at(28, 10)), None, "two days ahead");
    }

    fn reconnecting(retry_in: Option<u64>) -> ConnState {
        ConnState::Reconnecting {
            attempt: 4,
            last_error: "Connection refused".into(),
            retry_in: retry_in.map(Duration::from_secs),
        }
    }

    #[test]
    fn the_connection_says_when_it_tries_next_and_what_a_person_must_do() {
        let (text, bad) = conn_text(&reconnecting(Some(3)), None);
        assert_eq!(
            text,
            "disconnected, attempt 4 failed · next try in 3s (r: now)"
        );
        assert!(bad);
        // Due now or under way: no countdown.
        assert_eq!(
            conn_text(&reconnecting(Some(0)), None).0,
            "reconnecting, attempt 4"
        );
        assert_eq!(
            conn_text(&reconnecting(None), None).0,
            "reconnecting, attempt 4"
        );
        // A refused login is not retried by itself: the bar says so, and which key acts.
        let (text, bad) = conn_text(
            &ConnState::Failed {
                reason:
                    "h: Host key verification failed. · the host key is not the one in known_hosts"
                        .into(),
            },
            None,
        );
        assert!(
            text.starts_with(
                "login failed, not retried (r: try again): h: Host key verification failed."
            ),
            "{text}"
        );
        assert!(bad);
        let (text, bad) = conn_text(&ConnState::LoginNeeded { host: "h".into() }, None);
        assert!(
            text.starts_with("login needed: run `slurmdash login`"),
            "{text}"
        );
        assert!(bad);
    }
}
