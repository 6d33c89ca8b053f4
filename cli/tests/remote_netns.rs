//! Pipelines split over two hosts by `baton plan --hosts`, with a network
//! namespace standing in for the far host: the far host's `baton serve` runs
//! inside it, reached over a veth pair; the home pipeline runs in this
//! process. Each test creates its namespace and removes it (on panic too),
//! and skips, saying why, where namespaces cannot be made (not root, no `ip`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton::{Request, RequestError, Runtime, Tensor};
use baton_scratch::Scratch;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A far host: a network namespace linked to this one by a veth pair,
/// 10.18.SUBNET.1 here and 10.18.SUBNET.2 there.
struct FarHost {
    name: String,
    here: String,
    there: String,
}

impl FarHost {
    /// The namespace, or why it cannot be made.
    fn create(subnet: u8) -> Result<FarHost, String> {
        let id = std::process::id() % 100_000;
        let host = FarHost {
            name: format!("baton-far-{id}-{subnet}"),
            here: format!("10.18.{subnet}.1"),
            there: format!("10.18.{subnet}.2"),
        };
        let (near_link, far_link) = (format!("bn{id}x{subnet}"), format!("bf{id}x{subnet}"));
        ip(&["netns", "add", &host.name])?;
        // From here on, dropping `host` removes the namespace (and with it both ends of the pair).
        ip(&["link", "add", &near_link, "type", "veth", "peer", "name", &far_link])?;
        ip(&["link", "set", &far_link, "netns", &host.name])?;
        ip(&["addr", "add", &format!("{}/24", host.here), "dev", &near_link])?;
        ip(&["link", "set", &near_link, "up"])?;
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &host.name, "ip"];
            all.extend(args);
            ip(&all)
        };
        inside(&["addr", "add", &format!("{}/24", host.there), "dev", &far_link])?;
        inside(&["link", "set", &far_link, "up"])?;
        inside(&["link", "set", "lo", "up"])?;
        Ok(host)
    }

    /// `baton serve PIPELINE` inside the namespace on THERE:8001, once it answers ServerReady.
    fn serve(&self, pipeline: &Path) -> Server {
        let grpc = format!("{}:8001", self.there);
        let child = Command::new("ip")
            .args(["netns", "exec", &self.name, env!("CARGO_BIN_EXE_baton"), "serve"])
            .arg(pipeline)
            .args(["--grpc", &grpc, "--http", "off", "--metrics", "off"])
            .stdout(Stdio::null())
            .spawn()
            .expect("baton serve starts");
        let mut server = Server { child };
        server.wait_ready(&grpc);
        server
    }
}

impl Drop for FarHost {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A far `baton serve`, killed when dropped.
struct Server {
    child: Child,
}

impl Server {
    fn wait_ready(&mut self, grpc: &str) {
        let network = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let client = baton_kserve_client::Client::new(&format!("grpc://{grpc}"), Default::default()).unwrap();
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("baton serve exited before it was ready: {status}");
            }
            if network.block_on(client.server_ready()).unwrap_or(false) {
                return;
            }
            assert!(Instant::now() < give_up, "baton serve at {grpc} not ready within 60 s");
            std::thread::sleep(Duration::from_millis(20)); // polling a condition, not guessing a time
        }
    }

    /// Kills it at once, as a host going down would.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The far host, or `None` after printing why the test is skipped.
fn far_host(subnet: u8) -> Option<FarHost> {
    match FarHost::create(subnet) {
        Ok(host) => Some(host),
        Err(why) => {
            eprintln!("skipped: cannot create a network namespace for the far host: {why}");
            None
        }
    }
}

/// `baton plan --method partition -k 2 --hosts a=...,b=...` of `pipeline` into a fresh folder.
fn plan(pipeline: &str, far: &FarHost, extra: &[&str]) -> Scratch {
    let out = Scratch::new(&format!("netns-{}", far.name));
    let hosts = format!("a={}:8001,b={}:8001", far.here, far.there);
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["plan", "--method", "partition", "-k", "2", "--hosts", &hosts])
        .arg("--pipeline")
        .arg(root().join(pipeline))
        .arg("--out")
        .arg(out.as_os_str())
        .args(extra)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{said}");
    out
}

