//! Who may administer the box.
//!
//! There is no default password. Until the first administrator exists, a
//! one-time setup token (logged, and written to `<data-dir>/setup-token`, mode
//! 0600) is the only way in; creating the administrator burns it. Passwords
//! are argon2id hashes; sessions are random tokens kept only as SHA-256
//! hashes in the store.

mod password;
mod throttle;
mod token;

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::store::{SessionUser, Store, StoreError};
use crate::validate::{Invalid, required};

pub const SETUP_TOKEN_FILE: &str = "setup-token";
/// How long a login lasts. Fixed rather than sliding, so that reading a page
/// never writes to the SD card.
pub const SESSION_TTL_SECS: i64 = 7 * 24 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("setup token is wrong")]
    WrongSetupToken,
    #[error("setup is already done; log in instead")]
    AlreadySetUp,
    #[error("wrong username or password")]
    BadCredentials,
    #[error("too many failed logins from this address; try again in {retry_after_secs} s")]
    TooManyAttempts { retry_after_secs: u64 },
    #[error("current password is wrong")]
    WrongCurrentPassword,
    #[error("not logged in")]
    NoSession,
    #[error("setup token file {path}: {source}")]
    TokenFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("password hashing: {0}")]
    Hashing(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new random bearer token (256 bits, hex).
/// Hex digits of a session's token hash that name it in the API.
const SESSION_ID_LEN: usize = 12;

#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// The session this request came with.
    pub current: bool,
}

pub fn random_token() -> String {
    token::random_hex()
}

/// A session that was just started: the token goes into the cookie.
#[derive(Debug)]
pub struct NewSession {
    pub token: String,
    pub max_age_secs: i64,
}

pub struct Auth {
    store: Arc<Store>,
    token_path: PathBuf,
    throttle: throttle::LoginThrottle,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn validate_username(name: &str) -> Result<&str, Invalid> {
    let valid = name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    // Shaped like a POSIX account name, because administrators may later
    // become Samba users backed by system accounts.
    valid.then_some(name).ok_or_else(|| {
        Invalid::new(
            "username",
            "must be 1-32 characters: lowercase letters, digits, '_' or '-', starting with a letter or '_'",
        )
    })
}

fn validate_password<'a>(field: &str, password: &'a str) -> Result<&'a str, Invalid> {
    let chars = password.chars().count();
    if !(8..=256).contains(&chars) {
        return Err(Invalid::new(field, "must be 8 to 256 characters long"));
    }
    Ok(password)
}

impl Auth {
    pub fn new(store: Arc<Store>, data_dir: &std::path::Path) -> Self {
        Self {
            store,
            token_path: data_dir.join(SETUP_TOKEN_FILE),
            throttle: throttle::LoginThrottle::default(),
        }
    }

    /// The store, for the handlers that keep small settings there.
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn token_path(&self) -> &std::path::Path {
        &self.token_path
    }

    /// While no administrator exists, makes sure a setup token exists and
    /// returns it (the same one across restarts, so a printed token stays
    /// good). Once set up, removes any leftover token and returns `None`.
    pub fn ensure_setup_token(&self) -> Result<Option<String>, AuthError> {
        let file_err = |source| AuthError::TokenFile {
            path: self.token_path.clone(),
            source,
        };
        if self.store.user_count()? > 0 {
            self.burn_setup_token()?;
            return Ok(None);
        }
        match std::fs::read_to_string(&self.token_path) {
            Ok(existing) if !existing.trim().is_empty() => return Ok(Some(existing.trim().into())),
            Ok(_) => std::fs::remove_file(&self.token_path).map_err(file_err)?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(file_err(err)),
        }
        let token = token::random_hex();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&self.token_path)
            .map_err(file_err)?;
        file.write_all(format!("{token}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(file_err)?;
        Ok(Some(token))
    }

    fn burn_setup_token(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.token_path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(AuthError::TokenFile {
                path: self.token_path.clone(),
                source: err,
            }),
            _ => Ok(()),
        }
    }

    pub fn setup_required(&self) -> Result<bool, AuthError> {
        Ok(self.store.user_count()? == 0)
    }

    /// Creates the first administrator with the setup token, burns the
    /// token, and logs the new administrator in.
    pub async fn setup(
        &self,
        setup_token: &str,
        username: &str,
        password: &str,
    ) -> Result<NewSession, AuthError> {
        if !self.setup_required()? {
            return Err(AuthError::AlreadySetUp);
        }
        required("token", setup_token)?;
        let expected = std::fs::read_to_string(&self.token_path).unwrap_or_default();
        if !token::matches(expected.trim(), setup_token.trim()) {
            return Err(AuthError::WrongSetupToken);
        }
        let username = validate_username(required("username", username)?)?;
        let password = validate_password("password", required("password", password)?)?;
        let hash = password::hash(password.to_owned()).await?;
        let user_id = self
            .store
            .create_first_user(username, &hash, now())?
            .ok_or(AuthError::AlreadySetUp)?;
        self.burn_setup_token()?;
        self.start_session(user_id)
    }

