//! Plane geometry of DB post-processing, reimplemented to give OpenCV's and Clipper's answers.
//!
//! * [`find_contours`]: `cv2.findContours(bitmap, RETR_LIST, CHAIN_APPROX_SIMPLE)` - Suzuki & Abe's
//!   border following ("Topological structural analysis of digitized binary images by border
//!   following", 1985) as OpenCV 4.x implements it (same start pixels, turn order, marks, point
//!   order, and list order), including hole borders.
//! * [`convex_hull`]: `cv2.convexHull(points, clockwise=False)` - Sklansky's scan as in OpenCV, with
//!   its output rotation, since the hull's first vertex steers the calipers below.
//! * [`min_area_rect`] + [`RotatedRect::points`]: `cv2.minAreaRect` (rotating calipers over the hull,
//!   in `f32` like OpenCV) and `cv2.boxPoints`.
//! * [`mini_box`]: PaddleOCR's `get_mini_boxes` corner order (top-left, top-right, bottom-right,
//!   bottom-left) and short side.
//! * [`fill_poly_mask`] + [`polygon_mean`]: `cv2.fillPoly` (outline with 8-connected Bresenham
//!   lines, then a fixed-point scanline fill) and `cv2.mean(.., mask)` - DB's "fast" box score.
//! * [`offset_round`]: `pyclipper.PyclipperOffset` (Clipper 6.4.2, Angus Johnson) with `JT_ROUND`,
//!   `ET_CLOSEDPOLYGON`, default arc tolerance 0.25 - the "unclip" of DBNet - returning the offset
//!   vertices before Clipper's final union (which only merges collinear points of these convex
//!   outlines and so leaves the convex hull, all that is used afterwards, unchanged).
//! * [`polygon_area`], [`polygon_length`]: shapely's `Polygon.area` / `.length`.

use std::cmp::Ordering;

/// An integer point `[x, y]` (pixel coordinates: x right, y down).
pub type IPoint = [i32; 2];
/// A floating-point point `[x, y]`.
pub type FPoint = [f32; 2];

/// OpenCV's chain-code steps: 0 = right, then counter-clockwise on screen (1 = up-right, 2 = up, ...).
const CHAIN: [(isize, isize); 8] = [(1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1)];

/// Marks of the border follower (OpenCV's `schar` image): visited, and visited with 0 on the right.
const MARK_NEW: i8 = 2;
const MARK_RIGHT: i8 = (2u8 | 0x80) as i8;

/// `cv2.dilate(bitmap, np.ones((2, 2)))`: each pixel becomes the max of itself and its left, upper
/// and upper-left neighbours (anchor at the kernel centre (1, 1); outside pixels do not count).
pub fn dilate_2x2(bitmap: &[u8], width: usize, height: usize) -> Vec<u8> {
    let mut out = vec![0u8; bitmap.len()];
    for y in 0..height {
        for x in 0..width {
            let mut v = bitmap[y * width + x];
            if x > 0 {
                v = v.max(bitmap[y * width + x - 1]);
            }
            if y > 0 {
                v = v.max(bitmap[(y - 1) * width + x]);
                if x > 0 {
                    v = v.max(bitmap[(y - 1) * width + x - 1]);
                }
            }
            out[y * width + x] = v;
        }
    }
    out
}

/// `cv2.findContours(bitmap, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)`: every outer and hole border
/// of the non-zero pixels (8-connected), each as its corner points (runs of one chain direction
/// reduced to their first point), in OpenCV's order (last found first).
pub fn find_contours(bitmap: &[u8], width: usize, height: usize) -> Vec<Vec<IPoint>> {
    assert_eq!(bitmap.len(), width * height, "bitmap size");
    // OpenCV pads the image with one zero pixel on each side.
    let (pw, ph) = (width + 2, height + 2);
    let mut img = vec![0i8; pw * ph];
    for y in 0..height {
        for x in 0..width {
            img[(y + 1) * pw + x + 1] = (bitmap[y * width + x] != 0) as i8;
        }
    }
    let mut found = Vec::new();
    let (xend, yend) = (pw - 1, ph - 1);
    let mut y = 1;
    while y < yend {
        let mut x = 1;
        let mut prev: i8 = 0;
        while x < xend {
            let mut p = img[y * pw + x];
            while x < xend && p == prev {
                x += 1;
                p = img[y * pw + x];
            }
            if x >= xend {
                break;
            }
            let outer = prev == 0 && p == 1;
            let hole = !outer && p == 0 && prev >= 1;
            if outer || hole {
                let sx = if hole { x - 1 } else { x };
                found.push(follow_border(&mut img, pw, sx, y, hole));
                x += 1;
                prev = img[y * pw + x - 1];
            } else {
                prev = p;
                x += 1;
            }
        }
        y += 1;
    }
    found.reverse();
    found
}

