//! Snapshot delta codec: a snapshot encoded against the last one the client acknowledged.
//!
//! Layout (all integers LEB128 varints; "Δ" is a zigzag varint of the wrapping difference):
//!
//! ```text
//! tick
//! back            0: no baseline (full snapshot); n: baseline is snapshot `tick - n`
//! view_mask u8    bit 0 origin, 1 velocity, 2 angles, 3 health, 4 ammo, 5 weapon+flags, 6 score
//! view fields     Δ per component of each field in the mask (weapon and flags as raw bytes)
//! records         count, then per record:
//!   gap           key − previous key − 1 (the first record's previous key is −1)
//!   op_mask u8    bits 6–7 op (0 remove, 1 add, 2 change), bits 0–4 fields: origin x, y, z,
//!                 angles (yaw, pitch), look (flags, model as raw bytes)
//!   fields        Δ per field in the mask, against the baseline entity (zero for an add)
//! ```
//!
//! Entities absent from the records are unchanged from the baseline. The decoder checks every
//! claim the bytes make (keys increasing, removed and changed keys present in the baseline, added
//! keys absent, counts bounded, no trailing bytes) and returns an error rather than panicking.

use crate::snapshot::{NetEntity, PlayerView, Snapshot, SnapshotRef};
use crate::wire::{Reader, Writer};

/// Most entities a decoded snapshot may hold; bounds memory for hostile input.
pub const MAX_SNAPSHOT_ENTITIES: usize = 4096;

const OP_REMOVE: u8 = 0;
const OP_ADD: u8 = 1;
const OP_CHANGE: u8 = 2;
const F_X: u8 = 1;
const F_Y: u8 = 2;
const F_Z: u8 = 4;
const F_ANGLES: u8 = 8;
const F_LOOK: u8 = 16;
const F_ALL: u8 = 31;

/// Why a snapshot packet could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("packet ends early at byte {at}")]
    Truncated { at: usize },
    #[error("malformed varint at byte {at}")]
    Varint { at: usize },
    #[error("packet needs baseline tick {wanted:?}, decoder was given {given:?}")]
    Baseline {
        wanted: Option<u32>,
        given: Option<u32>,
    },
    #[error("bad record at byte {at}: {reason}")]
    Record { at: usize, reason: &'static str },
    #[error("snapshot would hold more than {MAX_SNAPSHOT_ENTITIES} entities")]
    TooManyEntities,
    #[error("{extra} unread bytes after the snapshot")]
    Trailing { extra: usize },
}

/// Encodes `snap` against `base` (or in full if `None` or `base` is not older) into `out`.
pub fn encode(base: Option<&Snapshot>, snap: &Snapshot, out: &mut Vec<u8>) {
    encode_ref(base.map(Snapshot::to_ref), snap.to_ref(), out);
}

/// [`encode`] for borrowed snapshots (the server's history arena).
pub fn encode_ref(base: Option<SnapshotRef<'_>>, snap: SnapshotRef<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    let room = max_packet_len(base.map_or(0, |b| b.entities.len()) + snap.entities.len());
    out.resize(start + room, 0);
    let len = encode_into(base, snap, &mut out[start..]);
    out.truncate(start + len);
}

