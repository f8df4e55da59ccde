//! A server set up as managed services set theirs: no prepared
//! transactions (`max_prepared_transactions = 0`, RDS's and Azure's
//! default). `--atomic` keeps its promise there in one transaction of one
//! worker, and says why; plain loads run as anywhere.

use pgpour::{
    CommitMode, ConnectOptions, Format, FormatOptions, InputSpec, LoadOptions, TableName,
    WorkersFrom,
};
use pgpour_testkit::{assert_same_rows, Cluster, Durability};

use crate::harness::load_via;

#[test]
fn atomic_loads_in_one_transaction_where_the_server_takes_no_prepared_transactions() {
    let cluster = Cluster::start(Durability::Fast).unwrap();
    cluster
        .reconfigure("max_prepared_transactions = 0")
        .unwrap();
    let db = cluster.create_database("no_two_phase");
    let mut client = db.client();
    let prepared: String = client
        .query_one("SHOW max_prepared_transactions", &[])
        .unwrap()
        .get(0);
    assert_eq!(prepared, "0");
    client
        .batch_execute(
            "CREATE TABLE actual (id int PRIMARY KEY, name text); \
             CREATE TABLE expected (id int PRIMARY KEY, name text)",
        )
        .unwrap();
    let text: String = (0..20_000).map(|i| format!("{i},n{}\n", i % 7)).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    std::fs::write(&path, &text).unwrap();
    let mut copy = client
        .copy_in("COPY expected FROM STDIN (FORMAT csv)")
        .unwrap();
    std::io::Write::write_all(&mut copy, text.as_bytes()).unwrap();
    copy.finish().unwrap();

    let connect = ConnectOptions::resolve(Some(&db.conninfo()), &|_| None).unwrap();
    let mut options = LoadOptions::new(
        vec![InputSpec::File(path)],
        TableName::parse("actual").unwrap(),
        FormatOptions::new(Format::Csv),
    );
    options.atomic = true;
    options.workers = Some(4);
    options.chunk_size = 32 * 1024;
    let summary = load_via(&connect, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(summary.atomic, Some(CommitMode::OneTransaction));
    assert_eq!(
        summary.workers_from,
        Some(WorkersFrom::NoPreparedTransactions {
            max_prepared_transactions: 0
        })
    );
    assert_eq!(summary.workers, 1);
    assert_same_rows(&mut client, "atomic without prepared transactions", None);
    let left: i64 = client
        .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}
