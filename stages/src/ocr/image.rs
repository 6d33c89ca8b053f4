//! 8-bit images and the OpenCV pixel operations the pipeline needs, reimplemented bit-exactly.
//!
//! * [`load_png`] / [`decode_png`]: PNG -> [`Image`] as rapidocr's `LoadImage` sees it (gray stays one
//!   channel, standing for B=G=R; colour becomes BGR).
//! * [`resize_linear`]: `cv2.resize(.., INTER_LINEAR)` for 8-bit images, with OpenCV's pixel-centre
//!   convention and fixed-point arithmetic (11-bit coefficients; the vertical pass rounds like
//!   OpenCV's SIMD kernel), so the output equals cv2's byte for byte.
//! * [`perspective_transform`] + [`warp_perspective_cubic`]: `cv2.getPerspectiveTransform` (8x8 LU with
//!   partial pivoting) and `cv2.warpPerspective(.., INTER_CUBIC, BORDER_REPLICATE)` (inverse map with
//!   cofactors, source coordinates quantized to 1/32 pixel, 4x4 bicubic kernel with a = -0.75 in
//!   15-bit fixed point).
//! * [`Image::rot90`]: `np.rot90` (counter-clockwise).

use std::fmt;
use std::path::Path;

/// An 8-bit image, rows top to bottom, pixels interleaved.
///
/// `channels` is 1 (gray, standing for B=G=R as after `cv2.COLOR_GRAY2BGR`) or 3 (BGR, OpenCV's
/// order). Every operation here works per channel, so a gray image gives exactly what its BGR
/// replication would.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// 1 (gray) or 3 (BGR).
    pub channels: usize,
    /// `height * width * channels` bytes.
    pub data: Vec<u8>,
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Image({}x{}x{})", self.width, self.height, self.channels)
    }
}

/// Why an image could not be loaded.
#[derive(Debug)]
pub enum ImageError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The PNG decoder failed.
    Png(String),
    /// A PNG layout this loader does not handle.
    Unsupported(String),
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Io(e) => write!(f, "cannot read the image: {e}"),
            ImageError::Png(e) => write!(f, "cannot decode the PNG: {e}"),
            ImageError::Unsupported(e) => write!(f, "unsupported PNG: {e}"),
        }
    }
}

impl std::error::Error for ImageError {}

impl Image {
    /// An image of the given size filled with `value`.
    pub fn filled(width: usize, height: usize, channels: usize, value: u8) -> Image {
        assert!(channels == 1 || channels == 3, "channels must be 1 or 3, not {channels}");
        Image { width, height, channels, data: vec![value; width * height * channels] }
    }

    /// Wraps `data` (`height * width * channels` bytes); panics on a size mismatch.
    pub fn from_raw(width: usize, height: usize, channels: usize, data: Vec<u8>) -> Image {
        assert!(channels == 1 || channels == 3, "channels must be 1 or 3, not {channels}");
        assert_eq!(data.len(), width * height * channels, "{width}x{height}x{channels} image needs that many bytes");
        Image { width, height, channels, data }
    }

    /// The value of channel `c` at column `x`, row `y`.
    #[inline]
    pub fn at(&self, x: usize, y: usize, c: usize) -> u8 {
        self.data[(y * self.width + x) * self.channels + c]
    }

    /// The same picture with three channels (B=G=R for a gray image).
    pub fn to_bgr(&self) -> Image {
        if self.channels == 3 {
            return self.clone();
        }
        let data = self.data.iter().flat_map(|&v| [v, v, v]).collect();
        Image { width: self.width, height: self.height, channels: 3, data }
    }

    /// `np.rot90(img)`: rotated 90 degrees counter-clockwise (the result is `height` wide).
    pub fn rot90(&self) -> Image {
        let (w, h, cn) = (self.width, self.height, self.channels);
        let mut out = vec![0u8; self.data.len()];
        // out[i][j] = in[j][w-1-i], out is w rows of h pixels.
        for i in 0..w {
            for j in 0..h {
                let src = (j * w + (w - 1 - i)) * cn;
                let dst = (i * h + j) * cn;
                out[dst..dst + cn].copy_from_slice(&self.data[src..src + cn]);
            }
        }
        Image { width: h, height: w, channels: cn, data: out }
    }
}

