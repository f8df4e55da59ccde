//! Guarantee 1: for inputs COPY accepts, pgpour loads the very same rows.

use std::io::Write;

use pgpour::{Format, FormatOptions, Header};
use pgpour_testkit::datasets::{CopyFormat, Dataset};

use crate::harness::Case;

const ABC: &str = "a text, b text, c text";

#[test]
fn csv_plain() {
    Case::csv(ABC, b"1,2,3\nx,y,z\n").check("csv_plain");
}

#[test]
fn csv_quotes_doubled_quotes_and_delimiters_in_quotes() {
    Case::csv(
        ABC,
        b"1,2,3\n\"a,b\",\"say \"\"hi\"\"\",\"\"\"\"\n\"\",\"x\"\"\",c\n",
    )
    .check("csv_quotes");
}

#[test]
fn csv_quote_mid_field_toggles_like_copy() {
    // COPY (unlike RFC 4180 parsers) toggles quoting at any quote: a"b,c"d is one field.
    Case::csv(
        "a text, b text",
        b"p,0\na\"b,c\"d,1\nx\"\"y,2\na\"b\nc\"d,3\n",
    )
    .check("csv_quote_mid_field");
}

#[test]
fn csv_embedded_newlines_and_crlf_inside_quotes() {
    Case::csv(
        ABC,
        b"first,1,2\n\"line1\nline2\",\"cr\r\nlf\",\"\n\n\"\nplain,\"\r\",x\n\"\n\",,\n",
    )
    .check("csv_embedded_newlines");
}

#[test]
fn csv_crlf_line_endings() {
    Case::csv(ABC, b"a,b,c\r\n\"q\r\nr\",2,3\r\nx,,z\r\n").check("csv_crlf");
}

#[test]
fn csv_cr_line_endings() {
    Case::csv(ABC, b"a,b,c\r1,2,3\r\"x\ny\r\",,\r").check("csv_cr");
}

#[test]
fn csv_missing_final_newline() {
    Case::csv(ABC, b"a,b,c\nd,e,f").check("csv_no_final_newline");
}

#[test]
fn csv_empty_string_versus_null() {
    // Unquoted empty = NULL, quoted empty = empty string.
    Case::csv(ABC, b",\"\",x\n\"\",,\n").check("csv_null_vs_empty");
}

#[test]
fn csv_custom_null_force_null_force_not_null() {
    Case::csv(ABC, b"\\N,\"\\N\",\n,x,\"\"\n")
        .with(|f| {
            f.null = Some("\\N".into());
            f.force_null = vec!["b".into()];
        })
        .check("csv_force_null");
    Case::csv(ABC, b",\"\",x\n")
        .with(|f| f.force_not_null = vec!["a".into()])
        .check("csv_force_not_null");
}

#[test]
fn csv_escape_differs_from_quote() {
    Case::csv(
        ABC,
        b"1,2,3\n\"a\\\"b\",\"c\\\\\",\"\\x\"\n\"multi\\\"\nline\",2,3\n\"\\\\\",\"\n\",3\n",
    )
    .with(|f| f.escape = Some(b'\\'))
    .check("csv_escape_backslash");
}

#[test]
fn csv_other_delimiter_and_quote() {
    Case::csv(ABC, b"1|2|3\n'a|b'|c|'it''s'\n'x\ny'|'|'|\n")
        .with(|f| {
            f.delimiter = Some(b'|');
            f.quote = Some(b'\'');
        })
        .check("csv_pipe_single_quote");
}

#[test]
fn csv_unicode() {
    Case::csv(
        ABC,
        "żółć,\"日本語, テキスト\",🦀\nÄ,ß,\u{2028}\n".as_bytes(),
    )
    .check("csv_unicode");
}

#[test]
fn csv_wide_rows_and_long_fields() {
    let cols: Vec<String> = (0..120).map(|i| format!("c{i} text")).collect();
    let mut input = Vec::new();
    for row in 0..20 {
        let fields: Vec<String> = (0..120).map(|i| format!("r{row}c{i}")).collect();
        input.extend(fields.join(",").bytes());
        input.push(b'\n');
    }
    Case::csv(&cols.join(", "), &input).check("csv_wide_rows");
    // One field bigger than a read block and than small chunks.
    let long = "x".repeat(600_000);
    Case::csv(
        "a text, b int",
        format!("\"{long}\n{long}\",1\nshort,2\n").as_bytes(),
    )
    .check("csv_long_field");
}

