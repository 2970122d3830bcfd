"""The image interventions: hand-computed pixels, determinism, the registry, the cache, versions."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from mmspubench.dataset_builder.schema import TYPE_NAMES
from mmspubench.errors import MMSpuBenchError
from mmspubench.eval import interventions as iv
from PIL import Image

NAMES = tuple(iv.INTERVENTIONS)


def pattern_image() -> Image.Image:
    """A 64x64 RGB test pattern made by integer arithmetic only (its source also runs in subprocesses)."""
    import numpy as np
    from PIL import Image

    y, x = np.mgrid[0:64, 0:64]
    pixels = np.stack([(4 * x + y) % 256, (x * y) % 256, ((x ^ y) * 8) % 256], axis=2)
    return Image.frombytes("RGB", (64, 64), pixels.astype(np.uint8).tobytes())


def wide_pattern() -> Image.Image:
    """The pattern tiled to 320x256: a blur with more taps (r = 8) on a non-square image."""
    import numpy as np
    from PIL import Image

    tiled = np.tile(np.asarray(pattern_image()), (4, 5, 1))
    return Image.frombytes("RGB", (320, 256), tiled.tobytes())


def golden_digests() -> dict[str, str]:
    """What GOLDEN pins, computed now (also run in the subprocesses of the version test)."""
    from mmspubench.eval import interventions as iv

    image = pattern_image()
    digests = {"source": iv.pixel_digest(image)}
    digests.update({name: iv.pixel_digest(i.function(image)) for name, i in iv.INTERVENTIONS.items()})
    digests["blur 320x256"] = iv.pixel_digest(iv.blur(wide_pattern()))
    return digests


GOLDEN = {
    "source": "e5e9d9b7faedc4300497a411830a8321602d93f5b68c6799404d3fdcbb558cb1",
    "grayscale": "b6b740f2036a95ca8a931e0d910c6f535fb359a0d34c3764fc5f98e0a6f32695",
    "blur": "5338f956e973273c851ae336f541f8b7e65ed6f004395ab523d8211cdbd4ce24",
    "equalize": "1b6cd59e93d54b85907e8d3957150c655606e243bb522714533f91e54cf81030",
    "noise": "8a3001fb4c270ebaa04a7faadb4a1c911de19f2a8bbf3711a6f09ed40a1938eb",
    "blur 320x256": "c417adedf930055bc42281ec2ea68e85dd27287547710abbd7d4b236005c4f90",
}
"""pixel_digest of the pattern and of each transform of it, pinned (the same on every version)."""


def rgb(rows: list[list[tuple[int, int, int]]]) -> Image.Image:
    """An RGB image from rows of (R, G, B) pixels."""
    array = np.array(rows, dtype=np.uint8)
    return Image.frombytes("RGB", (array.shape[1], array.shape[0]), array.tobytes())


def pixels(image: Image.Image) -> np.ndarray:
    """The image's pixels as an int64 array (height, width, channels)."""
    return np.asarray(image).astype(np.int64)


def impulse(side_x: int, side_y: int, at: tuple[int, int]) -> Image.Image:
    """A black image with one white pixel at ``at`` (row, column)."""
    array = np.zeros((side_y, side_x, 3), dtype=np.uint8)
    array[at] = 255
    return Image.frombytes("RGB", (side_x, side_y), array.tobytes())


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    iv.CACHE.clear()
    yield
    iv.CACHE.clear()


# --- grayscale -----------------------------------------------------------------------------------

GRAY_CASES = [  # (R, G, B) -> (299 R + 587 G + 114 B + 500) // 1000, by hand
    ((0, 0, 0), 0),
    ((255, 255, 255), 255),
    ((255, 0, 0), 76),  # 76.245
    ((0, 255, 0), 150),  # 149.685
    ((0, 0, 255), 29),  # 29.07
    ((10, 20, 30), 18),  # 18.15
    ((100, 150, 200), 141),  # 140.75
    ((0, 12, 4), 8),  # exactly 7.5: half rounds up
    ((1, 1, 1), 1),
]


@pytest.mark.parametrize(("pixel", "luma"), GRAY_CASES)
def test_grayscale_is_integer_601_luma_in_three_channels(pixel: tuple[int, int, int], luma: int) -> None:
    out = iv.grayscale(rgb([[pixel, (0, 0, 0)]]))
    assert out.mode == "RGB"
    assert pixels(out)[0, 0].tolist() == [luma, luma, luma]


