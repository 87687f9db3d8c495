//! serde adapters for protobuf JSON as Nakama writes and reads it (Go's `protojson` with proto
//! field names, enum numbers and unpopulated fields omitted):
//!
//! - int64 is a string on output, a string or a number on input;
//! - int32 is a number on output, a number or a numeric string on input;
//! - bytes are standard base64 on output; standard or URL-safe, padded or not, on input;
//! - wrapper types are their bare value; timestamps are RFC 3339 strings;
//! - `null` means "not set" for every field.
//!
//! Each adapter is used through `#[serde(with = "…")]` or `deserialize_with`.

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serializer};

use crate::wkt::{BoolValue, Int32Value, StringValue, Timestamp};

/// Deserializes `null` (or an absent field, with `#[serde(default)]`) as the type's default.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

pub(crate) fn is_zero_i32(value: &i32) -> bool {
    *value == 0
}

pub(crate) fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// An integer from a JSON number (integral, possibly written with an exponent) or a string.
struct IntVisitor {
    min: i64,
    max: i64,
}

impl IntVisitor {
    fn check<E: de::Error>(&self, value: i64) -> Result<Option<i64>, E> {
        if (self.min..=self.max).contains(&value) {
            Ok(Some(value))
        } else {
            Err(E::custom(format_args!("integer {value} out of range")))
        }
    }

    fn check_f64<E: de::Error>(&self, value: f64) -> Result<Option<i64>, E> {
        // The range check on f64 keeps the cast exact (no saturation).
        if value.fract() == 0.0 && value >= self.min as f64 && value <= self.max as f64 {
            Ok(Some(value as i64))
        } else {
            Err(E::custom(format_args!(
                "{value} is not an integer in range"
            )))
        }
    }
}

impl<'de> Visitor<'de> for IntVisitor {
    type Value = Option<i64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer, as a number or a string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.check(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        let v = i64::try_from(v).map_err(|_| E::custom("integer out of range"))?;
        self.check(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.check_f64(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let text = v.trim();
        match text.parse::<i64>() {
            Ok(n) => self.check(n),
            Err(_) => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => self.check_f64(f),
                _ => Err(E::custom(format_args!("'{v}' is not an integer"))),
            },
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn deserialize_int<'de, D: Deserializer<'de>>(
    deserializer: D,
    min: i64,
    max: i64,
) -> Result<Option<i64>, D::Error> {
    deserializer.deserialize_option(IntVisitor { min, max })
}

/// `int32`: a number out, a number or numeric string in.
pub(crate) mod int32 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(value: &i32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(*value)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        // In range by construction of the visitor bounds.
        Ok(deserialize_int(d, i64::from(i32::MIN), i64::from(i32::MAX))?.unwrap_or(0) as i32)
    }
}

/// `int64`: a decimal string out (JavaScript numbers lose precision past 2^53), either in.
pub(crate) mod int64 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(value: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(value)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        Ok(deserialize_int(d, i64::MIN, i64::MAX)?.unwrap_or(0))
    }
}

/// `bytes`: standard base64 out; standard or URL-safe, padded or not, in.
pub(crate) mod base64_bytes {
    use bytes::Bytes;

    use super::*;

    const LENIENT: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

    pub(crate) fn serialize<S: Serializer>(value: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(value))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let Some(text) = Option::<std::borrow::Cow<'de, str>>::deserialize(d)? else {
            return Ok(Bytes::new());
        };
        decode(text.as_bytes()).ok_or_else(|| de::Error::custom("bytes field is not valid base64"))
    }

    /// The bytes of a base64 text (either alphabet, padded or not); `None` if it is not base64.
    pub(crate) fn decode(text: &[u8]) -> Option<Bytes> {
        let engine = if text.iter().any(|b| matches!(b, b'-' | b'_')) {
            &URL_SAFE
        } else {
            &STANDARD
        };
        engine.decode(text).map(Bytes::from).ok()
    }
}

/// `google.protobuf.BoolValue`: the bare boolean.
pub(crate) mod bool_value {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<BoolValue>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_bool(v.value),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<BoolValue>, D::Error> {
        Ok(Option::<bool>::deserialize(d)?.map(|value| BoolValue { value }))
    }
}

/// `google.protobuf.Int32Value`: the bare number.
pub(crate) mod int32_value {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        v: &Option<Int32Value>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_i32(v.value),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Int32Value>, D::Error> {
        Ok(
            deserialize_int(d, i64::from(i32::MIN), i64::from(i32::MAX))?.map(|v| Int32Value {
                // In range by construction of the visitor bounds.
                value: v as i32,
            }),
        )
    }
}

/// `google.protobuf.StringValue`: the bare string.
pub(crate) mod string_value {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        v: &Option<StringValue>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&v.value),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<StringValue>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(|value| StringValue { value }))
    }
}

/// `google.protobuf.Timestamp`: an RFC 3339 string.
pub(crate) mod timestamp {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&v.to_rfc3339()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        match Option::<std::borrow::Cow<'de, str>>::deserialize(d)? {
            None => Ok(None),
            Some(text) => Timestamp::parse_rfc3339(&text)
                .map(Some)
                .ok_or_else(|| de::Error::custom("timestamp is not RFC 3339")),
        }
    }
}

/// `map<string, double>`: finite values are numbers, the others `"NaN"`, `"Infinity"`,
/// `"-Infinity"`, as protobuf JSON writes them.
pub(crate) mod double_map {
    use serde::ser::SerializeMap;

    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        map: &HashMap<String, f64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(map.len()))?;
        for (key, value) in map {
            if value.is_nan() {
                out.serialize_entry(key, "NaN")?;
            } else if *value == f64::INFINITY {
                out.serialize_entry(key, "Infinity")?;
            } else if *value == f64::NEG_INFINITY {
                out.serialize_entry(key, "-Infinity")?;
            } else {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<HashMap<String, f64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Number<'a> {
            Float(f64),
            #[serde(borrow)]
            Text(std::borrow::Cow<'a, str>),
        }
        let raw: Option<HashMap<String, Number<'de>>> = Option::deserialize(d)?;
        raw.unwrap_or_default()
            .into_iter()
            .map(|(key, value)| {
                let number = match value {
                    Number::Float(f) => f,
                    Number::Text(text) => match text.as_ref() {
                        "NaN" => f64::NAN,
                        "Infinity" => f64::INFINITY,
                        "-Infinity" => f64::NEG_INFINITY,
                        other => other
                            .trim()
                            .parse()
                            .map_err(|_| de::Error::custom("map value is not a number"))?,
                    },
                };
                Ok((key, number))
            })
            .collect()
    }
}
