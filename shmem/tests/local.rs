//! The Rust API on the in-process job (ranks as threads), on both access paths: the
//! direct path through the job's RMA provider (`Job::rma`: `skifch::rma::LocalRma`) and
//! the message path (no RMA).

use skifch::local::{self, LocalJob};
use skifshmem::{Options, Path, SymVec, World};

fn world(
    job: &LocalJob,
    direct: bool,
    progress_thread: bool,
) -> std::sync::Arc<World<<skifch::local::LocalDriver as skifch::Driver>::Port>> {
    let opts = Options {
        rma: if direct { job.rma() } else { None },
        heap_size: 8 << 20,
        globals: None,
        progress_thread,
    };
    World::new(job, opts).expect("init")
}

fn properties(job: LocalJob, direct: bool, progress_thread: bool) -> skifch::Result<()> {
    let w = world(&job, direct, progress_thread);
    assert_eq!(w.path(), if direct { Path::Direct } else { Path::Messages });
    skifshmem::selftest::run(&w)
        .map_err(|e| skifch::Error::InvalidArgument(e.to_string().into()))?;
    w.finalize().unwrap();
    Ok(())
}

#[test]
fn direct_path_2_and_4() {
    local::run(2, |j| properties(j, true, false)).unwrap();
    local::run(4, |j| properties(j, true, false)).unwrap();
}

#[test]
fn message_path_2_and_4() {
    local::run(2, |j| properties(j, false, false)).unwrap();
    local::run(4, |j| properties(j, false, false)).unwrap();
}

#[test]
fn message_path_with_progress_thread() {
    local::run(3, |j| properties(j, false, true)).unwrap();
}

#[test]
fn lost_pe_is_an_error_not_a_hang() {
    let r = local::run(2, |job| {
        let w = world(&job, false, false);
        if w.my_pe() == 1 {
            panic!("PE 1 dies");
        }
        let v = SymVec::<u64>::new(&w, 1);
        match v {
            Err(e) => Err(skifch::Error::InvalidArgument(e.to_string().into())),
            Ok(v) => v
                .wait_until(&w, 0, |x| x == 1)
                .map(|_| ())
                .map_err(|e| skifch::Error::InvalidArgument(e.to_string().into())),
        }
    });
    let e = r.unwrap_err().to_string();
    assert!(e.contains("panicked") || e.contains("lost"), "{e}");
}
