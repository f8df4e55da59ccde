//! The other loaders in `pgpour bench`, on small data: each one installed
//! here loads the rows (compared row by row with the data, and the
//! append case too); each missing one is skipped, saying why and how to
//! install it. `PGPOUR_PEERS=required` (CI, which installs them) makes
//! pg_bulkload and pgloader fail the test when they do not run.

use std::sync::atomic::AtomicBool;

use pgpour::ConnectOptions;
use pgpour_bench::gen::Dataset;
use pgpour_bench::{self as bench, BenchOptions, Method, Source, Status};
use pgpour_testkit::shared_cluster;

/// The peers CI installs, which must run there.
const REQUIRED_IN_CI: [Method; 3] = [
    Method::PgBulkloadDirect,
    Method::PgBulkloadParallel,
    Method::Pgloader,
];

#[test]
fn every_installed_loader_loads_the_rows_and_a_missing_one_says_how_to_install_it() {
    let required = std::env::var("PGPOUR_PEERS").is_ok_and(|v| v == "required");
    let db = shared_cluster().create_database("bench_peers");
    // pg_bulkload runs in a database where its extension is created (bench
    // creates none); where the server lacks it, it is skipped.
    let _ = db
        .client()
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_bulkload");
    let connect = ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).unwrap();
    // votes: a serial key the file does not fill; customer: numerics,
    // timestamps, NULLs and a second index; then an append to customer.
    for (dataset, append_to) in [
        (Dataset::Votes, None),
        (Dataset::Customer, None),
        (Dataset::Customer, Some(600)),
    ] {
        let mut methods = vec![Method::CopyCsv];
        methods.extend(Method::PEERS);
        let options = BenchOptions {
            source: Source::Dataset { dataset, rows: 800 },
            methods: methods.clone(),
            repeat: 1,
            sample_seconds: 0.3,
            parallel_sessions: 2,
            pgpour_workers: Some(2),
            work_dir: None,
            check_rows: true,
            append_to,
        };
        let report =
            bench::run(&connect, &options, &AtomicBool::new(false), &|_| {}).expect("bench runs");
        let what = format!("{} append_to={append_to:?}", dataset.name());
        assert_eq!(report.cases.len(), methods.len(), "{what}");
        for case in &report.cases {
            match &case.status {
                Status::Ok => {
                    let stats = case.stats.expect("figures");
                    assert_eq!(stats.rows, 800, "{what} {}", case.method);
                    assert!(stats.client_cpu_seconds >= 0.0);
                }
                Status::Skipped { reason } => {
                    eprintln!("{}: skipped: {reason}", case.method);
                    let method = Method::parse(&case.method).unwrap();
                    assert!(
                        !(required && REQUIRED_IN_CI.contains(&method)),
                        "PGPOUR_PEERS=required, and {} was skipped: {reason}",
                        case.method
                    );
                    assert!(
                        reason.contains("to install") || reason.contains("CREATE EXTENSION"),
                        "{}: {reason}",
                        case.method
                    );
                }
                Status::Failed { reason } => panic!("{what} {}: {reason}", case.method),
            }
        }
    }
}
