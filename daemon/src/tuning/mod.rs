//! Tuning: cpufreq governors, limits and tunables per cluster, block queue
//! settings per disk, and interrupt affinity. The desired tuning lives in
//! the store; applying it checks every value first, writes in the order the
//! kernel needs, reads every value back and restores all of it on any
//! failure; a drift check puts back what something else changed.

pub mod irq;
pub mod rules;
pub mod text;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::host::knobs::{Knob, selected_scheduler};
use crate::host::{Host, HostError};
use crate::inventory::{self, Cluster, ThermalZone};
use crate::store::{Severity, Store, StoreError};
use crate::validate::Invalid;

/// A passive trip point this close makes a faster setting ask first.
const THERMAL_MARGIN_CELSIUS: f64 = 5.0;
const DESIRED_KEY: &str = "tuning";

#[derive(Debug, thiserror::Error)]
pub enum TuningError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("this machine has no CPU frequency scaling (no cpufreq policies)")]
    NoCpufreq,
    #[error("{0}; repeat with accept_thermal_risk to apply anyway")]
    ThermalRisk(String),
    #[error("{failed}; every value was restored to what it was")]
    Restored { failed: String },
    #[error("{failed}; restoring also failed for: {unrestored}")]
    NotRestored { failed: String, unrestored: String },
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FreqTime {
    pub khz: u64,
    pub secs: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClusterState {
    #[serde(flatten)]
    pub cluster: Cluster,
    /// The current governor's tunables.
    pub tunables: BTreeMap<String, String>,
    /// "policy" or "global": where this kernel keeps them.
    pub tunables_scope: Option<&'static str>,
    pub time_in_state: Vec<FreqTime>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DiskQueue {
    pub disk: String,
    pub read_ahead_kb: Option<u64>,
    pub scheduler: Option<String>,
    pub available_schedulers: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IrqState {
    pub number: u32,
    pub name: String,
    pub affinity: Option<String>,
    /// Carries disk or network traffic.
    pub io: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TuningState {
    pub clusters: Vec<ClusterState>,
    pub disks: Vec<DiskQueue>,
    pub irqs: Vec<IrqState>,
    pub thermal: Vec<ThermalZone>,
    pub desired: Desired,
    pub presets: Vec<rules::Preset>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClusterDesired {
    pub governor: Option<String>,
    #[serde(default)]
    pub tunables: BTreeMap<String, u64>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DiskDesired {
    pub read_ahead_kb: Option<u64>,
    pub scheduler: Option<String>,
}

/// What nasd keeps applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Desired {
    pub preset: Option<String>,
    #[serde(default)]
    pub clusters: BTreeMap<String, ClusterDesired>,
    #[serde(default)]
    pub disks: BTreeMap<String, DiskDesired>,
    /// CPU list per interrupt handler name (numbers change across boots).
    #[serde(default)]
    pub irqs: BTreeMap<String, String>,
}

/// A change to make: a preset and/or values, for every cluster or one.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningRequest {
    pub preset: Option<String>,
    pub cluster: Option<String>,
    pub governor: Option<String>,
    #[serde(default)]
    pub tunables: BTreeMap<String, u64>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
    pub disk: Option<String>,
    pub read_ahead_kb: Option<u64>,
    pub scheduler: Option<String>,
    #[serde(default)]
    pub accept_thermal_risk: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Change {
    pub knob: Knob,
    pub from: Option<String>,
    pub to: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Event {
    pub at: i64,
    pub message: String,
}

/// `nasd tune set TARGET KEY=VALUE...`: TARGET is a cpufreq policy
/// (`governor`, `min_khz`, `max_khz`, or a governor tunable) or a disk
/// (`read_ahead_kb`, `scheduler`).
pub fn request_from_pairs(target: &str, pairs: &[String]) -> Result<TuningRequest, Invalid> {
    let mut req = TuningRequest::default();
    let is_policy = target.starts_with("policy");
    if is_policy {
        req.cluster = Some(target.to_owned());
    } else {
        req.disk = Some(target.to_owned());
    }
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| Invalid::new(pair.clone(), "must be KEY=VALUE"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| Invalid::new(key, format!("'{value}' is not a whole number")))
        };
        match (is_policy, key) {
            (true, "governor") => req.governor = Some(value.to_owned()),
            (true, "min_khz") => req.min_khz = Some(number()?),
            (true, "max_khz") => req.max_khz = Some(number()?),
            (true, tunable) => {
                req.tunables.insert(tunable.to_owned(), number()?);
            }
            (false, "read_ahead_kb") => req.read_ahead_kb = Some(number()?),
            (false, "scheduler") => req.scheduler = Some(value.to_owned()),
            (false, other) => {
                return Err(Invalid::new(
                    other,
                    "a disk takes read_ahead_kb or scheduler",
                ));
            }
        }
    }
    Ok(req)
}

/// `4-7` for [4, 5, 6, 7]: the form smp_affinity_list reads back in.
pub fn cpu_list_string(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        parts.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    parts.join(",")
}

fn time_in_state(text: Option<&str>) -> Vec<FreqTime> {
    inventory::parse::time_in_state(text.unwrap_or_default())
        .into_iter()
        // USER_HZ ticks, 10 ms each.
        .map(|(khz, ticks)| FreqTime {
            khz,
            secs: ticks as f64 / 100.0,
        })
        .collect()
}

/// Reads everything tuning shows (pure with respect to `host`'s tree).
pub fn observe(host: &Host, desired: Desired) -> Result<TuningState, TuningError> {
    let info = inventory::collect(host)?;
    let mut clusters = Vec::new();
    for (cluster, raw) in info.cpu.clusters.into_iter().zip(host.cpufreq_policies()?) {
        let governor = cluster.governor.clone().unwrap_or_default();
        let tunables = host.governor_tunables(&cluster.policy, &governor)?;
        clusters.push(ClusterState {
            tunables: tunables.values.into_iter().collect(),
            tunables_scope: tunables
                .per_policy
                .map(|p| if p { "policy" } else { "global" }),
            time_in_state: time_in_state(raw.attr("stats/time_in_state")),
            cluster,
        });
    }
    let disks = host
        .block_devices()?
        .into_iter()
        .filter(|d| {
            d.entry.attr("queue/read_ahead_kb").is_some() && !d.entry.name.starts_with("loop")
        })
        .map(|d| {
            let schedulers = d.entry.attr("queue/scheduler").unwrap_or_default();
            DiskQueue {
                read_ahead_kb: d
                    .entry
                    .attr("queue/read_ahead_kb")
                    .and_then(|v| v.parse().ok()),
                scheduler: (!schedulers.is_empty())
                    .then(|| selected_scheduler(schedulers).to_owned()),
                available_schedulers: schedulers
                    .split_whitespace()
                    .map(|s| s.trim_matches(['[', ']']).to_owned())
                    .collect(),
                disk: d.entry.name,
            }
        })
        .collect();
    let net: Vec<String> = info.network.iter().map(|n| n.name.clone()).collect();
    let irqs = host
        .proc_interrupts()?
        .map(|t| irq::parse(&t))
        .unwrap_or_default()
        .into_iter()
        .map(|i| {
            Ok(IrqState {
                affinity: host.read_knob(&Knob::IrqAffinity { irq: i.number })?,
                io: irq::is_io(&i, &net),
                number: i.number,
                name: i.name,
            })
        })
        .collect::<Result<_, HostError>>()?;
    Ok(TuningState {
        clusters,
        disks,
        irqs,
        thermal: info.thermal,
        desired,
        presets: rules::presets(),
    })
}

/// Folds a request into the desired tuning, checking every value against
/// what this kernel offers. Nothing is written here.
pub fn plan(state: &TuningState, req: &TuningRequest) -> Result<Desired, TuningError> {
    let mut desired = state.desired.clone();
    let wants_cpu = req.preset.is_some()
        || req.governor.is_some()
        || !req.tunables.is_empty()
        || req.min_khz.is_some()
        || req.max_khz.is_some();
    if wants_cpu {
        if state.clusters.is_empty() {
            return Err(TuningError::NoCpufreq);
        }
        let preset = req.preset.as_deref().map(rules::preset).transpose()?;
        let targets: Vec<&ClusterState> = match &req.cluster {
            Some(policy) => vec![
                state
                    .clusters
                    .iter()
                    .find(|c| &c.cluster.policy == policy)
                    .ok_or_else(|| {
                        let known: Vec<&str> = state
                            .clusters
                            .iter()
                            .map(|c| c.cluster.policy.as_str())
                            .collect();
                        Invalid::new(
                            "cluster",
                            format!(
                                "no policy '{policy}' (this machine has {})",
                                known.join(", ")
                            ),
                        )
                    })?,
            ],
            None => state.clusters.iter().collect(),
        };
        for c in targets {
            let policy = &c.cluster.policy;
            let entry = desired.clusters.entry(policy.clone()).or_default();
            let governor = req
                .governor
                .clone()
                .or_else(|| preset.as_ref().map(|p| p.governor.to_owned()))
                .or_else(|| entry.governor.clone())
                .or_else(|| c.cluster.governor.clone())
                .unwrap_or_default();
            rules::check_governor(policy, &governor, &c.cluster.available_governors)?;
            if entry.governor.as_deref() != Some(governor.as_str()) {
                entry.tunables.clear();
            }
            if let Some(p) = &preset {
                entry.tunables = p.tunables.clone();
            }
            entry.tunables.extend(req.tunables.clone());
            for (name, value) in &entry.tunables {
                rules::check_tunable(&governor, name, *value)?;
            }
            entry.governor = Some(governor);
            let (hw_min, hw_max) = (
                c.cluster.hw_min_khz.unwrap_or(0),
                c.cluster.hw_max_khz.unwrap_or(u64::MAX),
            );
            for (field, value) in [("min_khz", req.min_khz), ("max_khz", req.max_khz)] {
                if let Some(v) = value
                    && !(hw_min..=hw_max).contains(&v)
                {
                    return Err(Invalid::new(
                        field,
                        format!("must be within {policy}'s {hw_min} to {hw_max} kHz, got {v}"),
                    )
                    .into());
                }
            }
            entry.min_khz = req.min_khz.or(entry.min_khz);
            entry.max_khz = req.max_khz.or(entry.max_khz);
            if let (Some(lo), Some(hi)) = (entry.min_khz, entry.max_khz)
                && lo > hi
            {
                return Err(
                    Invalid::new("min_khz", format!("{lo} kHz is above max_khz {hi} kHz")).into(),
                );
            }
        }
        if let Some(p) = &preset {
            desired.preset = Some(p.name.to_owned());
            desired.irqs = if p.pin_io_irqs {
                io_irq_pinning(state)
            } else {
                BTreeMap::new()
            };
        } else {
            desired.preset = None;
        }
    }
    if let Some(disk) = &req.disk {
        let queue = state
            .disks
            .iter()
            .find(|d| &d.disk == disk)
            .ok_or_else(|| Invalid::new("disk", format!("no disk '{disk}'")))?;
        let entry = desired.disks.entry(disk.clone()).or_default();
        if let Some(kb) = req.read_ahead_kb {
            if !(4..=65_536).contains(&kb) {
                return Err(Invalid::new("read_ahead_kb", "must be 4 to 65536").into());
            }
            entry.read_ahead_kb = Some(kb);
        }
        if let Some(s) = &req.scheduler {
            if !queue.available_schedulers.contains(s) {
                return Err(Invalid::new(
                    "scheduler",
                    format!("{disk} offers {}", queue.available_schedulers.join(", ")),
                )
                .into());
            }
            entry.scheduler = Some(s.clone());
        }
    } else if req.read_ahead_kb.is_some() || req.scheduler.is_some() {
        return Err(Invalid::new("disk", "is required with read_ahead_kb or scheduler").into());
    }
    Ok(desired)
}

/// On a board with a big and a LITTLE cluster, the interrupts of USB, SATA
/// and network go to the big one (the fastest `hw_max_khz`).
fn io_irq_pinning(state: &TuningState) -> BTreeMap<String, String> {
    if state.clusters.len() < 2 {
        return BTreeMap::new();
    }
    let Some(big) = state.clusters.iter().max_by_key(|c| c.cluster.hw_max_khz) else {
        return BTreeMap::new();
    };
    let cpus = cpu_list_string(&big.cluster.cpus);
    state
        .irqs
        .iter()
        .filter(|i| i.io)
        .map(|i| (i.name.clone(), cpus.clone()))
        .collect()
}

/// The writes that make the machine match `desired`, in the order the
/// kernel needs: governor first (its tunables appear only then), limits
/// in an order that never has min above max, then tunables, queues, IRQs.
pub fn settings(desired: &Desired, state: &TuningState) -> Vec<(Knob, String)> {
    let mut out = Vec::new();
    for (policy, c) in &desired.clusters {
        let Some(current) = state.clusters.iter().find(|s| &s.cluster.policy == policy) else {
            continue;
        };
        if let Some(g) = &c.governor {
            out.push((
                Knob::Governor {
                    policy: policy.clone(),
                },
                g.clone(),
            ));
        }
        let min = c.min_khz.map(|v| {
            (
                Knob::MinKhz {
                    policy: policy.clone(),
                },
                v.to_string(),
            )
        });
        let max = c.max_khz.map(|v| {
            (
                Knob::MaxKhz {
                    policy: policy.clone(),
                },
                v.to_string(),
            )
        });
        let raising_min = c
            .min_khz
            .zip(current.cluster.max_khz)
            .is_some_and(|(lo, cur_max)| lo > cur_max);
        if raising_min {
            out.extend(max.into_iter().chain(min));
        } else {
            out.extend(min.into_iter().chain(max));
        }
        if let Some(g) = &c.governor {
            out.extend(c.tunables.iter().map(|(name, v)| {
                (
                    Knob::Tunable {
                        policy: policy.clone(),
                        governor: g.clone(),
                        name: name.clone(),
                    },
                    v.to_string(),
                )
            }));
        }
    }
    // A disk that is not here now (unplugged) is skipped, as a cluster
    // would be: its settings wait for it instead of failing everything.
    for (disk, d) in desired
        .disks
        .iter()
        .filter(|(disk, _)| state.disks.iter().any(|q| &q.disk == *disk))
    {
        if let Some(kb) = d.read_ahead_kb {
            out.push((Knob::ReadAheadKb { disk: disk.clone() }, kb.to_string()));
        }
        if let Some(s) = &d.scheduler {
            out.push((Knob::Scheduler { disk: disk.clone() }, s.clone()));
        }
    }
    for irq in &state.irqs {
        if let Some(cpus) = desired.irqs.get(&irq.name) {
            out.push((Knob::IrqAffinity { irq: irq.number }, cpus.clone()));
        }
    }
    out
}

/// Whether going from `state` to `desired` runs the CPUs faster.
fn raises_frequency(state: &TuningState, desired: &Desired) -> bool {
    desired.clusters.iter().any(|(policy, d)| {
        let Some(c) = state.clusters.iter().find(|c| &c.cluster.policy == policy) else {
            return false;
        };
        let to_performance = d.governor.as_deref() == Some("performance")
            && c.cluster.governor.as_deref() != Some("performance");
        let higher_max = d
            .max_khz
            .zip(c.cluster.max_khz)
            .is_some_and(|(new, old)| new > old);
        let eager = d.tunables.get("up_threshold").is_some_and(|new| {
            c.tunables
                .get("up_threshold")
                .and_then(|v| v.parse::<u64>().ok())
                .is_none_or(|old| *new < old)
        });
        to_performance || higher_max || eager
    })
}

/// Zones within the margin of a passive trip point, as sentences.
pub fn thermal_warnings(thermal: &[ThermalZone]) -> Vec<String> {
    thermal
        .iter()
        .filter_map(|z| {
            let now = z.celsius?;
            let trip = z.trips.iter().filter(|t| t.kind == "passive").map(|t| t.celsius).reduce(f64::min)?;
            (trip - now <= THERMAL_MARGIN_CELSIUS).then(|| {
                format!(
                    "{} ({}) is at {now:.1} °C, within {THERMAL_MARGIN_CELSIUS} °C of its passive trip point at {trip:.1} °C where the kernel throttles",
                    z.zone,
                    z.kind.as_deref().unwrap_or("?")
                )
            })
        })
        .collect()
}

/// `/etc/sysfs.d` lines for people who prefer sysfsutils.
pub fn export_sysfs(host: &Host, desired: &Desired, state: &TuningState) -> String {
    let mut out = String::from(
        "# Generated by `nasd tune export-sysfs`: nasd's desired tuning as sysfsutils lines.\n",
    );
    for (knob, value) in settings(desired, state) {
        match host.knob_sysfs_name(&knob) {
            Some(name) => out.push_str(&format!("{name} = {value}\n")),
            None => out.push_str(&format!(
                "# {knob} = {value} (not in /sys; nasd applies it)\n"
            )),
        }
    }
    out
}

pub struct Tuner {
    host: Host,
    store: Arc<Store>,
    /// Applies run one at a time (the API, the drift check, start-up).
    applying: tokio::sync::Mutex<()>,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Tuner {
    pub fn new(host: Host, store: Arc<Store>) -> Self {
        Self {
            host,
            store,
            applying: tokio::sync::Mutex::new(()),
        }
    }

    pub fn desired(&self) -> Result<Desired, TuningError> {
        Ok(self
            .store
            .setting(DESIRED_KEY)?
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default())
    }

    pub fn state(&self) -> Result<TuningState, TuningError> {
        observe(&self.host, self.desired()?)
    }

    pub fn export_sysfs(&self) -> Result<String, TuningError> {
        let state = self.state()?;
        Ok(export_sysfs(&self.host, &state.desired, &state))
    }

    pub fn events(&self) -> Result<Vec<Event>, TuningError> {
        Ok(self
            .store
            .events("tuning", 100)?
            .into_iter()
            .map(|(at, message)| Event { at, message })
            .collect())
    }

    /// Checks, writes, verifies and records a tuning request. Returns what
    /// changed: nothing for a repeat of the current tuning. The sysfs work
    /// runs off the async threads.
    pub async fn apply(self: &Arc<Self>, req: TuningRequest) -> Result<Vec<Change>, TuningError> {
        let _one_at_a_time = self.applying.lock().await;
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.apply_now(&req))
            .await
            .map_err(|e| TuningError::Invalid(Invalid::new("tuning", e.to_string())))?
    }

    fn apply_now(&self, req: &TuningRequest) -> Result<Vec<Change>, TuningError> {
        let state = self.state()?;
        let desired = plan(&state, req)?;
        let warnings = thermal_warnings(&state.thermal);
        if !req.accept_thermal_risk && !warnings.is_empty() && raises_frequency(&state, &desired) {
            return Err(TuningError::ThermalRisk(warnings.join("; ")));
        }
        let changes = self.write_all(&settings(&desired, &state))?;
        let json =
            serde_json::to_string(&desired).map_err(|e| Invalid::new("tuning", e.to_string()))?;
        self.store.put_setting(DESIRED_KEY, &json)?;
        if !changes.is_empty() {
            self.store.add_event(
                "tuning",
                Severity::Info,
                now(),
                &describe("applied", &changes),
            )?;
        }
        Ok(changes)
    }

    /// Puts back whatever differs from the desired tuning (at start, and
    /// when something else changed it). Returns what was put back.
    pub async fn enforce(self: &Arc<Self>) -> Result<Vec<Change>, TuningError> {
        let _one_at_a_time = self.applying.lock().await;
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.enforce_now())
            .await
            .map_err(|e| TuningError::Invalid(Invalid::new("tuning", e.to_string())))?
    }

    fn enforce_now(&self) -> Result<Vec<Change>, TuningError> {
        let state = self.state()?;
        let changes = self.write_all(&settings(&state.desired, &state))?;
        if !changes.is_empty() {
            let message = describe(
                "drift: something else changed the tuning; restored",
                &changes,
            );
            tracing::warn!("{message}");
            self.store
                .add_event("tuning", Severity::Warning, now(), &message)?;
        }
        Ok(changes)
    }

    /// Writes each differing value and reads it back; on the first failure
    /// (of a read, a write or a read-back) writes back every earlier value,
    /// newest first, and the tunables of any governor switched away from.
    fn write_all(&self, wanted: &[(Knob, String)]) -> Result<Vec<Change>, TuningError> {
        let mut done: Vec<Change> = Vec::new();
        let mut left_governors: Vec<(Knob, String)> = Vec::new();
        for (knob, value) in wanted {
            let from = match self.host.read_knob(knob) {
                Ok(from) => from,
                Err(e) => return Err(self.restore(&done, &left_governors, e.to_string())),
            };
            if from.as_deref() == Some(value.as_str()) {
                continue;
            }
            // Leaving a governor drops its tunables: note them, so that a
            // restore brings them back as they were, not as defaults.
            if let (Knob::Governor { policy }, Some(old)) = (knob, &from) {
                let tunables = self.host.governor_tunables(policy, old).unwrap_or_default();
                left_governors.extend(tunables.values.into_iter().map(|(name, v)| {
                    let knob = Knob::Tunable {
                        policy: policy.clone(),
                        governor: old.clone(),
                        name,
                    };
                    (knob, v)
                }));
            }
            let result = self
                .host
                .write_knob(knob, value)
                .map_err(|e| e.to_string())
                .and_then(|()| match self.host.read_knob(knob) {
                    Ok(Some(back)) if &back == value => Ok(()),
                    Ok(back) => Err(format!(
                        "{knob} reads back {} after writing {value}",
                        back.as_deref().unwrap_or("nothing")
                    )),
                    Err(e) => Err(e.to_string()),
                });
            done.push(Change {
                knob: knob.clone(),
                from,
                to: value.clone(),
            });
            if let Err(failed) = result {
                return Err(self.restore(&done, &left_governors, failed));
            }
        }
        Ok(done)
    }

    fn restore(
        &self,
        done: &[Change],
        left_governors: &[(Knob, String)],
        failed: String,
    ) -> TuningError {
        let mut unrestored = Vec::new();
        for change in done.iter().rev() {
            let Some(old) = &change.from else { continue };
            let back = self.host.write_knob(&change.knob, old);
            // A tunable of a governor that was just switched away from is
            // gone with it: nothing to restore there.
            let gone = matches!(change.knob, Knob::Tunable { .. })
                && self.host.read_knob(&change.knob).ok().flatten().is_none();
            if back.is_err()
                && !gone
                && self.host.read_knob(&change.knob).ok().flatten().as_deref() != Some(old)
            {
                unrestored.push(change.knob.to_string());
            }
        }
        // The governors are back: so must their tunables be.
        for (knob, value) in left_governors {
            if self.host.read_knob(knob).ok().flatten().as_deref() != Some(value.as_str())
                && self.host.write_knob(knob, value).is_err()
            {
                unrestored.push(knob.to_string());
            }
        }
        tracing::error!("tuning failed ({failed}); restored the previous values");
        if unrestored.is_empty() {
            TuningError::Restored { failed }
        } else {
            TuningError::NotRestored {
                failed,
                unrestored: unrestored.join(", "),
            }
        }
    }
}

fn describe(what: &str, changes: &[Change]) -> String {
    let parts: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "{}: {} -> {}",
                c.knob,
                c.from.as_deref().unwrap_or("?"),
                c.to
            )
        })
        .collect();
    format!("{what}: {}", parts.join("; "))
}

