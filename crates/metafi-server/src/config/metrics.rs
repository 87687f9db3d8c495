//! The `[metrics]` keys, checked: where Prometheus metrics are served, if at all.

use std::net::SocketAddr;

use super::check::Checker;
use super::raw::RawMetrics;

/// `None` when metrics are disabled or `metrics.address` does not parse (then a problem is
/// recorded).
pub(super) fn validate(m: &RawMetrics, check: &mut Checker) -> Option<SocketAddr> {
    let port = check.port("metrics.port", m.port);
    let ip = check.ip("metrics.address", &m.address)?;
    m.enabled.then(|| SocketAddr::new(ip, port.get()))
}
