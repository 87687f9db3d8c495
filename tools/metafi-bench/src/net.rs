//! The client machine's limits: local source addresses to spread connections over (one address
//! has only the ephemeral port range towards one server, ~28k ports by default) and the
//! open-file limit (one descriptor per socket).

use std::net::{IpAddr, Ipv4Addr};

/// Parses `127.0.0.1,127.0.0.2` and ranges `127.0.0.1-127.0.0.8` (IPv4 ranges only).
pub fn parse_sources(text: &str) -> Result<Vec<IpAddr>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((from, to)) = part.split_once('-') {
            let from: Ipv4Addr = from
                .trim()
                .parse()
                .map_err(|_| format!("source range {part:?}: {from:?} is not an IPv4 address"))?;
            let to: Ipv4Addr = to
                .trim()
                .parse()
                .map_err(|_| format!("source range {part:?}: {to:?} is not an IPv4 address"))?;
            let (a, b) = (u32::from(from), u32::from(to));
            if b < a || b - a >= 65_536 {
                return Err(format!(
                    "source range {part:?}: the end must follow the start, at most 65,536 addresses"
                ));
            }
            out.extend((a..=b).map(|n| IpAddr::V4(Ipv4Addr::from(n))));
        } else {
            let ip: IpAddr = part
                .parse()
                .map_err(|_| format!("source {part:?} is not an IP address"))?;
            out.push(ip);
        }
    }
    Ok(out)
}

/// `count` loopback source addresses from 127.0.0.1 (Linux routes all of 127.0.0.0/8 to lo,
/// so they need no configuration).
pub fn loopback_sources(count: u32) -> Vec<IpAddr> {
    (0..count)
        .map(|i| IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 0, 0, 1)) + i)))
        .collect()
}

/// Raises the soft open-file limit as far as the hard limit allows (and the hard limit too when
/// running as root); returns the limit now in force.
pub fn raise_open_files(wanted: u64) -> std::io::Result<u64> {
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE)?;
    if soft >= wanted {
        return Ok(soft);
    }
    // raising the hard limit needs CAP_SYS_RESOURCE (root); without it, go as far as allowed
    if wanted > hard && rlimit::setrlimit(rlimit::Resource::NOFILE, wanted, wanted).is_ok() {
        return Ok(wanted);
    }
    rlimit::increase_nofile_limit(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_lists_and_ranges() {
        let ips = parse_sources("127.0.0.1, 127.0.0.5-127.0.0.7").expect("valid");
        let text: Vec<String> = ips.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            vec!["127.0.0.1", "127.0.0.5", "127.0.0.6", "127.0.0.7"]
        );
        assert!(parse_sources("127.0.0.9-127.0.0.1").is_err());
        assert!(parse_sources("localhost").is_err());
        assert_eq!(
            parse_sources("").expect("empty is fine"),
            Vec::<IpAddr>::new()
        );
    }

    #[test]
    fn loopback_sources_count_up_from_127_0_0_1() {
        let text: Vec<String> = loopback_sources(3)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(text, vec!["127.0.0.1", "127.0.0.2", "127.0.0.3"]);
    }
}
