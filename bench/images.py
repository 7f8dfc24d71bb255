"""``toolnexus batch`` over a directory of images: peak RSS as the batch grows (issue 10:
"Images are read when their state is sent, never all at once: memory stays flat").

Two directories of 64 KiB PNGs (each distinct), 200 and 2,000 of them (12.5 MiB vs 125 MiB on
disk), each scored by ``python -m toolnexus batch DIR`` against the loopback server (its own
process, latency 0, concurrency 32). Peak RSS is ``os.wait4``'s rusage of the batch process
alone. If images were read ahead, the 2,000-image run would hold ~110 MiB more. Target: the
larger peak within 1.2x of the smaller.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from _common import run_measured

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import imagegen  # noqa: E402  (the tests' image encoders, found through the path set above)

QUESTIONS = ROOT / "questions" / "image-check.yaml"
SIZE = 64 * 1024


def write_images(folder: Path, n: int) -> None:
    folder.mkdir()
    for i in range(n):
        colour = (i % 256, (i // 256) % 256, 99)
        (folder / f"{i:05}.png").write_bytes(imagegen.png(16, 16, colour, pad_to=SIZE))


def start_server() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "loopback.py"), "--latency-ms", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def run_batch(folder: Path, out: Path, base_url: str) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one batch process."""
    args = [
        sys.executable, "-m", "toolnexus", "batch", str(QUESTIONS), str(folder),
        "--concurrency", "32", "--base-url", base_url, "--output", str(out),
    ]  # fmt: skip
    run = run_measured(args, stdout=None)
    if run.code != 0:
        raise SystemExit(f"batch failed: {run.stderr}")
    print(f"   {run.stderr[-1] if run.stderr else ''}")
    return run.wall, run.maxrss_kib


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_images(d / "small", 200)
        write_images(d / "large", 2_000)
        server, url = start_server()
        try:
            wall_small, rss_small = run_batch(d / "small", d / "small.jsonl", url)
            wall_large, rss_large = run_batch(d / "large", d / "large.jsonl", url)
        finally:
            server.communicate("")
    print(f"200 images of 64 KiB: wall {wall_small:.2f} s, peak RSS {rss_small / 1024:.1f} MiB")
    print(f"2,000 images of 64 KiB: wall {wall_large:.2f} s, peak RSS {rss_large / 1024:.1f} MiB")
    print(f"peak RSS ratio {rss_large / rss_small:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
