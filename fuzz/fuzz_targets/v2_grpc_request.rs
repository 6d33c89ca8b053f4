#![no_main]
//! `cargo fuzz run v2_grpc_request`: see [`baton_fuzz_targets::v2_grpc_request`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::v2_grpc_request(data));
