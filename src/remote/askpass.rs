//! The prompts of an interactive login, asked by slurmdash itself: ssh runs this binary as
//! its `SSH_ASKPASS` for every question (password, one-time code, host key), so slurmdash
//! can say when the server refused an answer and is asking again, which ssh alone never
//! does. The answer goes to ssh on stdout and nowhere else.

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Set (to a state file) in the environment of the `ssh` of an interactive login.
pub const ENV: &str = "SLURMDASH_ASKPASS";

/// The terminal settings to put back if ctrl-c arrives while echo is off.
static SAVED: OnceLock<(i32, libc::termios)> = OnceLock::new();

extern "C" fn restore_and_exit(_: libc::c_int) {
    if let Some((fd, t)) = SAVED.get() {
        // SAFETY: tcsetattr and _exit are async-signal-safe; `t` is a valid termios.
        unsafe {
            libc::tcsetattr(*fd, libc::TCSANOW, t);
            libc::_exit(130);
        }
    }
    // SAFETY: as above.
    unsafe { libc::_exit(130) }
}

/// The environment that makes `ssh` ask through slurmdash; `None` if this binary cannot
/// be found (ssh then asks itself).
pub fn env_for_ssh(state: &Path) -> Option<Vec<(&'static str, OsString)>> {
    let exe = std::env::current_exe().ok()?;
    Some(vec![
        ("SSH_ASKPASS", exe.into_os_string()),
        ("SSH_ASKPASS_REQUIRE", "force".into()),
        (ENV, state.as_os_str().to_owned()),
    ])
}

/// A question that is answered in the open (host-key confirmation), not a secret.
fn is_confirmation(prompt: &str) -> bool {
    prompt.contains("(yes/no")
}

/// The same question again right after an answer: the server refused it.
pub fn refused_again(previous: Option<&str>, prompt: &str) -> bool {
    previous.is_some_and(|p| p == prompt) && !is_confirmation(prompt)
}

/// Runs as ssh's askpass: asks `prompt` on the terminal, prints the answer for ssh.
/// Exit code 1 (ssh gives up) when there is no terminal or the prompt was closed.
pub fn run(state: PathBuf, prompt: String) -> std::process::ExitCode {
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return std::process::ExitCode::FAILURE;
    };
    let previous = std::fs::read_to_string(&state).ok();
    let mut out = &tty;
    if refused_again(previous.as_deref(), &prompt) {
        let _ = writeln!(
            out,
            "slurmdash: that answer was not accepted; try again (the server decides how many tries)"
        );
    }
    let _ = std::fs::write(&state, &prompt);
    let _ = write!(out, "{prompt} ");
    let _ = out.flush();
    let fd = tty.as_raw_fd();
    let hide = !is_confirmation(&prompt);
    if hide {
        echo_off(fd);
    }
    let mut line = String::new();
    let read = std::io::BufReader::new(&tty).read_line(&mut line);
    if hide {
        if let Some((_, t)) = SAVED.get() {
            // SAFETY: restoring settings read from the same descriptor.
            unsafe {
                libc::tcsetattr(fd, libc::TCSANOW, t);
            }
        }
        let _ = writeln!(out);
    }
    match read {
        Ok(n) if n > 0 => {
            let answer = line.trim_end_matches(['\n', '\r']);
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{answer}");
            std::process::ExitCode::SUCCESS
        }
        // ctrl-d on an empty line: the prompt was closed.
        _ => std::process::ExitCode::FAILURE,
    }
}

fn echo_off(fd: i32) {
    // SAFETY: termios is plain data; tcgetattr fills it for a valid descriptor.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
        return;
    }
    let _ = SAVED.set((fd, t));
    // SAFETY: installing a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(
            libc::SIGINT,
            restore_and_exit as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            restore_and_exit as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let mut quiet = t;
    quiet.c_lflag &= !libc::ECHO;
    // SAFETY: a valid termios for a valid descriptor.
    unsafe {
        libc::tcsetattr(fd, libc::TCSANOW, &quiet);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_code_prompt_means_the_last_code_was_refused() {
        let p = "(me@login1) Verification code:";
        assert!(!refused_again(None, p));
        assert!(refused_again(Some(p), p));
        assert!(!refused_again(Some("me@login1's password:"), p));
        let q = "Are you sure you want to continue connecting (yes/no/[fingerprint])?";
        assert!(!refused_again(Some(q), q));
    }
}
