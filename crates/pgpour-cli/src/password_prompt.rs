//! The password asked on the terminal, as psql asks it, when the server
//! wants one that the connection string, PGPASSWORD and the password file
//! did not give. Never without a terminal: a script gets the error, which
//! says where a password can be given.

use std::io::IsTerminal;

use pgpour::{ConnectionProblem, Error};

/// The password typed, when `error` is the server asking for one and a
/// terminal is there to ask on.
pub fn ask(error: &Error) -> Option<String> {
    let Error::InvalidConnection(ConnectionProblem::PasswordNeeded { user, .. }) = error else {
        return None;
    };
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    rpassword::prompt_password(format!("Password for user {user}: ")).ok()
}