/// Loads a PNG file; see [`decode_png`].
pub fn load_png(path: impl AsRef<Path>) -> Result<Image, ImageError> {
    let bytes = std::fs::read(path.as_ref()).map_err(ImageError::Io)?;
    decode_png(&bytes)
}

/// Decodes a PNG the way rapidocr's `LoadImage` turns a PIL image into its BGR array.
///
/// Gray (any bit depth, 16-bit reduced to its high byte) -> 1 channel; gray+alpha -> 1 channel
/// `min(255, (alpha ? gray : 0) + 255 - alpha)`; RGB and palette -> BGR; RGBA -> BGR with
/// rapidocr's `cvt_four_to_three` (pixels with alpha 0 zeroed, then: if the whole image is black,
/// `+ (255 - alpha)`, else inverted). Palette images are expanded to their colours (rapidocr would
/// read PIL's raw palette indices as gray levels; that quirk is not reproduced).
pub fn decode_png(bytes: &[u8]) -> Result<Image, ImageError> {
    let mut decoder = png::Decoder::new(bytes);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| ImageError::Png(e.to_string()))?;
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(|e| ImageError::Png(e.to_string()))?;
    if info.bit_depth != png::BitDepth::Eight {
        return Err(ImageError::Unsupported(format!("bit depth {:?} after expansion", info.bit_depth)));
    }
    let (w, h) = (info.width as usize, info.height as usize);
    let src_cn = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err(ImageError::Unsupported("palette left unexpanded".into())),
    };
    let mut pixels = Vec::with_capacity(w * h * src_cn);
    for row in buf.chunks(info.line_size).take(h) {
        pixels.extend_from_slice(&row[..w * src_cn]);
    }
    let image = match src_cn {
        1 => Image::from_raw(w, h, 1, pixels),
        2 => {
            let data = pixels
                .chunks_exact(2)
                .map(|p| {
                    let (g, a) = (p[0], p[1]);
                    let kept = if a != 0 { g } else { 0 };
                    kept.saturating_add(255 - a)
                })
                .collect();
            Image::from_raw(w, h, 1, data)
        }
        3 => Image::from_raw(w, h, 3, pixels.chunks_exact(3).flat_map(|p| [p[2], p[1], p[0]]).collect()),
        _ => {
            let mut bgr: Vec<u8> =
                pixels.chunks_exact(4).flat_map(|p| if p[3] != 0 { [p[2], p[1], p[0]] } else { [0, 0, 0] }).collect();
            if bgr.iter().all(|&v| v == 0) {
                for (px, p) in bgr.chunks_exact_mut(3).zip(pixels.chunks_exact(4)) {
                    px.iter_mut().for_each(|v| *v = v.saturating_add(255 - p[3]));
                }
            } else {
                bgr.iter_mut().for_each(|v| *v = !*v);
            }
            Image::from_raw(w, h, 3, bgr)
        }
    };
    Ok(image)
}

/// OpenCV's fixed-point scale of resize coefficients (`INTER_RESIZE_COEF_SCALE`).
const RESIZE_ONE: i32 = 2048;

/// Per output position of one axis: first source index and the two 11-bit weights.
fn linear_coefficients(src_len: usize, dst_len: usize, clamp: bool) -> Vec<(isize, [i32; 2])> {
    let scale = 1.0 / (dst_len as f64 / src_len as f64);
    (0..dst_len)
        .map(|d| {
            let mut f = ((d as f64 + 0.5) * scale - 0.5) as f32;
            let mut s = f.floor() as isize;
            f -= s as f32;
            // OpenCV clamps the horizontal axis only; rows outside are clamped when read.
            if clamp && s < 0 {
                f = 0.0;
                s = 0;
            }
            if clamp && s >= src_len as isize - 1 {
                f = 0.0;
                s = src_len as isize - 1;
            }
            let w0 = ((1.0 - f) * RESIZE_ONE as f32).round_ties_even() as i32;
            let w1 = (f * RESIZE_ONE as f32).round_ties_even() as i32;
            (s, [w0, w1])
        })
        .collect()
}

