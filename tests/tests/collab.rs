//! The real collaborating-networks pipeline on real models and committed data:
//! silero-vad streams with write-back state (alone, and 16 streams batched
//! together), PP-OCRv4 text recognition with the Rust stages, and the whole
//! `configs/collab.toml` recommending each session's category.

use std::path::{Path, PathBuf};

use baton::{Request, RequestError, Runtime, Tensor};
use baton_stages::collab::session::{
    char_accuracy, stream_session, stream_session_timed, AnswerTime, Session, Sessions,
};
use baton_stages::collab::speech::{chunk_tensor, chunks, read_wav, THRESHOLD};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sessions() -> Sessions {
    Sessions::load(&root().join("data")).expect("committed sessions")
}

fn runtime(config: &str) -> Runtime {
    Runtime::from_file(&root().join(config), &baton_stages::collab::registry()).unwrap_or_else(|e| panic!("{e}"))
}

/// The reference per-chunk probabilities of the original silero-vad model (Python onnxruntime).
fn reference_probs(session: &Session) -> Vec<f32> {
    let path = root().join(format!("data/reference/vad/{}.json", session.id));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    json["probs"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap() as f32).collect()
}

/// Streams `samples` as stream `id` through the VAD pipeline, one chunk at a time.
fn stream_vad(runtime: &Runtime, id: u64, samples: &[f32]) -> Vec<f32> {
    let chunks = chunks(samples);
    let last = chunks.len() - 1;
    chunks
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let request = Request::new().input("chunk", chunk_tensor(c)).stream(id, k == 0, k == last);
            let out = runtime.submit(request).wait().unwrap_or_else(|e| panic!("chunk {k}: {e}"));
            out.get("speech_prob").unwrap().as_slice::<f32>().unwrap()[0]
        })
        .collect()
}

fn span(probs: &[f32]) -> (usize, usize) {
    let first = probs.iter().position(|&p| p > THRESHOLD).expect("speech found");
    let last = probs.iter().rposition(|&p| p > THRESHOLD).expect("speech found");
    (first, last)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn vad_finds_the_speech_within_one_chunk_of_the_known_boundaries_and_matches_the_reference() {
    let runtime = runtime("configs/vad.toml");
    for (i, session) in sessions().sessions.iter().enumerate() {
        let probs = stream_vad(&runtime, i as u64, &read_wav(&session.wav).unwrap());
        let (first, last) = span(&probs);
        assert!(
            first.abs_diff(session.onset_chunk) <= 1,
            "{}: speech from chunk {first}, known {}",
            session.id,
            session.onset_chunk
        );
        assert!(
            last.abs_diff(session.offset_chunk) <= 1,
            "{}: speech to chunk {last}, known {}",
            session.id,
            session.offset_chunk
        );
        let diff = max_diff(&probs, &reference_probs(session));
        assert!(diff < 1e-5, "{}: probabilities differ from the original model's by {diff}", session.id);
    }
}

#[test]
fn sixteen_interleaved_streams_batch_together_without_their_states_crossing() {
    let data = sessions();
    let audio: Vec<Vec<f32>> = data.sessions.iter().map(|s| read_wav(&s.wav).unwrap()).collect();
    let alone = runtime("configs/vad.toml");
    let expected: Vec<Vec<f32>> = audio.iter().enumerate().map(|(i, a)| stream_vad(&alone, i as u64, a)).collect();
    alone.shutdown();

    let together = runtime("configs/vad.toml");
    let got: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = audio
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let together = &together;
                scope.spawn(move || stream_vad(together, 100 + i as u64, a))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let stats = &together.node_stats()[0];
    assert!(stats.rows > stats.executions, "chunks of different streams shared batches ({stats:?})");
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        let diff = max_diff(g, e);
        assert!(diff < 1e-6, "stream {i}: batched with others differs from alone by {diff}");
    }
    assert_eq!(together.stream_usage()[0].1, 0, "every stream closed by its final chunk");
}

