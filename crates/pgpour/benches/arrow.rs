//! Arrow encoding throughput: how fast a worker turns record batches into
//! binary COPY rows, for a lineitem-like batch and per type, in MiB/s of
//! binary COPY written and in rows/s.
//!
//!     cargo bench -p pgpour --bench arrow

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{Field, Schema};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pgpour::ArrowEncoderBench;

const ROWS: usize = 100_000;

fn decimal(f: impl Fn(usize) -> i128) -> ArrayRef {
    let values = Decimal128Array::from_iter_values((0..ROWS).map(f));
    Arc::new(values.with_precision_and_scale(15, 2).unwrap())
}

fn text(f: impl Fn(usize) -> String) -> ArrayRef {
    Arc::new(StringArray::from_iter_values((0..ROWS).map(f)))
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), false))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// TPC-H lineitem's sixteen columns, as a Parquet export types them.
fn lineitem() -> (RecordBatch, Vec<&'static str>) {
    let modes = ["AIR", "MAIL", "RAIL", "SHIP", "TRUCK", "REG AIR", "FOB"];
    let columns: Vec<(&str, ArrayRef, &str)> = vec![
        (
            "l_orderkey",
            Arc::new(Int64Array::from_iter_values(
                (0..ROWS as i64).map(|i| i / 4),
            )),
            "int8",
        ),
        (
            "l_partkey",
            Arc::new(Int64Array::from_iter_values(
                (0..ROWS as i64).map(|i| i * 7919 % 200_000),
            )),
            "int8",
        ),
        (
            "l_suppkey",
            Arc::new(Int64Array::from_iter_values(
                (0..ROWS as i64).map(|i| i % 10_000),
            )),
            "int8",
        ),
        (
            "l_linenumber",
            Arc::new(Int32Array::from_iter_values(
                (0..ROWS as i32).map(|i| i % 7 + 1),
            )),
            "int4",
        ),
        (
            "l_quantity",
            decimal(|i| (i % 50 + 1) as i128 * 100),
            "numeric",
        ),
        (
            "l_extendedprice",
            decimal(|i| (i * 7919 % 10_000_000) as i128),
            "numeric",
        ),
        ("l_discount", decimal(|i| (i % 11) as i128), "numeric"),
        ("l_tax", decimal(|i| (i % 9) as i128), "numeric"),
        (
            "l_returnflag",
            text(|i| ["A", "N", "R"][i % 3].to_string()),
            "text",
        ),
        (
            "l_linestatus",
            text(|i| ["F", "O"][i % 2].to_string()),
            "text",
        ),
        (
            "l_shipdate",
            Arc::new(Date32Array::from_iter_values(
                (0..ROWS as i32).map(|i| 8036 + i % 2500),
            )),
            "date",
        ),
        (
            "l_commitdate",
            Arc::new(Date32Array::from_iter_values(
                (0..ROWS as i32).map(|i| 8066 + i % 2500),
            )),
            "date",
        ),
        (
            "l_receiptdate",
            Arc::new(Date32Array::from_iter_values(
                (0..ROWS as i32).map(|i| 8040 + i % 2500),
            )),
            "date",
        ),
        (
            "l_shipinstruct",
            text(|i| {
                [
                    "DELIVER IN PERSON",
                    "COLLECT COD",
                    "NONE",
                    "TAKE BACK RETURN",
                ][i % 4]
                    .to_string()
            }),
            "text",
        ),
        ("l_shipmode", text(|i| modes[i % 7].to_string()), "text"),
        (
            "l_comment",
            text(|i| format!("carefully final deposits {i} detect slyly")),
            "text",
        ),
    ];
    let types = columns.iter().map(|c| c.2).collect();
    (
        batch(columns.into_iter().map(|(n, a, _)| (n, a)).collect()),
        types,
    )
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("arrow_encode");
    let (lineitem, types) = lineitem();
    let mut cases = vec![("lineitem", lineitem, types)];
    let single = |name: &'static str, array: ArrayRef, ty: &'static str| {
        (name, batch(vec![(name, array)]), vec![ty])
    };
    cases.push(single(
        "int8",
        Arc::new(Int64Array::from_iter_values(
            (0..ROWS as i64).map(|i| i * 1_000_003),
        )),
        "int8",
    ));
    cases.push(single(
        "numeric",
        decimal(|i| (i * 7919 % 10_000_000) as i128),
        "numeric",
    ));
    cases.push(single(
        "float8",
        Arc::new(Float64Array::from_iter_values(
            (0..ROWS).map(|i| i as f64 / 7.0),
        )),
        "float8",
    ));
    cases.push(single(
        "date",
        Arc::new(Date32Array::from_iter_values(
            (0..ROWS as i32).map(|i| i % 20_000),
        )),
        "date",
    ));
    cases.push(single(
        "timestamp",
        Arc::new(TimestampMicrosecondArray::from_iter_values(
            (0..ROWS as i64).map(|i| i * 1_000_003_007),
        )),
        "timestamp",
    ));
    cases.push(single(
        "text",
        text(|i| format!("row {i} of the benchmark")),
        "text",
    ));
    for (name, batch, types) in cases {
        let mut bench = ArrowEncoderBench::new(batch, &types).expect("an encodable batch");
        let bytes = bench.encode();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &(), |b, _| {
            b.iter(|| bench.encode())
        });
    }
    group.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
