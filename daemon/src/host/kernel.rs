//! The kernel interfaces the daemon reads, by name. This is the one place
//! that knows where Linux keeps each fact; callers get raw text to parse.
//!
//! We keep this small module instead of a sysfs crate because those crates
//! hard-code `/sys` and cannot be pointed at a fixture tree.

use super::{Host, HostError, SysEntry};

const CPUFREQ_DIR: &str = "/sys/devices/system/cpu/cpufreq";
const THERMAL_DIR: &str = "/sys/class/thermal";
const HWMON_DIR: &str = "/sys/class/hwmon";
const NET_DIR: &str = "/sys/class/net";

/// The per-policy attributes of a cpufreq policy directory.
const POLICY_ATTRS: &[&str] = &[
    "related_cpus",
    "affected_cpus",
    "scaling_governor",
    "scaling_available_governors",
    "scaling_min_freq",
    "scaling_max_freq",
    "scaling_cur_freq",
    "cpuinfo_min_freq",
    "cpuinfo_max_freq",
    "scaling_available_frequencies",
    "scaling_driver",
    "stats/time_in_state",
];

impl Host {
    /// `/proc/device-tree/model`: the board name on ARM boards.
    pub fn device_tree_model(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/device-tree/model")
    }

    /// DMI product name: the board name on PCs and VMs.
    pub fn dmi_product_name(&self) -> Result<Option<String>, HostError> {
        self.read_text("/sys/class/dmi/id/product_name")
    }

    /// The machine hardware name, as `uname -m` prints it. Kernels before 6.1
    /// lack `/proc/sys/kernel/arch`; on the live machine we then fall back to
    /// the architecture this binary was built for, which is the same thing
    /// for a native binary. A fixture without the file has no answer.
    pub fn machine_arch(&self) -> Result<Option<String>, HostError> {
        let arch = self.read_text("/proc/sys/kernel/arch")?;
        Ok(arch.or_else(|| self.is_live().then(|| std::env::consts::ARCH.to_owned())))
    }

    pub fn kernel_release(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/sys/kernel/osrelease")
    }

    /// The host name, as notifications name the box.
    pub fn hostname(&self) -> Result<Option<String>, HostError> {
        Ok(self
            .read_text("/proc/sys/kernel/hostname")?
            .map(|h| h.trim().to_owned()))
    }

    pub fn proc_uptime(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/uptime")
    }

    pub fn proc_loadavg(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/loadavg")
    }

    pub fn proc_meminfo(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/meminfo")
    }

    pub fn proc_cpuinfo(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/cpuinfo")
    }

    pub fn proc_stat(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/stat")
    }

    pub fn proc_diskstats(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/diskstats")
    }

    pub fn proc_net_dev(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/net/dev")
    }

    /// The daemon's own I/O accounting (bytes it made the disks write).
    pub fn own_io(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/self/io")
    }

    /// cpufreq policies (`policy0`, `policy4`, ...); none on machines without
    /// frequency scaling.
    pub fn cpufreq_policies(&self) -> Result<Vec<SysEntry>, HostError> {
        self.sys_entries(CPUFREQ_DIR, "policy", POLICY_ATTRS)
    }

    pub fn thermal_zones(&self) -> Result<Vec<SysEntry>, HostError> {
        self.sys_entries(
            THERMAL_DIR,
            "thermal_zone",
            &["type", "temp", "trip_point_*"],
        )
    }

    pub fn hwmon_chips(&self) -> Result<Vec<SysEntry>, HostError> {
        self.sys_entries(HWMON_DIR, "hwmon", &["name", "temp*"])
    }

    pub fn net_interfaces(&self) -> Result<Vec<SysEntry>, HostError> {
        self.sys_entries(NET_DIR, "", &["type", "operstate", "speed", "address"])
    }
}