fn start(path: &Path) -> Runtime {
    Runtime::from_file(path, &baton_stages::collab::registry()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn diamond_input(i: usize) -> Tensor {
    let rows = 1 + i % 3;
    let values: Vec<f32> = (0..rows * 32).map(|k| ((i * 131 + k * 7) % 97) as f32 / 97.0 - 0.5).collect();
    Tensor::from_vec(vec![rows, 32], values).unwrap()
}

fn diamond_bytes(runtime: &Runtime, i: usize) -> Result<Vec<Vec<u8>>, RequestError> {
    let outputs = runtime.submit(Request::new().input("x", diamond_input(i))).wait()?;
    Ok(["out", "features"].iter().map(|n| outputs.get(n).unwrap().as_bytes().to_vec()).collect())
}

#[test]
fn the_diamond_split_over_two_hosts_answers_bitwise_like_one_host_and_survives_the_far_host_going_down() {
    let Some(far) = far_host(1) else { return };
    let dir = plan("configs/diamond.toml", &far, &[]);
    let server = far.serve(&dir.join("b.toml"));
    let home = start(&dir.join("a.toml"));
    let one_host = start(&root().join("configs/diamond.toml"));
    let tickets: Vec<_> = (0..48).map(|i| home.submit(Request::new().input("x", diamond_input(i)))).collect();
    for (i, ticket) in tickets.into_iter().enumerate() {
        let outputs = ticket.wait().unwrap_or_else(|e| panic!("request {i}: {e}"));
        let got: Vec<Vec<u8>> =
            ["out", "features"].iter().map(|n| outputs.get(n).unwrap().as_bytes().to_vec()).collect();
        assert_eq!(got, diamond_bytes(&one_host, i).unwrap(), "request {i}");
    }

    server.kill();
    let deadline = Duration::from_millis(400);
    let tickets: Vec<_> =
        (0..16).map(|i| home.submit(Request::new().input("x", diamond_input(i)).timeout(deadline))).collect();
    let endpoint = format!("grpc://{}:8001", far.there);
    for ticket in tickets {
        match ticket.wait_timeout(deadline * 25).unwrap_or_else(|_| panic!("a request hangs past its deadline")) {
            Err(RequestError::Node { node, message }) => {
                assert!(node.starts_with("on_b"), "{node}");
                assert!(message.contains(&endpoint), "names the endpoint: {message}");
            }
            Err(RequestError::DeadlineExceeded { .. }) => {}
            other => panic!("expected a failure while the far host is down, got {other:?}"),
        }
    }

    let _server = far.serve(&dir.join("b.toml"));
    assert_eq!(diamond_bytes(&home, 7).expect("service resumed by itself"), diamond_bytes(&one_host, 7).unwrap());
    home.shutdown();
}

#[test]
fn the_collab_pipeline_split_over_two_hosts_answers_bitwise_like_one_host() {
    use baton_stages::collab::session::{stream_session, Sessions};
    let Some(far) = far_host(2) else { return };
    let dir = plan("configs/collab.toml", &far, &[]);
    let placed = std::fs::read_to_string(dir.join("b.toml")).unwrap();
    assert!(placed.contains("[nodes.text]"), "the heavy OCR node goes to the far host:\n{placed}");
    let _server = far.serve(&dir.join("b.toml"));
    let home = start(&dir.join("a.toml"));
    let one_host = start(&root().join("configs/collab.toml"));
    let sessions = Sessions::load(&root().join("data")).unwrap();
    // One session at a time on both, so every batch (and its padding) is the same.
    for (i, session) in sessions.sessions.iter().take(4).enumerate() {
        let got = stream_session(&home, session, i as u64 + 1).unwrap();
        let want = stream_session(&one_host, session, i as u64 + 1).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got.speech_prob), bits(&want.speech_prob), "session {}", session.id);
        assert_eq!(got.text, want.text, "session {}", session.id);
        assert_eq!((got.category, bits(&got.probabilities)), (want.category, bits(&want.probabilities)));
    }
    home.shutdown();
}
