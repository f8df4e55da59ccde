//! Whether a load may send rows straight to the shards of a hash-distributed
//! table, and where each row goes: the shard whose hash range holds the
//! hash of its distribution value, on the one node that holds that shard.
//!
//! Direct routing is chosen only where the client computes the same shard
//! as Citus for every row it routes:
//! * the distribution value is read from the file, and its type is one
//!   whose input the client reads exactly (`KeyType`), under a
//!   deterministic collation;
//! * each shard has one placement, on an active primary node, and the
//!   ranges cover every hash once;
//! * values the client cannot vouch for make their chunk go through the
//!   coordinator (`direct`), so a doubt costs speed, never a row;
//! * before any row moves, the client's shard of sample values is checked
//!   against Citus' own `get_shard_id_for_distribution_column`.
//!
//! Shards must not move while rows go to them: see `guard`.

use postgres::types::Type;
use postgres::Client;

use super::hash::{hash_int4, hash_int8, hash_text};
use crate::encode::{exact_integer, exact_uuid};
use crate::error::{Error, Result};

/// The distribution column's type, read from its text as the server would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyType {
    Int2,
    Int4,
    Int8,
    /// text or varchar, with varchar's length limit in characters.
    Text {
        max_chars: Option<usize>,
    },
    Uuid,
}

impl KeyType {
    /// The type of oid `type_oid` with modifier `typmod`; `None` for a type
    /// the client does not hash.
    fn of(type_oid: u32, typmod: i32) -> Option<KeyType> {
        Some(match type_oid {
            21 => KeyType::Int2,
            23 => KeyType::Int4,
            20 => KeyType::Int8,
            25 => KeyType::Text { max_chars: None },
            // varchar's modifier is its length plus the 4 bytes of a header.
            1043 => KeyType::Text {
                max_chars: (typmod >= 4).then(|| (typmod - 4) as usize),
            },
            2950 => KeyType::Uuid,
            _ => return None,
        })
    }

    /// The hash Citus computes for the value the server reads from `text`;
    /// `None` where the client does not vouch for the server's reading
    /// (a spelling it does not take, a value the server would refuse or
    /// cut).
    pub fn hash(self, text: &[u8]) -> Option<i32> {
        match self {
            KeyType::Int2 => {
                exact_integer(text, i16::MIN.into(), i16::MAX.into()).map(|v| hash_int4(v as i32))
            }
            KeyType::Int4 => {
                exact_integer(text, i32::MIN.into(), i32::MAX.into()).map(|v| hash_int4(v as i32))
            }
            KeyType::Int8 => exact_integer(text, i64::MIN, i64::MAX).map(hash_int8),
            KeyType::Text { max_chars } => {
                // The session and the database are both UTF-8 (see
                // `Routing::read`): the server keeps valid text as it is.
                let valid = std::str::from_utf8(text).ok()?;
                if valid.contains('\0') {
                    return None;
                }
                // A longer value is refused, or cut when the rest is blanks.
                if max_chars.is_some_and(|max| valid.chars().count() > max) {
                    return None;
                }
                Some(hash_text(text))
            }
            KeyType::Uuid => exact_uuid(text).map(|bytes| hash_text(&bytes)),
        }
    }

    /// Values of the type, as text, whose shards are checked against
    /// Citus': every tail length of the byte hash, signs and extremes.
    fn probes(self) -> Vec<String> {
        match self {
            KeyType::Int2 => ["-32768", "32767", "0", "-1", "7", "1234", "-999"]
                .map(String::from)
                .to_vec(),
            KeyType::Int4 => (0..40i64)
                .map(|i| (i * 104_729 - 2_000_000).to_string())
                .chain(["2147483647".into(), "-2147483648".into()])
                .collect(),
            KeyType::Int8 => (0..40i64)
                .map(|i| (i * 7_919_000_000_003 - 150_000_000_000_000).to_string())
                .chain([i64::MAX.to_string(), i64::MIN.to_string(), "-5".into()])
                .collect(),
            KeyType::Text { max_chars } => (0..30usize)
                .map(|n| "tq3_é,ü".chars().cycle().take(n).collect::<String>())
                .filter(|s| max_chars.is_none_or(|max| s.chars().count() <= max))
                .collect(),
            KeyType::Uuid => (0..8u32)
                .map(|i| {
                    format!(
                        "{:08x}-9c0b-4ef8-bb6d-6bb9bd380a{:02x}",
                        i.wrapping_mul(2_654_435_761),
                        i
                    )
                })
                .collect(),
        }
    }
}

