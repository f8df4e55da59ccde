//! Names to suggest when the table a load names does not exist: one that
//! differs only in case (unquoted names fold to lower case), and the
//! closest names by spelling where the name would be looked for.

use postgres::types::Type;
use postgres::Client;

use crate::sql::TableName;

/// A table whose name differs from `table` only in case, quoted as it
/// must be typed.
pub(crate) fn differing_in_case(client: &mut Client, table: &TableName) -> Option<String> {
    client
        .query_typed_opt(
            // Runs under the user's search path: every call names pg_catalog.
            "SELECT pg_catalog.quote_ident(n.nspname::text) || '.' || pg_catalog.quote_ident(c.relname::text) \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE pg_catalog.lower(c.relname::text) = pg_catalog.lower($1::text) AND c.relkind IN ('r', 'p', 'f') \
             AND ($2::text IS NULL OR pg_catalog.lower(n.nspname::text) = pg_catalog.lower($2::text)) LIMIT 1",
            &[(&table.name, Type::TEXT), (&table.schema, Type::TEXT)],
        )
        .ok()
        .flatten()
        .map(|r| r.get(0))
}

/// Up to three tables spelled closest to `table`, in its schema or, for a
/// bare name, in `search_path` (the user's schemas): as they would be
/// typed (a bare name for the search path, quoted where it must be). Only
/// names a typo away: at most a third of the name's letters differ (at
/// least one may).
pub(crate) fn closest(
    client: &mut Client,
    table: &TableName,
    search_path: &[String],
) -> Vec<String> {
    let schemas: Vec<String> = match &table.schema {
        Some(schema) => vec![schema.clone()],
        None => search_path.to_vec(),
    };
    let rows = client.query_typed(
        // The server quotes as it reads: only where a name needs it
        // (capitals, spaces, key words).
        "SELECT c.relname::text, pg_catalog.quote_ident(n.nspname::text) || '.' || \
           pg_catalog.quote_ident(c.relname::text), pg_catalog.quote_ident(c.relname::text) \
         FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p', 'f') \
         AND n.nspname::text OPERATOR(pg_catalog.=) ANY ($1::text[]) LIMIT 10000",
        &[(&schemas, Type::TEXT_ARRAY)],
    );
    let rows = rows.unwrap_or_default();
    let wanted = table.name.to_lowercase();
    let allowed = (wanted.chars().count() / 3).max(1);
    let mut close: Vec<(usize, String)> = rows
        .iter()
        .filter_map(|row| {
            let name: String = row.get(0);
            let distance = strsim::damerau_levenshtein(&wanted, &name.to_lowercase());
            let typed: String = match table.schema {
                Some(_) => row.get(1),
                None => row.get(2),
            };
            (distance > 0 && distance <= allowed).then_some((distance, typed))
        })
        .collect();
    close.sort();
    close.into_iter().take(3).map(|(_, typed)| typed).collect()
}