/// `cv2.resize(img, (width, height))` with the default `INTER_LINEAR`, bit-exact for 8-bit images.
///
/// Pixel centres map as `src = (dst + 0.5) * src_len / dst_len - 0.5`. A same-size resize is a copy
/// and an exact 2x downscale is the 2x2 average, as in OpenCV.
pub fn resize_linear(img: &Image, width: usize, height: usize) -> Image {
    assert!(width > 0 && height > 0 && img.width > 0 && img.height > 0, "resize of or to an empty image");
    let cn = img.channels;
    if width == img.width && height == img.height {
        return img.clone();
    }
    if img.width == width * 2 && img.height == height * 2 {
        // OpenCV switches INTER_LINEAR to the fast INTER_AREA path for an exact halving.
        let mut out = Image::filled(width, height, cn, 0);
        for y in 0..height {
            for x in 0..width {
                for c in 0..cn {
                    let s = img.at(2 * x, 2 * y, c) as u32
                        + img.at(2 * x + 1, 2 * y, c) as u32
                        + img.at(2 * x, 2 * y + 1, c) as u32
                        + img.at(2 * x + 1, 2 * y + 1, c) as u32;
                    out.data[(y * width + x) * cn + c] = ((s + 2) >> 2) as u8;
                }
            }
        }
        return out;
    }
    let xs = linear_coefficients(img.width, width, true);
    let ys = linear_coefficients(img.height, height, false);
    // Horizontal pass of every source row (values scaled by 2048).
    let row_len = width * cn;
    let mut horiz = vec![0i32; img.height * row_len];
    for y in 0..img.height {
        let src = &img.data[y * img.width * cn..(y + 1) * img.width * cn];
        let dst = &mut horiz[y * row_len..(y + 1) * row_len];
        for (x, &(sx, [a0, a1])) in xs.iter().enumerate() {
            let sx = sx as usize;
            let sx1 = (sx + 1).min(img.width - 1);
            for c in 0..cn {
                dst[x * cn + c] = src[sx * cn + c] as i32 * a0 + src[sx1 * cn + c] as i32 * a1;
            }
        }
    }
    let mut out = Image::filled(width, height, cn, 0);
    let last = img.height as isize - 1;
    for (y, &(sy, [b0, b1])) in ys.iter().enumerate() {
        let r0 = sy.clamp(0, last) as usize;
        let r1 = (sy + 1).clamp(0, last) as usize;
        let s0 = &horiz[r0 * row_len..(r0 + 1) * row_len];
        let s1 = &horiz[r1 * row_len..(r1 + 1) * row_len];
        let dst = &mut out.data[y * row_len..(y + 1) * row_len];
        for i in 0..row_len {
            // OpenCV's VResizeLinearVec_32s8u: (((s0 >> 4) * b0) >> 16) + (((s1 >> 4) * b1) >> 16), then
            // a rounding shift by 2 with saturation.
            let v = (((s0[i] >> 4) * b0) >> 16) + (((s1[i] >> 4) * b1) >> 16);
            dst[i] = ((v + 2) >> 2).clamp(0, 255) as u8;
        }
    }
    out
}

/// A 3x3 projective transform, row-major, mapping `(x, y, 1)` to `(X, Y, W)`.
pub type Homography = [f64; 9];