/// Applies the desired tuning at start, then checks for drift every
/// `interval`.
pub async fn keep_applied(tuner: Arc<Tuner>, interval: Duration) {
    loop {
        if let Err(err) = tuner.enforce().await {
            tracing::warn!("tuning not enforced: {err}");
        }
        tokio::time::sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_compact_as_the_kernel_writes_them() {
        assert_eq!(cpu_list_string(&[4, 5, 6, 7]), "4-7");
        assert_eq!(cpu_list_string(&[0, 2, 3]), "0,2-3");
        assert_eq!(cpu_list_string(&[]), "");
    }

    #[test]
    fn set_pairs_become_a_request() {
        let pairs = ["governor=ondemand", "up_threshold=80", "max_khz=1800000"].map(String::from);
        let req = request_from_pairs("policy4", &pairs).unwrap();
        assert_eq!(req.cluster.as_deref(), Some("policy4"));
        assert_eq!(req.governor.as_deref(), Some("ondemand"));
        assert_eq!(req.tunables["up_threshold"], 80);
        assert_eq!(req.max_khz, Some(1_800_000));
        let disk = request_from_pairs("sda", &["read_ahead_kb=1024".into()]).unwrap();
        assert_eq!(
            (disk.disk.as_deref(), disk.read_ahead_kb),
            (Some("sda"), Some(1024))
        );
        assert_eq!(
            request_from_pairs("policy0", &["up_threshold=high".into()])
                .unwrap_err()
                .field,
            "up_threshold"
        );
        assert_eq!(
            request_from_pairs("sda", &["nr_requests=4".into()])
                .unwrap_err()
                .field,
            "nr_requests"
        );
        assert!(request_from_pairs("policy0", &["io_is_busy".into()]).is_err());
    }

    #[test]
    fn time_in_state_is_in_seconds() {
        let t = time_in_state(Some("200000 150\n1400000 25"));
        assert_eq!(
            t,
            [
                FreqTime {
                    khz: 200_000,
                    secs: 1.5
                },
                FreqTime {
                    khz: 1_400_000,
                    secs: 0.25
                }
            ]
        );
    }
}