#[test]
fn csv_header_skip_and_match() {
    let input = b"a,b,c\n1,2,3\n4,5,6\n";
    Case::csv(ABC, input)
        .with(|f| f.header = Header::Skip)
        .check("csv_header");
    Case::csv(ABC, input)
        .with(|f| f.header = Header::Match)
        .check("csv_header_match");
    // A quoted header with a newline in a name is still one record.
    Case::csv("a text, \"b\nx\" text", b"a,\"b\nx\"\n1,2\n")
        .with(|f| f.header = Header::Match)
        .check("csv_header_quoted_newline");
}

#[test]
fn header_mismatch_is_refused_before_loading() {
    let err = Case::csv(ABC, b"a,wrong,c\n1,2,3\n")
        .with(|f| f.header = Header::Match)
        .check_both_refuse("header_mismatch");
    let msg = err.to_string();
    assert!(msg.contains("header") && msg.contains("wrong"), "{msg}");
}

/// COPY's HEADER MATCH reads the header's values like data: `\N` is NULL
/// there, which matches no column, not even one named `N`.
#[test]
fn a_null_in_the_header_matches_no_column() {
    let err = Case::text("a text, \"N\" text", b"a\t\\N\n1\t2\n")
        .with(|f| f.header = Header::Match)
        .check_both_refuse("header_null");
    let msg = err.to_string();
    assert!(msg.contains("header") && msg.contains("NULL"), "{msg}");
}

#[test]
fn utf8_byte_order_mark_is_not_data() {
    Case::csv("a int, b text", b"\xEF\xBB\xBF1,x\n2,y\n")
        .reference(vec![b"1,x\n2,y\n".to_vec()])
        .check("bom");
    Case::csv("a text, b text", b"\xEF\xBB\xBFa,b\n1,x\n")
        .with(|f| f.header = Header::Match)
        .reference(vec![b"a,b\n1,x\n".to_vec()])
        .check("bom_header");
}

#[test]
fn text_format_escapes_and_null() {
    Case::text(
        ABC,
        b"tab\\there\tnew\\nline\t\\\\\n\\N\t\\101\\x42\\103\tend\nescaped\\\nnewline\tx\t\\\\N\n",
    )
    .check("text_escapes");
}

#[test]
fn text_crlf_and_custom_delimiter_and_empty_null() {
    Case::text(ABC, b"a,b,c\r\n,x,\r\n1,\\,,3\r\n")
        .with(|f| {
            f.delimiter = Some(b',');
            f.null = Some(String::new());
        })
        .check("text_comma_empty_null");
}

#[test]
fn many_files_in_order_with_headers() {
    let files = vec![
        b"a,b,c\n1,2,3\n".to_vec(),
        b"a,b,c\n".to_vec(),
        b"a,b,c\n4,5,6\n7,8,9".to_vec(),
    ];
    Case::csv(ABC, b"")
        .files(files)
        .with(|f| f.header = Header::Skip)
        .check("many_files");
}

/// Small files share a COPY (a batch) only where each is read there as
/// alone: these mix line endings, files without a final line end, quoted
/// line ends at a file's end, and an empty file.
#[test]
fn small_files_of_every_shape_load_as_copy_reads_each() {
    let files: Vec<Vec<u8>> = [
        &b"1,a,x\n"[..],
        b"2,\"b\nb\",y\r\n",
        b"3,c,z\r\n4,d,w\r\n",
        b"5,e,v",
        b"6,f,u\n",
        b"7,\"g\",t\n8,h,s",
        b"",
        b"9,i,r\r",
        b"10,j,q\r11,k,p\r",
        b"12,\"l\n\",o\n",
        b"13,m,\"n\r\n\"\n",
        b"14,\\.,m\n",
        b"15,n,l\n",
    ]
    .iter()
    .map(|f| f.to_vec())
    .collect();
    Case::csv(ABC, b"")
        .files(files)
        .check("small_files_every_shape");
}

