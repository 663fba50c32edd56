//! `:events`: the view over every cluster's event log (the logs are `events.rs`'s).

/// The `:events` view over every cluster's log: open, scrolled this many lines up from the
/// newest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventsView {
    pub open: bool,
    pub scroll: usize,
}

impl EventsView {
    pub fn on_key(&mut self, k: crossterm::event::KeyEvent, page: usize, lines: usize) {
        use crossterm::event::KeyCode;
        let max = lines.saturating_sub(1);
        let s = &mut self.scroll;
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => self.open = false,
            KeyCode::Up | KeyCode::Char('k') => *s = (*s + 1).min(max),
            KeyCode::Down | KeyCode::Char('j') => *s = s.saturating_sub(1),
            KeyCode::PageUp => *s = (*s + page).min(max),
            KeyCode::PageDown => *s = s.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => *s = max,
            KeyCode::Char('G') | KeyCode::End => *s = 0,
            _ => {}
        }
    }
}

impl super::component::Overlaid for EventsView {
    fn is_open(&self) -> bool {
        self.open
    }

    fn close(&mut self) {
        self.open = false;
    }
}

/// The view scrolls over every cluster's events.
impl super::component::OverlayKeys for EventsView {
    fn overlay_key(
        &mut self,
        k: &crossterm::event::KeyEvent,
        cx: &super::component::Keys,
    ) -> super::component::Out {
        let total = cx.view.clusters().map(|c| c.events.log.len()).sum();
        self.on_key(*k, cx.page(4), total);
        super::component::Out::none()
    }
}
