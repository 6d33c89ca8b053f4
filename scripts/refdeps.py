"""Install scripts/requirements-ref.txt into the running venv on demand (reference scripts only)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQ = os.path.join(ROOT, "scripts", "requirements-ref.txt")


def ensure():
    """pip install --no-deps the pinned reference closure when any pin is not installed as pinned."""
    from importlib import metadata
    pins = []
    for line in open(REQ):
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins.append((name, version))
    missing = []
    for name, version in pins:
        try:
            if metadata.version(name) != version:
                missing.append(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        print(f"==> installing reference deps ({', '.join(missing)}) from scripts/requirements-ref.txt")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-deps", "-r", REQ], check=True)
