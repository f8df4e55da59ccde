//! What `tune` cannot do, and why.

/// A change `tune --apply` refuses to make.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TuneProblem {
    /// Managed services refuse ALTER SYSTEM; their settings change in the
    /// service's own console or API.
    #[error(
        "this server runs on {service}, which changes settings in its own console or API, \
         never by ALTER SYSTEM: make the changes shown there"
    )]
    Managed { service: &'static str },
    /// The role may not ALTER SYSTEM every setting, may not read
    /// `pg_file_settings` to record what `revert` must restore, or may not
    /// reload the configuration.
    #[error(
        "applying needs a superuser, or (PostgreSQL 15 and later) a role granted \
         ALTER SYSTEM ON PARAMETER {}, SELECT on pg_file_settings and EXECUTE on \
         pg_show_all_file_settings() (to record the old values for revert), and EXECUTE on \
         pg_reload_conf() (to bring the changes into effect); nothing was changed",
        settings.join(", ")
    )]
    MayNotAlterSystem { settings: Vec<String> },
    /// The server's settings came back in a shape this pgpour does not know.
    #[error("the server's settings came back in an unexpected shape")]
    UnexpectedAnswer,
}