# --- equalize ------------------------------------------------------------------------------------

EQUALIZE_CASES = [  # one channel in, by hand: round_half_up(255 (cdf(v) - c_min) / (N - c_min))
    # 2x2: cdf 10->1, 20->3, 30->4; c_min 1, N - c_min 3: 0, 170, 255
    ([[10, 20], [20, 30]], [[0, 170], [170, 255]]),
    # 2x2, two values: 5 -> 0, 9 -> 255
    ([[5, 5], [5, 9]], [[0, 0], [0, 255]]),
    # 4x1: cdf 0->2, 100->3, 200->4; c_min 2, span 2: 100 -> 127.5 rounds up to 128
    ([[0, 0, 100, 200]], [[0, 0, 128, 255]]),
    # 4x1: span 3: 85 and 170 exactly
    ([[50, 60, 70, 80]], [[0, 85, 170, 255]]),
    # constant channel: unchanged (not sent to 0)
    ([[77, 77], [77, 77]], [[77, 77], [77, 77]]),
    ([[255, 255, 255, 255]], [[255, 255, 255, 255]]),
]


@pytest.mark.parametrize(("channel", "expected"), EQUALIZE_CASES)
@pytest.mark.parametrize("index", [0, 1, 2])
def test_equalize_maps_each_channel_by_its_cdf(
    channel: list[list[int]], expected: list[list[int]], index: int
) -> None:
    # the channel under test at ``index``, the others constant (and so unchanged)
    def pixel(v: int) -> tuple[int, int, int]:
        r, g, b = (v if c == index else 40 + c for c in range(3))
        return (r, g, b)

    out = pixels(iv.equalize(rgb([[pixel(v) for v in row] for row in channel])))
    assert out[..., index].tolist() == expected
    for other in {0, 1, 2} - {index}:
        assert (out[..., other] == 40 + other).all()


# --- blur ----------------------------------------------------------------------------------------

RADIUS_CASES = [  # shorter side -> r = ceil(3 sigma), sigma = side / 100
    (1, 1),
    (33, 1),
    (34, 2),
    (100, 3),
    (101, 4),
    (200, 6),
    (224, 7),
]


@pytest.mark.parametrize(("side", "radius"), RADIUS_CASES)
def test_blur_weights_are_symmetric_integers_summing_to_2_16(side: int, radius: int) -> None:
    weights = iv.gaussian_weights(side)
    assert len(weights) == 2 * radius + 1
    assert sum(weights) == 2**16
    assert weights == weights[::-1]
    assert all(w >= 0 for w in weights)
    sigma = side / 100
    ideal = [np.exp(-(k * k) / (2 * sigma * sigma)) for k in range(-radius, radius + 1)]
    scaled = [2**16 * w / sum(ideal) for w in ideal]
    assert max(abs(w - s) for w, s in zip(weights, scaled, strict=True)) <= radius + 1  # rounding (+ residue)


def test_blur_weights_pinned_for_sigma_one() -> None:
    assert iv.gaussian_weights(100) == (291, 3539, 15862, 26152, 15862, 3539, 291)


def test_blur_of_an_impulse_is_the_rounded_outer_product_of_the_taps() -> None:
    out = pixels(iv.blur(impulse(100, 100, (50, 50))))[..., 0]
    weights = iv.gaussian_weights(100)
    r = len(weights) // 2
    expected = np.zeros((100, 100), dtype=np.int64)
    for i, wi in enumerate(weights):
        for j, wj in enumerate(weights):
            expected[50 - r + i, 50 - r + j] = (255 * wi * wj + 2**31) >> 32
    assert out.tolist() == expected.tolist()
    # the mass is kept to within the rounding of each of the (2r + 1)**2 touched pixels
    assert abs(int(out.sum()) - 255) <= (2 * r + 1) ** 2 / 2
    # symmetric about the impulse, in both axes and across the diagonal
    patch = out[50 - r : 51 + r, 50 - r : 51 + r]
    assert (patch == patch[::-1]).all() and (patch == patch[:, ::-1]).all() and (patch == patch.T).all()