/// `cv2.getPerspectiveTransform(src, dst)`: the homography mapping the four `src` points onto `dst`.
///
/// Solves OpenCV's 8x8 system (products formed in `f32` as OpenCV does with `Point2f`) by LU
/// decomposition with partial pivoting; `None` if it is singular. Agrees with cv2 4.13 to the last
/// bit or within one ulp (its solver rounds some coefficients differently), which left the warped
/// pixels identical in every case checked.
pub fn perspective_transform(src: &[[f32; 2]; 4], dst: &[[f32; 2]; 4]) -> Option<Homography> {
    let mut a = [[0f64; 8]; 8];
    let mut b = [0f64; 8];
    for i in 0..4 {
        let ([sx, sy], [dx, dy]) = (src[i], dst[i]);
        a[i][0] = sx as f64;
        a[i + 4][3] = sx as f64;
        a[i][1] = sy as f64;
        a[i + 4][4] = sy as f64;
        a[i][2] = 1.0;
        a[i + 4][5] = 1.0;
        a[i][6] = (-sx * dx) as f64;
        a[i][7] = (-sy * dx) as f64;
        a[i + 4][6] = (-sx * dy) as f64;
        a[i + 4][7] = (-sy * dy) as f64;
        b[i] = dx as f64;
        b[i + 4] = dy as f64;
    }
    let x = lu_solve(a, b)?;
    Some([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], 1.0])
}

/// OpenCV's `LUImpl` (Gaussian elimination with partial pivoting, then back substitution).
#[allow(clippy::needless_range_loop)] // index loops in OpenCV's order of operations
fn lu_solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> Option<[f64; N]> {
    for i in 0..N {
        let mut k = i;
        for j in i + 1..N {
            if a[j][i].abs() > a[k][i].abs() {
                k = j;
            }
        }
        if a[k][i].abs() < f64::EPSILON * 100.0 {
            return None;
        }
        if k != i {
            a.swap(i, k);
            b.swap(i, k);
        }
        let d = -1.0 / a[i][i];
        for j in i + 1..N {
            let alpha = a[j][i] * d;
            for k in i + 1..N {
                a[j][k] += alpha * a[i][k];
            }
            b[j] += alpha * b[i];
        }
    }
    for i in (0..N).rev() {
        let mut s = b[i];
        for k in i + 1..N {
            s -= a[i][k] * b[k];
        }
        b[i] = s / a[i][i];
    }
    Some(b)
}

/// `cv::invert` of a 3x3 matrix (`DECOMP_LU`, OpenCV's closed form); `None` if singular.
pub fn invert3(m: &Homography) -> Option<Homography> {
    let s = |r: usize, c: usize| m[r * 3 + c];
    let det = s(0, 0) * (s(1, 1) * s(2, 2) - s(1, 2) * s(2, 1)) - s(0, 1) * (s(1, 0) * s(2, 2) - s(1, 2) * s(2, 0))
        + s(0, 2) * (s(1, 0) * s(2, 1) - s(1, 1) * s(2, 0));
    if det == 0.0 {
        return None;
    }
    let d = 1.0 / det;
    Some([
        (s(1, 1) * s(2, 2) - s(1, 2) * s(2, 1)) * d,
        (s(0, 2) * s(2, 1) - s(0, 1) * s(2, 2)) * d,
        (s(0, 1) * s(1, 2) - s(0, 2) * s(1, 1)) * d,
        (s(1, 2) * s(2, 0) - s(1, 0) * s(2, 2)) * d,
        (s(0, 0) * s(2, 2) - s(0, 2) * s(2, 0)) * d,
        (s(0, 2) * s(1, 0) - s(0, 0) * s(1, 2)) * d,
        (s(1, 0) * s(2, 1) - s(1, 1) * s(2, 0)) * d,
        (s(0, 1) * s(2, 0) - s(0, 0) * s(2, 1)) * d,
        (s(0, 0) * s(1, 1) - s(0, 1) * s(1, 0)) * d,
    ])
}

/// Sub-pixel resolution of OpenCV's warps (`INTER_TAB_SIZE`).
const TAB: i32 = 32;

/// OpenCV's `interpolateCubic` (a = -0.75) in `f32`.
fn cubic_coefficients(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let c0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let c1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [c0, c1, c2, 1.0 - c0 - c1 - c2]
}

