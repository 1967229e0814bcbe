//! The optional progress thread (SEED-NOTES, PIOMan): serves incoming requests while the
//! application computes, so a target answers gets and rendezvous without calling the
//! library. Nearly free when idle: after a short spin it sleeps on the driver's waiter and
//! wakes when a message is published (or a peer is lost).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Endpoint;
use crate::driver::Waiter;
use crate::{Error, Port, Result, WaitPolicy};

/// A thread that polls an endpoint shared as `Arc<Mutex<Endpoint<P, C>>>`. The application
/// takes the lock for each library call; the thread takes it only to poll. Handler errors
/// stay in the endpoint for the application's next `poll`/wait; the thread ends on a
/// channel error (e.g. `PeerLost`), which [`ProgressThread::stop`] returns.
pub struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<()>>>,
}

impl ProgressThread {
    /// Starts polling `ep`; spins for `spin` after the last message, then sleeps.
    pub fn start<P: Port + 'static, C: Send + 'static>(
        ep: Arc<Mutex<Endpoint<P, C>>>,
        spin: Duration,
    ) -> Result<Self> {
        let waiter = lock(&ep).waiter();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let handle = std::thread::Builder::new()
            .name("skifch-progress".into())
            .spawn(move || run(&ep, &waiter, &st, spin))
            .map_err(|e| Error::os("spawning the progress thread", e))?;
        Ok(ProgressThread {
            stop,
            handle: Some(handle),
        })
    }

    /// Starts with the spin period of the endpoint's wait policy (20 µs by default).
    pub fn start_default<P: Port + 'static, C: Send + 'static>(
        ep: Arc<Mutex<Endpoint<P, C>>>,
    ) -> Result<Self> {
        let spin = match WaitPolicy::from_env() {
            WaitPolicy::Fixed(d) => d,
            WaitPolicy::Spin => Duration::from_millis(1),
            WaitPolicy::Block => Duration::ZERO,
        };
        Self::start(ep, spin)
    }

    /// Whether the thread is still running.
    pub fn is_running(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Stops the thread (within one sleep slice, ≤ 10 ms) and returns how it ended. Call it
    /// (or drop the handle) without holding the endpoint's lock: the thread may be waiting
    /// for it.
    pub fn stop(mut self) -> Result<()> {
        self.halt()
    }

    fn halt(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::Release);
        match self.handle.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(Error::InvalidArgument("progress thread panicked".into()))),
            None => Ok(()),
        }
    }
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

fn lock<P: Port, C>(ep: &Mutex<Endpoint<P, C>>) -> std::sync::MutexGuard<'_, Endpoint<P, C>> {
    ep.lock().unwrap_or_else(|p| p.into_inner())
}

fn run<P: Port, C>(
    ep: &Mutex<Endpoint<P, C>>,
    waiter: &P::Waiter,
    stop: &AtomicBool,
    spin: Duration,
) -> Result<()> {
    let mut last = Instant::now();
    while !stop.load(Ordering::Acquire) {
        let (n, queued) = {
            let mut g = lock(ep);
            let g = &mut *g;
            g.io.flush_all(&g.ch);
            (g.service()?, g.queued())
        };
        if n > 0 {
            last = Instant::now();
            continue;
        }
        if last.elapsed() < spin {
            std::thread::yield_now();
            continue;
        }
        // Sleep protocol of `Waiter`: arm, look once more, sleep.
        let t = waiter.arm();
        let n = { lock(ep).service()? };
        if n == 0 {
            let slice = if queued > 0 {
                Duration::from_micros(100)
            } else {
                Duration::from_millis(10)
            };
            waiter.sleep(t, slice);
        } else {
            last = Instant::now();
        }
        waiter.disarm();
        if let Some(rank) = waiter.lost_peer() {
            return Err(Error::PeerLost { rank });
        }
    }
    Ok(())
}
