//! Who may do what on the server: restricted endpoint groups over HTTP and
//! gRPC (driven by tritonclient with `headers=`), TLS and mutual TLS with
//! certificates the test makes (tritonclient with `ssl=True`, curl
//! `--cacert`), and the model repository's fence against names and
//! symlinks that lead out of it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use baton_scratch::Scratch;
use baton_server::access::{Group, Restriction, Restrictions};
use baton_server::tls::TlsFiles;
use baton_server::ServerConfig;
use common::{repo_root, request, run_script_on, TestServer};

/// The rows the model `name`'s first node ran: the engine's work, counted by the runtime.
fn tasks_run(server: &TestServer, name: &str) -> u64 {
    let model = server.models().find(name, "").expect("the model is loaded");
    model.runtime().node_stats().iter().map(|n| n.tasks).sum()
}

fn restrictions(specs: &[&str]) -> Restrictions {
    Restrictions::new(specs.iter().map(|s| Restriction::parse(s).unwrap())).unwrap()
}

#[test]
fn every_group_is_refused_without_its_key_and_served_with_it_over_http_and_grpc() {
    let all_but_inference: Vec<&str> =
        Group::ALL.iter().filter(|g| **g != Group::Inference).map(|g| g.name()).collect();
    let http_admin = format!("{}:admin-key=a-s3cret", all_but_inference.join(","));
    let grpc_all = format!("{}:grpc-key=g-s3cret", Group::ALL.map(|g| g.name()).join(","));
    let config = ServerConfig {
        http_restricted: restrictions(&[&http_admin, "inference:infer-key=i-s3cret"]),
        grpc_restricted: restrictions(&[&grpc_all]),
        ..ServerConfig::ephemeral()
    };
    let server = TestServer::start_with(&["mlp.toml"], config);
    let mut keys = serde_json::json!({ "http": {}, "grpc": {} });
    for group in Group::ALL {
        let http = if group == Group::Inference { ["infer-key", "i-s3cret"] } else { ["admin-key", "a-s3cret"] };
        keys["http"][group.name()] = serde_json::json!(http);
        keys["grpc"][group.name()] = serde_json::json!(["grpc-key", "g-s3cret"]);
    }
    let out = run_script_on("test_access.py", &server, &["--keys", &keys.to_string()]);
    let count = |what: &str| -> u64 {
        let line = out.lines().find_map(|l| l.strip_prefix(what)).unwrap_or_else(|| panic!("no `{what}` in {out}"));
        line.trim().parse().unwrap()
    };
    assert_eq!(count("cells "), 2 * 9 * 5, "every group x (no key, 3 wrong keys, right key) x 2 protocols");
    // One request of one row with the right key per protocol; none of the refused ones ran.
    assert_eq!(count("inferences "), 2);
    assert_eq!(tasks_run(&server, "mlp"), 2, "the engine ran exactly the inferences that had the key");
    let metrics = String::from_utf8(request(server.metrics, "GET", "/metrics", &[], b"").body).unwrap();
    for secret in ["a-s3cret", "i-s3cret", "g-s3cret"] {
        assert!(!metrics.contains(secret), "the metrics show a key's value");
    }
}

