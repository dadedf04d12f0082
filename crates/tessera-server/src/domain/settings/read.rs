//! How a category's stored object is read into its typed config: serde, over a walk of the JSON
//! that visits a struct's members in the order the struct declares them, with the path of every
//! broken rule (`serde_path_to_error`, as the request bodies in `http/extract.rs`). A member that
//! breaks its rule is noted with its path and message, left out, and the object read again, so
//! one pass names every broken rule in declaration order and reads the rest.
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};
use serde_path_to_error::Segment;

/// A broken rule: the member's path below the category (`email.smtpPort`) and the message.
pub type Broken = (String, String);

/// `T` read from `config`, with every broken rule; a member that breaks one reads as absent.
pub fn read<T: DeserializeOwned + Default>(config: &Value) -> (T, Vec<Broken>) {
    // A copy only once a rule is broken: a stored object (checked on the way in) reads in place.
    let mut work = std::borrow::Cow::Borrowed(config);
    let mut broken = Vec::new();
    loop {
        match serde_path_to_error::deserialize::<_, T>(Ordered(&work)) {
            Ok(t) => return (t, broken),
            Err(e) => {
                let segments: Vec<Segment> = e.path().iter().cloned().collect();
                broken.push((path_text(&segments), e.into_inner().to_string()));
                if !remove(work.to_mut(), &segments) {
                    return (T::default(), broken);
                }
            }
        }
    }
}

/// The members `T` declares, in order (as its serde derive names them).
pub fn members<T: DeserializeOwned>() -> &'static [&'static str] {
    let seen = std::cell::Cell::new(&[][..]);
    let _ = T::deserialize(Declared(&seen));
    seen.get()
}

/// Learns a struct's declared members from the call serde makes, and reads nothing.
struct Declared<'a>(&'a std::cell::Cell<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for Declared<'_> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(de::Error::custom("read no further"))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

fn path_text(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// Removes the member at `segments`; whether there was one to remove.
fn remove(v: &mut Value, segments: &[Segment]) -> bool {
    let Some((last, parents)) = segments.split_last() else { return false };
    let mut at = v;
    for s in parents {
        let next = match s {
            Segment::Map { key } => at.get_mut(key.as_str()),
            Segment::Seq { index } => at.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else { return false };
        at = next;
    }
    match (last, at) {
        (Segment::Map { key }, Value::Object(m)) => m.remove(key.as_str()).is_some(),
        (Segment::Seq { index }, Value::Array(a)) if *index < a.len() => {
            a.remove(*index);
            true
        }
        _ => false,
    }
}

/// A value that a struct reads member by member in its declared order, unknown members after
/// (kept, not refused: D4.2). Anything but an object where a struct or map is read is "must be
/// an object"; a `null` member reaches its rule (it is not read as absent).
struct Ordered<'a>(&'a Value);

fn not_an_object() -> serde_json::Error {
    de::Error::custom("must be an object")
}

impl<'de> de::Deserializer<'de> for Ordered<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(m) => visitor.visit_map(Members::new(m, &[])),
            other => de::Deserializer::deserialize_any(other, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(m) => visitor.visit_map(Members::new(m, &[])),
            _ => Err(not_an_object()),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(m) => visitor.visit_map(Members::new(m, fields)),
            _ => Err(not_an_object()),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct enum identifier ignored_any
    }
}

/// An object's members, the declared ones first in their order.
struct Members<'a> {
    entries: std::vec::IntoIter<(&'a String, &'a Value)>,
    value: Option<&'a Value>,
}

impl<'a> Members<'a> {
    fn new(m: &'a Map<String, Value>, fields: &[&str]) -> Self {
        let rank = |k: &str| fields.iter().position(|f| *f == k).unwrap_or(fields.len());
        let mut entries: Vec<(&String, &Value)> = m.iter().collect();
        entries.sort_by_key(|(k, _)| rank(k));
        Members { entries: entries.into_iter(), value: None }
    }
}

impl<'de> MapAccess<'de> for Members<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((k, v)) = self.entries.next() else { return Ok(None) };
        self.value = Some(v);
        seed.deserialize(k.as_str().into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Self::Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(Ordered(v)),
            None => Err(de::Error::custom("a value without its key")),
        }
    }
}
