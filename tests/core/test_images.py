"""images.py: Image, image_size, the limits (seed 004). Lifting is test_assets.py.

Images come from tests/imagegen.py (tiny real encoders); Pillow (dev-only) is the independent
decoder that says they are real, and the independent encoder of progressive/EXIF JPEGs."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import pytest
from PIL import Image as PilImage

import imagegen as g
from toolnexus import (
    IMAGE_MAX_BYTES,
    IMAGE_MAX_SIDE,
    IMAGE_MIN_SIDE,
    REQUEST_IMAGE_MAX_BYTES,
    ClassifierError,
    ConfigError,
    Image,
    ImageError,
    ImageLimits,
    image_size,
    lift_images,
)

PNG = g.png(20, 17, g.checker((255, 0, 0), (0, 0, 255)))
JPG = g.jpeg(24, 18, (40, 90, 200))


def _pil(data: bytes) -> tuple[str, tuple[int, int]]:
    with PilImage.open(io.BytesIO(data)) as im:
        im.load()
        return str(im.format), im.size


def _pil_jpeg(size: tuple[int, int], **save: object) -> bytes:
    out = io.BytesIO()
    PilImage.new("RGB", size, (10, 200, 30)).save(out, "JPEG", **save)
    return out.getvalue()


# --- image_size ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "data", "size"),
    [
        pytest.param("png", PNG, (20, 17), id="png-rgb"),
        pytest.param("png", g.png(8000, 16, bilevel=True), (8000, 16), id="png-1bit-wide"),
        pytest.param("jpeg", JPG, (24, 18), id="jpeg-baseline"),
        pytest.param("jpeg", g.jpeg(31, 9, progressive=True), (31, 9), id="jpeg-progressive-sof2"),
        pytest.param("jpeg", g.jpeg(16, 40, exif=True), (16, 40), id="jpeg-exif-app1-before-sof"),
        pytest.param(
            "jpeg",
            g.jpeg(17, 23, exif=True, progressive=True, comment=b"x" * 300),
            (17, 23),
            id="jpeg-exif-com-progressive",
        ),
        pytest.param(
            "jpeg",
            g.jpeg(40, 33, tables_before_frame=True, restart_interval=2, fill_bytes=4),
            (40, 33),
            id="jpeg-dht-dri-and-fill-before-sof",
        ),
        pytest.param(
            "jpeg",
            g.jpeg(19, 21, app_segments=[b"\xff\xe2" + b"\x00\x10" + b"ICC_PROFILE\x00\x01\x01"]),
            (19, 21),
            id="jpeg-app2",
        ),
    ],
)
def test_image_size_reads_the_header_and_agrees_with_pillow(
    fmt: str, data: bytes, size: tuple[int, int]
) -> None:
    """Seed 004 image-size: [width height] from the PNG IHDR or the first JPEG SOF marker."""
    assert image_size(fmt, data) == size
    assert _pil(data) == ({"png": "PNG", "jpeg": "JPEG"}[fmt], size)


@pytest.mark.parametrize(
    "save",
    [
        pytest.param({}, id="baseline"),
        pytest.param({"progressive": True}, id="progressive"),
        pytest.param({"optimize": True}, id="optimized"),
        pytest.param({"exif": b"Exif\x00\x00II*\x00\x08\x00\x00\x00\x00\x00"}, id="exif"),
        pytest.param({"progressive": True, "exif": PilImage.Exif().tobytes()}, id="prog-exif"),
        pytest.param({"subsampling": 2, "quality": 30}, id="420"),
    ],
)
def test_image_size_on_jpegs_from_an_independent_encoder(save: dict[str, object]) -> None:
    data = _pil_jpeg((53, 29), **save)
    assert image_size("jpeg", data) == (53, 29)


def test_image_size_skips_dht_dac_and_jpg_markers_which_sit_in_the_sof_range() -> None:
    """Seed 004/issue 10: skip the markers that are not frames, e.g. DHT/DAC/JPG (C4/CC/C8)."""
    fake_sof = b"\x08\x00\x63\x00\x63"  # would read as 99x99 if taken for a frame
    head = b"\xff\xd8"
    for marker in (0xC4, 0xCC, 0xC8):
        head += bytes([0xFF, marker, 0x00, 2 + len(fake_sof)]) + fake_sof
    data = head + b"\xff\xc1\x00\x0b\x08\x00\x07\x00\x05\x01\x01\x11\x00" + b"\xff\xd9"
    assert image_size("jpeg", data) == (5, 7)  # SOF1 (extended sequential) is a frame


@pytest.mark.parametrize(
    ("fmt", "data"),
    [
        pytest.param("png", PNG[:23], id="png-truncated-ihdr"),
        pytest.param("png", PNG[:8] + b"\x00\x00\x00\x0dIDAT" + PNG[16:], id="png-first-not-ihdr"),
        pytest.param("png", JPG, id="png-given-jpeg"),
        pytest.param("jpeg", PNG, id="jpeg-given-png"),
        pytest.param("jpeg", JPG[:30], id="jpeg-truncated-before-sof"),
        pytest.param("jpeg", b"\xff\xd8\xff\xda\x00\x02" + b"\x00" * 20, id="jpeg-sos-before-sof"),
        pytest.param("jpeg", b"\xff\xd8\xff\xd9", id="jpeg-eoi-only"),
        pytest.param("jpeg", b"\xff\xd8\xff\xe0\x00\x01", id="jpeg-length-under-2"),
        pytest.param("jpeg", b"\xff\xd8\x00\x00", id="jpeg-garbage-between-segments"),
        pytest.param(
            "jpeg",
            b"\xff\xd8\xff\xc0\x00\x0b\x08\x00\x00\x00\x10\x01\x01\x11\x00",
            id="jpeg-height-0-dnl",
        ),
        pytest.param("gif", b"GIF89a\x01\x00\x01\x00", id="unknown-format"),
    ],
)
def test_image_size_is_none_for_an_unreadable_header(fmt: str, data: bytes) -> None:
    assert image_size(fmt, data) is None


def test_image_size_takes_any_buffer() -> None:
    assert image_size("png", bytearray(PNG)) == (20, 17)
    assert image_size("jpeg", memoryview(JPG)) == (24, 18)


# --- Image -----------------------------------------------------------------------------------


def test_image_from_bytes_path_and_base64_agree(tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(PNG)
    images = [
        Image(PNG),
        Image(bytearray(PNG)),
        Image(memoryview(PNG)),
        Image(path),
        Image(str(path)),
        Image.from_base64(base64.b64encode(PNG).decode()),
        Image.from_base64(base64.encodebytes(PNG).decode()),  # MIME line breaks
    ]
    digest = hashlib.sha256(PNG).hexdigest()
    for image in images:
        assert image.data == PNG
        assert (image.format, image.media_type, image.size) == ("png", "image/png", (20, 17))
        assert image.sha256 == digest
        assert image.nbytes == len(PNG)
        assert image.placeholder == f"<image:{digest[:32]}>"


def test_a_path_is_read_lazily_and_once(tmp_path: Path) -> None:
    path = tmp_path / "late.jpg"
    image = Image(path)  # nothing there yet: reading is deferred
    path.write_bytes(JPG)
    assert image.format == "jpeg"
    path.write_bytes(PNG)  # read once: later changes are not seen
    assert image.data == JPG and image.size == (24, 18)


def test_a_buffer_is_snapshotted_on_first_read() -> None:
    buf = bytearray(PNG)
    image = Image(buf)
    assert image.sha256 == hashlib.sha256(PNG).hexdigest()
    buf[:4] = b"\x00\x00\x00\x00"
    assert image.data == PNG


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        pytest.param(b"GIF89a\x01\x00\x01\x00\x00\x00", "starts 47 49 46 38", id="gif"),
        pytest.param(b"RIFF\x00\x00\x00\x00WEBP", "neither PNG nor JPEG", id="webp"),
    ],
)
def test_a_format_other_than_png_or_jpeg_is_an_error_naming_the_asset(
    data: bytes, needle: str
) -> None:
    """Issue 10: format from the magic bytes (PNG, JPEG); anything else is an error naming the
    asset (System One takes PNG and JPEG)."""
    with pytest.raises(ImageError) as e:
        _ = Image(data, alias="scan").format
    assert needle in str(e.value) and "<scan>" in str(e.value)
    assert e.value.asset == "image <scan>" and e.value.limit == "format"
    assert isinstance(e.value, ClassifierError)


def test_read_errors_name_the_path_and_never_trace(tmp_path: Path) -> None:
    image = Image(tmp_path / "missing.png")
    with pytest.raises(ImageError, match=r"missing\.png'?: cannot read it: No such file"):
        _ = image.data
    with pytest.raises(ImageError, match="not valid base64"):
        _ = Image.from_base64("not*base64").data
    with pytest.raises(ImageError, match="is empty"):
        _ = Image(b"").data
    with pytest.raises(ImageError, match="takes bytes"):
        Image(12)  # type: ignore[arg-type]


@pytest.mark.parametrize("alias", ["", "has space", "a>b", "x" * 65, "-lead"])
def test_an_alias_is_plain_text(alias: str) -> None:
    with pytest.raises(ImageError, match="alias"):
        Image(PNG, alias=alias)


def test_repr_never_dumps_bytes() -> None:
    image = Image(PNG, alias="a")
    assert repr(image) == "Image(unread, alias='a')"
    _ = image.data
    assert repr(image) == f"Image({len(PNG)} bytes, alias='a')"


# --- the limits ------------------------------------------------------------------------------


def test_the_limits_defaults() -> None:
    """Seed 004: image-max-bytes 16 MiB decoded per image, request-image-max-bytes 32 MiB; the
    side limits are this library's proposed defaults."""
    assert IMAGE_MAX_BYTES == 16 * 1024 * 1024
    assert REQUEST_IMAGE_MAX_BYTES == 32 * 1024 * 1024
    assert (IMAGE_MIN_SIDE, IMAGE_MAX_SIDE) == (16, 8000)
    assert ImageLimits() == ImageLimits(IMAGE_MAX_BYTES, REQUEST_IMAGE_MAX_BYTES, 16, 8000)


