//! smb.conf, NFS exports and the Avahi service file, rendered from the
//! shares in the store. Pure: the same shares give the same bytes.

use std::fmt::Write;

use super::Share;

/// `[global]` for a small ARM board: each choice with the reason for it,
/// written into the file so that whoever reads it knows why.
const GLOBAL: &[(&str, &str, &str)] = &[
    (
        "SMB1 is slow and insecure; SMB 2.1 is the oldest dialect Windows 7 and macOS need",
        "server min protocol",
        "SMB2_10",
    ),
    (
        "no NetBIOS: Avahi and WS-Discovery announce the box, and nmbd stays off",
        "disable netbios",
        "yes",
    ),
    (
        "SMB over TCP only; port 139 belongs to NetBIOS",
        "smb ports",
        "445",
    ),
    (
        "the kernel copies file data straight to the socket: less CPU per byte on ARM",
        "use sendfile",
        "yes",
    ),
    (
        "reads of any size go to asynchronous I/O threads, so one slow USB disk does not stall a client",
        "aio read size",
        "1",
    ),
    ("the same for writes", "aio write size", "1"),
    (
        "users log in with Samba passwords; a wrong user name falls back to guest only where a share allows guests",
        "map to guest",
        "Bad User",
    ),
    (
        "Samba's own password database, managed by nasd through pdbedit and smbpasswd",
        "passdb backend",
        "tdbsam",
    ),
    (
        "a NAS prints nothing: no printer shares, no spooler",
        "load printers",
        "no",
    ),
    ("the same", "printcap name", "/dev/null"),
    ("the same", "disable spoolss", "yes"),
    (
        "no home directories for the system users that back Samba users",
        "unix password sync",
        "no",
    ),
    (
        "Samba's logs go to the journal instead of files on the SD card",
        "logging",
        "systemd",
    ),
    ("only warnings and worse", "log level", "1"),
    (
        "macOS: let the fruit module answer Apple's extensions everywhere it is loaded",
        "fruit:metadata",
        "stream",
    ),
    (
        "macOS: keep file names with characters Windows cannot store",
        "fruit:encoding",
        "native",
    ),
];

/// Where local additions go: included at the end of `[global]`, so a site
/// can set its own interfaces or paths without editing nasd's file.
pub const SITE_INCLUDE: &str = "nasd-site.conf";

pub fn smb_conf(shares: &[Share], site_include: Option<&str>) -> String {
    let mut out = String::from(
        "# Written by nasd from its database: edits here are replaced.\n\
         # Local settings belong in nasd-site.conf beside this file, which is\n\
         # included at the end of [global].\n\n[global]\n",
    );
    for (why, key, value) in GLOBAL {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "   # {why}\n   {key} = {value}");
    }
    if let Some(include) = site_include {
        let _ = writeln!(out, "   include = {include}");
    }
    for share in shares {
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        let _ = writeln!(out, "\n[{}]", share.name);
        if !share.comment.is_empty() {
            let _ = writeln!(out, "   comment = {}", share.comment);
        }
        let _ = writeln!(out, "   path = {}", share.path);
        let _ = writeln!(out, "   read only = {}", yes_no(share.read_only));
        let _ = writeln!(out, "   guest ok = {}", yes_no(share.guest));
        if !share.users.is_empty() && !share.guest {
            let _ = writeln!(out, "   valid users = {}", share.users.join(" "));
        }
        // New files stay readable and writable by the group of all NAS users.
        out.push_str("   force group = users\n   create mask = 0664\n   directory mask = 2775\n");
        if share.time_machine {
            out.push_str(
                "   vfs objects = catia fruit streams_xattr\n   fruit:time machine = yes\n",
            );
        }
    }
    out
}

/// `/etc/exports.d/nasd.exports`: root squashed, synchronous writes, no
/// subtree checks (which break on renames and cost a lookup per request).
pub fn exports(shares: &[Share]) -> String {
    let mut out = String::from("# Written by nasd from its database: edits here are replaced.\n");
    for share in shares {
        let Some(nfs) = &share.nfs else { continue };
        let mode = if nfs.read_only || share.read_only {
            "ro"
        } else {
            "rw"
        };
        let clients: Vec<String> = nfs
            .clients
            .iter()
            .map(|c| format!("{c}({mode},sync,no_subtree_check,root_squash)"))
            .collect();
        if !clients.is_empty() {
            let _ = writeln!(out, "\"{}\" {}", share.path, clients.join(" "));
        }
    }
    out
}

