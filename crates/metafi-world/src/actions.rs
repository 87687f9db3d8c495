//! Action files: recorded player commands for bots to replay (the seeds' benchmarking method).
//!
//! A plain-text, line-oriented format, easy to diff, generate and hand-edit:
//!
//! ```text
//! metafi-actions 1
//! # comment lines and blank lines are ignored
//! bot <id> <behaviour> <x> <y> <z> <yaw>
//! <t_ms> <msec> <yaw> <pitch> <forward> <side> <up> <buttons> <weapon>
//! ...
//! ```
//!
//! - `bot` starts a bot's track: its id (unique), a behaviour label (no spaces), and where it
//!   spawns (player centre in units, yaw in angle units). A replay must spawn the bot there:
//!   recorded input only makes sense from the recorded starting point.
//! - Each following line is one command: `t_ms` is when the client sends it, relative to the start
//!   of the replay (non-decreasing within a bot); `msec` its duration (1–255); `yaw` 0–65535 and
//!   `pitch` −32768–32767 in angle units (65536 per turn, positive pitch looks down);
//!   `forward`/`side`/`up` in units/s (−32768–32767); `buttons` is `-` or letters from `a`
//!   (attack) and `j` (jump); `weapon` is `mg` (machine gun, hitscan) or `rl` (rocket launcher).
//!
//! The parser reports the first bad line and never panics on any input.

use std::collections::BTreeMap;
use std::fmt;

use crate::command::{Buttons, UserCmd, Weapon};
use crate::math::Vec3;

/// The header line every action file starts with.
pub const ACTIONS_HEADER: &str = "metafi-actions 1";

/// A parsed action file: bot tracks in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActionFile {
    pub bots: Vec<BotTrack>,
}

/// One bot's recording.
#[derive(Clone, Debug, PartialEq)]
pub struct BotTrack {
    pub id: u32,
    /// Free-form label (`roam`, `hunt`, …), no whitespace.
    pub behaviour: String,
    pub spawn: Vec3,
    pub yaw: u16,
    pub commands: Vec<TimedCmd>,
}

/// A command and when it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedCmd {
    pub at_ms: u32,
    pub cmd: UserCmd,
}

/// Why an action file was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("missing header line {ACTIONS_HEADER:?}")]
    Header,
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: &'static str },
    #[error("bot {id}: command at {at_ms} ms is earlier than the one before")]
    OutOfOrder { id: u32, at_ms: u32 },
    #[error("bot {id} is recorded twice")]
    DuplicateBot { id: u32 },
    #[error("no bot {id} to record for")]
    UnknownBot { id: u32 },
}

impl BotTrack {
    /// Commands sent before `until_ms` that the cursor has not yet returned; advances it.
    pub fn due(&self, cursor: &mut usize, until_ms: u32) -> &[TimedCmd] {
        let start = (*cursor).min(self.commands.len());
        let n = self.commands[start..]
            .iter()
            .take_while(|c| c.at_ms < until_ms)
            .count();
        *cursor = start + n;
        &self.commands[start..start + n]
    }
}

