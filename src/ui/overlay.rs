//! Drawing what is over the panes: `App::open_overlays`, bottom first, each entry of the app's
//! overlay list drawn by its field's [`DrawOverlay`] (implemented beside its widget), so the
//! one on top, which takes the keys, is the one seen whole.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::Areas;
use crate::app::{App, Overlay};

/// How an overlay's state is drawn over what is drawn so far (it is open when called).
pub trait DrawOverlay {
    fn draw_over(&self, f: &mut Frame, app: &App, areas: &Areas);
}

/// The screen above the status bar: where the full-screen views go.
pub fn above_status(f: &Frame, areas: &Areas) -> Rect {
    let size = f.area();
    Rect::new(
        0,
        0,
        size.width,
        size.height.saturating_sub(areas.status.height),
    )
}

macro_rules! draw_stack {
    ($(
        $(#[$doc:meta])* $kind:ident $(($shows:ty))? = $field:ident: $state:ty,
    )*) => {
        /// Draws the open overlays over the panes, bottom first.
        pub fn draw(f: &mut Frame, app: &App, areas: &Areas) {
            for o in app.open_overlays() {
                match o {
                    $( Overlay::$kind { .. } => DrawOverlay::draw_over(&app.overlays.$field, f, app, areas), )*
                }
            }
        }
    };
}

crate::app::overlay_list!(draw_stack);
