//! A client certificate's private key in the form native-tls takes
//! (unencrypted PKCS#8 PEM, "BEGIN PRIVATE KEY"). libpq takes what OpenSSL
//! reads; the common other form, an RSA key in PKCS#1 ("BEGIN RSA PRIVATE
//! KEY", what older OpenSSL and many providers' downloads write), is
//! rewrapped here. Other forms are refused with the command that converts
//! them.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

/// The command that turns any key OpenSSL reads into the form taken here
/// (asking for the passphrase of an encrypted one).
const CONVERT: &str = "convert it with `openssl pkcs8 -topk8 -nocrypt -in KEY -out NEW_KEY`";

/// `pem` as an unencrypted PKCS#8 PEM key, or why not. The reason never
/// quotes the file: it is a secret.
pub(super) fn pkcs8_pem(pem: &[u8]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(pem).map_err(|_| format!("not a PEM key; {CONVERT}"))?;
    let Some(start) = text.find("-----BEGIN ") else {
        return Err(format!("not a PEM key; {CONVERT}"));
    };
    // From the first block on: native-tls wants the key's own first line
    // first, and OpenSSL's exports may start with "Bag Attributes" text.
    let block = &text[start..];
    let label = block["-----BEGIN ".len()..]
        .split("-----")
        .next()
        .unwrap_or("");
    match label {
        "PRIVATE KEY" => Ok(block.as_bytes().to_vec()),
        "RSA PRIVATE KEY" => rsa_to_pkcs8(block),
        "ENCRYPTED PRIVATE KEY" => Err(format!("the key is encrypted; {CONVERT}")),
        other => Err(format!("a {other} is not supported; {CONVERT}")),
    }
}

/// A PKCS#1 RSA key block as PKCS#8: the same key inside a PrivateKeyInfo
/// (version 0, the rsaEncryption algorithm, the key as an octet string).
fn rsa_to_pkcs8(block: &str) -> Result<Vec<u8>, String> {
    let end = "-----END RSA PRIVATE KEY-----";
    let body = block.split_once(end).map(|(body, _)| body).unwrap_or(block);
    let mut lines = body.lines().skip(1);
    let mut base64 = String::new();
    for line in lines.by_ref() {
        // PEM headers ("Proc-Type: 4,ENCRYPTED", "DEK-Info: ...") mark a
        // key encrypted the old way.
        if line.contains(':') {
            return Err(format!("the key is encrypted; {CONVERT}"));
        }
        base64.push_str(line.trim());
    }
    let pkcs1 = BASE64
        .decode(base64.as_bytes())
        .map_err(|_| format!("the RSA key's base64 is damaged; {CONVERT}"))?;
    if pkcs1.first() != Some(&0x30) {
        return Err(format!("not an RSA key; {CONVERT}"));
    }
    // version INTEGER 0, then AlgorithmIdentifier { rsaEncryption, NULL }.
    const HEAD: [u8; 18] = [
        0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01,
        0x01, 0x05, 0x00,
    ];
    let mut info = HEAD.to_vec();
    info.extend(der_header(0x04, pkcs1.len()));
    info.extend(&pkcs1);
    let mut der = der_header(0x30, info.len());
    der.extend(info);
    Ok(pem_block("PRIVATE KEY", &der).into_bytes())
}

/// A DER tag and the length that follows it (short form below 128 bytes,
/// else long form: 0x80 + the number of length bytes, big-endian).
fn der_header(tag: u8, len: usize) -> Vec<u8> {
    if len < 0x80 {
        return vec![tag, len as u8];
    }
    let bytes: Vec<u8> = len
        .to_be_bytes()
        .into_iter()
        .skip_while(|&b| b == 0)
        .collect();
    let mut out = vec![tag, 0x80 | bytes.len() as u8];
    out.extend(bytes);
    out
}

fn pem_block(label: &str, der: &[u8]) -> String {
    let encoded = BASE64.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkcs1_pem(der: &[u8]) -> String {
        pem_block("RSA PRIVATE KEY", der)
    }

    #[test]
    fn der_lengths_take_the_short_and_long_forms() {
        assert_eq!(der_header(0x04, 5), [0x04, 5]);
        assert_eq!(der_header(0x04, 0x7f), [0x04, 0x7f]);
        assert_eq!(der_header(0x04, 0x80), [0x04, 0x81, 0x80]);
        assert_eq!(der_header(0x30, 1217), [0x30, 0x82, 0x04, 0xc1]);
    }

    #[test]
    fn a_pkcs1_key_is_wrapped_whole_in_pkcs8() {
        // A stand-in for a key's DER: the wrapping never looks inside.
        let mut key = vec![0x30, 0x82, 0x01, 0x2c];
        key.extend((0..300u32).map(|i| i as u8));
        let pem = pkcs8_pem(pkcs1_pem(&key).as_bytes()).unwrap();
        let text = String::from_utf8(pem).unwrap();
        assert!(text.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{text}");
        let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = BASE64.decode(body).unwrap();
        // SEQUENCE of 3 + 18 + 4 + 304 bytes: version, algorithm, key.
        assert_eq!(der[..4], [0x30, 0x82, 0x01, 0x46]);
        assert_eq!(
            der[4..22],
            [
                0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01,
                0x01, 0x01, 0x05, 0x00
            ]
        );
        assert_eq!(der[22..26], [0x04, 0x82, 0x01, 0x30]);
        assert_eq!(der[26..], key[..]);
    }

    #[test]
    fn pkcs8_passes_and_other_forms_name_the_fix() {
        let pkcs8 =
            "Bag Attributes\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let out = pkcs8_pem(pkcs8.as_bytes()).unwrap();
        assert!(out.starts_with(b"-----BEGIN PRIVATE KEY-----"));
        for refused in [
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n\
             -----END RSA PRIVATE KEY-----\n",
            "secret bytes",
        ] {
            let reason = pkcs8_pem(refused.as_bytes()).unwrap_err();
            assert!(reason.contains("openssl pkcs8 -topk8 -nocrypt"), "{reason}");
            assert!(
                !reason.contains("AAAA") && !reason.contains("secret"),
                "{reason}"
            );
        }
    }
}
