//! Property tests: the fast chunker must cut exactly where the byte-by-byte
//! record walk says records end, whatever the read sizes, chunk target and
//! record limit; refuse exactly the first record the walk finds too long;
//! and look at each byte a bounded number of times.

use proptest::prelude::*;

use super::{Framer, RecordIter, RecordTooLong, Syntax};

/// How many times the framer may look at each input byte: once to find
/// line ends, once to count quotes between them, and as much again for the
/// walk back to an open record's start when it nears the limit.
pub(super) const LOOKS_PER_BYTE: u64 = 4;

/// What feeding an input to a framer gave: the absolute cut positions, the
/// refused record's absolute start and how many bytes had been pushed when
/// it was refused, and the bytes the framer examined.
#[derive(Debug, Default)]
pub(super) struct Fed {
    pub cuts: Vec<usize>,
    pub refused: Option<(usize, usize)>,
    pub examined: u64,
}

/// Feeds `input` to a framer in reads of the given sizes, like the reader
/// thread.
pub(super) fn feed(framer: &mut Framer, input: &[u8], target: usize, reads: &[usize]) -> Fed {
    let mut fed = Fed::default();
    let (mut start, mut available) = (0, 0);
    let mut reads = reads.iter().cycle();
    loop {
        let eof = available == input.len();
        match framer.next_cut(&input[start..available], target, eof) {
            Ok(Some(n)) => {
                start += n;
                fed.cuts.push(start);
            }
            Ok(None) if eof => break,
            Ok(None) => available = input.len().min(available + reads.next().unwrap()),
            Err(RecordTooLong { start: at, .. }) => {
                fed.refused = Some((start + at, available));
                break;
            }
        }
    }
    fed.examined = framer.examined();
    fed
}

/// Where the reference walk says each chunk must end: the first record end
/// at or after `target` bytes from the chunk start; and the start of the
/// first record longer than `limit`, where the cuts stop.
fn expected(
    syntax: Syntax,
    input: &[u8],
    target: usize,
    limit: usize,
) -> (Vec<usize>, Option<usize>) {
    let mut cuts = Vec::new();
    let mut start = 0;
    for record in RecordIter::new(syntax, None, input) {
        if record.len() > limit {
            return (cuts, Some(record.start));
        }
        if record.end - start >= target || record.end == input.len() {
            cuts.push(record.end);
            start = record.end;
        }
    }
    (cuts, None)
}

fn check(
    syntax: Syntax,
    input: &[u8],
    target: usize,
    limit: usize,
    reads: &[usize],
) -> Result<(), TestCaseError> {
    let mut framer = Framer::new(syntax).with_max_record(limit);
    let fed = feed(&mut framer, input, target, reads);
    let (cuts, refused) = expected(syntax, input, target, limit);
    prop_assert_eq!(&fed.cuts, &cuts);
    prop_assert_eq!(fed.refused.map(|(at, _)| at), refused);
    if let Some((at, pushed)) = fed.refused {
        // Refused as soon as the pushed bytes show it: within one read.
        let longest_read = reads.iter().max().copied().unwrap_or(0);
        prop_assert!(pushed <= at + limit + longest_read, "pushed {pushed}");
    }
    // Each scan that ends (a cut, or the refusal of a record too long) may
    // have peeked at one byte past a line end, counted again by the next.
    let ends = fed.cuts.len() + usize::from(fed.refused.is_some());
    let looks = LOOKS_PER_BYTE * input.len() as u64 + ends as u64;
    prop_assert!(
        fed.examined <= looks,
        "examined {} of {} bytes",
        fed.examined,
        input.len()
    );
    Ok(())
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

/// No limit, or one small enough to be met, below or above the target.
fn limit_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![Just(usize::MAX), 1usize..80]
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

/// Bytes that matter to some syntax, mixed line endings included.
fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(&b"a,\"'\\\n\r\t"[..]), 0..300)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_cut_at_record_ends(
        syntax in syntax_strategy(),
        input in arbitrary_bytes(),
        target in 1usize..64,
        limit in limit_strategy(),
        reads in prop::collection::vec(1usize..50, 1..5),
    ) {
        check(syntax, &input, target, limit, &reads)?;
    }

    #[test]
    fn csv_documents_with_any_line_ending(
        input in csv_document(),
        target in 1usize..64,
        limit in limit_strategy(),
        reads in prop::collection::vec(1usize..50, 1..5),
    ) {
        check(Syntax::Csv { quote: b'"', escape: b'"' }, &input, target, limit, &reads)?;
    }

    /// One open quote (or trailing backslashes in text) early on, then
    /// records pushed a few bytes at a time: still one pass.
    #[test]
    fn an_unterminated_quote_costs_one_pass(
        syntax in syntax_strategy(),
        head in arbitrary_bytes(),
        opener in prop::sample::select(&b"\"'\\"[..]),
        rows in 1usize..400,
        target in 1usize..64,
        limit in limit_strategy(),
        reads in prop::collection::vec(1usize..8, 1..3),
    ) {
        let mut input = head;
        input.push(opener);
        for i in 0..rows {
            input.extend_from_slice(format!("{i},x\n").as_bytes());
        }
        check(syntax, &input, target, limit, &reads)?;
    }

    /// Splitting a chunk into its records, as the careful load path does:
    /// a framer told the line ending finds the same records as the walk.
    #[test]
    fn records_of_a_chunk_after_the_first(
        syntax in syntax_strategy(),
        input in arbitrary_bytes(),
    ) {
        let mut walk = RecordIter::new(syntax, None, &input);
        let Some(first) = walk.next() else { return Ok(()) };
        let eol = super::first_terminator(syntax, &input, true).map(|(_, eol)| eol);
        let expected: Vec<usize> = walk.map(|r| r.end).collect();
        let mut framer = Framer::with_eol(syntax, eol);
        let mut ends = Vec::new();
        let mut pos = first.end;
        while let Some(n) = framer.find_cut(&input[pos..], 1, true) {
            pos += n;
            ends.push(pos);
        }
        prop_assert_eq!(ends, expected);
    }

    /// Counting a chunk's records, as the fast load path does to journal
    /// the chunk with its COPY: the same count as the walk.
    #[test]
    fn records_counted_as_the_walk_finds_them(
        syntax in syntax_strategy(),
        input in arbitrary_bytes(),
    ) {
        let mut walk = RecordIter::new(syntax, None, &input);
        let Some(first) = walk.next() else { return Ok(()) };
        let eol = super::first_terminator(syntax, &input, true).map(|(_, eol)| eol);
        let expected = walk.count() as u64;
        prop_assert_eq!(super::count_records(syntax, eol, &input[first.end..]), expected);
    }
}
