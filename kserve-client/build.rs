//! Generates the gRPC client (tonic + prost) from the server's own
//! proto/grpc_service.proto with protox: one protocol definition for both ends.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "../server/proto/grpc_service.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["../server/proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .build_transport(false)
        .bytes(".inference")
        .compile_fds(descriptors)?;
    Ok(())
}
