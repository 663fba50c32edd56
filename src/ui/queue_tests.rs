use chrono::NaiveDateTime;
use insta::assert_snapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::widgets::Widget;

use super::*;
use crate::queue::{Column, QueueView};
use crate::slurm::parse::parse_squeue;
use crate::slurm::synth::squeue_rows;

const ME: &str = include_str!("../../tests/fixtures/slurm/squeue_me.out");
const ALL: &str = include_str!("../../tests/fixtures/slurm/squeue_all.out");

pub(crate) fn now() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-11-23T09:20:10", "%Y-%m-%dT%H:%M:%S").unwrap()
}

/// The screen as a user reads it: wide characters once, trailing blanks off.
pub(crate) fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        let mut skip = 0usize;
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            if skip == 0 {
                line.push_str(c.symbol());
            }
            skip = skip
                .max(unicode_width::UnicodeWidthStr::width(c.symbol()))
                .saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn render(view: &QueueView, color: bool, w: u16, h: u16) -> Buffer {
    let theme = Theme::new(color);
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    QueueWidget {
        view,
        theme: &theme,
        now: now(),
        focused: true,
    }
    .render(buf.area, &mut buf);
    buf
}

fn view(out: &str) -> QueueView {
    let mut v = QueueView::default();
    v.set_jobs(parse_squeue(out).unwrap());
    v
}

#[test]
fn queue_fixture() {
    let v = view(ME);
    assert_snapshot!(text(&render(&v, true, 120, 24)));
}

#[test]
fn queue_sorted_by_start() {
    let mut v = view(ME);
    v.sort_by(Some(Column::Start), false);
    assert_snapshot!(text(&render(&v, true, 120, 24)));
}

#[test]
fn queue_sorted_by_name_reversed() {
    let mut v = view(ME);
    v.sort_by(Some(Column::Name), true);
    assert_snapshot!(text(&render(&v, true, 120, 24)));
}

#[test]
fn queue_filtered() {
    let mut v = view(ME);
    v.set_filter("hog");
    assert_snapshot!(text(&render(&v, true, 120, 10)));
}

#[test]
fn queue_filter_matches_nothing() {
    let mut v = view(ME);
    v.set_filter("zzz");
    assert_snapshot!(text(&render(&v, true, 80, 7)));
}

#[test]
fn queue_empty_and_loading() {
    let loading = QueueView::default();
    let mut mine = QueueView::default();
    mine.set_jobs(Vec::new());
    let mut all = QueueView::default();
    all.set_scope(crate::slurm::command::Scope::All);
    all.set_jobs(Vec::new());
    let screens = [loading, mine, all]
        .iter()
        .map(|v| text(&render(v, true, 60, 5)))
        .collect::<Vec<_>>()
        .join("");
    assert_snapshot!(screens);
}

#[test]
fn queue_expanded_array() {
    let mut v = view(ME);
    let i = v
        .rows()
        .position(|r| r.job.id.as_str() == "236_[4-99%4]")
        .unwrap();
    v.select_index(i);
    v.toggle_expand();
    assert_snapshot!(text(&render(&v, true, 120, 14)));
}

#[test]
fn queue_all_users_narrow() {
    let mut v = QueueView::new(vec![
        Column::Id,
        Column::Name,
        Column::User,
        Column::State,
        Column::Time,
        Column::Gpus,
        Column::Where,
        Column::Start,
    ]);
    v.set_jobs(parse_squeue(ALL).unwrap());
    assert_snapshot!(text(&render(&v, true, 72, 12)));
}

#[test]
fn queue_20000_jobs_scrolled_far_down() {
    let mut v = view(&squeue_rows(ME, 20_000));
    let h = body_height(20);
    v.set_viewport(h);
    v.select_index(15_000);
    v.select_next();
    v.select_next();
    assert_snapshot!(text(&render(&v, true, 120, 20)));
}

#[test]
fn without_colour_no_cell_has_a_colour() {
    let mut v = view(ME);
    v.sort_by(Some(Column::State), false);
    let buf = render(&v, false, 120, 24);
    for c in buf.content() {
        assert_eq!((c.fg, c.bg), (Color::Reset, Color::Reset), "{c:?}");
    }
    // The selection is still visible (reversed), and so is the header.
    assert_snapshot!(text(&buf));
}

#[test]
fn with_colour_states_are_coloured() {
    let v = view(ME);
    let buf = render(&v, true, 120, 24);
    let find = |word: &str| {
        let t = text(&buf);
        let y = t.lines().position(|l| l.contains(word)).unwrap() as u16;
        let x = t.lines().nth(y as usize).unwrap().find(word).unwrap() as u16;
        buf[(x, y)].fg
    };
    assert_eq!(find("RUNNING"), Color::Green);
    assert_eq!(find("PENDING"), Color::Yellow);
}

