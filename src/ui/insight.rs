//! The full-screen insight views (`:partitions`, `:stats`, `:usage`) as an overlay: above
//! the status bar, which stays.

use ratatui::layout::{Constraint, Layout};

use super::{partitions, stats, usage};
use crate::app::insight::View;

impl super::overlay::DrawOverlay for Option<View> {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let _ = areas;
        let [main, _] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(2)]).areas(f.area());
        match self {
            Some(View::Partitions) => f.render_widget(partitions::PartitionsWidget { app }, main),
            Some(View::Stats) => f.render_widget(stats::StatsWidget { app }, main),
            Some(View::Usage) => f.render_widget(
                usage::UsageWidget {
                    usage: &app.shown().usage,
                    theme: &app.theme,
                    now: app.now,
                },
                main,
            ),
            None => {}
        }
    }
}
