//! A hold on a ControlMaster: one idle connection to its socket, speaking ssh's multiplexing
//! protocol (PROTOCOL.mux) just far enough to prove the master is alive (it tells its pid).
//!
//! ssh counts every connected mux client as a use of the master: while a hold is open the
//! master's `ControlPersist` countdown does not start, and it starts when the last one closes.
//! Each slurmdash process holds the master it works through, so a master shared by several
//! processes lives while any of them runs and ends `ControlPersist` seconds after the last one
//! exits, however it exits (a crash closes the socket too). No slurmdash ever has to tell a
//! shared master to exit under another's feet.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MUX_MSG_HELLO: u32 = 0x0000_0001;
const MUX_C_ALIVE_CHECK: u32 = 0x1000_0004;
const MUX_S_ALIVE: u32 = 0x8000_0005;
/// The protocol version ssh has spoken since OpenSSH 5.6.
const SSHMUX_VER: u32 = 4;
/// Longer packets than this do not come from a master answering a hello or an alive check.
const MAX_PACKET: u32 = 64 * 1024;
/// Our id for the one alive check we send.
const CHECK_ID: u32 = 1;

/// An open connection to a live master. The master counts as in use until this is dropped.
#[derive(Debug)]
pub struct Hold {
    _sock: std::os::unix::net::UnixStream,
}

/// Why no hold could be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldError {
    /// No socket there, or nothing listens on it any more (a master that died).
    NoMaster(String),
    /// Something accepted the connection and did not answer in time (a hung master).
    Silent,
    /// It answered, but not as an ssh master does.
    Garbled(String),
}

impl std::fmt::Display for HoldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HoldError::NoMaster(e) => write!(f, "no master answers: {e}"),
            HoldError::Silent => {
                f.write_str("the socket accepts connections but its master does not answer")
            }
            HoldError::Garbled(e) => write!(f, "the socket does not speak ssh's mux protocol: {e}"),
        }
    }
}

/// Our hello, the answer to the master's.
fn hello() -> [u8; 12] {
    packet([MUX_MSG_HELLO, SSHMUX_VER])
}

fn alive_check() -> [u8; 12] {
    packet([MUX_C_ALIVE_CHECK, CHECK_ID])
}

/// `len` (8) then two u32, all big-endian.
fn packet(words: [u32; 2]) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[..4].copy_from_slice(&8u32.to_be_bytes());
    p[4..8].copy_from_slice(&words[0].to_be_bytes());
    p[8..].copy_from_slice(&words[1].to_be_bytes());
    p
}

