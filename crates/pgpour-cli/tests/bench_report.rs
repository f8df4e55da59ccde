//! `pgpour bench` end to end: the command's table, JSON and HTML report, and
//! the report's charts as headless Chromium actually draws them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{pgpour, text};
use pgpour_bench::report::html::{COPY_COLOUR, INSERT_COLOUR, LINE_COLOURS, PARALLEL_COLOUR};
use pgpour_testkit::shared_cluster;

#[test]
fn bench_prints_a_table_writes_json_and_a_report_that_renders() {
    let db = shared_cluster().create_database("cli_bench");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("bench.html");
    let out = pgpour(
        &[
            "bench",
            "--dataset",
            "kv",
            "--rows",
            "20000",
            "--repeat",
            "2",
            "--sample-seconds",
            "0.2",
            "--db",
            &db.conninfo(),
            "--report",
            report.to_str().unwrap(),
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let cases = json["cases"].as_array().unwrap();
    assert_eq!(cases.len(), pgpour_bench::Method::ALL.len());
    for case in cases {
        let method = pgpour_bench::Method::parse(case["method"].as_str().unwrap()).unwrap();
        // The other loaders run where installed, else say why not.
        if method.is_peer() && case["status"] == "skipped" {
            continue;
        }
        assert_eq!(case["status"], "ok", "{case}");
        assert_eq!(case["runs"].as_array().unwrap().len(), 2);
    }
    assert_eq!(json["rows"], 20000);
    assert_eq!(json["baseline"], "copy-csv");

    let png = render(&report, dir.path());
    let pixels = |colour: &str| count_pixels(&png, colour);
    // Thirteen bars, each at least 22 pixels high and 100 wide, in three
    // colours.
    assert!(pixels(INSERT_COLOUR) > 5 * 2000, "INSERT bars");
    assert!(pixels(COPY_COLOUR) > 6 * 2000, "COPY bars");
    assert!(
        pixels(PARALLEL_COLOUR) > 2 * 2000,
        "parallel and pgpour bars"
    );
    // Three lines and their legend swatches (56 pixels each). The slowest
    // run's line spans most of the 850-pixel time axis, whichever it is.
    let lines: usize = LINE_COLOURS.iter().map(|c| pixels(c)).sum();
    assert!(lines > 3 * 56 + 400, "throughput lines: {lines} pixels");
}

#[test]
fn bench_table_on_stdout_and_bad_options() {
    let db = shared_cluster().create_database("cli_bench_table");
    let out = pgpour(
        &[
            "bench",
            "--rows",
            "2000",
            "--repeat",
            "1",
            "--methods",
            "copy-csv,insert-tx",
            "--sample-seconds",
            "0.1",
            "--db",
            &db.conninfo(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("copy-csv") && stdout.contains("1.00x"),
        "{stdout}"
    );
    assert!(stdout.contains("settings: wal_level="), "{stdout}");

    let out = pgpour(
        &["bench", "--methods", "copy-json", "--db", &db.conninfo()],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown bench method \"copy-json\""));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.csv");
    std::fs::write(&file, "1,2\n").unwrap();
    let args = [
        "bench",
        "--file",
        file.to_str().unwrap(),
        "--table",
        "missing",
    ];
    let out = pgpour(&[&args[..], &["--db", &db.conninfo()]].concat(), None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "reading the columns of table \"missing\": relation \"missing\" does not exist"
        ),
        "{stderr}"
    );
    let out = pgpour(&["bench", "--delimiter", ";", "--db", &db.conninfo()], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--file"));
}

/// Renders the page in headless Chromium and returns the screenshot.
fn render(page: &Path, dir: &Path) -> png_image::Image {
    let chromium = chromium();
    let shot = dir.join("bench.png");
    let status = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1100,3200",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .env("HOME", dir)
        .output()
        .expect("run chromium");
    assert!(shot.exists(), "no screenshot: {}", text(&status.stderr));
    png_image::read(&shot)
}

/// Debian's chromium; installed (as the test kit installs PostgreSQL) when
/// missing and we are root.
fn chromium() -> PathBuf {
    let find = || {
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|name| which(name))
    };
    if let Some(path) = find() {
        return path;
    }
    if unsafe_is_root() {
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
    }
    find().expect("the HTML report test needs Chromium: apt-get install chromium")
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
}

fn unsafe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn count_pixels(image: &png_image::Image, colour: &str) -> usize {
    let hex = |i: usize| u8::from_str_radix(&colour[i..i + 2], 16).unwrap();
    let wanted = [hex(1), hex(3), hex(5)];
    image
        .rgb
        .chunks_exact(3)
        .filter(|px| px.iter().zip(wanted).all(|(a, b)| a.abs_diff(b) <= 2))
        .count()
}

/// Just enough PNG decoding for pixel counts.
mod png_image {
    pub struct Image {
        pub rgb: Vec<u8>,
    }

    pub fn read(path: &std::path::Path) -> Image {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let bytes = &buf[..info.buffer_size()];
        let channels = info.color_type.samples();
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        let rgb = bytes
            .chunks_exact(channels)
            .flat_map(|px| px[..3].to_vec())
            .collect();
        Image { rgb }
    }
}
