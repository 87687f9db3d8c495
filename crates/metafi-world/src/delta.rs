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

use crate::snapshot::{NetEntity, PlayerView, Snapshot};
use crate::wire::{Reader, put_delta, put_varint};

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
    let base = base.filter(|b| b.tick < snap.tick);
    put_varint(out, snap.tick);
    put_varint(out, base.map_or(0, |b| snap.tick - b.tick));
    let zero_view = PlayerView::default();
    encode_view(base.map_or(&zero_view, |b| &b.view), &snap.view, out);

    let old: &[NetEntity] = base.map_or(&[], |b| &b.entities);
    let new = &snap.entities;
    // Worst case per record: 5 (gap) + 1 (op) + 3 × 5 (origin) + 2 × 5 (angles) + 2 (look).
    out.reserve(6 + 33 * (old.len() + new.len()));
    let count_at = out.len();
    out.extend_from_slice(&[0; 5]); // patched below; keeps the walk single-pass
    let mut w = Records {
        out,
        prev: -1,
        count: 0,
    };
    let zero = NetEntity::default();
    let (mut i, mut j) = (0, 0);
    loop {
        match (old.get(i), new.get(j)) {
            (Some(o), Some(n)) if o.key == n.key => {
                let mask = field_mask(o, n);
                if mask != 0 {
                    w.record(n.key, OP_CHANGE, mask, o, n);
                }
                i += 1;
                j += 1;
            }
            (Some(o), Some(n)) if o.key < n.key => {
                w.record(o.key, OP_REMOVE, 0, o, o);
                i += 1;
            }
            (Some(o), None) => {
                w.record(o.key, OP_REMOVE, 0, o, o);
                i += 1;
            }
            (_, Some(n)) => {
                w.record(n.key, OP_ADD, field_mask(&zero, n), &zero, n);
                j += 1;
            }
            (None, None) => break,
        }
    }
    // Write the count in its minimal form and close the gap left for it.
    let count = w.count;
    let len = varint_len(count);
    if len < 5 {
        out.copy_within(count_at + 5.., count_at + len);
        out.truncate(out.len() - (5 - len));
    }
    let mut v = count;
    for k in 0..len {
        out[count_at + k] = (v as u8 & 0x7f) | if k + 1 < len { 0x80 } else { 0 };
        v >>= 7;
    }
}

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
    out: &'a mut Vec<u8>,
    prev: i64,
    count: u32,
}

impl Records<'_> {
    #[inline]
    fn record(&mut self, key: u32, op: u8, mask: u8, from: &NetEntity, to: &NetEntity) {
        put_varint(self.out, (i64::from(key) - self.prev - 1) as u32);
        self.prev = i64::from(key);
        self.out.push(op << 6 | mask);
        put_entity_fields(self.out, mask, from, to);
        self.count += 1;
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

fn field_mask(a: &NetEntity, b: &NetEntity) -> u8 {
    let mut m = 0;
    if a.origin[0] != b.origin[0] {
        m |= F_X;
    }
    if a.origin[1] != b.origin[1] {
        m |= F_Y;
    }
    if a.origin[2] != b.origin[2] {
        m |= F_Z;
    }
    if (a.yaw, a.pitch) != (b.yaw, b.pitch) {
        m |= F_ANGLES;
    }
    if (a.flags, a.model) != (b.flags, b.model) {
        m |= F_LOOK;
    }
    m
}

fn put_entity_fields(out: &mut Vec<u8>, mask: u8, a: &NetEntity, b: &NetEntity) {
    for (k, bit) in [F_X, F_Y, F_Z].into_iter().enumerate() {
        if mask & bit != 0 {
            put_delta(out, a.origin[k], b.origin[k]);
        }
    }
    if mask & F_ANGLES != 0 {
        put_delta(out, i32::from(a.yaw as i16), i32::from(b.yaw as i16));
        put_delta(out, i32::from(a.pitch), i32::from(b.pitch));
    }
    if mask & F_LOOK != 0 {
        out.push(b.flags);
        out.push(b.model);
    }
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

fn encode_view(a: &PlayerView, b: &PlayerView, out: &mut Vec<u8>) {
    let mut mask = 0u8;
    mask |= u8::from(a.origin != b.origin);
    mask |= u8::from(a.velocity != b.velocity) << 1;
    mask |= u8::from((a.yaw, a.pitch) != (b.yaw, b.pitch)) << 2;
    mask |= u8::from(a.health != b.health) << 3;
    mask |= u8::from(a.ammo != b.ammo) << 4;
    mask |= u8::from((a.weapon, a.flags) != (b.weapon, b.flags)) << 5;
    mask |= u8::from((a.frags, a.deaths) != (b.frags, b.deaths)) << 6;
    out.push(mask);
    if mask & 1 != 0 {
        (0..3).for_each(|k| put_delta(out, a.origin[k], b.origin[k]));
    }
    if mask & 2 != 0 {
        (0..3).for_each(|k| put_delta(out, a.velocity[k], b.velocity[k]));
    }
    if mask & 4 != 0 {
        put_delta(out, i32::from(a.yaw as i16), i32::from(b.yaw as i16));
        put_delta(out, i32::from(a.pitch), i32::from(b.pitch));
    }
    if mask & 8 != 0 {
        put_delta(out, a.health, b.health);
    }
    if mask & 16 != 0 {
        (0..2).for_each(|k| put_delta(out, a.ammo[k], b.ammo[k]));
    }
    if mask & 32 != 0 {
        out.push(b.weapon);
        out.push(b.flags);
    }
    if mask & 64 != 0 {
        put_delta(out, a.frags, b.frags);
        put_delta(out, a.deaths, b.deaths);
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
