//! [`NkArgs`]: the arguments of one `nk` call, with readers that produce Nakama's argument
//! errors. Positions are 1-based, as Lua's `bad argument #N` counts them.

use std::borrow::Cow;

use uuid::Uuid;

use super::function::NkError;
use super::value::{Naming, NkMap, NkValue};

static NIL: NkValue = NkValue::Nil;

/// The arguments of one call and the spelling of the language that made it.
#[derive(Debug, Clone)]
pub struct NkArgs {
    naming: Naming,
    values: Vec<NkValue>,
}

impl NkArgs {
    pub fn new(naming: Naming, values: Vec<NkValue>) -> NkArgs {
        NkArgs { naming, values }
    }

    /// How the calling language spells fields (JavaScript: camelCase).
    pub fn naming(&self) -> Naming {
        self.naming
    }

    /// True when the caller is JavaScript (for the few places Nakama's two APIs differ).
    pub fn is_js(&self) -> bool {
        self.naming == Naming::Camel
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Argument `position` (1-based); `Nil` past the end.
    pub fn at(&self, position: usize) -> Arg<'_> {
        Arg {
            value: position
                .checked_sub(1)
                .and_then(|i| self.values.get(i))
                .unwrap_or(&NIL),
            position,
            naming: self.naming,
        }
    }

    /// Takes argument `position` out (for large values such as a storage batch).
    pub fn take(&mut self, position: usize) -> NkValue {
        position
            .checked_sub(1)
            .and_then(|i| self.values.get_mut(i))
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

/// One argument (or one field of an argument) with where it came from, for errors.
#[derive(Debug, Clone, Copy)]
pub struct Arg<'a> {
    pub value: &'a NkValue,
    /// The argument position errors name.
    pub position: usize,
    pub naming: Naming,
}

impl<'a> Arg<'a> {
    /// An error about this argument: Lua `bad argument #N to fn (message)`, JS a `TypeError`.
    pub fn error(&self, message: impl Into<Cow<'static, str>>) -> NkError {
        NkError::Arg {
            position: self.position,
            message: message.into(),
        }
    }

    pub fn is_nil(&self) -> bool {
        self.value.is_nil()
    }

