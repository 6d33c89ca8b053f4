//! Remote stages over KServe v2 gRPC on loopback: a pipeline split over two
//! servers answers bitwise like the pipeline on one host; a stateful node's
//! state stays on the far side across chunks; a dead far server fails
//! requests within their deadlines naming node and endpoint, and service
//! resumes by itself when it is back. (Network namespaces standing in for
//! hosts: deploy/test-remote.sh.)

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton::{Request, RequestError, Runtime, Tensor};
use baton_scratch::Scratch;
use baton_server::{RunningServer, Server, ServerConfig};

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models").canonicalize().unwrap()
}

/// Writes `text` (with `MODELS` replaced by the models folder) to `dir/name` and starts it.
fn pipeline(dir: &Path, name: &str, text: &str) -> Runtime {
    let path = dir.join(name);
    std::fs::write(&path, text.replace("MODELS", &models().display().to_string())).unwrap();
    Runtime::from_file(&path, &baton_engines::standard_registry()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A far host: a `baton serve` of `runtime` on 127.0.0.1 (gRPC only), on `port` (0: any).
struct Far {
    network: tokio::runtime::Runtime,
    server: Option<RunningServer>,
}

impl Far {
    fn start(runtime: Runtime, port: u16) -> Far {
        let network = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let config = ServerConfig {
            http: None,
            metrics: None,
            grpc: Some(SocketAddr::from(([127, 0, 0, 1], port))),
            // Stopping stands for the host going away: open connections are not waited for.
            shutdown_grace: Duration::from_millis(100),
            ..ServerConfig::default()
        };
        let server = network.block_on(Server::new(config).model(runtime).start()).unwrap();
        Far { network, server: Some(server) }
    }

    fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().grpc_addr().unwrap()
    }

    fn stop(mut self) {
        let server = self.server.take().unwrap();
        self.network.block_on(server.shutdown());
    }
}

const DIAMOND_FAR: &str = r#"
[pipeline]
name = "diamond_branches"
[inputs.h]
to = ["branch_a.h", "branch_b.h"]
[outputs.a]
from = "branch_a.a"
[outputs.b]
from = "branch_b.b"
[nodes.branch_a]
stages = [{ model = "MODELS/branch_a.onnx" }]
[nodes.branch_b]
stages = [{ model = "MODELS/branch_b.onnx" }]
"#;

const DIAMOND_NEAR: &str = r#"
[pipeline]
name = "diamond"
[inputs.x]
to = ["embed.x"]
[outputs.out]
from = "join.out"
[outputs.features]
from = "embed.h"
[nodes.embed]
stages = [{ model = "MODELS/embed.onnx" }]
[nodes.branches]
stages = [{ remote = "grpc://FAR", model = "diamond_branches" }]
window = 2
[nodes.join]
stages = [{ model = "MODELS/join.onnx" }]
weight = 1.5
[[edges]]
from = "embed.h"
to = "branches.h"
[[edges]]
from = "branches.a"
to = "join.a"
[[edges]]
from = "branches.b"
to = "join.b"
"#;

fn diamond_input(i: usize) -> Tensor {
    let rows = 1 + i % 3;
    let values: Vec<f32> = (0..rows * 32).map(|k| ((i * 131 + k * 7) % 97) as f32 / 97.0 - 0.5).collect();
    Tensor::from_vec(vec![rows, 32], values).unwrap()
}

fn bytes_of(outputs: &baton::Outputs, name: &str) -> Vec<u8> {
    outputs.get(name).unwrap_or_else(|| panic!("no output `{name}`")).as_bytes().to_vec()
}

#[test]
fn the_diamond_split_over_two_servers_answers_bitwise_like_one_host() {
    let dir = Scratch::new("remote-diamond");
    let far = Far::start(pipeline(&dir, "far.toml", DIAMOND_FAR), 0);
    let near = pipeline(&dir, "near.toml", &DIAMOND_NEAR.replace("FAR", &far.addr().to_string()));
    let one_host = Runtime::from_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/diamond.toml"),
        &baton_engines::standard_registry(),
    )
    .unwrap();
    // Submitted together, so the remote node batches several requests per call.
    let split: Vec<_> = (0..64).map(|i| near.submit(Request::new().input("x", diamond_input(i)))).collect();
    for (i, ticket) in split.into_iter().enumerate() {
        let got = ticket.wait().unwrap_or_else(|e| panic!("request {i}: {e}"));
        let want = one_host.submit(Request::new().input("x", diamond_input(i))).wait().unwrap();
        for name in ["out", "features"] {
            assert_eq!(bytes_of(&got, name), bytes_of(&want, name), "request {i}, output {name}");
        }
    }
    let executions = near.node_stats().iter().find(|n| n.name == "branches").unwrap().executions;
    assert!(executions > 0, "the remote node ran");
    near.shutdown();
    far.stop();
}

