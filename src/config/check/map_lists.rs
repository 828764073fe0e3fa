//! A `lookup` whose map is two parallel lists (`map_keys`, `map_values`):
//! the lists' features checked, so that a sample can only be malformed, not
//! the model (a list that reads one element only, values that are not
//! numbers or strings, both forms of the map at once).

use super::Checker;
use super::ops::{Need, sequence_width};
use crate::config::plan::{Op, Output};
use crate::config::raw::{RawEntry, entries};
use crate::proto::fex_v1::{DataType, Layout};

impl Checker {
    /// Whether a lookup given `map_keys` and `map_values` has them and one
    /// key feature, and each list is a list: `ins` is `[keys, map keys, map
    /// values]` when it is. `need_discrete` refuses float values (hashing
    /// their text would hash fex's formatting, not the sample's).
    pub(super) fn map_lists(
        &mut self,
        path: &str,
        o: &entries::Lookup,
        ins: &[&Output],
        (e, separator, need_discrete): (&RawEntry, &[u8], bool),
    ) -> bool {
        let mut ok = true;
        for (key, given) in [("map_keys", o.map_keys.is_some()), ("map_values", o.map_values.is_some())] {
            if !given {
                let message = "missing; a map given as lists names both map_keys and map_values";
                self.error(format!("{path}.{key}"), message);
                ok = false;
            }
        }
        let inputs = o.inputs.as_deref().unwrap_or_default();
        if inputs.len() != 1 {
            let message = if inputs.len() == 2 {
                "gives a map ([map, key]) and map_keys, map_values too; give inputs: [key] with the lists, or \
                 inputs: [map, key] without them"
                    .to_string()
            } else {
                format!("op lookup with map_keys and map_values takes inputs: [key], found {} inputs", inputs.len())
            };
            self.error(format!("{path}.inputs"), message);
            ok = false;
        }
        if !ok || ins.len() != 3 {
            return false;
        }
        let need = if need_discrete { Need::IdsOrStrings } else { Need::IdsStringsOrSequence };
        let keys_ok = self.inputs_fit(e, &ins[..1], need, 1..=1);
        let map_keys_ok = self.map_list(path, "map_keys", ins[1], separator, &[DataType::I64, DataType::U64]);
        let floats = matches!(ins[2].layout(), (Layout::Ragged, DataType::F32 | DataType::F64, _));
        if need_discrete && floats && sequence_width(ins[2]).is_none() {
            let message = format!(
                "{:?} holds floats, and need_discrete hashes each value's text, which a float's would be fex's \
                 formatting, not the sample's; give the values as strings (a bytes_list) or integers",
                ins[2].name
            );
            self.error(format!("{path}.map_values"), message);
            return false;
        }
        let numbers = [DataType::I64, DataType::U64, DataType::I32, DataType::F32, DataType::F64];
        let map_values_ok = self.map_list(path, "map_values", ins[2], separator, &numbers);
        keys_ok && map_keys_ok && map_values_ok
    }

    /// Whether `o` is a list, as `key` takes one: strings split at
    /// `separator` (a `string` kind must join its bytes_list with it,
    /// else it reads one element), or ragged values of a dtype `numbers`
    /// lists (not a sequence: its positions are not places).
    fn map_list(&mut self, path: &str, key: &str, o: &Output, separator: &[u8], numbers: &[DataType]) -> bool {
        let (layout, dtype, _) = o.layout();
        let at = format!("{path}.{key}");
        let shown = |s: &[u8]| format!("{:?}", String::from_utf8_lossy(s));
        match (&o.op, layout) {
            (Op::String { join: None, .. }, _) => {
                let message = format!(
                    "{:?} reads bytes_list[0] only; give it join: {} (the lookup's separator) to read each element",
                    o.name,
                    shown(separator)
                );
                self.error(at, message);
                false
            }
            (Op::String { join: Some(join), .. }, _) if join.as_slice() != separator => {
                let message = format!(
                    "{:?} joins its elements with {}, the lookup's separator is {}: make them the same, so that \
                     each element is one place of the list",
                    o.name,
                    shown(join),
                    shown(separator)
                );
                self.error(at, message);
                false
            }
            (_, Layout::Strings) => true,
            (_, Layout::Ragged) if sequence_width(o).is_none() && numbers.contains(&dtype) => true,
            _ => {
                let want: Vec<&str> = numbers.iter().map(|d| d.as_str_name()).collect();
                let sequence = if sequence_width(o).is_some() { ", a sequence" } else { "" };
                let message = format!(
                    "takes a list: strings, or ragged {}; {:?} is {} {}{sequence}",
                    want.join(", "),
                    o.name,
                    layout.as_str_name(),
                    dtype.as_str_name()
                );
                self.error(at, message);
                false
            }
        }
    }
}
