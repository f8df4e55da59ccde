//! `tune --apply` and `--revert`: ALTER SYSTEM for the changes a reload
//! brings into effect, with the old values recorded first.
//!
//! What `postgresql.auto.conf` held for each setting (a value, or no
//! entry) goes into the journal's `tuned_settings` and is committed before
//! the first ALTER SYSTEM, so that a crash anywhere between the two leaves
//! a record that `revert` restores exactly: SET to the old entry, or RESET
//! where there was none. A setting changed again by someone else after
//! `apply` is left as they set it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient};
use serde::Serialize;

use super::TuneReport;
use crate::error::{Error, Result, TuneProblem};
use crate::server::conn::ConnectOptions;
use crate::sql::{quote_literal, simple_rows};

/// What `apply` changed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Applied {
    pub changed: Vec<ChangedSetting>,
}

/// One setting `apply` changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChangedSetting {
    pub setting: String,
    /// The value before, as SHOW printed it.
    pub from: String,
    /// The value set.
    pub to: String,
}

/// What `revert` did of each recorded setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RevertedSetting {
    /// Put back as it was before `apply`.
    Restored { setting: String },
    /// Changed by someone else since `apply`: left as it is now.
    ChangedSince { setting: String, now: String },
}

/// What `revert` did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Reverted {
    pub settings: Vec<RevertedSetting>,
}

