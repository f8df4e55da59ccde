//! The `pgpour load` command line that a load's recorded options stand
//! for, for `pgpour status ID`: what a new run of the same load id is
//! compared against, in the words the user typed.

use pgpour::{Format, Header, InputSpec, LoadOptions, TableName};

/// Inputs shown by name; more are counted (a glob may have given
/// thousands).
const INPUTS_SHOWN: usize = 5;

/// `pgpour load in.csv --table public.votes --format csv ...`: every
/// option that differs from the default, with the format, which a load
/// decides from the file names, spelled out.
pub fn command_line(options: &LoadOptions) -> String {
    let mut words = vec!["pgpour".to_string(), "load".to_string()];
    for input in options.inputs.iter().take(INPUTS_SHOWN) {
        words.push(match input {
            InputSpec::Stdin => "-".to_string(),
            InputSpec::File(path) => word(&path.display().to_string()),
        });
    }
    if options.inputs.len() > INPUTS_SHOWN {
        words.push(format!(
            "... ({} more files)",
            options.inputs.len() - INPUTS_SHOWN
        ));
    }
    let mut flag = |name: &str, value: Option<String>| {
        words.push(format!("--{name}"));
        words.extend(value.map(|v| word(&v)));
    };
    flag("table", Some(table(&options.table)));
    if let Some(columns) = &options.columns {
        flag("columns", Some(column_list(columns)));
    }
    format_flags(options, &mut flag);
    if let Some(workers) = options.workers {
        flag("workers", Some(workers.to_string()));
    }
    if options.truncate {
        flag("truncate", None);
    }
    match options.max_errors {
        Some(0) => {}
        Some(n) => flag("max-errors", Some(n.to_string())),
        None => flag("max-errors", Some("all".to_string())),
    }
    if let Some(path) = &options.reject_file {
        flag("reject-file", Some(path.display().to_string()));
    }
    if options.chunk_size != pgpour::DEFAULT_CHUNK_SIZE {
        flag("chunk-size", Some(size(options.chunk_size)));
    }
    if options.max_record_size != pgpour::MAX_RECORD_BYTES {
        flag("max-record-size", Some(size(options.max_record_size)));
    }
    let switches = [
        ("replace-rejects", options.replace_rejects),
        ("atomic", options.atomic),
        ("no-journal", !options.journal),
        ("keep-indexes", options.keep_indexes),
        ("keep-sequences", options.keep_sequences),
        ("keep-foreign-keys", options.keep_foreign_keys),
    ];
    for (name, on) in switches {
        if on {
            flag(name, None);
        }
    }
    match options.wire_format {
        pgpour::WireFormat::Auto => {}
        pgpour::WireFormat::Text => flag("wire-format", Some("text".into())),
        pgpour::WireFormat::Binary => flag("wire-format", Some("binary".into())),
    }
    if let Some(id) = &options.load_id {
        flag("load-id", Some(id.clone()));
    }
    words.join(" ")
}

fn format_flags(options: &LoadOptions, flag: &mut impl FnMut(&str, Option<String>)) {
    let format = &options.format;
    let format_name = match format.format {
        Format::Csv => "csv",
        Format::Text => "text",
    };
    flag("format", Some(format_name.to_string()));
    let byte = |b: u8| match b {
        b'\t' => "\\t".to_string(),
        b => char::from(b).to_string(),
    };
    if let Some(b) = format.delimiter {
        flag("delimiter", Some(byte(b)));
    }
    if let Some(null) = &format.null {
        flag("null", Some(null.clone()));
    }
    if let Some(b) = format.quote {
        flag("quote", Some(byte(b)));
    }
    if let Some(b) = format.escape {
        flag("escape", Some(byte(b)));
    }
    match format.header {
        Header::None => {}
        Header::Skip => flag("header", None),
        Header::Match => flag("header", Some("match".to_string())),
    }
    if let Some(encoding) = &format.encoding {
        flag("encoding", Some(encoding.clone()));
    }
    if !format.force_null.is_empty() {
        flag("force-null", Some(column_list(&format.force_null)));
    }
    if !format.force_not_null.is_empty() {
        flag("force-not-null", Some(column_list(&format.force_not_null)));
    }
}

/// `public.votes`, with double quotes only where SQL needs them.
fn table(name: &TableName) -> String {
    let mut parts: Vec<String> = name.schema.iter().map(|s| identifier(s)).collect();
    parts.push(identifier(&name.name));
    parts.join(".")
}

fn column_list(columns: &[String]) -> String {
    let names: Vec<String> = columns.iter().map(|c| identifier(c)).collect();
    names.join(",")
}

/// A name as typed: bare when it reads back as itself unquoted (lower
/// case letters, digits, `_`, `$`), else in double quotes.
fn identifier(name: &str) -> String {
    let bare = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if bare {
        name.to_string()
    } else {
        pgpour::quote_ident(name)
    }
}

/// A size as `--chunk-size` takes it: in the largest unit that divides it.
fn size(bytes: usize) -> String {
    let units = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    units
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(
            || bytes.to_string(),
            |(unit, name)| format!("{}{name}", bytes / unit),
        )
}

/// A word for a POSIX shell: as it is when the shell leaves it so, else
/// in single quotes.
pub fn word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgpour::FormatOptions;

    #[test]
    fn options_read_back_as_the_command_that_gives_them() {
        let mut format = FormatOptions::new(Format::Csv);
        format.delimiter = Some(b'\t');
        format.null = Some(String::new());
        format.header = Header::Match;
        let mut options = LoadOptions::new(
            vec![InputSpec::File("my votes.csv.gz".into()), InputSpec::Stdin],
            TableName::parse("Public.\"Votes\"").expect("a table name"),
            format,
        );
        options.columns = Some(vec!["user name".into(), "score".into()]);
        options.max_errors = None;
        options.chunk_size = 8 << 20;
        options.atomic = true;
        options.load_id = Some("nightly".into());
        assert_eq!(
            command_line(&options),
            "pgpour load 'my votes.csv.gz' - --table 'public.\"Votes\"' \
             --columns '\"user name\",score' --format csv --delimiter '\\t' --null '' \
             --header match --max-errors all --chunk-size 8MiB --atomic --load-id nightly"
        );
    }

    #[test]
    fn many_inputs_are_counted() {
        let inputs = (0..7)
            .map(|i| InputSpec::File(format!("part-{i}.csv").into()))
            .collect();
        let options = LoadOptions::new(
            inputs,
            TableName::parse("t").expect("a table name"),
            FormatOptions::new(Format::Csv),
        );
        let line = command_line(&options);
        assert!(
            line.starts_with("pgpour load part-0.csv part-1.csv part-2.csv part-3.csv part-4.csv ... (2 more files) --table t --format csv"),
            "{line}"
        );
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(word("a/b-c.csv"), "a/b-c.csv");
        assert_eq!(word("it's"), "'it'\\''s'");
        assert_eq!(word(""), "''");
        assert_eq!(word("*.csv"), "'*.csv'");
    }
}
