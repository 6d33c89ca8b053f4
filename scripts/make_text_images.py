#!/usr/bin/env python3
"""Render the committed text images data/images/<id>.png (standalone; not run by setup.sh).

Usage: .venv/bin/python scripts/make_text_images.py      (Pillow is in scripts/requirements.txt)

Each session of scripts/session_defs.py gets one 8-bit grayscale PNG: its 1-2 lines of text, black
on white, in Pillow's bundled default font (ImageFont.load_default(size=FONT_SIZE): Aileron
Regular, needs no font package; at size 40 capitals are 28 px and cap-top to descender 37 px),
words drawn one by one with WORD_SPACE x the font's space width between them (PP-OCRv4's
recognizer tends to drop the narrow default spaces), left-aligned at MARGIN px, lines LINE_PITCH
px apart and the block centred vertically. Sizes are multiples of 32 (so PP-OCR detection needs no resize), width
<= 960 (fit to the text), height 128 (one line) or 160 (two lines); width/height <= 7.5, so
rapidocr adds no letterbox either. data/sessions.json gets per session: image, image_lines,
image_text (the lines joined by one space), image_size [width, height].
"""
import os
import sys

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from session_defs import SESSIONS, load_sessions_json, save_sessions_json, session_entry  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FONT_SIZE = 40
MARGIN = 24
LINE_PITCH = 60
WORD_SPACE = 2.0


def ceil32(v):
    return -(-v // 32) * 32


def line_width(text, font):
    words = text.split(" ")
    return sum(font.getlength(w) for w in words) + WORD_SPACE * font.getlength(" ") * (len(words) - 1)


def render(lines, font):
    width = ceil32(int(max(line_width(t, font) for t in lines)) + 2 * MARGIN)
    height = 128 if len(lines) == 1 else 160
    if width > 960:
        raise SystemExit(f"text too wide ({width} px > 960): {lines}")
    img = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(img)
    ascent, descent = font.getmetrics()
    block = (len(lines) - 1) * LINE_PITCH + ascent + descent
    y0 = (height - block) // 2
    for i, t in enumerate(lines):
        x = float(MARGIN)
        for w in t.split(" "):
            draw.text((x, y0 + i * LINE_PITCH), w, fill=0, font=font)
            x += font.getlength(w) + WORD_SPACE * font.getlength(" ")
    return img


def main():
    font = ImageFont.load_default(size=FONT_SIZE)
    os.makedirs(os.path.join(ROOT, "data/images"), exist_ok=True)
    doc = load_sessions_json(ROOT)
    doc["images"] = {"made_by": "scripts/make_text_images.py",
                     "font": f"Pillow ImageFont.load_default(size={FONT_SIZE}) (Aileron Regular)",
                     "word_space": f"{WORD_SPACE} x space width",
                     "mode": "8-bit grayscale PNG, black text on white"}
    for sid, _cat, _lead, _sentence, lines in SESSIONS:
        img = render(lines, font)
        rel = f"images/{sid}.png"
        img.save(os.path.join(ROOT, "data", rel), optimize=True)
        e = session_entry(doc, sid)
        e.update({"image": rel, "image_lines": lines, "image_text": " ".join(lines),
                  "image_size": list(img.size)})
        print(f"{sid} {img.size[0]}x{img.size[1]}  {' | '.join(lines)}")
    save_sessions_json(ROOT, doc)


if __name__ == "__main__":
    main()