/// Applies `report`'s reloadable changes on the server `connect` reaches.
pub fn apply(connect: &ConnectOptions, report: &TuneReport) -> Result<Applied> {
    if let Some(service) = report.service {
        return Err(Error::Tune(TuneProblem::Managed {
            service: service.name(),
        }));
    }
    let changes: Vec<_> = report.reloadable_changes().collect();
    if changes.is_empty() {
        return Ok(Applied::default());
    }
    if !report.may_apply {
        return Err(Error::Tune(TuneProblem::MayNotAlterSystem {
            settings: changes.iter().map(|a| a.setting.clone()).collect(),
        }));
    }
    let mut client = pinned_session(connect)?;
    crate::journal::ensure_schema(&mut client)?;
    let names: Vec<&str> = changes.iter().map(|a| a.setting.as_str()).collect();
    let entries = auto_conf_entries(&mut client, &names)?;
    let records = changes
        .iter()
        .map(|a| {
            let old = entries.get(&a.setting);
            format!(
                "({}, {}, {}, {})",
                quote_literal(&a.setting),
                old.is_some(),
                old.map_or("NULL".to_string(), |v| quote_literal(v)),
                quote_literal(a.advised.as_deref().unwrap_or_default())
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    // A second apply keeps the first one's old value where the entry is
    // still what the first one set: that is what revert must bring back.
    // An entry someone changed since is theirs, and becomes the old value.
    client
        .batch_execute(&format!(
            "SET LOCAL synchronous_commit = on; \
             INSERT INTO pgpour.tuned_settings AS t (name, had_entry, old_value, new_value) \
             VALUES {records} ON CONFLICT (name) DO UPDATE SET \
               new_value = excluded.new_value, \
               had_entry = CASE WHEN {unchanged} THEN t.had_entry ELSE excluded.had_entry END, \
               old_value = CASE WHEN {unchanged} THEN t.old_value ELSE excluded.old_value END",
            unchanged =
                "excluded.had_entry AND excluded.old_value OPERATOR(pg_catalog.=) t.new_value"
        ))
        .map_err(Error::db("recording the settings before changing them"))?;
    let statements = changes
        .iter()
        .map(|a| alter_system_set(&a.setting, a.advised.as_deref().unwrap_or_default()))
        .collect::<Vec<_>>();
    change_and_reload(&mut client, &statements)?;
    Ok(Applied {
        changed: changes
            .iter()
            .map(|a| ChangedSetting {
                setting: a.setting.clone(),
                from: a.current.clone(),
                to: a.advised.clone().unwrap_or_default(),
            })
            .collect(),
    })
}

/// Puts back every setting `apply` recorded, and forgets the records.
pub fn revert(connect: &ConnectOptions) -> Result<Reverted> {
    let mut client = pinned_session(connect)?;
    if !crate::journal::exists(&mut client)? {
        return Ok(Reverted::default());
    }
    crate::journal::ensure_schema(&mut client)?;
    let records = simple_rows(
        &mut client,
        "SELECT name, had_entry, old_value, new_value FROM pgpour.tuned_settings ORDER BY name",
    )
    .map_err(Error::db("reading the recorded settings"))?;
    if records.is_empty() {
        return Ok(Reverted::default());
    }
    let names: Vec<&str> = records
        .iter()
        .filter_map(|r| r.first()?.as_deref())
        .collect();
    let entries = auto_conf_entries(&mut client, &names)?;
    let mut statements = Vec::new();
    let mut settings = Vec::new();
    for record in &records {
        let text = |i: usize| record.get(i).cloned().flatten();
        let name = text(0).unwrap_or_default();
        let old = (text(1).as_deref() == Some("t")).then(|| text(2).unwrap_or_default());
        let applied = text(3).unwrap_or_default();
        let now = entries.get(&name);
        if now == old.as_ref() {
            // Never changed (apply stopped before it), or put back already.
            settings.push(RevertedSetting::Restored { setting: name });
        } else if now.map(String::as_str) == Some(applied.as_str()) {
            statements.push(match &old {
                Some(value) => alter_system_set(&name, value),
                None => format!("ALTER SYSTEM RESET {}", crate::quote_ident(&name)),
            });
            settings.push(RevertedSetting::Restored { setting: name });
        } else {
            settings.push(RevertedSetting::ChangedSince {
                setting: name,
                now: now.cloned().unwrap_or_else(|| "its default".to_string()),
            });
        }
    }
    // Reloaded even when every entry is back already: a revert stopped
    // between its ALTER SYSTEM and the reload left the file as it was but
    // the server running on the applied values.
    change_and_reload(&mut client, &statements)?;
    client
        .batch_execute(&format!(
            "SET LOCAL synchronous_commit = on; DELETE FROM pgpour.tuned_settings WHERE name IN ({})",
            names
                .iter()
                .map(|n| quote_literal(n))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .map_err(Error::db("forgetting the recorded settings"))?;
    Ok(Reverted { settings })
}

/// A session whose every function, operator and type resolves to
/// PostgreSQL's own: `apply` and `revert` often run as a superuser, in a
/// database whose owner may have set its search_path and put an operator of
/// their own (`text = text`) first on it.
fn pinned_session(connect: &ConnectOptions) -> Result<Client> {
    let mut client = connect.connect()?;
    crate::sql::pin_search_path(&mut client).map_err(Error::db("setting up the session"))?;
    Ok(client)
}

fn alter_system_set(setting: &str, value: &str) -> String {
    format!(
        "ALTER SYSTEM SET {} = {}",
        crate::quote_ident(setting),
        quote_literal(value)
    )
}

/// What `postgresql.auto.conf` holds for `names`, as written there: the
/// file's last line for a setting wins, as when the server reads it. Names
/// are matched as the server matches them, whatever their case: a line
/// written by hand as `Max_Wal_Size = 2GB` is the entry that ALTER SYSTEM
/// SET max_wal_size replaces, and that revert must bring back.
fn auto_conf_entries(client: &mut Client, names: &[&str]) -> Result<HashMap<String, String>> {
    let list = names
        .iter()
        .map(|n| quote_literal(n))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = simple_rows(
        client,
        &format!(
            "SELECT pg_catalog.lower(name), setting FROM pg_catalog.pg_file_settings \
             WHERE sourcefile LIKE '%/postgresql.auto.conf' \
             AND pg_catalog.lower(name) IN ({list}) ORDER BY seqno"
        ),
    )
    .map_err(Error::db(
        "reading postgresql.auto.conf through pg_file_settings",
    ))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| Some((r.first()?.clone()?, r.get(1)?.clone()?)))
        .collect())
}

/// Runs each ALTER SYSTEM (each its own statement: none may run in a
/// transaction block), reloads, and waits until this session has read the
/// new configuration, so that what is shown next is what is in effect.
fn change_and_reload(client: &mut Client, statements: &[String]) -> Result<()> {
    let loaded_before = conf_load_time(client)?;
    for statement in statements {
        client
            .batch_execute(statement)
            .map_err(Error::db("changing a setting with ALTER SYSTEM"))?;
    }
    client
        .batch_execute("SELECT pg_catalog.pg_reload_conf()")
        .map_err(Error::db("reloading the server's configuration"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while conf_load_time(client)? == loaded_before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn conf_load_time(client: &mut impl GenericClient) -> Result<String> {
    let rows = simple_rows(client, "SELECT pg_catalog.pg_conf_load_time()::text")
        .map_err(Error::db("reading when the configuration was loaded"))?;
    Ok(rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .unwrap_or_default())
}
