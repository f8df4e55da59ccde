//! Numbers as people read them, for the text table and the HTML report alike.

/// 1234567 -> "1.23M", 45600 -> "45.6k", 12 -> "12".
pub fn human(value: f64) -> String {
    match value {
        v if v >= 1e6 => format!("{}M", trim_float((v / 1e4).round() / 100.0)),
        v if v >= 1e3 => format!("{}k", trim_float((v / 1e2).round() / 10.0)),
        v => trim_float((v * 10.0).round() / 10.0),
    }
}

/// 1.5 -> "1.5", 2.0 -> "2": at most two decimals, no trailing zeros.
pub fn trim_float(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// 7500000 -> "7,500,000".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let groups: Vec<String> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|group| String::from_utf8_lossy(group).into_owned())
        .collect();
    groups.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(human(1_234_567.0), "1.23M");
        assert_eq!(human(45_600.0), "45.6k");
        assert_eq!(human(1000.0), "1k");
        assert_eq!(human(12.0), "12");
        assert_eq!(thousands(7_500_000), "7,500,000");
        assert_eq!(thousands(999), "999");
    }
}
