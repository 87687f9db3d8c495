//! Per-client snapshot history: what was sent, what was acknowledged, what goes out next.

use crate::delta;
use crate::snapshot::Snapshot;

/// Snapshots remembered per client. An acknowledgement older than this many ticks is useless
/// (its baseline is gone) and the client gets a full snapshot, as Quake 3's `PACKET_BACKUP`.
pub const SNAPSHOT_HISTORY: usize = 8;

/// One connected client's view state.
#[derive(Clone, Debug)]
pub struct Client {
    /// Last tick the client said it received; the baseline for the next delta.
    acked: Option<u32>,
    /// Sent snapshots by `tick % SNAPSHOT_HISTORY`; slots are reused so steady state allocates
    /// nothing.
    history: Vec<Snapshot>,
    /// The encoded packet for the latest tick.
    packet: Vec<u8>,
}

impl Default for Client {
    fn default() -> Client {
        Client {
            acked: None,
            history: vec![Snapshot::default(); SNAPSHOT_HISTORY],
            packet: Vec::new(),
        }
    }
}

impl Client {
    /// Records an acknowledgement; older or repeated acks are ignored.
    pub fn ack(&mut self, tick: u32) {
        if self.acked.is_none_or(|a| tick > a) {
            self.acked = Some(tick);
        }
    }

    pub fn acked(&self) -> Option<u32> {
        self.acked
    }

    pub fn packet(&self) -> &[u8] {
        &self.packet
    }

    /// The snapshot sent for `tick`, if still remembered.
    pub fn sent(&self, tick: u32) -> Option<&Snapshot> {
        Some(&self.history[tick as usize % SNAPSHOT_HISTORY]).filter(|s| s.tick == tick && tick > 0)
    }

    /// The acknowledged snapshot, if still remembered and older than `tick`.
    pub fn baseline(&self, tick: u32) -> Option<&Snapshot> {
        let a = self.acked?;
        let age = tick.checked_sub(a)?;
        if age == 0 || age as usize >= SNAPSHOT_HISTORY {
            return None;
        }
        Some(&self.history[a as usize % SNAPSHOT_HISTORY]).filter(|s| s.tick == a)
    }

    /// Builds and encodes this tick's snapshot. `fill(base, slot)` writes the new snapshot into
    /// `slot` given the baseline. Returns the packet size in bytes.
    pub fn send(
        &mut self,
        tick: u32,
        fill: impl FnOnce(Option<&Snapshot>, &mut Snapshot),
    ) -> usize {
        let slot = tick as usize % SNAPSHOT_HISTORY;
        let mut snap = std::mem::take(&mut self.history[slot]);
        let mut packet = std::mem::take(&mut self.packet);
        packet.clear();
        let base = self.baseline(tick);
        fill(base, &mut snap);
        snap.tick = tick;
        delta::encode(base, &snap, &mut packet);
        self.history[slot] = snap;
        self.packet = packet;
        self.packet.len()
    }
}
