//! Per-client snapshot history: what was sent, what was acknowledged, what goes out next.
//!
//! The sent snapshots of all clients live in one arena, [`History`]. The last [`HOT_SLOTS`]
//! ticks each have a slot: an array holding a fixed-size row per client (a header with the tick
//! and the client's own view, then room for `max_entities` entities). A tick writes the rows of
//! its slot in the order clients are processed, so the writes are one sequential stream; a
//! client's baseline and previous snapshot sit in the rows it had one or two ticks earlier,
//! which in the world's grid order are at or next to its current row, so those reads are
//! near-sequential streams too. No snapshot owns a heap allocation, nothing is moved when
//! clients are re-sorted (a [`Client`] only remembers which row it used for each tick), and the
//! memory is bounded.
//!
//! Why only three hot slots when acknowledgements up to [`SNAPSHOT_HISTORY`] ticks old are
//! honoured: a client that acknowledges in time (nearly all of them) needs only its rows of the
//! last two ticks, and the slot a tick overwrites is then the one written three ticks ago,
//! still in the last-level cache. With a slot per remembered tick the writes went to memory
//! untouched for eight ticks and the working set was eight slots (66 MB at 10,000 clients), so
//! most of the tick's memory traffic went to DRAM. The few rows still needed when their slot is
//! reused (their client has not acknowledged anything newer yet) are first copied to the
//! archive, where they stay until they are [`SNAPSHOT_HISTORY`] ticks old. Bound:
//! `(HOT_SLOTS + archived rows) × (64 + 24 × max_entities)` bytes, with at most
//! `SNAPSHOT_HISTORY - HOT_SLOTS` archived rows per client.

use rayon::prelude::*;

use crate::delta;
use crate::snapshot::{NetEntity, PlayerView, Snapshot, SnapshotRef};

/// Snapshots remembered per client. An acknowledgement older than this many ticks is useless
/// (its baseline is gone) and the client gets a full snapshot, as Quake 3's `PACKET_BACKUP`.
pub const SNAPSHOT_HISTORY: usize = 8;

/// Ticks whose rows of every client are kept in place (see the module docs). At least three:
/// while tick `t` is written, the rows of `t - 1` (the previous set) and `t - 2` (the usual
/// baseline) are read.
pub const HOT_SLOTS: usize = 3;
const _: () = assert!(HOT_SLOTS >= 3 && HOT_SLOTS <= SNAPSHOT_HISTORY);

const NO_ROW: u32 = u32::MAX;
/// Marks a row number in [`Client::rows`] as an index into the archive.
const ARCHIVED: u32 = 1 << 31;

/// One client's bookkeeping: the last acknowledgement, the row it used in each history slot,
/// and where its latest packet is. Small and `Copy`, so it moves with its player when the world
/// re-sorts players by cell.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    /// Last tick the client said it received; the baseline for the next delta.
    acked: Option<u32>,
    /// Row of [`History`] holding the snapshot of each remembered tick, by
    /// `tick % SNAPSHOT_HISTORY` (`NO_ROW`: none yet): a row of that tick's hot slot, or
    /// `ARCHIVED | index` in the archive. The row's header names the tick and owner, so a row
    /// since reused by another client or tick is never mistaken for ours.
    rows: [u32; SNAPSHOT_HISTORY],
    /// Where the world put this client's latest packet (see `World::packet`).
    pub(crate) packet: PacketRef,
}

/// A packet's place in the world's per-chunk packet buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PacketRef {
    pub buf: u32,
    pub start: u32,
    pub len: u32,
}