/// OpenCV's 2-D bicubic table: for each (y fraction, x fraction) in 1/32 steps, 16 weights in
/// 15-bit fixed point adjusted to sum to exactly 32768 (`initInterTab2D`).
fn bicubic_table() -> &'static [[i32; 16]] {
    static TABLE: std::sync::OnceLock<Vec<[i32; 16]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let scale = 1.0f32 / TAB as f32;
        let one_d: Vec<[f32; 4]> = (0..TAB).map(|i| cubic_coefficients(i as f32 * scale)).collect();
        let mut table = Vec::with_capacity((TAB * TAB) as usize);
        for fy in &one_d {
            for fx in &one_d {
                let mut w = [0i32; 16];
                let mut sum = 0;
                for k1 in 0..4 {
                    for k2 in 0..4 {
                        let v = fy[k1] * fx[k2];
                        w[k1 * 4 + k2] = (v * 32768.0).round_ties_even() as i32;
                        sum += w[k1 * 4 + k2];
                    }
                }
                if sum != 32768 {
                    let diff = sum - 32768;
                    let (mut mk, mut big) = ((2, 2), (2, 2));
                    for k1 in 2..4 {
                        for k2 in 2..4 {
                            if w[k1 * 4 + k2] < w[mk.0 * 4 + mk.1] {
                                mk = (k1, k2);
                            } else if w[k1 * 4 + k2] > w[big.0 * 4 + big.1] {
                                big = (k1, k2);
                            }
                        }
                    }
                    if diff < 0 {
                        w[big.0 * 4 + big.1] -= diff;
                    } else {
                        w[mk.0 * 4 + mk.1] -= diff;
                    }
                }
                table.push(w);
            }
        }
        table
    })
}