/// Encodes into `out`, which must hold at least [`max_packet_len`] of the two snapshots'
/// entity counts (it panics otherwise); returns the packet's length. Writing into room sized
/// for the worst case needs no capacity check per byte, and a caller that keeps reusing one
/// buffer never zeroes or allocates.
pub fn encode_into(base: Option<SnapshotRef<'_>>, snap: SnapshotRef<'_>, out: &mut [u8]) -> usize {
    let base = base.filter(|b| b.tick < snap.tick);
    let old: &[NetEntity] = base.map_or(&[], |b| b.entities);
    let new = snap.entities;
    let mut w = Writer::new(out);
    w.varint(snap.tick);
    w.varint(base.map_or(0, |b| snap.tick - b.tick));
    let zero_view = PlayerView::default();
    encode_view(base.map_or(&zero_view, |b| b.view), snap.view, &mut w);

    // The record count goes here once known (keeping the walk single-pass). One byte holds it
    // unless there are 128 records or more, which the server's cap of 32 never produces.
    let count_at = w.position();
    w.skip(1);
    let mut r = Records {
        pos: w.position(),
        buf: w.into_inner(),
        next_key: 0,
        count: 0,
    };
    // Both lists are sorted by key: a merge walk.
    let (mut old, mut new) = (old, new);
    while let ([o, old_rest @ ..], [n, new_rest @ ..]) = (old, new) {
        if o.key == n.key {
            let mask = field_mask(o, n);
            if mask != 0 {
                r.record(n.key, OP_CHANGE, mask, o, n);
            }
            (old, new) = (old_rest, new_rest);
        } else if o.key < n.key {
            r.record(o.key, OP_REMOVE, 0, o, o);
            old = old_rest;
        } else {
            r.add(n);
            new = new_rest;
        }
    }
    for o in old {
        r.record(o.key, OP_REMOVE, 0, o, o);
    }
    for n in new {
        r.add(n);
    }
    // Write the count in its minimal form, moving the records along if it needs more room.
    let (count, end, buf) = (r.count, r.pos, r.buf);
    let len = varint_len(count);
    if len > 1 {
        buf.copy_within(count_at + 1..end, count_at + len);
    }
    let mut v = count;
    for b in &mut buf[count_at..count_at + len] {
        *b = (v as u8 & 0x7f) | if v >= 0x80 { 0x80 } else { 0 };
        v >>= 7;
    }
    end + len - 1
}

/// Room [`encode_into`] needs for a packet whose baseline and snapshot hold `entities`
/// entities together.
pub fn max_packet_len(entities: usize) -> usize {
    MAX_HEAD + 5 + MAX_RECORD * entities + (RECORD_CHUNK - MAX_RECORD)
}

/// Longest entity record: 5 (gap) + 1 (op) + 3 × 5 (origin) + 2 × 5 (angles) + 2 (look).
const MAX_RECORD: usize = 33;
/// Each record is written into a fixed window of this many bytes (one bounds check per record;
/// positions inside it are masked with `RECORD_CHUNK - 1`, which the compiler can see is in
/// range). A power of two at least [`MAX_RECORD`]; [`max_packet_len`] adds the difference as
/// slack so the last record's window fits too.
const RECORD_CHUNK: usize = 64;
const CHUNK_MASK: usize = RECORD_CHUNK - 1;
const _: () = assert!(RECORD_CHUNK.is_power_of_two() && RECORD_CHUNK >= MAX_RECORD);
/// Longest header and view: tick, back, mask, 3 + 3 + 2 + 1 + 2 deltas, 2 raw bytes, 2 deltas.
const MAX_HEAD: usize = 5 + 5 + 1 + 13 * 5 + 2;

fn varint_len(v: u32) -> usize {
    match v {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => 5,
    }
}

/// Writes entity records, tracking the key gap and the record count.
struct Records<'a> {
    buf: &'a mut [u8],
    pos: usize,
    /// The previous record's key plus one (wrapping): the key a gap of zero stands for.
    next_key: u32,
    count: u32,
}