#[test]
fn gzip_and_zstd_inputs() {
    let plain = b"1,\"a\nb\",x\n2,c,y\n".repeat(500);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&plain[..], 3).unwrap();
    Case::csv(ABC, b"")
        .files(vec![gz, zst, plain.clone()])
        .reference(vec![plain.clone(), plain.clone(), plain])
        .check("compressed");
}

#[test]
fn latin1_input_converted_by_the_server() {
    // "café" and "naïve" in LATIN1.
    Case::csv("a text, b text", b"caf\xe9,na\xefve\n")
        .with(|f| f.encoding = Some("LATIN1".into()))
        .check("latin1");
}

#[test]
fn columns_mapping_leaves_defaults_to_the_table() {
    Case::csv(
        "id serial primary key, b text, a int, created date default '2020-01-01', g int generated always as (a * 2) stored",
        b"1,x\n2,y\n",
    )
    .columns(&["a", "b"])
    .check("columns_mapping");
}

/// The format options that load the dataset's file as generated.
fn format_of(d: Dataset) -> FormatOptions {
    let mut format = FormatOptions::new(match d.copy_format() {
        CopyFormat::Csv => Format::Csv,
        CopyFormat::Text => Format::Text,
    });
    format.null = d.null().map(str::to_string);
    format
}

fn dataset(d: Dataset, rows: u64) -> Vec<u8> {
    let mut out = Vec::new();
    d.write(rows, 3, &mut out).unwrap();
    out
}

#[test]
fn benchmark_datasets_with_their_types() {
    for d in Dataset::ALL {
        let full_ddl = d.ddl("t");
        // The CREATE TABLE only (customer's DDL goes on with a CREATE INDEX).
        let ddl = full_ddl.split(';').next().unwrap();
        let columns_ddl = &ddl[ddl.find('(').unwrap() + 1..ddl.rfind(')').unwrap()];
        let names = d.columns();
        let mut case = Case::csv(columns_ddl, &dataset(d, 3000));
        case.format = format_of(d);
        case.columns(&names.iter().map(String::as_str).collect::<Vec<_>>())
            .check(d.name());
    }
}

fn server_version_num() -> i32 {
    pgpour_testkit::shared_cluster()
        .client("postgres")
        .query_one("SELECT current_setting('server_version_num')::int4", &[])
        .unwrap()
        .get(0)
}

/// COPY reads its header line like any other: a marker there ends the
/// input before its first row. On an input's first line COPY does not
/// know the line ending yet, and takes any after a marker.
#[test]
fn a_marker_on_the_first_line_or_the_header_ends_the_input() {
    let version = server_version_num();
    let csv_has_markers = version < 180000;
    let header = |f: &mut FormatOptions| f.header = Header::Skip;
    // COPY takes HEADER in text only since 15.
    if version >= 150000 {
        Case::text("a text, b text", b"")
            .with(header)
            .files(vec![
                b"\\.\n1\tnever\n".to_vec(),
                b"a\tb\n2\tx\n".to_vec(),
                b"\\.\r\n3\tnever\n".to_vec(),
            ])
            .check("text_marker_header");
    }
    Case::text("a text", b"")
        .files(vec![b"\\.\r\nnever\n".to_vec(), b"1\n".to_vec()])
        .check("text_marker_first_line");
    if csv_has_markers {
        Case::csv("a text, b text", b"")
            .with(header)
            .files(vec![b"\\.\n1,never\n".to_vec(), b"a,b\n2,x\n".to_vec()])
            .check("csv_marker_header");
        Case::csv("a text", b"")
            .files(vec![b"\\.\r\nnever\n".to_vec(), b"1\n".to_vec()])
            .check("csv_marker_first_line");
    }
}

/// COPY reads the header line as any other: one that is not UTF-8 makes
/// it refuse the input, though the line is never loaded.
#[test]
fn a_header_line_that_is_not_utf8_is_refused() {
    let case = Case::csv("a int, b text", b"a,b\xff\n1,x\n").with(|f| f.header = Header::Skip);
    let error = case.check_both_refuse("header_not_utf8").to_string();
    assert!(
        error.contains(":1: invalid byte sequence for encoding \"UTF8\": 0xff"),
        "{error}"
    );
}

