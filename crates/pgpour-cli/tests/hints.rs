//! The engine says what went wrong; `pgpour` adds the flag or the command
//! that fixes it. End to end: the words the user reads on stderr, and in
//! `--json`'s `error`.

mod common;

use common::{pgpour, text};
use pgpour_testkit::shared_cluster;

/// An error's cause (here the OS's) is printed once, not once more after
/// the engine's own text: `{:#}` used to repeat it.
#[test]
fn an_unreadable_input_names_its_cause_once() {
    let out = pgpour(
        &["load", "--explain", "/nonexistent/x.csv", "--table", "t"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot read /nonexistent/x.csv: "),
        "{stderr}"
    );
    assert_eq!(stderr.matches("(os error 2)").count(), 1, "{stderr}");
}

/// Moved here from the engine's trust test: the engine says the journal
/// cannot be trusted and why; `pgpour` says to load with `--no-journal`.
#[test]
fn an_untrusted_journal_says_to_load_with_no_journal() {
    let db = shared_cluster().create_database("hint_untrusted");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "1\n2\n").unwrap();
    let conninfo = db.conninfo();
    let args = [
        "load",
        file.to_str().unwrap(),
        "--table",
        "t",
        "--db",
        &conninfo,
    ];
    assert_eq!(pgpour(&args, None).status.code(), Some(0));
    db.client()
        .batch_execute(
            "CREATE FUNCTION pgpour.planted() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN RETURN NEW; END $$; \
             CREATE TRIGGER planted BEFORE INSERT ON pgpour.loads \
               FOR EACH ROW EXECUTE FUNCTION pgpour.planted()",
        )
        .unwrap();

    let out = pgpour(&args, None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot be trusted") && stderr.contains("planted"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Load with --no-journal"),
        "says how to go on: {stderr}"
    );
    let out = pgpour(&[&args[..], &["--no-journal"]].concat(), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// Moved here from the engine's restore test: a rebuild the server refuses
/// stays pending, and `pgpour` says which command finishes it.
#[test]
fn a_refused_rebuild_says_pgpour_resume_finishes_it() {
    let db = shared_cluster().create_database("hint_restore");
    let mut client = db.client();
    // A trigger gives every row the same id: the load drops the primary key
    // (the ids come from a sequence), and the key cannot be built again.
    client
        .batch_execute(
            "CREATE TABLE actual (id serial PRIMARY KEY, name text); \
             CREATE FUNCTION same_id() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN NEW.id := -7; RETURN NEW; END $$; \
             CREATE TRIGGER same_id BEFORE INSERT ON actual \
               FOR EACH ROW EXECUTE FUNCTION same_id()",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "a\nb\n").unwrap();
    // The load loads both rows, then its rebuild fails and stays pending:
    // it says so, and neither that rows were left out nor that a resume
    // would stop at the same place.
    let load = pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "--table",
            "actual",
            "--columns",
            "name",
            "--load-id",
            "refused",
            // Two chunks: a smaller input keeps its indexes.
            "--chunk-size",
            "2B",
            "--db",
            &db.conninfo(),
        ],
        None,
    );
    assert_eq!(load.status.code(), Some(2));
    let stderr = text(&load.stderr);
    assert!(
        stderr.contains("the rows are loaded, but index actual_pkey could not be restored")
            && stderr.contains("2 rows were loaded and 0 rejected")
            && !stderr.contains("the rest was not loaded")
            && !stderr.contains("resuming would stop at the same place"),
        "{stderr}"
    );

    let out = pgpour(&["forget", "refused", "--db", &db.conninfo()], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("index actual_pkey could not be restored"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fix the cause, then `pgpour resume refused` restores it"),
        "{stderr}"
    );
}

