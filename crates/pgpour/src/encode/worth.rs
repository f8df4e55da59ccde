//! When binary pays: the CPU it saves the server per row, less what
//! encoding costs the client (on the same cores when the server is busy),
//! from measurements kept in the repository:
//! - the server's saving per value of each type, on one-column tables
//!   (`bench/binary-types.sh`, `bench/results/2026-11-24-binary-types.md`);
//!   strings save per byte, the scan for delimiters and quotes;
//! - the client's cost per value, from the encoders' benchmark
//!   (`cargo bench -p pgpour --bench binary`);
//! - whole loads, to set the bar (`bench/results/2026-11-24-binary-copy.md`):
//!   lineitem and customer load faster as binary, extract (mostly
//!   integers) slower, kv and votes the same.

use super::ColumnType;

/// Binary must save at least this much CPU per row.
const WORTH_NS_PER_ROW: i64 = 250;

/// What a string saves the server per byte, in tenths of nanoseconds
/// (text(10) saved nothing, text(40) 45 ns, varchar(44) 60 ns), beyond
/// the first `STRING_BYTES_FREE` of each value.
const STRING_SAVING_TENTHS_PER_BYTE: i64 = 15;
const STRING_BYTES_FREE: i64 = 12;

/// A load's columns, summed up for the estimate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Worth {
    /// What the typed columns save per row, less their encoding.
    typed_ns: i64,
    /// Their usual width in a file, delimiters included.
    typed_bytes: i64,
    /// How many string columns (text, varchar, char, json, bytea).
    strings: i64,
}

impl ColumnType {
    /// Server time saved per value by reading binary rather than text, in
    /// nanoseconds; `None` for strings, which save per byte.
    fn server_saving_ns(self) -> Option<i64> {
        Some(match self {
            ColumnType::Bool => 2,
            ColumnType::Int2 | ColumnType::Int4 => 24,
            ColumnType::Int8 => 33,
            ColumnType::Float4 => 88,
            ColumnType::Float8 => 104,
            ColumnType::Numeric => 36,
            ColumnType::Jsonb => 57,
            ColumnType::Date => 136,
            ColumnType::Time => 80,
            ColumnType::Timestamp => 195,
            ColumnType::Timestamptz { .. } => 170,
            ColumnType::Uuid => 357,
            ColumnType::Bits => 16,
            ColumnType::Interval | ColumnType::Array { .. } => 150,
            ColumnType::Text | ColumnType::Bytea => return None,
        })
    }

    /// What encoding a value costs the client, in nanoseconds.
    fn client_cost_ns(self) -> i64 {
        match self {
            ColumnType::Bool | ColumnType::Int2 | ColumnType::Int4 | ColumnType::Int8 => 18,
            ColumnType::Float4 | ColumnType::Float8 => 55,
            ColumnType::Numeric => 27,
            ColumnType::Text | ColumnType::Jsonb | ColumnType::Bytea | ColumnType::Bits => 10,
            ColumnType::Date => 14,
            ColumnType::Time => 20,
            ColumnType::Timestamp | ColumnType::Timestamptz { .. } => 35,
            ColumnType::Uuid | ColumnType::Interval | ColumnType::Array { .. } => 100,
        }
    }

    /// A typed value's usual width in a file, its delimiter included.
    fn usual_bytes(self) -> i64 {
        match self {
            ColumnType::Bool | ColumnType::Bits => 2,
            ColumnType::Int2 => 4,
            ColumnType::Int4 => 7,
            ColumnType::Int8 => 11,
            ColumnType::Float4 | ColumnType::Float8 => 14,
            ColumnType::Numeric => 9,
            ColumnType::Jsonb => 40,
            ColumnType::Date => 11,
            ColumnType::Time => 9,
            ColumnType::Timestamp => 20,
            ColumnType::Timestamptz { .. } => 23,
            ColumnType::Uuid => 37,
            ColumnType::Interval => 16,
            ColumnType::Array { .. } => 20,
            ColumnType::Text | ColumnType::Bytea => 0,
        }
    }
}

