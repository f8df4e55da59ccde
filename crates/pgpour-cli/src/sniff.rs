//! `pgpour sniff`, and what `pgpour load --create` takes from it.

use anyhow::{bail, Context, Result};
use pgpour::{Format, FormatOptions, Header, Hints, InputSpec, Sniffed};

use crate::args::{FormatArg, FormatArgs, HeaderArg, SniffArgs, TypeArgs};

/// `pgpour sniff` of `inputs` (the arguments' files, globs expanded).
pub fn run(args: SniffArgs, inputs: &[InputSpec]) -> Result<()> {
    let hints = hints(&args.format, &args.types, args.skip_lines)?;
    let mut out = Vec::new();
    for input in inputs {
        let sniffed = pgpour::sniff(input, &hints)?;
        check_given(&hints, &sniffed)?;
        let table = match &args.table {
            Some(table) => sql_table(table)?,
            None => table_from_file(input),
        };
        match args.json {
            true => out.push(serde_json::json!({
                "sniffed": sniffed,
                "create_table": sniffed.create_table_sql(&table, false),
                "load": load_command(&sniffed, input, &table),
            })),
            false => crate::stdout::line(report(&sniffed, input, &table))?,
        }
    }
    for json in out {
        crate::stdout::line(json)?;
    }
    Ok(())
}

/// What the user said of the file, for the sniff.
pub fn hints(format: &FormatArgs, types: &TypeArgs, skip_lines: u64) -> Result<Hints> {
    let mut hints = Hints {
        format: format.format.map(|f| match f {
            FormatArg::Csv => Format::Csv,
            FormatArg::Text => Format::Text,
        }),
        delimiter: format.delimiter,
        quote: format.quote,
        escape: format.escape,
        null: format.null.clone(),
        header: format.header.map(|h| h != HeaderArg::None),
        skip_lines,
        ..Hints::default()
    };
    if let Some(all) = &types.create_types {
        let kind = pgpour::sniff_given_type(all)
            .with_context(|| format!("--create-types: {all:?} is not a type name"))?;
        hints.all_types = Some(kind);
    }
    for pair in split_outside_parentheses(types.types.as_deref().unwrap_or_default()) {
        let Some((column, kind)) = pair.split_once('=') else {
            bail!("--types: {pair:?} is not column=type");
        };
        let kind = pgpour::sniff_given_type(kind)
            .with_context(|| format!("--types: {kind:?} for {column} is not a type name"))?;
        let column = column.trim().to_string();
        if hints.types.iter().any(|(c, _)| *c == column) {
            bail!("--types: column {column} is given twice");
        }
        hints.types.push((column, kind));
    }
    Ok(hints)
}

/// `a=numeric(10,2),b=text` split at the commas between pairs.
fn split_outside_parentheses(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Fails when a `--types` column is none of the file's.
fn check_given(hints: &Hints, sniffed: &Sniffed) -> Result<()> {
    for (column, _) in &hints.types {
        let known = sniffed
            .columns
            .iter()
            .any(|c| c.name == *column || c.header.as_deref() == Some(column.as_str()));
        if !known {
            let names: Vec<&str> = sniffed.columns.iter().map(|c| c.name.as_str()).collect();
            bail!(
                "--types: the file has no column {column} (its columns: {})",
                names.join(", ")
            );
        }
    }
    Ok(())
}

/// `--create`: the format options with what the user left out taken from
/// the sniff of the first input, and the `CREATE TABLE` (plain, and with
/// IF NOT EXISTS).
pub fn for_create(
    given: &FormatArgs,
    types: &TypeArgs,
    inputs: &[InputSpec],
    table: &str,
    skip_lines: u64,
) -> Result<(FormatOptions, (String, String), Sniffed)> {
    let Some(first) = inputs.first().filter(|i| matches!(i, InputSpec::File(_))) else {
        bail!("--create sniffs the first input, which must be a file (not stdin)");
    };
    let hints = hints(given, types, skip_lines)?;
    let sniffed = pgpour::sniff(first, &hints)?;
    check_given(&hints, &sniffed)?;
    let d = &sniffed.dialect;
    let mut format = FormatOptions::new(match given.format {
        Some(FormatArg::Csv) => Format::Csv,
        Some(FormatArg::Text) => Format::Text,
        None => d.format,
    });
    format.delimiter = given.delimiter.or(Some(d.delimiter));
    if format.format == Format::Csv {
        format.quote = given.quote.or(Some(d.quote));
        format.escape = given.escape.or(Some(d.escape));
    }
    format.null = Some(given.null.clone().unwrap_or_else(|| sniffed.null.clone()));
    format.encoding = given
        .encoding
        .clone()
        .or_else(|| (sniffed.encoding != "UTF8").then(|| sniffed.encoding.clone()));
    // The columns are named from this very header (made identifiers):
    // `--header match` would compare it with itself, less its spelling.
    format.header = match given.header {
        Some(HeaderArg::Match | HeaderArg::Skip) => Header::Skip,
        _ if sniffed.header => Header::Skip,
        _ => Header::None,
    };
    let cols = |v: &Option<String>| v.as_deref().map(pgpour::parse_column_list).transpose();
    format.force_null = cols(&given.force_null)?.unwrap_or_default();
    format.force_not_null = match cols(&given.force_not_null)? {
        Some(given) => given,
        None if given.null.is_none() => sniffed.marker_is_text_in.clone(),
        None => Vec::new(),
    };
    format.validate()?;
    let create = (
        sniffed.create_table_sql(table, false),
        sniffed.create_table_sql(table, true),
    );
    Ok((format, create, sniffed))
}

/// `--table` as SQL writes it: each part bare where it can be.
fn sql_table(text: &str) -> Result<String> {
    let table = pgpour::TableName::parse(text)?;
    let name = pgpour::sql_name(&table.name);
    Ok(match &table.schema {
        Some(schema) => format!("{}.{name}", pgpour::sql_name(schema)),
        None => name,
    })
}

/// A table name from the file's: its stem, made an identifier.
fn table_from_file(input: &InputSpec) -> String {
    let name = match input {
        InputSpec::File(path) => path.file_name().map(|n| n.to_string_lossy().into_owned()),
        InputSpec::Stdin => None,
    };
    let name = name.unwrap_or_else(|| "stdin".into());
    let stem = pgpour::without_compression_suffix(&name);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
    let simple: String = stem
        .chars()
        .map(|c| match c.is_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '_',
        })
        .collect();
    let mut simple = simple.trim_matches('_').to_string();
    while simple.len() > 63 {
        simple.pop();
    }
    match simple.is_empty() {
        true => "sniffed".into(),
        false => pgpour::sql_name(&simple),
    }
}

