//! The HTTP front end end to end: a server started in-process on 127.0.0.1
//! (ports picked by the OS) and a raw HTTP/1.1 client: health, metadata,
//! JSON and binary inference, parameters, the error cases, overload,
//! metrics and graceful shutdown. Needs scripts/setup.sh (ONNX Runtime, models).

mod common;

use std::time::{Duration, Instant};

use baton::{Request, Runtime, Tensor};
use baton_server::ServerConfig;
use common::{metric, metrics_text, pipeline, request, TestServer};
use serde_json::{json, Value};

fn mlp_input(rows: usize, seed: f32) -> Vec<f32> {
    (0..rows * 256).map(|i| ((i as f32) * 0.37 + seed).sin()).collect()
}

/// The answer of `configs/NAME` run straight through a Baton runtime (no server).
fn direct(config: &str, inputs: Vec<(&str, Tensor)>) -> baton::Outputs {
    let runtime = Runtime::from_file(&pipeline(config), &baton_engines::standard_registry()).unwrap();
    let request = inputs.into_iter().fold(Request::new(), |r, (n, t)| r.input(n, t));
    let outputs = runtime.submit(request).wait().unwrap();
    runtime.shutdown();
    outputs
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

#[test]
fn health_and_server_metadata() {
    let server = TestServer::start(&["mlp.toml"]);
    let live = server.get("/v2/health/live");
    assert_eq!((live.status, live.json()), (200, json!({ "live": true })));
    let ready = server.get("/v2/health/ready");
    assert_eq!((ready.status, ready.json()), (200, json!({ "ready": true })));
    let meta = server.get("/v2");
    assert_eq!(meta.status, 200);
    let meta = meta.json();
    assert_eq!(meta["name"], "baton");
    assert!(meta["extensions"].as_array().unwrap().contains(&json!("binary_tensor_data")));
    let wrong_method = server.get("/v2/models/mlp/infer");
    assert_eq!(wrong_method.status, 405);
    assert!(wrong_method.error().contains("method not allowed"));
    let missing = server.get("/v3/nothing");
    assert_eq!(missing.status, 404);
    assert!(missing.error().contains("no such endpoint: GET /v3/nothing"), "{}", missing.error());
}

#[test]
fn model_metadata_and_readiness() {
    let server = TestServer::start(&["mlp.toml", "two_io.toml"]);
    let meta = server.get("/v2/models/mlp");
    assert_eq!(meta.status, 200);
    assert_eq!(
        meta.json(),
        json!({
            "name": "mlp", "versions": ["1"], "platform": "baton",
            "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 256]}],
            "outputs": [{"name": "output", "datatype": "FP32", "shape": [-1, 10]}],
        })
    );
    assert_eq!(server.get("/v2/models/mlp/versions/1").json(), meta.json());
    assert_eq!(server.get("/v2/models/two_io").json()["inputs"].as_array().unwrap().len(), 2);
    let ready = server.get("/v2/models/mlp/ready");
    assert_eq!((ready.status, ready.json()), (200, json!({ "name": "mlp", "ready": true })));
    assert_eq!(server.get("/v2/models/mlp/versions/1/ready").json(), json!({ "name": "mlp", "ready": true }));
    let v2 = server.get("/v2/models/mlp/versions/2");
    assert_eq!(v2.status, 404);
    assert!(v2.error().contains("unknown version `2`"), "{}", v2.error());
    assert_eq!(server.get("/v2/models/nope/ready").status, 404);
    let unknown = server.get("/v2/models/nope");
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.error(), "unknown model `nope`");
}

