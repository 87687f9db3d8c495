//! The world's messages in match data (op codes and byte layouts; docs/WORLD.md, "Serving").
//!
//! All integers are LEB128 varints ("zz": zigzag varint of a signed value), as in the snapshot
//! codec (`metafi_world::delta`).
//!
//! ```text
//! op 1  client → server  command: seq, ack (0: none; else the tick of the newest snapshot the
//!                        client has decoded), msec u8, yaw, pitch zz, forward zz, side zz,
//!                        up zz, buttons u8, weapon u8
//! op 2  server → client  snapshot: applied (seq of the newest command applied to this player,
//!                        0: none yet), then the snapshot packet (`metafi_world::delta`)
//! op 3  server → client  welcome (JSON): {"player": id, "tick_rate": n, "map": name, "tick": t}
//! ```

use metafi_world::{Buttons, UserCmd, Weapon};

/// Client → server: a command (with the client's acknowledgement).
pub const OP_COMMAND: i64 = 1;
/// Server → client: this player's snapshot of a tick.
pub const OP_SNAPSHOT: i64 = 2;
/// Server → client: sent once when the player has spawned.
pub const OP_WELCOME: i64 = 3;

/// Longest encoded command.
pub const MAX_COMMAND_LEN: usize = 5 + 5 + 1 + 3 + 3 * 4 + 1 + 1;

/// A client's command message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandMsg {
    /// Increases with every command the client sends (from 1).
    pub seq: u32,
    /// Tick of the newest snapshot the client decoded (`None`: none yet).
    pub ack: Option<u32>,
    pub cmd: UserCmd,
}

/// Why a message could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("message ends early")]
    Truncated,
    #[error("malformed varint")]
    Varint,
    #[error("unread bytes after the message")]
    Trailing,
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_zz(out: &mut Vec<u8>, v: i32) {
    put_varint(out, ((v << 1) ^ (v >> 31)) as u32);
}

/// Reads LEB128 varints and bytes from a slice.
#[derive(Debug)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0 }
    }

    pub fn byte(&mut self) -> Result<u8, CodecError> {
        let b = *self.bytes.get(self.pos).ok_or(CodecError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    pub fn varint(&mut self) -> Result<u32, CodecError> {
        let mut v: u64 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| CodecError::Varint);
            }
        }
        Err(CodecError::Varint)
    }

    pub fn zz(&mut self) -> Result<i32, CodecError> {
        let z = self.varint()?;
        Ok(((z >> 1) as i32) ^ -((z & 1) as i32))
    }

    /// What is left after the bytes read so far.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos.min(self.bytes.len())..]
    }
}

impl CommandMsg {
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.seq);
        put_varint(out, self.ack.map_or(0, |t| t.saturating_add(1)));
        let c = &self.cmd;
        out.push(c.msec);
        put_varint(out, u32::from(c.yaw));
        put_zz(out, i32::from(c.pitch));
        put_zz(out, i32::from(c.forward));
        put_zz(out, i32::from(c.side));
        put_zz(out, i32::from(c.up));
        out.push(c.buttons.0);
        out.push(c.weapon.index() as u8);
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_COMMAND_LEN);
        self.encode(&mut out);
        out
    }

    /// Reads a command; values out of their field's range are clamped, unknown button bits
    /// cleared.
    pub fn decode(bytes: &[u8]) -> Result<CommandMsg, CodecError> {
        let mut r = Cursor::new(bytes);
        let seq = r.varint()?;
        let ack = r.varint()?.checked_sub(1);
        let msec = r.byte()?;
        let yaw = r.varint()?.min(u32::from(u16::MAX)) as u16;
        let small = |v: i32| v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
        let pitch = small(r.zz()?);
        let forward = small(r.zz()?);
        let side = small(r.zz()?);
        let up = small(r.zz()?);
        let buttons = Buttons(r.byte()? & Buttons::ALL);
        let weapon = Weapon::from_index(r.byte()?);
        if !r.rest().is_empty() {
            return Err(CodecError::Trailing);
        }
        Ok(CommandMsg {
            seq,
            ack,
            cmd: UserCmd {
                msec,
                yaw,
                pitch,
                forward,
                side,
                up,
                buttons,
                weapon,
            },
        })
    }
}

/// Writes a snapshot message: the applied command's sequence number, then the packet.
pub fn snapshot_message(applied: u32, packet: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + packet.len());
    put_varint(&mut out, applied);
    out.extend_from_slice(packet);
    out
}

/// Splits a snapshot message into the applied sequence number and the packet.
pub fn split_snapshot(bytes: &[u8]) -> Result<(u32, &[u8]), CodecError> {
    let mut r = Cursor::new(bytes);
    let applied = r.varint()?;
    Ok((applied, r.rest()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_clamp() {
        let msg = CommandMsg {
            seq: 300,
            ack: Some(0),
            cmd: UserCmd {
                msec: 50,
                yaw: 65535,
                pitch: -1200,
                forward: 320,
                side: -320,
                up: 0,
                buttons: Buttons::ATTACK.with(Buttons::JUMP),
                weapon: Weapon::RocketLauncher,
            },
        };
        let bytes = msg.to_vec();
        assert!(bytes.len() <= MAX_COMMAND_LEN);
        assert_eq!(CommandMsg::decode(&bytes), Ok(msg));
        let none = CommandMsg { ack: None, ..msg };
        assert_eq!(CommandMsg::decode(&none.to_vec()), Ok(none));
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(CommandMsg::decode(&long), Err(CodecError::Trailing));
        assert_eq!(
            CommandMsg::decode(&bytes[..bytes.len() - 1]),
            Err(CodecError::Truncated)
        );
        // Unknown button bits are cleared.
        let mut odd = bytes;
        let n = odd.len();
        odd[n - 2] = 0xff;
        assert_eq!(
            CommandMsg::decode(&odd).map(|m| m.cmd.buttons),
            Ok(Buttons(Buttons::ALL))
        );
    }

    #[test]
    fn snapshot_messages_split() {
        let msg = snapshot_message(1000, &[1, 2, 3]);
        assert_eq!(split_snapshot(&msg), Ok((1000, &[1u8, 2, 3][..])));
        assert_eq!(split_snapshot(&[0x80]), Err(CodecError::Truncated));
    }
}
