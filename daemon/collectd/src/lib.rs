//! A collectd plugin for people who keep collectd: it reports what nasd's
//! own sensor code reads (per-cluster CPU frequency, every thermal zone and
//! hwmon temperature) as `nasd/cpufreq-<policy>` and
//! `nasd/temperature-<sensor>`.
//!
//! ```text
//! LoadPlugin nasd
//! <Plugin nasd>
//!   Root "/"   # optional: read /sys and /proc under another root
//! </Plugin>
//! ```

use std::error::Error;

use collectd_plugin::{
    ConfigItem, Plugin, PluginCapabilities, PluginManager, PluginRegistration, Value,
    ValueListBuilder, collectd_plugin,
};
use nasd::host::Host;
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct Config {
    root: Option<String>,
}

struct Sensors {
    host: Host,
}

struct Manager;

impl PluginManager for Manager {
    fn name() -> &'static str {
        "nasd"
    }

    fn plugins(config: Option<&[ConfigItem<'_>]>) -> Result<PluginRegistration, Box<dyn Error>> {
        let config: Config = collectd_plugin::de::from_collectd(config.unwrap_or_default())?;
        let host = Host::new(config.root.unwrap_or_else(|| "/".into()))?;
        Ok(PluginRegistration::Single(Box::new(Sensors { host })))
    }
}

impl Plugin for Sensors {
    fn capabilities(&self) -> PluginCapabilities {
        PluginCapabilities::READ
    }

    fn read_values(&self) -> Result<(), Box<dyn Error>> {
        let info = nasd::inventory::collect(&self.host)?;
        for reading in nasd::monitor::collectd::readings(&info) {
            ValueListBuilder::new(Manager::name(), reading.kind)
                .type_instance(reading.instance.as_str())
                .values(&[Value::Gauge(reading.value)])
                .submit()?;
        }
        Ok(())
    }
}

collectd_plugin!(Manager);
