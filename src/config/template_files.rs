//! Templates kept one per file, `$XDG_CONFIG_HOME/slurmdash/templates/NAME.toml`
//! (`~/.config/...` when it is unset): written by the launch form (`w`), read beside the
//! config's `[templates.NAME]`, which a file of the same name replaces. A file holds the
//! launch fields by the names `submit --set` takes (plus `command`, and `[[steps]]`).

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::launch::LaunchSpec;

/// Where template files live.
pub fn dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "slurmdash").map(|d| d.config_dir().join("templates"))
}

/// A template name is one file name: letters, digits, `.`, `_`, `-`, not starting with `.`.
/// The error says what is wrong with it.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a template needs a name".into());
    }
    if name.contains('/') {
        return Err(format!(
            "template name `{name}` has a `/`: a name is one file name, not a path"
        ));
    }
    if name.contains("..") {
        return Err(format!("template name `{name}` has `..`"));
    }
    if name.starts_with('.') {
        return Err(format!(
            "template name `{name}` starts with `.` (a hidden file)"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        let what = if c.is_whitespace() {
            "a space".to_string()
        } else if c.is_control() || !c.is_ascii() {
            format!("the character U+{:04X}", u32::from(c))
        } else {
            format!("`{c}`")
        };
        return Err(format!(
            "template name `{}` has {what}: use letters, digits, `.`, `_` and `-`",
            name.escape_default()
        ));
    }
    if name.len() > 100 {
        return Err("a template name is at most 100 characters".into());
    }
    Ok(())
}

/// A template file that was read.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateFile {
    pub name: String,
    pub path: PathBuf,
    pub table: toml::Table,
}

/// Reads every `*.toml` in `dir` (none when it does not exist), in name order. `check`
/// says whether a table makes a valid launch (`Err((key, reason))`). A file that cannot
/// be read, does not parse or does not check is left out and described (file, key,
/// reason); the others still load.
pub fn load(
    dir: &Path,
    check: impl Fn(&toml::Table) -> Result<(), (Option<String>, String)>,
) -> (Vec<TemplateFile>, Vec<(String, String)>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (files, problems),
        Err(e) => {
            problems.push((
                String::new(),
                format!("template files {}: {e}", dir.display()),
            ));
            return (files, problems);
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let Some(name) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let shown = path.display();
        if let Err(e) = check_name(&name) {
            problems.push((name, format!("template file {shown}: {e}")));
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push((name, format!("template file {shown}: {e}")));
                continue;
            }
        };
        let table: toml::Table = match toml::from_str(&text) {
            Ok(t) => t,
            Err(e) => {
                problems.push((
                    name,
                    format!(
                        "template file {shown}: {}",
                        e.to_string().trim().replace('\n', " ")
                    ),
                ));
                continue;
            }
        };
        let mut table = table;
        let base = path.parent().unwrap_or(dir);
        if let Err(e) = crate::launch::sweep::read_file_runs(&mut table, base) {
            problems.push((
                name,
                format!("template file {shown}: key `sweep.file`: {e}"),
            ));
            continue;
        }
        if let Err((key, reason)) = check(&table) {
            let key = key.map(|k| format!("key `{k}`: ")).unwrap_or_default();
            problems.push((name, format!("template file {shown}: {key}{reason}")));
            continue;
        }
        files.push(TemplateFile { name, path, table });
    }
    (files, problems)
}

/// The keys a saved template holds: what the form fills in, by `--set`'s names.
const SAVED: &[&str] = crate::launch::spec::KEYS;