impl Records<'_> {
    #[inline]
    fn record(&mut self, key: u32, op: u8, mask: u8, from: &NetEntity, to: &NetEntity) {
        // Keys strictly increase, so this is key − previous key − 1 (the first previous is −1).
        let gap = key.wrapping_sub(self.next_key);
        self.next_key = key.wrapping_add(1);
        self.count += 1;
        // One bounds check for the whole record; every write below indexes the window with a
        // masked position, so it needs none (a record never exceeds MAX_RECORD bytes, so the
        // mask never wraps).
        let Some(c) = self
            .buf
            .get_mut(self.pos..)
            .and_then(<[u8]>::first_chunk_mut::<RECORD_CHUNK>)
        else {
            panic!("snapshot encoder: output buffer shorter than max_packet_len");
        };
        let mut p = put_varint(c, 0, gap);
        c[p & CHUNK_MASK] = op << 6 | mask;
        p += 1;
        if mask & F_X != 0 {
            p = put_varint(c, p, zigzag(from.origin[0], to.origin[0]));
        }
        if mask & F_Y != 0 {
            p = put_varint(c, p, zigzag(from.origin[1], to.origin[1]));
        }
        if mask & F_Z != 0 {
            p = put_varint(c, p, zigzag(from.origin[2], to.origin[2]));
        }
        if mask & F_ANGLES != 0 {
            p = put_varint(
                c,
                p,
                zigzag(i32::from(from.yaw as i16), i32::from(to.yaw as i16)),
            );
            p = put_varint(c, p, zigzag(i32::from(from.pitch), i32::from(to.pitch)));
        }
        if mask & F_LOOK != 0 {
            c[p & CHUNK_MASK] = to.flags;
            c[(p + 1) & CHUNK_MASK] = to.model;
            p += 2;
        }
        self.pos += p;
    }

    /// An entity the baseline lacks: its fields against zero.
    #[inline]
    fn add(&mut self, n: &NetEntity) {
        let zero = NetEntity::default();
        self.record(n.key, OP_ADD, field_mask(&zero, n), &zero, n);
    }
}

/// Tick of the baseline a packet was encoded against, so a client can pick it from its history.
pub fn baseline_tick(bytes: &[u8]) -> Result<Option<u32>, DecodeError> {
    let mut r = Reader::new(bytes);
    let tick = r.varint()?;
    let back = r.varint()?;
    if back == 0 {
        return Ok(None);
    }
    tick.checked_sub(back).map(Some).ok_or(DecodeError::Record {
        at: 0,
        reason: "baseline before tick 0",
    })
}

/// Decodes a packet against `base`, which must be the snapshot it names (see [`baseline_tick`]).
pub fn decode(base: Option<&Snapshot>, bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    let wanted = baseline_tick(bytes)?;
    if wanted != base.map(|b| b.tick) {
        return Err(DecodeError::Baseline {
            wanted,
            given: base.map(|b| b.tick),
        });
    }
    let mut r = Reader::new(bytes);
    let tick = r.varint()?;
    r.varint()?;
    let zero_view = PlayerView::default();
    let view = decode_view(base.map_or(&zero_view, |b| &b.view), &mut r)?;
    let old: &[NetEntity] = base.map_or(&[], |b| &b.entities);
    let records = r.varint()? as usize;
    if records > old.len() + MAX_SNAPSHOT_ENTITIES {
        return Err(DecodeError::TooManyEntities);
    }
    let mut entities = Vec::with_capacity(old.len().min(MAX_SNAPSHOT_ENTITIES));
    let mut prev: i64 = -1;
    let mut i = 0;
    for _ in 0..records {
        let at = r.position();
        let bad = |reason| DecodeError::Record { at, reason };
        let key = prev + 1 + i64::from(r.varint()?);
        let key = u32::try_from(key).map_err(|_| bad("key out of range"))?;
        prev = i64::from(key);
        let op_mask = r.byte()?;
        let (op, mask) = (op_mask >> 6, op_mask & 0x3f);
        if mask & !F_ALL != 0 {
            return Err(bad("unknown field bits"));
        }
        while i < old.len() && old[i].key < key {
            entities.push(old[i]);
            i += 1;
        }
        let in_base = old.get(i).filter(|o| o.key == key);
        match (op, in_base) {
            (OP_REMOVE, Some(_)) if mask == 0 => i += 1,
            (OP_REMOVE, _) => return Err(bad("remove of an absent entity or with fields")),
            (OP_CHANGE, Some(o)) => {
                entities.push(read_entity_fields(&mut r, mask, o)?);
                i += 1;
            }
            (OP_ADD, None) => {
                let zero = NetEntity {
                    key,
                    ..NetEntity::default()
                };
                entities.push(read_entity_fields(&mut r, mask, &zero)?);
            }
            _ => {
                return Err(bad(
                    "add of a present entity, change of an absent one, or unknown op",
                ));
            }
        }
        if entities.len() > MAX_SNAPSHOT_ENTITIES {
            return Err(DecodeError::TooManyEntities);
        }
    }
    entities.extend_from_slice(&old[i..]);
    if entities.len() > MAX_SNAPSHOT_ENTITIES {
        return Err(DecodeError::TooManyEntities);
    }
    if !r.is_empty() {
        return Err(DecodeError::Trailing {
            extra: bytes.len() - r.position(),
        });
    }
    Ok(Snapshot {
        tick,
        view,
        entities,
    })
}