impl Default for Client {
    fn default() -> Client {
        Client {
            acked: None,
            rows: [NO_ROW; SNAPSHOT_HISTORY],
            packet: PacketRef::default(),
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

    /// The acknowledged tick, if its snapshot can still be remembered and is older than `tick`.
    fn baseline_tick(&self, tick: u32) -> Option<u32> {
        let a = self.acked?;
        let age = tick.checked_sub(a)?;
        (age != 0 && (age as usize) < SNAPSHOT_HISTORY).then_some(a)
    }
}

/// The sent snapshots of a set of clients (see the module docs for the layout).
#[derive(Debug)]
pub struct History {
    /// Entities per row: the interest cap.
    cap: usize,
    /// Indexed by `tick % HOT_SLOTS`.
    slots: Vec<Slot>,
    /// The tick each hot slot was last retired for (0: never), i.e. the tick its rows hold.
    slot_ticks: [u32; HOT_SLOTS],
    /// Rows still needed after their hot slot was reused.
    archive: Archive,
}

/// Rows moved out of a hot slot before it was reused, kept until they are too old to be a
/// baseline. Freed rows are reused, so it grows only to the most rows ever live at once.
#[derive(Debug, Default)]
struct Archive {
    rows: Slot,
    free: Vec<u32>,
    /// Rows archived for each tick, by `tick % SNAPSHOT_HISTORY`: freed when that slot of the
    /// client's ring comes round again.
    by_tick: Vec<Vec<u32>>,
}

/// One history slot: a row per client.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    heads: Vec<RowHead>,
    /// `cap` entities per row.
    ents: Vec<NetEntity>,
}

/// What a row holds besides its entities.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RowHead {
    /// 0: never written (tick 0 is never sent).
    tick: u32,
    /// Who wrote it (the world uses the player id).
    owner: u32,
    len: u32,
    view: PlayerView,
}

/// The rows of one slot being written this tick, split off for one task.
#[derive(Debug)]
pub(crate) struct RowsMut<'a> {
    /// Row number of `heads[0]`.
    pub first: u32,
    pub heads: &'a mut [RowHead],
    pub ents: &'a mut [NetEntity],
}

/// One row being written.
#[derive(Debug)]
pub(crate) struct RowMut<'a> {
    index: u32,
    head: &'a mut RowHead,
    ents: &'a mut [NetEntity],
}

impl RowsMut<'_> {
    /// The `k`th of these rows.
    pub fn row(&mut self, k: usize) -> RowMut<'_> {
        let cap = self.ents.len() / self.heads.len().max(1);
        RowMut {
            index: self.first + k as u32,
            head: &mut self.heads[k],
            ents: &mut self.ents[k * cap..(k + 1) * cap],
        }
    }
}

impl History {
    /// A history whose snapshots hold at most `cap` entities.
    pub fn new(cap: usize) -> History {
        History {
            cap,
            slots: (0..HOT_SLOTS).map(|_| Slot::default()).collect(),
            slot_ticks: [0; HOT_SLOTS],
            archive: Archive {
                by_tick: vec![Vec::new(); SNAPSHOT_HISTORY],
                ..Archive::default()
            },
        }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The snapshot `client` was sent for `tick`, if still remembered.
    #[inline]
    pub fn sent(&self, client: &Client, owner: u32, tick: u32) -> Option<SnapshotRef<'_>> {
        let r = client.rows[tick as usize % SNAPSHOT_HISTORY];
        if r == NO_ROW {
            None
        } else if r & ARCHIVED != 0 {
            row(&self.archive.rows, self.cap, r & !ARCHIVED, owner, tick)
        } else {
            row(
                &self.slots[tick as usize % HOT_SLOTS],
                self.cap,
                r,
                owner,
                tick,
            )
        }
    }

    /// Before `tick` is written: frees the archived rows that are now too old to be a baseline,
    /// and archives the rows of the hot slot `tick` will reuse (normally those of
    /// `tick - HOT_SLOTS`) whose client may still use them: it has not acknowledged that tick or
    /// a later one yet. `clients` yields each client with its owner id (as given to
    /// [`History::send`]). Does nothing if already called for `tick`.
    pub(crate) fn retire<'c>(
        &mut self,
        tick: u32,
        clients: impl Iterator<Item = (u32, &'c mut Client)>,
    ) {
        let hot = tick as usize % HOT_SLOTS;
        let old = std::mem::replace(&mut self.slot_ticks[hot], tick);
        if old == tick {
            return;
        }
        let archive = &mut self.archive;
        // The archived rows of the tick this one replaces in the clients' rings.
        archive
            .free
            .append(&mut archive.by_tick[tick as usize % SNAPSHOT_HISTORY]);
        if old == 0 || tick - old >= SNAPSHOT_HISTORY as u32 {
            return;
        }
        let at = old as usize % SNAPSHOT_HISTORY;
        let slot = &self.slots[hot];
        for (owner, client) in clients {
            let r = client.rows[at];
            // Cheapest test first: nearly every client has acknowledged a later tick.
            let needed = client.acked.is_none_or(|a| a <= old);
            if !needed || r & ARCHIVED != 0 || row(slot, self.cap, r, owner, old).is_none() {
                continue;
            }
            let to = archive.take_row(self.cap);
            archive.rows.copy_row_from(slot, r, to, self.cap);
            archive.by_tick[at].push(to);
            client.rows[at] = ARCHIVED | to;
        }
    }

