//! What the index and sequence plans read of the target, in one statement:
//! across a network every statement is a round trip, and the plans need
//! the table's kind and owner, whether it is empty, the columns a sequence
//! fills and the indexes with all that decides whether each may go.
//!
//! The statement returns one JSON document, so that it can also run inside
//! a message of several statements (a simple query, whose values come back
//! as text). It follows a lock on the table that COPY takes anyway (ROW
//! EXCLUSIVE, which the right to insert allows): another session's CREATE
//! or DROP INDEX then cannot commit while the indexes are read. Without it
//! an index dropped mid-read gave a NULL definition or "cache lookup
//! failed", and the load failed.

use postgres::GenericClient;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::sql::{quote_literal, TextRow};
use crate::table::plan::Target;

/// The target as the plans see it.
#[derive(Debug, Deserialize)]
pub(crate) struct TableFacts {
    /// A partitioned table or a partition.
    pub partitioned: bool,
    /// The table has triggers of its users (which may change a row).
    #[serde(default)]
    pub triggers: bool,
    /// The role may create temporary tables (where duplicates are found).
    #[serde(default)]
    pub temporary: bool,
    /// A publication has the table (its deletes need a replica identity).
    #[serde(default)]
    pub published: bool,
    /// The current role may act as the table's owner.
    pub owned: bool,
    /// The role may create in the table's schema, which rebuilding an
    /// index asks of it as creating one does (a table's owner without it
    /// could drop its indexes, and not make them again).
    #[serde(default)]
    pub schema_create: bool,
    /// Whether the table has no row, when it was asked (see `facts_sql`).
    #[serde(default)]
    pub empty: Option<bool>,
    /// Columns the load does not fill that a sequence does.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub sequences: Vec<SequenceColumn>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub indexes: Vec<IndexFacts>,
    /// The table's own foreign keys (not those pointing at it).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub foreign_keys: Vec<ForeignKeyFacts>,
}

/// One foreign key of the target, and what decides whether it may be taken
/// off for the load.
#[derive(Debug, Deserialize)]
pub(crate) struct ForeignKeyFacts {
    pub name: String,
    /// `schema.table` of the target, quoted as needed.
    pub table_name: String,
    /// Its `pg_get_constraintdef`.
    pub definition: String,
    pub valid: bool,
    pub deferrable: bool,
    pub commented: bool,
    /// The role may add it back (REFERENCES on the table it points at).
    pub references_allowed: bool,
    /// `schema.table` it references, quoted as needed, and its oid.
    pub parent: String,
    pub parent_oid: u32,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub columns: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub parent_columns: Vec<String>,
    /// Each pair's equality operator (`OPERATOR(pg_catalog.=)`).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub equals: Vec<String>,
    pub match_full: bool,
}

/// A column the load leaves to a sequence (serial or identity).
#[derive(Debug, Deserialize)]
pub(crate) struct SequenceColumn {
    /// `schema.sequence`, quoted as needed.
    pub sequence: String,
    pub oid: u32,
    pub cache: i64,
    /// The current role may act as the sequence's owner.
    pub owned: bool,
}

/// One index of the target, and what decides whether it may be rebuilt.
#[derive(Debug, Deserialize)]
pub(crate) struct IndexFacts {
    pub name: String,
    /// `schema.index`, quoted as needed.
    pub qualified: String,
    pub table_oid: u32,
    pub table_name: String,
    /// The constraint it backs (primary key, unique, exclusion), if any.
    pub conname: Option<String>,
    pub contype: Option<String>,
    pub indexdef: String,
    pub condef: Option<String>,
    pub is_unique: bool,
    pub valid: bool,
    pub clustered: bool,
    pub replident: bool,
    pub own_tablespace: bool,
    pub commented: bool,
    /// A foreign key references it.
    pub referenced: bool,
    /// Every key column is filled by a sequence that does not cycle.
    pub keys_from_sequence: bool,
    /// Its key columns by name, when each is a plain column (no
    /// expression).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub key_columns: Vec<String>,
    /// A key whose duplicates a GROUP BY on its columns finds exactly: a
    /// btree on plain columns, each with its type's default operator
    /// class (or a built-in one its type is read as, varchar's text_ops)
    /// and its column's collation, no predicate, NULLs distinct.
    pub plain_key: bool,
    /// Each key column's equality operator, from its operator class,
    /// schema-qualified: `OPERATOR(pg_catalog.=)`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub key_equals: Vec<String>,
}

