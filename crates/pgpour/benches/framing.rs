//! Framing throughput: how fast the reader thread can cut input into
//! record-aligned chunks, per syntax. The client must stay far below the
//! server's cost per row (about 1.2 µs per votes row on 2 cores), so the
//! framer should run at GB/s, also when the input arrives in reads and when
//! a quote never closes (one pass, not a rescan per read).
//!
//!     cargo bench -p pgpour --bench framing

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pgpour::frame::{count_records, Framer, RecordIter, Syntax};
use pgpour_testkit::datasets::Dataset;

/// Cuts `input` into chunks of about `target` bytes; returns the chunk
/// count so the work cannot be optimized away and can be checked.
fn chunk_count(syntax: Syntax, input: &[u8], target: usize) -> usize {
    let mut framer = Framer::new(syntax);
    let mut rest = input;
    let mut chunks = 0;
    while let Some(n) = framer.find_cut(rest, target, true) {
        rest = &rest[n..];
        chunks += 1;
    }
    chunks
}

/// The same, the input arriving in reads of `read` bytes as in the reader
/// thread: the framer resumes its scan where the previous read ended.
fn pushed_chunk_count(syntax: Syntax, input: &[u8], target: usize, read: usize) -> usize {
    let mut framer = Framer::new(syntax);
    let (mut start, mut available, mut chunks) = (0, 0, 0);
    loop {
        let eof = available == input.len();
        match framer.find_cut(&input[start..available], target, eof) {
            Some(n) => {
                start += n;
                chunks += 1;
            }
            None if eof => return chunks,
            None => available = input.len().min(available + read),
        }
    }
}

fn inputs() -> Vec<(&'static str, Syntax, Vec<u8>)> {
    let csv = Syntax::Csv {
        quote: b'"',
        escape: b'"',
    };
    let mut votes = Vec::new();
    Dataset::Votes.write(400_000, 1, &mut votes).unwrap();
    let mut extract = Vec::new();
    Dataset::Extract.write(60_000, 1, &mut extract).unwrap();
    // Quoted fields with embedded newlines and doubled quotes throughout.
    let quoted: Vec<u8> = (0..200_000)
        .flat_map(|i| format!("{i},\"a \"\"quoted\"\"\nvalue, {i}\",x\n").into_bytes())
        .collect();
    vec![
        ("votes csv", csv, votes),
        ("extract text", Syntax::Text, extract),
        ("quoted csv", csv, quoted.clone()),
        (
            "quoted csv, escape \\",
            Syntax::Csv {
                quote: b'"',
                escape: b'\\',
            },
            quoted,
        ),
    ]
}

fn framing(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame 4MiB chunks");
    for (name, syntax, input) in inputs() {
        let expected = chunk_count(syntax, &input, 4 << 20);
        assert!(expected >= 1);
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &input, |b, input| {
            b.iter(|| assert_eq!(chunk_count(syntax, input, 4 << 20), expected))
        });
    }
    group.finish();

    // Reads of 256 KiB, as the reader does. A quote opened on line 1 and
    // never closed keeps the first record (and the line ending) open to
    // the end: the case that once rescanned the record on every read.
    let mut group = c.benchmark_group("push 256KiB reads");
    let (name, syntax, votes) = inputs().swap_remove(0);
    let mut unterminated = b"\"".to_vec();
    unterminated.extend_from_slice(&votes);
    for (name, input) in [
        (name, votes),
        ("csv, unterminated quote on line 1", unterminated),
    ] {
        let expected = pushed_chunk_count(syntax, &input, 4 << 20, 256 << 10);
        assert_eq!(expected, chunk_count(syntax, &input, 4 << 20));
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &input, |b, input| {
            b.iter(|| {
                let chunks = pushed_chunk_count(syntax, input, 4 << 20, 256 << 10);
                assert_eq!(chunks, expected)
            })
        });
    }
    group.finish();

    // Each chunk's records are counted for its journal row. lineitem's
    // quoted comments rule out counting line ends alone.
    let mut group = c.benchmark_group("count records");
    let mut lineitem = Vec::new();
    Dataset::Lineitem.write(100_000, 1, &mut lineitem).unwrap();
    let mut others = inputs();
    let (_, csv, _) = others.remove(0);
    let eol = Some(pgpour::frame::Eol::Lf);
    for (name, syntax, input) in [("lineitem csv", csv, lineitem)].into_iter().chain(others) {
        let records = RecordIter::new(syntax, None, &input).count() as u64;
        assert_eq!(count_records(syntax, eol, &input), records, "{name}");
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &input, |b, input| {
            b.iter(|| count_records(syntax, eol, input))
        });
    }
    group.finish();

    // The byte-by-byte walk, used on errors only: shows what the fast
    // path saves.
    let mut group = c.benchmark_group("walk every record");
    for (name, syntax, input) in inputs().into_iter().take(1) {
        let records = RecordIter::new(syntax, None, &input).count();
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &input, |b, input| {
            b.iter(|| assert_eq!(RecordIter::new(syntax, None, input).count(), records))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = framing
}
criterion_main!(benches);
