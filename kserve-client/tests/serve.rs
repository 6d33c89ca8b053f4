//! The client against an in-process `baton serve` (127.0.0.1, OS-picked ports):
//! outputs bitwise equal to the in-process runtime's over HTTP and gRPC,
//! streams, typed errors naming the endpoint, deadlines, connection reuse.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::Runtime;
use baton_kserve_client::{Client, ClientOptions, ErrorKind, InferRequest, Tensor};
use baton_server::{RunningServer, Server, ServerConfig};

fn pipeline(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../configs").join(name)
}

fn runtime(name: &str) -> Runtime {
    let path = pipeline(name);
    Runtime::from_file(&path, &baton_engines::standard_registry())
        .unwrap_or_else(|e| panic!("{}: {e} (has scripts/setup.sh run?)", path.display()))
}

/// A server on its own tokio runtime, and that runtime for the client's calls.
struct Served {
    rt: tokio::runtime::Runtime,
    running: Option<RunningServer>,
    http: SocketAddr,
    grpc: SocketAddr,
}

impl Served {
    fn start(pipelines: &[&str]) -> Served {
        baton_server::install_recorder();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let server = Server::new(ServerConfig::ephemeral()).models(pipelines.iter().map(|p| runtime(p)));
        let running = rt.block_on(server.start()).expect("the server starts");
        Served { http: running.http_addr().unwrap(), grpc: running.grpc_addr().unwrap(), running: Some(running), rt }
    }

    fn clients(&self) -> [Client; 2] {
        let options = ClientOptions::default();
        [
            Client::new(&format!("http://{}", self.http), options.clone()).unwrap(),
            Client::new(&format!("grpc://{}", self.grpc), options).unwrap(),
        ]
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            self.rt.block_on(running.shutdown());
        }
    }
}

fn wire(name: &str, t: &baton::Tensor) -> Tensor {
    let shape = t.shape().iter().map(|&d| d as i64).collect();
    Tensor::new(name, baton_server::model::datatype_name(t.dtype()), shape, t.as_bytes().to_vec())
}

/// Seeded inputs for every input of `runtime`'s pipeline, `rows` rows.
fn inputs(runtime: &Runtime, rows: usize, seed: u64) -> Vec<(String, baton::Tensor)> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    runtime
        .spec()
        .inputs
        .iter()
        .map(|i| (i.spec.name.clone(), baton_bench::load::generate(&i.spec, rows, &mut rng).unwrap()))
        .collect()
}

#[test]
fn outputs_over_http_and_grpc_equal_the_in_process_runtime_bitwise() {
    let served = Served::start(&["mlp.toml", "dtypes.toml"]);
    for (model, file) in [("mlp", "mlp.toml"), ("dtypes", "dtypes.toml")] {
        let local = runtime(file);
        for (seed, rows) in [(1, 1), (2, 3)] {
            let inputs = inputs(&local, rows, seed);
            let mut request = baton::Request::new();
            for (name, t) in &inputs {
                request = request.input(name.clone(), t.clone());
            }
            let expected = local.submit(request).wait().expect("the in-process runtime answers");
            let wire_request = InferRequest::new(model, inputs.iter().map(|(n, t)| wire(n, t)).collect());
            for client in served.clients() {
                let answer = served.rt.block_on(client.infer(&wire_request)).unwrap();
                assert_eq!(answer.model, model);
                assert_eq!(answer.outputs.len(), expected.len(), "{} {model}", client.url());
                for (name, tensor) in expected.iter() {
                    let got = answer.output(name).unwrap_or_else(|| panic!("{}: no output {name}", client.url()));
                    assert_eq!(got, &wire(name, tensor), "{} {model} output {name} rows {rows}", client.url());
                }
            }
        }
        local.shutdown();
    }
}

