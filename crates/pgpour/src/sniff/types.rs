//! Which PostgreSQL type a column's sampled values all read as, the way the
//! server reads them whatever its settings: only spellings every supported
//! version and every DateStyle read alike. Anything less certain is text,
//! which loads every value as it is.

use serde::Serialize;

/// A column's type, from the narrowest that fits every value. Serialized
/// as SQL writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SniffedType {
    Boolean,
    Integer,
    Bigint,
    Numeric,
    DoublePrecision,
    Date,
    Timestamp,
    Timestamptz,
    Time,
    Uuid,
    /// JSON as written: what the sniff chooses, since jsonb keeps only the
    /// last of duplicate keys and reorders them, without a word.
    Json,
    /// Only when `--types` asks for it.
    Jsonb,
    Text,
}

impl Serialize for SniffedType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.sql())
    }
}

impl SniffedType {
    /// The type as `CREATE TABLE` writes it.
    pub fn sql(self) -> &'static str {
        match self {
            SniffedType::Boolean => "boolean",
            SniffedType::Integer => "integer",
            SniffedType::Bigint => "bigint",
            SniffedType::Numeric => "numeric",
            SniffedType::DoublePrecision => "double precision",
            SniffedType::Date => "date",
            SniffedType::Timestamp => "timestamp",
            SniffedType::Timestamptz => "timestamptz",
            SniffedType::Time => "time",
            SniffedType::Uuid => "uuid",
            SniffedType::Json => "json",
            SniffedType::Jsonb => "jsonb",
            SniffedType::Text => "text",
        }
    }

    /// The name `--types` takes for it, or a PostgreSQL type given there.
    pub fn parse(name: &str) -> Option<SniffedType> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "boolean" | "bool" => SniffedType::Boolean,
            "integer" | "int" | "int4" => SniffedType::Integer,
            "bigint" | "int8" => SniffedType::Bigint,
            "numeric" | "decimal" => SniffedType::Numeric,
            "double precision" | "float8" | "double" => SniffedType::DoublePrecision,
            "date" => SniffedType::Date,
            "timestamp" => SniffedType::Timestamp,
            "timestamptz" => SniffedType::Timestamptz,
            "time" => SniffedType::Time,
            "uuid" => SniffedType::Uuid,
            "json" => SniffedType::Json,
            "jsonb" => SniffedType::Jsonb,
            "text" => SniffedType::Text,
            _ => return None,
        })
    }
}

/// The types tried, narrowest first; text always fits.
const ORDER: [SniffedType; 11] = [
    SniffedType::Boolean,
    SniffedType::Integer,
    SniffedType::Bigint,
    SniffedType::Numeric,
    SniffedType::DoublePrecision,
    SniffedType::Date,
    SniffedType::Timestamp,
    SniffedType::Timestamptz,
    SniffedType::Time,
    SniffedType::Uuid,
    SniffedType::Json,
];

/// Narrows a column's type value by value.
#[derive(Clone, Debug)]
pub(crate) struct Narrowing {
    /// Which of `ORDER` every value so far fits.
    fits: [bool; ORDER.len()],
    pub values: u64,
}

impl Default for Narrowing {
    fn default() -> Self {
        Narrowing {
            fits: [true; ORDER.len()],
            values: 0,
        }
    }
}

impl Narrowing {
    /// The narrowing of one value.
    pub fn of(value: &str) -> Narrowing {
        let mut narrowing = Narrowing::default();
        narrowing.add(value);
        narrowing
    }

    pub fn add(&mut self, value: &str) {
        self.values += 1;
        for (fits, kind) in self.fits.iter_mut().zip(ORDER) {
            *fits = *fits && reads_as(kind, value);
        }
    }

    /// Whether `value` fits the type chosen so far (text: always).
    pub fn would_fit(&self, value: &str) -> bool {
        match self.chosen() {
            SniffedType::Text => true,
            kind => reads_as(kind, value),
        }
    }

    /// The narrowest type every value fits; text for a column with none.
    pub fn chosen(&self) -> SniffedType {
        if self.values == 0 {
            return SniffedType::Text;
        }
        ORDER
            .iter()
            .zip(self.fits)
            .find(|(_, fits)| *fits)
            .map_or(SniffedType::Text, |(kind, _)| *kind)
    }
}

