//! `kind: line_id` features: a LineId field by name (type known) or by
//! number (type given), with the shapes and compat rules that apply.

use super::Checker;
use crate::config::plan::{Compat, LineIdField, Op};
use crate::config::raw::{FieldRef, entries};
use crate::view::{FieldType, KNOWN_FIELDS, ValueClass, known_field};

impl Checker {
    pub(super) fn line_id(&mut self, path: &str, k: &entries::LineId) -> (Op, Vec<i64>) {
        let field = self.line_id_field(path, k);
        let (dim, mut shape) = self.shape(path, k.shape.as_deref());
        if field.ty.class() == ValueClass::Bytes {
            if dim != 1 {
                self.error(format!("{path}.shape"), "string LineId fields take shape [1]");
            }
            shape = self.unit_shape();
        }
        if field.ty.class() != ValueClass::Bytes && !field.repeated && dim > 1 && self.compat == Compat::Native {
            let msg = format!(
                "found {shape:?} for a singular LineId field (one value per row); use shape [1] \
                 (compat: monolith writes row r at flat index r of [B, {dim}])"
            );
            self.error(format!("{path}.shape"), msg);
        }
        if self.compat == Compat::Monolith && matches!(field.ty, FieldType::Bool | FieldType::Enum) {
            self.error(format!("{path}.field"), "Monolith rejects bool and enum LineId fields; use compat: native");
        }
        (Op::LineId { field, dim }, shape)
    }

    fn line_id_field(&mut self, path: &str, k: &entries::LineId) -> LineIdField {
        let fallback = LineIdField { number: 1, ty: FieldType::Int64, default: 0.0, repeated: false };
        let ty = k.r#type.as_deref().map(|t| (t, FieldType::parse(t)));
        match (&k.field, ty) {
            (None, _) => self.error(format!("{path}.field"), "missing; name a LineId field or give its number"),
            (Some(FieldRef::Name(name)), ty) => match known_field(name) {
                Some(_) if ty.is_some() => {
                    self.error(format!("{path}.type"), format!("{name:?} is a known field; its type is fixed"))
                }
                Some(f) => return LineIdField::known(f),
                None => {
                    let names: Vec<_> = KNOWN_FIELDS.iter().map(|f| f.name).collect();
                    let msg =
                        format!("unknown LineId field {name:?}; use one of {} or a number with type", names.join(", "));
                    self.error(format!("{path}.field"), msg);
                }
            },
            (Some(FieldRef::Number(n)), _) if !(1..=0x1fff_ffff).contains(n) => {
                self.error(format!("{path}.field"), format!("found {n}, field numbers are 1..=536870911"))
            }
            (Some(FieldRef::Number(_)), None) => {
                self.error(format!("{path}.type"), "missing; a field given by number needs its type")
            }
            (Some(FieldRef::Number(_)), Some((t, None))) => {
                self.error(format!("{path}.type"), format!("unknown type {t:?}, expected one of {}", FieldType::NAMES))
            }
            (Some(FieldRef::Number(n)), Some((_, Some(ty)))) => return number_field(*n as u32, ty, k),
        }
        fallback
    }
}

/// A field given by number: the known field when number and type match one.
fn number_field(number: u32, ty: FieldType, k: &entries::LineId) -> LineIdField {
    if let Some(f) = KNOWN_FIELDS.iter().find(|f| f.number == number && f.ty == ty) {
        return LineIdField::known(f);
    }
    // An undeclared field is read as repeated when more than one value per
    // row is asked for.
    let repeated = k.shape.as_deref().is_some_and(|s| s.iter().product::<i64>() > 1);
    LineIdField { number, ty, default: 0.0, repeated }
}