#[test]
fn streams_carry_state_and_an_unknown_stream_is_refused_by_name() {
    let served = Served::start(&["stateful.toml"]);
    let local = runtime("stateful.toml");
    let chunks: Vec<_> = (0..4).map(|k| inputs(&local, 1, 10 + k)).collect();
    let expected: Vec<_> = chunks
        .iter()
        .enumerate()
        .map(|(k, inputs)| {
            let (name, t) = inputs[0].clone();
            local.submit(baton::Request::new().input(name, t).stream(1, k == 0, k == 3)).wait().unwrap()
        })
        .collect();
    for (c, client) in served.clients().iter().enumerate() {
        let id = 100 + c as u64;
        for (k, inputs) in chunks.iter().enumerate() {
            let request = InferRequest::new("stateful", inputs.iter().map(|(n, t)| wire(n, t)).collect()).sequence(
                id,
                k == 0,
                k == 3,
            );
            let answer = served.rt.block_on(client.infer(&request)).unwrap();
            assert_eq!(answer.output("y").unwrap(), &wire("y", expected[k].get("y").unwrap()), "chunk {k}");
        }
        // The stream ended: a further chunk (not a start) finds no stream.
        let late = InferRequest::new("stateful", chunks[0].iter().map(|(n, t)| wire(n, t)).collect())
            .sequence(id, false, false);
        let e = served.rt.block_on(client.infer(&late)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadRequest, "{e}");
        assert!(e.to_string().contains("unknown stream") && e.to_string().contains("restart"), "{e}");
        assert!(e.to_string().contains(&client.url().to_string()), "{e}");
    }
    local.shutdown();
}

#[test]
fn errors_name_the_endpoint_and_their_kind() {
    let served = Served::start(&["mlp.toml"]);
    for client in served.clients() {
        let e = served.rt.block_on(client.infer(&InferRequest::new("nope", vec![]))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains(&client.url().to_string()) && e.message().contains("nope"), "{e}");
        let wrong = Tensor::from_f32("input", vec![1, 3], &[0.0; 3]);
        let e = served.rt.block_on(client.infer(&InferRequest::new("mlp", vec![wrong]))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadRequest, "{e}");
        assert!(e.message().contains("shape"), "{e}");
        let torn = Tensor::new("input", "FP32", vec![1, 256], vec![0u8; 10]);
        let e = served.rt.block_on(client.infer(&InferRequest::new("mlp", vec![torn]))).unwrap_err();
        assert!(matches!(e, baton_kserve_client::Error::Request { .. }), "refused before sending: {e}");
        let meta = served.rt.block_on(client.model_metadata("mlp")).unwrap();
        assert_eq!((meta.inputs[0].name.as_str(), meta.inputs[0].shape.as_slice()), ("input", &[-1, 256][..]));
        assert!(served.rt.block_on(client.server_ready()).unwrap());
    }
    // Nothing listens on a port just released.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    for url in [format!("http://{free}"), format!("grpc://{free}")] {
        let client = Client::new(&url, ClientOptions::default()).unwrap();
        let e = served.rt.block_on(client.server_live()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        assert!(e.to_string().contains(&url), "{e}");
    }
    assert!(Client::new("tcp://x:1", ClientOptions::default()).unwrap_err().to_string().contains("tcp://x:1"));
}

#[test]
fn a_server_that_never_answers_meets_the_deadline() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // Accepts connections and holds them open, reading nothing.
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let options = ClientOptions { timeout: Duration::from_millis(300), ..ClientOptions::default() };
    for url in [format!("http://{addr}"), format!("grpc://{addr}")] {
        let client = Client::new(&url, options.clone()).unwrap();
        let request = InferRequest::new("mlp", vec![Tensor::from_f32("input", vec![1, 1], &[0.0])]);
        let e = rt.block_on(client.infer(&request)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Deadline, "{e}");
        assert!(e.to_string().contains(&url) && e.to_string().contains("300ms"), "{e}");
    }
}

/// Forwards connections to `to`, counting them.
async fn counting_proxy(to: SocketAddr, accepted: Arc<AtomicUsize>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    addr
}