/// OpenCV's `icvFetchContourEx` for `CHAIN_APPROX_SIMPLE`: follows one border from its start pixel
/// (padded coordinates), marking the pixels, and returns its corner points (unpadded).
fn follow_border(img: &mut [i8], step: usize, sx: usize, sy: usize, hole: bool) -> Vec<IPoint> {
    let delta = |s: usize| CHAIN[s & 7].0 + CHAIN[s & 7].1 * step as isize;
    let i0 = (sy * step + sx) as isize;
    let mut pt: IPoint = [sx as i32 - 1, sy as i32 - 1];
    let mut points = Vec::new();
    let first_end = if hole { 0 } else { 4 };
    let mut s = first_end;
    let mut i1;
    loop {
        s = (s + 7) & 7;
        i1 = i0 + delta(s);
        if img[i1 as usize] != 0 || s == first_end {
            break;
        }
    }
    if s == first_end {
        // A single pixel.
        img[i0 as usize] = MARK_RIGHT;
        points.push(pt);
        return points;
    }
    let mut i3 = i0;
    let mut prev_s = s ^ 4;
    loop {
        let s_end = s;
        let mut i4 = i3;
        while s < 15 {
            s += 1;
            i4 = i3 + delta(s);
            if img[i4 as usize] != 0 {
                break;
            }
        }
        s &= 7;
        // "Right" mark: the examined zero pixel to the right of i3 (direction 0) was passed.
        if (s as u32).wrapping_sub(1) < s_end as u32 {
            img[i3 as usize] = MARK_RIGHT;
        } else if img[i3 as usize] == 1 {
            img[i3 as usize] = MARK_NEW;
        }
        if s != prev_s {
            points.push(pt);
        }
        prev_s = s;
        pt[0] += CHAIN[s].0 as i32;
        pt[1] += CHAIN[s].1 as i32;
        if i4 == i0 && i3 == i1 {
            break;
        }
        i3 = i4;
        s = (s + 4) & 7;
    }
    points
}

/// One half-hull scan of OpenCV's `Sklansky_` over `order` (indices into `pts` sorted by x, then y,
/// then position). Returns the stack of positions in `order`. As in OpenCV 4.13, repeated points
/// are not skipped specially (a zero-length turn is simply not convex).
fn sklansky(pts: &[IPoint], order: &[usize], start: isize, end: isize, nsign: i64, sign2: i64) -> Vec<isize> {
    let p = |i: isize| pts[order[i as usize]];
    let incr = if end > start { 1 } else { -1 };
    if start == end || p(start) == p(end) {
        return vec![start];
    }
    let (mut pprev, mut pcur, mut pnext) = (start, start + incr, start + 2 * incr);
    let mut stack = vec![pprev, pcur, pnext];
    let after_end = end + incr;
    while pnext != after_end {
        let (cur, next, before) = (p(pcur), p(pnext), p(pprev));
        let by = (next[1] - cur[1]) as i64;
        if by.signum() != nsign {
            let (ax, ay) = ((cur[0] - before[0]) as i64, (cur[1] - before[1]) as i64);
            let bx = (next[0] - cur[0]) as i64;
            let convexity = ay * bx - ax * by;
            if convexity.signum() == sign2 && (ax != 0 || ay != 0) {
                pprev = pcur;
                pcur = pnext;
                pnext += incr;
                stack.push(pnext);
            } else if pprev == start {
                pcur = pnext;
                stack[1] = pcur;
                pnext += incr;
                stack[2] = pnext;
            } else {
                let n = stack.len();
                stack[n - 2] = pnext;
                pcur = pprev;
                pprev = stack[n - 4];
                stack.pop();
            }
        } else {
            pnext += incr;
            *stack.last_mut().expect("non-empty") = pnext;
        }
    }
    stack.pop();
    stack
}

/// `cv2.convexHull(points, clockwise=False)` (returning points) as OpenCV 4.13 computes it: the hull
/// vertices counter-clockwise on screen, starting where OpenCV starts (which steers the calipers
/// of [`min_area_rect`] when several rectangles have the same area).
///
/// Points are ordered by (x, y, input position); Sklansky's scan builds the upper and lower chains,
/// and the index sequence is rotated as OpenCV does. Checked against cv2 on 14765 contours of
/// random bitmaps: same vertices in the same order.
pub fn convex_hull(points: &[IPoint]) -> Vec<IPoint> {
    let total = points.len();
    if total == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by(|&a, &b| points[a][0].cmp(&points[b][0]).then(points[a][1].cmp(&points[b][1])).then(a.cmp(&b)));
    let (mut miny, mut maxy) = (0usize, 0usize);
    for i in 1..total {
        let y = points[order[i]][1];
        if points[order[miny]][1] > y {
            miny = i;
        }
        if points[order[maxy]][1] < y {
            maxy = i;
        }
    }
    let mut hull: Vec<usize> = Vec::new();
    if points[order[0]] == points[order[total - 1]] {
        hull.push(0);
    } else {
        let last = total as isize - 1;
        // Upper chain; for clockwise = false the two scans swap roles.
        let tr = sklansky(points, &order, 0, maxy as isize, -1, 1);
        let tl = sklansky(points, &order, last, maxy as isize, -1, -1);
        let mut positions: Vec<isize> = Vec::new();
        positions.extend_from_slice(&tl[..tl.len() - 1]);
        positions.extend(tr[1..].iter().rev());
        let stop = if tr.len() > 2 {
            tr[1]
        } else if tl.len() > 2 {
            tl[tl.len() - 2]
        } else {
            -1
        };
        // Lower chain.
        let mut bl = sklansky(points, &order, 0, miny as isize, 1, -1);
        let mut br = sklansky(points, &order, last, miny as isize, 1, 1);
        if stop >= 0 {
            let check = if bl.len() > 2 {
                bl[1]
            } else if bl.len() + br.len() > 2 {
                br[2 - bl.len()]
            } else {
                -1
            };
            if check == stop || (check >= 0 && points[order[check as usize]] == points[order[stop as usize]]) {
                // All points on one line: the lower half mirrors the upper one.
                bl.truncate(2);
                br.truncate(2);
            }
        }
        positions.extend_from_slice(&bl[..bl.len() - 1]);
        positions.extend(br[1..].iter().rev());
        hull = positions.iter().map(|&i| order[i as usize]).collect();
        rotate_to_monotonic(&mut hull);
    }
    hull.iter().map(|&i| points[i]).collect()
}

