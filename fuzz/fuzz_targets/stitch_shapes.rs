#![no_main]
//! `cargo fuzz run stitch_shapes`: see [`baton_fuzz_targets::stitch_shapes`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::stitch_shapes(data));
