//! The differential tests' verdict: the table pgpour loaded (`actual`) and
//! the one PostgreSQL's own COPY loaded (`expected`) hold the same rows.

/// The two tables hold the same multiset of rows (on the loaded columns, so
/// serial keys, which depend on load order, are left out).
pub fn assert_same_rows(client: &mut postgres::Client, name: &str, columns: Option<&[String]>) {
    let cols = match columns {
        Some(cols) => cols
            .iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", "),
        None => "t.*".to_string(),
    };
    let diff: Vec<(String, String)> = client
        .query(
            &format!(
                "(SELECT 'only pgpour', ROW({cols})::text FROM actual t EXCEPT ALL SELECT 'only pgpour', ROW({cols})::text FROM expected t) \
                 UNION ALL \
                 (SELECT 'only COPY', ROW({cols})::text FROM expected t EXCEPT ALL SELECT 'only COPY', ROW({cols})::text FROM actual t) LIMIT 10"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(diff.is_empty(), "{name}: tables differ: {diff:?}");
    let count = |t: &str, c: &mut postgres::Client| -> i64 {
        c.query_one(&format!("SELECT count(*) FROM {t}"), &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(
        count("actual", client),
        count("expected", client),
        "{name}: row counts"
    );
}

/// `a"b` as `"a""b"`: the test kit quotes for itself, as it cannot depend
/// on the engine it tests.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