/// Whether the server reads `value` as `kind`, in every setting.
pub(crate) fn reads_as(kind: SniffedType, value: &str) -> bool {
    match kind {
        SniffedType::Boolean => matches!(
            value.to_ascii_lowercase().as_str(),
            "t" | "f" | "true" | "false" | "yes" | "no" | "y" | "n" | "on" | "off"
        ),
        SniffedType::Integer => integer(value).is_some_and(|v| i32::try_from(v).is_ok()),
        SniffedType::Bigint => integer(value).is_some(),
        // numeric reads NaN and the infinities as float8 does (since
        // PostgreSQL 14), and keeps every digit: a double would round
        // 9007199254740993 and 3.14159265358979323846.
        SniffedType::Numeric => decimal(value) || special_float(value),
        SniffedType::DoublePrecision => {
            (decimal(value) && float_in_range(value)) || special_float(value)
        }
        SniffedType::Date => date(value.as_bytes()).is_some_and(<[u8]>::is_empty),
        SniffedType::Timestamp => timestamp(value.as_bytes()) == Some(false),
        SniffedType::Timestamptz => timestamp(value.as_bytes()) == Some(true),
        SniffedType::Time => time(value.as_bytes()).is_some_and(|rest| rest.is_empty()),
        SniffedType::Uuid => crate::encode::exact_uuid(value.as_bytes()).is_some(),
        // json reads more than jsonb; the narrower test serves both.
        SniffedType::Json | SniffedType::Jsonb => jsonb(value),
        SniffedType::Text => true,
    }
}

/// `[+-]?digits` without leading zeros (which zip codes and ids carry, and
/// an integer column would drop), within 64 bits.
fn integer(value: &str) -> Option<i64> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    crate::encode::exact_integer(value.as_bytes(), i64::MIN, i64::MAX)
}

/// `[+-]?digits[.digits][e[+-]digits]`, leading zeros refused as for
/// integers; longer integers than 64 bits too.
fn decimal(value: &str) -> bool {
    let body = value.strip_prefix(['+', '-']).unwrap_or(value);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let int_ok = match frac {
        Some(frac) => {
            (int.is_empty() || digits(int))
                && (digits(frac) || (!int.is_empty() && frac.is_empty()))
        }
        None => digits(int),
    };
    let no_leading_zero = !(int.len() > 1 && int.starts_with('0'));
    // numeric refuses exponents beyond 1000 either way.
    let exponent_ok = exponent.is_none_or(|e| {
        let magnitude = e.strip_prefix(['+', '-']).unwrap_or(e);
        digits(magnitude)
            && magnitude.len() <= 4
            && magnitude.parse::<u32>().is_ok_and(|m| m <= 1000)
    });
    // numeric's limits: 131072 digits before the point, 16383 after.
    let within = int.len() <= 131_072 && frac.is_none_or(|f| f.len() <= 16_383);
    within
        && int_ok
        && no_leading_zero
        && exponent_ok
        && (!int.is_empty() || frac.is_some_and(|f| !f.is_empty()))
}

/// Within float8's range: not infinite, and not a non-zero value that
/// rounds to zero (the server refuses both).
fn float_in_range(value: &str) -> bool {
    let Ok(v) = value.parse::<f64>() else {
        return false;
    };
    let mantissa = value.split(['e', 'E']).next().unwrap_or_default();
    let zero_written = !mantissa.bytes().any(|b| matches!(b, b'1'..=b'9'));
    v.is_finite() && (v != 0.0 || zero_written)
}

/// A JSON object or array the server's jsonb takes: no NUL (`\u0000`), no
/// surrogate escapes (a lone one is refused), no exponents (numeric's
/// limits), and numbers a double holds.
fn jsonb(value: &str) -> bool {
    if !matches!(value.trim_start().as_bytes().first(), Some(b'{' | b'[')) {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    let surrogate = (0xd8..=0xdf).any(|x| lower.contains(&format!("\\u{x:x}")));
    if lower.contains("\\u0000") || surrogate {
        return false;
    }
    // An exponent, or a number longer than numeric's fraction, written
    // outside the strings.
    let (mut in_string, mut escaped, mut digits, mut exponent) = (false, false, 0usize, false);
    let mut previous = b' ';
    for &b in value.as_bytes() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'e' | b'E') if previous.is_ascii_digit() => exponent = true,
            (false, _, d) if d.is_ascii_digit() => digits += 1,
            (false, _, _) => {
                exponent |= digits > 1000;
                digits = 0;
            }
        }
        previous = b;
    }
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(value) else {
        return false;
    };
    fn plain(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
            serde_json::Value::String(s) => !s.contains('\0'),
            serde_json::Value::Array(a) => a.iter().all(plain),
            serde_json::Value::Object(o) => o.iter().all(|(k, v)| !k.contains('\0') && plain(v)),
            _ => true,
        }
    }
    !exponent && plain(&parsed)
}

/// `NaN`, `Infinity`, `inf` and their signs, as float8 reads them.
fn special_float(value: &str) -> bool {
    let body = value.strip_prefix(['+', '-']).unwrap_or(value);
    matches!(
        body.to_ascii_lowercase().as_str(),
        "nan" | "inf" | "infinity"
    ) && !(value.starts_with(['+', '-']) && body.eq_ignore_ascii_case("nan"))
}

