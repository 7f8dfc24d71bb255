"""Remake the two example images (run from the repo root): ``.venv/bin/python examples/images/make.py``.

Both are drawn with the tiny encoders the tests use (``tests/imagegen.py``): a real PNG and a
real JPEG (progressive, with an EXIF segment before its frame), small enough to read in a diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

import imagegen  # noqa: E402  (a test helper, found through the path set just above)

WHITE, RED = (250, 250, 250), (210, 30, 40)
NIGHT, MOON = (12, 20, 60), (240, 220, 120)


def red_disc(x: int, y: int) -> tuple[int, int, int]:
    return RED if (x - 48) ** 2 + (y - 32) ** 2 <= 22**2 else WHITE


def moon(x: int, y: int) -> tuple[int, int, int]:
    # Block-wise (8x8): the JPEG encoder paints each block with the colour at its corner.
    return MOON if (x + 4 - 64) ** 2 + (y + 4 - 24) ** 2 <= 14**2 else NIGHT


def main() -> None:
    (HERE / "red-disc.png").write_bytes(imagegen.png(96, 64, red_disc))
    (HERE / "moon.jpg").write_bytes(imagegen.jpeg(96, 64, moon, progressive=True, exif=True))


if __name__ == "__main__":
    main()
