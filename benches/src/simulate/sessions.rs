//! Sessions in virtual time, as the collab example sends them to
//! `configs/collab_early.toml` (`examples/collab --image-first`, the client side
//! in `stages/src/collab/session.rs`): sessions start at `--rate` per second
//! (Poisson); a session sends its image as a request of its own (input `image`)
//! at its start, then its speech as the chunks of one stream (input `chunk`),
//! chunk `k` no earlier than `k × pace` after the start and not before chunk
//! `k - 1` was answered; the final chunk also carries the text features the
//! image's answer gave (input `text_features`), so it waits for that answer.
//! The final chunk is a priority task; its latency runs from when it was due
//! (the speech ended) to its answer, so it includes any wait for the image.
//! Chunks are reported (final chunks as priority requests, the others as the
//! others); the images are not, as the example reports chunks.
//!
//! Each session's chunk count comes from the session file's WAVs (512 new samples a
//! chunk), sessions taken in turn as the example takes them.

use std::path::Path;

use serde_json::Value;

use crate::load::Chunk;

/// Samples a chunk adds (512 at 16 kHz: 32 ms).
const CHUNK_SAMPLES: u64 = 512;

/// The reach (see [`super::streams::Streams`]) of each kind of request a session sends.
pub const REACH_CHUNK: usize = 0;
pub const REACH_FINAL: usize = 1;
pub const REACH_IMAGE: usize = 2;

/// The inputs of each kind, in [`REACH_CHUNK`], [`REACH_FINAL`], [`REACH_IMAGE`] order.
pub const KIND_INPUTS: [&[&str]; 3] = [&["chunk"], &["chunk", "text_features"], &["image"]];

/// A request a session sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Send {
    pub reach: usize,
    pub stream: Option<Chunk>,
    pub priority: bool,
    /// When it counts as sent (a final chunk: when it was due).
    pub sent_ns: u64,
    /// Whether its latency is reported.
    pub recorded: bool,
    /// Its tenant's index in the load's tenants (`--tenants`; sessions name none).
    pub tenant: Option<usize>,
}

struct Live {
    id: u64,
    start_ns: u64,
    chunks: u64,
    /// The chunk to send next.
    next: u64,
    image_answered: bool,
    /// The final chunk is due (since then) and waits for the image's answer.
    final_due: Option<u64>,
}

/// The sessions of one point.
pub struct Sessions {
    /// Chunks per session of the session file, taken in turn.
    counts: Vec<u64>,
    pace_ns: u64,
    live: Vec<Option<Live>>,
    free: Vec<usize>,
    opened: u64,
}

impl Sessions {
    pub fn new(counts: Vec<u64>, pace_ns: u64) -> Sessions {
        Sessions { counts, pace_ns, live: Vec::new(), free: Vec::new(), opened: 0 }
    }

    /// A session starts at `now`: its client number, and what it sends at once
    /// (its image and its first chunk).
    pub fn open(&mut self, now: u64, out: &mut Vec<Send>) -> usize {
        let chunks = self.counts[(self.opened % self.counts.len() as u64) as usize].max(1);
        self.opened += 1;
        let live = Live { id: self.opened, start_ns: now, chunks, next: 0, image_answered: false, final_due: None };
        let client = super::store(&mut self.live, &mut self.free, live);
        out.push(Send {
            reach: REACH_IMAGE,
            stream: None,
            priority: false,
            sent_ns: now,
            recorded: false,
            tenant: None,
        });
        self.send_chunk(client, now, out);
        client
    }

    /// Session `client`'s next chunk is due at `now` (or, the final one, waits for
    /// the image; sent once it is answered, it counts from when it was due).
    pub fn send_chunk(&mut self, client: usize, now: u64, out: &mut Vec<Send>) {
        let s = self.live[client].as_mut().expect("a live session");
        let k = s.next;
        let end = k + 1 == s.chunks;
        if end && !s.image_answered {
            s.final_due = Some(now);
            return;
        }
        s.next += 1;
        let chunk = Chunk { id: s.id, k, start: k == 0, end };
        let reach = if end { REACH_FINAL } else { REACH_CHUNK };
        let sent_ns = s.final_due.take().unwrap_or(now);
        out.push(Send { reach, stream: Some(chunk), priority: end, sent_ns, recorded: true, tenant: None });
    }

