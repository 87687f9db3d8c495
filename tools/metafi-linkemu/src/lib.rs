//! `metafi-linkemu`: a user-space link emulator for experiments on real network stacks. This
//! kernel has no `netem`, so the emulator joins two network namespaces (the server's and the
//! clients') with a TUN device in each and forwards IP packets between them through modelled
//! links: the seed's topology of per-client access links (e.g. 64–128 kbit/s, 70 ms) and one
//! shared server link (e.g. 600 kbit/s, 70 ms), each direction with its own rate, delay,
//! jitter, loss (Bernoulli or Gilbert-Elliott) and tail-drop queue limit, all seeded.
//!
//! The library is the sans-IO model, tested with a fake clock: [`link::Link`] (one direction
//! of one link), [`network::Network`] (the topology), [`spec::LinkSpec`] (the command-line
//! syntax). The binary (`src/main.rs`) adds the devices, the namespaces' addresses and routes,
//! the forwarding loop and UDP probes; see `docs/TRANSPORT.md`.
//!
//! Must not depend on: any MetaFi crate (it carries IP packets, whatever speaks over them).

pub mod link;
pub mod network;
pub mod spec;

pub use link::{Link, LinkConfig, LinkStats, Loss, Nanos, Offer};
pub use network::{Direction, Network, NetworkConfig, NetworkStats};
pub use spec::LinkSpec;
