//! The client against fake servers (a thread on the other end of a socket pair): the
//! answers a real server would not give.
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;

use super::conn::Conn;
use super::*;

/// The answers of a well-behaved server to the handshake (`size` ranks on one node).
const HANDSHAKE: &[(&str, &str)] = &[
    (
        "cmd=init ",
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
    ),
    (
        "cmd=get_maxes",
        "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=40",
    ),
    ("cmd=get_appnum", "cmd=appnum appnum=0"),
    ("cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_1"),
    (
        "cmd=get kvsname=kvs_1 key=PMI_process_mapping",
        "cmd=get_result rc=0 msg=success value=(vector,(0,2,1))",
    ),
];

/// A server that expects each line to start with the first string and answers the second
/// (`""`: no answer), then closes the connection.
fn fake(script: Vec<(&'static str, &'static str)>) -> (Conn, JoinHandle<Vec<String>>) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let server = std::thread::spawn(move || {
        let mut r = BufReader::new(theirs.try_clone().unwrap());
        let mut w = theirs;
        let mut seen = Vec::new();
        for (want, answer) in script {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            assert!(line.starts_with(want), "expected {want:?}, got {line:?}");
            seen.push(line.trim_end().to_owned());
            if !answer.is_empty() {
                w.write_all(format!("{answer}\n").as_bytes()).unwrap();
            }
        }
        seen
    });
    (Conn::from_stream(ours), server)
}

fn join(script: Vec<(&'static str, &'static str)>, rank: u32, size: u32) -> Result<Pmi1> {
    let (conn, _server) = fake(script);
    Pmi1::join(conn, "fake".into(), None, Ok((rank, size)))
}

#[test]
fn handshake_learns_limits_and_nodes() {
    let mut script = HANDSHAKE.to_vec();
    script.push(("cmd=finalize", "cmd=finalize_ack"));
    let (conn, server) = fake(script);
    let p = Pmi1::join(conn, "fake".into(), None, Ok((1, 4))).unwrap();
    assert_eq!(
        (p.rank(), p.size(), p.kvsname(), p.appnum()),
        (1, 4, "kvs_1", 0)
    );
    assert_eq!(p.maxes().value, 40);
    assert_eq!(
        (0..4).map(|r| p.node_of(r)).collect::<Vec<_>>(),
        [0, 1, 0, 1]
    );
    drop(p);
    assert_eq!(server.join().unwrap().last().unwrap(), "cmd=finalize");
}

#[test]
fn eof_during_handshake_names_the_command() {
    let e = join(HANDSHAKE[..2].to_vec(), 0, 2)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cmd=get_appnum") && e.contains("closed the connection"),
        "{e}"
    );
}

#[test]
fn refused_init_and_wrong_answers_are_errors() {
    let e = join(
        vec![("cmd=init ", "cmd=response_to_init rc=-1 msg=no")],
        0,
        1,
    );
    assert!(e.err().unwrap().to_string().contains("rc=-1: no"));
    let e = join(vec![("cmd=init ", "cmd=barrier_out")], 0, 1);
    assert!(e
        .err()
        .unwrap()
        .to_string()
        .contains("expected cmd=response_to_init"));
    let e = join(vec![("cmd=init ", "garbage")], 0, 1);
    assert!(e.err().unwrap().to_string().contains("cmd=<name>"));
    let e = join(vec![], 3, 2);
    assert!(e.err().unwrap().to_string().contains("rank 3 is not below"));
}

