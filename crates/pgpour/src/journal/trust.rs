//! Whether the journal may be trusted.
//!
//! pgpour often runs as a superuser or the table's owner, and it runs its
//! journal's statements with those rights. A journal that another role
//! made, or could change, would run that role's code with them (a trigger
//! on a journal table, a rule, a row security policy), and would show that
//! role the rejected rows it stores. So before any use, pgpour checks that
//! the `pgpour` schema and each of its tables belong to the current role or
//! to a superuser, and that no trigger, rule or policy was added to them:
//! pgpour creates none.

use postgres::GenericClient;

use crate::error::{Error, Result};

/// What is wrong with the journal: a row (kind, object, detail) per problem.
/// Only operators that pg_catalog has for these exact types, no
/// concatenation: an operator another role defines for a signature that
/// pg_catalog lacks (`name || name`) would otherwise run with our rights.
/// The messages are put together in Rust, not in SQL.
pub(super) const PROBLEMS_SQL: &str =
    "WITH ns AS (SELECT oid, nspowner, nspacl FROM pg_catalog.pg_namespace \
                 WHERE nspname = 'pgpour'::pg_catalog.name), \
          trusted AS (SELECT oid FROM pg_catalog.pg_roles \
                      WHERE rolname = current_user OR rolsuper), \
          rels AS (SELECT c.oid, c.relname, c.relowner, c.relrowsecurity, c.relacl \
                   FROM pg_catalog.pg_class c JOIN ns ON c.relnamespace = ns.oid) \
     SELECT 'owner', 'schema pgpour', pg_catalog.pg_get_userbyid(nspowner)::text FROM ns \
       WHERE nspowner NOT IN (SELECT oid FROM trusted) \
     UNION ALL SELECT 'grant', 'schema pgpour', \
         coalesce(pg_catalog.pg_get_userbyid(a.grantee)::text, 'PUBLIC') \
       FROM ns, pg_catalog.aclexplode(ns.nspacl) a \
       WHERE a.grantee NOT IN (SELECT oid FROM trusted) \
     UNION ALL SELECT 'owner', relname::text, pg_catalog.pg_get_userbyid(relowner)::text FROM rels \
       WHERE relowner NOT IN (SELECT oid FROM trusted) \
     UNION ALL SELECT 'grant', r.relname::text, \
         coalesce(pg_catalog.pg_get_userbyid(a.grantee)::text, 'PUBLIC') \
       FROM rels r, pg_catalog.aclexplode(r.relacl) a \
       WHERE a.grantee NOT IN (SELECT oid FROM trusted) \
     UNION ALL SELECT 'trigger', r.relname::text, t.tgname::text \
       FROM pg_catalog.pg_trigger t JOIN rels r ON t.tgrelid = r.oid WHERE NOT t.tgisinternal \
     UNION ALL SELECT 'rule', r.relname::text, w.rulename::text \
       FROM pg_catalog.pg_rewrite w JOIN rels r ON w.ev_class = r.oid \
     UNION ALL SELECT 'policy', r.relname::text, p.polname::text \
       FROM pg_catalog.pg_policy p JOIN rels r ON p.polrelid = r.oid \
     UNION ALL SELECT 'row security', relname::text, '' FROM rels WHERE relrowsecurity";

/// A statement that fails (division by zero, SQLSTATE 22012) when the
/// journal has a problem, and does nothing otherwise: put before
/// statements that read the journal in the same message, it keeps them
/// from running on one that may not be trusted. The failure's cause is
/// then found by `check_journal`.
pub(super) fn guard_sql() -> String {
    format!(
        "WITH problems AS ({PROBLEMS_SQL}) \
         SELECT 1 OPERATOR(pg_catalog./) \
           (CASE WHEN EXISTS (SELECT FROM problems) THEN 0 ELSE 1 END)"
    )
}

/// What is wrong with the journal, if anything: the check that precedes
/// every use of it.
pub(crate) fn check_journal(client: &mut impl GenericClient) -> Result<()> {
    let rows = client
        .query_typed(PROBLEMS_SQL, &[])
        .map_err(Error::db("checking the pgpour journal"))?;
    let problems: Vec<String> = rows
        .iter()
        .map(|r| {
            let (kind, object, detail): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            let object = match object.as_str() {
                "schema pgpour" => object,
                table => format!("pgpour.{table}"),
            };
            match kind.as_str() {
                "owner" => format!("{object} is owned by {detail}"),
                "grant" => format!("{object} grants rights to {detail}"),
                "row security" => format!("{object} has row security enabled"),
                other => format!("{object} has a {other} {detail}"),
            }
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::JournalUntrusted { problems })
}
