//! Values of each type the encoder takes, random and at the edges, and
//! spellings it must leave to the server.

use pgpour_testkit::datasets::SplitMix64;

/// The test kit's deterministic generator, with what these values need.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[self.below(of.len() as u64) as usize]
    }

    fn digits(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }

    /// `least` to `least + spread - 1` digits.
    fn some_digits(&mut self, least: u64, spread: u64) -> String {
        let n = least + self.below(spread);
        self.digits(n as usize)
    }
}

/// One column type: its SQL, values the encoder must take (`vouched`), and
/// values the server reads that the encoder may leave to it (`doubtful`).
pub struct TypeCase {
    pub sql: &'static str,
    pub vouched: Vec<String>,
    pub doubtful: Vec<String>,
}

const RANDOM: usize = 150;

fn strings(of: &[&str]) -> Vec<String> {
    of.iter().map(|s| s.to_string()).collect()
}

fn integers(rng: &mut Rng, bits: u32) -> Vec<String> {
    let max = (1i128 << (bits - 1)) - 1;
    let mut v: Vec<String> = vec![max.to_string(), (-max - 1).to_string(), "0".into()];
    v.push("-0".into());
    v.push(format!("+{:0>5}", 42));
    for _ in 0..RANDOM {
        let x = (rng.next_u64() as i128).rem_euclid(2 * max + 2) - max - 1;
        let x = x >> rng.below(u64::from(bits)) as u32;
        v.push(x.to_string());
    }
    v
}

fn floats(rng: &mut Rng, single: bool) -> Vec<String> {
    let mut v = strings(&[
        "0",
        "-0",
        "1.5",
        ".5",
        "5.",
        "1e10",
        "-2.5E-3",
        "123456789012345678901234567890",
    ]);
    v.push(
        if single {
            "3.4028234e38"
        } else {
            "1.7976931348623157e308"
        }
        .into(),
    );
    v.push(
        if single {
            "1.1754944e-38"
        } else {
            "2.2250738585072014e-308"
        }
        .into(),
    );
    for _ in 0..RANDOM {
        let text = match rng.below(4) {
            0 => {
                let x = f64::from_bits(rng.next_u64());
                if !x.is_normal() {
                    continue;
                }
                match single {
                    true if (x as f32).is_normal() => format!("{}", x as f32),
                    true => continue,
                    false => format!("{x}"),
                }
            }
            1 => format!("{:e}", (rng.next_u64() % 1_000_000) as f64 / 7.0),
            2 => format!("{}.{}", rng.some_digits(1, 12), rng.some_digits(1, 25)),
            _ => format!("-{}e{}", rng.some_digits(1, 20), rng.below(30) as i64 - 15),
        };
        v.push(text);
    }
    v
}

fn numerics(rng: &mut Rng, max_int_digits: u64) -> Vec<String> {
    let mut v = strings(&[
        "0",
        "-0",
        "0.00",
        "-0.000",
        ".5",
        "5.",
        "0.005",
        "1.995",
        "-2.5",
        "+7.125",
        "0.0001",
        "10000",
        "99999999.995",
    ]);
    for _ in 0..RANDOM {
        let sign = rng.pick(&["", "-", "+"]);
        let int = rng.some_digits(0, max_int_digits + 1);
        let frac = rng.some_digits(0, 20);
        let text = match (int.is_empty(), frac.is_empty()) {
            (true, true) => "0".to_string(),
            (_, true) => format!("{sign}{int}"),
            _ => format!("{sign}{int}.{frac}"),
        };
        v.push(text);
    }
    v
}

fn date_text(rng: &mut Rng) -> String {
    let year = 1 + rng.below(9999);
    let month = 1 + rng.below(12);
    let day = 1 + rng.below(28);
    format!("{year:04}-{month:02}-{day:02}")
}

fn time_text(rng: &mut Rng) -> String {
    let mut t = format!("{:02}:{:02}", rng.below(24), rng.below(60));
    if rng.below(4) > 0 {
        t.push_str(&format!(":{:02}", rng.below(60)));
        if rng.below(2) == 0 {
            let n = 1 + rng.below(6) as usize;
            t.push('.');
            t.push_str(&rng.digits(n));
        }
    }
    t
}