const STATEFUL_NEAR: &str = r#"
[pipeline]
name = "stateful_near"
[streams]
idle_timeout_ms = 60000
[inputs.x]
to = ["rnn.x"]
[outputs.y]
from = "rnn.y"
[nodes.rnn]
stages = [{ remote = "grpc://FAR", model = "stateful", stateful = true }]
"#;

fn chunk(stream: usize, k: usize) -> Tensor {
    let values: Vec<f32> = (0..8).map(|j| ((stream * 17 + k * 5 + j) % 11) as f32 / 11.0 - 0.5).collect();
    Tensor::from_vec(vec![1, 8], values).unwrap()
}

#[test]
fn a_remote_stateful_node_keeps_each_streams_state_on_the_far_side() {
    let dir = Scratch::new("remote-stateful");
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/stateful.toml");
    let engines = baton_engines::standard_registry();
    let far = Far::start(Runtime::from_file(&configs, &engines).unwrap(), 0);
    let near = pipeline(&dir, "near.toml", &STATEFUL_NEAR.replace("FAR", &far.addr().to_string()));
    let one_host = Runtime::from_file(&configs, &engines).unwrap();
    let (streams, chunks) = (6, 5);
    // All streams' chunks submitted at once: chunks of one stream must still reach the far side in order.
    let mut split = Vec::new();
    for k in 0..chunks {
        for s in 0..streams {
            let request = Request::new().input("x", chunk(s, k)).stream(s as u64 + 1, k == 0, k == chunks - 1);
            split.push(((s, k), near.submit(request)));
        }
    }
    let mut got = std::collections::BTreeMap::new();
    for (key, ticket) in split {
        let outputs = ticket.wait().unwrap_or_else(|e| panic!("chunk {key:?}: {e}"));
        got.insert(key, bytes_of(&outputs, "y"));
    }
    for s in 0..streams {
        for k in 0..chunks {
            let request = Request::new().input("x", chunk(s, k)).stream(s as u64 + 1, k == 0, k == chunks - 1);
            let want = one_host.submit(request).wait().unwrap();
            assert_eq!(got[&(s, k)], bytes_of(&want, "y"), "stream {s}, chunk {k}");
        }
    }
    // The state is the far side's: its outputs change from chunk to chunk of one stream on equal inputs.
    let same = |k: usize| {
        let request = Request::new().input("x", chunk(0, 0)).stream(99, k == 0, false);
        bytes_of(&near.submit(request).wait().unwrap(), "y")
    };
    assert_ne!(same(0), same(1), "a second chunk saw the state the first left");
    near.shutdown();
    one_host.shutdown();
    far.stop();
}

const MLP_FAR: &str = r#"
[pipeline]
name = "mlp"
[inputs.input]
to = ["mlp.input"]
[outputs.output]
from = "mlp.output"
[nodes.mlp]
stages = [{ model = "MODELS/mlp.onnx" }]
"#;

const MLP_NEAR: &str = r#"
[pipeline]
name = "mlp_near"
[inputs.input]
to = ["far.input"]
[outputs.output]
from = "far.output"
[nodes.far]
stages = [{ remote = "grpc://FAR", model = "mlp" }]
"#;

fn mlp_request(deadline: Duration) -> Request {
    Request::new().input("input", Tensor::from_vec(vec![1, 256], vec![0.25f32; 256]).unwrap()).timeout(deadline)
}

#[test]
fn a_dead_far_server_fails_requests_within_their_deadline_and_service_resumes_when_it_is_back() {
    let dir = Scratch::new("remote-outage");
    let far = Far::start(pipeline(&dir, "far.toml", MLP_FAR), 0);
    let addr = far.addr();
    let near = pipeline(&dir, "near.toml", &MLP_NEAR.replace("FAR", &addr.to_string()));
    let deadline = Duration::from_millis(300);
    near.submit(mlp_request(deadline)).wait().expect("served while the far server is up");

    far.stop();
    let started = Instant::now();
    let tickets: Vec<_> = (0..16).map(|_| near.submit(mlp_request(deadline))).collect();
    for ticket in tickets {
        // Every request resolves: waiting far past its deadline would mean it hangs.
        let result = ticket.wait_timeout(deadline * 20).unwrap_or_else(|_| panic!("a request hangs past its deadline"));
        match result {
            Err(RequestError::Node { node, message }) => {
                assert_eq!(node, "far");
                assert!(message.contains(&format!("grpc://{addr}")), "names the endpoint: {message}");
            }
            Err(RequestError::DeadlineExceeded { node }) => assert_eq!(node, "far"),
            other => panic!("expected a failure naming the node, got {other:?}"),
        }
    }
    assert!(started.elapsed() < deadline * 20, "failures took {:?}", started.elapsed());

    // Back on the same port: the next requests are served with no action taken.
    let far = Far::start(pipeline(&dir, "far.toml", MLP_FAR), addr.port());
    near.submit(mlp_request(Duration::from_secs(10))).wait().expect("service resumed");
    near.shutdown();
    far.stop();
}