/// A node holding shards of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub host: String,
    pub port: u16,
    /// Citus' group id of the node.
    pub group: i32,
}

/// A shard: its table on its node, and its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shard {
    pub id: i64,
    /// The shard's table, schema-qualified and quoted.
    pub name: String,
    /// Index in `Routing::nodes`.
    pub node: usize,
}

/// Where the rows of a hash-distributed table go.
#[derive(Clone, Debug)]
pub(crate) struct Routing {
    /// The distribution column's place among the fields of a record.
    pub field: usize,
    pub key: KeyType,
    /// The first hash of each shard's range, ascending; the first is
    /// `i32::MIN` and each range ends where the next starts.
    starts: Vec<i32>,
    /// The shards, in the order of `starts`.
    pub shards: Vec<Shard>,
    pub nodes: Vec<Node>,
    /// The distributed table, quoted, for the guard's lock.
    pub table: String,
}

/// Rows straight to the shards, or why not.
pub(crate) type Route = std::result::Result<Routing, String>;

/// `--explain`'s words for a route.
pub(crate) fn describe(route: &Route) -> String {
    match route {
        Ok(routing) => format!(
            "rows go straight to the shards: the client hashes column {} of each record as \
             Citus does and COPYs into the {} shards on their {} nodes, each batch committed \
             there by prepared transactions that its journal rows decide; a batch with a \
             value the client cannot route exactly, or that a node refuses, goes through the \
             coordinator",
            routing.field + 1,
            routing.shards.len(),
            routing.nodes.len()
        ),
        Err(why) => format!("rows go through the coordinator: {why}"),
    }
}

/// What a load does that routing must respect.
pub(crate) struct Asked<'a> {
    pub target: &'a crate::table::plan::Target,
    pub column: &'a str,
    /// A reason found in the load's options not to route (`--atomic`,
    /// `--where`...), already known.
    pub refused: Option<String>,
}

impl Routing {
    /// The shard of a row whose distribution value hashes to `hash`.
    #[inline]
    pub fn shard_of(&self, hash: i32) -> usize {
        self.starts.partition_point(|&start| start <= hash) - 1
    }