def test_image_max_bytes_at_and_beyond_the_limit() -> None:
    limits = ImageLimits()
    at = Image(g.png(16, 16, pad_to=IMAGE_MAX_BYTES))
    assert at.nbytes == IMAGE_MAX_BYTES
    limits.check(at)
    over = Image(g.png(16, 16, pad_to=IMAGE_MAX_BYTES + 1), alias="big")
    with pytest.raises(ImageError) as e:
        limits.check(over)
    assert e.value.limit == "image_max_bytes" and e.value.asset == "image <big>"
    assert str(e.value) == (
        "classifier: image <big> is 16,777,217 bytes, over the image_max_bytes limit of 16 MiB "
        "(16,777,216 bytes) per image; shrink or recompress it"
    )


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    with path.open("wb") as f:
        f.write(PNG[:24])
        f.truncate(IMAGE_MAX_BYTES + 1)  # sparse: no 16 MiB written or read
    image = Image(path)
    with pytest.raises(ImageError, match=r"image 'huge.png'|huge\.png") as e:
        ImageLimits().check(image)
    assert e.value.limit == "image_max_bytes"
    assert image._data is None  # the file was never loaded


@pytest.mark.parametrize(
    ("width", "height", "limit"),
    [
        pytest.param(16, 16, None, id="min-side-at"),
        pytest.param(15, 40, "image_min_side", id="width-under-min"),
        pytest.param(40, 15, "image_min_side", id="height-under-min"),
        pytest.param(8000, 16, None, id="max-side-at-width"),
        pytest.param(16, 8000, None, id="max-side-at-height"),
        pytest.param(8001, 16, "image_max_side", id="width-over-max"),
        pytest.param(16, 8001, "image_max_side", id="height-over-max"),
    ],
)
def test_the_side_limits_at_and_beyond(width: int, height: int, limit: str | None) -> None:
    image = Image(g.png(width, height, bilevel=True), alias="side")
    if limit is None:
        ImageLimits().check(image)
        return
    with pytest.raises(ImageError) as e:
        ImageLimits().check(image)
    assert e.value.limit == limit
    assert f"image <side> is {width}x{height} px" in str(e.value) and limit in str(e.value)


