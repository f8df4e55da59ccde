//! The advice: for each setting that matters for a bulk load, what it is,
//! what it should be for the load planned, why, and what the change needs.
//! Each file holds the rules of one concern; none advises what risks data.

mod memory;
mod never;
mod sessions;
mod wal;

use serde::Serialize;

use super::facts::ServerFacts;
use super::managed::Service;
use super::{Host, TuneFor};

pub(crate) use never::never_advised;
pub use never::NeverAdvised;
pub(crate) use wal::WAL_PER_INPUT_BYTE;

/// When a changed setting takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TakesEffect {
    /// At a reload (`pg_reload_conf()`): `tune --apply` can change it.
    Reload,
    /// Only when the server starts again: printed, never applied.
    Restart,
}

/// What `tune` says of one setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Advice {
    pub setting: String,
    /// The value now, as SHOW prints it.
    pub current: String,
    /// The value advised; `None` when the current one is right.
    pub advised: Option<String>,
    pub takes_effect: TakesEffect,
    /// Why this value, for this load on this server.
    pub why: String,
    /// How to make the change here (ALTER SYSTEM, or the service's way).
    pub how: Option<String>,
}

/// What the rules read: the server, its host where known, the load.
pub(crate) struct Context<'a> {
    pub facts: &'a ServerFacts,
    pub host: Option<&'a Host>,
    pub load: &'a TuneFor,
    pub service: Option<Service>,
}

impl Context<'_> {
    /// An advice on `setting`, which the server has (else `None`): its
    /// current value, and when a change takes effect, from `pg_settings`.
    fn advise(&self, setting: &str, advised: Option<String>, why: String) -> Option<Advice> {
        let current = self.facts.setting(setting)?;
        let takes_effect = if current.context == "postmaster" {
            TakesEffect::Restart
        } else {
            TakesEffect::Reload
        };
        let how = advised
            .as_deref()
            .map(|value| self.how(setting, value, takes_effect));
        Some(Advice {
            setting: setting.to_string(),
            current: current.shown.clone(),
            advised,
            takes_effect,
            why,
            how,
        })
    }

    fn how(&self, setting: &str, value: &str, takes_effect: TakesEffect) -> String {
        let restart = takes_effect == TakesEffect::Restart;
        if let Some(service) = self.service {
            // Parameter groups and flags take a number in the setting's own
            // unit (max_wal_size in MB, shared_buffers in 8kB pages), where
            // ALTER SYSTEM reads '4GB'.
            let unit = self.facts.setting(setting).map_or("", |s| s.unit.as_str());
            return match in_own_unit(value, unit) {
                Some(number) if service.takes_own_unit() && number != value => format!(
                    "{} ({number} {unit} is {value})",
                    service.how_to_change(setting, &number, restart)
                ),
                _ => service.how_to_change(setting, value, restart),
            };
        }
        let then = if restart {
            "then restart the server"
        } else {
            "SELECT pg_reload_conf()"
        };
        let statement = format!("ALTER SYSTEM SET {setting} = '{value}'; {then}");
        if self.facts.may_alter_system(setting) {
            statement
        } else {
            format!(
                "as a superuser (or, on PostgreSQL 15 and later, a role granted ALTER SYSTEM ON \
                 PARAMETER {setting}): {statement}"
            )
        }
    }
}

/// Every rule's advice, in the order the report shows them.
pub(crate) fn advise(context: &Context) -> Vec<Advice> {
    let rules: [fn(&Context) -> Vec<Advice>; 3] = [wal::advise, memory::advise, sessions::advise];
    rules.iter().flat_map(|rule| rule(context)).collect()
}

/// `value` as a whole number of `unit`, the unit `pg_settings` gives the
/// setting in: `4GB` in `MB` is 4096, `30min` in `s` 1800, `1GB` in `8kB`
/// 131072. `None` for a value without a unit of its own (0.9, 10).
pub(crate) fn in_own_unit(value: &str, unit: &str) -> Option<String> {
    let split = value.find(|c: char| !c.is_ascii_digit())?;
    let (number, suffix) = value.split_at(split);
    let number: u64 = number.parse().ok()?;
    let bytes = |u: &str| -> Option<u64> {
        let (count, base) = match u.find(|c: char| !c.is_ascii_digit()) {
            Some(0) => (1, u),
            Some(i) => (u[..i].parse().ok()?, &u[i..]),
            None => return None,
        };
        let base: u64 = match base {
            "B" => 1,
            "kB" => 1 << 10,
            "MB" => 1 << 20,
            "GB" => 1 << 30,
            "TB" => 1 << 40,
            _ => return None,
        };
        Some(count * base)
    };
    let millis = |u: &str| -> Option<u64> {
        Some(match u {
            "ms" => 1,
            "s" => 1_000,
            "min" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        })
    };
    let (have, want) = match (bytes(suffix), bytes(unit)) {
        (Some(have), Some(want)) => (have, want),
        _ => (millis(suffix)?, millis(unit)?),
    };
    let total = number.checked_mul(have)?;
    total
        .is_multiple_of(want)
        .then(|| (total / want).to_string())
}

/// A size as PostgreSQL reads it back: whole GB where it is whole, else MB.
pub(crate) fn size_text(bytes: u64) -> String {
    const MB: u64 = 1 << 20;
    const GB: u64 = 1 << 30;
    if bytes >= GB && bytes.is_multiple_of(GB) {
        format!("{}GB", bytes / GB)
    } else {
        format!("{}MB", bytes.div_ceil(MB).max(1))
    }
}

/// A size for people: 1.5 GB, 300 MB.
pub(crate) fn size_words(bytes: u64) -> String {
    let gb = bytes as f64 / (1u64 << 30) as f64;
    if gb >= 1.0 {
        format!("{gb:.1} GB")
    } else {
        format!("{:.0} MB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_given_in_the_settings_own_unit() {
        assert_eq!(in_own_unit("4GB", "MB").as_deref(), Some("4096"));
        assert_eq!(in_own_unit("1GB", "8kB").as_deref(), Some("131072"));
        assert_eq!(in_own_unit("1536MB", "kB").as_deref(), Some("1572864"));
        assert_eq!(in_own_unit("30min", "s").as_deref(), Some("1800"));
        assert_eq!(in_own_unit("30min", "ms").as_deref(), Some("1800000"));
        assert_eq!(in_own_unit("0.9", ""), None);
        assert_eq!(in_own_unit("10", ""), None);
        assert_eq!(in_own_unit("4GB", "s"), None);
        assert_eq!(in_own_unit("1MB", "GB"), None);
    }

    #[test]
    fn sizes_read_back_as_postgresql_reads_them() {
        assert_eq!(size_text(4 << 30), "4GB");
        assert_eq!(size_text(1536 << 20), "1536MB");
        assert_eq!(size_text(1), "1MB");
        assert_eq!(size_words(3 << 29), "1.5 GB");
        assert_eq!(size_words(300 << 20), "300 MB");
    }
}