    /// Reads how the table is sharded and decides whether rows may go
    /// straight to the shards. Errors only for a failed query.
    pub(crate) fn read(client: &mut Client, asked: Asked<'_>) -> Result<Route> {
        if let Some(why) = asked.refused {
            return Ok(Err(why));
        }
        let target = asked.target;
        let Some(field) = target.columns.iter().position(|c| c == asked.column) else {
            return Ok(Err(format!(
                "the distribution column {} is not read from the file",
                asked.column
            )));
        };
        let row = client
            .query_typed_one(
                "SELECT a.atttypid, a.atttypmod, \
                        coalesce((SELECT c.collisdeterministic FROM pg_catalog.pg_collation c \
                                   WHERE c.oid = a.attcollation), true), \
                        (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger t \
                          WHERE t.tgrelid = $1 AND NOT t.tgisinternal), \
                        (SELECT pg_catalog.string_agg(d.attname, ', ') FROM pg_catalog.pg_attribute d \
                          WHERE d.attrelid = $1 AND d.attnum > 0 AND NOT d.attisdropped \
                            AND (d.atthasdef OR d.attidentity <> '') AND d.attgenerated = '' \
                            AND NOT d.attname = ANY($3)), \
                        pg_catalog.current_setting('client_encoding') \
                 FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1 AND a.attname = $2",
                &[
                    (&target.oid, Type::OID),
                    (&asked.column, Type::NAME),
                    (&target.columns, Type::NAME_ARRAY),
                ],
            )
            .map_err(Error::db("reading the distribution column"))?;
        let (type_oid, typmod, deterministic): (u32, i32, bool) =
            (row.get(0), row.get(1), row.get(2));
        let (triggers, defaulted, client_encoding): (i64, Option<String>, String) =
            (row.get(3), row.get(4), row.get(5));
        let Some(key) = KeyType::of(type_oid, typmod) else {
            return Ok(Err(format!(
                "the client does not hash the distribution column's type ({})",
                target.column_types[field].1
            )));
        };
        if let KeyType::Text { .. } = key {
            if !deterministic {
                return Ok(Err(
                    "the distribution column has a nondeterministic collation".into(),
                ));
            }
            if target.server_encoding != "UTF8" || client_encoding != "UTF8" {
                return Ok(Err(format!(
                    "text keys are hashed on the client only between UTF-8 sessions and \
                     databases (the session is {client_encoding}, the database {})",
                    target.server_encoding
                )));
            }
        }
        if triggers > 0 {
            return Ok(Err("the table has triggers".into()));
        }
        if let Some(columns) = defaulted {
            return Ok(Err(format!(
                "columns not read from the file have defaults ({columns}), which the \
                 coordinator computes"
            )));
        }
        let routing = match Self::shards(client, target, field, key)? {
            Ok(routing) => routing,
            Err(why) => return Ok(Err(why)),
        };
        Ok(match routing.agrees_with_citus(client, target.oid)? {
            true => Ok(routing),
            false => Err("the client's hash disagrees with the server's for sample values".into()),
        })
    }

    /// The shards and their nodes, when each shard has one placement on an
    /// active primary and the ranges cover every hash once.
    fn shards(
        client: &mut Client,
        target: &crate::table::plan::Target,
        field: usize,
        key: KeyType,
    ) -> Result<Route> {
        let rows = client
            .query_typed(
                "SELECT s.shardid, s.shardminvalue::pg_catalog.int4, s.shardmaxvalue::pg_catalog.int4, \
                        pg_catalog.shard_name(s.logicalrelid, s.shardid), \
                        (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_placement p \
                          WHERE p.shardid = s.shardid), \
                        n.nodename, n.nodeport, n.groupid, n.isactive AND n.noderole = 'primary' \
                 FROM pg_catalog.pg_dist_shard s \
                 LEFT JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = s.shardid \
                 LEFT JOIN pg_catalog.pg_dist_node n ON n.groupid = pl.groupid \
                      AND n.noderole = 'primary' \
                 WHERE s.logicalrelid = $1 \
                 ORDER BY s.shardminvalue::pg_catalog.int4",
                &[(&target.oid, Type::OID)],
            )
            .map_err(Error::db("reading the table's shards"))?;
        let mut routing = Routing {
            field,
            key,
            starts: Vec::new(),
            shards: Vec::new(),
            nodes: Vec::new(),
            table: target.qualified.clone(),
        };
        let mut next_start = Some(i32::MIN);
        for row in &rows {
            let (id, min, max): (i64, i32, i32) = (row.get(0), row.get(1), row.get(2));
            let (name, placements): (String, i64) = (row.get(3), row.get(4));
            if placements != 1 {
                return Ok(Err(format!(
                    "shard {id} has {placements} placements; rows go to one"
                )));
            }
            let (Some(host), Some(port), Some(group), Some(true)) = (
                row.get::<_, Option<String>>(5),
                row.get::<_, Option<i32>>(6),
                row.get::<_, Option<i32>>(7),
                row.get::<_, Option<bool>>(8),
            ) else {
                return Ok(Err(format!("shard {id} is not on an active primary node")));
            };
            if next_start != Some(min) || max < min {
                return Ok(Err("the shards' hash ranges leave gaps or overlap".into()));
            }
            next_start = max.checked_add(1);
            let node = Node {
                host,
                port: port as u16,
                group,
            };
            let node = match routing.nodes.iter().position(|n| *n == node) {
                Some(i) => i,
                None => {
                    routing.nodes.push(node);
                    routing.nodes.len() - 1
                }
            };
            // Public shards come unqualified, as Citus prints them.
            let name = match target.schema.as_str() {
                "public" => format!("public.{name}"),
                _ => name,
            };
            routing.starts.push(min);
            routing.shards.push(Shard { id, name, node });
        }
        if routing.shards.is_empty() || next_start.is_some() {
            return Ok(Err("the shards' hash ranges do not cover every hash".into()));
        }
        Ok(Ok(routing))
    }