fn word(body: &[u8], i: usize) -> Option<u32> {
    let b = body.get(i * 4..i * 4 + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The body of the master's first packet must be a hello of a version we speak.
fn check_hello(body: &[u8]) -> Result<(), HoldError> {
    match (word(body, 0), word(body, 1)) {
        (Some(MUX_MSG_HELLO), Some(SSHMUX_VER)) => Ok(()),
        (Some(MUX_MSG_HELLO), Some(v)) => Err(HoldError::Garbled(format!(
            "mux protocol version {v}, not {SSHMUX_VER}"
        ))),
        _ => Err(HoldError::Garbled("no hello".into())),
    }
}

/// The pid in the answer to our alive check.
fn alive_pid(body: &[u8]) -> Result<u32, HoldError> {
    match (word(body, 0), word(body, 1), word(body, 2)) {
        (Some(MUX_S_ALIVE), Some(CHECK_ID), Some(pid)) => Ok(pid),
        _ => Err(HoldError::Garbled("no answer to the alive check".into())),
    }
}

async fn read_packet(s: &mut tokio::net::UnixStream) -> Result<Vec<u8>, HoldError> {
    let eof = |e: std::io::Error| HoldError::NoMaster(format!("the master hung up: {e}"));
    let len = s.read_u32().await.map_err(eof)?;
    if len > MAX_PACKET {
        return Err(HoldError::Garbled(format!("a packet of {len} bytes")));
    }
    let mut body = vec![0u8; len as usize];
    s.read_exact(&mut body).await.map_err(eof)?;
    Ok(body)
}

/// Connects to the master on `ctl`, exchanges hellos and asks whether it is alive, all within
/// `limit` (a socket whose owner hangs must not hang slurmdash). The connection stays open in
/// the returned [`Hold`].
pub async fn hold(ctl: &Path, limit: Duration) -> Result<Hold, HoldError> {
    let talk = async {
        let mut s = tokio::net::UnixStream::connect(ctl)
            .await
            .map_err(|e| HoldError::NoMaster(e.to_string()))?;
        check_hello(&read_packet(&mut s).await?)?;
        let mut out = hello().to_vec();
        out.extend_from_slice(&alive_check());
        s.write_all(&out)
            .await
            .map_err(|e| HoldError::NoMaster(format!("the master hung up: {e}")))?;
        alive_pid(&read_packet(&mut s).await?)?;
        Ok::<_, HoldError>(s)
    };
    let s = tokio::time::timeout(limit, talk)
        .await
        .map_err(|_| HoldError::Silent)??;
    let sock = s
        .into_std()
        .map_err(|e| HoldError::NoMaster(e.to_string()))?;
    Ok(Hold { _sock: sock })
}

/// [`hold`] for code that is not async (the login in the terminal, before the dashboard).
pub fn hold_blocking(ctl: &Path, limit: Duration) -> Result<Hold, HoldError> {
    // A thread and runtime of its own: the caller may itself run inside a runtime, where
    // starting (or dropping) another on the same thread panics.
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| HoldError::NoMaster(format!("cannot start a runtime: {e}")))?
                .block_on(hold(ctl, limit))
        })
        .join()
        .unwrap_or_else(|_| Err(HoldError::Garbled("the check panicked".into())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;

    /// A listener on a fresh socket that runs `serve` on each connection.
    fn serve(
        f: impl Fn(std::os::unix::net::UnixStream) + Send + Sync + 'static,
    ) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s");
        let l = UnixListener::bind(&path).expect("bind");
        let f = std::sync::Arc::new(f);
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let f = f.clone();
                std::thread::spawn(move || f(s));
            }
        });
        (dir, path)
    }

    /// What a real master does: hello first, then answer an alive check with its pid.
    fn fake_master(mut s: std::os::unix::net::UnixStream) {
        s.write_all(&hello()).expect("hello");
        let mut buf = [0u8; 24];
        s.read_exact(&mut buf).expect("client hello and check");
        assert_eq!(buf[..12], hello());
        let id = u32::from_be_bytes([buf[20], buf[21], buf[22], buf[23]]);
        let mut reply = 12u32.to_be_bytes().to_vec();
        for w in [MUX_S_ALIVE, id, 4242] {
            reply.extend_from_slice(&w.to_be_bytes());
        }
        s.write_all(&reply).expect("reply");
        // Stays connected until the client lets go.
        let _ = s.read(&mut buf);
    }

    #[tokio::test]
    async fn a_master_that_answers_is_held() {
        let (_d, path) = serve(fake_master);
        let h = hold(&path, Duration::from_secs(5)).await.expect("held");
        let b = hold_blocking(&path, Duration::from_secs(5)).expect("held, blocking");
        drop((h, b));
    }

    #[tokio::test]
    async fn a_dead_socket_is_told_from_a_hung_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing");
        assert!(matches!(
            hold(&missing, Duration::from_secs(5)).await,
            Err(HoldError::NoMaster(_))
        ));
        // The socket file of a master that died: nothing listens any more.
        let stale = dir.path().join("stale");
        drop(UnixListener::bind(&stale).expect("bind"));
        assert!(stale.exists());
        assert!(matches!(
            hold(&stale, Duration::from_secs(5)).await,
            Err(HoldError::NoMaster(_))
        ));
        // Accepts and never speaks: bounded by the limit.
        let (_d, hung) = serve(|s| {
            std::thread::sleep(Duration::from_secs(30));
            drop(s);
        });
        assert_eq!(
            hold(&hung, Duration::from_millis(300)).await.unwrap_err(),
            HoldError::Silent
        );
    }

    #[tokio::test]
    async fn something_else_on_the_socket_is_not_a_master() {
        let (_d, path) = serve(|mut s| {
            let _ = s.write_all(b"\0\0\0\x05hello");
        });
        assert!(matches!(
            hold(&path, Duration::from_secs(5)).await,
            Err(HoldError::Garbled(_))
        ));
        let (_d, huge) = serve(|mut s| {
            let _ = s.write_all(&[0xff; 8]);
        });
        assert!(matches!(
            hold(&huge, Duration::from_secs(5)).await,
            Err(HoldError::Garbled(_))
        ));
    }

    #[test]
    fn packets_are_what_ssh_sends() {
        // Captured from OpenSSH 9.2's master: its hello.
        assert_eq!(hello(), [0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4]);
        assert_eq!(alive_check()[4..8], [0x10, 0, 0, 4]);
        assert_eq!(
            alive_pid(&[0x80, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0x2d, 0x0e]),
            Ok(11534)
        );
        assert!(check_hello(&[0, 0, 0, 1, 0, 0, 0, 3]).is_err());
    }
}