#[test]
fn json_infer_equals_the_runtime_run_directly() {
    let server = TestServer::start(&["mlp.toml"]);
    let x = mlp_input(3, 0.25);
    let expected = direct("mlp.toml", vec![("input", Tensor::from_vec(vec![3, 256], x.clone()).unwrap())]);
    let expected = expected.get("output").unwrap().as_slice::<f32>().unwrap().to_vec();

    // Flat data, with an id and the version route.
    let body = json!({"id": "r1", "inputs": [{"name": "input", "shape": [3, 256], "datatype": "FP32", "data": x}]});
    let r = server.post_json("/v2/models/mlp/versions/1/infer", &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let out = r.json();
    assert_eq!(out["id"], "r1");
    assert_eq!(out["model_name"], "mlp");
    assert_eq!(out["model_version"], "1");
    assert_eq!(out["outputs"][0]["name"], "output");
    assert_eq!(out["outputs"][0]["datatype"], "FP32");
    assert_eq!(out["outputs"][0]["shape"], json!([3, 10]));
    assert_eq!(floats(&out["outputs"][0]["data"]), expected, "JSON floats round-trip exactly");

    // Nested data (row-major), priority and a generous timeout: the same answer.
    let nested: Vec<Vec<f32>> = x.chunks(256).map(|c| c.to_vec()).collect();
    let body = json!({
        "parameters": {"priority": 1, "timeout": 5_000_000},
        "inputs": [{"name": "input", "shape": [3, 256], "datatype": "FP32", "data": nested}],
    });
    let r = server.post_json("/v2/models/mlp/infer", &body);
    assert_eq!(r.status, 200);
    assert_eq!(floats(&r.json()["outputs"][0]["data"]), expected);
}

#[test]
fn binary_tensors_and_requested_outputs() {
    let server = TestServer::start(&["two_io.toml"]);
    let a: Vec<f32> = (0..32).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..32).map(|i| 1.0 - i as f32 * 0.25).collect();
    let expected = direct(
        "two_io.toml",
        vec![
            ("a", Tensor::from_vec(vec![2, 16], a.clone()).unwrap()),
            ("b", Tensor::from_vec(vec![2, 16], b.clone()).unwrap()),
        ],
    );

    // `a` binary, `b` JSON; only `sum` asked for, as binary.
    let header = json!({
        "inputs": [
            {"name": "a", "shape": [2, 16], "datatype": "FP32", "parameters": {"binary_data_size": 128}},
            {"name": "b", "shape": [2, 16], "datatype": "FP32", "data": b},
        ],
        "outputs": [{"name": "sum", "parameters": {"binary_data": true}}],
    })
    .to_string();
    let mut body = header.clone().into_bytes();
    body.extend(a.iter().flat_map(|v| v.to_le_bytes()));
    let len = header.len().to_string();
    let r = request(
        server.http,
        "POST",
        "/v2/models/two_io/infer",
        &[("Content-Type", "application/octet-stream"), ("Inference-Header-Content-Length", &len)],
        &body,
    );
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    let json_len: usize = r.header("inference-header-content-length").expect("binary answer header").parse().unwrap();
    let head: Value = serde_json::from_slice(&r.body[..json_len]).unwrap();
    let outputs = head["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 1, "only the requested output: {head}");
    assert_eq!(outputs[0]["name"], "sum");
    assert_eq!(outputs[0]["parameters"]["binary_data_size"], 128);
    assert!(outputs[0].get("data").is_none());
    let sum: Vec<f32> = r.body[json_len..].chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(sum, expected.get("sum").unwrap().as_slice::<f32>().unwrap());

    // binary_data_output for all outputs, both come back, in model order.
    let body = json!({
        "parameters": {"binary_data_output": true},
        "inputs": [
            {"name": "a", "shape": [2, 16], "datatype": "FP32", "data": a},
            {"name": "b", "shape": [2, 16], "datatype": "FP32", "data": b},
        ],
    });
    let r = server.post_json("/v2/models/two_io/infer", &body);
    assert_eq!(r.status, 200);
    let json_len: usize = r.header("inference-header-content-length").unwrap().parse().unwrap();
    let head: Value = serde_json::from_slice(&r.body[..json_len]).unwrap();
    let sizes: usize = head["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["parameters"]["binary_data_size"].as_u64().unwrap() as usize)
        .sum();
    assert_eq!(sizes, r.body.len() - json_len);
    assert_eq!(sizes, (2 * 16 + 2 * 4) * 4);
}

#[test]
fn errors_are_answered_as_the_protocol_says_and_nothing_else_is_affected() {
    let config = ServerConfig { max_body_bytes: 100_000, ..ServerConfig::ephemeral() };
    let server = TestServer::start_with(&["mlp.toml", "stateful.toml"], config);
    let x = mlp_input(1, 0.0);
    let good = json!({"inputs": [{"name": "input", "shape": [1, 256], "datatype": "FP32", "data": x}]});
    let cases = tensor_error_cases(&good).into_iter().chain(request_error_cases(&good));
    for (what, path, body, status, message) in cases {
        let mut headers = vec![("Content-Type", "application/json")];
        match what {
            "bad header length" => headers.push(("Inference-Header-Content-Length", "100000")),
            "header length inside the JSON" => headers.push(("Inference-Header-Content-Length", "20")),
            _ => {}
        }
        let r = request(server.http, "POST", path, &headers, &body);
        assert_eq!(r.status, status, "{what}: {:?}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.header("content-type"), Some("application/json"), "{what}");
        assert!(r.error().contains(message), "{what}: {:?} lacks {message:?}", r.error());
        // The server is unaffected: a good request still works.
        assert_eq!(server.post_json("/v2/models/mlp/infer", &good).status, 200, "after {what}");
    }
}

/// A bad request: what it is, its path, its body, the status it gets and a part of its message.
type ErrorCase = (&'static str, &'static str, Vec<u8>, u16, &'static str);

/// One-input infer bodies for mlp.
fn one_input(name: &str, shape: Value, datatype: &str, data: Value) -> Value {
    json!({"inputs": [{"name": name, "shape": shape, "datatype": datatype, "data": data}]})
}

/// Requests whose tensors do not fit the model (`good` is one that does).
fn tensor_error_cases(good: &Value) -> Vec<ErrorCase> {
    let x = mlp_input(1, 0.0);
    let input = one_input;
    let mut past_fp32: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    past_fp32[3] = 1e39;
    vec![
        ("unknown model", "/v2/models/nope/infer", good.to_string().into(), 404, "unknown model `nope`"),
        (
            "wrong name",
            "/v2/models/mlp/infer",
            input("x", json!([1, 256]), "FP32", json!(x)).to_string().into(),
            400,
            "unknown input `x`",
        ),
        (
            "wrong dtype",
            "/v2/models/mlp/infer",
            input("input", json!([1, 256]), "INT64", json!(vec![1; 256])).to_string().into(),
            400,
            "has datatype INT64 but model `mlp` takes FP32",
        ),
        (
            "unsupported dtype",
            "/v2/models/mlp/infer",
            input("input", json!([1, 256]), "FP8", json!(x)).to_string().into(),
            400,
            "not a datatype Baton supports",
        ),
        (
            "wrong shape",
            "/v2/models/mlp/infer",
            input("input", json!([1, 255]), "FP32", json!(&x[..255])).to_string().into(),
            400,
            "has shape [1, 255] but model `mlp` takes [-1, 256]",
        ),
        (
            "data count",
            "/v2/models/mlp/infer",
            input("input", json!([2, 256]), "FP32", json!(x)).to_string().into(),
            400,
            "(512 elements) but its data holds 256",
        ),
        (
            "bool as float",
            "/v2/models/mlp/infer",
            input("input", json!([1, 256]), "FP32", json!(vec![true; 256])).to_string().into(),
            400,
            "input `input`: element 0 (true) is not a number",
        ),
        (
            "float past FP32",
            "/v2/models/mlp/infer",
            input("input", json!([1, 256]), "FP32", json!(past_fp32)).to_string().into(),
            400,
            "input `input`: element 3 (1000000000000000000000000000000000000000) is out of the FP32 range",
        ),
    ]
}

/// Requests malformed as HTTP or JSON, or wrong for the model's sequence or outputs.
fn request_error_cases(good: &Value) -> Vec<ErrorCase> {
    let input = one_input;
    vec![
        ("malformed JSON", "/v2/models/mlp/infer", b"{\"inputs\": [".to_vec(), 400, "malformed JSON"),
        ("not an object", "/v2/models/mlp/infer", b"[1, 2]".to_vec(), 400, "malformed JSON"),
        ("too large", "/v2/models/mlp/infer", vec![b' '; 200_000], 413, "over the server's limit of 100000 bytes"),
        (
            "a string sequence id never started",
            "/v2/models/stateful/infer",
            json!({"parameters": {"sequence_id": "abc"},
                   "inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": vec![0.0f32; 8]}]})
            .to_string()
            .into(),
            400,
            "unknown sequence \"abc\"",
        ),
        (
            "an integer sequence id in the string ids' keys",
            "/v2/models/stateful/infer",
            json!({"parameters": {"sequence_id": 1u64 << 63, "sequence_start": true},
                   "inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": vec![0.0f32; 8]}]})
            .to_string()
            .into(),
            400,
            "keeps integer sequence ids below 9223372036854775808",
        ),
        (
            "no sequence for a stateful model",
            "/v2/models/stateful/infer",
            input("x", json!([1, 8]), "FP32", json!(vec![0.0f32; 8])).to_string().into(),
            400,
            "keeps per-stream state",
        ),
        (
            "sequence not started",
            "/v2/models/stateful/infer",
            json!({"parameters": {"sequence_id": 99},
                   "inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": vec![0.0f32; 8]}]})
            .to_string()
            .into(),
            400,
            "stream 99: not open",
        ),
        (
            "unknown output",
            "/v2/models/mlp/infer",
            json!({"inputs": good["inputs"], "outputs": [{"name": "nope"}]}).to_string().into(),
            400,
            "unknown output `nope`",
        ),
        (
            "bad header length",
            "/v2/models/mlp/infer",
            good.to_string().into(),
            400,
            "inference-header-content-length is 100000",
        ),
        (
            "header length inside the JSON",
            "/v2/models/mlp/infer",
            good.to_string().into(),
            400,
            "the first 20 bytes (inference-header-content-length)",
        ),
    ]
}