/// `--json` users read the same message as stderr's, hint included, and
/// the SQLSTATE beside it.
#[test]
fn json_error_is_the_message_with_its_hint() {
    let db = shared_cluster().create_database("hint_json");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "1\nx\n2\ny\nz\n").unwrap();
    let conninfo = db.conninfo();
    let out = pgpour(
        &[
            "load",
            file.to_str().unwrap(),
            "--table",
            "t",
            "--db",
            &conninfo,
            "--max-errors",
            "1",
            "--workers",
            "1",
            "--json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let error = summary["error"].as_str().unwrap();
    assert!(
        error.contains("(stopping: more than 1 rows rejected, see --max-errors)"),
        "{error}"
    );
    assert_eq!(summary["sqlstate"], "22P02");
    assert!(
        text(&out.stderr).contains(&format!("pgpour: error: {error}\n")),
        "{}",
        text(&out.stderr)
    );
}

/// Options refused before anything moved name the flags the user typed.
#[test]
fn refused_options_name_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "1\n").unwrap();
    let file = file.to_str().unwrap();
    for (extra, expected) in [
        (
            &["--table", "a.b.c"][..],
            "pgpour: error: --table \"a.b.c\": expected table or schema.table",
        ),
        (
            &["--table", "t", "--delimiter", "\""][..],
            "pgpour: error: --quote and --delimiter must differ",
        ),
        (
            &["--table", "t", "--format", "text", "--quote", "'"][..],
            "pgpour: error: --quote and --escape are only available with --format csv",
        ),
        (
            &["--table", "t", "--db", "host=/tmp x"][..],
            "pgpour: error: invalid --db connection string: a word that is not name=value",
        ),
        (
            &["--table", "t", "--db", "host=/tmp sslmod=require"][..],
            "pgpour: error: connection option \"sslmod\": libpq has no such option",
        ),
        (
            &["--table", "t", "--db", "host=/tmp gssencmode=require"][..],
            "pgpour: error: gssencmode=require: pgpour does not do GSSAPI encryption",
        ),
    ] {
        let out = pgpour(&[&["load", file][..], extra].concat(), None);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with(expected), "{extra:?}: {stderr}");
    }
}