    /// A string; `message` for anything else.
    pub fn string(&self, message: &'static str) -> Result<&'a str, NkError> {
        self.value.as_str().ok_or_else(|| self.error(message))
    }

    /// A non-empty string; `message` for anything else.
    pub fn non_empty(&self, message: &'static str) -> Result<&'a str, NkError> {
        match self.value.as_str() {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(self.error(message)),
        }
    }

    /// `None` for nil, a string, or `message`.
    pub fn opt_string(&self, message: &'static str) -> Result<Option<&'a str>, NkError> {
        match self.value {
            NkValue::Nil => Ok(None),
            NkValue::Str(s) => Ok(Some(s)),
            _ => Err(self.error(message)),
        }
    }

    /// Text or binary data.
    pub fn bytes(&self, message: &'static str) -> Result<&'a [u8], NkError> {
        self.value.as_bytes().ok_or_else(|| self.error(message))
    }

    /// An integer (a float without fraction counts); `message` for anything else.
    pub fn integer(&self, message: &'static str) -> Result<i64, NkError> {
        self.value.as_i64().ok_or_else(|| self.error(message))
    }

    /// `None` for nil, an integer, or `message`.
    pub fn opt_integer(&self, message: &'static str) -> Result<Option<i64>, NkError> {
        match self.value {
            NkValue::Nil => Ok(None),
            other => other.as_i64().map(Some).ok_or_else(|| self.error(message)),
        }
    }

    pub fn number(&self, message: &'static str) -> Result<f64, NkError> {
        self.value.as_f64().ok_or_else(|| self.error(message))
    }

    pub fn opt_bool(&self, message: &'static str) -> Result<Option<bool>, NkError> {
        match self.value {
            NkValue::Nil => Ok(None),
            NkValue::Bool(b) => Ok(Some(*b)),
            _ => Err(self.error(message)),
        }
    }

    /// A user id (a UUID string); `message` for anything else, empty included.
    pub fn uuid(&self, message: &'static str) -> Result<Uuid, NkError> {
        self.value
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| self.error(message))
    }

    /// `None` for nil or an empty string, else a UUID or `message`.
    pub fn opt_uuid(&self, message: &'static str) -> Result<Option<Uuid>, NkError> {
        match self.value {
            NkValue::Nil => Ok(None),
            NkValue::Str(s) if s.is_empty() => Ok(None),
            NkValue::Str(s) => Uuid::parse_str(s)
                .map(Some)
                .map_err(|_| self.error(message)),
            _ => Err(self.error(message)),
        }
    }

    /// A map (Lua table with keys, JS object).
    pub fn map(&self, message: &'static str) -> Result<MapArg<'a>, NkError> {
        match self.value {
            NkValue::Map(map) => Ok(MapArg {
                map,
                position: self.position,
                naming: self.naming,
            }),
            _ => Err(self.error(message)),
        }
    }

    /// `None` for nil, else a map or `message`.
    pub fn opt_map(&self, message: &'static str) -> Result<Option<MapArg<'a>>, NkError> {
        if self.is_nil() {
            return Ok(None);
        }
        self.map(message).map(Some)
    }

    /// A list's items, each an [`Arg`] with this argument's position.
    pub fn list(&self, message: &'static str) -> Result<Vec<Arg<'a>>, NkError> {
        let items = self.value.as_list().ok_or_else(|| self.error(message))?;
        Ok(items
            .iter()
            .map(|value| Arg {
                value,
                position: self.position,
                naming: self.naming,
            })
            .collect())
    }
}

/// A map argument: fields are looked up by the caller's spelling.
#[derive(Debug, Clone, Copy)]
pub struct MapArg<'a> {
    pub map: &'a NkMap,
    pub position: usize,
    pub naming: Naming,
}

impl<'a> MapArg<'a> {
    /// Field `field` (snake_case; looked up as the caller spells it), nil when absent.
    pub fn get(&self, field: &'static str) -> Arg<'a> {
        Arg {
            value: self.map.field(field, self.naming).unwrap_or(&NIL),
            position: self.position,
            naming: self.naming,
        }
    }

    /// `field` as the caller spells it, for error messages (`userId` in JavaScript).
    pub fn name(&self, field: &'static str) -> Cow<'static, str> {
        self.naming.spell(field)
    }

    /// An error about this argument.
    pub fn error(&self, message: impl Into<Cow<'static, str>>) -> NkError {
        NkError::Arg {
            position: self.position,
            message: message.into(),
        }
    }

    /// An optional UUID field (`user_id`, `sender_id`, …), refused with Nakama's words in each
    /// language: JavaScript "expects 'userId' value to be a valid id" / "… a string", Lua
    /// "expects user_id to be a valid UUID" / "… to be string".
    pub fn opt_uuid(&self, field: &'static str) -> Result<Option<Uuid>, NkError> {
        let js = self.naming == Naming::Camel;
        let name = self.name(field);
        match self.get(field).value {
            NkValue::Nil => Ok(None),
            NkValue::Str(s) => Uuid::parse_str(s).map(Some).map_err(|_| {
                self.error(if js {
                    format!("expects '{name}' value to be a valid id")
                } else {
                    format!("expects {name} to be a valid UUID")
                })
            }),
            _ if js => Err(self.error(format!("expects '{name}' value to be a string"))),
            _ => Err(self.error(format!("expects {name} to be string"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<Option<Uuid>, NkError>) -> String {
        match result {
            Err(NkError::Arg { message, .. }) => message.into_owned(),
            other => panic!("expected an argument error, got {other:?}"),
        }
    }

    #[test]
    fn optional_uuid_fields_answer_nakamas_words_in_each_language() {
        let id = Uuid::new_v4();
        for (naming, key, bad_id, not_string) in [
            (
                Naming::Snake,
                "user_id",
                "expects user_id to be a valid UUID",
                "expects user_id to be string",
            ),
            (
                Naming::Camel,
                "userId",
                "expects 'userId' value to be a valid id",
                "expects 'userId' value to be a string",
            ),
        ] {
            let arg = |map: &NkMap| {
                MapArg {
                    map,
                    position: 1,
                    naming,
                }
                .opt_uuid("user_id")
            };
            assert_eq!(arg(&NkMap::new()).unwrap(), None);
            let mut good = NkMap::new();
            good.insert_data(key, NkValue::Str(id.to_string()));
            assert_eq!(arg(&good).unwrap(), Some(id));
            let mut bad = NkMap::new();
            bad.insert_data(key, NkValue::Str("nope".into()));
            assert_eq!(message(arg(&bad)), bad_id);
            let mut number = NkMap::new();
            number.insert_data(key, NkValue::Int(3));
            assert_eq!(message(arg(&number)), not_string);
        }
    }
}