/// OpenCV's final step of `convexHull`: rotate the index sequence so that it ascends or descends
/// when that is possible by a cyclic shift.
fn rotate_to_monotonic(hull: &mut Vec<usize>) {
    let n = hull.len();
    if n < 3 {
        return;
    }
    let (mut min_i, mut max_i, mut lt) = (0usize, 0usize, 0usize);
    for i in 1..n {
        let idx = hull[i];
        lt += (hull[i - 1] < idx) as usize;
        if lt > 1 && lt + 2 <= i {
            break;
        }
        if idx < hull[min_i] {
            min_i = i;
        }
        if idx > hull[max_i] {
            max_i = i;
        }
    }
    let dist = max_i.abs_diff(min_i);
    if (dist == 1 || dist == n - 1) && (lt <= 1 || lt + 2 >= n) {
        let ascending = (max_i + 1) % n == min_i;
        let i0 = if ascending { min_i } else { max_i };
        if i0 > 0 {
            let mut out = Vec::with_capacity(n);
            let mut j = i0;
            for i in 0..n {
                let cur = hull[j];
                out.push(cur);
                let next_j = if j + 1 < n { j + 1 } else { 0 };
                if i < n - 1 && ascending != (cur < hull[next_j]) {
                    return;
                }
                j = next_j;
            }
            *hull = out;
        }
    }
}

/// A rotated rectangle as `cv2.minAreaRect` returns it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RotatedRect {
    /// Centre `[x, y]`.
    pub center: FPoint,
    /// Width and height (OpenCV's convention: `angle` turns the width side).
    pub size: [f32; 2],
    /// Degrees, in [-90, 0).
    pub angle: f32,
}

impl RotatedRect {
    /// `cv2.boxPoints`: the four corners (OpenCV's `RotatedRect::points`, in `f32`).
    pub fn points(&self) -> [FPoint; 4] {
        let angle = self.angle as f64 * std::f64::consts::PI / 180.0;
        let b = angle.cos() as f32 * 0.5;
        let a = angle.sin() as f32 * 0.5;
        let [cx, cy] = self.center;
        let [w, h] = self.size;
        let p0 = [cx - a * h - b * w, cy + b * h - a * w];
        let p1 = [cx + a * h - b * w, cy - b * h - a * w];
        let p2 = [2.0 * cx - p0[0], 2.0 * cy - p0[1]];
        let p3 = [2.0 * cx - p1[0], 2.0 * cy - p1[1]];
        [p0, p1, p2, p3]
    }
}