/// A header that does not name the columns says which flag asked for the
/// check, and the table that differs only in case how to name it.
#[test]
fn header_and_table_name_hints() {
    let db = shared_cluster().create_database("hint_header");
    db.client()
        .batch_execute(r#"CREATE TABLE t (a int, b int); CREATE TABLE "Votes" (n int)"#)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "a,wrong\n1,2\n").unwrap();
    let conninfo = db.conninfo();
    let load = |extra: &[&str]| {
        let base = ["load", file.to_str().unwrap(), "--db", &conninfo];
        pgpour(&[&base[..], extra].concat(), None)
    };
    let out = load(&["--table", "t", "--header", "match"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            r#":1: header ["a", "wrong"] does not match the columns ["a", "b"] (--header match)"#
        ),
        "{stderr}"
    );
    let out = load(&["--table", "Votes"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(r#"e.g. --table 'public."Votes"'"#),
        "{stderr}"
    );
}

/// `--explain` says which flag keeps the indexes and the sequence as they
/// are, in its text and its JSON; the engine says "on request".
#[test]
fn explain_names_the_flags_that_keep_indexes_and_sequences() {
    let db = shared_cluster().create_database("hint_explain_keep");
    db.client()
        .batch_execute(
            // A key to another table: a key to the table itself kept in
            // place makes the load one transaction, whose words differ.
            "CREATE TABLE p (id int PRIMARY KEY);
             CREATE TABLE t (id serial PRIMARY KEY, v text, parent int REFERENCES p(id))",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "a\nb\n").unwrap();
    let conninfo = db.conninfo();
    let args = [
        "load",
        file.to_str().unwrap(),
        "--table",
        "t",
        "--columns",
        "v",
        "-d",
        &conninfo,
        "--explain",
        "--workers",
        "2",
        "--keep-indexes",
        "--keep-sequences",
        "--keep-foreign-keys",
    ];
    let out = pgpour(&args, None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("indexes kept in place: --keep-indexes"),
        "{stdout}"
    );
    assert!(stdout.contains(": --keep-sequences"), "{stdout}");
    assert!(
        stdout.contains("  keys     foreign keys kept in place")
            && stdout.contains("further down the file): --keep-foreign-keys"),
        "{stdout}"
    );
    let out = pgpour(&[&args[..], &["--json"]].concat(), None);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["indexes"]["not_used"], "--keep-indexes");
    assert_eq!(json["sequences"]["kept"][0][1], "--keep-sequences");
    assert_eq!(json["foreign_keys"]["not_used"], "--keep-foreign-keys");
}

/// `pgpour resume` is offered where it can help (a bad row stopped the
/// load: resume with a higher --max-errors), not where it would stop at
/// the same place (a header that does not match the columns).
#[test]
fn resume_is_offered_only_where_it_can_help() {
    let db = shared_cluster().create_database("hint_resume_or_fix");
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conninfo = db.conninfo();
    let load = |name: &str, body: &str, extra: &[&str]| {
        let file = dir.path().join(name);
        std::fs::write(&file, body).unwrap();
        let args = [
            "load",
            file.to_str().unwrap(),
            "--table",
            "t",
            "--db",
            &conninfo,
            "--load-id",
            name,
        ];
        let out = pgpour(&[&args[..], extra].concat(), None);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let stderr = load("bad-row", "1\nx\n3\n", &[]);
    assert!(
        stderr.contains("continue it with: pgpour resume bad-row --max-errors all"),
        "{stderr}"
    );
    let stderr = load("misnamed", "m\n1\n", &["--header", "match"]);
    assert!(
        stderr.contains("nothing was committed: fix the cause and run the same command again"),
        "{stderr}"
    );
    assert!(!stderr.contains("pgpour resume"), "{stderr}");
}

/// A load stopped at a row that points to an option says which flag
/// fixes it: a header loaded as data, another delimiter, another encoding.
#[test]
fn a_row_that_points_to_an_option_names_the_flag() {
    let db = shared_cluster().create_database("hint_row_options");
    db.client()
        .batch_execute("CREATE TABLE t (country text, year int, pop bigint)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let conninfo = db.conninfo();
    let stderr_of = |name: &str, body: &[u8]| {
        let file = dir.path().join(name);
        std::fs::write(&file, body).unwrap();
        let args = [
            "load",
            file.to_str().unwrap(),
            "--table",
            "t",
            "--db",
            &conninfo,
        ];
        let out = pgpour(&args, None);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let stderr = stderr_of("gapminder.csv", b"country,year,pop\nChad,1952,2682462\n");
    assert!(
        stderr.contains(":1, column year") && stderr.contains("add --header"),
        "{stderr}"
    );
    let stderr = stderr_of("semicolons.csv", b"Chad;1952;2682462\n");
    assert!(stderr.contains("with --delimiter ';' it has 3"), "{stderr}");
    let stderr = stderr_of("latin1.csv", b"Chad,1952,1\nM\xfcnster,1952,2\n");
    assert!(stderr.contains("add --encoding LATIN1"), "{stderr}");
    let rows: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert!(rows <= 1, "{rows}");
}

/// `--explain` reads the inputs' first lines and says what would stop the
/// load, before anything is loaded.
#[test]
fn explain_reads_the_first_lines_and_says_what_would_stop_the_load() {
    let db = shared_cluster().create_database("hint_explain_first_lines");
    db.client()
        .batch_execute("CREATE TABLE t (country text, year int, pop bigint)")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        path.to_str().unwrap().to_string()
    };
    let header = write("header.csv", "country,year,pop\nChad,1952,1\n");
    let semicolons = write("semi.csv", "Chad;1952;1\n");
    let fine = write("fine.csv", "Chad,1952,1\n");
    let conninfo = db.conninfo();
    let explain = |files: &[&str], extra: &[&str]| {
        let args = [
            &["load"][..],
            files,
            &["-t", "t", "-d", &conninfo, "--explain"],
            extra,
        ]
        .concat();
        let out = pgpour(&args, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let said = explain(&[&header, &semicolons, &fine], &[]);
    assert!(
        said.contains("inputs   3 files") && said.contains("(csv, delimiter ',', no header)"),
        "{said}"
    );
    assert!(
        said.contains("header.csv: the file seems to have a header: add --header"),
        "{said}"
    );
    assert!(
        said.contains("semi.csv: the line has 1 field") && said.contains("--delimiter ';'"),
        "{said}"
    );
    assert!(!said.contains("fine.csv: "), "{said}");
    let said = explain(&[&fine], &["--header", "match"]);
    assert!(
        said.contains("the header (Chad, 1952, 1) is not the columns (country, year, pop)"),
        "{said}"
    );
    let json: serde_json::Value = serde_json::from_str(&explain(&[&header], &["--json"])).unwrap();
    assert_eq!(json["inputs"][0]["hints"][0]["hint"], "header", "{json}");
    let rows: i64 = db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "nothing loaded");
}

/// Nothing listening: the message names the socket or the host and port
/// tried, and asks what psql asks.
#[test]
fn an_unreachable_server_is_named_with_what_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "1\n").unwrap();
    let file = file.to_str().unwrap();
    let socket_dir = dir.path().join("no-server");
    let socket = format!("host={} port=5499 user=x dbname=x", socket_dir.display());
    let out = pgpour(&["load", file, "-t", "t", "-d", &socket], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "connection to server on socket \"{}/.s.PGSQL.5499\" failed",
            socket_dir.display()
        )) && stderr
            .contains("is the server running locally and accepting connections on that socket?"),
        "{stderr}"
    );
    // A port nothing listens on (bound, then closed, so refused).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tcp = format!("host=127.0.0.1 port={port} user=x dbname=x sslmode=disable");
    let out = pgpour(&["load", file, "-t", "t", "-d", &tcp], None);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "connection to server at \"127.0.0.1\", port {port} failed"
        )) && stderr.contains("accepting TCP/IP connections?"),
        "{stderr}"
    );
}

