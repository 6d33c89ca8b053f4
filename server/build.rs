//! Generates the gRPC service (tonic + prost) from proto/grpc_service.proto
//! with protox, a pure-Rust protobuf compiler: no `protoc` needed; and the
//! messages of Triton's model configuration (proto/triton_model_config.proto),
//! with their descriptors for the text-format parser of `config.pbtxt`; the
//! service answers ModelConfig with those messages encoded (one definition).

use prost::Message;

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

    let triton = "proto/triton_model_config.proto";
    println!("cargo:rerun-if-changed={triton}");
    let descriptors = protox::compile([triton], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("triton_model_config.bin"), descriptors.encode_to_vec())?;
    tonic_prost_build::configure().build_client(false).build_server(false).compile_fds(descriptors)?;
    Ok(())
}
