//! Admission of observations: how many captures and waits run at once.
//!
//! Captures are short (one or two tmux round trips), so a capture that finds
//! every place taken queues — in arrival order (tokio's semaphore is fair) —
//! for up to `CAPTURE_QUEUE_WAIT_MS`, behind at most `MAX_QUEUED_CAPTURES`
//! others. Only beyond that, real overload, is it refused, with a time to
//! retry after. Waits hold their place for up to their timeout, so they are
//! capped instead of queued: a wait beyond `MAX_OBSERVERS` is refused at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tmux_mcp_core::limits;
use tokio::sync::{Semaphore, SemaphorePermit};

pub struct Admission {
    captures: Semaphore,
    waits: Semaphore,
    queued: AtomicUsize,
    max_queued: usize,
    queue_wait: Duration,
}

impl Default for Admission {
    fn default() -> Self {
        Admission::new(
            limits::MAX_OBSERVERS as usize,
            limits::MAX_QUEUED_CAPTURES as usize,
            Duration::from_millis(limits::CAPTURE_QUEUE_WAIT_MS),
        )
    }
}

/// Why an observation was not admitted; the message says when to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// Counts a queued capture for as long as it waits.
struct InQueue<'a>(&'a AtomicUsize);

impl Drop for InQueue<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Admission {
    pub fn new(places: usize, max_queued: usize, queue_wait: Duration) -> Self {
        Admission {
            captures: Semaphore::new(places),
            waits: Semaphore::new(places),
            queued: AtomicUsize::new(0),
            max_queued,
            queue_wait,
        }
    }

    /// A place for one capture, queueing briefly when all are taken.
    pub async fn capture(&self) -> Result<SemaphorePermit<'_>, Refused> {
        if let Ok(p) = self.captures.try_acquire() {
            return Ok(p);
        }
        if self.queued.fetch_add(1, Ordering::Relaxed) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            return Err(Refused(format!(
                "{} captures are running and {} more are queued; retry in about 1 s",
                self.places(),
                self.max_queued
            )));
        }
        let _counted = InQueue(&self.queued);
        match tokio::time::timeout(self.queue_wait, self.captures.acquire()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_)) => Err(Refused("the broker is stopping".into())),
            Err(_) => Err(Refused(format!(
                "no capture place came free within {} ms; retry in about 1 s",
                self.queue_wait.as_millis()
            ))),
        }
    }

    /// A place for one wait, or a refusal when `MAX_OBSERVERS` waits run.
    pub fn wait(&self) -> Result<SemaphorePermit<'_>, Refused> {
        self.waits.try_acquire().map_err(|_| {
            Refused(format!(
                "{} waits are already running; retry when one of them ends (at most its timeout)",
                self.places()
            ))
        })
    }

    fn places(&self) -> usize {
        limits::MAX_OBSERVERS as usize
    }

    /// Waits (up to `timeout`) until every running observation has finished.
    pub async fn drain(&self, timeout: Duration) {
        let all = limits::MAX_OBSERVERS as u32;
        let _ = tokio::time::timeout(timeout, async {
            let _c = self.captures.acquire_many(all).await;
            let _w = self.waits.acquire_many(all).await;
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn captures_queue_in_order_instead_of_failing() {
        let a = std::sync::Arc::new(Admission::new(1, 8, Duration::from_secs(5)));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let held = a.capture().await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..4 {
            let (a, tx) = (a.clone(), tx.clone());
            tasks.push(tokio::spawn(async move {
                let _p = a.capture().await.expect("queued capture admitted");
                tx.send(i).unwrap();
            }));
            tokio::task::yield_now().await;
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        let order: Vec<i32> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(
            order,
            vec![0, 1, 2, 3],
            "queued captures ran out of arrival order"
        );
    }

    #[tokio::test]
    async fn a_full_queue_refuses_and_says_when_to_retry() {
        let a = std::sync::Arc::new(Admission::new(1, 1, Duration::from_secs(5)));
        let _held = a.capture().await.unwrap();
        let a2 = a.clone();
        let queued = tokio::spawn(async move { a2.capture().await.map(|_| ()) });
        tokio::task::yield_now().await;
        let refused = a.capture().await.unwrap_err();
        assert!(refused.0.contains("retry"), "{refused:?}");
        queued.abort();
    }

    #[tokio::test]
    async fn waits_are_capped_not_queued() {
        let a = Admission::new(2, 8, Duration::from_secs(5));
        let _w1 = a.wait().unwrap();
        let _w2 = a.wait().unwrap();
        assert!(a.wait().is_err());
        assert!(
            a.capture().await.is_ok(),
            "waits must not take capture places"
        );
    }
}
