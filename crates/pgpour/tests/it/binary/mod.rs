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