/// A database with `t (n int)`, a file of `body` to load into it, and a
/// connection string over TCP that gives no password (an empty password
/// file: none from ~/.pgpass either); `None` for an external cluster.
struct PasswordAsked {
    db: pgpour_testkit::TestDb<'static>,
    _dir: tempfile::TempDir,
    file: std::path::PathBuf,
    conninfo: String,
}

fn password_asked(name: &str, body: &str) -> Option<PasswordAsked> {
    let cluster = shared_cluster();
    let Some((host, port)) = cluster.tcp() else {
        eprintln!("skipped: the cluster is external (PGPOUR_TEST_DB)");
        return None;
    };
    let db = cluster.create_database(name);
    db.client().batch_execute("CREATE TABLE t (n int)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv");
    std::fs::write(&file, body).unwrap();
    let passfile = dir.path().join("pgpass");
    std::fs::write(&passfile, "").unwrap();
    let conninfo = format!(
        "host={host} port={port} user=postgres dbname={} sslmode=disable passfile={}",
        db.name,
        passfile.display()
    );
    Some(PasswordAsked {
        db,
        _dir: dir,
        file,
        conninfo,
    })
}

/// A server that asks for a password, none given and no terminal to ask
/// on: the message says where a password can be given.
#[test]
fn a_password_the_server_asks_for_says_where_to_give_it() {
    let Some(setup) = password_asked("hint_password", "1\n") else {
        return;
    };
    let file = setup.file.to_str().unwrap();
    let out = pgpour(&["load", file, "-t", "t", "-d", &setup.conninfo], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the server asks for a password for user \"postgres\"")
            && stderr.contains("PGPASSWORD")
            && stderr.contains("~/.pgpass"),
        "{stderr}"
    );
}