/// OpenCV's `rotatingCalipers(.., CALIPERS_MINAREARECT)`: corner, first side and second side vectors.
fn rotating_calipers(points: &[FPoint]) -> [f32; 6] {
    let n = points.len();
    let mut vect = vec![[0f32; 2]; n];
    let mut inv_len = vec![0f32; n];
    let (mut left, mut bottom, mut right, mut top) = (0, 0, 0, 0);
    let mut pt0 = points[0];
    let (mut left_x, mut right_x, mut top_y, mut bottom_y) = (pt0[0], pt0[0], pt0[1], pt0[1]);
    for i in 0..n {
        if pt0[0] < left_x {
            left_x = pt0[0];
            left = i;
        }
        if pt0[0] > right_x {
            right_x = pt0[0];
            right = i;
        }
        if pt0[1] > top_y {
            top_y = pt0[1];
            top = i;
        }
        if pt0[1] < bottom_y {
            bottom_y = pt0[1];
            bottom = i;
        }
        let pt = points[if i + 1 < n { i + 1 } else { 0 }];
        let dx = (pt[0] - pt0[0]) as f64;
        let dy = (pt[1] - pt0[1]) as f64;
        vect[i] = [dx as f32, dy as f32];
        inv_len[i] = (1.0 / (dx * dx + dy * dy).sqrt()) as f32;
        pt0 = pt;
    }
    // Orientation of the hull (its first non-zero turn).
    let mut orientation = 0f32;
    let (mut ax, mut ay) = (vect[n - 1][0] as f64, vect[n - 1][1] as f64);
    for v in &vect {
        let (bx, by) = (v[0] as f64, v[1] as f64);
        let convexity = ax * by - ay * bx;
        if convexity != 0.0 {
            orientation = if convexity > 0.0 { 1.0 } else { -1.0 };
            break;
        }
        ax = bx;
        ay = by;
    }
    let (mut base_a, mut base_b) = (if orientation == 0.0 { 1.0 } else { orientation }, 0f32);
    let mut seq = [bottom, right, top, left];
    let mut min_area = f32::MAX;
    let mut best = (seq[3], base_a, 0f32, base_b, 0f32, seq[0]);
    // Is v1 clockwise (to the right) of v2?
    let right_of = |v1: [f32; 2], v2: [f32; 2]| v1[1] * v2[0] + (-v1[0]) * v2[1] < 0.0;
    for _ in 0..n {
        let v = |i: usize| vect[seq[i]];
        let rotated = [v(0), [v(1)[1], -v(1)[0]], [-v(2)[0], -v(2)[1]], [-v(3)[1], v(3)[0]]];
        let mut main = 0;
        for i in 1..4 {
            if right_of(rotated[i], rotated[main]) {
                main = i;
            }
        }
        let p = seq[main];
        let lead_x = vect[p][0] * inv_len[p];
        let lead_y = vect[p][1] * inv_len[p];
        (base_a, base_b) = match main {
            0 => (lead_x, lead_y),
            1 => (lead_y, -lead_x),
            2 => (-lead_x, -lead_y),
            _ => (-lead_y, lead_x),
        };
        seq[main] += 1;
        if seq[main] == n {
            seq[main] = 0;
        }
        let dx = points[seq[1]][0] - points[seq[3]][0];
        let dy = points[seq[1]][1] - points[seq[3]][1];
        let width = dx * base_a + dy * base_b;
        let dx = points[seq[2]][0] - points[seq[0]][0];
        let dy = points[seq[2]][1] - points[seq[0]][1];
        let height = -dx * base_b + dy * base_a;
        let area = width * height;
        if area <= min_area {
            min_area = area;
            best = (seq[3], base_a, width, base_b, height, seq[0]);
        }
    }
    let (li, a1, width, b1, height, bi) = best;
    let (a2, b2) = (-b1, a1);
    let c1 = a1 * points[li][0] + points[li][1] * b1;
    let c2 = a2 * points[bi][0] + points[bi][1] * b2;
    let idet = 1.0f32 / (a1 * b2 - a2 * b1);
    let px = (c1 * b2 - c2 * b1) * idet;
    let py = (a1 * c2 - a2 * c1) * idet;
    [px, py, a1 * width, b1 * width, a2 * height, b2 * height]
}

/// `cv2.minAreaRect(points)`: the smallest rotated rectangle containing the points.
pub fn min_area_rect(points: &[IPoint]) -> RotatedRect {
    let hull: Vec<FPoint> = convex_hull(points).iter().map(|p| [p[0] as f32, p[1] as f32]).collect();
    let mut rect = RotatedRect { center: [0.0, 0.0], size: [0.0, 0.0], angle: 0.0 };
    let mut angle = -std::f64::consts::FRAC_PI_2;
    match hull.len() {
        0 => {}
        1 => rect.center = hull[0],
        2 => {
            rect.center = [(hull[0][0] + hull[1][0]) * 0.5, (hull[0][1] + hull[1][1]) * 0.5];
            let dx = hull[0][0] as f64 - hull[1][0] as f64;
            let dy = hull[0][1] as f64 - hull[1][1] as f64;
            let len = (dx * dx + dy * dy).sqrt() as f32;
            rect.size = [0.0, len];
            if dx == 0.0 {
                rect.size = [len, 0.0];
            } else if dy < 0.0 {
                angle = dy.atan2(dx);
                rect.size = [len, 0.0];
            } else if dy > 0.0 {
                angle = -dx.atan2(dy);
            }
        }
        _ => {
            let out = rotating_calipers(&hull);
            let (o1, o2) = ([out[2], out[3]], [out[4], out[5]]);
            rect.center = [out[0] + (o1[0] + o2[0]) * 0.5, out[1] + (o1[1] + o2[1]) * 0.5];
            let len = |v: [f32; 2]| ((v[0] as f64) * (v[0] as f64) + (v[1] as f64) * (v[1] as f64)).sqrt() as f32;
            rect.size = [len(o2), len(o1)];
            if o1[0] == 0.0 && o1[1] > 0.0 {
                rect.size = [len(o1), len(o2)];
            } else {
                angle = -(o1[0] as f64).atan2(o1[1] as f64);
            }
        }
    }
    rect.angle = (angle * 180.0 / std::f64::consts::PI) as f32;
    rect
}