/// The zigzag form of the wrapping difference `new - old` (what [`Writer::delta`] writes).
#[inline]
fn zigzag(old: i32, new: i32) -> u32 {
    let d = new.wrapping_sub(old);
    ((d << 1) ^ (d >> 31)) as u32
}

/// LEB128 of `v` at `p` in a record window; returns the position after it. Values of up to
/// three bytes (every field of a moving entity, and an added entity's coordinates) take the
/// inline path.
#[inline(always)]
fn put_varint(c: &mut [u8; RECORD_CHUNK], p: usize, v: u32) -> usize {
    if v < 0x80 {
        c[p & CHUNK_MASK] = v as u8;
        p + 1
    } else if v < 0x4000 {
        c[p & CHUNK_MASK] = v as u8 | 0x80;
        c[(p + 1) & CHUNK_MASK] = (v >> 7) as u8;
        p + 2
    } else if v < 0x20_0000 {
        c[p & CHUNK_MASK] = v as u8 | 0x80;
        c[(p + 1) & CHUNK_MASK] = (v >> 7) as u8 | 0x80;
        c[(p + 2) & CHUNK_MASK] = (v >> 14) as u8;
        p + 3
    } else {
        put_long_varint(c, p, v)
    }
}

#[cold]
#[inline(never)]
fn put_long_varint(c: &mut [u8; RECORD_CHUNK], mut p: usize, mut v: u32) -> usize {
    while v >= 0x80 {
        c[p & CHUNK_MASK] = v as u8 | 0x80;
        p += 1;
        v >>= 7;
    }
    c[p & CHUNK_MASK] = v as u8;
    p + 1
}

/// Which record fields differ. The fields are compared as three words: origin x and y, origin
/// z with yaw and pitch, and flags with model (each word's parts sit together in `NetEntity`,
/// so each is one load); an entity whose words all match (about half of the pairs the walk
/// compares in the server's workload) costs no more than that, and the field bits are taken
/// from the differences only for the others.
#[inline(always)]
fn field_mask(a: &NetEntity, b: &NetEntity) -> u8 {
    let words = |e: &NetEntity| {
        let angles = u32::from(e.yaw) | u32::from(e.pitch as u16) << 16;
        (
            u64::from(e.origin[0] as u32) | u64::from(e.origin[1] as u32) << 32,
            u64::from(e.origin[2] as u32) | u64::from(angles) << 32,
            u16::from(e.flags) | u16::from(e.model) << 8,
        )
    };
    let ((a0, a1, a2), (b0, b1, b2)) = (words(a), words(b));
    let (d0, d1, d2) = (a0 ^ b0, a1 ^ b1, a2 ^ b2);
    if d0 | d1 | u64::from(d2) == 0 {
        return 0;
    }
    let differs = |d: u64| u8::from(d != 0);
    let mut m = differs(d0 & 0xffff_ffff) * F_X;
    m |= differs(d0 >> 32) * F_Y;
    m |= differs(d1 & 0xffff_ffff) * F_Z;
    m |= differs(d1 >> 32) * F_ANGLES;
    m |= differs(u64::from(d2)) * F_LOOK;
    m
}

