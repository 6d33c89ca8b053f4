//! Boundary refinement by critical-relation gain, with the balance
//! constraint held hard.
//!
//! For a boundary subtask v (one with a relation to another part) in part P:
//! the *first gain* g1 is the critical value of v's relations inside P; the
//! *second gain* g2(Q) is the critical value of v's relations to part Q, for each
//! other part Q. v may move to Q when `g2(Q) - g1 > threshold` and Q stays within
//! the load limit. `g2(Q) - g1` is exactly the drop in critical cut the move
//! brings. Two ways to pick the moves:
//! - [`Variant::AllCandidates`]: every candidate is weighed and the best one is
//!   taken, repeatedly (candidates kept in a max-heap, gains updated
//!   incrementally for the neighbours of each moved subtask), until none passes.
//! - [`Variant::FlowOrder`]: candidates are taken in flow order, each re-checked
//!   against the gains the earlier moves left (cheaper; possibly worse).
//!
//! A round of moves is repeated while it makes new boundary subtasks appear
//! (ones never on the boundary before); the best partition seen — fewest
//! critical cut, then least total cut, among balanced ones — is kept.
//!
//! Balance is per part (`caps`: equal for k-way, in proportion for the uneven
//! sides of a recursive bisection). With hill climbing, a subtask whose best
//! move is blocked by a full part waits for room there (see `pass_hill_climb`).
//!
//! Beyond improving moves, `tie_break` also takes moves with `g2 - g1 = 0` that lower
//! the total (non-critical) cut, so ties on critical relations are settled by
//! traffic. Every move lowers the (critical, total) cut lexicographically, so the
//! refinement ends.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::str::FromStr;

use crate::connectivity::Connectivity;
use crate::gain_queue::{self, GainQueue};
use crate::graph::{Graph, Vertex};
use crate::metrics;

/// How candidate moves are picked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Variant {
    /// Weigh all candidates; take the best first.
    #[default]
    AllCandidates,
    /// Take candidates in flow order.
    FlowOrder,
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" | "all-candidates" => Ok(Variant::AllCandidates),
            "flow" | "flow-order" => Ok(Variant::FlowOrder),
            _ => Err(format!("unknown refinement variant `{s}` (expected all or flow)")),
        }
    }
}

/// Refinement settings.
#[derive(Clone, Copy, Debug)]
pub struct RefineParams {
    pub variant: Variant,
    /// A move needs `g2 - g1 > threshold` (the preset threshold, >= 0).
    pub threshold: i64,
    /// Also take moves with equal critical gain that lower the total cut.
    pub tie_break: bool,
    /// A bound on rounds (each round ends when no candidate passes).
    pub max_rounds: usize,
    /// Beyond improving moves: when > 0, the all-candidates pass also takes the best
    /// move when it raises the cut (each subtask once per pass), for up to this
    /// many moves past the best point, then rolls back to the best point
    /// (Fiduccia–Mattheyses hill climbing). 0 keeps improving moves only.
    pub hill_climb: usize,
}

impl Default for RefineParams {
    fn default() -> Self {
        RefineParams { variant: Variant::AllCandidates, threshold: 0, tie_break: true, max_rounds: 64, hill_climb: 0 }
    }
}

/// What a refinement did.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefineStats {
    pub rounds: usize,
    pub moves: usize,
}

/// A partition under refinement: assignment, loads, and the running cut.
pub struct State<'g> {
    pub g: &'g Graph,
    pub k: usize,
    /// Load limit of each part.
    pub caps: Vec<i64>,
    /// The assignment; change it through [`State::move_to`] only (the loads,
    /// the cut and the per-part sums follow each move).
    pub part: Vec<u32>,
    pub loads: Vec<i64>,
    /// (critical cut, total cut), kept up to date by [`State::move_to`].
    pub cut: (i64, i64),
    /// Vertices moved since the log was last drained (for boundary upkeep).
    moved: Vec<Vertex>,
    /// Each vertex's relation values per part, kept up to date by moves.
    conn: Connectivity,
    scratch: Vec<(i64, i64)>,
    touched: Vec<u32>,
}

/// The best move of one vertex: target part and the (critical, total) cut drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub to: u32,
    pub gain: (i64, i64),
}