    /// Takes out the slot `tick` writes, with at least `rows` rows; the caller hands it back
    /// with [`History::put_back`]. Meanwhile `self` still answers for the other slots. Call
    /// [`History::retire`] for `tick` first, or the rows it would have archived are lost.
    pub(crate) fn take_slot(&mut self, tick: u32, rows: usize) -> Slot {
        let mut slot = std::mem::take(&mut self.slots[tick as usize % HOT_SLOTS]);
        if slot.heads.len() < rows {
            slot.heads.resize(rows, RowHead::default());
            slot.ents.resize(rows * self.cap, NetEntity::default());
        }
        slot
    }

    pub(crate) fn put_back(&mut self, tick: u32, slot: Slot) {
        self.slots[tick as usize % HOT_SLOTS] = slot;
    }

    /// Builds one client's snapshot for `tick` in `row`, records it as sent and appends its
    /// packet (encoded against the acknowledged baseline) to `packet`.
    ///
    /// `fill(prev, view, entities)` writes the client's view and up to `cap` entities (sorted
    /// by key) and returns how many; `prev` is the snapshot sent the tick before, if any.
    /// Returns where the packet is in `packet` (`buf` left 0 for the caller to set).
    pub(crate) fn send(
        &self,
        client: &mut Client,
        owner: u32,
        tick: u32,
        row: RowMut<'_>,
        packet: &mut PacketBuf,
        fill: impl FnOnce(Option<SnapshotRef<'_>>, &mut PlayerView, &mut [NetEntity]) -> usize,
    ) -> PacketRef {
        let prev = tick
            .checked_sub(1)
            .and_then(|t| self.sent(client, owner, t));
        let base = client
            .baseline_tick(tick)
            .and_then(|a| self.sent(client, owner, a));
        let RowMut { index, head, ents } = row;
        let len = fill(prev, &mut head.view, ents).min(ents.len());
        head.tick = tick;
        head.owner = owner;
        head.len = len as u32;
        client.rows[tick as usize % SNAPSHOT_HISTORY] = index;
        let snap = SnapshotRef {
            tick,
            view: &head.view,
            entities: &ents[..len],
        };
        let start = packet.used;
        let room = packet.room(delta::max_packet_len(2 * self.cap));
        packet.used += delta::encode_into(base, snap, room);
        PacketRef {
            buf: 0,
            start: start as u32,
            len: (packet.used - start) as u32,
        }
    }
}

/// Packets written back to back into a buffer that only grows, so steady state neither
/// allocates nor zeroes; `used` bytes are this tick's.
#[derive(Debug, Default)]
pub(crate) struct PacketBuf {
    bytes: Vec<u8>,
    used: usize,
}

impl PacketBuf {
    pub fn clear(&mut self) {
        self.used = 0;
    }

    /// Room for at least `n` more bytes after the used ones.
    fn room(&mut self, n: usize) -> &mut [u8] {
        if self.bytes.len() < self.used + n {
            self.bytes.resize(self.used + n, 0);
        }
        &mut self.bytes[self.used..]
    }