/// COPY converts the whole input to the database's encoding, the header
/// line too: a header byte that does not convert makes it refuse the input,
/// and one that does is no reason to.
#[test]
fn a_header_line_that_does_not_convert_is_refused() {
    let win1252 = |f: &mut FormatOptions| {
        f.header = Header::Skip;
        f.encoding = Some("WIN1252".into());
    };
    let refused = Case::csv("a text", b"h\x81x\nrow1\nrow2\n").with(win1252);
    let error = refused.check_both_refuse("header_not_win1252").to_string();
    assert!(error.contains(":1: ") && error.contains("0x81"), "{error}");
    Case::csv("a text", b"h\xe9\nrow\xe9\n")
        .with(win1252)
        .check("header_win1252");
}

/// HEADER MATCH compares the names after COPY's conversion: a WIN1252 or
/// LATIN1 export whose header names a column "café" matches it.
#[test]
fn header_match_compares_names_in_the_input_encoding() {
    for (encoding, input) in [
        ("WIN1252", &b"caf\xe9,\x93q\x94\r\n1,x\r\n"[..]),
        ("LATIN1", &b"caf\xe9,\xabq\xbb\n1,x\n"[..]),
    ] {
        let quotes = if encoding == "WIN1252" {
            "“q”"
        } else {
            "«q»"
        };
        Case::csv(&format!("café int, \"{quotes}\" text"), input)
            .with(|f| {
                f.header = Header::Match;
                f.encoding = Some(encoding.into());
            })
            .check(&format!("header_match_{}", encoding.to_lowercase()));
    }
}

