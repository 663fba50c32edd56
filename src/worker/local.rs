//! The laptop's own work, off the event loop: the files the dashboard writes (the queue's
//! columns, launch templates) and connecting to a cluster added with `:cluster NAME`. Like
//! a cluster's hub it takes commands and answers with messages. It never touches the
//! terminal: the clipboard's escape sequence, ctrl-z and a job's shell stay with the loop,
//! which owns the screen.

use crate::action::LaunchMsg;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::action::{Cmd, Msg};
use crate::config::{Cluster, Loaded};
use crate::remote::Remote;

/// A cluster added with `:cluster NAME`, connected (or why not), for the loop to start its
/// hub.
pub type Added = (String, color_eyre::Result<(Cluster, Arc<dyn Remote>)>);

pub struct Local {
    tx: UnboundedSender<Msg>,
    added: UnboundedSender<Added>,
    loaded: Arc<Loaded>,
}

impl Local {
    /// `tx` takes the notes and saved templates; `added` the clusters connected.
    pub fn new(tx: UnboundedSender<Msg>, added: UnboundedSender<Added>, loaded: Loaded) -> Local {
        Local {
            tx,
            added,
            loaded: Arc::new(loaded),
        }
    }

    /// Starts `cmd` when it is the laptop's work; hands any other command back.
    pub fn run(&self, cmd: Cmd) -> Option<Cmd> {
        match cmd {
            Cmd::SaveColumns(cols) => {
                let path = self.loaded.path.clone();
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let note = match crate::config_write::save_columns(&path, &cols) {
                        Ok(p) => format!("columns saved in {}", p.display()),
                        Err(e) => format!("columns changed for this session but not saved: {e}"),
                    };
                    let _ = tx.send(Msg::Note(note));
                });
                None
            }
            Cmd::SaveTemplate {
                name,
                spec,
                overwrite,
            } => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    use crate::config::template_files::{self, SaveError};
                    let result = match template_files::dir() {
                        Some(dir) => template_files::save(&dir, &name, &spec, overwrite),
                        None => Err(SaveError::Failed(
                            "no config directory (neither XDG_CONFIG_HOME nor HOME is set)".into(),
                        )),
                    };
                    let _ = tx.send(Msg::Launch(LaunchMsg::TemplateSaved { name, spec, result }));
                });
                None
            }
            Cmd::ReadScript(path) => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let result = read_script(&path);
                    let _ = tx.send(Msg::Launch(LaunchMsg::ScriptRead { path, result }));
                });
                None
            }
            Cmd::AddCluster(name) => {
                match self
                    .loaded
                    .cluster(Some(&name), &crate::config::Env::from_process())
                {
                    Ok(cluster) => {
                        // Checked on a task (`ssh -O check` can hang on a stale socket).
                        let added = self.added.clone();
                        tokio::spawn(async move {
                            let remote = crate::io::connect::connect_quiet(&cluster).await;
                            let _ = added.send((name, remote.map(|r| (cluster, r))));
                        });
                    }
                    Err(e) => {
                        let _ = self.tx.send(Msg::Note(format!("{e:#}")));
                    }
                }
                None
            }
            other => Some(other),
        }
    }
}

/// A batch script on this machine, for the launch form: `~/` is the home directory; at
/// most [`crate::launch::directives::MAX_SCRIPT_BYTES`] (a longer file is refused by the
/// parser, which sees one byte more).
fn read_script(path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let path = path.trim();
    if path.is_empty() {
        return Err("no script named".into());
    }
    let full = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    };
    let file = std::fs::File::open(&full).map_err(|e| format!("{}: {e}", full.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", full.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", full.display()));
    }
    let mut bytes = Vec::new();
    file.take(crate::launch::directives::MAX_SCRIPT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", full.display()))?;
    Ok(bytes)
}
