//! The Rust API over the same engine: typed handler registration and AM injection with
//! slices (the C ABI passes raw pointers to the same calls).
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use gasnet::{skifch::local, am::RustHandler, Category, Data, Gasnet, Options, Token};
//! // The ranks are threads here: one slot per replying rank.
//! static SEEN: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];
//! fn ping(t: &mut Token<'_>, args: &[u32], _: Data<'_>) {
//!     t.reply(201, Category::Short, &[args[0] + 1], &[], 0, false).unwrap();
//! }
//! fn pong(t: &mut Token<'_>, args: &[u32], _: Data<'_>) {
//!     SEEN[t.src() as usize].store(args[0], Ordering::SeqCst);
//! }
//! let p = local::Params { nranks: 2, nports: 5, lane_bytes: 1 << 14 };
//! local::run_with(p, |job| {
//!     let g = Gasnet::new(&job, Options { rma: job.rma(), progress_thread: false }).unwrap();
//!     g.register_rust(&[(200, ping as RustHandler), (201, pong)]).unwrap();
//!     g.attach(1 << 16).unwrap();
//!     let peer = (g.me() + 1) % 2;
//!     g.request_short(peer, 200, &[41]).unwrap();
//!     g.wait_until(|| SEEN[peer as usize].load(Ordering::SeqCst) == 42).unwrap();
//!     g.barrier().unwrap();
//!     Ok(())
//! }).unwrap();
//! ```
#![allow(unsafe_code)] // safe slices over the engine's raw-pointer put/get

use skifch::Port;

use crate::am::{Category, EntryRec, HandlerFn, RustHandler};
use crate::engine::Gasnet;
use crate::eps::Route;
use crate::rma::Pending;
use crate::{Error, Result};

impl<P: Port> Gasnet<P> {
    /// Registers Rust handlers at the given indices (0: any free index); returns the
    /// indices used.
    pub fn register_rust(&self, handlers: &[(u8, RustHandler)]) -> Result<Vec<u8>> {
        self.register_rust_on(0, handlers)
    }

    /// [`Gasnet::register_rust`] on endpoint `ep` ([`Gasnet::create_ep`]).
    pub fn register_rust_on(&self, ep: u32, handlers: &[(u8, RustHandler)]) -> Result<Vec<u8>> {
        let e: Vec<_> = handlers
            .iter()
            .map(|(i, f)| {
                (
                    HandlerFn::Rust(*f),
                    EntryRec {
                        index: *i,
                        fnptr: 0,
                        flags: 0,
                        nargs: 255,
                        cdata: 0,
                        name: 0,
                    },
                )
            })
            .collect();
        self.register_on(ep, &e)
    }

    /// A Short request with `args` (at most 16) to handler `index` of `dst`.
    pub fn request_short(&self, dst: u32, index: u8, args: &[u32]) -> Result<()> {
        self.request_on(Route::PRIMORDIAL, dst, index, Category::Short, args, &[], 0)
    }

    /// A Medium request: `data` is handed to the target's handler in place.
    pub fn request_medium(&self, dst: u32, index: u8, args: &[u32], data: &[u8]) -> Result<()> {
        self.request_on(
            Route::PRIMORDIAL,
            dst,
            index,
            Category::Medium,
            args,
            data,
            0,
        )
    }

    /// A Long request: `data` lands at `dest` (an address in `dst`'s segment) before the
    /// target's handler runs.
    pub fn request_long(
        &self,
        dst: u32,
        index: u8,
        args: &[u32],
        data: &[u8],
        dest: usize,
    ) -> Result<()> {
        self.request_on(
            Route::PRIMORDIAL,
            dst,
            index,
            Category::Long,
            args,
            data,
            dest,
        )
    }