impl<'g> State<'g> {
    /// A state where every part may carry `cap`.
    pub fn new(g: &'g Graph, k: usize, cap: i64, part: Vec<u32>) -> Self {
        Self::with_caps(g, vec![cap; k], part)
    }

    /// A state with a load limit per part (uneven targets, as in recursive
    /// bisection for k not a power of two).
    pub fn with_caps(g: &'g Graph, caps: Vec<i64>, part: Vec<u32>) -> Self {
        let loads = metrics::part_weights(g, &part, caps.len());
        let cut = metrics::cut(g, &part).key();
        Self::projected(g, caps, part, loads, cut)
    }

    /// A state whose loads and (critical, total) cut are known already: a
    /// partition projected from a coarser graph keeps both.
    pub fn projected(g: &'g Graph, caps: Vec<i64>, part: Vec<u32>, loads: Vec<i64>, cut: (i64, i64)) -> Self {
        let k = caps.len();
        debug_assert_eq!(loads, metrics::part_weights(g, &part, k), "loads of the projected partition");
        debug_assert_eq!(cut, metrics::cut(g, &part).key(), "cut of the projected partition");
        let conn = Connectivity::new(g, &part, k);
        // The move log (a round's moves and roll-backs): room for one move per
        // vertex up front, kept when drained, so that it seldom grows.
        let moved = Vec::with_capacity(g.n());
        State { g, k, caps, part, loads, cut, moved, conn, scratch: vec![(0, 0); k], touched: Vec::new() }
    }

    /// Whether part `q` is over its limit.
    #[inline]
    pub fn over(&self, q: u32) -> bool {
        self.loads[q as usize] > self.caps[q as usize]
    }

    /// Whether `v` has a relation to another part.
    #[inline]
    pub fn is_boundary(&self, v: Vertex) -> bool {
        let p = self.part[v as usize];
        if self.conn.exact() {
            let row = self.conn.row(v);
            if self.k == 2 {
                return row[1 - p as usize] != (0, 0);
            }
            return row.iter().enumerate().any(|(q, &to)| to != (0, 0) && q != p as usize);
        }
        self.g.range(v).any(|i| self.part[self.g.adj[i] as usize] != p)
    }

    /// g1 and g2 for `v`, then its best move to a part that has room. With
    /// `any_part`, parts without a relation to `v` are targets too (gain -g1).
    pub fn best_move(&mut self, v: Vertex, any_part: bool) -> Option<Move> {
        self.weigh(v, any_part).0
    }

    /// The best move of `v` to a part with room, and the part its best move
    /// would go to if every part had room, when that part is full now.
    ///
    /// Reads the sums table (O(k)); where two targets tie on gain and load, the
    /// choice depends on the order of `v`'s relations, so the relations are
    /// walked as [`State::weigh_relations`] does.
    #[inline(always)]
    fn weigh(&mut self, v: Vertex, any_part: bool) -> (Option<Move>, Option<u32>) {
        if self.k == 2 && self.conn.exact() {
            // One other part: no ties to settle.
            let p = self.part[v as usize] as usize;
            let q = 1 - p;
            let row = self.conn.row(v);
            let (own, to) = (row[p], row[q]);
            if to == (0, 0) && !any_part {
                return (None, None);
            }
            let m = Move { to: q as u32, gain: (to.0 - own.0, to.1 - own.1) };
            let w = self.g.node_w[v as usize];
            return if self.loads[q] + w <= self.caps[q] { (Some(m), None) } else { (None, Some(m.to)) };
        }
        self.weigh_k(v, any_part)
    }

