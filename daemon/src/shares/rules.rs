//! Input rules for anything that reaches smb.conf or exports. A value that
//! could start a new line, a section, a parameter or a Samba `%`
//! substitution is refused with the field's name, before anything is
//! written.

use std::net::IpAddr;

use crate::validate::Invalid;

const RESERVED: &[&str] = &["global", "homes", "printers", "print$", "ipc$"];

/// Characters that change the meaning of an smb.conf line.
fn config_safe(field: &str, text: &str) -> Result<(), Invalid> {
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() || "[]%=\\".contains(*c))
    {
        let shown = if c.is_control() {
            format!("{:?}", c)
        } else {
            format!("'{c}'")
        };
        return Err(Invalid::new(
            field,
            format!("must not contain {shown} (no line breaks, brackets, '%', '=' or '\\')"),
        ));
    }
    Ok(())
}

pub fn share_name(name: &str) -> Result<(), Invalid> {
    let valid = (1..=80).contains(&name.chars().count())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._-".contains(c))
        && name.trim() == name;
    if !valid {
        return Err(Invalid::new(
            "name",
            "must be 1 to 80 characters from letters, digits, space, '.', '_' and '-', without leading or trailing spaces",
        ));
    }
    if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(Invalid::new(
            "name",
            format!("'{name}' is reserved by Samba"),
        ));
    }
    Ok(())
}

pub fn comment(text: &str) -> Result<(), Invalid> {
    if text.chars().count() > 256 {
        return Err(Invalid::new("comment", "must be at most 256 characters"));
    }
    if text.trim() != text {
        return Err(Invalid::new("comment", "must not start or end with spaces"));
    }
    config_safe("comment", text)
}

/// An absolute path without `.` or `..` components, safe in smb.conf and
/// exports (which also split on spaces unless quoted, so quotes are out).
pub fn share_path(path: &str) -> Result<(), Invalid> {
    config_safe("path", path)?;
    let plain = path.starts_with('/')
        && !path.contains('"')
        && path.len() <= 1024
        // Samba drops spaces at the ends of names: "x " would be served
        // as "x", another folder than the one checked.
        && path.split('/').all(|part| part != "." && part != ".." && part.trim() == part);
    if plain {
        Ok(())
    } else {
        Err(Invalid::new(
            "path",
            "must be an absolute path without '.', '..', quotes, or spaces at either end of a name",
        ))
    }
}

/// A Samba user: shaped like a POSIX account name, since each is backed
/// by a system user.
pub fn user_name(name: &str) -> Result<(), Invalid> {
    let valid = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(Invalid::new(
            "username",
            "must be 1-32 characters: lowercase letters, digits, '_' or '-', starting with a letter or '_'",
        ))
    }
}

/// Passwords go to smbpasswd on standard input, one per line.
pub fn password(password: &str) -> Result<(), Invalid> {
    // smbpasswd reads one line of at most 255 bytes.
    if password.chars().count() < 8 || password.len() > 255 {
        return Err(Invalid::new(
            "password",
            "must be at least 8 characters and at most 255 bytes",
        ));
    }
    if password.chars().any(char::is_control) {
        return Err(Invalid::new(
            "password",
            "must not contain line breaks or control characters",
        ));
    }
    Ok(())
}

/// An NFS client: a host name, an IP address, or a network in CIDR form.
pub fn nfs_client(client: &str) -> Result<(), Invalid> {
    let field = "nfs.clients";
    let (addr, prefix) = client
        .split_once('/')
        .map_or((client, None), |(a, p)| (a, Some(p)));
    if let Ok(ip) = addr.parse::<IpAddr>() {
        let max = if ip.is_ipv4() { 32 } else { 128 };
        return match prefix.map(str::parse::<u8>) {
            None => Ok(()),
            Some(Ok(bits)) if bits <= max => Ok(()),
            _ => Err(Invalid::new(
                field,
                format!("'{client}': the prefix length must be 0 to {max}"),
            )),
        };
    }
    let hostname = prefix.is_none()
        && (1..=253).contains(&client.len())
        && client.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if hostname {
        Ok(())
    } else {
        Err(Invalid::new(
            field,
            format!("'{client}' is not a host name, an IP address or a CIDR network"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_names() {
        for good in ["media", "Time Machine", "backup-2024_v1.0"] {
            share_name(good).unwrap();
        }
        for bad in [
            "",
            "a/b",
            "x]\n[global",
            "global",
            "IPC$",
            "homes",
            " lead",
            "trail ",
            "%u",
            &"a".repeat(81),
        ] {
            assert_eq!(share_name(bad).unwrap_err().field, "name", "{bad:?}");
        }
    }

    #[test]
    fn text_that_could_inject_config_is_refused() {
        for bad in [
            "films\n[evil]\npath = /",
            "100%",
            "a = b",
            "x]",
            "tab\there",
            "back\\slash",
        ] {
            assert_eq!(comment(bad).unwrap_err().field, "comment", "{bad:?}");
        }
        comment("Family photos, 2010-2024 (read only)").unwrap();
    }

    #[test]
    fn paths() {
        share_path("/srv/media/films").unwrap();
        for bad in [
            "srv/media",
            "/srv/../etc",
            "/srv/./x",
            "/srv/%S",
            "/srv/a\nb",
            "/srv/\"q\"",
        ] {
            assert_eq!(share_path(bad).unwrap_err().field, "path", "{bad:?}");
        }
    }

    #[test]
    fn names_with_spaces_at_their_ends_are_refused() {
        for bad in ["/srv/x ", "/srv/ x/y", "/srv/x /y"] {
            assert_eq!(share_path(bad).unwrap_err().field, "path", "{bad:?}");
        }
        share_path("/srv/Family Photos/2024").unwrap();
        assert_eq!(comment(" padded").unwrap_err().field, "comment");
    }

    #[test]
    fn nfs_clients() {
        for good in [
            "192.168.1.0/24",
            "10.0.0.5",
            "fd00::/8",
            "k8s-node-1.lan",
            "nas",
        ] {
            nfs_client(good).unwrap();
        }
        for bad in [
            "*",
            "192.168.1.0/33",
            "host(rw,no_root_squash)",
            "-evil",
            "a b",
            "10.0.0.0/x",
            "example.com/24",
        ] {
            assert_eq!(nfs_client(bad).unwrap_err().field, "nfs.clients", "{bad:?}");
        }
    }

    #[test]
    fn users_and_passwords() {
        user_name("alice").unwrap();
        assert!(user_name("Alice").is_err());
        assert!(user_name("root;rm").is_err());
        password("correct horse").unwrap();
        assert!(password("short").is_err());
        assert!(password("two\nlines ok?").is_err());
    }
}