impl ActionFile {
    /// Parses the text format.
    pub fn parse(text: &str) -> Result<ActionFile, ActionError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        let header = lines.find(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        if header.map(|(_, l)| l) != Some(ACTIONS_HEADER) {
            return Err(ActionError::Header);
        }
        let mut file = ActionFile::default();
        let mut seen = std::collections::HashSet::new();
        for (line, l) in lines {
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let bad = |reason| ActionError::Line { line, reason };
            let mut f = l.split_ascii_whitespace().peekable();
            if f.peek() == Some(&"bot") {
                f.next();
                let id: u32 = num(f.next(), bad)?;
                let behaviour = f.next().ok_or(bad("missing behaviour"))?.to_string();
                let x: f32 = num(f.next(), bad)?;
                let y: f32 = num(f.next(), bad)?;
                let z: f32 = num(f.next(), bad)?;
                let yaw: u16 = num(f.next(), bad)?;
                end(f, bad)?;
                let spawn = Vec3::new(x, y, z);
                if !spawn.is_finite() {
                    return Err(bad("spawn is not finite"));
                }
                if !seen.insert(id) {
                    return Err(ActionError::DuplicateBot { id });
                }
                file.bots.push(BotTrack {
                    id,
                    behaviour,
                    spawn,
                    yaw,
                    commands: Vec::new(),
                });
                continue;
            }
            let bot = file
                .bots
                .last_mut()
                .ok_or(bad("command before any bot line"))?;
            let at_ms: u32 = num(f.next(), bad)?;
            let msec: u8 = num(f.next(), bad)?;
            if msec == 0 {
                return Err(bad("msec must be at least 1"));
            }
            let cmd = UserCmd {
                msec,
                yaw: num(f.next(), bad)?,
                pitch: num(f.next(), bad)?,
                forward: num(f.next(), bad)?,
                side: num(f.next(), bad)?,
                up: num(f.next(), bad)?,
                buttons: buttons(f.next().ok_or(bad("missing buttons"))?)
                    .ok_or(bad("bad buttons"))?,
                weapon: weapon(f.next().ok_or(bad("missing weapon"))?).ok_or(bad("bad weapon"))?,
            };
            end(f, bad)?;
            if bot.commands.last().is_some_and(|c| c.at_ms > at_ms) {
                return Err(ActionError::OutOfOrder { id: bot.id, at_ms });
            }
            bot.commands.push(TimedCmd { at_ms, cmd });
        }
        Ok(file)
    }

    /// Total commands over all bots.
    pub fn command_count(&self) -> usize {
        self.bots.iter().map(|b| b.commands.len()).sum()
    }
}

impl fmt::Display for ActionFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{ACTIONS_HEADER}")?;
        for b in &self.bots {
            writeln!(
                f,
                "bot {} {} {} {} {} {}",
                b.id, b.behaviour, b.spawn.x, b.spawn.y, b.spawn.z, b.yaw
            )?;
            for c in &b.commands {
                let k = &c.cmd;
                let mut btn = String::new();
                if k.buttons.contains(Buttons::ATTACK) {
                    btn.push('a');
                }
                if k.buttons.contains(Buttons::JUMP) {
                    btn.push('j');
                }
                if btn.is_empty() {
                    btn.push('-');
                }
                let w = if k.weapon == Weapon::RocketLauncher {
                    "rl"
                } else {
                    "mg"
                };
                writeln!(
                    f,
                    "{} {} {} {} {} {} {} {btn} {w}",
                    c.at_ms, k.msec, k.yaw, k.pitch, k.forward, k.side, k.up
                )?;
            }
        }
        Ok(())
    }
}

/// Records commands as they are issued, then produces an [`ActionFile`] in bot-id order.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    bots: BTreeMap<u32, BotTrack>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Starts a bot's track. Behaviour labels lose any whitespace so the file stays parseable.
    pub fn add_bot(
        &mut self,
        id: u32,
        behaviour: &str,
        spawn: Vec3,
        yaw: u16,
    ) -> Result<(), ActionError> {
        if self.bots.contains_key(&id) {
            return Err(ActionError::DuplicateBot { id });
        }
        let mut label: String = behaviour.chars().filter(|c| !c.is_whitespace()).collect();
        if label.is_empty() {
            label.push('-');
        }
        self.bots.insert(
            id,
            BotTrack {
                id,
                behaviour: label,
                spawn,
                yaw,
                commands: Vec::new(),
            },
        );
        Ok(())
    }

    /// Appends a command sent at `at_ms` (not earlier than the bot's previous one). Commands of
    /// zero duration are not recorded: they do nothing and the format forbids them.
    pub fn record(&mut self, id: u32, at_ms: u32, cmd: UserCmd) -> Result<(), ActionError> {
        let bot = self
            .bots
            .get_mut(&id)
            .ok_or(ActionError::UnknownBot { id })?;
        if bot.commands.last().is_some_and(|c| c.at_ms > at_ms) {
            return Err(ActionError::OutOfOrder { id, at_ms });
        }
        if cmd.msec > 0 {
            let cmd = UserCmd {
                buttons: Buttons(cmd.buttons.0 & Buttons::ALL),
                ..cmd
            };
            bot.commands.push(TimedCmd { at_ms, cmd });
        }
        Ok(())
    }

    pub fn finish(self) -> ActionFile {
        ActionFile {
            bots: self.bots.into_values().collect(),
        }
    }
}

