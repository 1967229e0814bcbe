//! Which port of every rank each library uses: the one port table of the stack
//! (`docs/ARCHITECTURE.md`, "Ports"). A library opens its own port, so its messages never
//! meet another library's (each has its own message space, ARCHITECTURE "Higher
//! libraries"), and one program may use several libraries at once (MPI with ARMCI, say).
//!
//! | port | user |
//! | --- | --- |
//! | 0 | [`APP`]: the application's own channels (SkifCh C ABI programs, examples) |
//! | 1 | [`MPI`]: mpi-lite |
//! | 2 | [`SHMEM`]: skifshmem |
//! | 3 | [`ARMCI`]: armci-shim |
//! | 4 | [`GASNET`]: gasnet-shim |
//!
//! Drivers offer `0..max_ports()` ports (5 by default, one per row above; shm:
//! `SKIFCH_PORTS` up to 64; fpga-model: 1..=7). Tools that run alone — the conformance suite, the MsgRate
//! tool — use ports 0–2 as they like.
//!
//! ```
//! use skifch::ports;
//! assert_eq!(ports::TABLE.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
//! assert_eq!(ports::owner(ports::MPI), Some("mpi-lite"));
//! ```

/// The application's own channels.
pub const APP: u32 = 0;
/// mpi-lite's active-message endpoint.
pub const MPI: u32 = 1;
/// skifshmem's active-message endpoint.
pub const SHMEM: u32 = 2;
/// armci-shim's endpoint.
pub const ARMCI: u32 = 3;
/// gasnet-shim's endpoint.
pub const GASNET: u32 = 4;

/// Every assigned port and its user, in port order.
pub const TABLE: [(u32, &str); 5] = [
    (APP, "application"),
    (MPI, "mpi-lite"),
    (SHMEM, "skifshmem"),
    (ARMCI, "armci-shim"),
    (GASNET, "gasnet-shim"),
];

/// The user of `port`, if it is assigned (for error messages: "port 2 is skifshmem's").
pub fn owner(port: u32) -> Option<&'static str> {
    TABLE.iter().find(|p| p.0 == port).map(|p| p.1)
}