/// `--explain` compares such a header as the load does: it said "--header
/// match would stop there" of a LATIN1 header the load takes.
#[test]
fn explain_compares_a_header_in_the_input_encoding_as_the_load_does() {
    let db = pgpour_testkit::shared_cluster().create_database("explain_latin1_header");
    db.client()
        .batch_execute("CREATE TABLE t (café int, b text)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    let mut format = FormatOptions::new(Format::Csv);
    format.header = Header::Match;
    format.encoding = Some("LATIN1".into());
    let options = pgpour::LoadOptions::new(
        vec![pgpour::InputSpec::File(path.clone())],
        pgpour::TableName::parse("t").unwrap(),
        format,
    );
    let connect = crate::harness::connect(&db);
    for (header, matches) in [(&b"caf\xe9,b\n"[..], true), (b"cafe,b\n", false)] {
        std::fs::write(&path, [header, b"1,x\n"].concat()).unwrap();
        let explained = pgpour::explain(&connect, &options).unwrap();
        let mismatch = &explained.inputs[0].header_mismatch;
        assert_eq!(mismatch.is_none(), matches, "{mismatch:?}");
    }
}

/// The lines after a marker are neither loaded nor rejected, as COPY
/// leaves them: the summary names each input a marker ended before its
/// last line, and no other (a marker last ends nothing early).
#[test]
fn the_summary_names_a_marker_with_lines_after_it() {
    let files = vec![
        b"1\n\\.\nnever\n".to_vec(),
        b"2\n\\.\n".to_vec(),
        b"3\r\n\\.\r\n".to_vec(),
        b"\\.\r\nnever\n".to_vec(),
    ];
    let summaries = Case::text("a text", b"").files(files).check("marker_noted");
    assert!(!summaries.is_empty());
    for summary in summaries {
        let noted: Vec<(String, u64)> = summary
            .ended_at_marker
            .iter()
            .map(|m| (m.file.rsplit('/').next().unwrap().to_string(), m.line))
            .collect();
        assert_eq!(
            noted,
            [("part-0".to_string(), 2), ("part-3".to_string(), 1)]
        );
    }
}

/// A `\.` inside a quoted csv field is data to COPY, also alone on its
/// line; a marker at a record's start after it still ends the input.
#[test]
fn a_marker_inside_a_quoted_csv_field_is_data() {
    Case::csv("a int, b text", b"1,x\n2,\"multi\n\\.\nline\"\n3,y\n").check("csv_marker_quoted");
    if server_version_num() < 180000 {
        Case::csv("a int, b text", b"1,\"m\n\\.\n\"\n\\.\n4,never\n")
            .check("csv_marker_after_quoted");
    }
}

/// COPY refuses a marker whose line end is not the input's (and in text
/// one before anything but a line end): so does the load, naming the
/// line, with `--max-errors` too, for COPY reads nothing after it.
#[test]
fn a_marker_copy_refuses_stops_the_load_at_its_line() {
    let csv_has_markers = server_version_num() < 180000;
    let mut cases = vec![
        (
            Case::text("a text", b"a\nb\n\\.\r\nc\n"),
            3,
            "newline style",
        ),
        (
            Case::text("a text", b"a\r\n\\.\r\rc\r\n"),
            2,
            "newline style",
        ),
        (Case::text("a text", b"a\r\\.\nc\r"), 2, "newline style"),
        (
            Case::text("a text", b"a\n\\.x\nc\n"),
            2,
            "end-of-copy marker",
        ),
    ];
    if csv_has_markers {
        cases.push((Case::csv("a text", b"a\n\\.\r\nc\n"), 2, "newline style"));
        cases.push((Case::csv("a text", b"a\r\\.\nc\r"), 2, "newline style"));
    } else {
        // 18 takes a text marker only on a line of its own.
        cases.push((Case::text("a text", b"a\nb\\.\nc\n"), 2, "not alone"));
    }
    for (i, (case, line, words)) in cases.into_iter().enumerate() {
        let name = format!("marker_refused_{i}");
        let error = case.check_both_refuse(&name);
        let shown = error.to_string();
        assert!(shown.contains(&format!(":{line}: ")), "{name}: {shown}");
        assert!(shown.contains(words), "{name}: {shown}");
        // Not a bad row to reject: the load stops there all the same.
        let db = pgpour_testkit::shared_cluster().create_database(&format!("{name}_all"));
        db.client()
            .batch_execute(&format!("CREATE TABLE actual ({})", case.columns_ddl))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (file, bytes) = &case.files[0];
        let path = dir.path().join(file);
        std::fs::write(&path, bytes).unwrap();
        let mut options = pgpour::LoadOptions::new(
            vec![pgpour::InputSpec::File(path)],
            pgpour::TableName::parse("actual").unwrap(),
            case.format.clone(),
        );
        options.max_errors = None;
        options.reject_file = Some(dir.path().join("rejects"));
        let failure = crate::harness::load(&db, &options).expect_err("a refused marker loaded");
        assert!(
            failure.error.to_string().contains(&format!(":{line}: ")),
            "{name}"
        );
    }
}

#[test]
fn end_of_data_markers_stop_each_input_like_copy() {
    let version = server_version_num();
    if version >= 180000 {
        // 18 reads no marker in csv, and refuses one after data in text.
        Case::text("a text, b text", b"1\tx\n2\ty\\\\.\n4\tz\n\\.\n5\tnever\n")
            .check("text_end_marker_18");
        Case::csv("a text", b"x\n\\.\ny\n").check("csv_no_end_marker_18");
        return;
    }
    // Text: `\.` before a line end ends the input, also mid-line (what comes
    // before it is the last row); an escaped backslash before a period is data.
    Case::text(
        "a text, b text",
        b"1\tx\n2\ty\\\\.\n3\tz\\.\n4\tnever\n\\.\n5\tnever\n",
    )
    .check("text_end_marker");
    // csv: a line that is exactly `\.` ends it; `\.` inside a line is data.
    Case::csv(ABC, b"a,b\\.,c\n\\.\nnever,x,y\n").check("csv_end_marker");
    Case::csv(ABC, b"a,b,c\r\n\\.\r\nnever,x,y\r\n").check("csv_end_marker_crlf");
    // Each file stops at its own marker; the next file is read.
    Case::csv(ABC, b"")
        .files(vec![
            b"1,2,3\n\\.\nnever,x,y\n".to_vec(),
            b"4,5,6\n\\.\n".to_vec(),
            b"\\.\nnever,x,y\n".to_vec(),
            b"7,8,9\n".to_vec(),
        ])
        .check("csv_end_marker_files");
}