/// Avahi's service file: macOS and Linux find the SMB shares, and a Time
/// Machine share shows up as a backup disk.
pub fn avahi_service(shares: &[Share]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" standalone='no'?>\n\
         <!DOCTYPE service-group SYSTEM \"avahi-service.dtd\">\n\
         <!-- Written by nasd from its database: edits here are replaced. -->\n\
         <service-group>\n  <name replace-wildcards=\"yes\">%h</name>\n\
         \x20 <service><type>_smb._tcp</type><port>445</port></service>\n",
    );
    let machines: Vec<&Share> = shares.iter().filter(|s| s.time_machine).collect();
    if !machines.is_empty() {
        out.push_str("  <service><type>_device-info._tcp</type><port>9</port><txt-record>model=TimeCapsule8,119</txt-record></service>\n");
        out.push_str("  <service><type>_adisk._tcp</type><port>9</port>\n");
        for (i, share) in machines.iter().enumerate() {
            // Share names are letters, digits, space, '.', '_', '-': safe in XML.
            let _ = writeln!(
                out,
                "    <txt-record>dk{i}=adVN={},adVF=0x82</txt-record>",
                share.name
            );
        }
        out.push_str("    <txt-record>sys=waMa=0,adVF=0x100</txt-record>\n  </service>\n");
    }
    out.push_str("</service-group>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shares::NfsExport;

    fn share(name: &str) -> Share {
        Share {
            name: name.into(),
            path: format!("/srv/data/{name}"),
            comment: String::new(),
            read_only: false,
            guest: false,
            users: vec!["alice".into(), "bob".into()],
            time_machine: false,
            nfs: None,
        }
    }

    #[test]
    fn every_global_choice_has_its_reason() {
        let conf = smb_conf(&[], None);
        assert!(conf.contains("   # SMB1 is slow and insecure; SMB 2.1 is the oldest dialect Windows 7 and macOS need\n   server min protocol = SMB2_10\n"));
        assert_eq!(conf.matches("   # ").count(), GLOBAL.len());
        assert!(!conf.contains("include ="));
        assert!(
            smb_conf(&[], Some("/etc/samba/nasd-site.conf"))
                .contains("   include = /etc/samba/nasd-site.conf\n")
        );
    }

    #[test]
    fn shares_become_sections() {
        let mut tm = share("Time Machine");
        tm.time_machine = true;
        tm.comment = "Macs back up here".into();
        let mut public = share("public");
        public.guest = true;
        public.read_only = true;
        let conf = smb_conf(&[tm, public], None);
        assert!(conf.contains("\n[Time Machine]\n   comment = Macs back up here\n   path = /srv/data/Time Machine\n   read only = no\n   guest ok = no\n   valid users = alice bob\n"));
        assert!(conf.contains("fruit:time machine = yes"));
        let public_section = &conf[conf.find("[public]").unwrap()..];
        assert!(public_section.contains("read only = yes\n   guest ok = yes\n"));
        assert!(
            !public_section.contains("valid users"),
            "guests are not limited to users"
        );
    }

    #[test]
    fn exports_quote_paths_and_squash_root() {
        let mut films = share("films");
        films.nfs = Some(NfsExport {
            clients: vec!["192.168.1.0/24".into(), "node1".into()],
            read_only: false,
        });
        let mut ro = share("ro");
        ro.read_only = true;
        ro.nfs = Some(NfsExport {
            clients: vec!["10.0.0.5".into()],
            read_only: false,
        });
        let text = exports(&[films, ro, share("smb-only")]);
        assert!(text.contains("\"/srv/data/films\" 192.168.1.0/24(rw,sync,no_subtree_check,root_squash) node1(rw,sync,no_subtree_check,root_squash)\n"));
        assert!(
            text.contains("\"/srv/data/ro\" 10.0.0.5(ro,"),
            "a read-only share exports read-only"
        );
        assert!(!text.contains("smb-only"));
    }

    #[test]
    fn avahi_announces_smb_and_time_machine() {
        let mut tm = share("Backups");
        tm.time_machine = true;
        let xml = avahi_service(&[tm]);
        assert!(xml.contains("<type>_smb._tcp</type><port>445</port>"));
        assert!(xml.contains("dk0=adVN=Backups,adVF=0x82"));
        assert!(!avahi_service(&[share("x")]).contains("_adisk"));
    }
}