/// `cv2.warpPerspective(img, m, (width, height), flags=INTER_CUBIC, borderMode=BORDER_REPLICATE)`.
///
/// `m` maps source to destination (it is inverted as OpenCV does). Bit-exact with OpenCV 4.x: the
/// source position of each destination pixel is computed in `f64` per 32-column block as OpenCV's
/// invoker does, rounded to 1/32 pixel, and the 4x4 neighbourhood (clamped at the border) is
/// weighted with the fixed-point bicubic table.
pub fn warp_perspective_cubic(img: &Image, m: &Homography, width: usize, height: usize) -> Option<Image> {
    let mi = invert3(m)?;
    let cn = img.channels;
    let mut out = Image::filled(width, height, cn, 0);
    if width == 0 || height == 0 {
        return Some(out);
    }
    let table = bicubic_table();
    // OpenCV's block decomposition (BLOCK_SZ = 32): x0 of a block enters the arithmetic.
    let mut bh0 = 16.min(height);
    let bw0 = (1024 / bh0).min(width);
    bh0 = (1024 / bw0).min(height);
    let (sw, sh) = (img.width as i64, img.height as i64);
    for y in (0..height).step_by(bh0) {
        for x in (0..width).step_by(bw0) {
            let bw = bw0.min(width - x);
            let bh = bh0.min(height - y);
            for y1 in 0..bh {
                let yy = (y + y1) as f64;
                let xf = x as f64;
                let x0 = mi[0] * xf + mi[1] * yy + mi[2];
                let y0 = mi[3] * xf + mi[4] * yy + mi[5];
                let w0 = mi[6] * xf + mi[7] * yy + mi[8];
                for x1 in 0..bw {
                    let x1f = x1 as f64;
                    let mut w = w0 + mi[6] * x1f;
                    w = if w != 0.0 { TAB as f64 / w } else { 0.0 };
                    let fx = ((x0 + mi[0] * x1f) * w).clamp(i32::MIN as f64, i32::MAX as f64);
                    let fy = ((y0 + mi[3] * x1f) * w).clamp(i32::MIN as f64, i32::MAX as f64);
                    let (ix, iy) = (fx.round_ties_even() as i32, fy.round_ties_even() as i32);
                    let sx = (ix >> 5) as i64 - 1;
                    let sy = (iy >> 5) as i64 - 1;
                    let weights = &table[((iy & (TAB - 1)) * TAB + (ix & (TAB - 1))) as usize];
                    let cols = [0, 1, 2, 3].map(|i| (sx + i).clamp(0, sw - 1) as usize);
                    let rows = [0, 1, 2, 3].map(|i| (sy + i).clamp(0, sh - 1) as usize);
                    let dst = ((y + y1) * width + x + x1) * cn;
                    for c in 0..cn {
                        let mut sum = 0i32;
                        for (i, &r) in rows.iter().enumerate() {
                            let row = &img.data[r * img.width * cn..];
                            for (j, &col) in cols.iter().enumerate() {
                                sum += row[col * cn + c] as i32 * weights[i * 4 + j];
                            }
                        }
                        out.data[dst + c] = ((sum + (1 << 14)) >> 15).clamp(0, 255) as u8;
                    }
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homography_of_identity_and_scale() {
        let sq = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]];
        let id = perspective_transform(&sq, &sq).unwrap();
        for (i, v) in id.iter().enumerate() {
            let want = if i % 4 == 0 { 1.0 } else { 0.0 };
            assert!((v - want).abs() < 1e-12, "identity[{i}] = {v}");
        }
        let big = [[0.0, 0.0], [30.0, 0.0], [30.0, 20.0], [0.0, 20.0]];
        let m = perspective_transform(&sq, &big).unwrap();
        let want = [3.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0];
        for (v, w) in m.iter().zip(want) {
            assert!((v - w).abs() < 1e-12, "{m:?}");
        }
        let inv = invert3(&m).unwrap();
        assert!((inv[0] - 1.0 / 3.0).abs() < 1e-12 && (inv[4] - 0.5).abs() < 1e-12);
        // A shifted quadrilateral maps its corners onto the target rectangle.
        let quad = [[5.0, 7.0], [45.0, 9.0], [44.0, 31.0], [4.0, 29.0]];
        let m = perspective_transform(&quad, &big).unwrap();
        for (p, q) in quad.iter().zip(big) {
            let (x, y) = (p[0] as f64, p[1] as f64);
            let w = m[6] * x + m[7] * y + m[8];
            let (u, v) = ((m[0] * x + m[1] * y + m[2]) / w, (m[3] * x + m[4] * y + m[5]) / w);
            assert!((u - q[0] as f64).abs() < 1e-9 && (v - q[1] as f64).abs() < 1e-9, "{p:?} -> {u},{v}");
        }
    }

    #[test]
    fn warp_with_identity_copies() {
        let data = (0..12 * 7).map(|i| (i * 37 % 251) as u8).collect();
        let img = Image::from_raw(12, 7, 1, data);
        let id = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        assert_eq!(warp_perspective_cubic(&img, &id, 12, 7).unwrap(), img);
    }

    #[test]
    fn bicubic_weights_sum_to_one() {
        let t = bicubic_table();
        assert_eq!(t.len(), 1024);
        assert!(t.iter().all(|w| w.iter().sum::<i32>() == 32768));
        assert_eq!(t[0][5], 32768, "zero fraction is the pixel itself");
    }

    #[test]
    fn resize_same_size_and_constant() {
        let img = Image::filled(9, 5, 3, 77);
        assert_eq!(resize_linear(&img, 9, 5), img);
        let r = resize_linear(&img, 23, 11);
        assert!(r.data.iter().all(|&v| v == 77));
        let r = resize_linear(&img, 4, 3);
        assert!(r.data.iter().all(|&v| v == 77));
    }

    #[test]
    fn resize_matches_opencv_values() {
        // cv2.resize(np.array([[0, 100, 200, 50]], np.uint8), (7, 2)) -> every row
        // [0, 36, 93, 150, 189, 103, 50] (opencv-python 4.13).
        let img = Image::from_raw(4, 1, 1, vec![0, 100, 200, 50]);
        let r = resize_linear(&img, 7, 2);
        assert_eq!(&r.data[..7], &[0, 36, 93, 150, 189, 103, 50]);
        assert_eq!(&r.data[7..], &r.data[..7]);
    }

    #[test]
    fn rot90_is_counter_clockwise() {
        // [[1, 2, 3], [4, 5, 6]] -> [[3, 6], [2, 5], [1, 4]]
        let img = Image::from_raw(3, 2, 1, vec![1, 2, 3, 4, 5, 6]);
        let r = img.rot90();
        assert_eq!((r.width, r.height), (2, 3));
        assert_eq!(r.data, vec![3, 6, 2, 5, 1, 4]);
    }
}
