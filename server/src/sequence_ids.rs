//! Sequence ids as clients send them → the stream keys of Baton's streams.
//!
//! A request's `sequence_id` is an unsigned integer or a string (Triton allows
//! both). The runtime keys a stream's state by a `u64`: an integer id is its
//! own key; a string id gets a key from a model's [`StringIds`] table.
//!
//! Which ids a model takes ([`IdKind`]): a Triton sequence model whose CORRID
//! control input is TYPE_STRING takes strings only, one whose CORRID is an
//! integer type takes integers only (a mismatch is refused, naming both
//! types); any other model takes both, and then string ids get keys from
//! [`STRING_KEYS`] up, a range integer ids may not use there.
//!
//! Table protocol (one lock per model; every step below is one lock hold):
//! - A chunk with `sequence_start` takes the string's entry, or makes one with
//!   the next unused key. A start on an open sequence keeps its key: the
//!   runtime resets the stream's state on a start chunk, as Triton restarts it.
//! - A chunk without start takes the string's entry, or is refused ("unknown
//!   sequence") when there is none (never started, ended, or idled out).
//! - A chunk with `sequence_end` removes the entry as it takes the key, so a
//!   later start with the same string begins a new sequence under a new key.
//! - Other chunks hold a [`Lease`] while they run: the entry counts it in
//!   `in_flight` and stamps `last_used` when it is taken and when it drops.
//! - Idle entries (no lease, unused for the streams' idle timeout, the same
//!   span after which the runtime ends the stream) are swept, at most every half
//!   timeout, by the call that finds the sweep due. The table thus holds only
//!   sequences used within the last 1.5 idle timeouts, or running: its size is
//!   bounded by the sequences a client keeps alive, as the runtime's streams are.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use std::sync::{Mutex, MutexGuard};

/// The first stream key of string ids on a model that takes integer ids too.
pub const STRING_KEYS: u64 = 1 << 63;

/// A sequence id as the request gave it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SequenceId {
    Int(u64),
    Str(String),
}

impl std::fmt::Display for SequenceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SequenceId::Int(id) => write!(f, "{id}"),
            SequenceId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A chunk of a sequence: its id and flags, as the request gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence {
    pub id: SequenceId,
    pub start: bool,
    pub end: bool,
}

/// The sequence ids a model takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdKind {
    /// Unsigned integers only (CORRID of an integer type).
    Int,
    /// Strings only (CORRID of TYPE_STRING).
    Str,
    /// Both; string ids take keys from [`STRING_KEYS`].
    Any,
}

struct Entry {
    key: u64,
    last_used: Instant,
    in_flight: usize,
}

struct Table {
    entries: HashMap<String, Entry>,
    next_key: u64,
    next_sweep: Instant,
}

/// The string ids of one model's open sequences and their stream keys.
pub struct StringIds {
    table: Mutex<Table>,
    first_key: u64,
    idle: Duration,
}

/// A chunk's stream key, held while the chunk runs (see the module's protocol).
pub struct Lease<'a> {
    ids: &'a StringIds,
    /// The entry to stamp on drop; none for a final chunk (its entry is gone).
    name: Option<String>,
    pub key: u64,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(name) = &self.name else { return };
        let mut table = self.ids.lock();
        if let Some(entry) = table.entries.get_mut(name).filter(|e| e.key == self.key) {
            entry.in_flight -= 1;
            entry.last_used = Instant::now();
        }
    }
}

impl StringIds {
    /// A table for a model taking `kind` ids whose streams idle out after `idle`.
    pub fn new(kind: IdKind, idle: Duration) -> Self {
        let first_key = if kind == IdKind::Any { STRING_KEYS } else { 1 };
        let table = Table { entries: HashMap::new(), next_key: first_key, next_sweep: Instant::now() };
        StringIds { table: Mutex::new(table), first_key, idle: idle.max(Duration::from_millis(1)) }
    }

