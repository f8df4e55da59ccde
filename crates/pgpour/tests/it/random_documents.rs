//! Random csv documents, valid for COPY: pgpour must load what COPY loads,
//! whatever mix of quoting, line breaks, NULLs and line endings.

use proptest::prelude::*;

use crate::harness::Case;

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        // Unquoted; empty means NULL. A letter first keeps `\.` (the end marker) out.
        "([a-z][a-z0-9 é\\\\]{0,6})?",
        // Quoted: anything, with quotes doubled.
        "[a-z,;\"\n\r\t é日\\\\]{0,10}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
    ]
}

fn document() -> impl Strategy<Value = Vec<u8>> {
    let record = prop::collection::vec(field(), 3).prop_map(|f| f.join(","));
    (
        prop::collection::vec(record, 1..40),
        prop_oneof![Just("\n"), Just("\r\n")],
        any::<bool>(),
    )
        .prop_map(|(records, eol, final_eol)| {
            let mut doc = records.join(eol);
            if final_eol {
                doc.push_str(eol);
            }
            doc.into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_csv_loads_like_copy(doc in document()) {
        Case::csv("a text, b text, c text", &doc).check("random_csv");
    }
}
