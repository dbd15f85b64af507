//! argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: the OWASP
//! minimum), run off the async threads because each hash takes a noticeable
//! slice of a small ARM core.

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use super::AuthError;

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| AuthError::Hashing(err.to_string()))?
}

pub async fn hash(password: String) -> Result<String, AuthError> {
    blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|err| AuthError::Hashing(err.to_string()))
    })
    .await
}

pub async fn verify(password: String, stored: String) -> Result<bool, AuthError> {
    blocking(move || {
        let parsed =
            PasswordHash::new(&stored).map_err(|err| AuthError::Hashing(err.to_string()))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
}

/// A valid hash of nothing anyone knows, verified against when the username
/// does not exist.
pub fn dummy_hash() -> String {
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0R0KVvOcuXUNyH6vBfNsgeQ8BXVQb2RASYEbDX5HaTg"
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_differ_by_salt() {
        let a = hash("correct horse".into()).await.unwrap();
        let b = hash("correct horse".into()).await.unwrap();
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b);
        assert!(verify("correct horse".into(), a.clone()).await.unwrap());
        assert!(!verify("wrong horse".into(), a).await.unwrap());
    }

    #[tokio::test]
    async fn dummy_hash_parses_and_matches_nothing_obvious() {
        assert!(!verify("".into(), dummy_hash()).await.unwrap());
        assert!(!verify("password".into(), dummy_hash()).await.unwrap());
    }
}