    pub fn get(&self, r: PacketRef) -> Option<&[u8]> {
        let (start, end) = (r.start as usize, r.start as usize + r.len as usize);
        self.bytes[..self.used].get(start..end)
    }
}

impl Slot {
    /// Splits rows `0..rows` into runs of `chunk` rows, for parallel writers.
    pub(crate) fn par_chunks_mut(
        &mut self,
        rows: usize,
        cap: usize,
        chunk: usize,
    ) -> impl IndexedParallelIterator<Item = RowsMut<'_>> {
        self.heads[..rows]
            .par_chunks_mut(chunk)
            .zip(self.ents[..rows * cap].par_chunks_mut(chunk * cap))
            .enumerate()
            .map(move |(c, (heads, ents))| RowsMut {
                first: (c * chunk) as u32,
                heads,
                ents,
            })
    }
}

impl Archive {
    /// A free row (growing the archive if none is free).
    fn take_row(&mut self, cap: usize) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            let r = self.rows.heads.len();
            self.rows.heads.push(RowHead::default());
            self.rows.ents.resize((r + 1) * cap, NetEntity::default());
            r as u32
        })
    }
}

impl Slot {
    /// Copies row `from` of `src` over row `to` of `self`.
    fn copy_row_from(&mut self, src: &Slot, from: u32, to: u32, cap: usize) {
        let (from, to) = (from as usize, to as usize);
        self.heads[to] = src.heads[from];
        let len = src.heads[from].len as usize;
        self.ents[to * cap..to * cap + len]
            .copy_from_slice(&src.ents[from * cap..from * cap + len]);
    }
}

/// Row `r` of `slot`, if it holds `owner`'s snapshot of `tick`.
fn row(slot: &Slot, cap: usize, r: u32, owner: u32, tick: u32) -> Option<SnapshotRef<'_>> {
    let head = slot.heads.get(r as usize)?;
    if head.tick != tick || head.owner != owner || tick == 0 {
        return None;
    }
    let start = r as usize * cap;
    Some(SnapshotRef {
        tick,
        view: &head.view,
        entities: slot.ents.get(start..start + head.len as usize)?,
    })
}

/// Clients that keep their places (row `i` is always client `i`), each with its own packet: the
/// history as the benchmark's baselines use it, one client at a time.
#[derive(Debug)]
pub struct ClientTable {
    history: History,
    clients: Vec<Client>,
    packets: Vec<PacketBuf>,
}

