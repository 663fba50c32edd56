//! `c`: choosing and ordering the queue's columns in the dashboard. The keys move, toggle
//! and reorder; enter applies the chosen columns to the queue and asks for them to be saved
//! in the config (`[ui] columns`); esc leaves the queue as it was.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::component::Out;
use crate::action::Cmd;
use crate::queue::Column;

/// The list being edited: every column a live queue can show, in order, each on or off.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnChooser {
    pub items: Vec<(Column, bool)>,
    pub cursor: usize,
    /// Why the last key did nothing (e.g. the job id cannot go).
    pub note: Option<String>,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq)]
enum Chosen {
    Stay,
    Cancel,
    Apply(Vec<Column>),
}

/// Columns the chooser offers: not the cluster's (shown by itself with several clusters)
/// nor `:history`'s own (exit, efficiency, triage).
fn offered(c: Column) -> bool {
    c != Column::Cluster && !c.is_fact()
}

impl ColumnChooser {
    /// `current` on, in its order, then every other column off.
    pub fn new(current: &[Column]) -> ColumnChooser {
        let mut items: Vec<(Column, bool)> = current
            .iter()
            .copied()
            .filter(|c| offered(*c))
            .map(|c| (c, true))
            .collect();
        for c in Column::ALL.iter().copied().filter(|c| offered(*c)) {
            if !items.iter().any(|(i, _)| *i == c) {
                items.push((c, false));
            }
        }
        ColumnChooser {
            items,
            cursor: 0,
            note: None,
        }
    }

    /// The columns on, in order.
    pub fn chosen(&self) -> Vec<Column> {
        self.items
            .iter()
            .filter(|(_, on)| *on)
            .map(|(c, _)| *c)
            .collect()
    }

    /// A key while the chooser is open; enter sets the live queue's columns
    /// (`Out::columns`) and asks for them to be saved.
    pub fn on_key(&mut self, k: &KeyEvent) -> Out {
        match self.key(k) {
            Chosen::Stay => Out::none(),
            Chosen::Cancel => Out::close(),
            Chosen::Apply(cols) => Out {
                columns: Some(cols.clone()),
                ..Out::close()
                    .with_note("columns changed; saving them in the config…")
                    .with_cmd(Cmd::SaveColumns(cols))
            },
        }
    }

    fn key(&mut self, k: &KeyEvent) -> Chosen {
        self.note = None;
        let last = self.items.len().saturating_sub(1);
        let shift = k.modifiers.contains(KeyModifiers::SHIFT);
        match k.code {
            KeyCode::Esc | KeyCode::Char('q') => return Chosen::Cancel,
            KeyCode::Enter => return Chosen::Apply(self.chosen()),
            KeyCode::Char('J') => self.shift(1),
            KeyCode::Char('K') => self.shift(-1),
            KeyCode::Down if shift => self.shift(1),
            KeyCode::Up if shift => self.shift(-1),
            KeyCode::Char('j') | KeyCode::Down => self.cursor = (self.cursor + 1).min(last),
            KeyCode::Char('k') | KeyCode::Up => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Char('g') | KeyCode::Home => self.cursor = 0,
            KeyCode::Char('G') | KeyCode::End => self.cursor = last,
            KeyCode::Char(' ' | 'x') => self.toggle(),
            _ => {}
        }
        Chosen::Stay
    }

    fn toggle(&mut self) {
        let Some((c, on)) = self.items.get_mut(self.cursor) else {
            return;
        };
        if *c == Column::Id {
            self.note = Some("the job id column stays: every action names the job by it".into());
            return;
        }
        *on = !*on;
    }

    /// Moves the column under the cursor one place up (-1) or down (1), the cursor with it.
    fn shift(&mut self, by: isize) {
        let Some(to) = self.cursor.checked_add_signed(by) else {
            return;
        };
        if to < self.items.len() {
            self.items.swap(self.cursor, to);
            self.cursor = to;
        }
    }
}

/// Held as `Option<ColumnChooser>`: open while there is one.
impl super::component::OverlayKeys for ColumnChooser {
    fn overlay_key(&mut self, k: &KeyEvent, _: &super::component::Keys) -> Out {
        self.on_key(k)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn k(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn the_current_columns_first_then_the_rest_off() {
        let ch = ColumnChooser::new(&[Column::Id, Column::Cluster, Column::State, Column::Exit]);
        assert_eq!(ch.items[0], (Column::Id, true));
        assert_eq!(ch.items[1], (Column::State, true));
        assert!(ch.items[2..].iter().all(|(_, on)| !on));
        assert!(!ch
            .items
            .iter()
            .any(|(c, _)| *c == Column::Cluster || c.is_fact()));
        // Every other column is offered once.
        let n = Column::ALL.iter().filter(|c| offered(**c)).count();
        assert_eq!(ch.items.len(), n);
    }

    #[test]
    fn toggle_reorder_apply_and_cancel() {
        let mut ch = ColumnChooser::new(&[Column::Id, Column::Name, Column::State]);
        // The id stays on.
        assert_eq!(ch.key(&k(KeyCode::Char(' '))), Chosen::Stay);
        assert!(ch.note.as_deref().unwrap().contains("stays"));
        assert!(ch.items[0].1);
        // Name off; State moved above it; the User column (off) turned on.
        ch.key(&k(KeyCode::Char('j')));
        ch.key(&k(KeyCode::Char(' ')));
        ch.key(&k(KeyCode::Char('j')));
        ch.key(&k(KeyCode::Char('K')));
        assert_eq!(ch.cursor, 1);
        let user = ch
            .items
            .iter()
            .position(|(c, _)| *c == Column::User)
            .unwrap();
        ch.cursor = user;
        ch.key(&k(KeyCode::Char('x')));
        assert_eq!(
            ch.key(&k(KeyCode::Enter)),
            Chosen::Apply(vec![Column::Id, Column::State, Column::User])
        );
        // Moving past either end does nothing.
        ch.cursor = 0;
        ch.key(&k(KeyCode::Char('K')));
        assert_eq!(ch.items[0].0, Column::Id);
        ch.key(&KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        let last = ch.items.len() - 1;
        assert_eq!(ch.cursor, last);
        ch.key(&KeyEvent::new(KeyCode::Down, KeyModifiers::SHIFT));
        assert_eq!(ch.cursor, last);
        assert_eq!(ch.key(&k(KeyCode::Esc)), Chosen::Cancel);
    }
}