fn number(bytes: &[u8]) -> Option<u32> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// `YYYY-MM-DD` or `YYYY/MM/DD` (a four-digit year first is read the same
/// under every DateStyle), a real day of years 1 to 9999; the rest.
fn date(value: &[u8]) -> Option<&[u8]> {
    if value.len() < 10 {
        return None;
    }
    let sep = value[4];
    if !matches!(sep, b'-' | b'/') || value[7] != sep {
        return None;
    }
    let (year, month, day) = (
        number(&value[0..4])?,
        number(&value[5..7])?,
        number(&value[8..10])?,
    );
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (year >= 1 && (1..=days).contains(&day)).then_some(&value[10..])
}

/// `HH:MM[:SS[.ffffff]]` within a day; the rest.
fn time(value: &[u8]) -> Option<&[u8]> {
    if value.len() < 5 || value[2] != b':' {
        return None;
    }
    let (hour, minute) = (number(&value[0..2])?, number(&value[3..5])?);
    if hour > 23 || minute > 59 {
        return None;
    }
    let mut rest = &value[5..];
    if rest.first() == Some(&b':') {
        let second = number(rest.get(1..3)?)?;
        if second > 59 {
            return None;
        }
        rest = &rest[3..];
        if rest.first() == Some(&b'.') {
            let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || digits > 6 {
                return None;
            }
            rest = &rest[1 + digits..];
        }
    }
    Some(rest)
}

/// A date, `T` or a blank, a time, then nothing (`Some(false)`) or a zone
/// offset or `Z` (`Some(true)`).
fn timestamp(value: &[u8]) -> Option<bool> {
    let rest = date(value)?;
    let rest = match rest.first() {
        Some(b'T' | b' ') => time(&rest[1..])?,
        _ => return None,
    };
    match rest {
        [] => Some(false),
        [b'Z'] => Some(true),
        // ±HH, ±HHMM or ±HH:MM only.
        [b'+' | b'-', zone @ ..] => {
            let (hour, minute) = match *zone {
                [h1, h2] => ([h1, h2], None),
                [h1, h2, m1, m2] | [h1, h2, b':', m1, m2] => ([h1, h2], Some([m1, m2])),
                _ => return None,
            };
            let ok = number(&hour).is_some_and(|h| h <= 15)
                && minute.is_none_or(|m| number(&m).is_some_and(|m| m < 60));
            ok.then_some(true)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(values: &[&str]) -> SniffedType {
        let mut n = Narrowing::default();
        values.iter().for_each(|v| n.add(v));
        n.chosen()
    }

    #[test]
    fn each_column_gets_the_narrowest_type_every_value_reads_as() {
        use SniffedType as T;
        assert_eq!(chosen(&["1", "-2", "+3"]), T::Integer);
        assert_eq!(chosen(&["1", "9223372036854775807"]), T::Bigint);
        assert_eq!(chosen(&["1", "9223372036854775808"]), T::Numeric);
        assert_eq!(chosen(&["007", "12"]), T::Text);
        assert_eq!(chosen(&["0", "10"]), T::Integer);
        assert_eq!(chosen(&["1.5", "2", ".5", "1e5"]), T::Numeric);
        assert_eq!(chosen(&["1.5", "NaN", "-inf"]), T::Numeric);
        assert_eq!(chosen(&["9007199254740993", "NaN"]), T::Numeric);
        assert_eq!(chosen(&["1,5", "2"]), T::Text);
        assert_eq!(chosen(&["t", "F", "yes", "off"]), T::Boolean);
        assert_eq!(chosen(&["0", "1"]), T::Integer);
        assert_eq!(chosen(&["2024-02-29", "2023/12/31"]), T::Date);
        assert_eq!(chosen(&["2023-02-29"]), T::Text);
        assert_eq!(chosen(&["01/02/2024"]), T::Text);
        assert_eq!(
            chosen(&["2024-01-02 03:04:05", "2024-01-02T03:04"]),
            T::Timestamp
        );
        assert_eq!(
            chosen(&["2024-01-02 03:04:05+02", "2024-01-02T03:04Z"]),
            T::Timestamptz
        );
        assert_eq!(
            chosen(&["2024-01-02 03:04:05+02", "2024-01-02 03:04"]),
            T::Text
        );
        assert_eq!(chosen(&["12:30", "23:59:59.123456"]), T::Time);
        assert_eq!(chosen(&["24:00"]), T::Text);
        assert_eq!(chosen(&["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]), T::Uuid);
        assert_eq!(chosen(&["{\"a\": 1}", "[1, 2]"]), T::Json);
        assert_eq!(chosen(&["{not json"]), T::Text);
        assert_eq!(chosen(&[]), T::Text);
        assert_eq!(chosen(&[" 1"]), T::Text);
        assert_eq!(chosen(&["1."]), T::Numeric);
        assert_eq!(chosen(&["."]), T::Text);
    }
}
