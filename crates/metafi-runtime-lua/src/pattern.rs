//! Lua 5.1 patterns (the language of `string.find`, `match`, `gmatch` and `gsub`), matched with
//! a step count that checks the call's deadline.
//!
//! LuaJIT's own matcher is C code the instruction hook never interrupts, and backtracking makes
//! it exponential in the pattern: `string.rep("a", 30000):find(".-.-.-.-.-.-b")` runs for
//! hours. This matcher follows the reference implementation's semantics (`lstrlib.c` of Lua
//! 5.1, as LuaJIT): the same classes (`%a %c %d %l %p %s %u %w %x %z` and their complements,
//! sets, ranges), `%b`, `%f`, back references, position captures, anchors and error messages.
//! Every [`CHECK_EVERY`] steps it asks whether the running call is past its deadline and stops
//! with [`PatternError::Budget`] if so; recursion is capped at [`MAX_DEPTH`] levels ("pattern
//! too complex", as Lua 5.2 does) so a pattern cannot exhaust the thread's stack.

/// Captures one pattern may hold (`LUA_MAXCAPTURES`).
pub(crate) const MAX_CAPTURES: usize = 32;

/// Nested matcher calls (captures, `?`, `*`, `-`) before "pattern too complex".
pub(crate) const MAX_DEPTH: usize = 200;

/// Matcher steps between two deadline checks.
const CHECK_EVERY: u32 = 1 << 12;

const CAP_UNFINISHED: isize = -1;
const CAP_POSITION: isize = -2;

/// Characters that make a pattern more than a plain string.
const SPECIALS: &[u8] = b"^$*+?.([%-";

/// Why a match did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatternError {
    /// The pattern is malformed or too complex; the text is Lua's message.
    Invalid(&'static str),
    /// The running call passed its deadline.
    Budget,
}

/// One capture's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Captured {
    /// Bytes `start..end` of the subject.
    Span(usize, usize),
    /// A position capture `()`: a 1-based index.
    Position(usize),
}

/// Whether `pattern` has no special characters (a plain find will do).
pub(crate) fn is_plain(pattern: &[u8]) -> bool {
    !pattern.iter().any(|c| SPECIALS.contains(c))
}

/// Matching state of one subject against one pattern.
pub(crate) struct Matcher<'a> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    capture: [(usize, isize); MAX_CAPTURES],
    depth: usize,
    steps: u32,
    over: &'a dyn Fn() -> bool,
}

