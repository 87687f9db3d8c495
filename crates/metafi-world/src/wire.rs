//! Byte-level primitives for the snapshot codec: LEB128 varints and zigzag signed deltas.

use crate::delta::DecodeError;

/// Writes into room the caller sized for the worst case: no capacity check per byte (a write
/// past the end is a bug in that sizing, and panics rather than corrupting anything).
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    /// Leaves `n` bytes to be filled in later.
    pub fn skip(&mut self, n: usize) {
        self.pos += n;
    }

    pub fn into_inner(self) -> &'a mut [u8] {
        self.buf
    }

    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// LEB128.
    #[inline]
    pub fn varint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    /// Signed difference `new - old`, wrapping, zigzag-encoded so small changes take one byte.
    #[inline]
    pub fn delta(&mut self, old: i32, new: i32) {
        let d = new.wrapping_sub(old);
        self.varint(((d << 1) ^ (d >> 31)) as u32);
    }
}

/// Reads from a byte slice, failing (never panicking) on truncated or malformed input.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or(DecodeError::Truncated { at: self.pos })?;
        self.pos += 1;
        Ok(b)
    }

    pub fn varint(&mut self) -> Result<u32, DecodeError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| DecodeError::Varint { at: start });
            }
        }
        Err(DecodeError::Varint { at: start })
    }

    /// Applies a zigzag delta to `old`.
    pub fn delta(&mut self, old: i32) -> Result<i32, DecodeError> {
        let z = self.varint()?;
        let d = ((z >> 1) as i32) ^ -((z & 1) as i32);
        Ok(old.wrapping_add(d))
    }

    pub fn position(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_deltas_round_trip_at_the_edges() {
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        for v in [0u32, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            w.varint(v);
        }
        for (old, new) in [(0, 0), (5, -5), (i32::MIN, i32::MAX), (i32::MAX, i32::MIN)] {
            w.delta(old, new);
        }
        let len = w.position();
        let out = &buf[..len];
        let mut r = Reader::new(out);
        for v in [0u32, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            assert_eq!(r.varint().expect("varint"), v);
        }
        for (old, new) in [(0, 0), (5, -5), (i32::MIN, i32::MAX), (i32::MAX, i32::MIN)] {
            assert_eq!(r.delta(old).expect("delta"), new);
        }
        assert!(r.is_empty());
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert!(matches!(r.varint(), Err(DecodeError::Varint { .. })));
        let mut r = Reader::new(&[0x80, 0x80]);
        assert!(matches!(r.varint(), Err(DecodeError::Truncated { .. })));
    }
}
