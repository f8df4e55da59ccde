use super::*;

/// A typed message: type byte, int32 length (itself included), body.
fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// An untyped packet: int32 length (itself included), int32 code, body.
fn untyped(code: u32, body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32 + 8).to_be_bytes().to_vec();
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn startup() -> Vec<u8> {
    untyped(196_608, b"user\0postgres\0\0")
}

fn concat(messages: &[Vec<u8>]) -> Vec<u8> {
    messages.concat()
}

/// Who sends what, in order.
enum Say {
    Client(Vec<u8>),
    Server(Vec<u8>),
}
use Say::{Client, Server};

/// A SCRAM login as a server with password authentication answers it:
/// three turns, the last ending with ReadyForQuery.
fn login() -> Vec<Say> {
    vec![
        Client(startup()),
        Server(typed(b'R', b"\0\0\0\x0aSCRAM-SHA-256\0\0")),
        Client(typed(b'p', b"client-first")),
        Server(typed(b'R', b"\0\0\0\x0bserver-first")),
        Client(typed(b'p', b"client-final")),
        Server(concat(&[
            typed(b'R', b"\0\0\0\x0cserver-final"),
            typed(b'R', b"\0\0\0\0"),
            typed(b'S', b"server_version\x0015\0"),
            typed(b'K', b"12345678"),
            typed(b'Z', b"I"),
        ])),
    ]
}

fn simple_query() -> Vec<Say> {
    vec![
        Client(typed(b'Q', b"SELECT 1\0")),
        Server(concat(&[
            typed(b'T', b"row description"),
            typed(b'D', b"\0\x01\0\0\0\x011"),
            typed(b'C', b"SELECT 1\0"),
            typed(b'Z', b"I"),
        ])),
    ]
}

/// Feeds the conversation in pieces of `piece` bytes (each side's message
/// cut anywhere, as TCP may deliver it).
fn count(says: &[Say], piece: usize) -> ConnectionStats {
    let mut conversation = Conversation::default();
    for say in says {
        match say {
            Client(bytes) => bytes
                .chunks(piece)
                .for_each(|c| conversation.client_sent(c)),
            Server(bytes) => bytes
                .chunks(piece)
                .for_each(|c| conversation.server_sent(c)),
        }
    }
    conversation.stats
}

#[test]
fn a_login_is_three_turns_and_a_simple_query_one_more() {
    let mut says = login();
    says.extend(simple_query());
    for piece in [1, 3, 7, 1000] {
        let stats = count(&says, piece);
        assert_eq!(stats.protocol, Protocol::Postgres);
        assert_eq!(stats.turns, 4, "pieces of {piece}");
        assert_eq!(stats.handshake_turns, Some(3));
        assert_eq!(stats.ready_for_query, 2);
        assert_eq!(stats.turns_before_copy_data, None);
    }
}

#[test]
fn a_turn_needs_client_bytes_then_server_bytes() {
    let mut says = login();
    says.extend([
        // More of the server's answer, and a notice, open no turn.
        Server(typed(b'N', b"notice")),
        Client(typed(b'P', b"parse")),
        Client(typed(b'S', b"")),
        Server(typed(b'1', b"")),
        Server(typed(b'Z', b"I")),
        // Client bytes with no answer yet: no turn until the server sends.
        Client(typed(b'X', b"")),
    ]);
    let stats = count(&says, 1000);
    assert_eq!(stats.turns, 4);
    assert_eq!(stats.ready_for_query, 2);
}

#[test]
fn copy_data_after_the_copy_response_is_counted_by_message() {
    let mut says = login();
    says.extend([
        Client(typed(b'Q', b"COPY t FROM STDIN\0")),
        Server(typed(b'G', b"\0\0\x01\0\0")),
        Client(concat(&[typed(b'd', &[b'x'; 70_000]), typed(b'd', b"1\n")])),
        Client(concat(&[typed(b'd', b"2\n"), typed(b'c', b"")])),
        Server(concat(&[typed(b'C', b"COPY 3\0"), typed(b'Z', b"I")])),
    ]);
    for piece in [1, 4096, 1 << 20] {
        let stats = count(&says, piece);
        assert_eq!(stats.turns, 5);
        assert_eq!(stats.turns_before_copy_data, Some(4));
        assert_eq!(stats.copy_data_messages, 3);
        assert_eq!(stats.copy_done_messages, 1);
    }
}

#[test]
fn a_refused_ssl_request_is_a_turn_of_the_handshake() {
    let mut says = vec![Client(untyped(80_877_103, b"")), Server(b"N".to_vec())];
    says.extend(login());
    let stats = count(&says, 1);
    assert_eq!(stats.protocol, Protocol::Postgres);
    assert_eq!(stats.handshake_turns, Some(4));
}

#[test]
fn after_an_accepted_ssl_request_only_bytes_count() {
    let mut says = vec![Client(untyped(80_877_103, b"")), Server(b"S".to_vec())];
    // Encrypted records, which happen to look like messages.
    says.extend(login());
    says.extend(simple_query());
    let stats = count(&says, 1000);
    assert_eq!(stats.protocol, Protocol::Tls);
    assert_eq!(stats.turns, 5);
    assert_eq!(stats.handshake_turns, None);
    assert_eq!(stats.ready_for_query, 0);
}

#[test]
fn a_direct_tls_hello_is_not_postgres() {
    let hello = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc];
    let says = [Client(hello.to_vec()), Server(vec![0x16, 0x03, 0x03])];
    let stats = count(&says, 1000);
    assert_eq!(stats.protocol, Protocol::Unknown);
    assert_eq!(stats.turns, 1);
}

#[test]
fn a_cancel_request_ends_the_reading_of_messages() {
    let says = [Client(untyped(80_877_102, b"pid_key_"))];
    let stats = count(&says, 1000);
    assert_eq!(stats.protocol, Protocol::Postgres);
    assert_eq!((stats.turns, stats.ready_for_query), (0, 0));
    assert_eq!(stats.client_bytes, 16);
}