fn timestamps(rng: &mut Rng, zone: bool) -> Vec<String> {
    let mut v = strings(&[
        "2000-01-01 00:00:00",
        "2024-02-29T23:59:59.999999",
        "0001-01-01 00:00",
        "9999-12-31 23:59:59",
    ]);
    if zone {
        v = v.iter().map(|t| format!("{t}+00")).collect();
        v.extend(strings(&[
            "2024-06-01 12:00:00-0930",
            "2024-06-01 12:00:00+14:00",
        ]));
    }
    for _ in 0..RANDOM {
        let sep = rng.pick(&[" ", "T"]);
        let mut t = format!("{}{sep}{}", date_text(rng), time_text(rng));
        if zone {
            let hours = rng.below(15);
            t.push_str(rng.pick(&["+", "-"]));
            t.push_str(&match rng.below(3) {
                0 => format!("{hours:02}"),
                1 => format!("{hours:02}:{:02}", rng.below(60)),
                _ => format!("{hours:02}{:02}", rng.below(60)),
            });
        }
        v.push(t);
    }
    v
}

fn hex(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| {
            let h = b"0123456789abcdefABCDEF"[rng.below(22) as usize];
            char::from(h)
        })
        .collect()
}

fn texts(rng: &mut Rng, max: u64) -> Vec<String> {
    let mut v = strings(&[
        "",
        " ",
        "a,b",
        "say \"hi\"",
        "two\nlines",
        "cr\r\nlf",
        "é ü ß 漢字 🎉",
        "\\N",
        "NULL",
        "trailing  ",
    ]);
    v.retain(|s| s.chars().count() as u64 <= max);
    for _ in 0..RANDOM {
        let len = rng.below(max + 1);
        let s: String = (0..len)
            .map(|_| {
                *["a", "Z", " ", ",", "\"", "é", "\t", "9", "\\", "漢"]
                    .get(rng.below(10) as usize)
                    .unwrap()
            })
            .collect();
        v.push(s);
    }
    v
}