fn null_as_empty<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// The statements that read the facts of `target` (the last one gives
/// them), in one message, for a session whose search path is pinned to
/// pg_catalog. Only with `emptiness` does it read
/// the table itself (a scan of one row): the catalog alone says whether
/// the load may drop anything, and the table may be another role's, which
/// the load may write to and not read (its row security would run with the
/// load's rights); so the plans ask only once it is known to be the
/// current role's, and would lose indexes if empty.
pub(crate) fn facts_sql(target: &Target, emptiness: bool) -> String {
    let empty = match emptiness {
        true => format!("NOT EXISTS (SELECT 1 FROM {})", target.qualified),
        false => "NULL::bool".to_string(),
    };
    let table = quote_literal(&target.qualified);
    let loaded: Vec<String> = target.columns.iter().map(|c| quote_literal(c)).collect();
    let loaded = format!("ARRAY[{}]::text[]", loaded.join(", "));
    format!(
        "LOCK TABLE {qualified} IN ROW EXCLUSIVE MODE;
         WITH sequences AS (
           SELECT a.attname::text AS column_name, format('%I.%I', n.nspname, c.relname) AS sequence,
                  s.seq::oid::int8 AS oid,
                  ps.seqcycle AS cycles, ps.seqcache AS cache,
                  pg_has_role(c.relowner, 'USAGE') AS owned
           FROM pg_attribute a
           LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
           CROSS JOIN LATERAL (SELECT pg_get_serial_sequence({table}, a.attname)::regclass AS seq) s
           JOIN pg_sequence ps ON ps.seqrelid = s.seq
           JOIN pg_class c ON c.oid = s.seq
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE a.attrelid = {oid} AND a.attnum > 0 AND NOT a.attisdropped
             AND NOT a.attname::text = ANY ({loaded})
             AND (a.attidentity <> ''
                  OR (pg_get_expr(d.adbin, d.adrelid) ~ '^nextval\\(''[^'']*''::regclass\\)$'
                      AND EXISTS (SELECT 1 FROM pg_depend dep
                                  WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
                                    AND dep.refobjid = s.seq)))
           ORDER BY a.attnum),
         indexes AS (
           SELECT ic.relname::text AS name,
                  format('%I.%I', n.nspname, ic.relname) AS qualified,
                  i.indrelid::int8 AS table_oid,
                  (SELECT format('%I.%I', tn.nspname, tc.relname) FROM pg_class tc
                     JOIN pg_namespace tn ON tn.oid = tc.relnamespace WHERE tc.oid = i.indrelid) AS table_name,
                  con.conname::text AS conname, con.contype::text AS contype,
                  pg_get_indexdef(i.indexrelid) AS indexdef,
                  CASE WHEN con.oid IS NOT NULL THEN pg_get_constraintdef(con.oid) END AS condef,
                  i.indisunique AS is_unique, i.indisvalid AS valid,
                  i.indisclustered AS clustered, i.indisreplident AS replident,
                  ic.reltablespace <> 0 AS own_tablespace,
                  obj_description(i.indexrelid, 'pg_class') IS NOT NULL
                    OR (con.oid IS NOT NULL AND obj_description(con.oid, 'pg_constraint') IS NOT NULL) AS commented,
                  EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = i.indexrelid) AS referenced,
                  (SELECT coalesce(bool_and(a.attname::text = ANY (
                            ARRAY(SELECT column_name FROM sequences WHERE NOT cycles))), false)
                     FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                     LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                    WHERE k.n <= i.indnkeyatts) AS keys_from_sequence,
                  (SELECT array_agg(a.attname::text ORDER BY k.n)
                     FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                    WHERE k.n <= i.indnkeyatts) AS key_columns,
                  (ic.relam = (SELECT oid FROM pg_am WHERE amname = 'btree')
                   AND i.indexprs IS NULL AND i.indpred IS NULL
                   AND NOT coalesce((to_jsonb(i) ->> 'indnullsnotdistinct')::bool, false)
                   AND (SELECT bool_and(k.attnum > 0 AND opc.opcdefault AND coll.coll = a.attcollation
                                        AND (opc.opcintype = coalesce(nullif(ty.typbasetype, 0), a.atttypid)
                                             OR (opc.opcintype < 16384
                                                 AND NOT EXISTS (SELECT 1 FROM pg_opclass o2
                                                                 WHERE o2.opcmethod = opc.opcmethod AND o2.opcdefault
                                                                   AND o2.opcintype = coalesce(nullif(ty.typbasetype, 0), a.atttypid))
                                                 AND EXISTS (SELECT 1 FROM pg_cast pc
                                                             WHERE pc.castsource = coalesce(nullif(ty.typbasetype, 0), a.atttypid)
                                                               AND pc.casttarget = opc.opcintype AND pc.castmethod = 'b'))))
                          FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                          JOIN unnest(i.indclass::oid[]) WITH ORDINALITY AS cls(oid, n) ON cls.n = k.n
                          JOIN unnest(i.indcollation::oid[]) WITH ORDINALITY AS coll(coll, n) ON coll.n = k.n
                          JOIN pg_opclass opc ON opc.oid = cls.oid
                          LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                          LEFT JOIN pg_type ty ON ty.oid = a.atttypid
                         WHERE k.n <= i.indnkeyatts)) AS plain_key,
                  (SELECT array_agg(format('OPERATOR(%I.%s)', opn.nspname, op.oprname) ORDER BY k.n)
                     FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                     JOIN unnest(i.indclass::oid[]) WITH ORDINALITY AS cls(oid, n) ON cls.n = k.n
                     JOIN pg_opclass opc ON opc.oid = cls.oid
                     JOIN pg_amop ao ON ao.amopfamily = opc.opcfamily AND ao.amopstrategy = 3
                                    AND ao.amoplefttype = opc.opcintype AND ao.amoprighttype = opc.opcintype
                     JOIN pg_operator op ON op.oid = ao.amopopr
                     JOIN pg_namespace opn ON opn.oid = op.oprnamespace
                    WHERE k.n <= i.indnkeyatts) AS key_equals
           FROM pg_index i
           JOIN pg_class ic ON ic.oid = i.indexrelid
           JOIN pg_namespace n ON n.oid = ic.relnamespace
           LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
                                      AND con.contype IN ('p', 'u', 'x')
           WHERE i.indrelid = {oid}
           ORDER BY ic.relname),
         foreign_keys AS (
           SELECT con.conname::text AS name,
                  format('%I.%I', n.nspname, c.relname) AS table_name,
                  pg_get_constraintdef(con.oid) AS definition,
                  con.convalidated AS valid, con.condeferrable AS deferrable,
                  obj_description(con.oid, 'pg_constraint') IS NOT NULL AS commented,
                  has_table_privilege(con.confrelid, 'REFERENCES') AS references_allowed,
                  format('%I.%I', pn.nspname, pc.relname) AS parent,
                  con.confrelid::int8 AS parent_oid,
                  (SELECT array_agg(a.attname::text ORDER BY k.n)
                     FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, n)
                     JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum) AS columns,
                  (SELECT array_agg(a.attname::text ORDER BY k.n)
                     FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, n)
                     JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum) AS parent_columns,
                  (SELECT array_agg(format('OPERATOR(%I.%s)', opn.nspname, op.oprname) ORDER BY k.n)
                     FROM unnest(con.conpfeqop) WITH ORDINALITY AS k(op, n)
                     JOIN pg_operator op ON op.oid = k.op
                     JOIN pg_namespace opn ON opn.oid = op.oprnamespace) AS equals,
                  con.confmatchtype = 'f' AS match_full
           FROM pg_constraint con
           JOIN pg_class c ON c.oid = con.conrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_class pc ON pc.oid = con.confrelid
           JOIN pg_namespace pn ON pn.oid = pc.relnamespace
           WHERE con.conrelid = {oid} AND con.contype = 'f'
           ORDER BY con.conname)
         SELECT json_build_object(
           'partitioned', c.relkind = 'p' OR c.relispartition,
           'triggers', EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
           'temporary', has_database_privilege(current_database(), 'TEMPORARY'),
           'published', EXISTS (SELECT 1 FROM pg_publication_tables p
                                WHERE p.schemaname = n.nspname AND p.tablename = c.relname),
           'owned', pg_has_role(c.relowner, 'USAGE'),
           'schema_create', has_schema_privilege(c.relnamespace, 'CREATE'),
           'empty', {empty},
           'sequences', (SELECT json_agg(s) FROM sequences s),
           'indexes', (SELECT json_agg(x) FROM indexes x),
           'foreign_keys', (SELECT json_agg(f) FROM foreign_keys f))::text
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = {oid}",
        oid = target.oid,
        qualified = target.qualified,
    )
}

/// The facts from the rows of `facts_sql`.
pub(crate) fn parse(rows: &[TextRow]) -> Result<TableFacts> {
    let text = rows.first().and_then(|r| r.first()).cloned().flatten();
    let unreadable =
        |reason: String| Error::Target(format!("reading the table's indexes: {reason}"));
    let text = text.ok_or_else(|| unreadable("the table is gone".into()))?;
    serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))
}

/// Reads the facts of `target` (one round trip), the table's emptiness
/// with `emptiness`.
pub(crate) fn read(
    client: &mut impl GenericClient,
    target: &Target,
    emptiness: bool,
) -> Result<TableFacts> {
    let rows = crate::sql::simple_rows(client, &facts_sql(target, emptiness))
        .map_err(Error::db("looking up the table's indexes"))?;
    parse(&rows)
}