def test_the_side_limits_apply_to_jpeg_too() -> None:
    ImageLimits().check(Image(g.jpeg(16, 16)))
    with pytest.raises(ImageError, match="image_min_side"):
        ImageLimits().check(Image(g.jpeg(15, 16, progressive=True)))


def test_an_unreadable_header_is_an_error_naming_the_asset() -> None:
    with pytest.raises(ImageError, match=r"<cut> is not a readable JPEG") as e:
        ImageLimits().check(Image(JPG[:30], alias="cut"))
    assert e.value.limit == "image_size"


def test_a_classifier_option_overrides_the_limits() -> None:
    tight = ImageLimits(image_max_side=20, image_min_side=18)
    with pytest.raises(ImageError, match="image_max_side limit of 20 px"):
        tight.check(Image(JPG))  # 24x18
    with pytest.raises(ImageError, match="image_min_side limit of 18 px"):
        tight.check(Image(PNG))  # 20x17
    ImageLimits(image_min_side=1).check(Image(g.png(1, 1)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"image_max_bytes": 0},
        {"image_min_side": -1},
        {"image_max_side": True},
        {"image_min_side": 50, "image_max_side": 40},
    ],
)
def test_limits_must_be_sane(kwargs: dict[str, int]) -> None:
    with pytest.raises(ConfigError):
        ImageLimits(**kwargs)


def test_request_image_max_bytes_at_and_beyond_the_limit() -> None:
    half = g.png(16, 16, pad_to=REQUEST_IMAGE_MAX_BYTES // 2)
    other = g.png(17, 16, pad_to=REQUEST_IMAGE_MAX_BYTES // 2)
    at = lift_images({"a": Image(half), "b": Image(other)})
    ImageLimits().check_request(at.assets)
    over = lift_images({"a": Image(half), "b": Image(other), "c": Image(PNG, alias="last")})
    with pytest.raises(ImageError) as e:
        ImageLimits().check_request(over.assets)
    assert e.value.limit == "request_image_max_bytes" and e.value.asset == "image <last>"
    assert "over the request_image_max_bytes limit of 32 MiB" in str(e.value)
