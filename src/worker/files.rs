//! The files view's work: listings, previews and sizes run as tasks; one copy at a time,
//! held so that `esc` can stop it (dropping the task ends its remote command).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::action::Msg;
use crate::jobfiles::copy::{self, CopyOpts};
use crate::jobfiles::{display_name, rate_line, FilesCmd, FilesMsg};
use crate::remote::Remote;

/// Progress is reported at most this often.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

#[derive(Default)]
pub struct FilesWorker {
    copy: Option<JoinHandle<()>>,
}

impl FilesWorker {
    pub fn run(
        &mut self,
        cmd: FilesCmd,
        remote: Arc<dyn Remote>,
        tx: UnboundedSender<Msg>,
        timeout: Duration,
    ) {
        let send = move |m: FilesMsg| {
            let _ = tx.send(Msg::Files(m));
        };
        match cmd {
            FilesCmd::List { dir, seq, .. } => {
                tokio::spawn(async move {
                    let result = copy::list_dir(remote.as_ref(), &dir, timeout).await;
                    send(FilesMsg::Listed { seq, result });
                });
            }
            FilesCmd::Preview { path, seq, .. } => {
                tokio::spawn(async move {
                    let result = copy::preview(remote.as_ref(), &path, timeout).await;
                    send(FilesMsg::Previewed { seq, result });
                });
            }
            FilesCmd::Plan { src, dest, .. } => {
                tokio::spawn(async move {
                    let result = copy::plan_dir(remote.as_ref(), &src, timeout)
                        .await
                        .map(|(_, bytes)| bytes);
                    send(FilesMsg::Planned { src, dest, result });
                });
            }
            FilesCmd::Fetch { src, dir, dest, .. } => {
                self.stop();
                let opts = CopyOpts {
                    timeout,
                    ..CopyOpts::default()
                };
                self.copy = Some(tokio::spawn(async move {
                    let result = fetch(remote.as_ref(), &src, dir, &dest, opts, &send).await;
                    send(FilesMsg::Fetched { dest, result });
                }));
            }
            FilesCmd::Stop { .. } => self.stop(),
        }
    }

    pub fn stop(&mut self) {
        if let Some(t) = self.copy.take() {
            t.abort();
        }
    }
}

impl Drop for FilesWorker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One copy, with progress; the summary line (bytes, time, rate) when it ends.
pub async fn fetch(
    remote: &dyn Remote,
    src: &[u8],
    dir: bool,
    dest: &std::path::Path,
    opts: CopyOpts,
    send: &(dyn Fn(FilesMsg) + Send + Sync),
) -> Result<String, String> {
    let t0 = Instant::now();
    let mut last = Instant::now() - PROGRESS_EVERY;
    if dir {
        let mut each = |done: u64, total: u64, file: &str| {
            if last.elapsed() >= PROGRESS_EVERY || done == total {
                last = Instant::now();
                send(FilesMsg::Progress {
                    done,
                    total,
                    file: file.to_string(),
                });
            }
        };
        let r = copy::fetch_dir(remote, src, dest, opts, &mut each).await?;
        let mut line = format!(
            "{} files, {}, each checked by sha256",
            r.files,
            rate_line(r.copied, t0.elapsed().as_secs_f64())
        );
        if !r.skipped.is_empty() {
            line.push_str(&format!(
                "; not copied (links, special files): {}",
                r.skipped.join(", ")
            ));
        }
        return Ok(line);
    }
    let shown = display_name(src);
    let mut each = |done: u64| {
        if last.elapsed() >= PROGRESS_EVERY {
            last = Instant::now();
            send(FilesMsg::Progress {
                done,
                total: 0,
                file: shown.clone(),
            });
        }
    };
    let r = copy::fetch_file(remote, src, dest, opts, &mut each).await?;
    let mut line = format!(
        "{}, sha256 checked",
        rate_line(r.copied, t0.elapsed().as_secs_f64())
    );
    if r.restarted {
        line.push_str(" (the partial file there did not match: copied again whole)");
    } else if r.resumed_from > 0 {
        line.push_str(&format!(" (resumed from {} bytes)", r.resumed_from));
    }
    Ok(line)
}
