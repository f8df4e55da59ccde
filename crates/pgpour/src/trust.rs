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

/// What is wrong with the journal, if anything: the check that precedes
/// every use of it.
pub(crate) fn check_journal(client: &mut impl GenericClient) -> Result<()> {
    let rows = client
        .query(
            "WITH ns AS (SELECT oid, nspowner FROM pg_catalog.pg_namespace WHERE nspname = 'pgpour'), \
                  trusted AS (SELECT oid FROM pg_catalog.pg_roles \
                              WHERE rolname = current_user OR rolsuper), \
                  rels AS (SELECT c.oid, c.relname, c.relowner, c.relrowsecurity FROM pg_catalog.pg_class c \
                           JOIN ns ON c.relnamespace = ns.oid) \
             SELECT 'schema pgpour is owned by ' || pg_catalog.pg_get_userbyid(nspowner) FROM ns \
               WHERE nspowner NOT IN (SELECT oid FROM trusted) \
             UNION ALL SELECT 'pgpour.' || relname || ' is owned by ' || pg_catalog.pg_get_userbyid(relowner) \
               FROM rels WHERE relowner NOT IN (SELECT oid FROM trusted) \
             UNION ALL SELECT 'pgpour.' || r.relname || ' has a trigger ' || t.tgname \
               FROM pg_catalog.pg_trigger t JOIN rels r ON t.tgrelid = r.oid WHERE NOT t.tgisinternal \
             UNION ALL SELECT 'pgpour.' || r.relname || ' has a rule ' || w.rulename \
               FROM pg_catalog.pg_rewrite w JOIN rels r ON w.ev_class = r.oid \
             UNION ALL SELECT 'pgpour.' || r.relname || ' has a row security policy ' || p.polname \
               FROM pg_catalog.pg_policy p JOIN rels r ON p.polrelid = r.oid \
             UNION ALL SELECT 'pgpour.' || relname || ' has row security enabled' \
               FROM rels WHERE relrowsecurity",
            &[],
        )
        .map_err(Error::db("checking the pgpour journal"))?;
    let problems: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Config(format!(
        "the pgpour journal in this database cannot be trusted: {}. pgpour runs the journal's \
         statements with this role's rights, so a journal that another role made or changed \
         could run that role's code with them. Load with --no-journal, or have a superuser \
         check the schema and drop it (DROP SCHEMA pgpour CASCADE: the record of past loads \
         goes with it) or give it and its tables to a trusted role without other triggers, \
         rules or policies",
        problems.join("; ")
    )))
}
