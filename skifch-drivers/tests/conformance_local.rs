//! The conformance suite on the in-process job (threads).
use std::time::Duration;

use skifch::{conformance, Error};
use skifch_drivers::inproc as local;
use skifch_drivers::shm::Params;

fn cfg() -> conformance::Config {
    if cfg!(miri) {
        conformance::Config {
            messages: 20,
            max_payload: 64,
            pair_memory: 0,
        }
    } else {
        conformance::Config::standard()
    }
}

#[test]
fn in_process_job_passes_the_suite() {
    let n = if cfg!(miri) { 2 } else { 4 };
    let p = Params {
        nranks: n,
        nports: 2,
        lane_bytes: if cfg!(miri) { 1 << 10 } else { 16 << 10 },
    };
    local::run_with(p, move |job| conformance::run_all(&job, &cfg())).unwrap();
}

#[test]
#[cfg_attr(miri, ignore = "timing: a deadline is meaningless at Miri's speed")]
fn in_process_peer_failure_is_reported() {
    let p = Params {
        nranks: 3,
        nports: 2,
        lane_bytes: 4 << 10,
    };
    let r = local::run_with(p, |job| {
        let mut s = conformance::Suite::new(&job, conformance::Config::small())?;
        // Reported at once (the panic marks the rank lost); 5 s leaves room for a survivor
        // thread not scheduled on a loaded machine.
        conformance::peer_failure(&mut s, Duration::from_secs(5), || {
            panic!("rank dies on purpose")
        })
    });
    match r {
        Err(Error::Bootstrap(m)) => assert!(m.contains("rank 2 panicked"), "{m}"),
        other => panic!("expected the victim's panic to be the only failure, got {other:?}"),
    }
}

/// The window behind a rare flake of the test above: a rank thread that panics must be
/// marked lost before its ports close, so that no peer sees a transient `Closed`.
#[test]
fn a_panicking_rank_is_lost_before_its_ports_close() {
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::Arc;
    // 0: not observed; 1: lost when the port had closed; 2: not yet lost.
    let seen = Arc::new(AtomicU8::new(0));
    struct Probe(
        Arc<skifch_drivers::shm::Fabric<skifch_drivers::shm::HeapRegion>>,
        Arc<AtomicU8>,
    );
    impl Drop for Probe {
        fn drop(&mut self) {
            let v = if self.0.ctl().lost() == Some(1) { 1 } else { 2 };
            self.1.store(v, Ordering::SeqCst);
        }
    }
    let p = Params {
        nranks: 2,
        nports: 1,
        lane_bytes: 4 << 10,
    };
    let s = seen.clone();
    let r = local::run_with(p, move |job| {
        if job.rank() == 1 {
            // Declared first, dropped last: it looks after the channel has closed.
            let _probe = Probe(job.driver().fabric().clone(), s.clone());
            let _ch = job.open(0)?;
            panic!("rank dies on purpose");
        }
        Ok(())
    });
    assert!(matches!(r, Err(Error::Bootstrap(_))), "{r:?}");
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "rank 1 was not lost when its port closed"
    );
}
