//! `:events`: the view over every cluster's event log (the logs are `events.rs`'s).

/// The `:events` view over every cluster's log: open, scrolled this many lines up from the
/// newest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventsView {
    pub open: bool,
    pub scroll: usize,
    /// Every cluster's events as one log, oldest first (a tie keeps the clusters' order):
    /// (cluster, place in its log). Worked out while open, again when a log changed.
    pub merged: Vec<(u16, usize)>,
    /// Each log's `Events::pushed` when merged.
    merged_at: Vec<u64>,
}

impl EventsView {
    /// Merges the clusters' logs again when open and one changed since.
    pub fn derive(&mut self, clusters: &super::Clusters) {
        let at: Vec<u64> = clusters.iter().map(|c| c.events.pushed).collect();
        if !self.open || at == self.merged_at {
            return;
        }
        let mut all: Vec<_> = clusters
            .iter()
            .flat_map(|c| {
                c.events
                    .log
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.at, c.ix, i))
            })
            .collect();
        all.sort_by_key(|(at, _, _)| *at);
        self.merged = all.into_iter().map(|(_, ix, i)| (ix, i)).collect();
        self.merged_at = at;
    }

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