    /// [`State::weigh`] for more than two parts (or relations without value).
    #[inline(never)]
    fn weigh_k(&mut self, v: Vertex, any_part: bool) -> (Option<Move>, Option<u32>) {
        if !self.conn.exact() {
            return self.weigh_relations(v, any_part);
        }
        let p = self.part[v as usize];
        let row = self.conn.row(v);
        let own = row[p as usize];
        let w = self.g.node_w[v as usize];
        let (p, k) = (p as usize, self.k);
        let (loads, caps) = (&self.loads[..k], &self.caps[..k]);
        // The best target with room, and regardless of room.
        let (mut best, mut free) = (Target::NONE, Target::NONE);
        for (q, &to) in row.iter().enumerate() {
            if (to == (0, 0) && !any_part) || q == p {
                continue;
            }
            let gain = (to.0 - own.0, to.1 - own.1);
            let load = loads[q];
            free.offer(q, gain, load);
            if load + w <= caps[q] {
                best.offer(q, gain, load);
            }
        }
        if best.tied || free.tied {
            return self.weigh_relations(v, any_part);
        }
        let best_move = best.part().map(|q| Move { to: q as u32, gain: best.gain });
        let blocked = free.part().filter(|&q| free.load + w > caps[q]).map(|q| q as u32);
        (best_move, blocked)
    }

    /// [`State::weigh`] by walking `v`'s relations: targets in the order their
    /// first relation appears, then (with `any_part`) the other parts by index;
    /// the first of equal (gain, load) wins.
    fn weigh_relations(&mut self, v: Vertex, any_part: bool) -> (Option<Move>, Option<u32>) {
        let g = self.g;
        let p = self.part[v as usize];
        self.touched.clear();
        let mut own = (0i64, 0i64);
        for i in g.range(v) {
            let q = self.part[g.adj[i] as usize];
            if q == p {
                own.0 += g.ec[i];
                own.1 += g.ew[i];
            } else {
                let s = &mut self.scratch[q as usize];
                if *s == (0, 0) {
                    self.touched.push(q);
                }
                s.0 += g.ec[i];
                s.1 += g.ew[i];
            }
        }
        let w = g.node_w[v as usize];
        let caps = &self.caps;
        // (move, load of its target) with room, and regardless of room.
        let mut best: Option<(Move, i64)> = None;
        let mut free: Option<(Move, i64)> = None;
        let better = |m: &Option<(Move, i64)>, gain: (i64, i64), load: i64| match m {
            None => true,
            Some((m, l)) => gain > m.gain || (gain == m.gain && load < *l),
        };
        let mut consider = |q: u32, to: (i64, i64), loads: &[i64]| {
            if q == p {
                return;
            }
            let gain = (to.0 - own.0, to.1 - own.1);
            let load = loads[q as usize];
            if better(&free, gain, load) {
                free = Some((Move { to: q, gain }, load));
            }
            if load + w <= caps[q as usize] && better(&best, gain, load) {
                best = Some((Move { to: q, gain }, load));
            }
        };
        for &q in &self.touched {
            consider(q, self.scratch[q as usize], &self.loads);
        }
        if any_part {
            for q in 0..self.k as u32 {
                if self.scratch[q as usize] == (0, 0) {
                    consider(q, (0, 0), &self.loads);
                }
            }
        }
        for &q in &self.touched {
            self.scratch[q as usize] = (0, 0);
        }
        let blocked = free.filter(|(m, load)| load + w > caps[m.to as usize]).map(|(m, _)| m.to);
        (best.map(|(m, _)| m), blocked)
    }

    pub fn move_to(&mut self, v: Vertex, m: Move) {
        let w = self.g.node_w[v as usize];
        self.conn.moved(self.g, v, self.part[v as usize], m.to);
        self.loads[self.part[v as usize] as usize] -= w;
        self.loads[m.to as usize] += w;
        self.part[v as usize] = m.to;
        self.moved.push(v);
        self.cut.0 -= m.gain.0;
        self.cut.1 -= m.gain.1;
    }

    /// Returns to the partition `part`, moving the vertices that differ (the
    /// sums table follows each; the cut is the caller's to set).
    fn restore(&mut self, part: &[u32]) {
        for v in 0..self.g.n() as Vertex {
            let (from, to) = (self.part[v as usize], part[v as usize]);
            if from != to {
                self.conn.moved(self.g, v, from, to);
                self.part[v as usize] = to;
            }
        }
        self.loads = metrics::part_weights(self.g, &self.part, self.k);
    }

    fn balanced(&self) -> bool {
        self.loads.iter().zip(&self.caps).all(|(l, c)| l <= c)
    }

