//! Client-side checks of single records, for chunks the server already
//! refused once: they pull out the rows that are certainly bad, cheaply, so
//! the server is not asked again and again.
//!
//! Every check is conservative: it rejects a row only when PostgreSQL
//! certainly would (a wrong field count, bytes that are not UTF-8, a value
//! that cannot be an integer in any PostgreSQL version). Anything doubtful is
//! left to the server, whose verdict is final.

use crate::source::csv::frame::{trim_terminator, FieldDecoder, Fields};

/// Why a record is certainly bad, with PostgreSQL's SQLSTATE for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub sqlstate: &'static str,
    pub message: String,
    /// The column it concerns, when one does.
    pub column: Option<String>,
    /// The offending value, shortened for messages.
    pub value: Option<String>,
}

/// What a column accepts, as far as the client checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnCheck {
    Any,
    /// smallint, integer or bigint: the type's name and range.
    Integer {
        type_name: &'static str,
        min: i64,
        max: i64,
    },
}

impl ColumnCheck {
    pub const SMALLINT: ColumnCheck = ColumnCheck::Integer {
        type_name: "smallint",
        min: i16::MIN as i64,
        max: i16::MAX as i64,
    };
    pub const INTEGER: ColumnCheck = ColumnCheck::Integer {
        type_name: "integer",
        min: i32::MIN as i64,
        max: i32::MAX as i64,
    };
    pub const BIGINT: ColumnCheck = ColumnCheck::Integer {
        type_name: "bigint",
        min: i64::MIN,
        max: i64::MAX,
    };
}

/// Checks records against the target's columns.
#[derive(Clone, Debug)]
pub struct Validator {
    /// How the records' values are read.
    pub decoder: FieldDecoder,
    pub columns: Vec<(String, ColumnCheck)>,
    /// csv FORCE_NULL columns: a quoted NULL string is NULL there too.
    pub force_null: Vec<String>,
    /// Check UTF-8 validity (input and server both UTF-8).
    pub utf8: bool,
}

/// What COPY says of bytes that are not UTF-8 (a NUL byte among them),
/// in its words; `None` for valid UTF-8.
pub fn utf8_problem(bytes: &[u8]) -> Option<String> {
    let bad = match std::str::from_utf8(bytes) {
        Err(e) => {
            let at = e.valid_up_to();
            &bytes[at..(at + e.error_len().unwrap_or(1)).min(bytes.len())]
        }
        Ok(_) if bytes.contains(&0) => &[0][..],
        Ok(_) => return None,
    };
    let hex: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
    Some(format!(
        "invalid byte sequence for encoding \"UTF8\": {}",
        hex.join(" ")
    ))
}

/// Longest value quoted in messages.
const VALUE_PREVIEW: usize = 40;

pub fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() > VALUE_PREVIEW {
        format!(
            "{}...",
            text.chars().take(VALUE_PREVIEW).collect::<String>()
        )
    } else {
        text.into_owned()
    }
}

impl Validator {
    /// The first certain problem of one record (terminator included), if
    /// any. `utf8_checked` says the caller already validated the bytes.
    pub fn check(&self, record: &[u8], utf8_checked: bool) -> Option<Problem> {
        if self.plainly_fine(record, utf8_checked) {
            return None;
        }
        self.check_slowly(record, utf8_checked)
    }

    /// An allocation-free screen for the common record (no quote, no
    /// backslash): right field count and plausible integers. False means
    /// "look closer", not "bad".
    fn plainly_fine(&self, record: &[u8], utf8_checked: bool) -> bool {
        let record = trim_terminator(record);
        if self.utf8
            && !utf8_checked
            && (std::str::from_utf8(record).is_err() || record.contains(&0))
        {
            return false;
        }
        let Some(mut fields) = self.decoder.plain_fields(record) else {
            return false;
        };
        for (_, check) in &self.columns {
            let Some(field) = fields.next() else {
                return false;
            };
            if let (ColumnCheck::Integer { min, max, .. }, Some(value)) = (*check, field) {
                if integer_problem(value, min, max).is_some() {
                    return false;
                }
            }
        }
        fields.next().is_none()
    }

