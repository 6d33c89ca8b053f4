//! The client side of the collab pipeline: the committed sessions
//! (`data/sessions.json`) and streaming one through a runtime.
//!
//! A session is one user: a WAV of speech, streamed as chunks of one stream
//! (each chunk waits for its answer before the next is sent, as a live
//! microphone would), and an image sent with the final chunk. The final chunk
//! is a priority task; its answer carries the recognized text and the
//! recommended category.
//!
//! [`stream_session_image_first`] sends a session as users do with
//! `configs/collab_early.toml`: the image at the start, as a request of its
//! own, then the chunks; the final chunk carries the text features the
//! image's answer gave.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton::{Request, RequestError, Runtime, Tensor};
use serde_json::Value;

use super::features::texts_of;
use super::speech::{chunk_tensor, chunks, read_wav, THRESHOLD};
use crate::ocr::load_png;

/// One committed session.
#[derive(Clone, Debug)]
pub struct Session {
    pub id: String,
    pub wav: PathBuf,
    pub image: PathBuf,
    pub expected_category: String,
    /// Known text of the image (for accuracy checks).
    pub image_text: String,
    /// Chunks where the speech starts and ends, from how the WAV was made.
    pub onset_chunk: usize,
    pub offset_chunk: usize,
}

/// The committed sessions and the recommender's category names.
pub struct Sessions {
    pub sessions: Vec<Session>,
    pub categories: Vec<String>,
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("sessions.json: missing `{key}`"))
}

fn text(v: &Value, key: &str) -> Result<String, String> {
    field(v, key)?.as_str().map(str::to_string).ok_or_else(|| format!("sessions.json: `{key}` is not text"))
}

fn number(v: &Value, key: &str) -> Result<usize, String> {
    field(v, key)?.as_u64().map(|n| n as usize).ok_or_else(|| format!("sessions.json: `{key}` is not a number"))
}

