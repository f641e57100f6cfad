//! A tool's arguments as its own `Args` struct: [`decode`] reads them the
//! way every tool does (an integer written as a float, `5.0`, is taken as
//! the integer JSON Schema says it is), [`NoArgs`] is the arguments of a
//! tool that takes none. Their schemas are derived in `schemas::derived`.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The arguments of a tool that takes none: `{}` and nothing else.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `args` as `T`, the way every tool decodes its arguments. Read in place:
/// the tree is copied only in the rare case it holds a float to make integral.
pub fn decode<T: DeserializeOwned>(args: &Value) -> Result<T, serde_json::Error> {
    if !has_integral_float(args) {
        return <T as serde::Deserialize>::deserialize(args);
    }
    let mut args = args.clone();
    integral_floats(&mut args);
    serde_json::from_value(args)
}

fn has_integral_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64().is_some_and(|f| n.is_f64() && f.fract() == 0.0),
        Value::Array(a) => a.iter().any(has_integral_float),
        Value::Object(m) => m.values().any(has_integral_float),
        _ => false,
    }
}

/// Test support for hand-written schemas: every property `schema` publishes
/// is a field `A` decodes, so a wrongly typed value for it fails (an unknown
/// field would be ignored); `base` holds the other arguments `A` needs.
#[cfg(test)]
pub fn assert_every_property_decoded<A: DeserializeOwned>(schema: &Value, base: Value) {
    for name in schema["properties"].as_object().expect("properties").keys() {
        let mut wrong = base.clone();
        wrong[name] = serde_json::json!({ "not": "a scalar" });
        assert!(decode::<A>(&wrong).is_err(), "{name} is not decoded");
    }
}

/// JSON Schema counts `5.0` and `1e3` as integers, serde's integer types do
/// not: a number the schema accepted as an integer is decoded as one.
fn integral_floats(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                if f >= 0.0 && f < u64::MAX as f64 {
                    *v = Value::from(f as u64);
                } else if f < 0.0 && f >= i64::MIN as f64 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_floats),
        Value::Object(m) => m.values_mut().for_each(integral_floats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integers written as floats (`5.0`, `1e3`: integers to JSON Schema)
    /// decode as integers, nested too; other arguments decode in place.
    #[test]
    fn decode_takes_integral_floats_as_integers() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct A {
            n: u64,
            m: Vec<i64>,
            x: f64,
            s: String,
        }
        let want = A {
            n: 5,
            m: vec![-3, 1000],
            x: 2.5,
            s: "t".into(),
        };
        let floats = serde_json::json!({ "n": 5.0, "m": [-3.0, 1e3], "x": 2.5, "s": "t" });
        assert!(has_integral_float(&floats));
        assert_eq!(decode::<A>(&floats).unwrap(), want);
        let plain = serde_json::json!({ "n": 5, "m": [-3, 1000], "x": 2.5, "s": "t" });
        assert!(!has_integral_float(&plain));
        assert_eq!(decode::<A>(&plain).unwrap(), want);
        assert!(decode::<A>(&serde_json::json!({ "n": 5.5, "m": [], "x": 1, "s": "" })).is_err());
    }
}
