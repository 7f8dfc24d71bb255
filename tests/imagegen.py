"""Tiny, real image encoders for the tests: PNG (zlib) and JPEG (baseline or progressive, one flat
colour per 8x8 block, so only DC coefficients are coded). Pure Python, a few ms per image.

They make whole, decodable files (Pillow, a dev-only dependency, decodes them in
``test_images.py``), with knobs for what a header parser must survive: EXIF/APP segments, a
comment, restart intervals and Huffman tables placed before the frame, fill bytes before markers.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence

RGB = tuple[int, int, int]
Painter = Callable[[int, int], RGB]


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def png(
    width: int,
    height: int,
    paint: Painter | RGB = (200, 40, 40),
    *,
    bilevel: bool = False,
    pad_to: int | None = None,
) -> bytes:
    """A PNG of ``width`` x ``height``. ``bilevel``: 1-bit greyscale (huge sides stay cheap).
    ``pad_to``: grow the file to exactly that many bytes with a private ancillary chunk."""
    if bilevel:
        row = b"\x00" + b"\xaa" * ((width + 7) // 8)
        raw = row * height
        ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    else:
        fn = paint if callable(paint) else (lambda _x, _y, c=paint: c)
        raw = b"".join(
            b"\x00" + b"".join(bytes(fn(x, y)) for x in range(width)) for y in range(height)
        )
        ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    head = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
    body = _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")
    if pad_to is not None:
        pad = pad_to - len(head) - len(body) - 12
        if pad < 0:
            raise ValueError(f"cannot pad a {len(head) + len(body)}-byte PNG to {pad_to}")
        head += _chunk(b"prVt", b"\x00" * pad)  # lower-case first letter: ancillary, skippable
    return head + body


# --- JPEG ------------------------------------------------------------------------------------

# DC: categories 0..11, every code 4 bits long (0000..1011). AC: only EOB (0x00), code "0".
_DC_BITS = [0, 0, 0, 12] + [0] * 12
_DC_SYMBOLS = list(range(12))
_AC_BITS = [1] + [0] * 15
_AC_SYMBOLS = [0x00]


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def _dht() -> bytes:
    dc = bytes([0x00]) + bytes(_DC_BITS) + bytes(_DC_SYMBOLS)  # class 0 (DC), table 0
    ac = bytes([0x10]) + bytes(_AC_BITS) + bytes(_AC_SYMBOLS)  # class 1 (AC), table 0
    return _segment(0xC4, dc + ac)


def exif_app1(note: bytes = b"toolnexus test") -> bytes:
    """A minimal EXIF APP1: "Exif\\0\\0" and a little-endian TIFF header with one empty IFD,
    followed by ``note`` (a real camera writes kilobytes here, thumbnails included)."""
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 0) + struct.pack("<I", 0)
    return _segment(0xE1, b"Exif\x00\x00" + tiff + note)


class _Bits:
    def __init__(self) -> None:
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, value: int, length: int) -> None:
        for i in range(length - 1, -1, -1):
            self.acc = (self.acc << 1) | ((value >> i) & 1)
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0x00)  # byte stuffing
                self.acc = 0
                self.n = 0

    def flush(self) -> bytes:
        if self.n:
            self.put((1 << (8 - self.n)) - 1, 8 - self.n)  # pad with one-bits
        return bytes(self.out)


def _ycbcr(rgb: RGB) -> tuple[float, float, float]:
    r, g, b = rgb
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
    cr = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
    return y, cb, cr


def jpeg(
    width: int,
    height: int,
    paint: Painter | RGB = (40, 90, 200),
    *,
    progressive: bool = False,
    exif: bool = False,
    app_segments: Sequence[bytes] = (),
    comment: bytes | None = None,
    tables_before_frame: bool = False,
    restart_interval: int | None = None,
    fill_bytes: int = 0,
) -> bytes:
    """A JPEG (YCbCr, no subsampling, quantisation 1) where each 8x8 block is the colour
    ``paint`` gives at the block's top-left pixel. ``progressive`` writes SOF2, one interleaved
    DC scan, then one AC scan per component."""
    fn = paint if callable(paint) else (lambda _x, _y, c=paint: c)
    bw, bh = (width + 7) // 8, (height + 7) // 8
    head = bytearray(b"\xff\xd8")
    head += _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    if exif:
        head += exif_app1()
    for seg in app_segments:
        head += seg
    if comment is not None:
        head += _segment(0xFE, comment)
    dqt = _segment(0xDB, b"\x00" + b"\x01" * 64)
    dht = _dht()
    dri = _segment(0xDD, struct.pack(">H", restart_interval)) if restart_interval else b""
    frame = _segment(
        0xC2 if progressive else 0xC0,
        struct.pack(">BHHB", 8, height, width, 3)
        + b"".join(bytes([cid, 0x11, 0]) for cid in (1, 2, 3)),
    )
    fill = b"\xff" * fill_bytes
    if tables_before_frame:
        head += dqt + dht + dri + fill + frame
    else:
        head += dqt + fill + frame + dht + dri
    scan_header = _segment(
        0xDA,
        bytes([3, 1, 0x00, 2, 0x00, 3, 0x00])
        + (bytes([0, 0, 0]) if progressive else b"\x00\x3f\x00"),
    )
    bits = _Bits()
    prev = [0, 0, 0]
    entropy = bytearray()
    mcu = 0
    restarts = 0
    for by in range(bh):
        for bx in range(bw):
            if restart_interval and mcu and mcu % restart_interval == 0:
                entropy += bits.flush()
                entropy += bytes([0xFF, 0xD0 + restarts % 8])
                restarts += 1
                bits = _Bits()
                prev = [0, 0, 0]
            mcu += 1
            for c, level in enumerate(_ycbcr(fn(bx * 8, by * 8))):
                dc = max(-1023, min(1023, round((level - 128) * 8)))
                diff = dc - prev[c]
                prev[c] = dc
                size = abs(diff).bit_length()
                bits.put(size, 4)  # every DC code is its category, 4 bits
                if size:
                    bits.put(diff if diff > 0 else diff - 1 + (1 << size), size)
                if not progressive:
                    bits.put(0, 1)  # EOB: every AC coefficient is zero
    entropy += bits.flush()
    out = bytes(head) + scan_header + bytes(entropy)
    if progressive:
        # One AC scan per component, saying every AC coefficient is zero (an EOB per block), so
        # a decoder knows them rather than estimating them from the DC values (block smoothing).
        if restart_interval:
            raise ValueError("restart intervals are only written for baseline here")
        for cid in (1, 2, 3):
            bits = _Bits()
            for _ in range(bw * bh):
                bits.put(0, 1)
            out += _segment(0xDA, bytes([1, cid, 0x00, 1, 63, 0])) + bits.flush()
    return out + b"\xff\xd9"


def checker(a: RGB, b: RGB, cell: int = 8) -> Painter:
    """A checkerboard painter of two colours."""
    return lambda x, y: a if (x // cell + y // cell) % 2 == 0 else b
