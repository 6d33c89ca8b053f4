//! Shared helpers of the server's integration tests: a server started
//! in-process on 127.0.0.1 with OS-picked ports, and a minimal blocking HTTP/1.1
//! client over a raw `TcpStream`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use baton_server::{RunningServer, Server, ServerConfig};

/// The repository root.
pub fn repo_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// A pipeline file: `configs/NAME` in the repository, or `server/tests/configs/NAME`.
pub fn pipeline(name: &str) -> PathBuf {
    let shipped = repo_root().join("configs").join(name);
    if shipped.is_file() {
        return shipped;
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/configs").join(name);
    assert!(local.is_file(), "no pipeline {name} in configs/ or server/tests/configs/");
    local
}

/// A server running in-process on its own tokio runtime; shut down gracefully on drop.
pub struct TestServer {
    pub rt: tokio::runtime::Runtime,
    running: Option<RunningServer>,
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    pub metrics: SocketAddr,
}

impl TestServer {
    /// The server's models (and its in-flight bound).
    pub fn models(&self) -> &baton_server::models::Models {
        self.running.as_ref().expect("the server is running").models()
    }

    /// Serves the named pipelines (see [`pipeline`]) with `config`'s limits on ephemeral ports.
    pub fn start_with(pipelines: &[&str], config: ServerConfig) -> TestServer {
        Self::start_with_repository(pipelines, None, config)
    }

    /// [`TestServer::start_with`], serving the model repository `repository` too.
    pub fn start_with_repository(pipelines: &[&str], repository: Option<&Path>, config: ServerConfig) -> TestServer {
        baton_server::install_recorder();
        let engines = baton_engines::standard_registry();
        let runtimes = pipelines.iter().map(|p| {
            let path = pipeline(p);
            baton::Runtime::from_file(&path, &engines)
                .unwrap_or_else(|e| panic!("{}: {e} (has scripts/setup.sh run?)", path.display()))
        });
        let mut server = Server::new(config).models(runtimes.collect::<Vec<_>>());
        if let Some(dir) = repository {
            server = server.repository(dir, engines.clone());
        }
        Self::run(server)
    }

    /// Serves the model repository `repository` alone under model control `control`.
    pub fn start_with_control(
        repository: &Path,
        config: ServerConfig,
        control: baton_server::control::ModelControl,
    ) -> TestServer {
        baton_server::install_recorder();
        let engines = baton_engines::standard_registry();
        let server = Server::new(config).repository(repository, engines).model_control(control);
        Self::run(server)
    }

    /// Starts `server` on a tokio runtime of its own.
    fn run(server: Server) -> TestServer {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let running = rt.block_on(server.start()).expect("the server starts");
        TestServer {
            http: running.http_addr().unwrap(),
            grpc: running.grpc_addr().unwrap(),
            metrics: running.metrics_addr().unwrap(),
            running: Some(running),
            rt,
        }
    }

    pub fn start(pipelines: &[&str]) -> TestServer {
        Self::start_with(pipelines, ServerConfig::ephemeral())
    }

    /// Graceful shutdown (also done on drop).
    pub fn shutdown(&mut self) {
        if let Some(running) = self.running.take() {
            self.rt.block_on(running.shutdown());
        }
    }

    pub fn get(&self, path: &str) -> HttpResponse {
        request(self.http, "GET", path, &[], b"")
    }

    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> HttpResponse {
        request(self.http, "POST", path, &[("Content-Type", "application/json")], body.to_string().as_bytes())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A response: status, headers (lower-case names), body.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The `error` message of an error response.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().expect("an error message").to_string()
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResponse {
    try_request(addr, method, path, headers, body).expect("connect").expect("a response")
}

/// [`request`], telling a refused connection (`Err`) and a connection closed
/// without any response (`Ok(None)`) apart.
pub fn try_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Option<HttpResponse>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    // A reset here: connected into the backlog of a listener that has since closed.
    if stream.write_all(head.as_bytes()).is_err() {
        return Ok(None);
    }
    // The server may answer (413) before reading all of a large body: a write error is fine then.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    Ok((!raw.is_empty()).then(|| parse_response(&raw)))
}

fn parse_response(raw: &[u8]) -> HttpResponse {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no complete response head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    if let Some(len) = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse::<usize>().ok()) {
        body.truncate(len);
    }
    HttpResponse { status, headers, body }
}

/// `/metrics` text of the server.
pub fn metrics_text(server: &TestServer) -> String {
    String::from_utf8(request(server.metrics, "GET", "/metrics", &[], b"").body).unwrap()
}

/// The value of the Prometheus series `name{labels}` whose labels include all of `labels`, summed.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            if n != name {
                return None;
            }
            let ok = labels.iter().all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            ok.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

/// `.venv-client/bin/python` (tritonclient, numpy, onnxruntime), made by scripts/setup.sh.
pub fn client_python() -> PathBuf {
    let python = repo_root().join(".venv-client/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it runs scripts/setup-client.sh, which installs tritonclient[http,grpc], \
         numpy and onnxruntime into .venv-client)",
        python.display()
    );
    python
}

/// Runs `server/tests/python/SCRIPT` against `server` with `extra` arguments, up to
/// `limit`; panics with its output when it fails or runs past the limit.
pub fn run_client_script(script: &str, server: &TestServer, extra: &[&str], limit: Duration) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(script);
    let mut command = Command::new(client_python());
    command
        .arg(&path)
        .args(["--http", &server.http.to_string(), "--grpc", &server.grpc.to_string()])
        .args(["--metrics", &server.metrics.to_string()])
        .args(extra)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = run_to_end(command, script, limit);
    print!("{out}");
    out
}

/// [`run_client_script`] with a minute's limit; returns the script's stdout.
pub fn run_script_on(script: &str, server: &TestServer, extra: &[&str]) -> String {
    run_client_script(script, server, extra, Duration::from_secs(60))
}

/// Runs `command` to its end (killed past `limit`), its output drained while it runs;
/// panics naming `what` with the output unless it succeeds. Returns its stdout.
pub fn run_to_end(mut command: Command, what: &str, limit: Duration) -> String {
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    match status {
        Some(s) if s.success() => out,
        Some(s) => panic!("{what} failed ({s}):\n{out}\n{err}"),
        None => panic!("{what} ran past {limit:?}: killed\n{out}\n{err}"),
    }
}