    /// Every vertex on the boundary. With more than two parts, by a walk over
    /// each one's relations: where the sums table is exact, a relation into
    /// another part is what makes that part's sum nonzero (the same set as
    /// [`State::is_boundary`]), and the walk, which stops at the first such
    /// relation, reads less than k sums on sparse graphs.
    fn boundary(&self) -> Vec<Vertex> {
        let (g, part) = (self.g, &self.part);
        if self.k == 2 {
            return (0..g.n() as Vertex).filter(|&v| self.is_boundary(v)).collect();
        }
        (0..g.n() as Vertex)
            .filter(|&v| {
                let p = part[v as usize];
                g.adj[g.range(v)].iter().any(|&u| part[u as usize] != p)
            })
            .collect()
    }

    /// The boundary after moves: only the old boundary, the moved vertices and
    /// their neighbours can be on it. Drains the move log; `mark` is all false
    /// on entry and on return.
    fn boundary_after_moves(&mut self, old: &[Vertex], mark: &mut [bool]) -> Vec<Vertex> {
        let mut moved = std::mem::take(&mut self.moved);
        let mut cand: Vec<Vertex> = Vec::with_capacity(old.len() + moved.len() * 4);
        let mut add = |v: Vertex, cand: &mut Vec<Vertex>| {
            if !mark[v as usize] {
                mark[v as usize] = true;
                cand.push(v);
            }
        };
        for &v in old {
            add(v, &mut cand);
        }
        for &v in &moved {
            add(v, &mut cand);
            for i in self.g.range(v) {
                add(self.g.adj[i], &mut cand);
            }
        }
        for &v in &cand {
            mark[v as usize] = false;
        }
        moved.clear();
        self.moved = moved;
        cand.retain(|&v| self.is_boundary(v));
        cand
    }
}

fn passes(m: &Move, p: &RefineParams) -> bool {
    m.gain.0 > p.threshold || (p.tie_break && m.gain.0 == 0 && p.threshold == 0 && m.gain.1 > 0)
}

/// Moves vertices out of overloaded parts, least damage first, until every part
/// is within the limit or nothing can move. Returns the number of moves.
pub fn rebalance(s: &mut State) -> usize {
    if s.balanced() {
        return 0;
    }
    let mut heap = BinaryHeap::new();
    let mut stamp = vec![0u32; s.g.n()];
    for v in 0..s.g.n() as Vertex {
        if s.over(s.part[v as usize]) {
            if let Some(m) = s.best_move(v, true) {
                heap.push((m.gain, Reverse(v), 0u32));
            }
        }
    }
    let mut moves = 0;
    while let Some((gain, Reverse(v), st)) = heap.pop() {
        if s.balanced() {
            break;
        }
        if st != stamp[v as usize] || !s.over(s.part[v as usize]) {
            continue;
        }
        let Some(m) = s.best_move(v, true) else { continue };
        if m.gain != gain {
            heap.push((m.gain, Reverse(v), st));
            continue;
        }
        s.move_to(v, m);
        moves += 1;
        for i in s.g.range(v) {
            let u = s.g.adj[i];
            stamp[u as usize] += 1;
            if s.over(s.part[u as usize]) {
                if let Some(m) = s.best_move(u, true) {
                    heap.push((m.gain, Reverse(u), stamp[u as usize]));
                }
            }
        }
    }
    moves
}

/// The best move target [`State::weigh_k`] has seen: most gain, then least load;
/// `tied` when another target matched it on both (the walk over relations then
/// settles the tie).
#[derive(Clone, Copy)]
struct Target {
    /// The part, `usize::MAX` for none yet.
    part: usize,
    gain: (i64, i64),
    load: i64,
    tied: bool,
}

impl Target {
    const NONE: Target = Target { part: usize::MAX, gain: (0, 0), load: 0, tied: false };

    #[inline(always)]
    fn offer(&mut self, part: usize, gain: (i64, i64), load: i64) {
        if self.part == usize::MAX || (gain, -load) > (self.gain, -self.load) {
            *self = Target { part, gain, load, tied: false };
        } else if (gain, load) == (self.gain, self.load) {
            self.tied = true;
        }
    }

    fn part(&self) -> Option<usize> {
        (self.part != usize::MAX).then_some(self.part)
    }
}

/// Subtasks waiting for room, per part: (lightest first, then by id, stamp).
/// Keys packed by [`gain_queue::pack_wait`].
type Blocked = Vec<BinaryHeap<u128>>;

