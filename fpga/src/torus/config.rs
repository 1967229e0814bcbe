//! Network parameters, their defaults (with where each number comes from) and validation.

use super::topology::Dims;
use crate::{Error, Result};

/// Parameters of the torus network and of the adapters' injection/ejection.
///
/// Defaults are close to SKIF-Aurora as far as public sources go; every one is an
/// assumption to be replaced by a measurement when a card is at hand (see `fpga/TORUS.md`).
///
/// # Examples
/// ```
/// use fpga::torus::{Config, Dims};
/// let c = Config { dims: Dims::new(2, 2, 2).unwrap(), ..Config::default() };
/// assert!(c.validate().is_ok());
/// assert!(Config { max_payload: 0, ..c }.validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Torus size.
    pub dims: Dims,
    /// Bandwidth of one link, one direction, in bytes/ns. Default 4.0: 4 lanes × 10 Gbit/s
    /// with 8b/10b coding = 32 Gbit/s of data (assumption, FPGA serial links of the era).
    pub link_bw: f64,
    /// Propagation + SerDes latency of a link, ns. Default 50 (assumption: ~2 m cable and
    /// FPGA transceivers).
    pub link_ns: f64,
    /// Router latency per hop (input → output pipeline of the FPGA router), ns. Default 200
    /// (assumption: tens of cycles at ~150–250 MHz).
    pub router_ns: f64,
    /// Largest payload of one packet, bytes; longer messages are split. Default 256.
    pub max_payload: u32,
    /// Per-packet overhead on the wire (header + CRC + framing), bytes. Default 16.
    pub overhead: u32,
    /// Credit unit (flit), bytes: a packet of `w` wire bytes takes `⌈w/flit⌉` buffer
    /// slots. Default 16 (a 128-bit FPGA datapath word; assumption).
    pub flit_bytes: u32,
    /// Input buffer per virtual channel, in flits (the credits of a link and VC; also the
    /// router's injection buffer). Default 128 = 2 KiB, enough to cover the credit round
    /// trip (link + router + link ≈ 300 ns at 4 B/ns = 1.2 KB) so that one flow can fill a
    /// link (assumption: FPGA block RAM).
    pub buf_flits: u32,
    /// Virtual channels per link: 2 (dateline, deadlock-free) or 1 (can deadlock).
    pub vcs: u8,
    /// Host → adapter injection bandwidth (PCIe DMA), bytes/ns. Default 3.2 (PCIe 2.0 ×8
    /// after protocol overhead; assumption).
    pub inject_bw: f64,
    /// Adapter → host ejection bandwidth, bytes/ns. Default 3.2 (as injection).
    pub eject_bw: f64,
    /// Adapter occupancy per message (descriptor fetch, doorbell handling), ns. Default 80:
    /// an assumption chosen so that the 8-byte rate has the order of magnitude of the paper's
    /// Fig. 5 (about ten million messages per second); not a measurement.
    pub nic_msg_ns: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dims: Dims::new(4, 4, 4).expect("4x4x4 is a valid torus"),
            link_bw: 4.0,
            link_ns: 50.0,
            router_ns: 200.0,
            max_payload: 256,
            overhead: 16,
            flit_bytes: 16,
            buf_flits: 128,
            vcs: 2,
            inject_bw: 3.2,
            eject_bw: 3.2,
            nic_msg_ns: 80.0,
        }
    }
}

impl Config {
    /// Checks every field; the network refuses a configuration this rejects.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::BadConfig(m));
        for (name, v) in [
            ("link_bw", self.link_bw),
            ("inject_bw", self.inject_bw),
            ("eject_bw", self.eject_bw),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!(
                    "{name} = {v}: must be a positive number of bytes/ns"
                ));
            }
        }
        for (name, v) in [
            ("link_ns", self.link_ns),
            ("router_ns", self.router_ns),
            ("nic_msg_ns", self.nic_msg_ns),
        ] {
            if !(v.is_finite() && (0.0..1e9).contains(&v)) {
                return bad(format!("{name} = {v}: must be 0..1e9 ns"));
            }
        }
        if self.max_payload == 0 || self.max_payload > 1 << 20 {
            return bad(format!(
                "max_payload = {}: must be 1..=1 MiB",
                self.max_payload
            ));
        }
        if self.overhead > 1 << 16 {
            return bad(format!(
                "overhead = {}: must be at most 64 KiB",
                self.overhead
            ));
        }
        if self.flit_bytes == 0 || self.flit_bytes > 1 << 16 {
            return bad(format!(
                "flit_bytes = {}: must be 1..=64 Ki",
                self.flit_bytes
            ));
        }
        if self.buf_flits < self.flits(self.max_payload + self.overhead) || self.buf_flits > 1 << 24
        {
            return bad(format!(
                "buf_flits = {}: must hold a largest packet ({} flits of {} B) and be at most 2^24",
                self.buf_flits,
                self.flits(self.max_payload + self.overhead),
                self.flit_bytes
            ));
        }
        if !(1..=2).contains(&self.vcs) {
            return bad(format!("vcs = {}: must be 1 or 2", self.vcs));
        }
        Ok(())
    }

    /// Buffer slots (credits) a packet of `wire` bytes takes.
    pub fn flits(&self, wire: u32) -> u32 {
        wire.div_ceil(self.flit_bytes.max(1)).max(1)
    }

    /// Number of packets a message of `bytes` becomes (at least one: a header-only packet).
    pub fn packets(&self, bytes: u32) -> u32 {
        bytes.div_ceil(self.max_payload).max(1)
    }

    /// Bytes on the wire of a message of `bytes`: payload plus per-packet overhead.
    pub fn wire_bytes(&self, bytes: u32) -> u64 {
        bytes as u64 + self.packets(bytes) as u64 * self.overhead as u64
    }

    /// Zero-load latency of a message of `bytes` over `hops` links, ns (closed form).
    ///
    /// Routers forward cut-through, so a packet pays every fixed latency once and its
    /// serialisation only at the slowest stage; the packets of a message pipeline behind each
    /// other at that stage: `nic_msg_ns + hops·(link_ns + router_ns) + wire_bytes / min(
    /// inject_bw, link_bw, eject_bw)` (the link only if `hops > 0`). Exact for one packet,
    /// and for several when injection is the slowest stage (the defaults); otherwise a lower
    /// bound. The simulator rounds each stage up to whole picoseconds.
    ///
    /// # Examples
    /// ```
    /// use fpga::torus::Config;
    /// let c = Config { nic_msg_ns: 0.0, inject_bw: 4.0, eject_bw: 4.0, ..Config::default() };
    /// // 3 hops × (200 + 50) + (8 + 16) B / 4 B/ns
    /// assert_eq!(c.zero_load_ns(3, 8), 756.0);
    /// ```
    pub fn zero_load_ns(&self, hops: u32, bytes: u32) -> f64 {
        let mut bw = self.inject_bw.min(self.eject_bw);
        if hops > 0 {
            bw = bw.min(self.link_bw);
        }
        let ser = self.wire_bytes(bytes) as f64 / bw;
        self.nic_msg_ns + hops as f64 * (self.link_ns + self.router_ns) + ser
    }

    /// The adapter's own limit on messages per second for `bytes`-byte messages (each packet
    /// occupies the injection DMA for its wire time, each message also `nic_msg_ns`).
    pub fn nic_msg_rate(&self, bytes: u32) -> f64 {
        let ns = self.nic_msg_ns + self.wire_bytes(bytes) as f64 / self.inject_bw;
        1e9 / ns
    }
}
