//! Binary COPY loads every value as COPY reads its text: each type the
//! encoder takes, at random and at its edges, under several DateStyle and
//! TimeZone settings, against COPY of the same csv. Values the encoder
//! vouches for must go binary; spellings it leaves to the server must come
//! out the same all the same.

mod values;

use pgpour::{Format, FormatOptions, InputSpec, LoadOptions, TableName, WireFormat};
use pgpour_testkit::shared_cluster;

use crate::harness::load;

fn csv_field(value: &str) -> String {
    match value.is_empty() || value.contains([',', '"', '\n', '\r']) {
        true => format!("\"{}\"", value.replace('"', "\"\"")),
        false => value.to_string(),
    }
}

fn csv_of(values: &[String]) -> Vec<u8> {
    let lines: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(id, v)| format!("{id},{}\n", csv_field(v)))
        .collect();
    lines.concat().into_bytes()
}

/// Rows whose values differ between the tables, as text (and by `=`
/// where the type has it): at most a few, for the message.
fn differences(
    client: &mut postgres::Client,
    expected: &str,
    actual: &str,
    sql: &str,
) -> Vec<String> {
    let by_value = match sql.starts_with("json") && sql != "jsonb" {
        true => String::new(),
        false => " OR e.v IS DISTINCT FROM a.v".to_string(),
    };
    let query = format!(
        "SELECT coalesce(e.id, a.id), e.v::text, a.v::text FROM {expected} e FULL JOIN {actual} a USING (id) \
         WHERE e.id IS NULL OR a.id IS NULL OR e.v::text IS DISTINCT FROM a.v::text{by_value} \
         ORDER BY 1 LIMIT 5"
    );
    client
        .query(query.as_str(), &[])
        .unwrap()
        .iter()
        .map(|r| {
            let (id, e, a): (i32, Option<String>, Option<String>) = (r.get(0), r.get(1), r.get(2));
            format!("row {id}: COPY read {e:?}, binary loaded {a:?}")
        })
        .collect()
}

fn check_under(name: &str, date_style: &str, time_zone: &str) {
    let db = shared_cluster().create_database(name);
    db.client()
        .batch_execute(&format!(
            "ALTER DATABASE \"{0}\" SET DateStyle = '{date_style}'; \
             ALTER DATABASE \"{0}\" SET TimeZone = '{time_zone}'",
            db.name
        ))
        .unwrap();
    // A new session, with the database's settings, as the load's will be.
    let mut client = db.client();
    let dir = tempfile::tempdir().unwrap();
    for (i, case) in values::cases(time_zone == "UTC").iter().enumerate() {
        for (kind, values) in [("vouched", &case.vouched), ("doubtful", &case.doubtful)] {
            if values.is_empty() {
                continue;
            }
            let (expected, actual) = (format!("expected_{kind}_{i}"), format!("actual_{kind}_{i}"));
            client
                .batch_execute(&format!(
                    "CREATE TABLE {expected} (id int, v {0}); CREATE TABLE {actual} (id int, v {0})",
                    case.sql
                ))
                .unwrap();
            let data = csv_of(values);
            let mut writer = client
                .copy_in(format!("COPY {expected} FROM STDIN WITH (FORMAT csv)").as_str())
                .unwrap();
            std::io::Write::write_all(&mut writer, &data).unwrap();
            writer
                .finish()
                .unwrap_or_else(|e| panic!("{}: COPY refused a {kind} value: {e:?}", case.sql));
            let path = dir.path().join(format!("{kind}_{i}.csv"));
            std::fs::write(&path, &data).unwrap();
            let mut options = LoadOptions::new(
                vec![InputSpec::File(path)],
                TableName::parse(&actual).unwrap(),
                FormatOptions::new(Format::Csv),
            );
            options.wire_format = WireFormat::Binary;
            options.workers = Some(2);
            // The doubtful ones a record per chunk: each goes binary or
            // not on its own.
            if kind == "doubtful" {
                options.chunk_size = 1;
            }
            let summary = load(&db, &options)
                .unwrap_or_else(|f| panic!("{} ({kind}): {}", case.sql, f.error));
            assert_eq!(summary.rows_loaded, values.len() as u64, "{}", case.sql);
            if kind == "vouched" {
                assert_eq!(
                    summary.bytes_binary, summary.bytes_loaded,
                    "{} under {date_style}, {time_zone}: every value is one the encoder takes",
                    case.sql
                );
            }
            let wrong = differences(&mut client, &expected, &actual, case.sql);
            assert!(
                wrong.is_empty(),
                "{} ({kind}) under {date_style}, {time_zone}:\n{}",
                case.sql,
                wrong.join("\n")
            );
        }
    }
}