/// Every type the encoder takes, with `time_zone_is_utc` saying whether a
/// zone-less timestamptz is vouched for.
pub fn cases(time_zone_is_utc: bool) -> Vec<TypeCase> {
    let rng = &mut Rng::new(20_261_124);
    let mut zoneless = timestamps(rng, false);
    zoneless.truncate(40);
    let (tz_vouched, tz_doubtful) = match time_zone_is_utc {
        true => ([timestamps(rng, true), zoneless].concat(), Vec::new()),
        false => (timestamps(rng, true), zoneless),
    };
    vec![
        TypeCase {
            sql: "int2",
            vouched: integers(rng, 16),
            doubtful: strings(&[" 12", "12 ", "-  1"])
                .into_iter()
                .filter(|s| !s.contains("  "))
                .collect(),
        },
        TypeCase {
            sql: "int4",
            vouched: integers(rng, 32),
            doubtful: strings(&[" 7", "\t7"]),
        },
        TypeCase {
            sql: "int8",
            vouched: integers(rng, 64),
            doubtful: strings(&[" -9 "]),
        },
        TypeCase {
            sql: "float8",
            vouched: floats(rng, false),
            doubtful: strings(&["NaN", "Infinity", "-inf", " 1.5", "4e-320", "1.5 "]),
        },
        TypeCase {
            sql: "float4",
            vouched: floats(rng, true),
            doubtful: strings(&["nan", "-Infinity", "1e-40", " 2"]),
        },
        TypeCase {
            sql: "numeric",
            vouched: numerics(rng, 40),
            doubtful: strings(&["NaN", "1e5", "-1.5E-3", " 12.5 ", "Infinity"]),
        },
        TypeCase {
            sql: "numeric(15,2)",
            vouched: numerics(rng, 12),
            doubtful: strings(&["1e3", " 1.005"]),
        },
        TypeCase {
            sql: "bool",
            vouched: strings(&[
                "t", "f", "TRUE", "False", "yes", "NO", "y", "n", "on", "OFF", "1", "0",
            ]),
            doubtful: strings(&["tr", " yes", "of", "ye"]),
        },
        TypeCase {
            sql: "date",
            vouched: [
                strings(&[
                    "2000-01-01",
                    "2024-02-29",
                    "1900-02-28",
                    "0001-01-01",
                    "9999-12-31",
                ]),
                (0..RANDOM).map(|_| date_text(rng)).collect(),
            ]
            .concat(),
            doubtful: strings(&[
                "epoch",
                "infinity",
                "-infinity",
                "20240102",
                "2024-01-02 BC",
                "Jan 2 2024",
                "2024-1-2",
                " 2024-01-02",
            ]),
        },
        TypeCase {
            sql: "timestamp",
            vouched: timestamps(rng, false),
            doubtful: strings(&[
                "2024-01-01 24:00:00",
                "2024-01-01 12:00:00+02",
                "epoch",
                "infinity",
                "2024-01-01 12:00:00.1234567",
                "2024-01-01",
                "2024-01-01 12:00:00 BC",
            ]),
        },
        TypeCase {
            sql: "timestamptz",
            vouched: tz_vouched,
            doubtful: [
                tz_doubtful,
                strings(&[
                    "2024-06-01 12:00:00 America/New_York",
                    "2024-06-01 12:00:00Z",
                    "2024-06-01 12:00:00 PST",
                    "epoch",
                    "2024-01-01 12:00:00 +02",
                    "2024-06-01 12:00:00+05:30:15",
                ]),
            ]
            .concat(),
        },
        TypeCase {
            sql: "time",
            vouched: [
                strings(&["00:00", "23:59:59.999999", "12:30:00"]),
                (0..RANDOM).map(|_| time_text(rng)).collect(),
            ]
            .concat(),
            doubtful: strings(&[
                "24:00:00",
                "allballs",
                "1:02",
                "12:00:00.1234567",
                "12:00 PM",
            ]),
        },
        TypeCase {
            sql: "uuid",
            vouched: (0..RANDOM)
                .map(|_| {
                    format!(
                        "{}-{}-{}-{}-{}",
                        hex(rng, 8),
                        hex(rng, 4),
                        hex(rng, 4),
                        hex(rng, 4),
                        hex(rng, 12)
                    )
                })
                .collect(),
            doubtful: strings(&[
                "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
                "a0eebc999c0b4ef8bb6d6bb9bd380a11",
                "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            ]),
        },
        TypeCase {
            sql: "text",
            vouched: texts(rng, 30),
            doubtful: Vec::new(),
        },
        TypeCase {
            sql: "varchar(10)",
            vouched: [texts(rng, 10), strings(&["abcdefghij   "])].concat(),
            doubtful: Vec::new(),
        },
        TypeCase {
            sql: "char(5)",
            vouched: [texts(rng, 5), strings(&["ab   ", "abcde  ", "  "])].concat(),
            doubtful: Vec::new(),
        },
        TypeCase {
            sql: "json",
            vouched: strings(&[
                "{}",
                "[1, 2.50, \"x\"]",
                "{\"a\": {\"b\": null}, \"a\": 1}",
                " { \"k\" : \"\\u00e9\\n\" } ",
                "1e400",
                "\"漢字\"",
            ]),
            doubtful: Vec::new(),
        },
        TypeCase {
            sql: "jsonb",
            vouched: strings(&[
                "{}",
                "[1, 2.50, \"x\"]",
                "{\"a\": {\"b\": null}, \"a\": 1}",
                " { \"k\" : \"\\u00e9\\n\" } ",
                "1.0e2",
                "\"漢字\"",
                "true",
            ]),
            doubtful: Vec::new(),
        },
        TypeCase {
            sql: "bytea",
            vouched: [
                strings(&["\\x", "\\xDEADbeef", "plain ascii"]),
                (0..40)
                    .map(|_| {
                        let n = 2 * rng.below(20) as usize;
                        format!("\\x{}", hex(rng, n))
                    })
                    .collect(),
            ]
            .concat(),
            doubtful: strings(&["a\\000b", "\\\\", "\\x de ad", "é"]),
        },
        TypeCase {
            sql: "bit(3)",
            vouched: (0..40).map(|_| format!("{:03b}", rng.below(8))).collect(),
            doubtful: strings(&["x7"]).into_iter().filter(|_| false).collect(),
        },
        TypeCase {
            sql: "varbit(12)",
            vouched: (0..40)
                .map(|_| {
                    let n = rng.below(13) as usize;
                    (0..n)
                        .map(|_| if rng.below(2) == 0 { '0' } else { '1' })
                        .collect()
                })
                .collect(),
            doubtful: strings(&["X1F"]),
        },
    ]
}