/// On a terminal, the password the server asks for is asked for, as psql
/// does, and the load goes on with it (the terminal made by `script`).
#[test]
fn on_a_terminal_the_password_is_asked_for() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no `script` to make a terminal");
        return;
    }
    let Some(setup) = password_asked("hint_password_prompt", "1\n2\n") else {
        return;
    };
    let command = format!(
        "{} load {} -t t -d '{}' -q",
        env!("CARGO_BIN_EXE_pgpour"),
        setup.file.display(),
        setup.conninfo
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("PGPASSWORD")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Typed once the prompt is up.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write;
    writeln!(stdin, "{}", pgpour_testkit::SUPERUSER_PASSWORD).unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = text(&out.stdout);
    assert!(shown.contains("Password for user postgres:"), "{shown}");
    assert_eq!(out.status.code(), Some(0), "{shown}{}", text(&out.stderr));
    let rows: i64 = setup
        .db
        .client()
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 2);
}

/// With the default `--max-errors 0`, a unique key the file fills is built
/// once every row is in: a duplicate stops the load then (exit 2), naming
/// the key and both lines, the kept one and the later one, and the two
/// ways on; the key stays away, other writers kept out, until one is
/// taken. A missing reference of a foreign key taken off is said the same
/// way, with its file, line and key.
#[test]
fn a_key_refused_at_the_end_names_its_lines_and_the_two_ways_on() {
    let db = shared_cluster().create_database("hint_key_end");
    let mut client = db.client();
    client
        .batch_execute(
            "CREATE TABLE kv (id int PRIMARY KEY, v text); \
             CREATE TABLE emp (id int PRIMARY KEY, manager int REFERENCES emp(id))",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("kv.csv");
    let body: String = (1..=2000)
        .map(|i| match i {
            1500 => "7,again\n".to_string(),
            _ => format!("{i},v{i}\n"),
        })
        .collect();
    std::fs::write(&kv, &body).unwrap();
    let conninfo = db.conninfo();
    let load = |file: &std::path::Path, table: &str, id: &str| {
        pgpour(
            &[
                "load",
                file.to_str().unwrap(),
                "--table",
                table,
                "--load-id",
                id,
                "--workers",
                "2",
                "--chunk-size",
                "2KiB",
                "--db",
                &conninfo,
            ],
            None,
        )
    };
    let out = load(&kv, "kv", "kv-dup");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for said in [
        "kv.csv:1500",
        "kv_pkey",
        "from line 7 of",
        "pgpour resume kv-dup --max-errors all",
        "pgpour forget kv-dup",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
    let indexes: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_index WHERE indrelid = 'kv'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(indexes, 0, "the key stays away");
    let other = client.batch_execute("INSERT INTO kv VALUES (5000, 'x')");
    assert_eq!(
        other.unwrap_err().code().map(|c| c.code()),
        Some("55006"),
        "other writers are kept out"
    );
    let out = pgpour(
        &["resume", "kv-dup", "--max-errors", "all", "--db", &conninfo],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let rejected = std::fs::read_to_string(dir.path().join("kv.csv.rejected.csv"))
        .or_else(|_| std::fs::read_to_string(dir.path().join("kv.rejected.csv")));
    assert_eq!(rejected.ok().as_deref(), Some("7,again\n"));
    let rows: i64 = client
        .query_one("SELECT count(*) FROM kv WHERE id = 7 AND v = 'v7'", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 1, "the first line of the key stays");

    let emp = dir.path().join("emp.csv");
    let body: String = (1..=2000)
        .map(|i| match i {
            1200 => "1200,99999\n".to_string(),
            2000 => "2000,\n".to_string(),
            _ => format!("{i},{}\n", i + 1),
        })
        .collect();
    std::fs::write(&emp, &body).unwrap();
    let out = load(&emp, "emp", "emp-missing");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for said in [
        "emp.csv:1200",
        "emp_manager_fkey",
        "pgpour resume emp-missing --max-errors all",
        "pgpour forget emp-missing",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
}