def spread(side: int) -> tuple[float, int]:
    """(standard deviation, half-width of the non-zero support) of the blurred impulse's centre row."""
    row = pixels(iv.blur(impulse(side, side, (side // 2, side // 2))))[side // 2, :, 0]
    offsets = np.arange(side) - side // 2
    std = float(np.sqrt((row * offsets**2).sum() / row.sum()))
    return std, int(np.abs(offsets[row > 0]).max())


def test_blur_width_is_relative_to_the_image_side() -> None:
    small, large = spread(100), spread(200)
    assert 1.8 <= large[0] / small[0] <= 2.2
    assert large[1] > small[1]


def test_blur_uses_the_shorter_side() -> None:
    square = pixels(iv.blur(impulse(100, 100, (50, 50))))
    wide = pixels(iv.blur(impulse(400, 100, (50, 200))))
    assert (wide[:, 150:250] == square).all()  # sigma from the 100 px side, not the 400 px one
    assert not (wide[:, 199:202, 0] == 0).all()


def test_blur_clamps_edges() -> None:
    # an impulse in the corner: the taps that fall off the image read the edge pixel
    weights = iv.gaussian_weights(100)
    r = len(weights) // 2
    out = pixels(iv.blur(impulse(100, 100, (0, 0))))[..., 0]
    edge = sum(weights[: r + 1])  # output pixel 0 reads input 0 for k = -r..0
    assert out[0, 0] == (255 * edge * edge + 2**31) >> 32
    # a constant image stays constant, edges included
    flat = Image.new("RGB", (120, 90), (123, 45, 6))
    assert iv.blur(flat).tobytes() == flat.tobytes()


# --- noise ---------------------------------------------------------------------------------------


def gray_image(value: int, size: tuple[int, int] = (64, 64)) -> Image.Image:
    return Image.new("RGB", size, (value, value, value))


def test_noise_is_deterministic() -> None:
    first, second = iv.noise(gray_image(128)), iv.noise(gray_image(128))
    assert first.tobytes() == second.tobytes()


def test_noise_differs_between_images() -> None:
    a, b = gray_image(128), gray_image(128)
    b.putpixel((0, 0), (129, 128, 128))  # one value apart: a different digest, a different seed
    delta_a = pixels(iv.noise(a)) - pixels(a)
    delta_b = pixels(iv.noise(b)) - pixels(b)
    assert (delta_a != delta_b).mean() > 0.9


def test_noise_amplitude_is_the_documented_one() -> None:
    image = gray_image(128, (128, 128))  # 96..160 after noise: nothing clipped
    change = pixels(iv.noise(image)) - pixels(image)
    a = iv.NOISE_AMPLITUDE
    assert change.min() == -a and change.max() == a  # every value in -A..A, both ends reached
    assert sorted(set(change.reshape(-1).tolist())) == list(range(-a, a + 1))
    expected = a * (a + 1) / (2 * a + 1)  # mean |uniform(-A..A)|
    assert abs(float(np.abs(change).mean()) - expected) < 0.5
    assert abs(float(change.mean())) < 0.5


def test_noise_values_are_the_documented_multiply_shift_of_the_raw_stream() -> None:
    digest = iv.pixel_digest(gray_image(128))
    raw = np.random.PCG64([iv.NOISE_BASE_SEED, int(digest, 16)]).random_raw(3).tolist()
    halves = [half for word in raw for half in (word & 0xFFFFFFFF, word >> 32)]  # low half first
    a = iv.NOISE_AMPLITUDE
    expected = [((u * (2 * a + 1)) >> 32) - a for u in halves][:5]  # Python ints: exact
    assert iv.noise_values(digest, 5).tolist() == expected


def test_noise_is_clipped_to_the_byte_range() -> None:
    for value in (0, 255):
        out = pixels(iv.noise(gray_image(value)))
        assert out.min() >= 0 and out.max() <= 255 and (out != value).any()


# --- every transform -----------------------------------------------------------------------------

MODES = ["RGB", "L", "RGBA", "LA", "P", "1", "CMYK"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_every_transform_keeps_size_and_returns_rgb(name: str, mode: str) -> None:
    source = pattern_image().resize((37, 21)).convert(mode)
    out = iv.INTERVENTIONS[name].function(source)
    assert out.mode == "RGB" and out.size == (37, 21)
    # another mode is the same as its RGB conversion
    assert out.tobytes() == iv.INTERVENTIONS[name].function(source.convert("RGB")).tobytes()


@pytest.mark.parametrize("size", [(0, 0), (1, 1), (1, 5), (3, 0)])
@pytest.mark.parametrize("name", NAMES)
def test_degenerate_sizes(name: str, size: tuple[int, int]) -> None:
    out = iv.INTERVENTIONS[name].function(Image.new("RGB", size, (10, 200, 30)))
    assert out.mode == "RGB" and out.size == size


@pytest.mark.parametrize("name", NAMES)
def test_positions_are_kept(name: str) -> None:
    array = np.full((64, 64, 3), 60, dtype=np.uint8)
    array[:, :32] = 200
    out = pixels(iv.INTERVENTIONS[name].function(Image.frombytes("RGB", (64, 64), array.tobytes())))
    left, right = out[:, :32].mean(), out[:, 32:].mean()
    assert left > right + 50
    assert (out[:, :16].mean(axis=(0, 2)) > out[:, 48:].mean(axis=(0, 2)) + 50).all()


def test_golden_digests() -> None:
    assert golden_digests() == GOLDEN


def test_transforms_change_the_pattern_and_leave_the_source() -> None:
    image = pattern_image()
    for name in NAMES:
        assert iv.INTERVENTIONS[name].function(image).tobytes() != image.tobytes()
    assert iv.pixel_digest(image) == GOLDEN["source"]


# --- registry and parsing ------------------------------------------------------------------------


def test_registry_names_targets_and_descriptions() -> None:
    assert set(NAMES) == {"grayscale", "blur", "equalize", "noise"}
    for name, intervention in iv.INTERVENTIONS.items():
        assert intervention.name == name
        assert intervention.targets and set(intervention.targets) <= set(TYPE_NAMES)
        assert intervention.description and "\n" not in intervention.description
    assert iv.INTERVENTIONS["grayscale"].targets == ("colorization",)
    assert iv.INTERVENTIONS["equalize"].targets == ("lighting_shadows",)
    assert iv.INTERVENTIONS["blur"].targets == iv.INTERVENTIONS["noise"].targets == ("texture_noise",)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("blur", ["blur"]),
        (" noise , grayscale ", ["noise", "grayscale"]),
        ("equalize,blur,noise,grayscale", ["equalize", "blur", "noise", "grayscale"]),
    ],
)
def test_parse_interventions_keeps_the_order(text: str, names: list[str]) -> None:
    assert [i.name for i in iv.parse_interventions(text)] == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--interventions: no name given; expected one or more of: blur, equalize, grayscale, noise"),
        (" , ", "no name given"),
        ("blur,,noise", "--interventions 'blur,,noise': name 2 is empty"),
        ("blur,", "name 2 is empty"),
        (",blur", "name 1 is empty"),
        (
            "blr",
            "--interventions: unknown intervention 'blr' (did you mean 'blur'?); expected one of: blur, equalize",
        ),
        ("grayscal", "(did you mean 'grayscale'?)"),
        ("Noise", "(did you mean 'noise'?)"),
        ("blur,equalise", "unknown intervention 'equalise' (did you mean 'equalize'?)"),
        ("crop", "unknown intervention 'crop'; expected one of"),
        ("blur,blur", "'blur' is given twice"),
        ("noise, blur ,noise", "'noise' is given twice"),
    ],
)
def test_parse_interventions_refuses_bad_lists(text: str, message: str) -> None:
    with pytest.raises(MMSpuBenchError) as caught:
        iv.parse_interventions(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_apply_refuses_an_unknown_name() -> None:
    with pytest.raises(MMSpuBenchError, match="did you mean 'blur'"):
        iv.apply("blurr", pattern_image())


# --- apply and its cache -------------------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Registers ``counted`` (grayscale that records each call) and returns the call log."""
    calls: list[str] = []

    def counting(image: Image.Image) -> Image.Image:
        calls.append(iv.pixel_digest(image))
        return iv.grayscale(image)

    monkeypatch.setitem(
        iv.INTERVENTIONS, "counted", iv.Intervention("counted", ("colorization",), "test", counting)
    )
    return calls


def test_apply_returns_the_image_and_its_digest() -> None:
    image = pattern_image()
    for name in NAMES:
        out, digest = iv.apply(name, image)
        assert digest == iv.pixel_digest(out) == GOLDEN[name]


def test_apply_transforms_each_image_once(counted: list[str]) -> None:
    first, digest = iv.apply("counted", pattern_image())
    again, digest_again = iv.apply("counted", pattern_image())  # another object, the same pixels
    assert len(counted) == 1
    assert digest == digest_again and first.tobytes() == again.tobytes()
    iv.apply("counted", pattern_image().convert("RGBA"))  # converts to the same RGB pixels
    assert len(counted) == 1
    iv.apply("counted", gray_image(9))
    assert len(counted) == 2
    iv.apply("grayscale", pattern_image())  # another name: its own entry
    assert len(counted) == 2


def test_apply_cache_is_a_bounded_lru(counted: list[str]) -> None:
    images = [gray_image(v) for v in range(iv.CACHE_SIZE + 1)]
    for image in images[: iv.CACHE_SIZE]:
        iv.apply("counted", image)
    iv.apply("counted", images[0])  # a hit, now the most recent
    assert len(counted) == iv.CACHE_SIZE
    iv.apply("counted", images[-1])  # evicts the least recent: images[1]
    assert len(iv.CACHE) == iv.CACHE_SIZE
    iv.apply("counted", images[0])
    assert len(counted) == iv.CACHE_SIZE + 1
    iv.apply("counted", images[1])
    assert len(counted) == iv.CACHE_SIZE + 2


def test_apply_returns_a_copy(counted: list[str]) -> None:
    out, digest = iv.apply("counted", pattern_image())
    out.putpixel((0, 0), (1, 2, 3))
    again, digest_again = iv.apply("counted", pattern_image())
    assert len(counted) == 1
    assert digest_again == digest == iv.pixel_digest(again)


def test_apply_checks_the_transform_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    def shrink(image: Image.Image) -> Image.Image:
        return image.resize((2, 2))

    monkeypatch.setitem(iv.INTERVENTIONS, "shrink", iv.Intervention("shrink", ("shape",), "test", shrink))
    with pytest.raises(ValueError, match="returned RGB"):
        iv.apply("shrink", pattern_image())


def test_pixel_digest_covers_mode_size_and_pixels() -> None:
    base = iv.pixel_digest(gray_image(5, (4, 6)))
    assert base != iv.pixel_digest(gray_image(5, (6, 4)))  # same bytes, other size
    assert base != iv.pixel_digest(gray_image(6, (4, 6)))
    assert iv.pixel_digest(Image.new("L", (3, 1), 0)) != iv.pixel_digest(Image.new("P", (3, 1), 0))
    assert base == iv.pixel_digest(gray_image(5, (4, 6)))


# --- versions ------------------------------------------------------------------------------------

VERSIONS = [
    ("pillow", "10.0.0"),
    ("pillow", "11.0.0"),
    ("pillow", "13.0.0"),
    ("numpy", "1.26.4"),
    ("numpy", "2.3.5"),
]
"""Other versions of the two packages the transforms use (the oldest supported ones included)."""

CHILD = """
import json
import numpy, PIL
from PIL import Image
{functions}
print(json.dumps({{"numpy": numpy.__version__, "pillow": PIL.__version__, "digests": golden_digests()}}))
"""


def installed(package: str, version: str, tmp: Path) -> Path:
    """A folder holding ``package==version`` alone (a pip --target install into ``tmp``)."""
    short = {"pillow": "pil", "numpy": "np"}[package]
    target = tmp / f"{short}-{version}"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target)]
    subprocess.run([*command, f"{package}=={version}"], check=True, timeout=600)
    return target


@pytest.mark.slow
def test_transforms_are_the_same_on_other_pillow_and_numpy_versions(tmp_path: Path) -> None:
    functions = "\n".join(inspect.getsource(f) for f in (pattern_image, wide_pattern, golden_digests))
    script = CHILD.format(functions=textwrap.dedent(functions))
    folders = {spec: installed(*spec, tmp_path) for spec in VERSIONS}
    combos = [[folders[spec]] for spec in VERSIONS] + [
        [folders["pillow", "10.0.0"], folders["numpy", "1.26.4"]]
    ]
    for paths in combos:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        wanted = {p.name.split("-", 1)[1] for p in paths}
        assert wanted <= {result["numpy"], result["pillow"]}, result  # the other version was the one used
        assert result["digests"] == GOLDEN, result
