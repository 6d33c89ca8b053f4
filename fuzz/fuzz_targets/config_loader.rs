#![no_main]
//! `cargo fuzz run config_loader`: see [`baton_fuzz_targets::config_loader`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::config_loader(data));