impl Worth {
    pub fn of(columns: &[ColumnType]) -> Worth {
        let mut worth = Worth {
            typed_ns: 0,
            typed_bytes: 0,
            strings: 0,
        };
        for &column in columns {
            match column.server_saving_ns() {
                Some(ns) => {
                    worth.typed_ns += ns - column.client_cost_ns();
                    worth.typed_bytes += column.usual_bytes();
                }
                None => {
                    worth.typed_ns -= column.client_cost_ns();
                    worth.strings += 1;
                }
            }
        }
        worth
    }

    /// The CPU binary saves per row of `row_bytes`, in nanoseconds: the
    /// string columns hold what the typed ones leave of the row.
    fn saving_ns(&self, row_bytes: i64) -> i64 {
        let string_bytes = (row_bytes - self.typed_bytes).max(0);
        let scanned = (string_bytes - STRING_BYTES_FREE * self.strings).max(0);
        self.typed_ns + scanned * STRING_SAVING_TENTHS_PER_BYTE / 10
    }

    /// Whether a batch of `bytes` holding `rows` records pays as binary.
    pub fn pays(&self, bytes: usize, rows: u64) -> bool {
        let row_bytes = bytes as i64 / rows.max(1) as i64;
        self.saving_ns(row_bytes) >= WORTH_NS_PER_ROW
    }

    /// The narrowest rows that pay, in bytes; `None` when no width does
    /// (no string column to make up for the typed ones).
    pub fn break_even_row_bytes(&self) -> Option<i64> {
        if self.typed_ns >= WORTH_NS_PER_ROW {
            return Some(0);
        }
        if self.strings == 0 {
            return None;
        }
        let missing = WORTH_NS_PER_ROW - self.typed_ns;
        let bytes =
            (missing * 10 + STRING_SAVING_TENTHS_PER_BYTE - 1) / STRING_SAVING_TENTHS_PER_BYTE;
        Some(self.typed_bytes + STRING_BYTES_FREE * self.strings + bytes)
    }

    /// The estimate, for `--explain`.
    pub fn describe(&self) -> String {
        format!(
            "the typed columns save about {} ns of CPU per row less their encoding, \
             strings {:.1} ns per byte beyond {STRING_BYTES_FREE} of each; \
             {WORTH_NS_PER_ROW} ns pay for binary",
            self.typed_ns,
            STRING_SAVING_TENTHS_PER_BYTE as f64 / 10.0,
        )
    }

    /// Why binary never pays here, for `--explain`.
    pub fn never_pays(&self) -> String {
        format!(
            "binary would save about {} ns of CPU per row (the server's parsing less the \
             client's encoding), under the {WORTH_NS_PER_ROW} ns that pay for it",
            self.typed_ns
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::*;

    #[test]
    fn the_measured_tables_go_as_measured() {
        let lineitem = [
            Int8, Int4, Int4, Int4, Numeric, Numeric, Numeric, Numeric, Text, Text, Date, Date,
            Date, Text, Text, Text,
        ];
        assert!(Worth::of(&lineitem).pays(784_000_000, 6_000_000));
        let mut extract = vec![Int4; 24];
        extract.extend([Text, Bits, Numeric, Numeric, Numeric]);
        assert!(!Worth::of(&extract).pays(290_000_000, 2_000_000));
        let customer = [
            Int4, Int2, Int4, Text, Text, Text, Text, Text, Text, Text, Text, Text, Timestamp,
            Text, Numeric, Numeric, Numeric, Numeric, Numeric, Numeric, Text,
        ];
        assert!(Worth::of(&customer).pays(579_000_000, 1_000_000));
        assert!(!Worth::of(&[Int8, Text]).pays(78_000_000, 5_000_000));
        assert!(!Worth::of(&[Text, Text, Int4]).pays(71_000_000, 3_000_000));
        assert_eq!(Worth::of(&[Int4, Int8]).break_even_row_bytes(), None);
    }
}
