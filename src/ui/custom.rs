//! The user's own commands: `:commands` (each with its key, where it runs, the job states it
//! applies to and its template) and the last one's output (the command line, how it ended,
//! how long it took, then its output, scrolled), over the whole screen but the status bar.

use super::text::cut;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::theme::Theme;
use crate::app::custom::{CustomCommands, Shown};
use crate::slurm::custom::{cut_note, shell_line, CustomOutput, Ended};

pub struct CustomWidget<'a> {
    pub custom: &'a CustomCommands,
    pub theme: &'a Theme,
}

fn list_lines(c: &CustomCommands, width: usize, t: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        cut(
            &format!(
                "{:<8} {:<16} {:<7} {:<18} command",
                "key", "name", "where", "states"
            ),
            width,
        ),
        t.header(),
    )];
    for (i, u) in c.commands.iter().enumerate() {
        let mut flags = Vec::new();
        if !u.def.prompts.is_empty() {
            let names: Vec<&str> = u.def.prompts.iter().map(|p| p.name.as_str()).collect();
            flags.push(format!("asks {}", names.join(", ")));
        }
        if u.def.confirm {
            flags.push("confirm".into());
        }
        if u.def.pager {
            flags.push("$PAGER".into());
        }
        let flags = match flags.is_empty() {
            true => String::new(),
            false => format!("  [{}]", flags.join(" · ")),
        };
        let row = format!(
            "{:<8} {:<16} {:<7} {:<18} {}{flags}",
            u.key.to_string(),
            cut(&u.def.name, 16),
            u.def.place.word(),
            cut(&u.states_word(), 18),
            u.def.command
        );
        let mut line = Line::raw(cut(&row, width));
        if i == c.row {
            line = line.style(t.selected(true));
        }
        lines.push(line);
    }
    lines
}

fn output_lines(
    o: &CustomOutput,
    scroll: usize,
    height: usize,
    width: usize,
    t: &Theme,
) -> Vec<Line<'static>> {
    let status = match &o.ended {
        Ended::Exit(Some(0)) => Span::styled(o.status_word(), t.title()),
        Ended::Exit(_) => Span::styled(o.status_word(), t.warn()),
        Ended::Failed(_) => Span::styled(o.status_word(), t.error()),
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled("$ ", t.dim()),
            Span::raw(cut(
                &shell_line(&o.run.full_argv()),
                width.saturating_sub(2),
            )),
        ]),
        Line::from(vec![
            status,
            Span::styled(
                format!(
                    " · {:.1} s · {} lines · {} bytes",
                    o.took.as_secs_f64(),
                    o.lines.len(),
                    o.bytes
                ),
                t.dim(),
            ),
        ]),
    ];
    let body = height.saturating_sub(lines.len());
    if o.lines.is_empty() {
        lines.push(Line::styled("(no output)", t.dim()));
        return lines;
    }
    for l in o.lines.iter().skip(scroll).take(body) {
        lines.push(match l.as_str() {
            "── stderr ──" => Line::styled(l.clone(), t.label()),
            _ => Line::raw(l.clone()),
        });
    }
    if o.cut && scroll + body >= o.lines.len() {
        lines.push(Line::styled(cut_note(o.bytes), t.warn()));
    }
    lines
}

impl Widget for CustomWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let c = self.custom;
        Clear.render(area, buf);
        let (title, lines) = match (c.shown, &c.output) {
            (Some(Shown::Output), Some(o)) => {
                let title = format!(
                    " {} {} · {} · ↑↓ pgup pgdn scroll · esc closes ",
                    o.run.key,
                    o.run.name,
                    match (&o.run.place, &o.run.node) {
                        (crate::slurm::custom::Where::Node, Some(n)) => format!("on {n}"),
                        (p, _) => format!("on {}", p.word()),
                    }
                );
                let inner = Block::bordered().inner(area);
                (
                    title,
                    output_lines(
                        o,
                        c.scroll,
                        usize::from(inner.height),
                        usize::from(inner.width),
                        t,
                    ),
                )
            }
            _ => (
                " your commands ([[commands]] in the config) · enter or its key runs it · esc closes "
                    .to_string(),
                list_lines(c, usize::from(area.width.saturating_sub(2)), t),
            ),
        };
        let block = Block::bordered()
            .border_style(t.border(true))
            .title(Span::styled(title, t.title()));
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