    /// A request of any category along `route`: from this process's endpoint
    /// `route.local` to the handler `index` of endpoint `route.remote` of `dst` (whose
    /// segment a Long's `dest` is in); its reply runs on `route.local`'s handlers.
    #[allow(clippy::too_many_arguments)]
    pub fn request_on(
        &self,
        route: Route,
        dst: u32,
        index: u8,
        cat: Category,
        args: &[u32],
        data: &[u8],
        dest: usize,
    ) -> Result<()> {
        self.check_ep(route.local)?;
        if route.remote >= crate::eps::MAX_EPS {
            return Err(Error::BadArgument(format!(
                "endpoint index {} (at most {})",
                route.remote,
                crate::eps::MAX_EPS
            )));
        }
        let dst = self.rank(i64::from(dst))?;
        let (src, len) = (data.as_ptr() as usize, data.len());
        self.request(route, dst, index, cat, args, src, len, dest, false)
            .map(|_| ())
    }

    /// A Short request that is sent only if the channel takes it now (`GEX_FLAG_IMMEDIATE`):
    /// `Ok(false)` when it was not injected.
    pub fn try_request_short(&self, dst: u32, index: u8, args: &[u32]) -> Result<bool> {
        self.request(
            Route::PRIMORDIAL,
            dst,
            index,
            Category::Short,
            args,
            0,
            0,
            0,
            true,
        )
    }

    /// Puts `src` to `dest` in `rank`'s segment and waits for remote completion.
    pub fn put_bytes(&self, rank: u32, dest: usize, src: &[u8]) -> Result<()> {
        let p = self.put_nb(rank, dest, src)?;
        self.complete(p)
    }

    /// Starts a put of `src` to `dest` in `rank`'s segment; `src` may be reused at once
    /// (local completion at return). Wait for the returned [`Pending`] (the Rust API's
    /// event) with [`Gasnet::complete`] or poll it with [`Gasnet::test`].
    pub fn put_nb(&self, rank: u32, dest: usize, src: &[u8]) -> Result<Pending> {
        self.rank(i64::from(rank))?;
        // SAFETY: a slice is readable for its length.
        unsafe { self.put(rank, dest, src.as_ptr(), src.len()) }
    }

    /// Gets `dst.len()` bytes from `src` in `rank`'s segment (blocking).
    pub fn get_bytes(&self, dst: &mut [u8], rank: u32, src: usize) -> Result<()> {
        self.rank(i64::from(rank))?;
        // SAFETY: `dst` is borrowed mutably until the get has completed below (and the
        // pending request is cancelled-by-completion before the borrow ends).
        let p = unsafe { self.get(dst.as_mut_ptr(), rank, src, dst.len()) }?;
        self.complete(p)
    }

    /// Puts `src` to `dest` in the segment of endpoint `ep` of `rank` and waits for
    /// remote completion.
    pub fn put_bytes_on(&self, ep: u32, rank: u32, dest: usize, src: &[u8]) -> Result<()> {
        self.rank(i64::from(rank))?;
        // SAFETY: a slice is readable for its length.
        let p = unsafe { self.put_on(ep, rank, dest, src.as_ptr(), src.len()) }?;
        self.complete(p)
    }

    /// Gets `dst.len()` bytes from `src` in the segment of endpoint `ep` of `rank`.
    pub fn get_bytes_on(&self, ep: u32, dst: &mut [u8], rank: u32, src: usize) -> Result<()> {
        self.rank(i64::from(rank))?;
        // SAFETY: as in `get_bytes`.
        let p = unsafe { self.get_on(ep, dst.as_mut_ptr(), rank, src, dst.len()) }?;
        self.complete(p)
    }

    /// `rank`'s segment base of endpoint `ep` (in that rank's address space).
    pub fn segment_on(&self, ep: u32, rank: u32) -> Result<usize> {
        let s = self.segs_of(ep).ok_or(Error::NotAttached)?;
        Ok(s.bases[self.rank(i64::from(rank))? as usize].0)
    }

    /// This rank's segment: (base, length) in its address space.
    pub fn segment(&self) -> Result<(usize, usize)> {
        let s = self.segs().ok_or(Error::NotAttached)?;
        Ok(s.bases[self.me() as usize])
    }

    /// `rank`'s segment base (in that rank's address space), to address puts and Longs.
    pub fn segment_of(&self, rank: u32) -> Result<usize> {
        let s = self.segs().ok_or(Error::NotAttached)?;
        Ok(s.bases[self.rank(i64::from(rank))? as usize].0)
    }
}
