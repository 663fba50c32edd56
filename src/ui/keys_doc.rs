//! The keys page of the manual (`docs/keys.md`), written from the same data the help
//! overlay reads: the default keymap, the `:` commands, the files view's keys and the launch
//! form's hint. A test compares the page with this text, so the two cannot drift;
//! `UPDATE_DOCS=1 cargo test --lib keys_page` rewrites it.

use std::fmt::Write;

use crate::app::COMMANDS;
use crate::keymap::{Keymap, Pane};

/// Markdown table cell: `|` would end the cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The whole page.
pub fn markdown() -> String {
    let map = Keymap::default();
    let mut out = String::new();
    out.push_str("# Keys\n\n");
    out.push_str(
        "<!-- Generated from src/keymap.rs and the views' key lists by src/ui/keys_doc.rs;\n     \
         edit those, then run `UPDATE_DOCS=1 cargo test --lib keys_page`. -->\n\n",
    );
    out.push_str(
        "The default bindings; `[keys]` in the config changes them (see\n\
         [configuration](configuration.md)), and `?` in the dashboard shows the ones in use\n\
         for the focused pane.\n",
    );
    for pane in Pane::ALL {
        let _ = write!(out, "\n## The {} pane\n\n", pane.title());
        out.push_str("| keys | what it does |\n|---|---|\n");
        for (action, keys) in map.bindings(pane) {
            let keys: Vec<String> = keys.iter().map(|k| format!("`{}`", cell(k))).collect();
            let _ = writeln!(out, "| {} | {} |", keys.join(", "), cell(action.describe()));
        }
    }
    out.push_str("\n## Commands after `:`\n\n| command | what it does |\n|---|---|\n");
    for (cmd, what) in COMMANDS {
        let _ = writeln!(out, "| `:{}` | {} |", cell(cmd), cell(what));
    }
    let key = |a| {
        map.key_for(a, Pane::Queue)
            .unwrap_or_else(|| "unbound".into())
    };
    let _ = write!(
        out,
        "\n## The files view (`{}`, `:files`)\n\n| keys | what it does |\n|---|---|\n",
        key(crate::keymap::Action::Files)
    );
    for (keys, what) in super::files::KEYS {
        let _ = writeln!(out, "| {} | {} |", cell(keys), cell(what));
    }
    let _ = write!(
        out,
        "\n## The launch form (`{}`; `{}` to relaunch)\n\n",
        key(crate::keymap::Action::NewJob),
        key(crate::keymap::Action::Relaunch)
    );
    for part in super::form::HINT.split(" · ") {
        let _ = writeln!(out, "- {part}");
    }
    out
}

#[cfg(test)]
mod tests {
    /// docs/keys.md is what the keymap says; set UPDATE_DOCS=1 to rewrite it.
    #[test]
    fn keys_page_is_the_keymap() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/keys.md");
        let want = super::markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).expect("write docs/keys.md");
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/keys.md is not what the keymap says: run `UPDATE_DOCS=1 cargo test --lib keys_page`"
        );
    }
}