impl ClientTable {
    /// `n` clients whose snapshots hold at most `cap` entities.
    pub fn new(n: usize, cap: usize) -> ClientTable {
        ClientTable {
            history: History::new(cap),
            clients: vec![Client::default(); n],
            packets: (0..n).map(|_| PacketBuf::default()).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.clients.len()
    }

    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    pub fn ack(&mut self, i: usize, tick: u32) {
        self.clients[i].ack(tick);
    }

    /// Client `i`'s latest packet.
    pub fn packet(&self, i: usize) -> &[u8] {
        self.packets[i]
            .get(self.clients[i].packet)
            .unwrap_or_default()
    }

    /// The snapshot client `i` was sent for `tick`, if still remembered.
    pub fn sent(&self, i: usize, tick: u32) -> Option<Snapshot> {
        self.history
            .sent(&self.clients[i], i as u32, tick)
            .map(|s| s.to_snapshot())
    }

    /// Builds, records and encodes client `i`'s snapshot for `tick` (see [`History`]); `fill`
    /// as for the world: `(previous snapshot, view, entities) -> entity count`. Returns the
    /// packet size in bytes.
    pub fn send(
        &mut self,
        i: usize,
        tick: u32,
        fill: impl FnOnce(Option<SnapshotRef<'_>>, &mut PlayerView, &mut [NetEntity]) -> usize,
    ) -> usize {
        let n = self.clients.len();
        let cap = self.history.cap;
        let owned = self.clients.iter_mut().enumerate();
        self.history.retire(tick, owned.map(|(i, c)| (i as u32, c)));
        let mut slot = self.history.take_slot(tick, n);
        let row = RowMut {
            index: i as u32,
            head: &mut slot.heads[i],
            ents: &mut slot.ents[i * cap..(i + 1) * cap],
        };
        let packet = &mut self.packets[i];
        packet.clear();
        let sent = self
            .history
            .send(&mut self.clients[i], i as u32, tick, row, packet, fill);
        self.history.put_back(tick, slot);
        self.clients[i].packet = sent;
        sent.len as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::EntityKind;
    use crate::snapshot::entity_key;

    fn fill_with(
        tick: u32,
    ) -> impl FnOnce(Option<SnapshotRef<'_>>, &mut PlayerView, &mut [NetEntity]) -> usize {
        move |_, view, out| {
            view.health = tick as i32;
            for (k, e) in out.iter_mut().take(3).enumerate() {
                *e = NetEntity {
                    key: entity_key(EntityKind::Player, k as u32),
                    origin: [tick as i32, k as i32, 0],
                    ..NetEntity::default()
                };
            }
            3
        }
    }

    #[test]
    fn the_last_history_ticks_are_remembered_and_older_acks_give_full_snapshots() {
        let mut t = ClientTable::new(2, 4);
        for tick in 1..=12 {
            t.send(0, tick, fill_with(tick));
            t.send(1, tick, fill_with(tick + 100));
        }
        for tick in 1..=12u32 {
            let kept = tick > 12 - SNAPSHOT_HISTORY as u32;
            assert_eq!(t.sent(0, tick).is_some(), kept, "tick {tick}");
        }
        let s = t.sent(1, 12).expect("latest");
        assert_eq!(
            (s.view.health, s.entities.len(), s.entities[2].origin[0]),
            (112, 3, 112)
        );

        // An acknowledgement within the history is the baseline; an older one is not.
        t.ack(0, 10);
        t.send(0, 13, fill_with(13));
        assert_eq!(delta::baseline_tick(t.packet(0)), Ok(Some(10)));
        t.ack(1, 5);
        t.send(1, 13, fill_with(13));
        assert_eq!(delta::baseline_tick(t.packet(1)), Ok(None));
        let full = delta::decode(None, t.packet(1)).expect("decodes");
        assert_eq!(Some(full), t.sent(1, 13));
    }

    #[test]
    fn rows_are_archived_only_while_their_client_may_still_use_them() {
        let mut t = ClientTable::new(2, 4);
        for tick in 1..=20 {
            // Client 0 acknowledges two ticks late, as the benchmark's clients do; client 1's
            // acknowledgements stop arriving after the one for tick 9.
            if tick > 2 {
                t.ack(0, tick - 2);
            }
            if (3..=11).contains(&tick) {
                t.ack(1, tick - 2);
            }
            t.send(0, tick, fill_with(tick));
            t.send(1, tick, fill_with(tick + 100));
        }
        // Client 0's rows older than its acknowledgement (18) were never archived.
        assert!(t.sent(0, 17).is_none());
        assert!((18..=20).all(|tick| t.sent(0, tick).is_some()));
        // Client 1 keeps the last SNAPSHOT_HISTORY ticks: three hot, the rest archived.
        for tick in 1..=20u32 {
            let kept = tick > 20 - SNAPSHOT_HISTORY as u32;
            assert_eq!(t.sent(1, tick).is_some(), kept, "tick {tick}");
        }
        let archived = SNAPSHOT_HISTORY - HOT_SLOTS;
        assert!(t.history.archive.rows.heads.len() <= archived + 1);

        // A late acknowledgement of an archived tick makes it the baseline.
        t.ack(1, 15);
        t.send(1, 21, fill_with(121));
        assert_eq!(delta::baseline_tick(t.packet(1)), Ok(Some(15)));
        let base = t.sent(1, 15).expect("archived row");
        assert_eq!(base.view.health, 115);
        let got = delta::decode(Some(&base), t.packet(1)).expect("decodes");
        assert_eq!(Some(got), t.sent(1, 21));
    }

    /// The arena's row size in the docs (`64 + 24 × max_entities` bytes).
    #[test]
    fn a_row_is_a_64_byte_header_and_24_bytes_per_entity() {
        assert_eq!(std::mem::size_of::<RowHead>(), 64);
        assert_eq!(std::mem::size_of::<NetEntity>(), 24);
        assert_eq!(std::mem::size_of::<Client>(), 52);
    }

    #[test]
    fn fill_cannot_overrun_the_cap() {
        let mut t = ClientTable::new(1, 2);
        t.send(0, 1, |_, _, out| out.len() + 5);
        assert_eq!(t.sent(0, 1).map(|s| s.entities.len()), Some(2));
    }
}
