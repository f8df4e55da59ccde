//! Decimal256 columns at the edges of their type: every value a
//! Decimal256 array can hold is either encoded as the numeric its text is,
//! or refused as its row's problem; never a panic.

use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal256Array, RecordBatch};
use arrow_buffer::i256;

use super::{encode_batch, ArrowEncoder};
use crate::encode::choice::ColumnType;

fn encoder(column: ColumnType, name: &str) -> ArrowEncoder {
    ArrowEncoder {
        columns: vec!["v".to_string()],
        types: vec![(Some(column), name.to_string())],
        mapping: Vec::new(),
    }
}

fn batch(values: Vec<Option<i256>>, precision: u8, scale: i8) -> RecordBatch {
    let array = Decimal256Array::from(values)
        .with_precision_and_scale(precision, scale)
        .unwrap();
    RecordBatch::try_from_iter([("v", Arc::new(array) as ArrayRef)]).unwrap()
}

#[test]
fn decimal256_at_every_edge_encodes_or_is_refused_never_panics() {
    let edges = vec![
        Some(i256::MAX),
        Some(i256::MIN),
        Some(i256::MIN + i256::ONE),
        Some(i256::ZERO),
        Some(i256::MINUS_ONE),
        Some(i256::from_i128(i128::MAX) * i256::from_i128(10)),
        None,
    ];
    for (precision, scales) in [
        (76u8, vec![0i8, 1, 38, 75, 76, -1, -10, -128]),
        (40, vec![39, 40, 2]),
    ] {
        for scale in scales {
            let rows = edges.len();
            let mut out = Vec::new();
            let (encoded, text) = (
                encode_batch(
                    &encoder(ColumnType::Numeric, "numeric"),
                    &batch(edges.clone(), precision, scale),
                    "frame",
                    &mut out,
                ),
                encode_batch(
                    &encoder(ColumnType::Text, "text"),
                    &batch(edges.clone(), precision, scale),
                    "frame",
                    &mut Vec::new(),
                ),
            );
            let encoded = encoded.unwrap_or_else(|e| panic!("p{precision} s{scale}: {e}"));
            assert_eq!(encoded.ends.len(), rows + 1, "p{precision} s{scale}");
            // Every digit of a Decimal256 fits in a numeric: none is refused.
            assert!(encoded.problems.is_empty(), "p{precision} s{scale}");
            assert!(text.unwrap().problems.is_empty(), "p{precision} s{scale}");
        }
    }
}

#[test]
fn decimal256_is_the_numeric_of_its_text() {
    let mut out = Vec::new();
    let max = batch(vec![Some(i256::MAX)], 76, 9);
    let rows = encode_batch(
        &encoder(ColumnType::Numeric, "numeric"),
        &max,
        "f",
        &mut out,
    )
    .unwrap();
    let field = &out[rows.ends[0] + 2..rows.ends[1]];
    let digits = i256::MAX.to_string();
    let text = format!(
        "{}.{}",
        &digits[..digits.len() - 9],
        &digits[digits.len() - 9..]
    );
    let mut expected = Vec::new();
    assert!(crate::encode::numbers::numeric(
        text.as_bytes(),
        &mut expected
    ));
    assert_eq!(field, &expected[..], "{text}");
}