    /// Logs in `username` from `client`, whose failed attempts are throttled.
    pub async fn login(
        &self,
        client: IpAddr,
        username: &str,
        password: &str,
    ) -> Result<NewSession, AuthError> {
        required("username", username)?;
        required("password", password)?;
        if let Err(wait) = self.throttle.begin(client, Instant::now()) {
            return Err(AuthError::TooManyAttempts {
                retry_after_secs: wait.as_secs().max(1),
            });
        }
        let user = self.store.find_user(username)?;
        // An unknown user costs the same hash as a known one, so timing does
        // not tell which usernames exist.
        let stored = user
            .as_ref()
            .map_or_else(password::dummy_hash, |u| u.password_hash.clone());
        let ok = password::verify(password.to_owned(), stored).await?;
        match user {
            Some(user) if ok => {
                self.throttle.succeeded(client);
                self.start_session(user.id)
            }
            _ => Err(AuthError::BadCredentials),
        }
    }

    fn start_session(&self, user_id: i64) -> Result<NewSession, AuthError> {
        let token = token::random_hex();
        let now = now();
        self.store
            .create_session(&token::digest(&token), user_id, now, now + SESSION_TTL_SECS)?;
        Ok(NewSession {
            token,
            max_age_secs: SESSION_TTL_SECS,
        })
    }

    pub fn session(&self, session_token: &str) -> Result<SessionUser, AuthError> {
        self.store
            .session_user(&token::digest(session_token), now())?
            .ok_or(AuthError::NoSession)
    }

    /// The user's sessions, each named by the start of its token's hash
    /// (the token itself is never stored).
    pub fn sessions(
        &self,
        user: &SessionUser,
        current_token: &str,
    ) -> Result<Vec<SessionInfo>, AuthError> {
        let current = token::digest(current_token);
        Ok(self
            .store
            .sessions_of(user.user_id, now())?
            .into_iter()
            .map(|(hash, created_at, expires_at)| SessionInfo {
                id: hash[..SESSION_ID_LEN.min(hash.len())].to_owned(),
                created_at,
                expires_at,
                current: hash == current,
            })
            .collect())
    }

    /// Ends one of the user's sessions by its id; false when there is none.
    pub fn end_session(&self, user: &SessionUser, id: &str) -> Result<bool, AuthError> {
        let found = self
            .store
            .sessions_of(user.user_id, now())?
            .into_iter()
            .find(|(hash, _, _)| id.len() == SESSION_ID_LEN && hash.starts_with(id));
        match found {
            Some((hash, _, _)) => {
                self.store.delete_session(&hash)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub fn logout(&self, session_token: &str) -> Result<(), AuthError> {
        Ok(self.store.delete_session(&token::digest(session_token))?)
    }

    /// Changes the password and ends every other session of the user.
    pub async fn change_password(
        &self,
        user: &SessionUser,
        session_token: &str,
        current: &str,
        new: &str,
    ) -> Result<(), AuthError> {
        required("current_password", current)?;
        let new = validate_password("new_password", required("new_password", new)?)?;
        let stored = self
            .store
            .password_hash(user.user_id)?
            .ok_or(AuthError::NoSession)?;
        if !password::verify(current.to_owned(), stored).await? {
            return Err(AuthError::WrongCurrentPassword);
        }
        let hash = password::hash(new.to_owned()).await?;
        Ok(self
            .store
            .change_password(user.user_id, &hash, &token::digest(session_token))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> (tempfile::TempDir, Auth) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let auth = Auth::new(store, dir.path());
        (dir, auth)
    }

    #[test]
    fn usernames_follow_the_account_name_rule() {
        assert!(validate_username("admin").is_ok());
        assert!(validate_username("_svc-2").is_ok());
        for bad in ["Admin", "1abc", "a b", "a;rm", &"a".repeat(33), "ädmin"] {
            let err = validate_username(bad).unwrap_err();
            assert_eq!(err.field, "username", "{bad}");
        }
    }

    #[test]
    fn setup_token_is_stable_private_and_burned_by_setup() {
        let (dir, auth) = auth();
        let token = auth.ensure_setup_token().unwrap().unwrap();
        assert_eq!(auth.ensure_setup_token().unwrap().as_deref(), Some(&*token));
        let path = dir.path().join(SETUP_TOKEN_FILE);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let wrong = rt.block_on(auth.setup("nope", "admin", "correct horse"));
        assert!(matches!(wrong, Err(AuthError::WrongSetupToken)));
        let short = rt.block_on(auth.setup(&token, "admin", "short"));
        assert!(matches!(short, Err(AuthError::Invalid(ref i)) if i.field == "password"));
        assert!(auth.setup_required().unwrap(), "bad input changed nothing");

        let session = rt
            .block_on(auth.setup(&token, "admin", "correct horse"))
            .unwrap();
        assert!(!path.exists());
        assert_eq!(auth.session(&session.token).unwrap().username, "admin");
        let again = rt.block_on(auth.setup(&token, "eve", "correct horse"));
        assert!(matches!(again, Err(AuthError::AlreadySetUp)));
        assert_eq!(auth.ensure_setup_token().unwrap(), None);
    }
}