/// The hill-climbing passes' queues, move log and locks, reused
/// from pass to pass (each pass starts with them empty).
struct HillClimbBuffers {
    heap: GainQueue,
    blocked: Blocked,
    log: Vec<(Vertex, u32, (i64, i64))>,
    locked: Vec<bool>,
}

impl HillClimbBuffers {
    /// Empty buffers for `s`: the ones the last refinement on this thread
    /// gave back (keeping the room they grew), or new ones.
    fn take(s: &State) -> Self {
        let (n, k, bound) = (s.g.n(), s.k, s.conn.crit_bound());
        match CLIMB_BUFFERS.with(|c| c.borrow_mut().take()) {
            Some(mut b) => {
                // Each pass empties the queues and the log itself.
                b.heap.reset(bound, n);
                b.blocked.resize_with(k, BinaryHeap::new);
                debug_assert!(b.locked.iter().all(|&l| !l), "a pass unlocks what it locked");
                b.locked.resize(n, false);
                b
            }
            None => HillClimbBuffers {
                heap: GainQueue::new(bound, n),
                blocked: vec![BinaryHeap::new(); k],
                log: Vec::with_capacity(n),
                locked: vec![false; n],
            },
        }
    }

    /// Gives the buffers back for the next refinement on this thread.
    fn give_back(self) {
        CLIMB_BUFFERS.with(|c| *c.borrow_mut() = Some(self));
    }
}

thread_local! {
    /// Hill-climbing buffers between refinements (a recursive bisection
    /// refines dozens of small tries; allocating and growing their queues
    /// anew each time cost more than the tries' states).
    static CLIMB_BUFFERS: std::cell::RefCell<Option<HillClimbBuffers>> = const { std::cell::RefCell::new(None) };
}

/// One best-first pass over the boundary `bnd`: take the best passing
/// candidate until none is left.
fn pass_all_candidates(s: &mut State, bnd: &[Vertex], p: &RefineParams, stamp: &mut [u32]) -> usize {
    let mut heap = BinaryHeap::new();
    for &v in bnd {
        if let Some(m) = s.best_move(v, false).filter(|m| passes(m, p)) {
            heap.push((m.gain, Reverse(v), stamp[v as usize]));
        }
    }
    let mut moves = 0;
    while let Some((gain, Reverse(v), st)) = heap.pop() {
        if st != stamp[v as usize] {
            continue;
        }
        let Some(m) = s.best_move(v, false).filter(|m| passes(m, p)) else { continue };
        if m.gain != gain {
            heap.push((m.gain, Reverse(v), st));
            continue;
        }
        s.move_to(v, m);
        moves += 1;
        stamp[v as usize] += 1;
        for i in s.g.range(v) {
            let u = s.g.adj[i];
            stamp[u as usize] += 1;
            if let Some(m) = s.best_move(u, false).filter(|m| passes(m, p)) {
                heap.push((m.gain, Reverse(u), stamp[u as usize]));
            }
        }
    }
    moves
}

