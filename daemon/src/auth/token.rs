//! Random bearer tokens (setup token, session cookies).

use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// 256 bits from the OS, hex-encoded: safe in a cookie and a file.
pub fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// What the store keeps instead of the token itself.
pub fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Compares two secrets without leaking, through timing, how much matched.
pub fn matches(expected: &str, given: &str) -> bool {
    !expected.is_empty()
        && Sha256::digest(expected.as_bytes())
            .ct_eq(&Sha256::digest(given.as_bytes()))
            .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique_and_digests_stable() {
        let (a, b) = (random_hex(), random_hex());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert_eq!(digest(&a), digest(&a));
        assert_ne!(digest(&a), a);
    }

    #[test]
    fn an_empty_expected_token_matches_nothing() {
        assert!(matches("abc", "abc"));
        assert!(!matches("abc", "abd"));
        assert!(!matches("", ""));
    }
}