fn num<T: std::str::FromStr>(
    field: Option<&str>,
    bad: impl Fn(&'static str) -> ActionError,
) -> Result<T, ActionError> {
    field
        .ok_or(bad("missing field"))?
        .parse()
        .map_err(|_| bad("bad number"))
}

fn end<'a>(
    mut f: impl Iterator<Item = &'a str>,
    bad: impl Fn(&'static str) -> ActionError,
) -> Result<(), ActionError> {
    if f.next().is_some() {
        Err(bad("unexpected extra field"))
    } else {
        Ok(())
    }
}

fn buttons(s: &str) -> Option<Buttons> {
    if s == "-" {
        return Some(Buttons::NONE);
    }
    s.chars().try_fold(Buttons::NONE, |b, c| match c {
        'a' => Some(b.with(Buttons::ATTACK)),
        'j' => Some(b.with(Buttons::JUMP)),
        _ => None,
    })
}

fn weapon(s: &str) -> Option<Weapon> {
    match s {
        "mg" => Some(Weapon::MachineGun),
        "rl" => Some(Weapon::RocketLauncher),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "metafi-actions 1
# two bots
bot 0 hunt 100 200 28.0625 16384
0 30 16384 0 320 0 0 - mg
30 30 16500 -200 320 -320 0 aj rl
bot 1 camp 300 300 28.0625 0
";

    #[test]
    fn parses_the_documented_format_and_writes_it_back() {
        let f = ActionFile::parse(SAMPLE).expect("valid");
        assert_eq!(f.bots.len(), 2);
        let c = f.bots[0].commands[1].cmd;
        assert_eq!((c.pitch, c.side), (-200, -320));
        assert!(c.buttons.contains(Buttons::ATTACK) && c.buttons.contains(Buttons::JUMP));
        assert_eq!(c.weapon, Weapon::RocketLauncher);
        assert_eq!(ActionFile::parse(&f.to_string()).expect("round trip"), f);
    }

    #[test]
    fn rejects_out_of_order_and_orphan_commands() {
        let back = SAMPLE
            .replace("30 30 16500", "0 30 16500")
            .replace("0 30 16384", "40 30 16384");
        assert!(matches!(
            ActionFile::parse(&back),
            Err(ActionError::OutOfOrder { id: 0, .. })
        ));
        let orphan = "metafi-actions 1\n0 30 0 0 0 0 0 - mg\n";
        assert!(matches!(
            ActionFile::parse(orphan),
            Err(ActionError::Line { line: 2, .. })
        ));
        assert_eq!(
            ActionFile::parse("bot 1 x 0 0 0 0"),
            Err(ActionError::Header)
        );
    }

    #[test]
    fn replay_cursor_returns_each_command_once_in_time_order() {
        let f = ActionFile::parse(SAMPLE).expect("valid");
        let mut cur = 0;
        assert_eq!(f.bots[0].due(&mut cur, 1).len(), 1);
        assert_eq!(f.bots[0].due(&mut cur, 1).len(), 0);
        assert_eq!(f.bots[0].due(&mut cur, 1000).len(), 1);
    }

    #[test]
    fn recorder_produces_bots_in_id_order() {
        let mut r = Recorder::new();
        r.add_bot(5, "roam around", Vec3::ZERO, 0).expect("new bot");
        r.add_bot(2, "hunt", Vec3::ZERO, 0).expect("new bot");
        r.record(
            5,
            0,
            UserCmd {
                msec: 30,
                ..UserCmd::default()
            },
        )
        .expect("recorded");
        assert_eq!(
            r.record(9, 0, UserCmd::default()),
            Err(ActionError::UnknownBot { id: 9 })
        );
        let f = r.finish();
        assert_eq!(f.bots.iter().map(|b| b.id).collect::<Vec<_>>(), vec![2, 5]);
        assert_eq!(f.bots[1].behaviour, "roamaround");
        assert_eq!(ActionFile::parse(&f.to_string()).expect("round trip"), f);
    }
}