fn read_entity_fields(
    r: &mut Reader<'_>,
    mask: u8,
    base: &NetEntity,
) -> Result<NetEntity, DecodeError> {
    let mut e = *base;
    for (k, bit) in [F_X, F_Y, F_Z].into_iter().enumerate() {
        if mask & bit != 0 {
            e.origin[k] = r.delta(base.origin[k])?;
        }
    }
    if mask & F_ANGLES != 0 {
        e.yaw = r.delta(i32::from(base.yaw as i16))? as u16;
        e.pitch = r.delta(i32::from(base.pitch))? as i16;
    }
    if mask & F_LOOK != 0 {
        e.flags = r.byte()?;
        e.model = r.byte()?;
    }
    Ok(e)
}

fn encode_view(a: &PlayerView, b: &PlayerView, w: &mut Writer<'_>) {
    let mut mask = 0u8;
    mask |= u8::from(a.origin != b.origin);
    mask |= u8::from(a.velocity != b.velocity) << 1;
    mask |= u8::from((a.yaw, a.pitch) != (b.yaw, b.pitch)) << 2;
    mask |= u8::from(a.health != b.health) << 3;
    mask |= u8::from(a.ammo != b.ammo) << 4;
    mask |= u8::from((a.weapon, a.flags) != (b.weapon, b.flags)) << 5;
    mask |= u8::from((a.frags, a.deaths) != (b.frags, b.deaths)) << 6;
    w.byte(mask);
    if mask & 1 != 0 {
        (0..3).for_each(|k| w.delta(a.origin[k], b.origin[k]));
    }
    if mask & 2 != 0 {
        (0..3).for_each(|k| w.delta(a.velocity[k], b.velocity[k]));
    }
    if mask & 4 != 0 {
        w.delta(i32::from(a.yaw as i16), i32::from(b.yaw as i16));
        w.delta(i32::from(a.pitch), i32::from(b.pitch));
    }
    if mask & 8 != 0 {
        w.delta(a.health, b.health);
    }
    if mask & 16 != 0 {
        (0..2).for_each(|k| w.delta(a.ammo[k], b.ammo[k]));
    }
    if mask & 32 != 0 {
        w.byte(b.weapon);
        w.byte(b.flags);
    }
    if mask & 64 != 0 {
        w.delta(a.frags, b.frags);
        w.delta(a.deaths, b.deaths);
    }
}

fn decode_view(a: &PlayerView, r: &mut Reader<'_>) -> Result<PlayerView, DecodeError> {
    let at = r.position();
    let mask = r.byte()?;
    if mask & 0x80 != 0 {
        return Err(DecodeError::Record {
            at,
            reason: "unknown view field bits",
        });
    }
    let mut v = *a;
    if mask & 1 != 0 {
        for k in 0..3 {
            v.origin[k] = r.delta(a.origin[k])?;
        }
    }
    if mask & 2 != 0 {
        for k in 0..3 {
            v.velocity[k] = r.delta(a.velocity[k])?;
        }
    }
    if mask & 4 != 0 {
        v.yaw = r.delta(i32::from(a.yaw as i16))? as u16;
        v.pitch = r.delta(i32::from(a.pitch))? as i16;
    }
    if mask & 8 != 0 {
        v.health = r.delta(a.health)?;
    }
    if mask & 16 != 0 {
        for k in 0..2 {
            v.ammo[k] = r.delta(a.ammo[k])?;
        }
    }
    if mask & 32 != 0 {
        v.weapon = r.byte()?;
        v.flags = r.byte()?;
    }
    if mask & 64 != 0 {
        v.frags = r.delta(a.frags)?;
        v.deaths = r.delta(a.deaths)?;
    }
    Ok(v)
}