/// `baton check` on `text`: its exit code and what it printed.
fn check(dir: &Path, text: &str) -> (i32, String) {
    let path = dir.join("check.toml");
    std::fs::write(&path, text.replace("MODELS", &models().display().to_string())).unwrap();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_baton")).arg("check").arg(&path).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    (run.status.code().unwrap_or(-1), said)
}

#[test]
fn baton_check_names_the_node_and_endpoint_of_an_unreachable_remote_and_bad_remote_settings() {
    let dir = Scratch::new("remote-check");
    // Nothing listens on loopback port 9: the connection is refused at once.
    let (code, said) = check(&dir, &MLP_NEAR.replace("FAR", "127.0.0.1:9"));
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("nodes.far.stages[0]") && said.contains("model `mlp` at grpc://127.0.0.1:9"), "{said}");
    assert!(said.contains("lazy = true"), "says how to start without it: {said}");

    let lazy = MLP_NEAR.replace(
        "model = \"mlp\" }",
        "model = \"mlp\", lazy = true, params = { inputs = [{ name = \"input\", dtype = \"f32\", shape = [-1, 256] }], outputs = [{ name = \"output\", dtype = \"f32\", shape = [-1, 10] }] } }",
    );
    let (code, said) = check(&dir, &lazy.replace("FAR", "127.0.0.1:9"));
    assert_eq!(code, 0, "a lazy remote starts with its declared signature: {said}");

    for (edit, place, says) in [
        ("window = 0\n", "nodes.far.window", "at least 1"),
        ("workers = 2\n", "nodes.far.workers", "window"),
        ("cores = [0]\n", "nodes.far.cores", "no local cores"),
    ] {
        let text = MLP_NEAR
            .replace("FAR", "127.0.0.1:9")
            .replace("model = \"mlp\" }]\n", &format!("model = \"mlp\" }}]\n{edit}"));
        let (code, said) = check(&dir, &text);
        assert_eq!(code, 2, "{edit}: {said}");
        assert!(said.contains(place) && said.contains(says), "{edit}: {said}");
    }
    let local_window = MLP_FAR.replace("mlp.onnx\" }]\n", "mlp.onnx\" }]\nwindow = 2\n");
    let (code, said) = check(&dir, &local_window);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("nodes.mlp.window") && said.contains("remote nodes only"), "{said}");
}

#[test]
fn baton_plan_places_a_pipeline_on_hosts_with_either_placement() {
    let dir = Scratch::new("remote-plan");
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/diamond.toml");
    for placement in ["critical", "metis"] {
        let out = dir.join(placement);
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["plan", "--method", "partition", "-k", "2", "--hosts", "a=127.0.0.1:18001,b=127.0.0.1:18002"])
            .args(["--placement", placement, "--pipeline"])
            .arg(&pipeline)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{said}{}", String::from_utf8_lossy(&run.stderr));
        let home = std::fs::read_to_string(out.join("a.toml")).unwrap();
        let far = std::fs::read_to_string(out.join("b.toml")).unwrap();
        // The home host keeps the input node and calls the far host's pipeline through one remote node.
        assert!(home.contains("[nodes.embed]") && home.contains("[nodes.on_b]"), "{home}");
        assert!(
            home.contains("remote = \"grpc://127.0.0.1:18002\"") && home.contains("model = \"diamond_b\""),
            "{home}"
        );
        assert!(far.contains("name = \"diamond_b\"") && !far.contains("[nodes.embed]"), "{far}");
        // Both files are valid pipelines: the far one on its own, the home one once its far host answers.
        let far_runtime = pipeline_file(&out.join("b.toml"));
        let server = Far::start(far_runtime, 0);
        let home_text = home.replace("127.0.0.1:18002", &server.addr().to_string());
        std::fs::write(out.join("a.toml"), home_text).unwrap();
        let home_runtime = pipeline_file(&out.join("a.toml"));
        let answer = home_runtime.submit(Request::new().input("x", diamond_input(3))).wait().unwrap();
        assert_eq!(answer.get("out").unwrap().shape(), [diamond_input(3).shape()[0], 4]);
        home_runtime.shutdown();
        server.stop();
    }
}

fn pipeline_file(path: &Path) -> Runtime {
    Runtime::from_file(path, &baton_engines::standard_registry()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
