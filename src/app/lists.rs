//! The queue pane's two lists: the queue (the jobs squeue lists, with the kept rows of
//! those that left it) and `:history`'s rows (jobs that ended, from sacct). Each keeps its
//! own filter, sort, marks, columns and selection; showing one never moves the other.
//! A handler names the list it acts on: `jobs`, `history`, or `shown()` (`shown_mut()`),
//! the one on screen, for what acts on "the rows shown" (the selection, marks, a filter).

use crate::queue::QueueView;

pub struct Lists {
    /// The queue's rows.
    pub jobs: QueueView,
    /// `:history`'s rows.
    pub history: QueueView,
    /// The history's rows are on screen.
    history_shown: bool,
}

impl Lists {
    pub fn new(jobs: QueueView, history: QueueView) -> Lists {
        Lists {
            jobs,
            history,
            history_shown: false,
        }
    }

    /// Puts the history's rows (`true`) or the queue's on screen.
    pub fn show_history(&mut self, shown: bool) {
        self.history_shown = shown;
    }
}

impl Lists {
    /// The list on screen: the one the selection, marks and filter act on.
    pub fn shown(&self) -> &QueueView {
        match self.history_shown {
            true => &self.history,
            false => &self.jobs,
        }
    }

    /// The list on screen, to change.
    pub fn shown_mut(&mut self) -> &mut QueueView {
        match self.history_shown {
            true => &mut self.history,
            false => &mut self.jobs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::Column;

    #[test]
    fn the_list_shown_is_the_one_acted_on_and_the_other_keeps_its_own_state() {
        let mut l = Lists::new(
            QueueView::new(vec![Column::Id, Column::Name]),
            QueueView::new(vec![Column::Id, Column::Exit]),
        );
        l.shown_mut().set_filter("train");
        assert_eq!(l.jobs.filter(), "train");
        l.show_history(true);
        assert_eq!(l.shown().shown_columns(), &[Column::Id, Column::Exit]);
        assert_eq!(
            l.shown().filter(),
            "",
            "the history's rows have their own filter"
        );
        l.shown_mut().set_filter("oom");
        l.show_history(false);
        assert_eq!(l.shown().filter(), "train", "the queue's filter is kept");
        assert_eq!(l.history.filter(), "oom");
    }
}