    /// Session `client`'s request `sent` was answered at `now` (or refused): when it
    /// sends its next chunk ([`Sessions::send_chunk`]), if it has one to send.
    pub fn answered(&mut self, client: usize, sent: &Send, now: u64) -> Option<u64> {
        let s = self.live[client].as_mut().expect("a live session");
        if sent.reach == REACH_IMAGE {
            s.image_answered = true;
            // A final chunk waiting for the image goes now.
            return s.final_due.map(|_| now);
        }
        if sent.stream.is_some_and(|c| c.end) {
            self.live[client] = None;
            self.free.push(client);
            return None;
        }
        Some(now.max(s.start_ns + s.next * self.pace_ns))
    }
}

/// Chunks per session of a session file (`data/sessions.json`: each session's `wav`,
/// relative to the file's folder; 16 kHz PCM).
pub fn session_chunks(file: &Path) -> Result<Vec<u64>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    let sessions = json["sessions"].as_array().ok_or_else(|| format!("{}: no `sessions` list", file.display()))?;
    let folder = file.parent().unwrap_or(Path::new("."));
    let counts = sessions
        .iter()
        .map(|s| {
            let wav = s["wav"].as_str().ok_or_else(|| format!("{}: a session without `wav`", file.display()))?;
            Ok(wav_samples(&folder.join(wav))?.div_ceil(CHUNK_SAMPLES).max(1))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    if counts.is_empty() {
        return Err(format!("{}: no sessions", file.display()));
    }
    Ok(counts)
}

/// The samples (per channel) of a PCM WAV file, from its header.
fn wav_samples(path: &Path) -> Result<u64, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let bad = |what: &str| format!("{}: not a PCM WAV file ({what})", path.display());
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(bad("no RIFF/WAVE header"));
    }
    let (mut at, mut frame) = (12usize, None);
    while at + 8 <= bytes.len() {
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let body = at + 8;
        match &bytes[at..at + 4] {
            b"fmt " if body + 16 <= bytes.len() => {
                let channels = u16::from_le_bytes([bytes[body + 2], bytes[body + 3]]) as u64;
                let bits = u16::from_le_bytes([bytes[body + 14], bytes[body + 15]]) as u64;
                frame = Some(channels * bits.div_ceil(8));
            }
            b"data" => {
                let frame = frame.filter(|&f| f > 0).ok_or_else(|| bad("no format before the data"))?;
                return Ok(size as u64 / frame);
            }
            _ => {}
        }
        at = body + size + (size & 1);
    }
    Err(bad("no data chunk"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_sends_its_image_and_chunks_and_its_final_chunk_waits_for_the_image() {
        let mut s = Sessions::new(vec![3], 32);
        let mut out = Vec::new();
        let c = s.open(100, &mut out);
        assert_eq!(out.iter().map(|o| o.reach).collect::<Vec<_>>(), [REACH_IMAGE, REACH_CHUNK]);
        let chunk0 = out[1];
        out.clear();
        // Chunk 0 answered at 110: chunk 1 is due at 100 + 32.
        assert_eq!(s.answered(c, &chunk0, 110), Some(132));
        s.send_chunk(c, 132, &mut out);
        let chunk1 = out.pop().unwrap();
        assert_eq!(chunk1.stream.map(|c| c.k), Some(1));
        // Chunk 1 answered late, at 170: the final chunk is due then, but the image is not answered.
        assert_eq!(s.answered(c, &chunk1, 170), Some(170));
        s.send_chunk(c, 170, &mut out);
        assert!(out.is_empty(), "the final chunk waits for the image's answer");
        let image =
            Send { reach: REACH_IMAGE, stream: None, priority: false, sent_ns: 100, recorded: false, tenant: None };
        assert_eq!(s.answered(c, &image, 250), Some(250), "the final chunk goes when the image is answered");
        s.send_chunk(c, 250, &mut out);
        let last = out.pop().unwrap();
        assert_eq!((last.reach, last.priority, last.sent_ns), (REACH_FINAL, true, 170), "its latency runs from 170");
        assert_eq!(s.answered(c, &last, 260), None);
        assert_eq!(s.free, [c], "the session ended");
    }
}
