//! What `tune` reads of the server: its version, the settings that matter
//! for a bulk load, who the role is, whether anything replicates, and the
//! signs a managed service leaves. One round trip.

use std::collections::HashMap;

use postgres::GenericClient;

use crate::error::{Error, Result, TuneProblem};
use crate::sql::{quote_literal, simple_rows, simple_statements, TextRow};

/// The settings any advice reads, by name. Settings a major lacks are
/// simply absent from [`ServerFacts::settings`].
pub(crate) const READ_SETTINGS: &[&str] = &[
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "maintenance_work_mem",
    "max_parallel_maintenance_workers",
    "max_parallel_workers",
    "max_worker_processes",
    "shared_buffers",
    "wal_buffers",
    "wal_compression",
    "synchronous_commit",
    "max_prepared_transactions",
    "max_connections",
    "superuser_reserved_connections",
    "reserved_connections",
    "wal_level",
    "archive_mode",
    "max_wal_senders",
    "autovacuum",
    "fsync",
    "full_page_writes",
];

/// One setting as `pg_settings` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Setting {
    /// The value in the setting's own unit (`setting`).
    pub raw: String,
    /// The unit of `raw`: `8kB`, `MB`, `s`... (empty for none).
    pub unit: String,
    /// When a change takes effect: `postmaster` (restart), `sighup`
    /// (reload), `user`/`superuser` (a session's SET, or a reload).
    pub context: String,
    /// The value as SHOW prints it (`1GB`, `5min`).
    pub shown: String,
    /// The values an enum setting takes.
    pub choices: Vec<String>,
}

impl Setting {
    /// The value in bytes, for a memory or WAL size.
    pub fn bytes(&self) -> Option<u64> {
        let raw: u64 = self.raw.parse().ok()?;
        let unit = match self.unit.as_str() {
            "B" => 1,
            "kB" => 1 << 10,
            "8kB" => 8 << 10,
            "16kB" => 16 << 10,
            "32kB" => 32 << 10,
            "MB" => 1 << 20,
            "16MB" => 16 << 20,
            "GB" => 1 << 30,
            _ => return None,
        };
        raw.checked_mul(unit)
    }

    /// The value in seconds, for a duration.
    pub fn seconds(&self) -> Option<f64> {
        let raw: f64 = self.raw.parse().ok()?;
        let unit = match self.unit.as_str() {
            "ms" => 0.001,
            "s" => 1.0,
            "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        Some(raw * unit)
    }

    /// The value as a number, for a count or a fraction.
    pub fn number(&self) -> Option<f64> {
        self.raw.parse().ok()
    }

    pub fn is_on(&self) -> bool {
        self.raw == "on"
    }
}

/// Everything the advice is made from.
#[derive(Clone, Debug, Default)]
pub(crate) struct ServerFacts {
    /// `server_version_num`: 150004 for 15.4.
    pub version_num: u32,
    pub settings: HashMap<String, Setting>,
    pub superuser: bool,
    /// The settings this role may change with ALTER SYSTEM (every one for a
    /// superuser; on 15 and later, those granted by `GRANT ALTER SYSTEM`).
    pub alter_system: Vec<String>,
    /// Whether the role may read `pg_file_settings`, which `--apply` needs
    /// to record exactly what `postgresql.auto.conf` held before: SELECT on
    /// the view and EXECUTE on the function under it (a view's functions
    /// are checked against the caller, not the view's owner).
    pub reads_file_settings: bool,
    /// Whether the role may call `pg_reload_conf()`, which brings the
    /// changes into effect.
    pub reloads: bool,
    /// Connected over a unix socket or a loopback address.
    pub local: bool,
    /// The data directory, where the role may see it.
    pub data_directory: Option<String>,
    /// Standbys streaming now, and replication slots (which keep WAL).
    pub streaming: u64,
    pub slots: u64,
    /// Client sessions connected now, this one included.
    pub sessions: u64,
    /// Custom settings' prefixes (`rds`, `cloudsql`, `neon`...) and roles
    /// a managed service creates, for [`super::managed`].
    pub setting_prefixes: Vec<String>,
    pub service_roles: Vec<String>,
}

impl ServerFacts {
    pub fn setting(&self, name: &str) -> Option<&Setting> {
        self.settings.get(name)
    }