#[test]
fn a_bad_chunk_leaves_the_stream_state_unchanged_and_the_next_chunk_works() {
    let data = sessions();
    let samples = read_wav(&data.sessions[0].wav).unwrap();
    let runtime = runtime("configs/vad.toml");
    let clean = stream_vad(&runtime, 1, &samples);
    let chunks = chunks(&samples);
    let last = chunks.len() - 1;
    let mut probs = Vec::new();
    for (k, c) in chunks.iter().enumerate() {
        if k == 20 {
            let bad = Tensor::from_vec(vec![1, 500], vec![0.1f32; 500]).unwrap();
            let err = runtime.submit(Request::new().input("chunk", bad).stream(2, false, false)).wait().unwrap_err();
            assert!(matches!(&err, RequestError::InvalidInput(m) if m.contains("chunk")), "{err}");
        }
        let request = Request::new().input("chunk", chunk_tensor(c)).stream(2, k == 0, k == last);
        probs.push(runtime.submit(request).wait().unwrap().get("speech_prob").unwrap().as_slice::<f32>().unwrap()[0]);
    }
    assert_eq!(probs, clean, "the bad chunk changed nothing");
}

#[test]
fn the_collab_pipeline_reads_the_images_and_recommends_every_session_s_category() {
    let data = sessions();
    let runtime = runtime("configs/collab.toml");
    let results = baton_e2e::stream_every_session(&runtime, &data);
    let (mut chars, mut errors) = (0usize, 0.0f64);
    for session in &data.sessions {
        let result = &results[&session.id];
        let category = &data.categories[result.category];
        assert_eq!(category, &session.expected_category, "{}: recommended {category}", session.id);
        let (first, last) = result.speech_span().expect("speech found");
        assert!(first.abs_diff(session.onset_chunk) <= 1 && last.abs_diff(session.offset_chunk) <= 1, "{}", session.id);
        let n = session.image_text.chars().count();
        chars += n;
        errors += (1.0 - char_accuracy(&result.text, &session.image_text)) * n as f64;
    }
    let accuracy = 1.0 - errors / chars as f64;
    assert!(accuracy >= 0.95, "OCR character accuracy {accuracy:.3} over {chars} characters");
    let text = runtime.node_stats().into_iter().find(|n| n.name == "text").unwrap();
    assert_eq!(text.tasks, 16, "the text node ran once per session (final chunks only)");
}

#[test]
fn sessions_sending_their_image_first_get_the_same_categories_and_texts() {
    let data = sessions();
    let runtime = baton_e2e::start_with(
        "collab_early.toml",
        baton_e2e::Scheduling::NoBackground,
        &baton_stages::collab::registry(),
    );
    // Every other session takes its answers in `submit_then`'s callback.
    let results = baton_e2e::every_session_at_once(&runtime, &data, |runtime, s, id| {
        let answer = if id % 2 == 0 { AnswerTime::Waiter } else { AnswerTime::Callback };
        stream_session_timed(runtime, s, id, None, true, answer)
    });
    for (session, result) in data.sessions.iter().zip(&results) {
        assert_eq!(data.categories[result.category], session.expected_category, "{}", session.id);
        assert!(char_accuracy(&result.text, &session.image_text) >= 0.9, "{}: `{}`", session.id, result.text);
        assert_eq!(result.latencies.len(), result.speech_prob.len(), "{}: a latency per chunk", session.id);
    }
    let stats = runtime.node_stats();
    let tasks = |name: &str| stats.iter().find(|n| n.name == name).unwrap().tasks;
    assert_eq!(tasks("text"), 16, "one image request per session");
    assert_eq!(tasks("recommend"), 16, "one recommendation per session, at its final chunk");
}

#[test]
fn the_rust_ocr_stages_match_rapidocr_s_own_pipeline_on_the_committed_images() {
    // Reference texts from rapidocr-onnxruntime's Python pipeline (data/reference/ocr).
    let data = sessions();
    let runtime = runtime("configs/collab.toml");
    let mut exact = 0;
    for (i, session) in data.sessions.iter().enumerate() {
        let reference: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("data/reference/ocr/{}.json", session.id))).unwrap(),
        )
        .unwrap();
        let want = reference["text"].as_str().expect("reference text");
        let got = stream_session(&runtime, session, 500 + i as u64).unwrap().text;
        exact += usize::from(got == want);
        assert!(char_accuracy(&got, want) >= 0.95, "{}: `{got}` vs rapidocr `{want}`", session.id);
    }
    assert!(exact >= 15, "{exact}/16 texts equal rapidocr's exactly");
}