    /// The stream key of chunk (`name`, `start`, `end`) at time `now`; `None` when
    /// a chunk without start names no open sequence.
    pub fn lease(&self, name: &str, start: bool, end: bool, now: Instant) -> Option<Lease<'_>> {
        let mut table = self.lock();
        if now >= table.next_sweep {
            let idle = self.idle;
            table.entries.retain(|_, e| e.in_flight > 0 || now.saturating_duration_since(e.last_used) < idle);
            table.next_sweep = now + idle / 2;
        }
        let existing = if end { table.entries.remove(name).map(|e| e.key) } else { None };
        let key = match (existing, end, start) {
            (Some(key), ..) => return Some(Lease { ids: self, name: None, key }),
            (None, true, true) => return Some(Lease { ids: self, name: None, key: self.next_key(&mut table) }),
            (None, true, false) => return None,
            (None, false, true) => match table.entries.get(name) {
                Some(e) => e.key,
                None => self.next_key(&mut table),
            },
            (None, false, false) => table.entries.get(name)?.key,
        };
        let entry = table.entries.entry(name.to_string()).or_insert(Entry { key, last_used: now, in_flight: 0 });
        entry.in_flight += 1;
        entry.last_used = now;
        Some(Lease { ids: self, name: Some(name.to_string()), key })
    }

    /// The table; a panic while holding it leaves no half-done step, so a poisoned lock is taken as is.
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_key(&self, table: &mut Table) -> u64 {
        let key = table.next_key;
        table.next_key = table.next_key.checked_add(1).unwrap_or(self.first_key);
        key
    }

    /// How many string ids the table holds.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the table holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_keeps_its_key_until_its_final_chunk() {
        let ids = StringIds::new(IdKind::Str, Duration::from_secs(60));
        let now = Instant::now();
        let a = ids.lease("a", true, false, now).unwrap().key;
        let b = ids.lease("b", true, false, now).unwrap().key;
        assert_ne!(a, b);
        assert_eq!(ids.lease("a", false, false, now).unwrap().key, a);
        assert_eq!(ids.lease("a", true, false, now).unwrap().key, a, "a restart keeps the key");
        assert_eq!(ids.lease("a", false, true, now).unwrap().key, a, "the final chunk runs on it");
        assert!(ids.lease("a", false, false, now).is_none(), "ended");
        assert_eq!(ids.len(), 1, "only b is left");
        let again = ids.lease("a", true, false, now).unwrap().key;
        assert!(again != a && again != b, "a new sequence, a new key");
        assert!(ids.lease("never", false, false, now).is_none());
        assert!(ids.lease("never", false, true, now).is_none());
        assert_eq!(ids.len(), 2);
    }

    #[test]
    fn idle_entries_are_swept_but_not_while_a_chunk_runs() {
        let idle = Duration::from_secs(10);
        let ids = StringIds::new(IdKind::Any, idle);
        let t0 = Instant::now();
        let running = ids.lease("running", true, false, t0).unwrap();
        assert!(running.key >= STRING_KEYS);
        drop(ids.lease("idle", true, false, t0).unwrap());
        // The lease's drop stamped `idle` at the real clock: sweep from well after it.
        let later = Instant::now() + idle * 3;
        assert!(ids.lease("other", true, true, later).is_some());
        assert_eq!(ids.len(), 1, "`idle` swept, `running` kept");
        assert!(ids.lease("idle", false, false, later).is_none());
        let key = running.key;
        drop(running);
        assert_eq!(ids.lease("running", false, false, later).unwrap().key, key);
        // Entries of sequences that start and idle out never pile up.
        let mut t = later;
        for round in 0..100 {
            for i in 0..10 {
                drop(ids.lease(&format!("s{round}-{i}"), true, false, t));
            }
            t += idle * 3;
        }
        assert!(ids.len() <= 12, "{} entries", ids.len());
    }
}
