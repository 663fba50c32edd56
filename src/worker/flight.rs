//! Single flight: at most one request of a kind runs at a time; a request made while one
//! runs waits, and a newer one replaces it (newest wins). The running task starts the
//! waiting request itself when it ends, so no one outside has to free the slot.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

struct Slot<T> {
    busy: bool,
    next: Option<T>,
}

/// One kind of request (a refresh, a job's detail, a pending job's insight).
pub struct Flight<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

impl<T> Default for Flight<T> {
    fn default() -> Self {
        Flight {
            slot: Arc::new(Mutex::new(Slot {
                busy: false,
                next: None,
            })),
        }
    }
}

/// What `request` did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Nothing was running: a task started on it.
    Started,
    /// One is running: this one runs after it (replacing any that waited before).
    Queued,
}

impl<T: Send + 'static> Flight<T> {
    /// Runs `work(req)` on a task now, or after the running one if there is one. `work` is
    /// called again, on the same task, for each request that waited.
    pub fn request<F, Fut>(&self, req: T, work: F) -> Taken
    where
        F: Fn(T) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        {
            let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.busy {
                slot.next = Some(req);
                return Taken::Queued;
            }
            slot.busy = true;
        }
        let slot = self.slot.clone();
        tokio::spawn(async move {
            // Frees the slot however the task ends (also if `work` panics or the task is
            // aborted), so a later request is never stuck behind a dead one.
            let mut free = Free {
                slot: slot.clone(),
                ended: false,
            };
            let mut req = req;
            loop {
                work(req).await;
                let mut s = slot.lock().unwrap_or_else(PoisonError::into_inner);
                match s.next.take() {
                    Some(next) => req = next,
                    None => {
                        s.busy = false;
                        free.ended = true;
                        return;
                    }
                }
            }
        });
        Taken::Started
    }

    /// A request is running or waiting.
    pub fn busy(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .busy
    }
}

/// Frees the slot of a task that did not end normally (a panic or an abort).
struct Free<T> {
    slot: Arc<Mutex<Slot<T>>>,
    ended: bool,
}

impl<T> Drop for Free<T> {
    fn drop(&mut self) {
        if !self.ended {
            let mut s = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
            s.busy = false;
            s.next = None;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::mpsc;

    /// Each request records when it starts and ends; each takes 50 ms.
    fn work(
        log: mpsc::UnboundedSender<String>,
    ) -> impl Fn(u32) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static {
        move |n| {
            let log = log.clone();
            Box::pin(async move {
                let _ = log.send(format!("start {n}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = log.send(format!("end {n}"));
            })
        }
    }

    async fn drain(rx: &mut mpsc::UnboundedReceiver<String>) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(Some(s)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            out.push(s);
        }
        out
    }

    #[tokio::test]
    async fn one_runs_at_a_time_and_the_newest_waiting_request_wins() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let f = Flight::default();
        assert_eq!(f.request(1, work(tx.clone())), Taken::Started);
        assert_eq!(f.request(2, work(tx.clone())), Taken::Queued);
        assert_eq!(f.request(3, work(tx.clone())), Taken::Queued);
        assert!(f.busy());
        drop(tx);
        let log = drain(&mut rx).await;
        assert_eq!(log, ["start 1", "end 1", "start 3", "end 3"]);
        assert!(!f.busy(), "the slot is free once nothing waits");
    }

    #[tokio::test]
    async fn a_request_after_the_last_one_ended_starts_at_once() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let f = Flight::default();
        f.request(1, work(tx.clone()));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while f.busy() {
            assert!(std::time::Instant::now() < deadline, "slot still busy");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(f.request(2, work(tx.clone())), Taken::Started);
        drop(tx);
        assert_eq!(
            drain(&mut rx).await,
            ["start 1", "end 1", "start 2", "end 2"]
        );
    }

    #[tokio::test]
    async fn a_panicking_request_frees_the_slot() {
        let f: Flight<u32> = Flight::default();
        f.request(1, |_| async { panic!("deliberate") });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while f.busy() {
            assert!(std::time::Instant::now() < deadline, "slot still busy");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        assert_eq!(f.request(2, work(tx.clone())), Taken::Started);
        drop(tx);
        assert_eq!(drain(&mut rx).await, ["start 2", "end 2"]);
    }
}
