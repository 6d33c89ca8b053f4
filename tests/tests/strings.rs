//! BYTES (string) tensors through a pipeline on real ONNX Runtime:
//! configs/strings.toml runs models/strings.onnx (Identity, Concat,
//! StringConcat, Equal and Cast on string tensors). Requests of several rows
//! are submitted together so that they share batches (stitched along dim 0
//! and split back per request); every answer must equal a direct ORT run of
//! that request alone, and bytes that are not UTF-8 (which `ort`'s own string
//! calls cannot carry) must come back unchanged.

use baton::{DType, Outputs, Request, Runtime, Tensor};
use baton_e2e::{answer, batch_sizes, record_metrics, start, Direct, Scheduling};

/// Words the text input draws from: "baton" (Equal's word), the empty string, text beyond ASCII.
const WORDS: [&str; 6] = ["baton", "", "héllo wörld", "数据", "a longer sentence of several words", "x"];

fn submit_all(runtime: &Runtime, requests: Vec<Request>) -> Vec<Outputs> {
    let tickets: Vec<_> = requests.into_iter().map(|r| runtime.submit(r)).collect();
    let answers =
        tickets.into_iter().enumerate().map(|(i, t)| answer(t).unwrap_or_else(|e| panic!("request {i}: {e}")));
    let answers = answers.collect();
    assert_eq!(runtime.in_flight(), 0);
    answers
}

/// Request `i`: 1 to 4 rows of two words each and a number.
fn request_inputs(i: usize) -> (Tensor, Tensor) {
    let rows = i % 4 + 1;
    let text = (0..rows * 2).map(|k| WORDS[(i * 7 + k * 3) % WORDS.len()]);
    let numbers = (0..rows).map(|k| format!("{}.5", i as i64 * 3 - k as i64 * 11));
    (Tensor::from_strings(vec![rows, 2], text).unwrap(), Tensor::from_strings(vec![rows, 1], numbers).unwrap())
}

#[test]
fn string_requests_batched_together_equal_direct_ort_each() {
    record_metrics();
    let mut direct = Direct::load("strings.onnx");
    for scheduling in [Scheduling::AsShipped, Scheduling::Accumulate] {
        let runtime = start("strings.toml", scheduling);
        let inputs: Vec<(Tensor, Tensor)> = (0..32).map(request_inputs).collect();
        let requests = inputs.iter().map(|(t, n)| Request::new().input("text", t.clone()).input("number", n.clone()));
        let answers = submit_all(&runtime, requests.collect());
        runtime.shutdown();
        for (i, ((text, number), got)) in inputs.iter().zip(&answers).enumerate() {
            let want = direct.run(&[("text", text), ("number", number)]);
            for (name, want) in &want {
                let got = got.get(name).unwrap_or_else(|| panic!("request {i}: no output `{name}`"));
                assert_eq!(got, want, "request {i} output `{name}` ({scheduling:?})");
            }
            assert_eq!(got.get("echo").unwrap(), text, "request {i}: echo is its own text");
            assert_eq!(got.get("echo").unwrap().dtype(), DType::Bytes);
        }
    }
    let sizes = batch_sizes("strings", "strings");
    assert!(sizes.iter().any(|&s| s > 4.0), "no batch held more than one request's 4 rows: {sizes:?}");
}

#[test]
fn bytes_that_are_not_utf8_and_nul_bytes_come_back_unchanged() {
    let runtime = start("strings.toml", Scheduling::Accumulate);
    let odd: [&[u8]; 4] = [b"\xff\xfe", b"nul\0inside", b"\0", b"caf\xe9 (latin-1)"];
    let texts: Vec<Tensor> =
        (0..4).map(|i| Tensor::from_strings(vec![2, 2], (0..4).map(|k| odd[(i + k) % 4])).unwrap()).collect();
    let number = Tensor::from_strings(vec![2, 1], ["1", "2"]).unwrap();
    let requests = texts.iter().map(|t| Request::new().input("text", t.clone()).input("number", number.clone()));
    let answers = submit_all(&runtime, requests.collect());
    runtime.shutdown();
    for (i, (text, got)) in texts.iter().zip(&answers).enumerate() {
        let strings: Vec<&[u8]> = text.as_strings().unwrap().iter().collect();
        assert_eq!(got.get("echo").unwrap(), text, "request {i}: Identity");
        let shouted: Vec<Vec<u8>> = strings.iter().map(|s| [*s, b"!"].concat()).collect();
        assert_eq!(got.get("shout").unwrap(), &Tensor::from_strings(vec![2, 2], shouted).unwrap(), "request {i}");
        let doubled = [&strings[..2], &strings[..2], &strings[2..], &strings[2..]].concat();
        assert_eq!(got.get("doubled").unwrap(), &Tensor::from_strings(vec![2, 4], doubled).unwrap(), "request {i}");
        assert_eq!(got.get("value").unwrap().as_slice::<f32>().unwrap(), &[1.0, 2.0], "request {i}");
    }
}