    pub fn may_alter_system(&self, name: &str) -> bool {
        self.superuser || self.alter_system.iter().any(|s| s == name)
    }
}

/// Roles that managed services create in every database server they run.
const SERVICE_ROLES: &[&str] = &[
    "rds_superuser",
    "rdsadmin",
    "cloudsqlsuperuser",
    "azure_pg_admin",
    "azuresu",
    "supabase_admin",
    "neon_superuser",
];

/// Reads the facts in one message.
pub(crate) fn read(client: &mut impl GenericClient) -> Result<ServerFacts> {
    let names = READ_SETTINGS
        .iter()
        .map(|n| quote_literal(n))
        .collect::<Vec<_>>()
        .join(",");
    let roles = SERVICE_ROLES
        .iter()
        .map(|n| quote_literal(n))
        .collect::<Vec<_>>()
        .join(",");
    let sql = format!(
        "SET search_path = pg_catalog, pg_temp;\
         SELECT current_setting('server_version_num'), \
           (SELECT rolsuper FROM pg_roles WHERE rolname = current_user), \
           has_table_privilege('pg_catalog.pg_file_settings', 'SELECT') \
             AND has_function_privilege('pg_show_all_file_settings()', 'EXECUTE'), \
           has_function_privilege('pg_reload_conf()', 'EXECUTE'), \
           inet_server_addr() IS NULL OR host(inet_server_addr()) IN ('127.0.0.1', '::1'), \
           (SELECT setting FROM pg_settings WHERE name = 'data_directory'), \
           (SELECT count(*) FROM pg_stat_replication), \
           (SELECT count(*) FROM pg_replication_slots), \
           (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'), \
           (SELECT string_agg(DISTINCT split_part(name, '.', 1), ',') FROM pg_settings \
            WHERE name LIKE '%.%'), \
           (SELECT string_agg(rolname, ',') FROM pg_roles WHERE rolname IN ({roles}));\
         SELECT name, setting, coalesce(unit, ''), context, current_setting(name), \
           coalesce(array_to_string(enumvals, ','), '') \
         FROM pg_settings WHERE name IN ({names})"
    );
    let results =
        simple_statements(client, &sql).map_err(Error::db("reading the server's settings"))?;
    let [_, about, settings] = &results[..] else {
        return Err(unexpected());
    };
    let about = about.first().ok_or_else(unexpected)?;
    let mut facts = from_about(about)?;
    if !facts.superuser && facts.version_num >= 150_000 {
        facts.alter_system = granted_alter_system(client)?;
    }
    for row in settings {
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        facts.settings.insert(
            text(0),
            Setting {
                raw: text(1),
                unit: text(2),
                context: text(3),
                shown: text(4),
                choices: split_list(Some(text(5))),
            },
        );
    }
    Ok(facts)
}

/// The settings this role was granted ALTER SYSTEM on. A statement of its
/// own, sent only to PostgreSQL 15 and later: before 15 the function does
/// not exist, and naming it fails the whole statement, a CASE around it
/// or not (functions are looked up when the statement is parsed).
fn granted_alter_system(client: &mut impl GenericClient) -> Result<Vec<String>> {
    let rows = simple_rows(
        client,
        "SELECT pg_catalog.string_agg(name, ',') FROM pg_catalog.pg_settings \
         WHERE context IN ('sighup', 'superuser', 'user', 'postmaster') \
         AND pg_catalog.has_parameter_privilege(name, 'ALTER SYSTEM')",
    )
    .map_err(Error::db("reading the settings this role may ALTER SYSTEM"))?;
    Ok(split_list(
        rows.first().and_then(|r| r.first().cloned().flatten()),
    ))
}

fn from_about(row: &TextRow) -> Result<ServerFacts> {
    let text = |i: usize| row.get(i).cloned().flatten();
    let flag = |i: usize| text(i).as_deref() == Some("t");
    let count = |i: usize| text(i).and_then(|t| t.parse().ok()).unwrap_or(0);
    Ok(ServerFacts {
        version_num: text(0)
            .and_then(|v| v.parse().ok())
            .ok_or_else(unexpected)?,
        superuser: flag(1),
        reads_file_settings: flag(2),
        reloads: flag(3),
        local: flag(4),
        data_directory: text(5),
        streaming: count(6),
        slots: count(7),
        sessions: count(8),
        alter_system: Vec::new(),
        setting_prefixes: split_list(text(9)),
        service_roles: split_list(text(10)),
        settings: HashMap::new(),
    })
}

fn split_list(text: Option<String>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

fn unexpected() -> Error {
    Error::Tune(TuneProblem::UnexpectedAnswer)
}
