//! The typed values of the flags that pick loads in the journal (`status`,
//! `forget`): a load's state, and how long ago.

use std::time::Duration;

use pgpour::LoadState;

/// `--state`: one of the states `pgpour status` shows.
pub fn load_state(text: &str) -> Result<LoadState, String> {
    LoadState::ALL
        .into_iter()
        .find(|state| text.eq_ignore_ascii_case(&state.to_string()))
        .ok_or_else(|| {
            let names: Vec<String> = LoadState::ALL.iter().map(|s| s.to_string()).collect();
            format!("not a state of a load: one of {}", names.join(", "))
        })
}

/// `--since`, `--older-than`: numbers each followed by a unit, s, m, h, d
/// or w (`30m`, `2h`, `3d`, `1h30m`). A bare number is refused: minutes
/// and days are both likely meant.
pub fn duration(text: &str) -> Result<Duration, String> {
    let bad =
        || "a duration is a number and a unit: s, m, h, d or w (30m, 2h, 3d, 1h30m)".to_string();
    let mut seconds: u64 = 0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_end = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .map_or(rest.len(), |i| digits + i);
        let unit = match &rest[digits..unit_end] {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return Err(bad()),
        };
        seconds = number
            .checked_mul(unit)
            .and_then(|part| seconds.checked_add(part))
            .ok_or_else(bad)?;
        rest = &rest[unit_end..];
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let error = duration(bad).expect_err(bad);
            assert!(error.contains("a number and a unit"), "{bad}: {error}");
        }
    }

    #[test]
    fn states_are_the_words_status_shows() {
        assert_eq!(load_state("failed"), Ok(LoadState::Failed));
        assert_eq!(load_state("Stopped"), Ok(LoadState::Stopped));
        let error = load_state("crashed").expect_err("crashed");
        assert!(
            error.contains("running, committing, done, failed, stopped"),
            "{error}"
        );
    }
}