impl Sessions {
    /// Reads `data/sessions.json` (paths in it are relative to `data/`).
    pub fn load(data_dir: &Path) -> Result<Sessions, String> {
        let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
        let json: Value = serde_json::from_str(&read(&data_dir.join("sessions.json"))?).map_err(|e| e.to_string())?;
        let sessions = field(&json, "sessions")?
            .as_array()
            .ok_or("sessions.json: `sessions` is not a list")?
            .iter()
            .map(|s| {
                Ok(Session {
                    id: text(s, "id")?,
                    wav: data_dir.join(text(s, "wav")?),
                    image: data_dir.join(text(s, "image")?),
                    expected_category: text(s, "expected_category")?,
                    image_text: text(s, "image_text")?,
                    onset_chunk: number(s, "onset_chunk")?,
                    offset_chunk: number(s, "offset_chunk")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let labels: Value = serde_json::from_str(&read(&data_dir.join("models/recommender_labels.json"))?)
            .map_err(|e| e.to_string())?;
        let mut categories = Vec::new();
        while let Some(name) = labels.get(categories.len().to_string()).and_then(Value::as_str) {
            categories.push(name.to_string());
        }
        Ok(Sessions { sessions, categories })
    }
}

/// What streaming one session gave.
#[derive(Clone, Debug)]
pub struct SessionResult {
    pub id: String,
    /// Speech probability of every chunk.
    pub speech_prob: Vec<f32>,
    /// The recognized text of the image.
    pub text: String,
    /// The recommended category (index into the category names) and its probabilities.
    pub category: usize,
    pub probabilities: Vec<f32>,
    /// Submit-to-answer time of every chunk; the last one is the final (priority) chunk.
    pub latencies: Vec<Duration>,
}

impl SessionResult {
    /// First and last chunk with speech probability above the threshold.
    pub fn speech_span(&self) -> Option<(usize, usize)> {
        let first = self.speech_prob.iter().position(|&p| p > THRESHOLD)?;
        let last = self.speech_prob.iter().rposition(|&p| p > THRESHOLD)?;
        Some((first, last))
    }
}

/// Streams `session` through `runtime` as stream `stream_id`; see the module docs.
pub fn stream_session(runtime: &Runtime, session: &Session, stream_id: u64) -> Result<SessionResult, String> {
    stream_session_paced(runtime, session, stream_id, None)
}

/// [`stream_session`], sending chunk `k` no earlier than `k × pace` after the
/// first (32 ms is real time for 512 samples at 16 kHz).
pub fn stream_session_paced(
    runtime: &Runtime,
    session: &Session,
    stream_id: u64,
    pace: Option<Duration>,
) -> Result<SessionResult, String> {
    stream_session_timed(runtime, session, stream_id, pace, false, AnswerTime::Waiter)
}

/// Streams `session` as users send it to `configs/collab_early.toml`: the
/// image as a request of its own when the session starts, then the chunks
/// (chunk `k` no earlier than `k × pace` after the start), the final one with
/// the text features the image's answer gave. The final chunk's latency runs
/// from when it is due (the speech ended) to its answer, so it includes any
/// wait for the image's answer.
pub fn stream_session_image_first(
    runtime: &Runtime,
    session: &Session,
    stream_id: u64,
    pace: Option<Duration>,
) -> Result<SessionResult, String> {
    stream_session_timed(runtime, session, stream_id, pace, true, AnswerTime::Waiter)
}

/// Where a chunk's latency ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnswerTime {
    /// When the session's thread, blocked on the ticket, has the answer: the
    /// latency includes that thread's own wake-up.
    #[default]
    Waiter,
    /// When the answer reaches code the session gave `Runtime::submit_then`,
    /// which runs on the thread that answers (no wake-up of the session's
    /// thread): the time a serving binary that hands answers on from the
    /// callback would see.
    Callback,
}

/// The session's samples and its image as a grayscale `[1, H, W]` tensor.
fn session_inputs(session: &Session) -> Result<(Vec<f32>, Tensor), String> {
    let samples = read_wav(&session.wav)?;
    let image = load_png(&session.image).map_err(|e| format!("{}: {e}", session.image.display()))?;
    let gray = if image.channels == 1 {
        image.data.clone()
    } else {
        image.data.chunks(image.channels).map(|p| p[0]).collect()
    };
    let image = Tensor::from_vec(vec![1, image.height, image.width], gray).map_err(|e| e.to_string())?;
    Ok((samples, image))
}

/// Streams a session: the image with the final chunk, or (`image_first`) as a
/// request of its own at the start whose text features go with the final chunk;
/// each chunk's latency ends as `answer` says.
pub fn stream_session_timed(
    runtime: &Runtime,
    session: &Session,
    stream_id: u64,
    pace: Option<Duration>,
    image_first: bool,
    answer: AnswerTime,
) -> Result<SessionResult, String> {
    let (samples, image) = session_inputs(session)?;
    let start = Instant::now();
    let mut image_ticket = image_first.then(|| runtime.submit(Request::new().input("image", image.clone())));
    let chunks = chunks(&samples);
    let mut result = SessionResult {
        id: session.id.clone(),
        speech_prob: Vec::with_capacity(chunks.len()),
        text: String::new(),
        category: 0,
        probabilities: Vec::new(),
        latencies: Vec::with_capacity(chunks.len()),
    };
    let last = chunks.len() - 1;
    for (k, chunk) in chunks.iter().enumerate() {
        if let Some(pace) = pace {
            let due = start + pace * k as u32;
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        let sent = Instant::now();
        let mut request = Request::new().input("chunk", chunk_tensor(chunk)).stream(stream_id, k == 0, k == last);
        if k == last {
            request = match image_ticket.take() {
                Some(ticket) => {
                    let answer = ticket.wait().map_err(|e: RequestError| format!("{} image: {e}", session.id))?;
                    let features = answer
                        .get("text_features")
                        .ok_or_else(|| format!("{} image: no `text_features` output", session.id))?;
                    let text = answer.get("text").ok_or_else(|| format!("{} image: no `text` output", session.id))?;
                    result.text = texts_of(text).into_iter().next().unwrap_or_default();
                    request.input("text_features", features.clone())
                }
                None => request.input("image", image.clone()),
            };
        }
        let (outputs, latency) = match answer {
            AnswerTime::Waiter => (runtime.submit(request).wait(), sent.elapsed()),
            AnswerTime::Callback => {
                let (answered, answer) = std::sync::mpsc::sync_channel(1);
                runtime.submit_then(request, move |outputs| {
                    let _ = answered.send((outputs, sent.elapsed()));
                });
                answer.recv().map_err(|_| format!("{} chunk {k}: the answer was never given", session.id))?
            }
        };
        let outputs = outputs.map_err(|e: RequestError| format!("{} chunk {k}: {e}", session.id))?;
        result.latencies.push(latency);
        let get = |name: &str| outputs.get(name).ok_or_else(|| format!("{} chunk {k}: no `{name}` output", session.id));
        result.speech_prob.push(get("speech_prob")?.as_slice::<f32>().map_err(|e| e.to_string())?[0]);
        if k == last {
            if !image_first {
                result.text = texts_of(get("text")?).into_iter().next().unwrap_or_default();
            }
            result.category = get("category")?.as_slice::<i64>().map_err(|e| e.to_string())?[0] as usize;
            result.probabilities = get("probabilities")?.as_slice::<f32>().map_err(|e| e.to_string())?.to_vec();
        }
    }
    Ok(result)
}

/// Character accuracy of `got` against `want`: 1 - edit distance / length of `want`.
pub fn char_accuracy(got: &str, want: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (got.chars().collect(), want.chars().collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    1.0 - row[b.len()] as f64 / b.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_accuracy_is_one_minus_edit_distance_over_length() {
        assert_eq!(char_accuracy("abc", "abc"), 1.0);
        assert_eq!(char_accuracy("abd", "abcd"), 0.75);
        assert_eq!(char_accuracy("", "ab"), 0.0);
    }
}