impl super::overlay::DrawOverlay for CustomCommands {
    fn draw_over(&self, f: &mut ratatui::Frame, app: &crate::app::App, areas: &super::Areas) {
        let over = super::overlay::above_status(f, areas);
        f.render_widget(
            CustomWidget {
                custom: self,
                theme: &app.theme,
            },
            over,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use insta::assert_snapshot;

    use super::*;
    use crate::config::commands::{check, CommandDef, PromptDef};
    use crate::keymap::Keymap;
    use crate::slurm::custom::{Capture, CustomRun, Where};
    use crate::ui::queue::tests::text;

    pub(crate) fn commands() -> CustomCommands {
        let def = |key: &str, name: &str, place, states: &[&str], command: &str| CommandDef {
            key: key.into(),
            name: name.into(),
            place,
            states: states.iter().map(|s| s.to_string()).collect(),
            command: command.into(),
            ..CommandDef::default()
        };
        let mut tail = def(
            "ctrl-t",
            "tail stdout",
            Where::Login,
            &[],
            "tail -n {lines} {stdout}",
        );
        tail.prompts = vec![PromptDef {
            name: "lines".into(),
            default: "100".into(),
        }];
        let mut kill = def(
            "K",
            "kill python",
            Where::Node,
            &["RUNNING"],
            "pkill -u {user} python",
        );
        kill.confirm = true;
        let mut seff = def(
            "Z",
            "seff",
            Where::Login,
            &["COMPLETED", "FAILED"],
            "seff {job_id}",
        );
        seff.pager = true;
        let defs = vec![
            def(
                "J",
                "jobstats",
                Where::Login,
                &["RUNNING"],
                "jobstats {job_id}",
            ),
            seff,
            def("M", "my quota", Where::Login, &[], "myquota"),
            def("H", "where", Where::Node, &["RUNNING"], "hostname"),
            tail,
            kill,
            def(
                "B",
                "open in browser",
                Where::Laptop,
                &[],
                "xdg-open https://ood.example/{job_id}",
            ),
        ];
        CustomCommands::new(check(&defs, &Keymap::default()).unwrap())
    }

    fn render(c: &CustomCommands, w: u16, h: u16) -> String {
        let theme = Theme::new(false);
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        CustomWidget {
            custom: c,
            theme: &theme,
        }
        .render(buf.area, &mut buf);
        text(&buf)
    }

    fn output(place: Where, ended: Ended, stdout: &[u8], stderr: &[u8]) -> CustomOutput {
        let run = CustomRun {
            cluster: 0,
            key: "H".into(),
            name: "where".into(),
            place,
            argv: vec!["hostname".into()],
            job: Some("4242".into()),
            node: Some("gpu01".into()),
            timeout: None,
            pager: false,
        };
        let (mut o, mut e) = (Capture::default(), Capture::default());
        o.push(stdout);
        e.push(stderr);
        CustomOutput::new(run, ended, Duration::from_millis(1340), &o, &e)
    }

    #[test]
    fn the_list_shows_each_key_where_states_and_template() {
        let mut c = commands();
        let _ = c.open_list();
        assert_snapshot!(render(&c, 120, 11));
    }

    #[test]
    fn the_output_of_a_node_command_with_its_line_exit_and_time() {
        let mut c = commands();
        let out = output(
            Where::Node,
            Ended::Exit(Some(0)),
            b"gpu01\nthe \x1b[1mbold\x1b[0m line\tand a tab\n",
            b"",
        );
        let _ = c.finished(out);
        assert_snapshot!(render(&c, 100, 9));
    }

    #[test]
    fn a_failed_command_shows_its_exit_and_stderr() {
        let mut c = commands();
        let mut out = output(
            Where::Login,
            Ended::Exit(Some(1)),
            b"",
            b"seff: command not found\n",
        );
        out.run.argv = vec!["seff".into(), "4242".into()];
        out.run.name = "seff".into();
        out.run.key = "Z".into();
        let _ = c.finished(out);
        assert_snapshot!(render(&c, 90, 8));
    }

    #[test]
    fn a_long_output_scrolls_and_says_when_it_was_cut() {
        let mut c = commands();
        let mut text = String::new();
        for i in 1..=40 {
            text.push_str(&format!("line {i}\n"));
        }
        let mut out = output(Where::Login, Ended::Exit(Some(0)), text.as_bytes(), b"");
        out.cut = true;
        out.bytes = 5_000_000;
        let _ = c.finished(out);
        c.scroll = 35;
        assert_snapshot!(render(&c, 100, 12));
    }
}
