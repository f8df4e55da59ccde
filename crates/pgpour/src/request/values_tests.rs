//! Moved from the CLI with the parsers (`args/values.rs`,
//! `args/journal_values.rs`, `config.rs`).

use super::*;

#[test]
fn sizes() {
    assert_eq!(chunk_size("4MiB").unwrap(), 4 << 20);
    assert_eq!(chunk_size("100").unwrap(), 100);
    assert!(chunk_size("0").is_err());
    assert!(chunk_size("2GiB").is_err());
    assert!(chunk_size("4 parsecs").is_err());
}

#[test]
fn every_size_spelling_taken_before_is_taken() {
    let cases: &[(&str, usize)] = &[
        ("100", 100),
        ("1", 1),
        ("100b", 100),
        ("100B", 100),
        ("100 b", 100),
        ("4k", 4 << 10),
        ("4kb", 4 << 10),
        ("4KB", 4 << 10),
        ("4KiB", 4 << 10),
        ("4kib", 4 << 10),
        ("512KiB", 512 << 10),
        ("4m", 4 << 20),
        ("4MB", 4 << 20),
        ("4MiB", 4 << 20),
        ("64MiB", 64 << 20),
        ("4 MiB", 4 << 20),
        (" 4MiB ", 4 << 20),
        ("1g", 1 << 30),
        ("1GB", 1 << 30),
        ("1GiB", 1 << 30),
        ("1gib", 1 << 30),
        ("0004MiB", 4 << 20),
        ("1073741824", 1 << 30),
    ];
    for &(text, bytes) in cases {
        assert_eq!(size_in_bytes(text), Ok(bytes), "{text:?}");
        assert_eq!(chunk_size(text), Ok(bytes), "chunk size {text:?}");
        assert_eq!(max_record_size(text), Ok(bytes), "record size {text:?}");
    }
}

#[test]
fn sizes_refused_before_are_refused() {
    for text in [
        "",
        "0",
        "0MiB",
        "-1",
        "+4",
        "4 parsecs",
        "4TiB",
        "MiB",
        "4.5MiB",
        "4MiB4",
        "4 M iB",
        "99999999999999999999",
        "18446744073709551615g",
    ] {
        assert!(size_in_bytes(text).is_err(), "{text:?}");
    }
    for text in ["2GiB", "1073741825", "1025MiB"] {
        assert!(size_in_bytes(text).is_ok(), "{text:?}");
        let chunk = chunk_size(text).unwrap_err().to_string();
        assert!(chunk.contains("1GiB"), "{chunk}");
        let record = max_record_size(text).unwrap_err().to_string();
        assert!(record.contains("at most 1GiB"), "{record}");
    }
}

#[test]
fn sizes_in_bytes_have_the_bounds_of_sizes_in_words() {
    assert_eq!(chunk_size_bytes(1), Ok(1));
    assert_eq!(chunk_size_bytes(1 << 30), Ok(1 << 30));
    assert_eq!(chunk_size_bytes(0), Err(ValueProblem::SizeZero));
    assert_eq!(
        chunk_size_bytes((1 << 30) + 1),
        Err(ValueProblem::ChunkOverOneGib)
    );
    assert_eq!(max_record_size_bytes(0), Err(ValueProblem::SizeZero));
    assert_eq!(
        max_record_size_bytes((1 << 30) + 1),
        Err(ValueProblem::RecordOverOneGib)
    );
}

#[test]
fn max_errors_is_a_count_or_all() {
    assert_eq!(max_errors("0"), Ok(MaxErrors::Count(0)));
    assert_eq!(max_errors("5"), Ok(MaxErrors::Count(5)));
    assert_eq!(max_errors("+5"), Ok(MaxErrors::Count(5)));
    assert_eq!(max_errors("all"), Ok(MaxErrors::All));
    assert_eq!(max_errors("ALL"), Ok(MaxErrors::All));
    assert_eq!(max_errors("All").map(MaxErrors::limit), Ok(None));
    assert_eq!(max_errors("7").map(MaxErrors::limit), Ok(Some(7)));
    for bad in ["", "-1", " 5", "5 ", "many", "1e3", "18446744073709551616"] {
        assert_eq!(max_errors(bad), Err(ValueProblem::CountOrAll), "{bad:?}");
    }
}

#[test]
fn single_bytes() {
    assert_eq!(single_byte(","), Ok(b','));
    assert_eq!(single_byte("|"), Ok(b'|'));
    assert_eq!(single_byte("\\t"), Ok(b'\t'));
    assert_eq!(single_byte("\t"), Ok(b'\t'));
    for bad in ["", ",,", "\u{e9}", "\\n", "\\\\t"] {
        assert!(single_byte(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn durations_take_units_and_refuse_bare_numbers() {
    let cases = [
        ("30m", 1800),
        ("2h", 7200),
        ("3d", 259_200),
        ("1w", 604_800),
        ("45s", 45),
        ("0s", 0),
        ("1h30m", 5400),
    ];
    for (text, seconds) in cases {
        assert_eq!(duration(text), Ok(Duration::from_secs(seconds)), "{text}");
    }
    for bad in [
        "",
        "5",
        "2x",
        "h",
        "2 h",
        "-1h",
        "1.5h",
        "99999999999999999999d",
    ] {
        let error = duration(bad).expect_err(bad).to_string();
        assert!(error.contains("a number and a unit"), "{bad}: {error}");
    }
}

#[test]
fn states_are_the_words_status_shows() {
    assert_eq!(load_state("failed"), Ok(LoadState::Failed));
    assert_eq!(load_state("Stopped"), Ok(LoadState::Stopped));
    let error = load_state("crashed").expect_err("crashed").to_string();
    assert!(
        error.contains("running, committing, done, failed, stopped"),
        "{error}"
    );
}

#[test]
fn load_ids_are_1_to_128_bytes_without_control_characters() {
    let longest = "\u{e9}".repeat(64);
    for good in [
        "nightly",
        "a",
        "with space",
        "votes-1763790000-3f2a",
        &longest,
    ] {
        assert!(check_load_id(good).is_ok(), "{good:?}");
    }
    let too_long = format!("{longest}x");
    for bad in ["", "a\nb", "a\tb", "\u{0}", "\u{7f}", "\u{9b}", &too_long] {
        let err = check_load_id(bad).unwrap_err().to_string();
        assert!(err.starts_with("must be 1 to 128 bytes with no control characters"));
        assert!(!err.contains('\n') && !err.contains('\t'), "{err}");
    }
}
