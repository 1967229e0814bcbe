//! The PMI-1 wire format ("simple PMI" v1.1, as MPICH's `simple_pmi` client and hydra's
//! proxy speak it): one message per line, `cmd=<name>` then space-separated
//! `key=value` attributes, ended by `\n`. Nothing can be quoted, so a value holds no
//! space, newline or `=`: arbitrary bytes travel as [`b64_encode`] text, split into
//! values of at most `vallen_max - 1` characters ([`chunk_values`]).
//!
//! Also here: the parser of `PMI_process_mapping` ([`parse_mapping`]).

use std::fmt::Write as _;

/// One message: its `cmd` and its attributes in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The value of `cmd=`.
    pub cmd: String,
    /// The other `key=value` pairs.
    pub attrs: Vec<(String, String)>,
}

impl Message {
    /// Parses one line (without its `\n`). The first token must be `cmd=<name>`; a token
    /// without `=` is an error; a value may contain `=` (the key ends at the first one).
    pub fn parse(line: &str) -> Result<Message, String> {
        let mut tokens = line.split_ascii_whitespace();
        let cmd = match tokens.next().map(|t| t.split_once('=')) {
            Some(Some(("cmd", c))) if !c.is_empty() => c.to_owned(),
            _ => return Err(format!("a message must start with cmd=<name>: {line:?}")),
        };
        let attrs = tokens
            .map(|t| match t.split_once('=') {
                Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
                _ => Err(format!("attribute {t:?} is not key=value in {line:?}")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Message { cmd, attrs })
    }

    /// The value of attribute `key` (the first, if repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Formats a command line (with its `\n`), refusing attributes that would break the
/// line: empty keys, or keys and values with whitespace or `=`.
pub fn command(cmd: &str, attrs: &[(&str, &str)]) -> Result<String, String> {
    let mut line = format!("cmd={cmd}");
    for (k, v) in attrs {
        for (what, s) in [("key", k), ("value", v)] {
            if s.bytes().any(|b| b.is_ascii_whitespace() || b == b'=') {
                return Err(format!(
                    "{what} {s:?} of cmd={cmd} contains whitespace or '='"
                ));
            }
        }
        if k.is_empty() {
            return Err(format!("empty attribute name in cmd={cmd}"));
        }
        let _ = write!(line, " {k}={v}");
    }
    line.push('\n');
    Ok(line)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with the URL-safe alphabet (RFC 4648 §5) and no padding: no character PMI
/// forbids in a value.
pub fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for group in data.chunks(3) {
        let mut w = [0u8; 3];
        w[..group.len()].copy_from_slice(group);
        let n = u32::from_be_bytes([0, w[0], w[1], w[2]]);
        for i in 0..=group.len() {
            out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Inverse of [`b64_encode`]; `None` for a character outside the alphabet or a length
/// that no encoding has (1 mod 4).
pub fn b64_decode(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| B64.iter().position(|&d| d == c).map(|p| p as u32);
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for group in text.as_bytes().chunks(4) {
        if group.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, &c) in group.iter().enumerate() {
            n |= digit(c)? << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..group.len()]);
    }
    Some(out)
}

/// Splits `data` into PMI values of at most `max_len` characters. The first value is
/// `<count>:<text>` (`count` values in all), the others `<text>`; `<text>` is
/// [`b64_encode`] of up to a fixed number of bytes. Never returns an empty list.
pub fn chunk_values(data: &[u8], max_len: usize) -> Result<Vec<String>, String> {
    // 11 characters of "<count>:" at most (a u32 and the colon), then whole groups of 4.
    let text_len = max_len.saturating_sub(11) / 4 * 4;
    if text_len == 0 {
        return Err(format!(
            "the server's largest value ({max_len} characters) is too small"
        ));
    }
    let per = text_len / 4 * 3;
    let parts: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(per).collect()
    };
    let count = u32::try_from(parts.len())
        .map_err(|_| format!("{} bytes are too many to exchange", data.len()))?;
    Ok(parts
        .iter()
        .enumerate()
        .map(|(i, p)| match i {
            0 => format!("{count}:{}", b64_encode(p)),
            _ => b64_encode(p),
        })
        .collect())
}

/// Reads the first value of [`chunk_values`]: the number of values and the first bytes.
pub fn first_value(value: &str) -> Option<(u32, Vec<u8>)> {
    let (count, text) = value.split_once(':')?;
    let count: u32 = count.parse().ok().filter(|&c| c > 0)?;
    Some((count, b64_decode(text)?))
}

/// Parses `PMI_process_mapping` into each rank's node label for a job of `size` ranks.
///
/// The format (MPICH `src/util/mpir_nodemap`; also Slurm's): `(vector,(start,nodes,ranks),…)`
/// — each block puts `ranks` consecutive ranks on each of the `nodes` nodes numbered from
/// `start`; when the blocks cover fewer than `size` ranks the vector repeats
/// (`(vector,(0,2,1))` for 4 ranks: nodes 0,1,0,1).
pub fn parse_mapping(text: &str, size: u32) -> Result<Vec<u32>, String> {
    let bad = |why: &str| format!("PMI_process_mapping {text:?}: {why}");
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let body = compact
        .strip_prefix("(vector,")
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| bad("not of the form (vector,(start,nodes,ranks),...)"))?;
    let mut blocks = Vec::new();
    for block in body.split("),") {
        let inner = block
            .strip_prefix('(')
            .map(|s| s.strip_suffix(')').unwrap_or(s))
            .ok_or_else(|| bad("a block is not (start,nodes,ranks)"))?;
        let nums: Vec<u32> = inner
            .split(',')
            .map(|n| n.parse().map_err(|_| bad("a block holds a non-number")))
            .collect::<Result<_, _>>()?;
        let &[start, nodes, ranks] = nums.as_slice() else {
            return Err(bad("a block does not have three numbers"));
        };
        blocks.push((start, nodes, ranks));
    }
    let per_round: u64 = blocks
        .iter()
        .map(|&(_, n, r)| u64::from(n) * u64::from(r))
        .sum();
    if per_round == 0 && size > 0 {
        return Err(bad("places no rank"));
    }
    let mut nodes = Vec::with_capacity(size as usize);
    'fill: loop {
        for &(start, count, ranks) in blocks.iter().filter(|b| b.2 > 0) {
            for node in 0..count {
                let label = start
                    .checked_add(node)
                    .ok_or_else(|| bad("node number overflows"))?;
                for _ in 0..ranks {
                    if nodes.len() == size as usize {
                        break 'fill;
                    }
                    nodes.push(label);
                }
            }
        }
        if nodes.len() == size as usize {
            break;
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_hydra_answers() {
        let m = Message::parse("cmd=get_result rc=0 msg=success value=(vector,(0,1,1))").unwrap();
        assert_eq!(m.cmd, "get_result");
        assert_eq!(m.get("rc"), Some("0"));
        assert_eq!(m.get("value"), Some("(vector,(0,1,1))"));
        assert_eq!(Message::parse("cmd=x v=a=b").unwrap().get("v"), Some("a=b"));
        assert!(Message::parse("put_result rc=0").is_err());
        assert!(Message::parse("cmd=x lonely").is_err());
        assert!(Message::parse("").is_err());
    }

    #[test]
    fn commands_refuse_breaking_characters() {
        assert_eq!(
            command("put", &[("key", "k"), ("value", "v")]).unwrap(),
            "cmd=put key=k value=v\n"
        );
        assert!(command("put", &[("key", "a b")]).is_err());
        assert!(command("put", &[("value", "a=b")]).is_err());
        assert!(command("put", &[("value", "a\nb")]).is_err());
        assert!(command("put", &[("", "x")]).is_err());
    }

    #[test]
    fn mapping_blocks_and_repetition() {
        assert_eq!(parse_mapping("(vector,(0,1,1))", 3).unwrap(), [0, 0, 0]);
        assert_eq!(parse_mapping("(vector,(0,2,2))", 4).unwrap(), [0, 0, 1, 1]);
        assert_eq!(parse_mapping("(vector,(0,2,1))", 4).unwrap(), [0, 1, 0, 1]);
        assert_eq!(
            parse_mapping("(vector, (0,1,3), (1,1,2))", 5).unwrap(),
            [0, 0, 0, 1, 1]
        );
        assert_eq!(
            parse_mapping("(vector,(0,2,2))", 0).unwrap(),
            [] as [u32; 0]
        );
        for bad in [
            "",
            "(vector)",
            "(vector,(0,0,1))",
            "(vector,(0,1))",
            "(vector,(a,1,1))",
            "vector,(0,1,1)",
            "(vector,(4294967295,2,1))",
        ] {
            assert!(parse_mapping(bad, 2).is_err(), "{bad:?}");
        }
    }

    /// What MPICH 4.0's hydra sent for uneven layouts (its `--pmi-process-mapping`, seen
    /// with `-v`; hosts `n0`, `n1`, `n2`), and the nodes its ranks ran on.
    #[test]
    fn mapping_of_uneven_layouts_as_hydra_writes_them() {
        for (launch, text, size, nodes) in [
            (
                "-hosts n0:2,n1:1 -n 3",
                "(vector,(0,1,2),(1,1,1))",
                3,
                &[0, 0, 1][..],
            ),
            (
                "-hosts n0:1,n1:2 -n 3",
                "(vector,(0,1,1),(1,1,2))",
                3,
                &[0, 1, 1],
            ),
            (
                "-hosts n0:3,n1:1 -n 4",
                "(vector,(0,1,3),(1,1,1))",
                4,
                &[0, 0, 0, 1],
            ),
            ("-hosts n0:2,n1:2 -n 3", "(vector,(0,2,2))", 3, &[0, 0, 1]),
            ("-hosts n0,n1,n2 -n 3", "(vector,(0,3,1))", 3, &[0, 1, 2]),
            (
                "-hosts n0,n1 -n 4 -ppn 1",
                "(vector,(0,2,1))",
                4,
                &[0, 1, 0, 1],
            ),
            (
                "-hosts n0,n1 -n 5 -ppn 2",
                "(vector,(0,2,2))",
                5,
                &[0, 0, 1, 1, 0],
            ),
            // More ranks than slots: hydra starts over at the first host.
            (
                "-hosts n0:2,n1:1 -n 5",
                "(vector,(0,1,2),(1,1,1))",
                5,
                &[0, 0, 1, 0, 0],
            ),
            (
                "-hosts n0:1,n1:2,n2:1 -n 6",
                "(vector,(0,1,1),(1,1,2),(2,1,1))",
                6,
                &[0, 1, 1, 2, 0, 1],
            ),
        ] {
            assert_eq!(parse_mapping(text, size).unwrap(), nodes, "{launch}");
        }
        // Slurm's block distribution of 5 tasks on 2 nodes, and a node listed twice.
        assert_eq!(
            parse_mapping("(vector,(0,1,3),(1,1,2))", 5).unwrap(),
            [0, 0, 0, 1, 1]
        );
        assert_eq!(
            parse_mapping("(vector,(0,1,1),(1,1,1),(0,1,1))", 3).unwrap(),
            [0, 1, 0]
        );
    }

    #[test]
    fn chunks_fit_the_limit() {
        let data: Vec<u8> = (0..=255).cycle().take(5000).collect();
        let values = chunk_values(&data, 1023).unwrap();
        assert!(values.len() > 1 && values.iter().all(|v| v.len() <= 1023));
        let (count, mut got) = first_value(&values[0]).unwrap();
        assert_eq!(count as usize, values.len());
        for v in &values[1..] {
            got.extend(b64_decode(v).unwrap());
        }
        assert_eq!(got, data);
        assert_eq!(chunk_values(b"", 64).unwrap(), ["1:"]);
        assert!(chunk_values(b"x", 14).is_err());
        assert_eq!(first_value("0:"), None);
    }

    proptest! {
        #[test]
        fn b64_round_trips(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = b64_encode(&data);
            prop_assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            prop_assert_eq!(b64_decode(&text), Some(data));
        }

        #[test]
        fn parsers_never_panic(line in ".{0,80}", size in 0u32..64) {
            let _ = Message::parse(&line);
            let _ = b64_decode(&line);
            let _ = first_value(&line);
            if let Ok(nodes) = parse_mapping(&line, size) {
                prop_assert_eq!(nodes.len(), size as usize);
            }
        }
    }
}