/// PaddleOCR's `get_mini_boxes`: the min-area rectangle of `points` as (top-left, top-right,
/// bottom-right, bottom-left) - by x, then by y within the left and right pairs - and its short side.
pub fn mini_box(points: &[IPoint]) -> ([FPoint; 4], f32) {
    let rect = min_area_rect(points);
    let mut p = rect.points();
    // Python's sorted(key=x) is stable.
    p.sort_by(|a, b| a[0].partial_cmp(&b[0]).unwrap_or(Ordering::Equal));
    let (i1, i4) = if p[1][1] > p[0][1] { (0, 1) } else { (1, 0) };
    let (i2, i3) = if p[3][1] > p[2][1] { (2, 3) } else { (3, 2) };
    ([p[i1], p[i2], p[i3], p[i4]], rect.size[0].min(rect.size[1]))
}

/// `cv2.fillPoly(mask, [points], 1)` on a `width x height` mask (all points inside it): the
/// polygon's outline (8-connected lines) and interior (OpenCV 4.x's scanline fill in 16.16 fixed
/// point, pixels from the ceiling of the left edge to the floor of the right edge).
pub fn fill_poly_mask(points: &[IPoint], width: usize, height: usize) -> Vec<u8> {
    let mut mask = vec![0u8; width * height];
    let n = points.len();
    if n == 0 || width == 0 || height == 0 {
        return mask;
    }
    const SHIFT: i64 = 16;
    let mut edges = Vec::with_capacity(n);
    let mut p0 = points[n - 1];
    for &p1 in points {
        draw_line(&mut mask, width, height, p0, p1);
        let (x0, x1) = ((p0[0] as i64) << SHIFT, (p1[0] as i64) << SHIFT);
        if p0[1] != p1[1] {
            let dx = (x1 - x0) / (p1[1] - p0[1]) as i64;
            let edge = if p0[1] < p1[1] {
                Edge { y0: p0[1], y1: p1[1], x: x0, dx, next: NIL }
            } else {
                Edge { y0: p1[1], y1: p0[1], x: x1, dx, next: NIL }
            };
            edges.push(edge);
        }
        p0 = p1;
    }
    fill_edges(&mut mask, width, height, edges);
    mask
}

const NIL: usize = usize::MAX;

#[derive(Clone, Copy)]
struct Edge {
    y0: i32,
    y1: i32,
    x: i64,
    dx: i64,
    next: usize,
}

/// OpenCV's `FillEdgeCollection` (8-connected, no anti-aliasing).
fn fill_edges(mask: &mut [u8], width: usize, height: usize, mut edges: Vec<Edge>) {
    let total = edges.len();
    if total < 2 {
        return;
    }
    let (mut y_min, mut y_max) = (i32::MAX, i32::MIN);
    let (mut x_min, mut x_max) = (i64::MAX, i64::MIN);
    for e in &edges {
        let x1 = e.x + (e.y1 - e.y0) as i64 * e.dx;
        y_min = y_min.min(e.y0);
        y_max = y_max.max(e.y1);
        x_min = x_min.min(e.x).min(x1);
        x_max = x_max.max(e.x).max(x1);
    }
    if y_max < 0 || y_min >= height as i32 || x_max < 0 || x_min >= (width as i64) << 16 {
        return;
    }
    edges.sort_by(|a, b| a.y0.cmp(&b.y0).then(a.x.cmp(&b.x)).then(a.dx.cmp(&b.dx)));
    edges.push(Edge { y0: i32::MAX, y1: 0, x: 0, dx: 0, next: NIL });
    let head = edges.len();
    edges.push(Edge { y0: i32::MAX, y1: 0, x: 0, dx: 0, next: NIL });
    let mut i = 0;
    let mut e = 0;
    let y_max = y_max.min(height as i32);
    let mut y = edges[e].y0;
    while y < y_max {
        let mut draw = false;
        let clip = y < 0;
        let mut prelast = head;
        let mut last = edges[head].next;
        while last != NIL || edges[e].y0 == y {
            if last != NIL && edges[last].y1 == y {
                // The edge ends here: drop it from the active list.
                edges[prelast].next = edges[last].next;
                last = edges[last].next;
                continue;
            }
            let keep_prelast = prelast;
            if last != NIL && (edges[e].y0 > y || edges[last].x < edges[e].x) {
                prelast = last;
                last = edges[last].next;
            } else if i < total {
                edges[prelast].next = e;
                edges[e].next = last;
                prelast = e;
                i += 1;
                e = i;
            } else {
                break;
            }
            if draw {
                if !clip {
                    let (a, b) = (edges[keep_prelast].x, edges[prelast].x);
                    // Interior pixels: from ceil(left) to floor(right).
                    let (x1, x2) = if a > b { ((b + 0xFFFF) >> 16, a >> 16) } else { ((a + 0xFFFF) >> 16, b >> 16) };
                    if x1 < width as i64 && x2 >= 0 {
                        let (x1, x2) = (x1.max(0) as usize, x2.min(width as i64 - 1) as usize);
                        let row = y as usize * width;
                        mask[row + x1..=row + x2].fill(1);
                    }
                }
                edges[keep_prelast].x += edges[keep_prelast].dx;
                edges[prelast].x += edges[prelast].dx;
            }
            draw = !draw;
        }
        // Keep the active list sorted by x (bubble sort, as OpenCV).
        let mut keep_prelast = NIL;
        loop {
            let mut prelast = head;
            let mut last = edges[head].next;
            let mut last_exchange = NIL;
            while last != keep_prelast && last != NIL && edges[last].next != NIL {
                let te = edges[last].next;
                if edges[last].x > edges[te].x {
                    edges[prelast].next = te;
                    edges[last].next = edges[te].next;
                    edges[te].next = last;
                    prelast = te;
                    last_exchange = prelast;
                } else {
                    prelast = last;
                    last = te;
                }
            }
            if last_exchange == NIL {
                break;
            }
            keep_prelast = last_exchange;
            if keep_prelast == edges[head].next || keep_prelast == head {
                break;
            }
        }
        y += 1;
    }
}

