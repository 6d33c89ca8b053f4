#![no_main]
//! `cargo fuzz run v2_binary_request`: see [`baton_fuzz_targets::v2_binary_request`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::v2_binary_request(data));
