//! Binary encoding throughput: how fast a worker turns csv into binary COPY
//! rows, per type, in MB/s of input. The client must stay far below the
//! server's cost: its encoding is worth doing only while it costs less
//! than the parsing it saves the server (`bench/results/*-binary-types.md`).
//!
//!     cargo bench -p pgpour --bench binary

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pgpour::{EncoderBench, Format, FormatOptions};
use pgpour_testkit::datasets::Dataset;

/// 200,000 one-column rows of each type, as a csv file would hold them.
fn columns() -> Vec<(&'static str, Vec<u8>)> {
    let rows = 200_000u64;
    let each = |f: &dyn Fn(u64) -> String| -> Vec<u8> {
        (0..rows)
            .flat_map(|i| format!("{}\n", f(i)).into_bytes())
            .collect()
    };
    vec![
        ("int4", each(&|i| (i * 7919 % 2_000_000_000).to_string())),
        ("int8", each(&|i| (i * 1_000_003).to_string())),
        (
            "numeric",
            each(&|i| format!("{}.{:02}", i % 90_000 + 10, i % 100)),
        ),
        (
            "float8",
            each(&|i| ((i % 100_000) as f64 / 7.0).to_string()),
        ),
        ("bool", each(&|i| ["t", "f"][(i % 2) as usize].to_string())),
        (
            "date",
            each(&|i| format!("{}-{:02}-{:02}", 1992 + i % 7, 1 + i % 12, 1 + i % 28)),
        ),
        (
            "timestamp",
            each(&|i| {
                format!(
                    "2024-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
                    1 + i % 12,
                    1 + i % 28,
                    i % 24,
                    i % 60,
                    i % 59,
                    i % 1000
                )
            }),
        ),
        (
            "uuid",
            each(&|i| {
                format!(
                    "{:08x}-{:04x}-4abc-8def-{:012x}",
                    i * 2_654_435_761 % (1 << 32),
                    i % 65536,
                    i * 97
                )
            }),
        ),
        ("text", each(&|i| format!("\"comment {i}, quoted\""))),
    ]
}

fn encode(c: &mut Criterion) {
    let csv = FormatOptions::new(Format::Csv);
    let mut group = c.benchmark_group("binary");
    for (name, data) in columns() {
        let mut bench = EncoderBench::new(&[name], &csv, &data).expect(name);
        assert!(bench.encode().is_some(), "{name}");
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_function(BenchmarkId::new("column", name), |b| {
            b.iter(|| bench.encode())
        });
    }
    let mut lineitem = Vec::new();
    Dataset::Lineitem.write(100_000, 1, &mut lineitem).unwrap();
    let types = [
        "int8", "int4", "int4", "int4", "numeric", "numeric", "numeric", "numeric", "bpchar",
        "bpchar", "date", "date", "date", "bpchar", "bpchar", "varchar",
    ];
    let mut bench = EncoderBench::new(&types, &csv, &lineitem).expect("lineitem");
    assert!(bench.encode().is_some());
    group.throughput(Throughput::Bytes(lineitem.len() as u64));
    group.bench_function(BenchmarkId::new("rows", "lineitem"), |b| {
        b.iter(|| bench.encode())
    });
    // The same rows as if every column were text: the cost of splitting
    // the values and writing them, without reading any number or date.
    let texts = ["text"; 16];
    let mut split = EncoderBench::new(&texts, &csv, &lineitem).expect("lineitem as text");
    assert!(split.encode().is_some());
    group.bench_function(BenchmarkId::new("rows", "lineitem-as-text"), |b| {
        b.iter(|| split.encode())
    });
    group.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