#[test]
fn timeout_parameter_is_a_deadline() {
    let server = TestServer::start(&["slow_small.toml"]);
    let body = json!({
        "parameters": {"timeout": 1},
        "inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32", "data": vec![0.5f32; 64]}],
    });
    let r = server.post_json("/v2/models/slow_small/infer", &body);
    assert_eq!(r.status, 504, "{:?}", String::from_utf8_lossy(&r.body));
    assert!(r.error().contains("deadline exceeded"), "{}", r.error());
}

#[test]
fn overload_is_refused_at_once_with_429() {
    // slow_small admits 2 requests at once; 12 clients with 8 rows each overrun it.
    let server = TestServer::start(&["slow_small.toml"]);
    let body = json!({"inputs": [{"name": "x", "shape": [8, 64], "datatype": "FP32", "data": vec![0.25f32; 8 * 64]}]});
    let results: Vec<(u16, Duration, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..12)
            .map(|_| {
                s.spawn(|| {
                    (0..10)
                        .map(|_| {
                            let t = Instant::now();
                            let r = server.post_json("/v2/models/slow_small/infer", &body);
                            let error = if r.status == 200 { String::new() } else { r.error() };
                            (r.status, t.elapsed(), error)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let ok = results.iter().filter(|r| r.0 == 200).count();
    let refused: Vec<_> = results.iter().filter(|r| r.0 == 429).collect();
    assert_eq!(ok + refused.len(), results.len(), "only 200 and 429: {results:?}");
    assert!(ok > 0 && !refused.is_empty(), "{ok} ok, {} refused", refused.len());
    assert!(refused.iter().all(|r| r.2.contains("queue full")), "{:?}", refused[0]);
    let mut times: Vec<Duration> = refused.iter().map(|r| r.1).collect();
    times.sort();
    assert!(
        times[times.len() / 2] < Duration::from_millis(50),
        "refusals answer at once: median {:?}",
        times[times.len() / 2]
    );
    // Afterwards the model serves normally.
    assert_eq!(server.post_json("/v2/models/slow_small/infer", &body).status, 200);
}

#[test]
fn server_wide_in_flight_limit_refuses_with_429() {
    let config = ServerConfig { max_in_flight: Some(1), ..ServerConfig::ephemeral() };
    let server = TestServer::start_with(&["mlp.toml"], config);
    let body =
        json!({"inputs": [{"name": "input", "shape": [32, 256], "datatype": "FP32", "data": vec![0.5f32; 32 * 256]}]});
    let answers: Vec<(u16, Option<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    (0..20)
                        .map(|_| {
                            let r = server.post_json("/v2/models/mlp/infer", &body);
                            (r.status, r.header("retry-after").map(str::to_string))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert!(statuses.iter().all(|&s| s == 200 || s == 429), "{statuses:?}");
    assert!(statuses.contains(&429) && statuses.contains(&200), "{statuses:?}");
    for (status, retry_after) in &answers {
        let expected = (*status == 429).then_some("1");
        assert_eq!(retry_after.as_deref(), expected, "a 429, and only a 429, says when to retry");
    }
}

#[test]
fn the_default_in_flight_bound_is_sized_from_the_models() {
    // mlp: one node, one worker, max_batch 32: 32 x 5 = 160 rows, under the floor of 256.
    let server = TestServer::start(&["mlp.toml"]);
    assert_eq!(server.models().in_flight_limit(), 256);
    drop(server);
    // With diamond's four nodes (one worker, max_batch 32 each) beside it: (32 + 4 x 32) x 5.
    let server = TestServer::start(&["mlp.toml", "diamond.toml"]);
    assert_eq!(server.models().in_flight_limit(), 800);
    // A given bound wins.
    let config = ServerConfig { max_in_flight: Some(7), ..ServerConfig::ephemeral() };
    let server = TestServer::start_with(&["mlp.toml", "diamond.toml"], config);
    assert_eq!(server.models().in_flight_limit(), 7);
}

#[test]
fn a_sequence_carries_state_between_requests() {
    let server = TestServer::start(&["stateful.toml"]);
    let steps: Vec<Vec<f32>> = (0..4).map(|k| (0..8).map(|i| ((k * 8 + i) as f32 * 0.3).cos()).collect()).collect();
    // The same chunks straight through a runtime, as one stream.
    let runtime = Runtime::from_file(&pipeline("stateful.toml"), &baton_engines::standard_registry()).unwrap();
    let expected: Vec<Vec<f32>> = steps
        .iter()
        .enumerate()
        .map(|(k, x)| {
            let r =
                Request::new().input("x", Tensor::from_vec(vec![1, 8], x.clone()).unwrap()).stream(1, k == 0, k == 3);
            runtime.submit(r).wait().unwrap().get("y").unwrap().as_slice::<f32>().unwrap().to_vec()
        })
        .collect();
    runtime.shutdown();
    // Two interleaved sequences over HTTP give the same answers as the one stream above:
    // 7 names its id by the parameter, 8 by the baton-sequence-id header alone.
    let post = |body: &Value, header: Option<&str>| {
        let headers: Vec<(&str, &str)> = std::iter::once(("Content-Type", "application/json"))
            .chain(header.map(|id| (baton_server::model::SEQUENCE_ID_HEADER, id)))
            .collect();
        request(server.http, "POST", "/v2/models/stateful/infer", &headers, body.to_string().as_bytes())
    };
    for k in 0..4 {
        for id in [7u64, 8] {
            let mut parameters = json!({"sequence_start": k == 0, "sequence_end": k == 3});
            let header = if id == 7 {
                parameters["sequence_id"] = json!(id);
                None
            } else {
                Some("8")
            };
            let body = json!({
                "parameters": parameters,
                "inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": steps[k]}],
            });
            let r = post(&body, header);
            assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
            assert_eq!(floats(&r.json()["outputs"][0]["data"]), expected[k], "sequence {id} step {k}");
        }
    }
    // sequence_end closed them: a later chunk is refused, never answered from fresh state.
    let chunk = |parameters: Value| json!({"parameters": parameters, "inputs": [{"name": "x", "shape": [1, 8], "datatype": "FP32", "data": steps[0]}]});
    for (body, header) in [(chunk(json!({"sequence_id": 7})), None), (chunk(json!({})), Some("8"))] {
        let r = post(&body, header);
        assert_eq!(r.status, 400);
        let error = r.error();
        assert!(error.contains("unknown stream") && error.contains("restart it"), "{error}");
    }
    // A header and a parameter that disagree are refused, naming both.
    let r = post(&chunk(json!({"sequence_id": 9, "sequence_start": true})), Some("10"));
    assert_eq!(r.status, 400);
    assert!(r.error().contains("baton-sequence-id (10) and parameter sequence_id (9) disagree"), "{}", r.error());
}

#[test]
fn metrics_show_the_traffic_sent() {
    let server = TestServer::start(&["mlp_metrics.toml"]);
    let before = metrics_text(&server);
    let ok = json!({"inputs": [{"name": "input", "shape": [2, 256], "datatype": "FP32", "data": vec![0.1f32; 512]}]});
    let bad = json!({"inputs": [{"name": "input", "shape": [2, 256], "datatype": "FP32", "data": [0.1]}]});
    for _ in 0..5 {
        assert_eq!(server.post_json("/v2/models/mlp_metrics/infer", &ok).status, 200);
    }
    for _ in 0..3 {
        assert_eq!(server.post_json("/v2/models/mlp_metrics/infer", &bad).status, 400);
    }
    let after = metrics_text(&server);
    let delta = |name: &str, labels: &[(&str, &str)]| metric(&after, name, labels) - metric(&before, name, labels);
    let http = [("protocol", "http"), ("endpoint", "infer"), ("model", "mlp_metrics")];
    assert_eq!(delta("baton_server_requests_total", &[&http[..], &[("code", "200")]].concat()), 5.0, "{after}");
    assert_eq!(delta("baton_server_requests_total", &[&http[..], &[("code", "400")]].concat()), 3.0);
    let pipeline = [("pipeline", "mlp_metrics")];
    assert_eq!(delta("baton_requests_total", &[&pipeline[..], &[("outcome", "ok")]].concat()), 5.0);
    assert_eq!(delta("baton_inferences_total", &[("pipeline", "mlp_metrics"), ("node", "mlp")]), 10.0);
    let executions = delta("baton_executions_total", &[("pipeline", "mlp_metrics"), ("node", "mlp")]);
    assert!((1.0..=5.0).contains(&executions), "{executions}");
    assert_eq!(delta("baton_request_seconds_count", &pipeline), 5.0);
    for series in [
        "baton_request_seconds_bucket",
        "baton_queue_seconds_bucket",
        "baton_compute_seconds_bucket",
        "baton_queue_depth",
        "baton_server_infer_seconds_bucket",
    ] {
        assert!(after.contains(series), "{series} missing from /metrics");
    }
}

#[test]
fn graceful_shutdown_answers_what_was_accepted() {
    let mut server = TestServer::start(&["slow_small.toml"]);
    let http = server.http;
    let body = json!({"inputs": [{"name": "x", "shape": [8, 64], "datatype": "FP32", "data": vec![0.25f32; 8 * 64]}]})
        .to_string();
    // Clients send one request after another until the server stops accepting connections;
    // the server is shut down once more than 10 requests have been answered.
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let (statuses, dropped) = std::thread::scope(|s| {
        let clients: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let (mut statuses, mut dropped) = (Vec::new(), 0);
                    loop {
                        let headers = [("Content-Type", "application/json")];
                        match common::try_request(
                            http,
                            "POST",
                            "/v2/models/slow_small/infer",
                            &headers,
                            body.as_bytes(),
                        ) {
                            Ok(Some(r)) => {
                                if r.status == 200 {
                                    answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                                statuses.push(r.status)
                            }
                            // Accepted but closed before a request was read: the shutdown raced the request.
                            Ok(None) => dropped += 1,
                            Err(_) => return (statuses, dropped),
                        }
                    }
                })
            })
            .collect();
        // (Bounded: a server that answers nothing is shut down anyway and fails the count below.)
        let deadline = Instant::now() + Duration::from_secs(60);
        while answered.load(std::sync::atomic::Ordering::Relaxed) <= 10 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        server.shutdown();
        clients.into_iter().map(|c| c.join().unwrap()).fold((Vec::new(), 0), |(mut a, d), (s, e)| {
            a.extend(s);
            (a, d + e)
        })
    });
    // Requests are answered (200), or refused as the server stops (503, or 429 by the
    // pipeline's admission bound); none is cut off mid-answer.
    assert!(statuses.iter().all(|&s| s == 200 || s == 503 || s == 429), "{statuses:?}");
    assert!(statuses.iter().filter(|&&s| s == 200).count() > 10, "{statuses:?}");
    assert!(dropped <= 4, "at most one raced connection per client: {dropped}");
    assert!(std::net::TcpStream::connect(http).is_err(), "the listener is closed");
}

#[test]
fn a_client_disconnecting_cancels_its_queued_request() {
    use std::io::Write;
    let server = TestServer::start(&["slow_cancel.toml"]);
    let body = serde_json::to_vec(
        &json!({"inputs": [{"name": "x", "shape": [8, 64], "datatype": "FP32", "data": vec![0.5f32; 8 * 64]}]}),
    )
    .unwrap();
    let head = format!(
        "POST /v2/models/slow_cancel/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    // 60 clients send a request (about 1 ms of work each) and hang up at once.
    for _ in 0..60 {
        let mut stream = std::net::TcpStream::connect(server.http).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&body).unwrap();
        drop(stream);
    }
    let outcomes = |text: &str, outcome: &str| {
        metric(text, "baton_requests_total", &[("pipeline", "slow_cancel"), ("outcome", outcome)])
    };
    // Wait until nothing is in flight (a client that hung up before its body was
    // read never became a request at all).
    let deadline = Instant::now() + Duration::from_secs(20);
    let in_flight = |text: &str| metric(text, "baton_in_flight", &[("pipeline", "slow_cancel")]);
    let text = loop {
        std::thread::sleep(Duration::from_millis(100));
        let text = metrics_text(&server);
        if (in_flight(&text) == 0.0 && outcomes(&text, "cancelled") > 0.0) || Instant::now() > deadline {
            break text;
        }
    };
    let (ok, cancelled) = (outcomes(&text, "ok"), outcomes(&text, "cancelled"));
    assert_eq!(in_flight(&text), 0.0, "nothing left in flight: {ok} ran, {cancelled} cancelled");
    assert!(cancelled > 0.0, "requests of clients that hung up before they ran were cancelled ({ok} ran)");
    assert!(ok + cancelled <= 60.0, "each request resolved once: {ok} ran, {cancelled} cancelled");
    let total = metric(&text, "baton_requests_total", &[("pipeline", "slow_cancel")]);
    assert_eq!(total, ok + cancelled, "no other outcome");
}
