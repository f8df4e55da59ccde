//! The Python package's own tests (`crates/pgpour-py/tests`, pytest), run
//! by `cargo test` so that the README's one test command covers them.
//!
//! The package is installed as a user installs it from a checkout (`pip
//! install ./crates/pgpour-py`, maturin as the build backend) into a
//! virtual environment under `target/python/venv`, made once with pytest,
//! maturin and pyarrow from PyPI; later runs only rebuild what changed (a
//! debug build, sharing the workspace's target directory). pytest then
//! runs against the test kit's cluster, the database in
//! `PGPOUR_TEST_CONNINFO`, and this crate's `pgpour` binary in `PGPOUR_BIN`
//! for the tests that compare with the CLI.
//!
//! Needs Python 3.9 or newer with venv and pip (`PGPOUR_PYTHON` names the
//! interpreter, default `python3`); `PGPOUR_PYTHON=skip` skips the test,
//! saying so. `PGPOUR_PYTEST_ARGS` adds arguments to pytest's, split at
//! spaces: `PGPOUR_PYTEST_ARGS="-k frames -x"` runs some tests only.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the virtual environment gets from PyPI; a new line here makes it
/// anew.
/// polars and pandas are there for the in-memory tests of their frames.
const REQUIREMENTS: &str = "maturin>=1.9.4,<2\npytest>=7\npyarrow>=14\npolars>=1\npandas>=2.2\n";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace's directory")
}

/// Runs `command`, failing the test with its output when it fails.
fn run(command: &mut Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e}"));
    if !output.status.success() {
        panic!(
            "{what} failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The virtual environment, made (or made anew, when the requirements
/// changed) with its requirements installed; its python.
fn venv(python: &str, dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    let stamp = dir.join("requirements.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(REQUIREMENTS) {
        let _ = std::fs::remove_dir_all(dir);
        run(
            Command::new(python).args(["-m", "venv"]).arg(dir),
            "making the virtual environment",
        );
        run(
            Command::new(bin.join("pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(REQUIREMENTS.lines()),
            "installing maturin, pytest, pyarrow, polars and pandas",
        );
        std::fs::write(&stamp, REQUIREMENTS).expect("writing the requirements' stamp");
    }
    bin.join("python")
}

#[test]
fn the_python_package_passes_its_tests() {
    let python = std::env::var("PGPOUR_PYTHON").unwrap_or_else(|_| "python3".into());
    if python == "skip" {
        eprintln!("PGPOUR_PYTHON=skip: the Python package's tests did not run");
        return;
    }
    let root = workspace();
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let venv_python = venv(&python, &target.join("python/venv"));
    let bin = venv_python.parent().expect("the venv's bin").to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    run(
        Command::new(&venv_python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-build-isolation", "--no-deps", "--force-reinstall"])
            .arg(root.join("crates/pgpour-py"))
            .env("PATH", &path)
            // A debug build: the tests load small files, and it shares
            // the engine's build with `cargo test`.
            .env("MATURIN_PEP517_ARGS", "--profile dev"),
        "pip install ./crates/pgpour-py",
    );
    let cluster = pgpour_testkit::shared_cluster();
    let db = cluster.create_database("python");
    let psql = cluster
        .bin_dir()
        .map(|dir| dir.join("psql"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| "psql".into());
    let status = Command::new(&venv_python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("crates/pgpour-py/tests"))
        .args(
            std::env::var("PGPOUR_PYTEST_ARGS")
                .unwrap_or_default()
                .split_whitespace(),
        )
        .current_dir(&root)
        .env("PATH", &path)
        .env("PGPOUR_TEST_CONNINFO", db.conninfo())
        .env("PGPOUR_BIN", env!("CARGO_BIN_EXE_pgpour"))
        .env("PGPOUR_PSQL", psql)
        // The tests' own environment must not leak into the connection.
        .env_remove("PGHOST")
        .env_remove("PGDATABASE")
        .env_remove("PGPASSWORD")
        .env_remove("PGCLIENTENCODING")
        .status()
        .expect("running pytest");
    assert!(status.success(), "pytest failed: {status}");
}
