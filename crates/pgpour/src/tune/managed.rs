//! Managed services, recognised from what the server shows (the custom
//! settings' prefixes and the roles each service creates), and the way
//! each changes a server setting: never ALTER SYSTEM, which they refuse.

use serde::Serialize;

use super::facts::ServerFacts;

/// A managed PostgreSQL service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Service {
    /// Amazon RDS for PostgreSQL.
    Rds,
    /// Amazon Aurora PostgreSQL.
    Aurora,
    /// Google Cloud SQL for PostgreSQL.
    CloudSql,
    /// Azure Database for PostgreSQL.
    Azure,
    Supabase,
    Neon,
}

impl Service {
    pub fn name(self) -> &'static str {
        match self {
            Service::Rds => "Amazon RDS",
            Service::Aurora => "Amazon Aurora",
            Service::CloudSql => "Google Cloud SQL",
            Service::Azure => "Azure Database for PostgreSQL",
            Service::Supabase => "Supabase",
            Service::Neon => "Neon",
        }
    }

    /// Whether the service's parameters take a plain number in the
    /// setting's own unit (`max_wal_size` = 4096, in MB), as RDS and
    /// Aurora's parameter groups, Cloud SQL's flags and Azure's server
    /// parameters do.
    pub(crate) fn takes_own_unit(self) -> bool {
        matches!(
            self,
            Service::Rds | Service::Aurora | Service::CloudSql | Service::Azure
        )
    }

    /// How a setting is changed on this service; `restart` when the
    /// change only takes effect when the server starts again.
    pub fn how_to_change(self, setting: &str, value: &str, restart: bool) -> String {
        match self {
            Service::Rds | Service::Aurora => {
                let group = if self == Service::Aurora {
                    "the DB cluster parameter group (or the instance's DB parameter group)"
                } else {
                    "the instance's DB parameter group"
                };
                let when = if restart {
                    "a static parameter: it takes effect after a reboot of the instance"
                } else {
                    "a dynamic parameter: applied without a reboot"
                };
                format!("set {setting} = {value} in {group} ({when})")
            }
            Service::CloudSql => format!(
                "gcloud sql instances patch INSTANCE --database-flags={setting}={value} \
                 (this replaces the whole flag list: give the instance's other flags too{})",
                if restart {
                    "; the instance restarts"
                } else {
                    ""
                }
            ),
            Service::Azure => format!(
                "az postgres flexible-server parameter set --resource-group GROUP \
                 --server-name SERVER --name {setting} --value {value}{}",
                if restart {
                    " (static: restart the server after)"
                } else {
                    ""
                }
            ),
            Service::Supabase => format!(
                "{setting} is set by Supabase from the compute's size; where Supabase lets it \
                 be changed, the Supabase CLI's postgres-config command sets {setting}={value}{}",
                if restart {
                    " (the database restarts)"
                } else {
                    ""
                }
            ),
            Service::Neon => format!(
                "{setting} is set by Neon from the compute's size; a larger compute changes it"
            ),
        }
    }
}

/// The service `facts` show, if any. Aurora is told from RDS by its own
/// settings' prefix; Supabase before the others, since it may run on one.
pub(crate) fn recognise(facts: &ServerFacts) -> Option<Service> {
    let prefix = |p: &str| facts.setting_prefixes.iter().any(|s| s == p);
    let role = |r: &str| facts.service_roles.iter().any(|s| s == r);
    if role("supabase_admin") || prefix("supautils") {
        Some(Service::Supabase)
    } else if prefix("neon") || role("neon_superuser") {
        Some(Service::Neon)
    } else if prefix("aurora") || prefix("apg") {
        Some(Service::Aurora)
    } else if prefix("rds") || role("rds_superuser") || role("rdsadmin") {
        Some(Service::Rds)
    } else if prefix("cloudsql") || role("cloudsqlsuperuser") {
        Some(Service::CloudSql)
    } else if prefix("azure") || role("azure_pg_admin") || role("azuresu") {
        Some(Service::Azure)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(prefixes: &[&str], roles: &[&str]) -> ServerFacts {
        ServerFacts {
            setting_prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
            service_roles: roles.iter().map(|s| s.to_string()).collect(),
            ..ServerFacts::default()
        }
    }

    #[test]
    fn each_service_is_told_by_its_own_signs() {
        let cases = [
            (facts(&["rds"], &[]), Some(Service::Rds)),
            (
                facts(&["rds", "apg"], &["rds_superuser"]),
                Some(Service::Aurora),
            ),
            (facts(&[], &["cloudsqlsuperuser"]), Some(Service::CloudSql)),
            (facts(&["azure"], &[]), Some(Service::Azure)),
            (facts(&["neon"], &[]), Some(Service::Neon)),
            (
                facts(&["rds"], &["supabase_admin"]),
                Some(Service::Supabase),
            ),
            (facts(&["pg_stat_statements"], &[]), None),
        ];
        for (facts, want) in cases {
            assert_eq!(recognise(&facts), want, "{facts:?}");
        }
    }
}
