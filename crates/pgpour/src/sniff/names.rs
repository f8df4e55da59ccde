//! Column names people can type, made from a header's words: lower case,
//! runs of anything but letters and digits made one underscore, unique, and
//! quoted only where SQL needs it (a keyword, a leading digit).

/// Keywords PostgreSQL reserves (as column names they need quotes).
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "system_user",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
    // Not reserved, but no column name either without quotes.
    "authorization",
    "binary",
    "collation",
    "concurrently",
    "cross",
    "current_schema",
    "freeze",
    "full",
    "ilike",
    "inner",
    "is",
    "isnull",
    "join",
    "left",
    "like",
    "natural",
    "notnull",
    "outer",
    "overlaps",
    "right",
    "similar",
    "tablesample",
    "verbose",
];

/// The system columns every table has: a column of the same name is
/// refused, quoted or not.
const SYSTEM_COLUMNS: &[&str] = &["tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"];

/// The column names for `header` (`None`: no header, `column_1`...), as
/// identifiers, unique.
pub(crate) fn column_names(header: Option<&[String]>, columns: usize) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(columns);
    let mut taken = std::collections::HashSet::new();
    for i in 0..columns {
        let word = header.and_then(|h| h.get(i)).map(|w| simplified(w));
        let base = match word {
            Some(w) if SYSTEM_COLUMNS.contains(&w.as_str()) => format!("{w}_"),
            Some(w) if !w.is_empty() => w,
            _ => format!("column_{}", i + 1),
        };
        let mut name = base.clone();
        let mut n = 2;
        while taken.contains(&name) {
            // The server cuts names at 63 bytes: the number must fit.
            let suffix = format!("_{n}");
            let mut cut = base.clone();
            while cut.len() + suffix.len() > 63 {
                cut.pop();
            }
            name = format!("{cut}{suffix}");
            n += 1;
        }
        taken.insert(name.clone());
        names.push(name);
    }
    names
}

/// Lower case; every run of other characters than letters and digits one
/// underscore; none at the ends; at most 63 bytes (PostgreSQL's limit).
fn simplified(word: &str) -> String {
    let mut out = String::new();
    for c in word.trim_start_matches('\u{feff}').chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let mut out = out.trim_matches('_').to_string();
    while out.len() > 63 {
        out.pop();
    }
    out
}

/// A table as SQL writes it in the `CREATE TABLE` a sniff prints: each
/// part bare where it can be.
pub fn table_sql(table: &crate::sql::TableName) -> String {
    let name = sql_name(&table.name);
    match &table.schema {
        Some(schema) => format!("{}.{name}", sql_name(schema)),
        None => name,
    }
}

/// A table name from an input's file name: its stem, made an identifier
/// (`Sales 2024.csv.gz` gives `sales_2024`); `stdin` for stdin.
pub fn table_from_file(input: &crate::source::input::InputSpec) -> String {
    use crate::source::input::InputSpec;
    let name = match input {
        InputSpec::File(path) => path.file_name().map(|n| n.to_string_lossy().into_owned()),
        InputSpec::Stdin => None,
    };
    let name = name.unwrap_or_else(|| "stdin".into());
    let stem = crate::source::input::without_compression_suffix(&name);
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
        false => sql_name(&simple),
    }
}

/// `name` as SQL writes it: bare when it can be, else in double quotes.
pub fn sql_name(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c == '_' || (c.is_alphabetic() && !c.is_uppercase()))
        && name
            .chars()
            .all(|c| c == '_' || c.is_ascii_digit() || (c.is_alphanumeric() && !c.is_uppercase()))
        && !RESERVED.contains(&name);
    match bare {
        true => name.to_string(),
        false => crate::sql::quote_ident(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_words_become_names_people_can_type() {
        let header: Vec<String> = [
            "First Name",
            "ID",
            "first name",
            "",
            "2024 total",
            "Order",
            "Ünïcode €",
        ]
        .map(String::from)
        .to_vec();
        let names = column_names(Some(&header), 8);
        assert_eq!(
            names,
            [
                "first_name",
                "id",
                "first_name_2",
                "column_4",
                "2024_total",
                "order",
                "ünïcode",
                "column_8"
            ]
        );
        let sql: Vec<String> = names.iter().map(|n| sql_name(n)).collect();
        assert_eq!(sql[4], "\"2024_total\"");
        assert_eq!(sql[5], "\"order\"");
        assert_eq!(sql[6], "ünïcode");
        assert_eq!(column_names(None, 2), ["column_1", "column_2"]);
    }
}
