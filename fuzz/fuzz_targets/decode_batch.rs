//! Input bytes as one serialized `ExampleBatch`: walked through every view and
//! extracted with every fuzz plan (see `fex_fuzz::decode_batch`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| fex_fuzz::decode_batch(data));