#[test]
fn calls_reuse_connections() {
    let served = Served::start(&["mlp.toml"]);
    let input = Tensor::from_f32("input", vec![1, 256], &[0.25; 256]);
    for (target, scheme) in [(served.http, "http"), (served.grpc, "grpc")] {
        let accepted = Arc::new(AtomicUsize::new(0));
        let proxy = served.rt.block_on(counting_proxy(target, Arc::clone(&accepted)));
        let client = Client::new(&format!("{scheme}://{proxy}"), ClientOptions::default()).unwrap();
        for _ in 0..20 {
            served.rt.block_on(client.infer(&InferRequest::new("mlp", vec![input.clone()]))).unwrap();
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "{scheme}: 20 calls in turn, one connection");
        // Overlapping calls: HTTP/1.1 opens one connection per call in flight, gRPC multiplexes.
        let calls = (0..8).map(|_| {
            let (client, input) = (client.clone(), input.clone());
            served.rt.spawn(async move { client.infer(&InferRequest::new("mlp", vec![input])).await })
        });
        for call in calls.collect::<Vec<_>>() {
            served.rt.block_on(call).unwrap().unwrap();
        }
        let after = accepted.load(Ordering::SeqCst);
        match scheme {
            "grpc" => assert_eq!(after, 1, "gRPC multiplexes on its one connection"),
            _ => assert!((1..=8).contains(&after), "HTTP: at most one connection per call in flight, got {after}"),
        }
    }
}

/// A pipeline of one remote node running model `strings` at `url` (grpc://; the server's strings.toml).
fn remote_strings(url: &str) -> Runtime {
    let text = format!(
        "[pipeline]\nname = \"far\"\n\n[inputs.text]\nto = [\"far.text\"]\n[inputs.number]\nto = [\"far.number\"]\n\n\
         [outputs.shout]\nfrom = \"far.shout\"\n[outputs.value]\nfrom = \"far.value\"\n\n\
         [nodes.far]\nstages = [{{ remote = \"{url}\", model = \"strings\" }}]\n"
    );
    let config = baton::PipelineConfig::parse(&text).unwrap();
    Runtime::from_config(&config, None, &baton_engines::standard_registry()).expect("the remote pipeline starts")
}

#[test]
fn bytes_tensors_over_http_grpc_and_remote_nodes_equal_the_in_process_runtime() {
    let served = Served::start(&["strings.toml"]);
    let local = runtime("strings.toml");
    let text = baton::Tensor::from_strings(vec![2, 2], [&b"baton"[..], b"\xff\0raw", "数据".as_bytes(), b""]).unwrap();
    let number = baton::Tensor::from_strings(vec![2, 1], ["4.5", "-1"]).unwrap();
    let request = baton::Request::new().input("text", text.clone()).input("number", number.clone());
    let expected = local.submit(request).wait().expect("the in-process runtime answers");
    local.shutdown();
    let wire = |name: &str, t: &baton::Tensor| {
        let strings = t.as_strings().unwrap();
        Tensor::from_strings(name, t.shape().iter().map(|&d| d as i64).collect(), strings.iter())
    };
    let wire_request = InferRequest::new("strings", vec![wire("text", &text), wire("number", &number)]);
    for client in served.clients() {
        let answer = served.rt.block_on(client.infer(&wire_request)).unwrap();
        for (name, tensor) in expected.iter().filter(|(_, t)| t.dtype() == baton::DType::Bytes) {
            let got = answer.output(name).unwrap_or_else(|| panic!("{}: no output {name}", client.url()));
            assert_eq!(got, &wire(name, tensor), "{} output {name}", client.url());
        }
    }
    // A remote node (gRPC) sends BYTES inputs and reads BYTES outputs length-prefixed.
    let far = remote_strings(&format!("grpc://{}", served.grpc));
    let request = baton::Request::new().input("text", text.clone()).input("number", number.clone());
    let answer = far.submit(request).wait().expect("the remote pipeline answers");
    far.shutdown();
    assert_eq!(answer.get("shout"), expected.get("shout"), "remote BYTES output");
    assert_eq!(answer.get("value"), expected.get("value"), "remote numeric output");
}