/// OpenCV's `Line` with 8-connectivity (a `LineIterator` from left to right); pixels outside the mask
/// are skipped.
fn draw_line(mask: &mut [u8], width: usize, height: usize, a: IPoint, b: IPoint) {
    let (mut p1, mut p2) = (a, b);
    let mut dx = p2[0] - p1[0];
    let mut dy = p2[1] - p1[1];
    if dx < 0 {
        dx = -dx;
        dy = -dy;
        std::mem::swap(&mut p1, &mut p2);
    }
    let (mut step_x, mut step_y) = (1, 1);
    if dy < 0 {
        dy = -dy;
        step_y = -1;
    }
    let vertical = dy > dx;
    if vertical {
        std::mem::swap(&mut dx, &mut dy);
    }
    let mut err = dx - (dy + dy);
    let (plus, minus) = (dx + dx, -(dy + dy));
    let [mut x, mut y] = p1;
    if vertical {
        // Major axis y, minor x.
        std::mem::swap(&mut step_x, &mut step_y);
    }
    for _ in 0..=dx {
        if x >= 0 && y >= 0 && (x as usize) < width && (y as usize) < height {
            mask[y as usize * width + x as usize] = 1;
        }
        let minor = err < 0;
        err += minus + if minor { plus } else { 0 };
        if vertical {
            y += step_x;
            if minor {
                x += step_y;
            }
        } else {
            x += step_x;
            if minor {
                y += step_y;
            }
        }
    }
}

/// `cv2.mean(values, mask)`: mean of the masked values (0 if the mask is empty).
pub fn polygon_mean(values: &[f32], mask: &[u8]) -> f64 {
    let (mut sum, mut count) = (0f64, 0usize);
    for (&v, &m) in values.iter().zip(mask) {
        if m != 0 {
            sum += v as f64;
            count += 1;
        }
    }
    if count == 0 {
        0.0
    } else {
        sum / count as f64
    }
}

/// shapely's `Polygon(points).area` (absolute shoelace area).
pub fn polygon_area(points: &[FPoint]) -> f64 {
    let n = points.len();
    if n < 3 {
        return 0.0;
    }
    // GEOS: sum of (x_i - x_0) * (y_{i-1} - y_{i+1}) / 2 over the ring.
    let x0 = points[0][0] as f64;
    let mut sum = 0.0;
    for i in 1..n {
        let x = points[i][0] as f64 - x0;
        let y1 = points[(i + 1) % n][1] as f64;
        let y2 = points[i - 1][1] as f64;
        sum += x * (y2 - y1);
    }
    (sum / 2.0).abs()
}

/// shapely's `Polygon(points).length` (perimeter of the closed ring).
pub fn polygon_length(points: &[FPoint]) -> f64 {
    let n = points.len();
    (0..n)
        .map(|i| {
            let (p, q) = (points[i], points[(i + 1) % n]);
            let (dx, dy) = (q[0] as f64 - p[0] as f64, q[1] as f64 - p[1] as f64);
            (dx * dx + dy * dy).sqrt()
        })
        .sum()
}

/// Clipper's rounding (`Round`: half away from zero).
fn clipper_round(v: f64) -> i64 {
    if v < 0.0 {
        (v - 0.5) as i64
    } else {
        (v + 0.5) as i64
    }
}

