//! pgpour's field decoder (header lines, the checks of refused rows) reads
//! every value as PostgreSQL's COPY does. Each case's records are loaded by
//! COPY into text columns of a SQL_ASCII database, which keeps bytes as they
//! are (0xff and escaped bytes included), and the values read back must be
//! what the decoder makes of the same records.

use pgpour::frame::{trim_terminator, Fields};
use pgpour::{Format, FormatOptions};
use pgpour_testkit::shared_cluster;

/// Three text columns per record; `records` end with their terminator,
/// except perhaps the last.
fn decodes_like_copy(name: &str, mut format: FormatOptions, records: &[&[u8]]) {
    // Every byte but 0 is a LATIN1 character: none is refused on the way in.
    format.encoding = Some("LATIN1".into());
    let cluster = shared_cluster();
    let database = format!("t{}_decoding_{name}", std::process::id());
    cluster
        .client("postgres")
        .batch_execute(&format!(
            "CREATE DATABASE {database} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' \
             TEMPLATE template0"
        ))
        .unwrap();
    let mut client = cluster.client(&database);
    client
        .batch_execute("CREATE TABLE t (n serial, a text, b text, c text)")
        .unwrap();
    let copy = format!(
        "COPY t (a, b, c) FROM STDIN WITH ({})",
        format.copy_options_sql()
    );
    let mut writer = client.copy_in(copy.as_str()).unwrap();
    std::io::Write::write_all(&mut writer, &records.concat()).unwrap();
    writer
        .finish()
        .unwrap_or_else(|e| panic!("{name}: COPY: {e:?}"));
    let loaded: Vec<Vec<Option<Vec<u8>>>> = client
        .query(
            "SELECT convert_to(a, 'SQL_ASCII'), convert_to(b, 'SQL_ASCII'), \
             convert_to(c, 'SQL_ASCII') FROM t ORDER BY n",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (0..3).map(|i| row.get(i)).collect())
        .collect();
    drop(client);

    let decoder = format.field_decoder();
    let mut fields = Fields::default();
    assert_eq!(loaded.len(), records.len(), "{name}: rows");
    for (record, copy_values) in records.iter().zip(loaded) {
        decoder
            .decode(trim_terminator(record), &mut fields)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let decoded: Vec<Option<Vec<u8>>> = fields.iter().map(|v| v.map(<[u8]>::to_vec)).collect();
        assert_eq!(
            decoded,
            copy_values,
            "{name}: {:?}",
            String::from_utf8_lossy(record)
        );
    }
    let _ = cluster
        .client("postgres")
        .batch_execute(&format!("DROP DATABASE {database}"));
}

#[test]
fn text_format_escapes_nulls_and_byte_0xff() {
    decodes_like_copy(
        "text",
        FormatOptions::new(Format::Text),
        &[
            b"a\tb\tc\n",
            b"\\b\\f\\n\\r\\t\\v\\q\t\\\\\t\\\tx\n",
            b"\\101\\0101\\7\t\\x41\\x414\\x4\\xg\t\\777\\377\\x80\n",
            b"\xff\\t\xff\t\\\xff\tcaf\xe9\n",
            b"\\N\t\\\\N\t\n",
            // COPY drops a backslash that ends the input.
            b"x\ty\tz\\",
        ],
    );
}

#[test]
fn text_format_other_delimiter_and_null() {
    let mut format = FormatOptions::new(Format::Text);
    format.delimiter = Some(b'|');
    format.null = Some(String::new());
    decodes_like_copy(
        "text_options",
        format,
        &[b"a\\|b||c\n", b"\\N|x|\n", b"\t|\\\t|\\\\\n"],
    );
}

#[test]
fn csv_quotes_nulls_and_byte_0xff() {
    decodes_like_copy(
        "csv",
        FormatOptions::new(Format::Csv),
        &[
            b"a,\"b,c\",\"d\"\"e\"\n",
            b",\"\",x\n",
            b"\"multi\nline\",\xff\"q\xff\",\xff\n",
            b"a\"b\"c,\"x\"y,\"\"\"\"\n",
        ],
    );
}

#[test]
fn csv_other_quote_escape_delimiter_and_null() {
    let mut format = FormatOptions::new(Format::Csv);
    format.quote = Some(b'\'');
    format.escape = Some(b'\\');
    format.delimiter = Some(b';');
    format.null = Some("NULL".into());
    decodes_like_copy(
        "csv_options",
        format,
        &[
            b"'a\\'b\\\\c\\d';NULL;'NULL'\n",
            b"e\\'f';;x\\\n",
            b"N'ULL';'';'\\x'\n",
        ],
    );
}