/// The file a template saved from `spec` is: every launch field by its `--set` name (and
/// `[[steps]]` when it has steps), after a comment saying what it is.
pub fn to_toml(name: &str, spec: &LaunchSpec) -> Result<String, String> {
    let full = toml::Table::try_from(spec).map_err(|e| e.to_string())?;
    let mut doc = toml_edit::DocumentMut::new();
    for key in SAVED.iter().chain(["steps"].iter()) {
        let Some(v) = full.get(*key) else { continue };
        let text = toml::to_string(&toml::Table::from_iter([(key.to_string(), v.clone())]))
            .map_err(|e| e.to_string())?;
        let part: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
        for (k, item) in part.iter() {
            doc.insert(k, item.clone());
        }
    }
    Ok(format!(
        "# slurmdash launch template `{name}`, saved from the launch form.\n# Keys as `slurmdash submit --set` takes them; use it with --template {name}.\n{doc}"
    ))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaveError {
    /// A template of that name exists (and overwriting was not asked for).
    Exists(PathBuf),
    Failed(String),
}

/// Writes `spec` as template `name` in `dir` (made 0700 when missing): a private (0600)
/// file beside it, then moved into place whole. Without `overwrite` an existing file is
/// left alone (the link into place fails when one is there, even one made meanwhile).
pub fn save(
    dir: &Path,
    name: &str,
    spec: &LaunchSpec,
    overwrite: bool,
) -> Result<PathBuf, SaveError> {
    check_name(name).map_err(SaveError::Failed)?;
    let failed = |p: &Path, e: std::io::Error| SaveError::Failed(format!("{}: {e}", p.display()));
    let text = to_toml(name, spec).map_err(SaveError::Failed)?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| failed(dir, e))?;
    let target = dir.join(format!("{name}.toml"));
    if !overwrite && std::fs::symlink_metadata(&target).is_ok() {
        return Err(SaveError::Exists(target));
    }
    let tmp =
        crate::config_write::private_copy_beside(&target, &text).map_err(|e| failed(&target, e))?;
    let placed = if overwrite {
        std::fs::rename(&tmp, &target)
    } else {
        let r = std::fs::hard_link(&tmp, &target);
        let _ = std::fs::remove_file(&tmp);
        r
    };
    match placed {
        Ok(()) => Ok(target),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(SaveError::Exists(target)),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(failed(&target, e))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_are_one_file_name_and_the_error_says_what_is_wrong() {
        assert!(check_name("train-8gpu_v1.2").is_ok());
        let e = |n: &str| check_name(n).unwrap_err();
        assert!(e("a/b").contains("has a `/`"), "{}", e("a/b"));
        assert!(e("..").contains("`..`"));
        assert!(e("x..y").contains("`..`"));
        assert!(e(".hidden").contains("starts with `.`"));
        assert!(e("my run").contains("a space"));
        assert!(e("a\u{7}b").contains("U+0007"), "{}", e("a\u{7}b"));
        assert!(e("é").contains("U+00E9"));
        assert!(e("a;b").contains("`;`"));
        assert!(e("").contains("needs a name"));
    }

    fn spec() -> LaunchSpec {
        let mut s = LaunchSpec {
            name: "eval".into(),
            gpus: 2,
            command: "python eval.py --n 3".into(),
            template: Some("old".into()),
            retries: Some(1),
            ..LaunchSpec::default()
        };
        s.env.insert("MODE".into(), "fast".into());
        s.inputs = vec!["/lustre/data".into()];
        s
    }

    #[test]
    fn a_saved_template_holds_the_set_keys_and_reads_back_the_same() {
        let text = to_toml("eval", &spec()).unwrap();
        assert!(
            text.starts_with("# slurmdash launch template `eval`"),
            "{text}"
        );
        let table: toml::Table = toml::from_str(&text).unwrap();
        for k in table.keys() {
            assert!(SAVED.contains(&k.as_str()), "{k} is not a --set key");
        }
        assert!(!table.contains_key("template"));
        let mut back: LaunchSpec = toml::Value::Table(table).try_into().unwrap();
        back.template = Some("old".into());
        assert_eq!(back, spec());
        // In form order: the name first, the command after the image.
        assert!(text.find("name =").unwrap() < text.find("command =").unwrap());
        // Steps come along.
        let mut s = spec();
        s.steps = vec![crate::launch::steps::StepSpec {
            name: "model".into(),
            command: "serve".into(),
            ready: "http://localhost:1/".into(),
            ..Default::default()
        }];
        let text = to_toml("x", &s).unwrap();
        assert!(text.contains("[[steps]]"), "{text}");
        let back: LaunchSpec = toml::from_str(&text).unwrap();
        assert_eq!(back.steps, s.steps);
    }

    #[test]
    fn saving_is_private_refuses_to_clobber_and_overwrites_when_asked() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("slurmdash/templates");
        let p = save(&dir, "eval", &spec(), false).unwrap();
        assert_eq!(p, dir.join("eval.toml"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(&dir), 0o700);
        let mut other = spec();
        other.gpus = 7;
        assert_eq!(
            save(&dir, "eval", &other, false),
            Err(SaveError::Exists(p.clone()))
        );
        assert!(std::fs::read_to_string(&p).unwrap().contains("gpus = 2"));
        save(&dir, "eval", &other, true).unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("gpus = 7"));
        assert_eq!(mode(&p), 0o600);
        // Nothing left beside it; a bad name writes nothing.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert!(matches!(
            save(&dir, "../x", &spec(), false),
            Err(SaveError::Failed(m)) if m.contains('/')
        ));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn a_bad_file_is_described_by_file_and_key_and_the_others_load() {
        let d = tempfile::tempdir().unwrap();
        save(d.path(), "good", &spec(), false).unwrap();
        std::fs::write(d.path().join("typo.toml"), "gpu = 8\n").unwrap();
        std::fs::write(d.path().join("broken.toml"), "gpus = \n").unwrap();
        std::fs::write(d.path().join("notes.txt"), "not a template").unwrap();
        let check = |t: &toml::Table| -> Result<(), (Option<String>, String)> {
            match t
                .keys()
                .find(|k| !SAVED.contains(&k.as_str()) && *k != "steps")
            {
                Some(k) => Err((Some(k.clone()), "unknown".into())),
                None => Ok(()),
            }
        };
        let (files, problems) = load(d.path(), check);
        assert_eq!(
            files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["good"]
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        let typo = &problems.iter().find(|p| p.0 == "typo").unwrap().1;
        assert!(
            typo.contains("typo.toml") && typo.contains("key `gpu`"),
            "{typo}"
        );
        let broken = &problems.iter().find(|p| p.0 == "broken").unwrap().1;
        assert!(broken.contains("broken.toml"), "{broken}");
        // No directory: nothing, and no problem.
        let (f, p) = load(&d.path().join("none"), check);
        assert!(f.is_empty() && p.is_empty());
    }
}
