//! Compiles apache/rocketmq-apis' .proto files (vendored in proto/) into the gRPC service and messages.
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let files = ["proto/apache/rocketmq/v2/service.proto"];
    println!("cargo:rerun-if-changed=proto");
    // protox parses the files (and the well-known google/protobuf types) without a protoc binary.
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
