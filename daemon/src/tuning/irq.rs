//! `/proc/interrupts`: which interrupt lines carry disk and network traffic.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Irq {
    pub number: u32,
    /// The handler's name (`xhci-hcd:usb3`, `eth0`, `ahci[0000:01:00.0]`).
    pub name: String,
    /// Interrupts served so far, per CPU.
    pub counts: Vec<u64>,
}

/// The numbered lines of `/proc/interrupts` (IPIs and totals are skipped).
pub fn parse(text: &str) -> Vec<Irq> {
    let mut lines = text.lines();
    let cpus = lines
        .next()
        .map_or(0, |header| header.split_whitespace().count());
    lines
        .filter_map(|line| {
            let (number, rest) = line.trim_start().split_once(':')?;
            let number: u32 = number.parse().ok()?;
            let mut fields = rest.split_whitespace();
            let counts: Vec<u64> = fields
                .by_ref()
                .take(cpus)
                .map(|c| c.parse().ok())
                .collect::<Option<_>>()?;
            // After the counts: controller, hardware number, trigger, then
            // the handler names; the last word is the device.
            let name = fields.last()?.to_owned();
            Some(Irq {
                number,
                name,
                counts,
            })
        })
        .collect()
}

/// Interrupts of USB host controllers (disks and Ethernet on the XU4), SATA
/// controllers and network interfaces.
pub fn is_io(irq: &Irq, net_interfaces: &[String]) -> bool {
    let name = irq.name.as_str();
    ["xhci", "ehci", "ohci", "dwc3", "ahci", "sata"]
        .iter()
        .any(|p| name.contains(p))
        || net_interfaces
            .iter()
            .any(|iface| name == iface || name.starts_with(&format!("{iface}-")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const XU4: &str = include_str!("../../../tests/fixtures/odroid-xu4/proc/interrupts");
    const HC4: &str = include_str!("../../../tests/fixtures/odroid-hc4/proc/interrupts");

    #[test]
    fn parses_numbered_lines_with_per_cpu_counts() {
        let irqs = parse(XU4);
        assert_eq!(irqs.len(), 6);
        let usb3 = irqs.iter().find(|i| i.number == 68).unwrap();
        assert_eq!(usb3.name, "xhci-hcd:usb3");
        assert_eq!(usb3.counts.len(), 8);
        assert_eq!(usb3.counts[0], 2_912_344);
    }

    #[test]
    fn picks_usb_sata_and_network_interrupts() {
        let eth = vec!["eth0".to_owned()];
        let xu4: Vec<u32> = parse(XU4)
            .into_iter()
            .filter(|i| is_io(i, &eth))
            .map(|i| i.number)
            .collect();
        assert_eq!(xu4, [67, 68]);
        let hc4: Vec<String> = parse(HC4)
            .into_iter()
            .filter(|i| is_io(i, &eth))
            .map(|i| i.name)
            .collect();
        assert_eq!(hc4, ["eth0", "xhci-hcd:usb1", "ahci[0000:01:00.0]"]);
    }
}
