//! The conformance suite on the in-process job (threads).
use std::time::Duration;

use skifch::ring::Params;
use skifch::{conformance, local, Error};

fn cfg() -> conformance::Config {
    if cfg!(miri) {
        conformance::Config {
            messages: 20,
            max_payload: 64,
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
#[cfg_attr(miri, ignore = "timing: a 1 s deadline is meaningless at Miri's speed")]
fn in_process_peer_failure_is_reported() {
    let p = Params {
        nranks: 3,
        nports: 2,
        lane_bytes: 4 << 10,
    };
    let r = local::run_with(p, |job| {
        let mut s = conformance::Suite::new(&job, conformance::Config::small())?;
        conformance::peer_failure(&mut s, Duration::from_secs(1), || {
            panic!("rank dies on purpose")
        })
    });
    match r {
        Err(Error::Bootstrap(m)) => assert!(m.contains("rank 2 panicked"), "{m}"),
        other => panic!("expected the victim's panic to be the only failure, got {other:?}"),
    }
}