#[test]
fn every_type_reads_the_same_in_iso_and_utc() {
    check_under("binary_iso_utc", "ISO, MDY", "UTC");
}

#[test]
fn every_type_reads_the_same_in_sql_dmy_and_new_york() {
    check_under("binary_sql_ny", "SQL, DMY", "America/New_York");
}

#[test]
fn every_type_reads_the_same_in_german_and_kolkata() {
    check_under("binary_german_kolkata", "German", "Asia/Kolkata");
}

/// A row the server refuses in a binary chunk (the encoder cannot know a
/// value is too long for its column) is found on the text path: rejected
/// with its own line and bytes, the other chunks still binary; and without
/// --max-errors the error names the file, the line and the column.
#[test]
fn a_row_refused_in_a_binary_chunk_is_placed_by_its_line() {
    let db = shared_cluster().create_database("binary_refused_row");
    let mut client = db.client();
    client
        .batch_execute("CREATE TABLE t (id int, day date, name varchar(4))")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut data = String::new();
    for id in 1..=3000 {
        let name = if id == 2500 { "toolong" } else { "ok" };
        data.push_str(&format!("{id},2024-01-{:02},\"{name}\"\n", 1 + id % 28));
    }
    let path = dir.path().join("days.csv");
    std::fs::write(&path, &data).unwrap();
    let rejects = dir.path().join("rejects.csv");
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("t").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.wire_format = WireFormat::Binary;
    options.workers = Some(2);
    options.chunk_size = 16 << 10;
    options.reject_file = Some(rejects.clone());

    let failure = load(&db, &options).unwrap_err();
    let text = failure.error.to_string();
    assert!(text.contains("days.csv:2500, column name"), "{text}");

    client.batch_execute("TRUNCATE t").unwrap();
    options.max_errors = None;
    options.replace_rejects = true;
    let summary = load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!((summary.rows_loaded, summary.rows_rejected), (2999, 1));
    assert!(summary.bytes_binary > 0 && summary.bytes_binary < summary.bytes_loaded);
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "2500,2024-01-09,\"toolong\"\n"
    );
    let log = std::fs::read_to_string(format!("{}.jsonl", rejects.display())).unwrap();
    let logged: serde_json::Value = serde_json::from_str(log.trim()).unwrap();
    assert_eq!(
        (logged["line"].as_u64(), logged["sqlstate"].as_str()),
        (Some(2500), Some("22001"))
    );
}

/// `auto` sends binary only where it pays: a table of dates always, a
/// table of a number and a string only when the strings are long (binary
/// saves the server their scan), never a table of integers; `--explain`
/// says which and why.
#[test]
fn auto_sends_binary_where_it_pays() {
    let db = shared_cluster().create_database("binary_auto");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE dates (a date, b date, c date); CREATE TABLE notes (id int, note text); \
             CREATE TABLE ints (a int, b int)",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "dates",
            "2024-01-02,2024-02-03,2024-03-04\n".repeat(2000),
            true,
        ),
        ("notes", "1,short\n".repeat(2000), false),
        (
            "notes",
            format!("2,{}\n", "long ".repeat(80)).repeat(2000),
            true,
        ),
        ("ints", "1,2\n".repeat(2000), false),
    ];
    for (i, (table, data, binary)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("{i}.csv"));
        std::fs::write(&path, data).unwrap();
        let options = LoadOptions::new(
            vec![InputSpec::File(path)],
            TableName::parse(table).unwrap(),
            FormatOptions::new(Format::Csv),
        );
        let explained = pgpour::explain(&crate::harness::connect(&db), &options).unwrap();
        let summary = load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
        let sent_binary = summary.bytes_binary == summary.bytes_loaded;
        assert_eq!(
            sent_binary, binary,
            "{table} case {i}: {}",
            explained.wire_format_why
        );
        assert!(summary.bytes_binary == 0 || sent_binary, "{table} case {i}");
        let planned = match table {
            "ints" => "text",
            _ => "binary",
        };
        assert_eq!(
            explained.wire_format, planned,
            "{}",
            explained.wire_format_why
        );
    }
}

