//! Player commands, Quake style: view angles, move intentions, buttons and a duration.

/// A player's id: a dense slot number, reused lowest-first after a player leaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlayerId(pub u32);

/// Buttons held during a command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Buttons(pub u8);

impl Buttons {
    pub const NONE: Buttons = Buttons(0);
    pub const ATTACK: Buttons = Buttons(1);
    pub const JUMP: Buttons = Buttons(2);
    /// Bits the world understands; others are ignored (and dropped by the codecs).
    pub const ALL: u8 = 3;

    pub fn contains(self, other: Buttons) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn with(self, other: Buttons) -> Buttons {
        Buttons(self.0 | other.0)
    }
}

/// The weapon a command wants to hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Weapon {
    /// Hitscan: an instant ray, blocked by walls.
    #[default]
    MachineGun,
    /// Projectile with splash damage.
    RocketLauncher,
}

impl Weapon {
    pub fn index(self) -> usize {
        match self {
            Weapon::MachineGun => 0,
            Weapon::RocketLauncher => 1,
        }
    }

    /// Unknown numbers fall back to the machine gun, so garbage input stays harmless.
    pub fn from_index(i: u8) -> Weapon {
        if i == 1 {
            Weapon::RocketLauncher
        } else {
            Weapon::MachineGun
        }
    }
}

/// One client frame of input, as a Quake `usercmd_t`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserCmd {
    /// How long the command lasts, in milliseconds (Quake clients send ~30 ms).
    pub msec: u8,
    /// View yaw in angle units (65536 per turn).
    pub yaw: u16,
    /// View pitch in angle units, positive looks down; clamped to ±89° when applied.
    pub pitch: i16,
    /// Wanted speed along the view direction, units/s (clamped to the maximum speed).
    pub forward: i16,
    /// Wanted speed to the right, units/s.
    pub side: i16,
    /// Wanted vertical speed; unused on foot, kept for the wire format.
    pub up: i16,
    pub buttons: Buttons,
    pub weapon: Weapon,
}

/// A command addressed to a player, as the caller queues them for a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub player: PlayerId,
    pub cmd: UserCmd,
}
