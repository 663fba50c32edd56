//! The terminal: entering and leaving the alternate screen on every exit path (normal
//! quit, error, a panic in any task, SIGHUP/SIGTERM/SIGINT), and suspending on ctrl-z.

use std::io::{self, BufWriter, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// Frames are written through a buffer as large as any frame, so each goes out in one
/// write when it is flushed: stdout alone writes every KiB, and a terminal read between
/// two writes showed the new frame's top over the last one's bottom.
pub type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Holds a whole frame of a very large terminal (each cell a few bytes of text and style).
const FRAME_BUFFER: usize = 1 << 20;

pub fn enter() -> io::Result<Term> {
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let out = BufWriter::with_capacity(FRAME_BUFFER, io::stdout());
    let mut t = Terminal::new(CrosstermBackend::new(out))?;
    t.clear()?;
    Ok(t)
}

/// Gives the terminal back to the shell. Safe to call more than once.
pub fn leave() {
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
}

static PANICKED: AtomicBool = AtomicBool::new(false);
/// Held while a frame is drawn, so a panic on another thread restores the terminal only
/// after (never during) a frame, and no frame is drawn after it.
static DRAWING: Mutex<()> = Mutex::new(());

fn panic_wake() -> &'static tokio::sync::Notify {
    static WAKE: OnceLock<tokio::sync::Notify> = OnceLock::new();
    WAKE.get_or_init(tokio::sync::Notify::new)
}

/// True once any thread or task has panicked while the TUI was up.
pub fn panicked() -> bool {
    PANICKED.load(Ordering::Acquire)
}

/// Completes when a panic happened anywhere (a worker task included): the event loop then
/// stops instead of drawing into a terminal the panic hook has already given back.
pub async fn wait_for_panic() {
    let woken = panic_wake().notified();
    tokio::pin!(woken);
    woken.as_mut().enable();
    if panicked() {
        return;
    }
    woken.await;
}

/// Draw a frame only while holding this, and only if [`panicked`] is false.
pub fn draw_guard() -> MutexGuard<'static, ()> {
    DRAWING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Restores the terminal before a panic message is printed, so the message is readable
/// and the shell is usable afterwards; then wakes the event loop so that it shuts down
/// (closing the SSH master) instead of drawing on.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::Release);
        // Wait for a frame being drawn on another thread; a panic inside `draw` on this
        // thread holds the lock itself, hence the bound.
        let start = Instant::now();
        let _frame = loop {
            match DRAWING.try_lock() {
                Ok(g) => break Some(g),
                Err(std::sync::TryLockError::Poisoned(p)) => break Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock)
                    if start.elapsed() < Duration::from_millis(300) =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::sync::TryLockError::WouldBlock) => break None,
            }
        };
        leave();
        previous(info);
        panic_wake().notify_waiters();
    }));
}

/// ctrl-z: give the terminal back, stop the process as the shell expects, and take the
/// screen again when `fg` resumes it.
/// Runs `cmd` in this terminal (a shell in a job) with the dashboard put away, and takes the
/// terminal back when it ends. The caller drops its terminal event stream first, so that
/// nothing reads the keys meant for `cmd`.
/// The outer error is the terminal's (it could not be taken back); the inner one says why
/// `cmd` could not run.
pub async fn hand_over(
    term: &mut Term,
    cmd: &[String],
    banner: &str,
) -> io::Result<io::Result<std::process::ExitStatus>> {
    leave();
    println!("{banner}");
    let status = match cmd.split_first() {
        Some((prog, args)) => {
            tokio::process::Command::new(prog)
                .args(args)
                .kill_on_drop(true)
                .status()
                .await
        }
        None => Err(io::Error::other("empty command")),
    };
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    term.clear()?;
    Ok(status)
}

/// `$PAGER` (else `less`), split into words like a shell would: the user's own setting.
pub fn pager_argv(pager: Option<&str>) -> Vec<String> {
    pager
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .and_then(shlex::split)
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| vec!["less".into()])
}

/// Hands the terminal to `$PAGER` on `text` (a file only this user can read, removed
/// after) and takes it back. `Ok`: the note for the status bar.
pub async fn page(term: &mut Term, text: &str) -> io::Result<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    static PAGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // A new file (create_new: never one another user put there first), 0600.
    let path = std::env::temp_dir().join(format!(
        "slurmdash-output-{}-{}-{}.txt",
        std::process::id(),
        PAGED.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        return Ok(format!(
            "could not write the output for $PAGER ({}): {e}",
            path.display()
        ));
    }
    let mut argv = pager_argv(std::env::var("PAGER").ok().as_deref());
    argv.push(path.display().to_string());
    let status = hand_over(
        term,
        &argv,
        "slurmdash: the command's output in $PAGER; quit it to return",
    )
    .await;
    let _ = std::fs::remove_file(&path);
    Ok(match status? {
        Ok(_) => "back from $PAGER".into(),
        Err(e) => format!("could not run $PAGER `{}`: {e}", argv[0]),
    })
}

pub fn suspend(term: &mut Term) -> io::Result<()> {
    leave();
    // SAFETY: raise() with a valid signal number has no memory-safety preconditions.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    term.clear()
}

#[cfg(test)]
mod pager_tests {
    #[test]
    fn the_pager_is_pagers_words_else_less() {
        assert_eq!(super::pager_argv(None), ["less"]);
        assert_eq!(super::pager_argv(Some("  ")), ["less"]);
        assert_eq!(super::pager_argv(Some("less -R")), ["less", "-R"]);
        assert_eq!(
            super::pager_argv(Some("'/opt/my pager' -x")),
            ["/opt/my pager", "-x"]
        );
    }
}
