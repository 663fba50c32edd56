//! Writing a setting back into the user's config file, keeping its comments and layout
//! (toml_edit): the queue's columns chosen in the dashboard (`c`). Nothing else is written.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::queue::Column;

/// Sets `[ui] columns` in the config at `path` to `columns`, creating the file (and its
/// directory) when there is none. A link is followed: the file it points to is rewritten,
/// the link stays. The new text goes to a private file beside it that replaces it whole,
/// with the old file's mode, so a crash leaves the old config or the new one, never half.
/// A config that does not parse is left as it is, and the error says where.
pub fn save_columns(path: &Path, columns: &[Column]) -> Result<PathBuf, String> {
    let target = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let (old, mode) = match std::fs::read_to_string(&target) {
        Ok(t) => {
            let mode = std::fs::metadata(&target)
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o600);
            (t, mode)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), 0o600),
        Err(e) => return Err(format!("{}: {e}", target.display())),
    };
    let text = with_columns(&old, columns).map_err(|e| format!("{}: {e}", target.display()))?;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp =
        private_copy_beside(&target, &text).map_err(|e| format!("{}: {e}", target.display()))?;
    let place = || -> std::io::Result<()> {
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        std::fs::rename(&tmp, &target)
    };
    place().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", target.display())
    })?;
    Ok(target)
}

/// `text` written whole and synced into a new private (0600) file beside `target`
/// (`.NAME.slurmdash-PID`), never through a link; the caller moves it into place. On an
/// error nothing is left behind.
pub fn private_copy_beside(target: &Path, text: &str) -> std::io::Result<PathBuf> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(".{name}.slurmdash-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    };
    match write() {
        Ok(()) => Ok(tmp),
        Err(e) => {
            // create_new: a file that was there already is not ours to remove.
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                let _ = std::fs::remove_file(&tmp);
            }
            Err(e)
        }
    }
}

/// `text` with `[ui] columns` set: pure, for the tests.
pub fn with_columns(text: &str, columns: &[Column]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("not valid TOML, left as it is: {e}"))?;
    let names: Vec<String> = columns
        .iter()
        .map(|c| {
            toml::Value::try_from(c)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    let mut array = toml_edit::Array::new();
    for n in names {
        array.push(n);
    }
    let ui = doc
        .entry("ui")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(ui) = ui.as_table_like_mut() else {
        return Err("`ui` is not a table, left as it is".into());
    };
    match ui.get_mut("columns") {
        // Keep the comment written above the key.
        Some(item) if item.is_value() => {
            let decor = item.as_value().map(|v| v.decor().clone());
            *item = toml_edit::value(array);
            if let (Some(d), Some(v)) = (decor, item.as_value_mut()) {
                *v.decor_mut() = d;
            }
        }
        _ => {
            ui.insert("columns", toml_edit::value(array));
        }
    }
    Ok(doc.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const COLS: &[Column] = &[Column::Id, Column::State, Column::Name];

    #[test]
    fn comments_and_other_keys_stay() {
        let text = "# mine\ndefault_cluster = \"polar\"\n\n[ui]\n# the columns\ncolumns = [\"id\", \"name\"]\nquick_cancel = false # keep\n\n[clusters.polar]\nhosts = [\"a\"]\n";
        let out = with_columns(text, COLS).unwrap();
        assert!(out.contains("# mine\n"), "{out}");
        assert!(
            out.contains("# the columns\ncolumns = [\"id\", \"state\", \"name\"]"),
            "{out}"
        );
        assert!(out.contains("quick_cancel = false # keep"), "{out}");
        assert!(out.contains("[clusters.polar]\nhosts = [\"a\"]"), "{out}");
        let c: crate::config::Config = toml::from_str(&out).unwrap();
        assert_eq!(c.ui.columns.as_deref(), Some(COLS));
    }

    #[test]
    fn a_config_without_ui_or_none_at_all() {
        let out = with_columns("default_cluster = \"x\"\n", COLS).unwrap();
        let c: crate::config::Config = toml::from_str(&out).unwrap();
        assert_eq!(c.ui.columns.as_deref(), Some(COLS));
        assert!(with_columns("", COLS).unwrap().contains("[ui]"));
        let e = with_columns("[ui\n", COLS).unwrap_err();
        assert!(e.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn the_file_is_replaced_whole_with_its_mode_and_a_link_stays_a_link() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("dotfiles/config.toml");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "[ui]\nquick_cancel = true\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let wrote = save_columns(&link, COLS).unwrap();
        assert_eq!(wrote, std::fs::canonicalize(&real).unwrap());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let text = std::fs::read_to_string(&real).unwrap();
        assert!(
            text.contains("quick_cancel = true") && text.contains("\"state\""),
            "{text}"
        );
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // Nothing left beside it.
        assert_eq!(
            std::fs::read_dir(real.parent().unwrap()).unwrap().count(),
            1
        );

        // No file yet: made, private.
        let fresh = d.path().join("new/dir/config.toml");
        save_columns(&fresh, COLS).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        // A config that does not parse is left alone.
        std::fs::write(&real, "[ui\n").unwrap();
        assert!(save_columns(&link, COLS).is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "[ui\n");
    }
}
