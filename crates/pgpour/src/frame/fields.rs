//! Splitting one record into its field values, decoded as COPY decodes them.
//!
//! Only used off the hot path (header lines, error reports): rows normally go
//! to the server as bytes, and the server splits them.

use super::Syntax;

/// Splits a record (without its line terminator) into decoded field values.
pub fn split_fields(syntax: Syntax, delimiter: u8, record: &[u8]) -> Vec<Vec<u8>> {
    match syntax {
        Syntax::Csv { quote, escape } => split_csv(record, delimiter, quote, escape),
        Syntax::Text => split_text(record, delimiter),
    }
}

/// Strips a trailing LF, CRLF or CR.
pub fn trim_terminator(record: &[u8]) -> &[u8] {
    let record = record.strip_suffix(b"\n").unwrap_or(record);
    record.strip_suffix(b"\r").unwrap_or(record)
}

fn split_csv(record: &[u8], delimiter: u8, quote: u8, escape: u8) -> Vec<Vec<u8>> {
    let mut fields = vec![Vec::new()];
    let mut in_quote = false;
    let mut i = 0;
    while i < record.len() {
        let c = record[i];
        let field = fields.last_mut().expect("fields starts non-empty");
        if in_quote {
            let next = record.get(i + 1).copied();
            if c == escape && (next == Some(quote) || next == Some(escape)) {
                field.push(next.unwrap_or(c));
                i += 2;
                continue;
            }
            if c == quote {
                in_quote = false;
            } else {
                field.push(c);
            }
        } else if c == delimiter {
            fields.push(Vec::new());
        } else if c == quote {
            in_quote = true;
        } else {
            field.push(c);
        }
        i += 1;
    }
    fields
}

fn split_text(record: &[u8], delimiter: u8) -> Vec<Vec<u8>> {
    let mut fields = vec![Vec::new()];
    let mut i = 0;
    while i < record.len() {
        let c = record[i];
        let field = fields.last_mut().expect("fields starts non-empty");
        if c == delimiter {
            fields.push(Vec::new());
        } else if c == b'\\' && i + 1 < record.len() {
            i += 1;
            field.push(match record[i] {
                b'b' => 8,
                b'f' => 12,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 11,
                other => other,
            });
        } else {
            field.push(c);
        }
        i += 1;
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_doubled_quotes() {
        let csv = Syntax::Csv {
            quote: b'"',
            escape: b'"',
        };
        assert_eq!(
            split_fields(csv, b',', b"a,\"b,\"\"c\"\"\",d\"e\"f"),
            vec![b"a".to_vec(), b"b,\"c\"".to_vec(), b"def".to_vec()]
        );
    }

    #[test]
    fn text_escapes() {
        assert_eq!(
            split_fields(Syntax::Text, b'\t', b"a\\tb\tc\\\\"),
            vec![b"a\tb".to_vec(), b"c\\".to_vec()]
        );
    }
}
