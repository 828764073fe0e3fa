//! Input bytes cut into several serialized `Example`s (the first bytes give the
//! lengths), each walked as an Example and as a legacy Instance, then extracted
//! together with every fuzz plan (see `fex_fuzz::decode_examples`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fex_fuzz::decode_examples(data));
