//! Hostile inputs at sizes where a rescan from the record start per push
//! would not finish: the framer must make one pass, and refuse a record
//! where it passes the limit. No timers: the framer counts what it looks at.

use super::props::{feed, LOOKS_PER_BYTE};
use super::{Framer, Syntax};

const CSV: Syntax = Syntax::Csv {
    quote: b'"',
    escape: b'"',
};
const CSV_BACKSLASH: Syntax = Syntax::Csv {
    quote: b'"',
    escape: b'\\',
};

/// `head`, then numbered rows up to `size` bytes in all.
fn rows_after(head: &[u8], size: usize) -> Vec<u8> {
    let mut input = head.to_vec();
    let mut i = 0;
    while input.len() < size {
        input.extend_from_slice(format!("{i},some text,{}\n", i * 7).as_bytes());
        i += 1;
    }
    input
}

fn assert_one_pass(framer: &Framer, input: &[u8]) {
    let looks = LOOKS_PER_BYTE * input.len() as u64;
    assert!(
        framer.examined() <= looks,
        "examined {} bytes of {}",
        framer.examined(),
        input.len()
    );
}

#[test]
fn an_unterminated_quote_in_the_first_record_is_one_pass() {
    // The line ending is not known until the first record ends, and here
    // it never does: the case that took 34 s for 133 MB.
    let input = rows_after(b"id,\"name\n", 4 << 20);
    for syntax in [CSV, CSV_BACKSLASH] {
        let mut framer = Framer::new(syntax);
        let fed = feed(&mut framer, &input, 1 << 20, &[7, 1, 13]);
        assert_eq!(fed.cuts, vec![input.len()], "the rest is one record");
        assert_eq!(fed.refused, None);
        assert_one_pass(&framer, &input);
    }
}

#[test]
fn an_unterminated_quote_after_the_first_record_is_one_pass() {
    let input = rows_after(b"id,name\r\n1,\"open\r\n", 4 << 20);
    for syntax in [CSV, CSV_BACKSLASH] {
        let mut framer = Framer::new(syntax);
        let fed = feed(&mut framer, &input, 1 << 20, &[5, 64, 3]);
        assert_eq!(fed.cuts, vec![input.len()]);
        assert_one_pass(&framer, &input);
    }
}

#[test]
fn escaped_line_ends_and_backslash_runs_are_one_pass() {
    // Every line end escaped, then a long run of backslashes: the run is
    // looked back over once, not once per push.
    let mut input = b"h\n".to_vec();
    input.extend(b"a\\\n".repeat(300_000));
    input.extend(vec![b'\\'; 1 << 20]);
    input.extend_from_slice(b"\nb\n");
    let mut framer = Framer::new(Syntax::Text);
    let fed = feed(&mut framer, &input, 4096, &[3, 100]);
    let even_run_ends = input.len() - 2;
    assert_eq!(fed.cuts, vec![even_run_ends, input.len()]);
    assert_one_pass(&framer, &input);
}

#[test]
fn an_unterminated_quote_is_refused_where_it_passes_the_limit() {
    let head = b"id,name\n1,a\n2,\"open\n";
    let input = rows_after(head, 6 << 20);
    let limit = 1 << 20;
    for (syntax, target) in [(CSV, 4096), (CSV, 4 << 20), (CSV_BACKSLASH, 4096)] {
        let mut framer = Framer::new(syntax).with_max_record(limit);
        let fed = feed(&mut framer, &input, target, &[100]);
        let (start, pushed) = fed.refused.expect("refused");
        assert_eq!(start, 12, "the record with the open quote");
        assert!(pushed <= start + limit + 100, "read {pushed} bytes");
        assert!(fed.cuts.iter().all(|&cut| cut <= start));
        assert_one_pass(&framer, &input[..pushed]);
    }
}

#[test]
fn a_first_record_over_the_limit_is_refused_at_once() {
    let input = rows_after(b"\"", 3 << 20);
    let mut framer = Framer::new(CSV).with_max_record(1 << 20);
    let fed = feed(&mut framer, &input, 1, &[4096]);
    assert!(fed
        .refused
        .is_some_and(|(start, pushed)| start == 0 && pushed <= (1 << 20) + 4096));
}

#[test]
fn a_long_record_that_ends_is_refused_too() {
    // The whole record arrives in one push: refused when it ends.
    let mut input = b"1,a\n2,\"".to_vec();
    input.extend(vec![b'x'; 5000]);
    input.extend_from_slice(b"\"\n3,c\n");
    let mut framer = Framer::new(CSV).with_max_record(1000);
    let fed = feed(&mut framer, &input, 1, &[input.len()]);
    assert_eq!(fed.cuts, vec![4]);
    assert_eq!(fed.refused.map(|(start, _)| start), Some(4));
}