/// One hill-climbing pass: best move first whatever its gain, each subtask
/// once, stopping `p.hill_climb` moves past the best point; rolls back to it.
/// Returns the number of moves kept.
///
/// Subtasks whose best move is blocked by a full part wait in a heap per
/// part, lightest first, and are weighed again when a move frees enough room
/// there (so that a pair of moves can swap subtasks between full parts).
fn pass_hill_climb(
    s: &mut State,
    bnd: &[Vertex],
    p: &RefineParams,
    stamp: &mut [u32],
    b: &mut HillClimbBuffers,
) -> usize {
    let HillClimbBuffers { heap, blocked, log, locked } = b;
    heap.clear();
    blocked.iter_mut().for_each(BinaryHeap::clear);
    log.clear();
    let weigh = |s: &mut State, v: Vertex, st: u32, heap: &mut GainQueue, blocked: &mut Blocked| {
        let (best, wait) = s.weigh(v, false);
        if let Some(m) = best {
            heap.push(m.gain, v, st);
        }
        if let Some(q) = wait {
            blocked[q as usize].push(gain_queue::pack_wait(s.g.node_w[v as usize], v, st));
        }
    };
    for &v in bnd {
        weigh(s, v, stamp[v as usize], heap, blocked);
    }
    let (mut sum, mut best, mut best_len) = ((0i64, 0i64), (0i64, 0i64), 0usize);
    while let Some((gain, v, st)) = heap.pop() {
        if locked[v as usize] || st != stamp[v as usize] {
            continue;
        }
        let Some(m) = s.best_move(v, false) else { continue };
        if m.gain != gain {
            heap.push(m.gain, v, st);
            continue;
        }
        let from = s.part[v as usize];
        log.push((v, from, m.gain));
        s.move_to(v, m);
        locked[v as usize] = true;
        sum = (sum.0 + m.gain.0, sum.1 + m.gain.1);
        if sum > best {
            (best, best_len) = (sum, log.len());
        } else if log.len() - best_len > p.hill_climb {
            break;
        }
        for i in s.g.range(v) {
            let u = s.g.adj[i];
            if locked[u as usize] {
                continue;
            }
            stamp[u as usize] += 1;
            weigh(s, u, stamp[u as usize], heap, blocked);
        }
        // Room in `from`: weigh again the subtasks that waited for it and fit now.
        let room = s.caps[from as usize] - s.loads[from as usize];
        while let Some((w, u, st)) = blocked[from as usize].peek().map(|&key| gain_queue::unpack_wait(key)) {
            if w > room {
                break;
            }
            blocked[from as usize].pop();
            if !locked[u as usize] && st == stamp[u as usize] {
                stamp[u as usize] += 1;
                weigh(s, u, stamp[u as usize], heap, blocked);
            }
        }
    }
    for &(v, from, gain) in log[best_len..].iter().rev() {
        s.move_to(v, Move { to: from, gain: (-gain.0, -gain.1) });
    }
    for &(v, _, _) in log.iter() {
        locked[v as usize] = false;
        stamp[v as usize] += 1;
    }
    best_len
}

/// One sweep over the boundary `bnd` in flow order.
fn pass_flow_order(s: &mut State, bnd: &[Vertex], p: &RefineParams) -> usize {
    let mut cand = bnd.to_vec();
    cand.sort_unstable_by_key(|&v| s.g.rank[v as usize]);
    let mut moves = 0;
    for v in cand {
        if let Some(m) = s.best_move(v, false).filter(|m| passes(m, p)) {
            s.move_to(v, m);
            moves += 1;
        }
    }
    moves
}

/// Refines `s` in place; leaves it at the best balanced partition seen.
pub fn refine(s: &mut State, p: &RefineParams) -> RefineStats {
    let mut stats = RefineStats::default();
    stats.moves += rebalance(s);
    let n = s.g.n();
    s.moved.clear();
    let mut bnd = s.boundary();
    let mut mark = vec![false; n];
    let mut seen = vec![false; n];
    for &v in &bnd {
        seen[v as usize] = true;
    }
    let mut best: Option<(Vec<u32>, (i64, i64))> = s.balanced().then(|| (s.part.clone(), s.cut));
    let mut stamp = vec![0u32; n];
    let mut climb = (p.hill_climb > 0).then(|| HillClimbBuffers::take(s));
    for _ in 0..p.max_rounds {
        stats.rounds += 1;
        let moved = match p.variant {
            Variant::AllCandidates if p.hill_climb > 0 => {
                pass_hill_climb(s, &bnd, p, &mut stamp, climb.as_mut().expect("hill-climbing buffers"))
            }
            Variant::AllCandidates => pass_all_candidates(s, &bnd, p, &mut stamp),
            Variant::FlowOrder => pass_flow_order(s, &bnd, p),
        };
        stats.moves += moved;
        if s.balanced() && best.as_ref().is_none_or(|b| s.cut < b.1) {
            best = Some((s.part.clone(), s.cut));
        }
        if moved == 0 {
            break;
        }
        bnd = s.boundary_after_moves(&bnd, &mut mark);
        let mut fresh = false;
        for &v in &bnd {
            if !seen[v as usize] {
                seen[v as usize] = true;
                fresh = true;
            }
        }
        if !fresh {
            break;
        }
    }
    if let Some(b) = climb {
        b.give_back();
    }
    if let Some((part, cut)) = best {
        if part != s.part {
            s.restore(&part);
            s.cut = cut;
        }
    }
    stats
}