    /// The shards as they are now, for the same column as `routing`.
    pub(super) fn read_shards(
        client: &mut Client,
        target: &crate::table::plan::Target,
        routing: &Routing,
    ) -> Result<Route> {
        Self::shards(client, target, routing.field, routing.key)
    }

    /// Whether `other` has the same shards, ranges and nodes.
    pub(super) fn same_shards(&self, other: &Routing) -> bool {
        self.starts == other.starts && self.shards == other.shards && self.nodes == other.nodes
    }

    /// Whether shard `s` of `before` still lives on the node it did there.
    pub(super) fn same_placement(&self, before: &Routing, s: usize) -> bool {
        let shard = &before.shards[s];
        self.shards
            .iter()
            .any(|now| now.id == shard.id && self.nodes[now.node] == before.nodes[shard.node])
    }

    /// Whether the client puts sample values in the shards Citus does.
    fn agrees_with_citus(&self, client: &mut Client, oid: u32) -> Result<bool> {
        let probes = self.key.probes();
        let rows = client
            .query_typed(
                "SELECT v, pg_catalog.get_shard_id_for_distribution_column($1::pg_catalog.regclass, v) \
                 FROM pg_catalog.unnest($2::pg_catalog.text[]) AS v",
                &[(&oid, Type::OID), (&probes, Type::TEXT_ARRAY)],
            )
            .map_err(Error::db("checking the client's shard of sample values"))?;
        Ok(rows.len() == probes.len()
            && rows.iter().all(|row| {
                let (value, shard): (String, i64) = (row.get(0), row.get(1));
                self.key
                    .hash(value.as_bytes())
                    .is_some_and(|h| self.shards[self.shard_of(h)].id == shard)
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_only_where_the_server_reads_them_alike() {
        assert!(KeyType::Int4.hash(b"42").is_some());
        for refused in [&b" 42"[..], b"4_2", b"0x2a", b"2147483648", b""] {
            assert_eq!(KeyType::Int4.hash(refused), None, "{refused:?}");
        }
        assert_eq!(KeyType::Int2.hash(b"40000"), None);
        assert_eq!(KeyType::Int8.hash(b"-5"), Some(1412886042));
        let varchar = KeyType::Text { max_chars: Some(3) };
        assert!(varchar.hash("ééé".as_bytes()).is_some());
        assert_eq!(varchar.hash(b"abc "), None);
        assert_eq!(KeyType::Text { max_chars: None }.hash(b"\xff"), None);
        assert_eq!(KeyType::Uuid.hash(b"not-a-uuid"), None);
    }

    #[test]
    fn each_hash_has_one_shard() {
        let shard = |id| Shard {
            id,
            name: String::new(),
            node: 0,
        };
        let routing = Routing {
            field: 0,
            key: KeyType::Int4,
            starts: vec![i32::MIN, -5, 0, 100],
            shards: (0..4).map(shard).collect(),
            nodes: Vec::new(),
            table: String::new(),
        };
        let got: Vec<usize> = [i32::MIN, -6, -5, -1, 0, 99, 100, i32::MAX]
            .iter()
            .map(|&h| routing.shard_of(h))
            .collect();
        assert_eq!(got, [0, 0, 1, 1, 2, 2, 3, 3]);
    }
}
