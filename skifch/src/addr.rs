//! Network addresses (spec: "Channels and addresses").

use std::fmt;

/// The address of one channel in a job: `netaddr_t` of the C ABI.
///
/// Encoding (fixed, part of the C ABI): the high 16 bits are the rank, the low 16 bits the
/// port. So a job has at most 65 535 ranks and a process at most 65 535 ports; a driver
/// may support fewer ports (the shm driver: `skifch_drivers::shm::MAX_PORTS`).
///
/// # Examples
/// ```
/// use skifch::NetAddr;
/// let a = NetAddr::new(3, 1);
/// assert_eq!((a.rank(), a.port()), (3, 1));
/// assert_eq!(u32::from(a), 0x0003_0001);
/// assert_eq!(a.to_string(), "3:1");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct NetAddr(u32);

impl NetAddr {
    /// The address of `port` on `rank`.
    pub const fn new(rank: u16, port: u16) -> Self {
        NetAddr(((rank as u32) << 16) | port as u32)
    }
    /// The rank part.
    pub const fn rank(self) -> u32 {
        self.0 >> 16
    }
    /// The port part.
    pub const fn port(self) -> u32 {
        self.0 & 0xffff
    }
    /// The raw `netaddr_t` value.
    pub const fn raw(self) -> u32 {
        self.0
    }
}

impl From<u32> for NetAddr {
    fn from(v: u32) -> Self {
        NetAddr(v)
    }
}
impl From<NetAddr> for u32 {
    fn from(a: NetAddr) -> u32 {
        a.0
    }
}
impl fmt::Display for NetAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.rank(), self.port())
    }
}
impl fmt::Debug for NetAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NetAddr({}:{})", self.rank(), self.port())
    }
}