/// Random spellings near each type's (digits, signs, points, exponents,
/// blanks, `0x`, `_`, letters...): every one the server's input function
/// takes loads through binary COPY as COPY reads it, whether the encoder
/// took it or left its chunk (a record per chunk here) to the server; every
/// one it refuses is rejected. A spelling the encoder misread would show
/// as a different value, or as a bad row loaded.
#[test]
fn random_spellings_are_encoded_right_or_left_to_the_server() {
    let db = shared_cluster().create_database("binary_spellings");
    let mut client = db.client();
    let rng = &mut values::Rng::new(7);
    // Each type: spellings it takes, and bytes to change them with.
    let types: [(&str, &[&str], &[u8]); 8] = [
        ("int4", &["12345", "-7", "+0042"], b"0123456789+- xX_"),
        ("int8", &["9223372036854775807", "-12"], b"0123456789-+_ "),
        (
            "numeric(9,3)",
            &["1234.5678", "-0.0005", ".5"],
            b"0123456789.-+eE ",
        ),
        (
            "float8",
            &["1.5e10", "-0.25", "123"],
            b"0123456789.-+eEinfINF",
        ),
        ("date", &["2024-02-29", "1999-12-31"], b"0123456789-/ ."),
        (
            "timestamptz",
            &["2024-02-29 12:34:56.5+02", "2000-01-01T00:00:00Z"],
            b"0123456789-: .T+Z",
        ),
        ("bool", &["true", "off", "Y"], b"tfyn01TFYNoOeE "),
        (
            "uuid",
            &["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
            b"0123456789abcdefABCDEF-{}",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (sql, seeds, alphabet)) in types.into_iter().enumerate() {
        let (mut all, mut taken) = (Vec::new(), Vec::new());
        for _ in 0..400 {
            // A spelling it takes, with up to three bytes changed, put in
            // or taken out.
            let mut value: Vec<u8> = seeds[rng.below(seeds.len() as u64) as usize].into();
            for _ in 0..rng.below(4) {
                let at = rng.below(value.len() as u64 + 1) as usize;
                let byte = alphabet[rng.below(alphabet.len() as u64) as usize];
                match rng.below(3) {
                    0 => value.insert(at, byte),
                    1 if at < value.len() => value[at] = byte,
                    _ if at < value.len() => drop(value.remove(at)),
                    _ => value.push(byte),
                }
            }
            let value = String::from_utf8(value).unwrap();
            // The server's input function says whether it reads it.
            if client
                .query_one(format!("SELECT $1::text::{sql}").as_str(), &[&value])
                .is_ok()
            {
                taken.push(format!("{},{}\n", all.len(), csv_field(&value)));
            }
            all.push(value);
        }
        assert!(
            taken.len() > 10,
            "{sql}: too few spellings the server reads"
        );
        let (expected, actual) = (format!("expected_{i}"), format!("actual_{i}"));
        client
            .batch_execute(&format!(
                "CREATE TABLE {expected} (id int, v {sql}); CREATE TABLE {actual} (id int, v {sql})"
            ))
            .unwrap();
        let mut writer = client
            .copy_in(format!("COPY {expected} FROM STDIN WITH (FORMAT csv)").as_str())
            .unwrap();
        std::io::Write::write_all(&mut writer, taken.concat().as_bytes()).unwrap();
        writer.finish().unwrap();
        let path = dir.path().join(format!("{i}.csv"));
        std::fs::write(&path, csv_of(&all)).unwrap();
        let mut options = LoadOptions::new(
            vec![InputSpec::File(path)],
            TableName::parse(&actual).unwrap(),
            FormatOptions::new(Format::Csv),
        );
        options.wire_format = WireFormat::Binary;
        options.chunk_size = 1;
        options.max_errors = None;
        options.reject_file = Some(dir.path().join(format!("{i}.rejected.csv")));
        let summary = load(&db, &options).unwrap_or_else(|f| panic!("{sql}: {}", f.error));
        assert_eq!(
            summary.rows_rejected,
            (all.len() - taken.len()) as u64,
            "{sql}: every spelling the server refuses is rejected"
        );
        let wrong = differences(&mut client, &expected, &actual, sql);
        assert!(wrong.is_empty(), "{sql}:\n{}", wrong.join("\n"));
    }
}

type OddCase = (&'static str, Format, Option<u8>, Option<u8>, &'static str);

/// COPY allows `-`, `.` or a digit as a delimiter or a quote: a typed value
/// read whole from the record must not run over one. Each input loads into
/// one table as text and into another as binary, with every bad row
/// rejected: the tables and the rejects must be the same.
#[test]
fn delimiters_and_quotes_that_look_like_numbers_split_as_copy_splits() {
    let db = shared_cluster().create_database("binary_odd_delimiters");
    let mut client = db.client();
    let dir = tempfile::tempdir().unwrap();
    // Columns, format, delimiter, quote, input.
    let cases: [OddCase; 7] = [
        ("a int4", Format::Text, Some(b'-'), None, "-5\n7\n"),
        ("d date", Format::Text, Some(b'-'), None, "2024-01-02\n"),
        (
            "a int4, b int4",
            Format::Text,
            Some(b'+'),
            None,
            "+5+6\n1+2\n",
        ),
        ("a int4", Format::Csv, Some(b'0'), None, "102\n3\n"),
        (
            "a numeric, b int4",
            Format::Csv,
            Some(b'.'),
            None,
            "1.5.7\n1.5\n",
        ),
        (
            "a int4, b int4",
            Format::Csv,
            None,
            Some(b'0'),
            "100,2\n3,4\n",
        ),
        (
            "a numeric, b numeric",
            Format::Csv,
            None,
            Some(b'.'),
            "1.5,3\n2,1.5\n4,5\n",
        ),
    ];
    for (i, (columns, format, delimiter, quote, data)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("{i}.txt"));
        std::fs::write(&path, data).unwrap();
        let mut loaded = Vec::new();
        for wire in [WireFormat::Text, WireFormat::Binary] {
            let table = format!("t{i}_{wire:?}").to_lowercase();
            client
                .batch_execute(&format!("CREATE TABLE {table} ({columns})"))
                .unwrap();
            let mut format_options = FormatOptions::new(format);
            format_options.delimiter = delimiter;
            format_options.quote = quote;
            let mut options = LoadOptions::new(
                vec![InputSpec::File(path.clone())],
                TableName::parse(&table).unwrap(),
                format_options,
            );
            options.wire_format = wire;
            options.max_errors = None;
            options.reject_file = Some(dir.path().join(format!("{table}.rejected")));
            let summary = load(&db, &options).unwrap_or_else(|f| panic!("{table}: {}", f.error));
            loaded.push((table, summary.rows_loaded, summary.rows_rejected));
        }
        let (text, binary) = (&loaded[0], &loaded[1]);
        assert_eq!((text.1, text.2), (binary.1, binary.2), "case {i} {data:?}");
        let (t, b) = (&text.0, &binary.0);
        let differing: i64 = client
            .query_one(
                format!(
                    "SELECT count(*) FROM ((TABLE {t} EXCEPT ALL TABLE {b}) \
                     UNION ALL (TABLE {b} EXCEPT ALL TABLE {t})) d"
                )
                .as_str(),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(differing, 0, "case {i} {data:?}: rows differ");
    }
}