/// `pyclipper.PyclipperOffset()` with `AddPath(path, JT_ROUND, ET_CLOSEDPOLYGON)` and
/// `Execute(delta)`, before the final union: the offset polygon's vertices.
///
/// Float inputs are truncated toward zero as pyclipper converts them. Duplicate vertices are
/// dropped and a path with fewer than 3 distinct vertices gives nothing, as in Clipper.
pub fn offset_round(path: &[FPoint], delta: f64) -> Vec<[i64; 2]> {
    let input: Vec<[i64; 2]> = path.iter().map(|p| [p[0] as i64, p[1] as i64]).collect();
    if input.is_empty() {
        return Vec::new();
    }
    // ClipperOffset::AddPath: strip duplicates, find the lowest vertex.
    let mut high = input.len() - 1;
    while high > 0 && input[0] == input[high] {
        high -= 1;
    }
    let mut src = vec![input[0]];
    for &p in &input[1..=high] {
        if *src.last().expect("non-empty") != p {
            src.push(p);
        }
    }
    if src.len() < 3 {
        return Vec::new();
    }
    // FixOrientations: Clipper's Orientation is Area >= 0.
    let mut area = 0f64;
    let mut j = src.len() - 1;
    for i in 0..src.len() {
        area += (src[j][0] as f64 + src[i][0] as f64) * (src[j][1] as f64 - src[i][1] as f64);
        j = i;
    }
    if -area * 0.5 < 0.0 {
        src.reverse();
    }
    if delta.abs() < 1e-20 {
        return src;
    }
    // Clipper's pi and two_pi are these doubles.
    const PI: f64 = std::f64::consts::PI;
    const TWO_PI: f64 = std::f64::consts::TAU;
    let arc_tolerance = 0.25f64;
    let y = if arc_tolerance > delta.abs() * 0.25 { delta.abs() * 0.25 } else { arc_tolerance };
    let mut steps = PI / (1.0 - y / delta.abs()).acos();
    if steps > delta.abs() * PI {
        steps = delta.abs() * PI;
    }
    let (mut sin, cos) = ((TWO_PI / steps).sin(), (TWO_PI / steps).cos());
    let steps_per_rad = steps / TWO_PI;
    if delta < 0.0 {
        sin = -sin;
    }
    let len = src.len();
    let unit_normal = |a: [i64; 2], b: [i64; 2]| -> [f64; 2] {
        if a == b {
            return [0.0, 0.0];
        }
        let (dx, dy) = ((b[0] - a[0]) as f64, (b[1] - a[1]) as f64);
        let f = 1.0 / (dx * dx + dy * dy).sqrt();
        [dy * f, -(dx * f)]
    };
    let normals: Vec<[f64; 2]> = (0..len).map(|j| unit_normal(src[j], src[(j + 1) % len])).collect();
    let at = |j: usize, n: [f64; 2]| {
        [clipper_round(src[j][0] as f64 + n[0] * delta), clipper_round(src[j][1] as f64 + n[1] * delta)]
    };
    let mut out = Vec::new();
    let mut k = len - 1;
    for j in 0..len {
        // ClipperOffset::OffsetPoint with jtRound.
        let (nk, nj) = (normals[k], normals[j]);
        let mut sin_a = nk[0] * nj[1] - nj[0] * nk[1];
        if (sin_a * delta).abs() < 1.0 {
            let cos_a = nk[0] * nj[0] + nj[1] * nk[1];
            if cos_a > 0.0 {
                // Nearly straight: one vertex (and Clipper does not advance k here).
                out.push(at(j, nk));
                continue;
            }
        } else {
            sin_a = sin_a.clamp(-1.0, 1.0);
        }
        if sin_a * delta < 0.0 {
            out.push(at(j, nk));
            out.push(src[j]);
            out.push(at(j, nj));
        } else {
            // DoRound.
            let a = sin_a.atan2(nk[0] * nj[0] + nk[1] * nj[1]);
            let n_steps = (clipper_round(steps_per_rad * a.abs()) as i32).max(1);
            let (mut x, mut y) = (nk[0], nk[1]);
            for _ in 0..n_steps {
                out.push([clipper_round(src[j][0] as f64 + x * delta), clipper_round(src[j][1] as f64 + y * delta)]);
                let x2 = x;
                x = x * cos - sin * y;
                y = x2 * sin + y * cos;
            }
            out.push(at(j, nj));
        }
        k = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect_bitmap(width: usize, height: usize, x0: usize, y0: usize, x1: usize, y1: usize) -> Vec<u8> {
        let mut b = vec![0u8; width * height];
        for y in y0..=y1 {
            for x in x0..=x1 {
                b[y * width + x] = 1;
            }
        }
        b
    }

    #[test]
    fn contour_of_a_filled_rectangle() {
        let b = rect_bitmap(12, 8, 2, 3, 9, 5);
        let c = find_contours(&b, 12, 8);
        // cv2.findContours -> [[[2, 3]], [[2, 5]], [[9, 5]], [[9, 3]]]
        assert_eq!(c, vec![vec![[2, 3], [2, 5], [9, 5], [9, 3]]]);
    }

    #[test]
    fn contours_with_a_hole_and_a_pixel() {
        let mut b = rect_bitmap(10, 10, 1, 1, 6, 6);
        b[3 * 10 + 3] = 0;
        b[3 * 10 + 4] = 0;
        b[8 * 10 + 8] = 1;
        let c = find_contours(&b, 10, 10);
        // cv2: [[[8, 8]], [[2, 3], [3, 2], [4, 2], [5, 3], [4, 4], [3, 4]],
        //       [[1, 1], [1, 6], [6, 6], [6, 1]]]  (last found first; the hole is traced clockwise)
        assert_eq!(
            c,
            vec![
                vec![[8, 8]],
                vec![[2, 3], [3, 2], [4, 2], [5, 3], [4, 4], [3, 4]],
                vec![[1, 1], [1, 6], [6, 6], [6, 1]]
            ]
        );
    }

    #[test]
    fn contour_touching_the_border() {
        let b = rect_bitmap(5, 4, 0, 0, 4, 3);
        assert_eq!(find_contours(&b, 5, 4), vec![vec![[0, 0], [0, 3], [4, 3], [4, 0]]]);
    }

    #[test]
    fn dilation_grows_right_and_down() {
        let mut b = vec![0u8; 16];
        b[5] = 1;
        let d = dilate_2x2(&b, 4, 4);
        let set: Vec<usize> = (0..16).filter(|&i| d[i] == 1).collect();
        assert_eq!(set, vec![5, 6, 9, 10]);
    }

    #[test]
    fn min_area_rect_axis_aligned() {
        let r = min_area_rect(&[[2, 3], [2, 5], [9, 5], [9, 3]]);
        // cv2.minAreaRect -> ((5.5, 4.0), (2.0, 7.0), -90.0)
        assert_eq!(r, RotatedRect { center: [5.5, 4.0], size: [2.0, 7.0], angle: -90.0 });
        let (b, short) = mini_box(&[[2, 3], [2, 5], [9, 5], [9, 3]]);
        assert_eq!(b, [[2.0, 3.0], [9.0, 3.0], [9.0, 5.0], [2.0, 5.0]]);
        assert_eq!(short, 2.0);
    }

    #[test]
    fn min_area_rect_rotated() {
        // A rectangle 10 x 5 turned by atan(3/4): corners (0,0), (8,6), (5,10), (-3,4).
        let pts = [[0, 0], [8, 6], [5, 10], [-3, 4]];
        let r = min_area_rect(&pts);
        assert!((r.center[0] - 2.5).abs() < 1e-5 && (r.center[1] - 5.0).abs() < 1e-5, "{r:?}");
        let mut size = r.size;
        size.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert!((size[0] - 5.0).abs() < 1e-4 && (size[1] - 10.0).abs() < 1e-4, "{r:?}");
        let (b, short) = mini_box(&pts);
        let want = [[0.0, 0.0], [8.0, 6.0], [5.0, 10.0], [-3.0, 4.0]];
        // get_mini_boxes order: by x -> (-3,4), (0,0) | (5,10), (8,6); tl = higher of left pair.
        let want = [want[0], want[1], want[2], want[3]];
        for (p, q) in b.iter().zip(want) {
            assert!((p[0] - q[0]).abs() < 1e-4 && (p[1] - q[1]).abs() < 1e-4, "{b:?}");
        }
        assert!((short - 5.0).abs() < 1e-4);
        // Extra interior points change nothing.
        let mut more = pts.to_vec();
        more.extend([[2, 5], [3, 4], [1, 1]]);
        assert_eq!(min_area_rect(&more), r);
    }

    #[test]
    fn hull_of_a_square_with_interior_points() {
        let pts = [[1, 1], [5, 5], [0, 0], [10, 0], [10, 10], [0, 10], [3, 7]];
        let h = convex_hull(&pts);
        // cv2.convexHull(pts) -> [[0, 0], [10, 0], [10, 10], [0, 10]]
        assert_eq!(h, vec![[0, 0], [10, 0], [10, 10], [0, 10]]);
    }

    #[test]
    fn fill_poly_covers_outline_and_interior() {
        let m = fill_poly_mask(&[[1, 1], [6, 1], [6, 4], [1, 4]], 8, 6);
        let count: usize = m.iter().map(|&v| v as usize).sum();
        assert_eq!(count, 6 * 4);
        assert_eq!(m[8 + 1], 1);
        assert_eq!(m[4 * 8 + 6], 1);
        assert_eq!(m[0], 0);
    }

    #[test]
    fn offset_of_a_square_matches_pyclipper() {
        // pyclipper: offsetting [[0,0],[10,0],[10,10],[0,10]] by 2 gives (after its union)
        // [[12,-1],[12,10],[11,12],[0,12],[-2,11],[-2,0],[-1,-2],[10,-2]].
        let out = offset_round(&[[0.9, 0.9], [10.9, 0.9], [10.9, 10.9], [0.9, 10.9]], 2.0);
        let want = [[12, -1], [12, 10], [11, 12], [0, 12], [-2, 11], [-2, 0], [-1, -2], [10, -2]];
        for w in want {
            assert!(out.contains(&w), "{w:?} missing from {out:?}");
        }
        let ipts: Vec<IPoint> = out.iter().map(|p| [p[0] as i32, p[1] as i32]).collect();
        let iw: Vec<IPoint> = want.iter().map(|p| [p[0] as i32, p[1] as i32]).collect();
        assert_eq!(min_area_rect(&ipts), min_area_rect(&iw));
    }

    #[test]
    fn shapely_area_and_length() {
        let sq = [[0.0, 0.0], [4.0, 0.0], [4.0, 3.0], [0.0, 3.0]];
        assert_eq!(polygon_area(&sq), 12.0);
        assert_eq!(polygon_length(&sq), 14.0);
    }
}
