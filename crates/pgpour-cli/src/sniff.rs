//! `pgpour sniff`: what a file is, and the commands that would load it.
//! (What `pgpour load --create` takes from a sniff is the engine's
//! `LoadRequest`.)

use anyhow::Result;
use pgpour::{Format, InputSpec, Sniffed};

use crate::args::SniffArgs;
use crate::config::{format_request, type_request};

/// `pgpour sniff` of `inputs` (the arguments' files, globs expanded).
pub fn run(args: SniffArgs, inputs: &[InputSpec]) -> Result<()> {
    let format = format_request(&args.format)?;
    let types = type_request(&args.types)?;
    let mut out = Vec::new();
    for input in inputs {
        let sniffed = format.sniff(input, &types, args.skip_lines)?;
        let table = match &args.table {
            Some(table) => pgpour::sniffed_table_sql(&pgpour::TableName::parse(table)?),
            None => pgpour::sniffed_table_name(input),
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