#[test]
fn column_names_in_config() {
    #[derive(serde::Deserialize)]
    struct C {
        columns: Vec<Column>,
    }
    let c: C = toml::from_str(
        r#"columns = ["id", "name", "partition", "state", "time", "nodes", "gpus", "where", "start", "waited", "submitted", "progress", "node_list", "work_dir", "qos"]"#,
    )
    .unwrap();
    assert_eq!(c.columns[..12], Column::defaults()[..]);
    assert_eq!(c.columns[12], Column::NodeList);
    assert!(toml::from_str::<C>(r#"columns = ["nope"]"#).is_err());
}

/// A record that did not read cleanly is a row with what could be read, marked `!` on the
/// right border; the detail pane says what was wrong.
#[test]
fn an_unreadable_record_is_a_marked_row_among_the_others() {
    let mut jobs = parse_squeue(ME).unwrap();
    let spoiled = jobs[1].id.clone();
    jobs[1].problem = Some("squeue output line 2: field nodes (%D): not a number".into());
    let mut v = QueueView::default();
    v.set_jobs(jobs);
    let screen = text(&render(&v, false, 100, 8));
    let marked: Vec<&str> = screen.lines().filter(|l| l.ends_with('!')).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(marked[0].contains(spoiled.as_str()), "{screen}");
    let mut d = Buffer::empty(Rect::new(0, 0, 80, 10));
    let theme = Theme::new(false);
    crate::ui::detail::DetailWidget {
        job: v.jobs().iter().find(|j| j.id == spoiled),
        focused: true,
        ..crate::ui::detail::DetailWidget::blank(&theme, now())
    }
    .render(d.area, &mut d);
    let detail = text(&d);
    assert!(
        detail.contains("Problem      squeue's record of this job did not read cleanly"),
        "{detail}"
    );
}
/// Spare width goes to the columns that need it (reason, node list) and NAME stays as wide
/// as the names need: no more at 180 columns than at 120, none cut at either.
#[test]
fn queue_spare_width_goes_to_reason_and_nodes_not_the_name() {
    let cols = vec![
        Column::Id,
        Column::Name,
        Column::State,
        Column::Reason,
        Column::NodeList,
        Column::Start,
    ];
    let mut v = QueueView::new(cols);
    v.set_jobs(parse_squeue(ALL).unwrap());
    let name_w = |w: u16| {
        super::column_layout(&v, w)
            .iter()
            .find(|(c, _, _)| *c == Column::Name)
            .map(|&(_, _, w)| w)
    };
    assert_eq!(name_w(180), name_w(120));
    let wide = text(&render(&v, false, 180, 14));
    for full in [
        "PartitionTimeLimit",
        "JobArrayTaskLimit",
        "long-array (9+ tasks)",
    ] {
        assert!(wide.contains(full), "{full} cut at 180 columns:\n{wide}");
    }
    assert_snapshot!("queue_reason_nodes_180", wide);
    assert_snapshot!("queue_reason_nodes_90", text(&render(&v, false, 90, 14)));
}

/// The default columns on a wide terminal: the name keeps to its need, the rest stays blank
/// rather than padding it.
#[test]
fn queue_default_columns_wide() {
    let v = view(ME);
    let wide = text(&render(&v, false, 170, 12));
    assert!(wide.contains("arra"), "{wide}");
    assert_snapshot!(wide);
}

/// The queue in each palette (`[ui] theme`), with the colours: each row's text, then its
/// runs of style (first column, fg, bg, modifiers), as a user of that palette sees it.
#[test]
fn queue_in_each_palette() {
    use crate::theme::Palette;
    let v = view(ME);
    for (name, palette) in [
        ("dark", Palette::Dark),
        ("light", Palette::Light),
        ("high_contrast", Palette::HighContrast),
    ] {
        let theme = Theme::new(true).with_palette(palette);
        let mut buf = Buffer::empty(Rect::new(0, 0, 110, 8));
        QueueWidget {
            view: &v,
            theme: &theme,
            now: now(),
            focused: true,
        }
        .render(buf.area, &mut buf);
        insta::assert_snapshot!(format!("queue_palette_{name}"), styled(&buf));
    }
}

/// Each row's text, then where its style changes: `x:fg/bg/modifiers`.
fn styled(buf: &Buffer) -> String {
    let lines: Vec<String> = text(buf).lines().map(str::to_string).collect();
    let mut out = String::new();
    for y in 0..buf.area.height {
        out.push_str(&lines[usize::from(y)]);
        out.push('\n');
        let mut last = None;
        let mut runs = Vec::new();
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            let style = (c.fg, c.bg, c.modifier);
            if last != Some(style) {
                runs.push(format!("{x}:{:?}/{:?}/{:?}", c.fg, c.bg, c.modifier));
                last = Some(style);
            }
        }
        out.push_str(&format!("  {}\n", runs.join(" ")));
    }
    out
}