impl<'a> Matcher<'a> {
    /// `over` says whether the running call is past its deadline.
    pub(crate) fn new(src: &'a [u8], pat: &'a [u8], over: &'a dyn Fn() -> bool) -> Matcher<'a> {
        Matcher {
            src,
            pat,
            level: 0,
            capture: [(0, 0); MAX_CAPTURES],
            depth: 0,
            steps: 0,
            over,
        }
    }

    /// Tries the pattern from byte `p` of the pattern at byte `s` of the subject; the end of
    /// the match on success. Captures are reset first.
    pub(crate) fn match_at(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        self.level = 0;
        self.depth = 0;
        self.do_match(s, p)
    }

    /// Capture `i` of the last match `s..e`; with no captures, capture 0 is the whole match.
    pub(crate) fn capture(&self, i: usize, s: usize, e: usize) -> Result<Captured, PatternError> {
        if i >= self.level {
            if i == 0 {
                return Ok(Captured::Span(s, e));
            }
            return Err(PatternError::Invalid("invalid capture index"));
        }
        let (start, len) = self.capture[i];
        match len {
            CAP_UNFINISHED => Err(PatternError::Invalid("unfinished capture")),
            CAP_POSITION => Ok(Captured::Position(start + 1)),
            len => Ok(Captured::Span(start, start + len as usize)),
        }
    }

    /// Number of captures of the last match, or 1 for the whole match when `whole` and there
    /// are none.
    pub(crate) fn captures(&self, whole: bool) -> usize {
        if self.level == 0 && whole {
            1
        } else {
            self.level
        }
    }

    fn tick(&mut self) -> Result<(), PatternError> {
        self.steps = self.steps.wrapping_add(1);
        if self.steps.is_multiple_of(CHECK_EVERY) && (self.over)() {
            return Err(PatternError::Budget);
        }
        Ok(())
    }

    fn do_match(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(PatternError::Invalid("pattern too complex"));
        }
        let result = self.match_here(s, p);
        self.depth -= 1;
        result
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> Result<Option<usize>, PatternError> {
        let pat = self.pat;
        loop {
            self.tick()?;
            if p == pat.len() {
                return Ok(Some(s));
            }
            match pat[p] {
                b'(' => {
                    return if pat.get(p + 1) == Some(&b')') {
                        self.start_capture(s, p + 2, CAP_POSITION)
                    } else {
                        self.start_capture(s, p + 1, CAP_UNFINISHED)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                b'%' if p + 1 < pat.len() => match pat[p + 1] {
                    b'b' => match self.match_balance(s, p + 2)? {
                        Some(next) => {
                            s = next;
                            p += 4;
                            continue;
                        }
                        None => return Ok(None),
                    },
                    b'f' => {
                        p += 2;
                        if pat.get(p) != Some(&b'[') {
                            return Err(PatternError::Invalid("missing '[' after '%f' in pattern"));
                        }
                        let ep = self.class_end(p)?;
                        let previous = if s == 0 { 0 } else { self.src[s - 1] };
                        let current = self.src.get(s).copied().unwrap_or(0);
                        if !self.match_bracket_class(previous, p, ep - 1)
                            && self.match_bracket_class(current, p, ep - 1)
                        {
                            p = ep;
                            continue;
                        }
                        return Ok(None);
                    }
                    digit if digit.is_ascii_digit() => match self.match_capture(s, digit)? {
                        Some(next) => {
                            s = next;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    },
                    _ => {}
                },
                _ => {}
            }
            let ep = self.class_end(p)?;
            let matched = s < self.src.len() && self.single_match(self.src[s], p, ep);
            match pat.get(ep) {
                Some(b'?') => {
                    if matched && let Some(end) = self.do_match(s + 1, ep + 1)? {
                        return Ok(Some(end));
                    }
                    p = ep + 1;
                }
                Some(b'*') => return self.max_expand(s, p, ep),
                Some(b'+') => {
                    return if matched {
                        self.max_expand(s + 1, p, ep)
                    } else {
                        Ok(None)
                    };
                }
                Some(b'-') => return self.min_expand(s, p, ep),
                _ => {
                    if !matched {
                        return Ok(None);
                    }
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    /// The end of the single-character class starting at `p`.
    fn class_end(&self, mut p: usize) -> Result<usize, PatternError> {
        let pat = self.pat;
        let c = pat[p];
        p += 1;
        if c == b'%' {
            if p >= pat.len() {
                return Err(PatternError::Invalid("malformed pattern (ends with '%')"));
            }
            return Ok(p + 1);
        }
        if c == b'[' {
            if pat.get(p) == Some(&b'^') {
                p += 1;
            }
            // The first character of a set is never its end: `[]]` is a set of `]`.
            loop {
                if p >= pat.len() {
                    return Err(PatternError::Invalid("malformed pattern (missing ']')"));
                }
                let cc = pat[p];
                p += 1;
                if cc == b'%' && p < pat.len() {
                    p += 1;
                }
                if pat.get(p) == Some(&b']') {
                    return Ok(p + 1);
                }
            }
        }
        Ok(p)
    }

    fn single_match(&self, c: u8, p: usize, ep: usize) -> bool {
        match self.pat[p] {
            b'.' => true,
            b'%' => match_class(c, self.pat[p + 1]),
            b'[' => self.match_bracket_class(c, p, ep - 1),
            literal => literal == c,
        }
    }

    /// Whether `c` is in the set `[...]` from `p` (the `[`) to `ec` (the `]`).
    fn match_bracket_class(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let pat = self.pat;
        let mut sig = true;
        if pat[p + 1] == b'^' {
            sig = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                return !sig;
            }
            if pat[p] == b'%' {
                p += 1;
                if match_class(c, pat[p]) {
                    return sig;
                }
            } else if pat[p + 1] == b'-' && p + 2 < ec {
                p += 2;
                if pat[p - 2] <= c && c <= pat[p] {
                    return sig;
                }
            } else if pat[p] == c {
                return sig;
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Result<Option<usize>, PatternError> {
        let mut i = 0;
        while s + i < self.src.len() && self.single_match(self.src[s + i], p, ep) {
            self.tick()?;
            i += 1;
        }
        loop {
            if let Some(end) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(end));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(
        &mut self,
        mut s: usize,
        p: usize,
        ep: usize,
    ) -> Result<Option<usize>, PatternError> {
        loop {
            if let Some(end) = self.do_match(s, ep + 1)? {
                return Ok(Some(end));
            }
            if s < self.src.len() && self.single_match(self.src[s], p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(
        &mut self,
        s: usize,
        p: usize,
        what: isize,
    ) -> Result<Option<usize>, PatternError> {
        if self.level >= MAX_CAPTURES {
            return Err(PatternError::Invalid("too many captures"));
        }
        self.capture[self.level] = (s, what);
        self.level += 1;
        let result = self.do_match(s, p)?;
        if result.is_none() {
            self.level -= 1;
        }
        Ok(result)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        let l = self.capture_to_close()?;
        self.capture[l].1 = (s - self.capture[l].0) as isize;
        let result = self.do_match(s, p)?;
        if result.is_none() {
            self.capture[l].1 = CAP_UNFINISHED;
        }
        Ok(result)
    }

    fn capture_to_close(&self) -> Result<usize, PatternError> {
        (0..self.level)
            .rev()
            .find(|&l| self.capture[l].1 == CAP_UNFINISHED)
            .ok_or(PatternError::Invalid("invalid pattern capture"))
    }

    fn match_balance(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        if p + 1 >= self.pat.len() {
            return Err(PatternError::Invalid("unbalanced pattern"));
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        if self.src.get(s) != Some(&open) {
            return Ok(None);
        }
        let mut depth = 1;
        for i in s + 1..self.src.len() {
            self.tick()?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
        }
        Ok(None)
    }

    fn match_capture(&mut self, s: usize, digit: u8) -> Result<Option<usize>, PatternError> {
        let l = usize::from(digit.saturating_sub(b'1'));
        if digit == b'0' || l >= self.level || self.capture[l].1 == CAP_UNFINISHED {
            return Err(PatternError::Invalid("invalid capture index"));
        }
        let (start, len) = self.capture[l];
        if len < 0 {
            return Ok(None);
        }
        let len = len as usize;
        let src = self.src;
        if src.len() - s >= len && src[start..start + len] == src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }
}

/// `%x`-style classes in the C locale, as Lua's `match_class`.
fn match_class(c: u8, class: u8) -> bool {
    let found = match class.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return class == c,
    };
    if class.is_ascii_uppercase() {
        !found
    } else {
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(src: &str, pat: &str) -> Result<Option<(usize, usize)>, PatternError> {
        let never = || false;
        let mut m = Matcher::new(src.as_bytes(), pat.as_bytes(), &never);
        for s in 0..=src.len() {
            if let Some(e) = m.match_at(s, 0)? {
                return Ok(Some((s, e)));
            }
        }
        Ok(None)
    }

    #[test]
    fn a_runaway_pattern_ends_when_the_deadline_says_so() {
        let src = "a".repeat(30_000);
        let calls = std::cell::Cell::new(0u32);
        let over = || {
            calls.set(calls.get() + 1);
            calls.get() > 3
        };
        let mut m = Matcher::new(src.as_bytes(), b".-.-.-.-.-.-b", &over);
        assert_eq!(m.match_at(0, 0), Err(PatternError::Budget));
        assert_eq!(calls.get(), 4, "checked every CHECK_EVERY steps");
    }

    #[test]
    fn deep_patterns_are_refused_not_a_stack_overflow() {
        let pat = "a?".repeat(MAX_DEPTH + 10);
        let src = "a".repeat(MAX_DEPTH + 10);
        assert_eq!(
            find(&src, &pat),
            Err(PatternError::Invalid("pattern too complex"))
        );
    }

    #[test]
    fn malformed_patterns_say_why() {
        assert_eq!(
            find("x", "%"),
            Err(PatternError::Invalid("malformed pattern (ends with '%')"))
        );
        assert_eq!(
            find("x", "[a"),
            Err(PatternError::Invalid("malformed pattern (missing ']')"))
        );
        assert_eq!(
            find("x", "%1"),
            Err(PatternError::Invalid("invalid capture index"))
        );
    }
}
