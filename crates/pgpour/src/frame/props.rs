//! Property tests: the fast chunker must cut exactly where the byte-by-byte
//! record walk says records end, whatever the read sizes and chunk target.

use proptest::prelude::*;

use super::{Framer, RecordIter, Syntax};

/// Feeds `input` to a framer in reads of the given sizes, like the reader
/// thread, and returns the absolute cut positions.
fn chunk_all(syntax: Syntax, input: &[u8], target: usize, reads: &[usize]) -> Vec<usize> {
    let mut framer = Framer::new(syntax);
    let mut cuts = Vec::new();
    let (mut start, mut available) = (0, 0);
    let mut reads = reads.iter().cycle();
    loop {
        let eof = available == input.len();
        match framer.find_cut(&input[start..available], target, eof) {
            Some(n) => {
                start += n;
                cuts.push(start);
            }
            None if eof => return cuts,
            None => available = input.len().min(available + reads.next().unwrap()),
        }
    }
}

/// Where the reference walk says each chunk must end: the first record end
/// at or after `target` bytes from the chunk start.
fn expected_cuts(syntax: Syntax, input: &[u8], target: usize) -> Vec<usize> {
    let ends: Vec<usize> = RecordIter::new(syntax, None, input)
        .map(|r| r.end)
        .collect();
    let mut cuts = Vec::new();
    let mut start = 0;
    for end in ends {
        if end - start >= target || end == input.len() {
            cuts.push(end);
            start = end;
        }
    }
    cuts
}

fn syntax_strategy() -> impl Strategy<Value = Syntax> {
    prop_oneof![
        Just(Syntax::Csv {
            quote: b'"',
            escape: b'"'
        }),
        Just(Syntax::Csv {
            quote: b'"',
            escape: b'\\'
        }),
        Just(Syntax::Csv {
            quote: b'\'',
            escape: b'"'
        }),
        Just(Syntax::Text),
    ]
}

/// Well-formed records: fields plain or quoted (quoted ones may hold line
/// breaks, delimiters, doubled quotes), joined by one line ending.
fn csv_document() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        "[a-z0-9 ]{0,6}".prop_map(|s| s.into_bytes()),
        "[a-z,\r\n\"é]{0,8}"
            .prop_map(|s| { format!("\"{}\"", s.replace('"', "\"\"")).into_bytes() }),
    ];
    let record = prop::collection::vec(field, 1..4).prop_map(|fields| fields.join(&b","[..]));
    (
        prop::collection::vec(record, 0..30),
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        any::<bool>(),
    )
        .prop_map(|(records, eol, final_eol)| {
            let mut doc = records.join(eol.as_bytes());
            if final_eol && !records.is_empty() {
                doc.extend_from_slice(eol.as_bytes());
            }
            doc
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_cut_at_record_ends(
        syntax in syntax_strategy(),
        input in prop::collection::vec(prop::sample::select(&b"a,\"'\\\n\t"[..]), 0..300),
        target in 1usize..64,
        reads in prop::collection::vec(1usize..50, 1..5),
    ) {
        let cuts = chunk_all(syntax, &input, target, &reads);
        prop_assert_eq!(cuts, expected_cuts(syntax, &input, target));
    }

    #[test]
    fn csv_documents_with_any_line_ending(
        input in csv_document(),
        target in 1usize..64,
        reads in prop::collection::vec(1usize..50, 1..5),
    ) {
        let syntax = Syntax::Csv { quote: b'"', escape: b'"' };
        let cuts = chunk_all(syntax, &input, target, &reads);
        prop_assert_eq!(cuts, expected_cuts(syntax, &input, target));
    }
}