/// Rank of a partition: over the load limit or not (balanced first), then the
/// (critical, total) cut.
pub type Rank = (bool, (i64, i64));

/// Refines each starting partition `init(t)` for `t` in `0..tries` and keeps
/// the best. Returns the partition, its rank and the moves made in all.
pub fn best_of(
    g: &Graph,
    k: usize,
    cap: i64,
    tries: usize,
    p: &RefineParams,
    mut init: impl FnMut(usize) -> Vec<u32>,
) -> (Vec<u32>, Rank, usize) {
    let mut best: Option<(Vec<u32>, Rank)> = None;
    let mut moves = 0;
    for t in 0..tries.max(1) {
        let mut s = State::new(g, k, cap, init(t));
        moves += refine(&mut s, p).moves;
        let rank = (!s.balanced(), s.cut);
        if best.as_ref().is_none_or(|b| rank < b.1) {
            best = Some((s.part, rank));
        }
    }
    let (part, rank) = best.expect("at least one try");
    (part, rank, moves)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critical::{self, CriticalRule, CriticalValue};
    use crate::generate;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Every vertex's table-based weighing and boundary test against the walk
    /// over its relations, and its sums against a fresh table.
    fn check_against_relations(s: &mut State) {
        let fresh = Connectivity::new(s.g, &s.part, s.k);
        let tested: Vec<Vertex> = (0..s.g.n() as Vertex).filter(|&v| s.is_boundary(v)).collect();
        assert_eq!(s.boundary(), tested, "the boundary's walk and the per-vertex test");
        for v in 0..s.g.n() as Vertex {
            assert_eq!(s.conn.row(v), fresh.row(v), "sums of {v}");
            let p = s.part[v as usize];
            let walked = s.g.range(v).any(|i| s.part[s.g.adj[i] as usize] != p);
            assert_eq!(s.is_boundary(v), walked, "boundary {v}");
            for any_part in [false, true] {
                assert_eq!(s.weigh(v, any_part), s.weigh_relations(v, any_part), "vertex {v}, any part {any_part}");
            }
        }
    }

    #[test]
    fn table_weighing_matches_the_walk_over_relations_through_moves_and_refinement() {
        let mut g = generate::layered_dag(300, 5);
        critical::mark(&mut g, CriticalRule::Path { slack: 0.2 }, CriticalValue::Unit);
        let mut rng = StdRng::seed_from_u64(11);
        for k in [2usize, 3, 8] {
            let part: Vec<u32> = (0..g.n()).map(|_| rng.random_range(0..k as u32)).collect();
            // Tight limits, so that some best moves are blocked.
            let cap = metrics::max_part_weight(&g, k, 0.02);
            let mut s = State::new(&g, k, cap, part);
            check_against_relations(&mut s);
            for _ in 0..200 {
                let v = rng.random_range(0..g.n() as Vertex);
                if let Some(m) = s.best_move(v, true) {
                    s.move_to(v, m);
                }
            }
            check_against_relations(&mut s);
            refine(&mut s, &RefineParams { hill_climb: 64, ..RefineParams::default() });
            check_against_relations(&mut s);
            assert_eq!(s.cut, metrics::cut(&g, &s.part).key());
        }
    }

    #[test]
    fn relations_without_value_are_weighed_by_the_walk() {
        let mut b = crate::graph::GraphBuilder::new();
        for i in 0..4 {
            b.add_vertex(format!("v{i}"), 1);
        }
        b.add_edge(0, 1, 1, 0);
        b.add_edge(1, 2, 5, 1);
        b.add_edge(2, 3, 1, 0);
        let mut g = b.build();
        // The builder keeps weights at 1 or more; a graph built otherwise may not.
        for (w, &c) in g.ew.iter_mut().zip(&g.ec) {
            if c == 0 {
                *w = 0;
            }
        }
        let mut s = State::new(&g, 2, 3, vec![0, 1, 1, 0]);
        // 0's only relation carries nothing, yet 0 is on the boundary.
        assert!(s.is_boundary(0));
        assert_eq!(s.best_move(0, false), Some(Move { to: 1, gain: (0, 0) }));
        check_against_relations(&mut s);
    }
}