#[test]
fn a_raw_http_path_is_checked_as_the_router_reads_it() {
    let config = ServerConfig {
        http_restricted: restrictions(&["model-repository,inference:k=v"]),
        ..ServerConfig::ephemeral()
    };
    let server = TestServer::start_with(&["mlp.toml"], config);
    let body = br#"{"inputs":[{"name":"input","datatype":"FP32","shape":[1,256],"data":[0]}]}"#;
    for path in
        ["/v2/repository/index", "/v2/repository/index/", "/v2/models/mlp/infer", "/v2/models/mlp/versions/1/infer"]
    {
        let answer = request(server.http, "POST", path, &[], body);
        assert_eq!(answer.status, 403, "{path}: {}", String::from_utf8_lossy(&answer.body));
    }
    // Paths no route reads as these endpoints are 404 with or without a key, and run nothing.
    for path in ["/v2//repository/index", "/v2/models/mlp/%69nfer", "/v2/models/mlp/../../repository/index"] {
        let answer = request(server.http, "POST", path, &[], body);
        assert_eq!(answer.status, 404, "{path}: {}", String::from_utf8_lossy(&answer.body));
    }
    assert_eq!(tasks_run(&server, "mlp"), 0);
    assert_eq!(server.get("/v2/health/live").status, 200, "an unrestricted group needs no key");
    // With the key it runs; the metrics endpoint shows no request data.
    let with_id = infer_json().replacen('{', r#"{"id":"request-id-7f3a9","#, 1);
    let answer = request(server.http, "POST", "/v2/models/mlp/infer", &[("k", "v")], with_id.as_bytes());
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert_eq!(tasks_run(&server, "mlp"), 1);
    let metrics = String::from_utf8(request(server.metrics, "GET", "/metrics", &[], b"").body).unwrap();
    assert!(metrics.contains("baton_"), "the metrics endpoint answers");
    assert!(!metrics.contains("request-id-7f3a9"), "the metrics show a request's id");
}

/// A CA, a server certificate for localhost and 127.0.0.1 signed by it, and a
/// client certificate signed by it, written as PEM files into `dir`.
struct Certificates {
    ca: PathBuf,
    server: TlsFiles,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn make_certificates(dir: &Path) -> Certificates {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "baton test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names).unwrap().signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(vec!["localhost".into(), "127.0.0.1".into()]);
    let (client_cert, client_key) = leaf(vec!["baton-test-client".into()]);
    Certificates {
        ca: write("ca.pem", ca_cert.pem()),
        server: TlsFiles {
            cert: write("server.pem", server_cert),
            key: write("server.key", server_key),
            client_ca: None,
        },
        client_cert: write("client.pem", client_cert),
        client_key: write("client.key", client_key),
    }
}

/// `curl` over HTTPS to `url` with `args`: (exit status, stdout).
fn curl(url: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "30"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs (it is installed with the system's packages)");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

const INFER_JSON: &str = r#"{"inputs":[{"name":"input","datatype":"FP32","shape":[1,256],"data":[0]}]}"#;

fn infer_json() -> String {
    let zeros = vec!["0"; 256].join(",");
    INFER_JSON.replace(r#""data":[0]"#, &format!(r#""data":[{zeros}]"#))
}

/// Whether a plain-text HTTP request to `addr` gets a plain-text HTTP answer.
fn plain_text_answered(addr: std::net::SocketAddr) -> bool {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let _ = stream.write_all(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer.starts_with(b"HTTP/")
}

#[test]
fn tls_serves_tritonclient_and_curl_and_refuses_plain_text() {
    let dir = Scratch::new("tls");
    let certs = make_certificates(&dir);
    let config = ServerConfig {
        http_tls: Some(certs.server.clone()),
        grpc_tls: Some(certs.server.clone()),
        ..ServerConfig::ephemeral()
    };
    let server = TestServer::start_with(&["mlp.toml"], config);
    run_script_on("test_tls.py", &server, &["--ca", certs.ca.to_str().unwrap()]);
    let url = format!("https://localhost:{}/v2/models/mlp/infer", server.http.port());
    let (status, body) = curl(&url, &["--cacert", certs.ca.to_str().unwrap(), "--data", &infer_json()]);
    assert_eq!(status, 0, "curl --cacert: {body}");
    assert!(body.contains(r#""name":"output""#), "{body}");
    let (status, _) = curl(&url, &["--data", &infer_json()]);
    assert_ne!(status, 0, "curl trusted a certificate of an unknown CA");
    assert!(!plain_text_answered(server.http), "plain text was answered in plain text on the TLS port");
}

#[test]
fn mutual_tls_refuses_a_client_without_a_certificate() {
    let dir = Scratch::new("mtls");
    let certs = make_certificates(&dir);
    let files = TlsFiles { client_ca: Some(certs.ca.clone()), ..certs.server.clone() };
    let config = ServerConfig { http_tls: Some(files.clone()), grpc_tls: Some(files), ..ServerConfig::ephemeral() };
    let server = TestServer::start_with(&["mlp.toml"], config);
    let (client_cert, client_key) = (certs.client_cert.to_str().unwrap(), certs.client_key.to_str().unwrap());
    run_script_on(
        "test_tls.py",
        &server,
        &["--ca", certs.ca.to_str().unwrap(), "--mutual", "--client-cert", client_cert, "--client-key", client_key],
    );
    let url = format!("https://localhost:{}/v2/models/mlp/infer", server.http.port());
    let ca = certs.ca.to_str().unwrap();
    let (status, _) = curl(&url, &["--cacert", ca, "--data", &infer_json()]);
    assert_ne!(status, 0, "curl without a client certificate was served");
    let (status, body) =
        curl(&url, &["--cacert", ca, "--cert", client_cert, "--key", client_key, "--data", &infer_json()]);
    assert_eq!(status, 0, "curl with a client certificate: {body}");
    assert!(body.contains(r#""name":"output""#), "{body}");
    assert_eq!(tasks_run(&server, "mlp"), 2, "one gRPC and one curl inference ran, no refused one");
}

#[test]
fn bad_tls_files_stop_the_start_naming_the_file() {
    let dir = Scratch::new("badtls");
    let certs = make_certificates(&dir);
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let cases = [
        (TlsFiles { cert: dir.join("missing.pem"), ..certs.server.clone() }, "missing.pem"),
        (TlsFiles { cert: garbage.clone(), ..certs.server.clone() }, "garbage.pem"),
        (TlsFiles { key: certs.client_key.clone(), ..certs.server.clone() }, "do not go together"),
        (TlsFiles { client_ca: Some(garbage.clone()), ..certs.server.clone() }, "garbage.pem"),
    ];
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for (files, named) in cases {
        for grpc in [false, true] {
            let config = if grpc {
                ServerConfig { grpc_tls: Some(files.clone()), ..ServerConfig::ephemeral() }
            } else {
                ServerConfig { http_tls: Some(files.clone()), ..ServerConfig::ephemeral() }
            };
            let error = rt.block_on(baton_server::Server::new(config).start()).err().expect("the start fails");
            assert!(error.to_string().contains(named), "grpc {grpc}: {error}");
        }
    }
}

#[test]
fn repository_names_and_symlinks_cannot_lead_out_of_it() {
    let dir = Scratch::new("fence-repo");
    let outside = Scratch::new("fence-outside");
    let shipped = std::fs::read_to_string(repo_root().join("configs/mlp.toml")).unwrap();
    let model = repo_root().join("models/mlp.onnx");
    let pipeline = shipped.replace("../models/mlp.onnx", model.to_str().unwrap());
    std::fs::write(outside.join("mlp.toml"), &pipeline).unwrap();
    std::os::unix::fs::symlink(outside.join("mlp.toml"), dir.join("mlp.toml")).unwrap();
    // The other models keep serving; this one is listed unavailable, saying why.
    let server = TestServer::start_with_repository(&[], Some(&dir), ServerConfig::ephemeral());
    let index = server.models().index().unwrap();
    let entry = index.iter().find(|e| e.name == "mlp").expect("the link is listed");
    assert_eq!(entry.state, "UNAVAILABLE");
    assert!(entry.reason.contains("leads out of the model repository"), "{}", entry.reason);
    assert!(server.models().list().is_empty(), "a pipeline file linked from outside was loaded");
    drop(server);

    std::fs::remove_file(dir.join("mlp.toml")).unwrap();
    let server = TestServer::start_with_repository(&[], Some(&dir), ServerConfig::ephemeral());
    for name in ["..", "..%2Fmlp", "%2E%2E"] {
        let answer = server.post_json(&format!("/v2/repository/models/{name}/load"), &serde_json::json!({}));
        assert!(answer.status == 404 || answer.status == 400, "{name}: {}", answer.status);
    }
    assert!(server.models().list().is_empty(), "a load by an escaping name loaded a model");
}

#[test]
fn version_folders_and_load_overrides_cannot_lead_out_of_a_model_folder() {
    let dir = Scratch::new("fence-triton");
    let outside = Scratch::new("fence-triton-outside");
    let mlp = repo_root().join("models/mlp.onnx");
    // `inner`: a config-less Triton model; `linked`: its version folder is a link out of the repository.
    std::fs::create_dir_all(dir.join("inner/1")).unwrap();
    std::fs::copy(&mlp, dir.join("inner/1/model.onnx")).unwrap();
    std::fs::create_dir_all(outside.join("1")).unwrap();
    std::fs::copy(&mlp, outside.join("1/model.onnx")).unwrap();
    std::fs::create_dir_all(dir.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("1"), dir.join("linked/1")).unwrap();
    let server = TestServer::start_with_repository(&[], Some(&dir), ServerConfig::ephemeral());
    let index = server.models().index().unwrap();
    let linked = index.iter().find(|e| e.name == "linked").expect("the linked model is listed");
    assert_eq!(linked.state, "UNAVAILABLE");
    assert!(linked.reason.contains("leads out"), "{}", linked.reason);
    assert!(server.models().get("inner").is_some(), "the model inside the repository serves");

    for filename in ["../../outside.onnx", "/etc/passwd", "..", "1/../../x.onnx"] {
        let config = serde_json::json!({ "default_model_filename": filename }).to_string();
        let body = serde_json::json!({ "parameters": { "config": config } });
        let answer = server.post_json("/v2/repository/models/inner/load", &body);
        assert_eq!(answer.status, 400, "{filename}: {}", String::from_utf8_lossy(&answer.body));
        assert!(answer.error().contains("default_model_filename"), "{filename}: {}", answer.error());
    }
    assert!(server.models().get("inner").is_some(), "a refused override leaves the model serving");
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(written, ["1"], "something was written outside the repository");
}
