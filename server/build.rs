//! Generates the gRPC service (tonic + prost) from proto/grpc_service.proto
//! with protox, a pure-Rust protobuf compiler: no `protoc` needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/grpc_service.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .build_transport(false)
        .bytes(".inference")
        .compile_fds(descriptors)?;
    Ok(())
}