/// The command that loads the file as sniffed.
fn load_command(sniffed: &Sniffed, input: &InputSpec, table: &str) -> String {
    let file = match input {
        InputSpec::File(path) => shell_word(&path.display().to_string()),
        InputSpec::Stdin => "-".into(),
    };
    let mut words = vec![
        "pgpour load".to_string(),
        file,
        "--table".into(),
        shell_word(table),
    ];
    words.extend(sniffed.load_options());
    words.join(" ")
}

fn shell_word(word: &str) -> String {
    // A name that starts with `-` would be read as an option.
    if word.starts_with('-') {
        return shell_word(&format!("./{word}"));
    }
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    match plain {
        true => word.to_string(),
        false => format!("'{}'", word.replace('\'', "'\\''")),
    }
}

/// The human report.
fn report(s: &Sniffed, input: &InputSpec, table: &str) -> String {
    let d = &s.dialect;
    let sampled = match s.whole {
        true => format!("read whole, {} records", s.records_sampled),
        false => format!(
            "{} bytes sampled, {} records",
            s.bytes_sampled, s.records_sampled
        ),
    };
    let char_name = |b: u8| match b {
        b'\t' => "tab".to_string(),
        _ => format!("'{}'", char::from(b)),
    };
    let quoting = match d.format {
        Format::Csv => format!(
            ", quote {}, escape {}",
            char_name(d.quote),
            char_name(d.escape)
        ),
        Format::Text => String::new(),
    };
    let eol = match d.line_ending {
        "\r\n" => "CRLF",
        "\r" => "CR",
        _ => "LF",
    };
    let mut lines = vec![
        format!("pgpour: sniffed {} ({sampled})", s.file),
        format!(
            "  encoding {} ({}){}",
            s.encoding,
            s.encoding_evidence,
            if s.byte_order_mark {
                ", after a byte order mark"
            } else {
                ""
            }
        ),
        format!(
            "  dialect  {}, delimiter {}{quoting}, line ending {eol} ({})",
            match d.format {
                Format::Csv => "csv",
                Format::Text => "text",
            },
            char_name(d.delimiter),
            s.dialect_evidence
        ),
        format!(
            "  header   {} ({})",
            if s.header { "yes" } else { "no" },
            s.header_evidence
        ),
        format!("  null     {:?} ({})", s.null, s.null_evidence),
    ];
    if !s.marker_is_text_in.is_empty() {
        lines.push(format!(
            "           but a value beside other text in {} (--force-not-null)",
            s.marker_is_text_in.join(", ")
        ));
    }
    if s.ragged_records > 0 {
        lines.push(format!(
            "  ragged   {} records have another field count: bad rows (the load stops at the \
             first, or rejects them with --max-errors)",
            s.ragged_records
        ));
    }
    lines.push("  columns".into());
    let width = s.columns.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &s.columns {
        let from = match (&c.header, c.given) {
            (_, true) => " (given)".to_string(),
            (Some(h), false) if *h != c.name => format!(" (header {h:?})"),
            _ => String::new(),
        };
        lines.push(format!(
            "    {:width$}  {:16} {} values, {} nulls; e.g. {}{from}",
            c.name,
            c.sql_type,
            c.values,
            c.nulls,
            c.sample
                .iter()
                .map(|v| format!("{v:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    lines.push(format!("{};", s.create_table_sql(table, false)));
    lines.push(load_command(s, input, table));
    lines.join("\n")
}
