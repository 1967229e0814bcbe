//! The adapter contract under test: every format round-trips, arbitrary bytes never panic
//! a parser, short buffers and invalid fields are refused, and the datasheet's register
//! table (`README.md`) is exactly `regs::REGISTERS`.

use fpga::desc::{
    net_addr, rx_status, tx_flags, Limits, PacketFields, PacketHeader, RxCompletion, RxExpect,
    TxDesc, INLINE_MAX, MAX_MSG,
};
use fpga::regs::{self, Access, Dims, Reset};
use proptest::prelude::*;
use zerocopy::{FromBytes, IntoBytes};

/// A named way to spoil a valid entry.
type Case<T> = (&'static str, fn(&mut T));

fn limits() -> Limits {
    Limits::new(Dims::new(16, 16, 16).unwrap(), 1 << 16, 4, MAX_MSG).unwrap()
}

/// `parse` either refuses or returns a value whose bytes are the input's first `N`.
fn parse_is_exact<T: IntoBytes + zerocopy::Immutable, const N: usize>(
    bytes: &[u8; N],
    parse: impl Fn(&[u8]) -> fpga::Result<&T>,
    emit: impl Fn(&T, &mut [u8]) -> fpga::Result<()>,
) {
    if let Ok(v) = parse(bytes) {
        let mut out = [0u8; N];
        emit(v, &mut out).unwrap();
        assert_eq!(&out, bytes);
        assert_eq!(v.as_bytes(), bytes);
    }
}

fn packet_fields() -> impl Strategy<Value = PacketFields> {
    (
        0..4096u16,
        0..4096u16,
        any::<u16>(),
        any::<u16>(),
        0..=MAX_MSG,
        0..4u8,
        0..16u8,
        1..=4096u32,
    )
        .prop_flat_map(
            |(dst_node, src_node, dst_port, src_port, msg_len, vc, seq, max_pkt)| {
                let packets = msg_len.div_ceil(max_pkt).max(1);
                (0..packets).prop_map(move |i| {
                    let offset = i * max_pkt;
                    PacketFields {
                        dst_node,
                        src_node,
                        dst_port,
                        src_port,
                        msg_len,
                        offset,
                        vc,
                        first: i == 0,
                        last: i + 1 == packets,
                        seq,
                    }
                })
            },
        )
}

proptest! {
    #[test]
    fn tx_desc_round_trips(iova: u64, len in 0..=MAX_MSG, node in 0..4096u16, port: u16, src_port: u16, irq: bool, index: u64) {
        let flags = if irq { tx_flags::IRQ_ON_DONE } else { 0 };
        let d = TxDesc::new(iova, len, net_addr(node, port), src_port, flags, index).unwrap();
        let mut buf = [0xAAu8; 40];
        d.emit(&mut buf[3..]).unwrap();
        prop_assert_eq!(TxDesc::parse(&buf[3..]).unwrap(), &d);
        prop_assert_eq!(TxDesc::read_from(&buf[3..35]).unwrap(), d);
        prop_assert_eq!(d.seq.get(), index as u32);
        prop_assert!(d.validate(index, &limits()).is_ok());
        prop_assert!(d.validate(index.wrapping_add(1), &limits()).is_err());
    }

    #[test]
    fn tx_inline_round_trips(data in proptest::collection::vec(any::<u8>(), 0..=INLINE_MAX), index: u64) {
        let d = TxDesc::new_inline(&data, net_addr(1, 2), 3, tx_flags::IRQ_ON_DONE, index).unwrap();
        let back = TxDesc::read_from(d.as_bytes()).unwrap();
        prop_assert_eq!(back.inline_payload(), Some(&data[..]));
        prop_assert_eq!(back.len.get() as usize, data.len());
    }

    #[test]
    fn rx_completion_round_trips(index: u64, slot in 0..(1u64 << 40), len in 0..=MAX_MSG, src: u32,
                                 dst_port: u16, status in 0..=rx_status::ALL) {
        let offset = slot * 64;
        let c = RxCompletion::new(index, offset, len, src, dst_port, status).unwrap();
        let mut buf = [0u8; 32];
        c.emit(&mut buf).unwrap();
        let back = RxCompletion::read_from(&buf).unwrap();
        prop_assert_eq!(back, c);
        prop_assert!(back.is_fresh(index));
        prop_assert!(!back.is_fresh(index.wrapping_add(1 << 16)));
    }

    #[test]
    fn packet_header_round_trips(f in packet_fields(), max_pkt in 1..=4096u32) {
        let h = PacketHeader::new(&f).unwrap();
        let mut buf = [0u8; 16];
        h.emit(&mut buf).unwrap();
        let back = PacketHeader::read_from(&buf).unwrap();
        prop_assert_eq!(back.fields(), f);
        prop_assert!(back.validate(&limits()).is_ok());
        // The payload that makes the header consistent is accepted, one byte more is not.
        let len = (f.msg_len - f.offset).min(max_pkt);
        let consistent = f.last == (f.offset + len == f.msg_len);
        prop_assert_eq!(back.check_payload(len, max_pkt).is_ok(), consistent);
        prop_assert!(back.check_payload(f.msg_len - f.offset + 1, MAX_MSG).is_err());
    }

    /// Any bytes: refused, or parsed to a value that re-emits the same bytes; never a panic.
    /// Sealing first gets past the check word, so the field checks behind it are reached.
    #[test]
    fn arbitrary_bytes_parse_exactly_or_are_refused(b32: [u8; 32], b16: [u8; 16], seal: bool, index: u64) {
        parse_is_exact(&b32, TxDesc::parse, TxDesc::emit);
        parse_is_exact(&b32, RxCompletion::parse, RxCompletion::emit);
        parse_is_exact(&b16, PacketHeader::parse, PacketHeader::emit);
        if seal {
            let mut d = TxDesc::read_from_bytes(&b32).unwrap();
            d.seal();
            let b: [u8; 32] = d.as_bytes().try_into().unwrap();
            parse_is_exact(&b, TxDesc::parse, TxDesc::emit);
            let _ = d.validate(index, &limits());
            let mut c = RxCompletion::read_from_bytes(&b32).unwrap();
            c.seal();
            let b: [u8; 32] = c.as_bytes().try_into().unwrap();
            parse_is_exact(&b, RxCompletion::parse, RxCompletion::emit);
            let at = RxExpect { index, offset: c.offset.get(), released: index, ring_bytes: 1 << 20 };
            let _ = c.validate(&at, &limits());
            let mut h = PacketHeader::read_from_bytes(&b16).unwrap();
            h.seal();
            let b: [u8; 16] = h.as_bytes().try_into().unwrap();
            parse_is_exact(&b, PacketHeader::parse, PacketHeader::emit);
            let _ = h.check_payload(index as u32, 4096);
        }
    }

    /// Flipping any one bit of a valid entry breaks its check word.
    #[test]
    fn one_bit_flip_is_refused(bit in 0..256usize, hbit in 0..128usize) {
        let mut d = TxDesc::new(0x1000, 64, net_addr(1, 1), 0, 0, 5).unwrap();
        d.as_mut_bytes()[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(TxDesc::parse(d.as_bytes()).is_err());
        let mut c = RxCompletion::new(5, 4096, 64, net_addr(1, 1), 0, 0).unwrap();
        c.as_mut_bytes()[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(RxCompletion::parse(c.as_bytes()).is_err() || !c.is_fresh(5));
        let f = PacketFields { msg_len: 100, first: true, last: true, ..Default::default() };
        let mut h = PacketHeader::new(&f).unwrap();
        h.as_mut_bytes()[hbit / 8] ^= 1 << (hbit % 8);
        prop_assert!(PacketHeader::parse(h.as_bytes()).is_err());
    }
}

#[test]
fn short_buffers_are_refused() {
    let d = TxDesc::new(1, 2, 3, 4, 0, 5).unwrap();
    let c = RxCompletion::new(1, 64, 2, 3, 4, 0).unwrap();
    let h = PacketHeader::new(&PacketFields {
        first: true,
        last: true,
        ..Default::default()
    })
    .unwrap();
    for n in 0..32 {
        assert!(TxDesc::parse(&d.as_bytes()[..n]).is_err());
        assert!(RxCompletion::parse(&c.as_bytes()[..n]).is_err());
        assert!(d.emit(&mut [0u8; 32][..n]).is_err());
        assert!(c.emit(&mut [0u8; 32][..n]).is_err());
    }
    for n in 0..16 {
        assert!(PacketHeader::parse(&h.as_bytes()[..n]).is_err());
        assert!(h.emit(&mut [0u8; 16][..n]).is_err());
    }
    let err = TxDesc::parse(&[0u8; 31]).unwrap_err().to_string();
    assert!(err.contains("31 bytes, need 32"), "{err}");
}

/// Each invalid field is refused even with a correct check word (a device or peer that
/// computes checks but writes nonsense).
#[test]
fn invalid_tx_fields_are_refused() {
    let lim = Limits::new(Dims::new(2, 2, 2).unwrap(), 4, 2, 4096).unwrap();
    let good = TxDesc::new(0x1000, 100, net_addr(7, 3), 3, 0, 9).unwrap();
    assert!(good.validate(9, &lim).is_ok());
    let cases: [Case<TxDesc>; 9] = [
        ("unknown flag", |d| d.flags = 0x4.into()),
        ("reserved", |d| d.rsvd = 1.into()),
        ("length above MAX_MSG", |d| d.len = (MAX_MSG + 1).into()),
        ("inline too long", |d| {
            d.flags = tx_flags::INLINE.into();
            d.len = 9.into();
        }),
        ("inline padding", |d| {
            d.flags = tx_flags::INLINE.into();
            d.len = 1.into();
            d.iova = 0x0100.into();
        }),
        ("length above the job's limit", |d| d.len = 4097.into()),
        ("destination node", |d| d.dst = net_addr(8, 0).into()),
        ("destination port", |d| d.dst = net_addr(0, 4).into()),
        ("source port", |d| d.src_port = 4.into()),
    ];
    for (what, poke) in cases {
        let mut d = good;
        poke(&mut d);
        d.seal();
        assert!(d.validate(9, &lim).is_err(), "{what}");
    }
    let mut d = good;
    d.seq = 10.into();
    d.seal();
    assert!(d.validate(9, &lim).is_err(), "seq");
    assert!(TxDesc::new(0, 0, 0, 0, tx_flags::INLINE, 0).is_err());
    assert!(TxDesc::new_inline(b"x", 0, 0, 0x8, 0).is_err());
}

#[test]
fn invalid_rx_completions_are_refused() {
    let lim = Limits::new(Dims::new(2, 2, 2).unwrap(), 4, 2, 8192).unwrap();
    let at = RxExpect {
        index: 100,
        offset: 8192,
        released: 4096,
        ring_bytes: 8192,
    };
    let good = RxCompletion::new(100, 8192, 4096, net_addr(7, 3), 3, 0).unwrap();
    assert!(good.validate(&at, &lim).is_ok());
    let cases: [Case<RxCompletion>; 11] = [
        ("unknown status", |c| c.status = 0x8.into()),
        ("reserved", |c| c.rsvd = 1.into()),
        ("length above MAX_MSG", |c| c.len = (MAX_MSG + 1).into()),
        ("length above the job's limit", |c| {
            c.len = 8193.into();
            c.offset = 0.into();
        }),
        ("misaligned offset", |c| c.offset = 8193.into()),
        ("unexpected offset", |c| c.offset = 8256.into()),
        ("beyond released space", |c| c.len = 4097.into()),
        ("stale tag", |c| {
            c.tag = RxCompletion::tag_for(100 - 64).into()
        }),
        ("source node", |c| c.src = net_addr(8, 0).into()),
        ("source port", |c| c.src = net_addr(0, 4).into()),
        ("destination port", |c| c.dst_port = 4.into()),
    ];
    for (what, poke) in cases {
        let mut c = good;
        poke(&mut c);
        c.seal();
        assert!(c.validate(&at, &lim).is_err(), "{what}");
    }
    // TOO_LARGE takes no ring space, so its length may exceed the ring and the job limit.
    let big = RxCompletion::new(100, 8192, 1 << 20, 0, 0, rx_status::TOO_LARGE).unwrap();
    assert_eq!(big.span(), 0);
    assert!(big.validate(&at, &lim).is_ok());
    // A ring larger than the space ever released cannot overflow the u64 arithmetic.
    let at_end = RxExpect {
        index: 100,
        offset: u64::MAX - 63,
        released: u64::MAX,
        ring_bytes: 1 << 30,
    };
    let c = RxCompletion::new(100, u64::MAX - 63, 4096, 0, 0, 0).unwrap();
    assert!(c.validate(&at_end, &lim).is_err());
}

#[test]
fn invalid_packet_headers_are_refused() {
    let lim = Limits::new(Dims::new(2, 2, 2).unwrap(), 4, 2, 4096).unwrap();
    let f = PacketFields {
        dst_node: 7,
        src_node: 6,
        dst_port: 3,
        src_port: 2,
        msg_len: 1000,
        offset: 256,
        vc: 1,
        first: false,
        last: false,
        seq: 3,
    };
    assert!(PacketHeader::new(&f).unwrap().validate(&lim).is_ok());
    let built: [(&str, PacketFields); 8] = [
        (
            "FIRST away from offset 0",
            PacketFields { first: true, ..f },
        ),
        ("offset 0 without FIRST", PacketFields { offset: 0, ..f }),
        (
            "offset past the message",
            PacketFields { offset: 1000, ..f },
        ),
        (
            "empty message without LAST",
            PacketFields {
                msg_len: 0,
                offset: 0,
                first: true,
                ..f
            },
        ),
        (
            "node id above 12 bits",
            PacketFields {
                dst_node: 4096,
                ..f
            },
        ),
        ("vc above 2 bits", PacketFields { vc: 4, ..f }),
        ("seq above 4 bits", PacketFields { seq: 16, ..f }),
        (
            "length above 24 bits",
            PacketFields {
                msg_len: MAX_MSG + 1,
                ..f
            },
        ),
    ];
    for (what, g) in built {
        assert!(PacketHeader::new(&g).is_err(), "{what}");
    }
    let against_limits: [(&str, PacketFields); 6] = [
        ("destination node", PacketFields { dst_node: 8, ..f }),
        ("source node", PacketFields { src_node: 8, ..f }),
        ("destination port", PacketFields { dst_port: 4, ..f }),
        ("source port", PacketFields { src_port: 4, ..f }),
        ("vc", PacketFields { vc: 2, ..f }),
        ("length", PacketFields { msg_len: 4097, ..f }),
    ];
    for (what, g) in against_limits {
        assert!(
            PacketHeader::new(&g).unwrap().validate(&lim).is_err(),
            "{what}"
        );
    }
    let h = PacketHeader::new(&f).unwrap();
    assert!(h.check_payload(256, 256).is_ok());
    assert!(h.check_payload(256, 128).is_err(), "above MAX_PKT");
    assert!(h.check_payload(0, 256).is_err(), "empty payload");
    assert!(
        h.check_payload(744, 1024).is_err(),
        "ends the message without LAST"
    );
    assert!(h.check_payload(745, 1024).is_err(), "past the message end");
}

// ---- the datasheet -----------------------------------------------------------------------

fn readme() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    std::fs::read_to_string(path).expect("fpga/README.md")
}

fn reset_text(r: Reset) -> String {
    match r {
        Reset::Value(v) => format!("0x{:04X}_{:04X}", v >> 16, v & 0xFFFF),
        Reset::Param => "param".into(),
    }
}

/// The register table rows as the README must spell them.
fn expected_rows() -> Vec<String> {
    regs::REGISTERS
        .iter()
        .map(|r| {
            format!(
                "| 0x{:03X} | {} | {} | {} | {} |",
                r.offset,
                r.name,
                r.access.as_str(),
                reset_text(r.reset),
                r.doc
            )
        })
        .collect()
}

#[test]
fn readme_register_table_is_the_code() {
    let text = readme();
    let begin = text.find("<!-- registers:begin -->").expect("begin marker");
    let end = text.find("<!-- registers:end -->").expect("end marker");
    let rows: Vec<Vec<String>> = text[begin..end]
        .lines()
        .filter(|l| l.starts_with("| 0x"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    let parsed: Vec<(u32, String, String, String, String)> = rows
        .iter()
        .map(|c| {
            assert_eq!(c.len(), 5, "row {c:?}");
            let off = u32::from_str_radix(c[0].trim_start_matches("0x"), 16).expect("offset");
            (off, c[1].clone(), c[2].clone(), c[3].clone(), c[4].clone())
        })
        .collect();
    let want: Vec<_> = regs::REGISTERS
        .iter()
        .map(|r| {
            (
                r.offset,
                r.name.into(),
                r.access.as_str().into(),
                reset_text(r.reset),
                r.doc.into(),
            )
        })
        .collect();
    assert!(
        parsed == want,
        "README register table differs from regs::REGISTERS; the rows should be:\n{}",
        expected_rows().join("\n")
    );
    assert!(regs::REGISTERS
        .iter()
        .all(|r| r.access != Access::Rw1c
            || [regs::ERR_STATUS, regs::IRQ_STATUS].contains(&r.offset)));
}
