#!/usr/bin/env python3
"""Random cases for checking the Rust OCR module against OpenCV and pyclipper themselves.

Usage (after scripts/setup.sh and scripts/make_ocr_reference.py, which put opencv-python-headless
and pyclipper into .venv):

    .venv/bin/python stages/src/ocr/crosscheck.py target/ocr-crosscheck.json
    OCR_CROSSCHECK=target/ocr-crosscheck.json cargo test -p baton-examples --test ocr -- --ignored

Writes, from a fixed seed: random bitmaps with cv2.findContours (RETR_LIST, CHAIN_APPROX_SIMPLE),
cv2.convexHull, cv2.minAreaRect and cv2.boxPoints of every contour; slanted boxes filled with
cv2.fillPoly; rotated boxes offset with pyclipper (JT_ROUND) and cv2.minAreaRect of the result;
random images warped with cv2.getPerspectiveTransform + cv2.warpPerspective (INTER_CUBIC,
BORDER_REPLICATE) and resized with cv2.resize (INTER_LINEAR).
"""
import json
import sys

import cv2
import numpy as np
import pyclipper


def contour_cases(rng, n):
    cases = []
    for _ in range(n):
        h, w = int(rng.integers(5, 60)), int(rng.integers(5, 80))
        b = np.zeros((h, w), np.uint8)
        for _ in range(int(rng.integers(1, 5))):
            kind = rng.integers(0, 3)
            if kind == 0:
                x0, y0 = rng.integers(0, w), rng.integers(0, h)
                b[y0:y0 + rng.integers(0, h // 2 + 1) + 1, x0:x0 + rng.integers(0, w // 2 + 1) + 1] = 1
            elif kind == 1:
                c = (int(rng.integers(0, w)), int(rng.integers(0, h)))
                axes = (int(rng.integers(1, w // 2 + 2)), int(rng.integers(1, h // 2 + 2)))
                cv2.ellipse(b, c, axes, float(rng.uniform(0, 180)), 0, 360, 1, -1)
            else:
                b |= (rng.random((h, w)) < 0.15).astype(np.uint8)
        contours, _ = cv2.findContours(b * 255, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        rects = []
        for c in contours:
            r = cv2.minAreaRect(c)
            rects.append({"rect": [*r[0], *r[1], r[2]], "points": cv2.boxPoints(r).tolist(),
                          "hull": cv2.convexHull(c).reshape(-1, 2).tolist()})
        cases.append({"w": w, "h": h, "bitmap": b.flatten().tolist(),
                      "contours": [c.reshape(-1, 2).tolist() for c in contours], "rects": rects})
    return cases


def fill_cases(rng, n):
    cases = []
    for _ in range(n):
        r = (tuple(rng.uniform(20, 80, 2)), (rng.uniform(3, 60), rng.uniform(2, 20)), float(rng.uniform(-30, 30)))
        box = cv2.boxPoints(r).astype(np.float32)
        xmin, ymin = int(np.floor(box[:, 0].min())), int(np.floor(box[:, 1].min()))
        xmax, ymax = int(np.ceil(box[:, 0].max())), int(np.ceil(box[:, 1].max()))
        mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), np.uint8)
        pts = (box - np.array([xmin, ymin], np.float32)).astype(np.int32)
        cv2.fillPoly(mask, pts.reshape(1, -1, 2), 1)
        cases.append({"points": pts.tolist(), "w": mask.shape[1], "h": mask.shape[0], "mask": mask.flatten().tolist()})
    return cases


def offset_cases(rng, n):
    cases = []
    for _ in range(n):
        r = (tuple(rng.uniform(20, 500, 2)), (rng.uniform(3, 600), rng.uniform(3, 40)), float(rng.uniform(-30, 30)))
        box = cv2.boxPoints(r).astype(np.float32)
        d = float(rng.uniform(0.5, 20))
        off = pyclipper.PyclipperOffset()
        off.AddPath(box, pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
        out = off.Execute(d)
        rect = cv2.minAreaRect(np.array(out).reshape(-1, 1, 2)) if out else None
        cases.append({"box": box.tolist(), "distance": d, "offset": out[0] if out else [],
                      "rect": [*rect[0], *rect[1], rect[2]] if rect else None})
    return cases


def warp_cases(rng, n):
    cases = []
    for _ in range(n):
        h, w = int(rng.integers(20, 120)), int(rng.integers(20, 200))
        img = rng.integers(0, 256, (h, w), dtype=np.uint8)
        pts = np.array([[rng.uniform(0, w / 3), rng.uniform(0, h / 3)], [rng.uniform(2 * w / 3, w), rng.uniform(0, h / 3)],
                        [rng.uniform(2 * w / 3, w), rng.uniform(2 * h / 3, h)], [rng.uniform(0, w / 3), rng.uniform(2 * h / 3, h)]])
        pts = pts.astype(np.int32).astype(np.float32)
        cw = int(max(np.linalg.norm(pts[0] - pts[1]), np.linalg.norm(pts[2] - pts[3])))
        ch = int(max(np.linalg.norm(pts[0] - pts[3]), np.linalg.norm(pts[1] - pts[2])))
        dst = np.array([[0, 0], [cw, 0], [cw, ch], [0, ch]], np.float32)
        m = cv2.getPerspectiveTransform(pts, dst)
        warped = cv2.warpPerspective(img, m, (cw, ch), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC)
        rw, rh = int(rng.integers(1, 300)), int(rng.integers(1, 100))
        resized = cv2.resize(img, (rw, rh))
        cases.append({"w": w, "h": h, "image": img.flatten().tolist(), "quad": pts.tolist(), "cw": cw, "ch": ch,
                      "warped": warped.flatten().tolist(), "rw": rw, "rh": rh, "resized": resized.flatten().tolist()})
    return cases


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "target/ocr-crosscheck.json"
    rng = np.random.default_rng(11)
    doc = {"opencv": cv2.__version__, "pyclipper": pyclipper.__version__,
           "contours": contour_cases(rng, 300), "fill": fill_cases(rng, 200),
           "offset": offset_cases(rng, 300), "warp": warp_cases(rng, 40)}
    with open(out, "w") as f:
        json.dump(doc, f)
    print(f"wrote {out} (OpenCV {cv2.__version__}, pyclipper {pyclipper.__version__})")


if __name__ == "__main__":
    main()