    fn check_slowly(&self, record: &[u8], utf8_checked: bool) -> Option<Problem> {
        let record = trim_terminator(record);
        if self.utf8 && !utf8_checked {
            if let Some(message) = utf8_problem(record) {
                return Some(Problem {
                    sqlstate: "22021",
                    message,
                    column: None,
                    value: None,
                });
            }
        }
        let mut fields = Fields::default();
        if self.decoder.decode(record, &mut fields).is_err() {
            return Some(Problem {
                sqlstate: "22P04",
                message: "unterminated CSV quoted field".into(),
                column: None,
                value: None,
            });
        }
        if fields.escaped_non_ascii() {
            // COPY checks such a value against the database encoding
            // before anything else of the record: the server's call.
            return None;
        }
        if fields.len() > self.columns.len() {
            return Some(Problem {
                sqlstate: "22P04",
                message: "extra data after last expected column".into(),
                column: None,
                value: None,
            });
        }
        if fields.len() < self.columns.len() {
            let missing = &self.columns[fields.len()].0;
            return Some(Problem {
                sqlstate: "22P04",
                message: format!("missing data for column \"{missing}\""),
                column: Some(missing.clone()),
                value: None,
            });
        }
        for ((name, check), field) in self.columns.iter().zip(fields.iter()) {
            let Some(value) = field else { continue };
            if value == self.decoder.null.as_slice() && self.force_null.contains(name) {
                continue;
            }
            let ColumnCheck::Integer {
                type_name,
                min,
                max,
            } = *check
            else {
                continue;
            };
            let (sqlstate, message) = match integer_problem(value, min, max) {
                None => continue,
                Some(IntegerProblem::Syntax) => (
                    "22P02",
                    format!(
                        "invalid input syntax for type {type_name}: \"{}\"",
                        preview(value)
                    ),
                ),
                Some(IntegerProblem::Range) => (
                    "22003",
                    format!(
                        "value \"{}\" is out of range for type {type_name}",
                        preview(value)
                    ),
                ),
            };
            return Some(Problem {
                sqlstate,
                message,
                column: Some(name.clone()),
                value: Some(preview(value)),
            });
        }
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IntegerProblem {
    Syntax,
    Range,
}

/// A problem no PostgreSQL version would overlook in an integer value:
/// syntax when it is empty (after spaces), has no digit, or has a byte outside
/// the widest grammar (sign, digits, underscores, 0x/0o/0b prefixes, hex
/// digits, spaces); range when it is a plain decimal beyond the type's range.
/// Anything else (`0x1F`, `1_000`) is left to the server.
fn integer_problem(value: &[u8], min: i64, max: i64) -> Option<IntegerProblem> {
    let trimmed = value.trim_ascii();
    let plausible = !trimmed.is_empty()
        && trimmed.iter().any(u8::is_ascii_digit)
        && trimmed.iter().all(|&b| {
            b.is_ascii_hexdigit() || matches!(b, b'+' | b'-' | b'_' | b'x' | b'X' | b'o' | b'O')
        });
    if !plausible {
        return Some(IntegerProblem::Syntax);
    }
    let digits = trimmed
        .strip_prefix(b"-")
        .or_else(|| trimmed.strip_prefix(b"+"))
        .unwrap_or(trimmed);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // A plain decimal: check the range exactly (leading zeros do not count).
    let first = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    let significant = &digits[first..];
    if significant.len() > 19 {
        return Some(IntegerProblem::Range);
    }
    let magnitude: i128 = std::str::from_utf8(significant).ok()?.parse().unwrap_or(0);
    let n = if trimmed[0] == b'-' {
        -magnitude
    } else {
        magnitude
    };
    (n < i128::from(min) || n > i128::from(max)).then_some(IntegerProblem::Range)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::csv::frame::Syntax;

    fn text_decoder() -> FieldDecoder {
        FieldDecoder {
            syntax: Syntax::Text,
            delimiter: b'\t',
            null: b"\\N".to_vec(),
        }
    }

    impl Validator {
        /// Both paths must agree on every record.
        fn check_t(&self, record: &[u8]) -> Option<Problem> {
            let utf8_ok = std::str::from_utf8(record).is_ok() && !record.contains(&0);
            let fast = self.check(record, utf8_ok);
            assert_eq!(
                fast,
                self.check(record, false),
                "{:?}",
                String::from_utf8_lossy(record)
            );
            fast
        }
    }

    fn csv(columns: &[(&str, ColumnCheck)]) -> Validator {
        Validator {
            decoder: FieldDecoder {
                syntax: Syntax::Csv {
                    quote: b'"',
                    escape: b'"',
                },
                delimiter: b',',
                null: Vec::new(),
            },
            columns: columns.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            force_null: vec!["score".into()],
            utf8: true,
        }
    }

    #[test]
    fn finds_certain_problems_only() {
        let v = csv(&[("name", ColumnCheck::Any), ("score", ColumnCheck::INTEGER)]);
        assert_eq!(v.check_t(b"a,1\n"), None);
        assert_eq!(v.check_t(b"\"a,b\",\" -12 \"\n"), None);
        assert_eq!(
            v.check_t(b"a,\n"),
            None,
            "NULL is the server's call (NOT NULL?)"
        );
        assert_eq!(v.check_t(b"a,0x1F\n"), None, "PostgreSQL 16 reads hex");
        assert_eq!(v.check_t(b"a,abc\n").unwrap().sqlstate, "22P02");
        assert_eq!(v.check_t(b"a,2147483647\n"), None);
        assert_eq!(v.check_t(b"a,-0002147483648\n"), None);
        assert_eq!(v.check_t(b"a,2147483648\n").unwrap().sqlstate, "22003");
        assert_eq!(
            v.check_t(b"a,99999999999999999999999\n").unwrap().sqlstate,
            "22003"
        );
        assert_eq!(v.check_t(b"a,\"\"\n"), None, "FORCE_NULL makes it NULL");
        assert_eq!(
            v.check_t(b"a,\" \"\n").unwrap().column.as_deref(),
            Some("score")
        );
        assert_eq!(
            v.check_t(b"a\n").unwrap().message,
            "missing data for column \"score\""
        );
        assert_eq!(v.check_t(b"a,1,2\n").unwrap().sqlstate, "22P04");
        assert_eq!(
            v.check_t(b"\"a,1\n").unwrap().message,
            "unterminated CSV quoted field"
        );
        assert_eq!(v.check_t(b"\xff,1\n").unwrap().sqlstate, "22021");
        assert_eq!(v.check_t(b"a\0,1\n").unwrap().sqlstate, "22021");
    }

    #[test]
    fn text_format_counts_unescaped_delimiters() {
        let v = Validator {
            decoder: text_decoder(),
            columns: vec![
                ("a".into(), ColumnCheck::Any),
                ("n".into(), ColumnCheck::SMALLINT),
            ],
            force_null: Vec::new(),
            utf8: true,
        };
        assert_eq!(v.check_t(b"x\\\ty\t1\n"), None);
        assert_eq!(v.check_t(b"x\t\\N\n"), None);
        assert_eq!(v.check_t(b"x\ty\t1\n").unwrap().sqlstate, "22P04");
        assert_eq!(v.check_t(b"x\tone\n").unwrap().sqlstate, "22P02");
        assert_eq!(
            v.check_t(b"x\t40000\n").unwrap().message,
            "value \"40000\" is out of range for type smallint"
        );
    }

    /// In LATIN1 (and any one-byte encoding) 0xff is a letter: a value
    /// holding it beside an escape is checked whole, as the server reads it.
    #[test]
    fn text_value_with_byte_0xff_is_checked_whole() {
        let v = Validator {
            decoder: text_decoder(),
            columns: vec![
                ("a".into(), ColumnCheck::Any),
                ("n".into(), ColumnCheck::INTEGER),
            ],
            force_null: Vec::new(),
            utf8: false,
        };
        // The server reads n as "1", tab, "\xff2": not an integer.
        let problem = v.check_t(b"x\t1\\t\xff2\n").expect("a certain problem");
        assert_eq!(problem.sqlstate, "22P02");
        assert_eq!(problem.column.as_deref(), Some("n"));
        assert_eq!(problem.value.as_deref(), Some("1\t\u{fffd}2"));
    }
}
