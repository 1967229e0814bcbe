//! The library's self-test ([`skifshmem::selftest`]) as a multi-process job over the
//! default driver: `skifrun -n 4 -- target/debug/examples/selftest` (the driver's RMA
//! provider, `Job::rma`; `SKIFSHMEM_RMA=off` for the message path). Exits non-zero on any failure.

use skifshmem::{Options, World};

fn main() {
    let r = (|| -> Result<&'static str, skifshmem::Error> {
        let job = skifch_drivers::init()?;
        let rma_off = std::env::var("SKIFSHMEM_RMA").is_ok_and(|v| v == "off");
        let opts = Options {
            rma: if rma_off { None } else { job.rma() },
            heap_size: 16 << 20,
            globals: None,
            progress_thread: std::env::var("SKIFSHMEM_PROGRESS_THREAD").is_ok_and(|v| v == "1"),
        };
        let w = World::new(&job, opts)?;
        skifshmem::selftest::run(&w)?;
        w.finalize()?;
        Ok(match w.path() {
            skifshmem::Path::Direct => "direct",
            skifshmem::Path::Messages => "messages",
            skifshmem::Path::Transfers => "transfers",
        })
    })();
    match r {
        Ok(path) => println!("selftest passed ({path})"),
        Err(e) => {
            eprintln!("selftest: {e}");
            std::process::exit(1);
        }
    }
}