/// Values of at most `vallen_max - 1` characters, parts of another rank read back, and a
/// missing part is an error naming its key; after a failure the connection is unusable.
#[test]
fn allgather_parts_and_missing_keys() {
    let mut script = HANDSHAKE.to_vec();
    script.extend([
        (
            "cmd=put kvsname=kvs_1 key=skifch.ag0.0.0 value=2:",
            "cmd=put_result rc=0",
        ),
        (
            "cmd=put kvsname=kvs_1 key=skifch.ag0.0.1 value=",
            "cmd=put_result rc=0",
        ),
        ("cmd=barrier_in", "cmd=barrier_out"),
        // rank 1 sent "hi" in one part
        (
            "cmd=get kvsname=kvs_1 key=skifch.ag0.1.0",
            "cmd=get_result rc=0 value=1:aGk",
        ),
        (
            "cmd=put kvsname=kvs_1 key=skifch.ag1.0.0 value=1:",
            "cmd=put_result rc=0",
        ),
        ("cmd=barrier_in", "cmd=barrier_out"),
        (
            "cmd=get kvsname=kvs_1 key=skifch.ag1.1.0",
            "cmd=get_result rc=-1 msg=key_not_found",
        ),
    ]);
    let p = join(script, 0, 2).unwrap();
    let data = vec![b'x'; 30]; // 40 bytes of base64: two values under vallen_max 40
    assert_eq!(
        p.allgather(&data).unwrap(),
        vec![data.clone(), b"hi".to_vec()]
    );
    let e = p.allgather(b"").err().unwrap().to_string();
    assert!(e.contains("key skifch.ag1.1.0 is missing"), "{e}");
    let e = p.barrier().err().unwrap().to_string();
    assert!(e.contains("cmd=barrier_in"), "{e}");
}

#[test]
fn put_checks_the_limits_and_rc() {
    let mut script = HANDSHAKE.to_vec();
    script.push(("cmd=put", "cmd=put_result rc=1 msg=duplicate_key"));
    let p = join(script, 0, 2).unwrap();
    assert!(p.put("k", &"v".repeat(40)).is_err());
    assert!(p
        .put("k v", "x")
        .err()
        .unwrap()
        .to_string()
        .contains("whitespace"));
    let e = p.put("k", "v").err().unwrap().to_string();
    assert!(e.contains("rc=1: duplicate_key"), "{e}");
}

#[test]
fn tcp_handshake_reads_rank_and_size() {
    let mut script = vec![(
        "cmd=initack pmiid=5",
        "cmd=initack\ncmd=set size=6\ncmd=set rank=5\ncmd=set debug=0",
    )];
    script.extend_from_slice(HANDSHAKE);
    let (conn, _server) = fake(script);
    let p = Pmi1::join(conn, "fake".into(), None, Err(5)).unwrap();
    assert_eq!((p.rank(), p.size(), p.node_of(5)), (5, 6, 1));
}

/// A server without `PMI_process_mapping`: the ranks' host names are exchanged instead.
#[test]
fn nodes_from_host_names_without_a_mapping() {
    let mut script = HANDSHAKE[..4].to_vec();
    script.extend([
        (
            "cmd=get kvsname=kvs_1 key=PMI_process_mapping",
            "cmd=get_result rc=-1 msg=key_PMI_process_mapping_not_found",
        ),
        (
            "cmd=put kvsname=kvs_1 key=skifch.ag0.1.0 value=1:",
            "cmd=put_result rc=0",
        ),
        ("cmd=barrier_in", "cmd=barrier_out"),
        // rank 0 runs on "elsewhere", rank 2 on this rank's host
        (
            "cmd=get kvsname=kvs_1 key=skifch.ag0.0.0",
            "cmd=get_result rc=0 value=1:ZWxzZXdoZXJl",
        ),
        ("cmd=get kvsname=kvs_1 key=skifch.ag0.2.0", ""),
    ]);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let (ours, theirs) = UnixStream::pair().unwrap();
    // The last answer carries this machine's host name, which a static script cannot.
    let answer_mine = format!(
        "cmd=get_result rc=0 value=1:{}\n",
        wire::b64_encode(host.trim().as_bytes())
    );
    let server = std::thread::spawn(move || {
        let mut r = BufReader::new(theirs.try_clone().unwrap());
        let mut w = theirs;
        for (want, answer) in script {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert!(line.starts_with(want), "expected {want:?}, got {line:?}");
            let answer = if answer.is_empty() {
                answer_mine.clone()
            } else {
                format!("{answer}\n")
            };
            w.write_all(answer.as_bytes()).unwrap();
        }
    });
    let p = Pmi1::join(Conn::from_stream(ours), "fake".into(), None, Ok((1, 3))).unwrap();
    assert_eq!((0..3).map(|r| p.node_of(r)).collect::<Vec<_>>(), [0, 1, 1]);
    server.join().unwrap();
    drop(p); // its finalize finds the script ended: ignored
}
