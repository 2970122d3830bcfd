"""The planted spurious values are visible: each one changes the picture in the way its text says."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from mmspubench.dataset_builder.schema import TYPE_NAMES
from mmspubench.dataset_builder.synth.draw import SceneSpec, object_layer, render_scene
from mmspubench.dataset_builder.synth.generate import generate_items
from mmspubench.dataset_builder.synth.shapes import BACKGROUND_RGB, NEUTRAL_BACKGROUND
from mmspubench.dataset_builder.synth.vocab import CLASSES, SPURIOUS_VALUES
from PIL import Image

SIZE = 96


def _scene(planted: tuple[tuple[str, str], ...] = (), class_name: str = "car", cell: int = 4) -> SceneSpec:
    return SceneSpec(
        class_name=class_name, cell=cell, offset=(0.0, 0.0), scale=0.5, planted=planted, noise_seed=7
    )


def _pixels(spec: SceneSpec, size: int = SIZE) -> np.ndarray:
    return np.asarray(render_scene(spec, size)).astype(float)


def _changed_share(a: np.ndarray, b: np.ndarray | tuple[int, int, int]) -> float:
    """Share of pixels where some channel differs by more than 24 levels: a visible change."""
    return float((np.abs(a - np.asarray(b, dtype=float)).max(axis=2) > 24).mean())


def _border_median(arr: np.ndarray) -> np.ndarray:
    ring = np.concatenate(
        [
            arr[:3].reshape(-1, 3),
            arr[-3:].reshape(-1, 3),
            arr[:, :3].reshape(-1, 3),
            arr[:, -3:].reshape(-1, 3),
        ]
    )
    return np.median(ring, axis=0)


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_every_value_changes_the_picture_and_values_differ(type_name: str) -> None:
    plain = _pixels(_scene())
    rendered = {v.key: _pixels(_scene(((type_name, v.key),))) for v in SPURIOUS_VALUES[type_name]}
    for key, arr in rendered.items():
        assert _changed_share(arr, plain) > 0.01, (type_name, key)
    for (ka, a), (kb, b) in itertools.combinations(rendered.items(), 2):
        assert _changed_share(a, b) > 0.005, (type_name, ka, kb)


def test_every_class_draws_a_distinct_object() -> None:
    pictures = {c.name: _pixels(_scene(class_name=c.name)) for c in CLASSES}
    for arr in pictures.values():
        assert _changed_share(arr, NEUTRAL_BACKGROUND) > 0.03
    for a, b in itertools.combinations(pictures.values(), 2):
        assert _changed_share(a, b) > 0.03


@pytest.mark.parametrize("key", sorted(BACKGROUND_RGB))
def test_background_pixels_have_the_named_colour(key: str) -> None:
    arr = _pixels(_scene((("background", key),), cell=0))
    assert np.abs(_border_median(arr) - np.array(BACKGROUND_RGB[key])).max() <= 6


def test_generated_background_items_show_the_background_their_record_names() -> None:
    text_to_key = {v.text: v.key for v in SPURIOUS_VALUES["background"]}
    checked = 0
    for item in generate_items(90, seed=0, image_size=64):
        if item.spurious_types != ("background",):
            continue
        key = text_to_key[item.spurious_attributes[0]]
        arr = np.asarray(item.image).astype(float)
        assert np.abs(_border_median(arr) - np.array(BACKGROUND_RGB[key])).max() <= 6, item.id
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("key, channel", [("red", 0), ("green", 1), ("blue", 2)])
def test_colorization_tints_the_whole_picture(key: str, channel: int) -> None:
    means = _pixels(_scene((("colorization", key),))).reshape(-1, 3).mean(axis=0)
    others = [means[c] for c in range(3) if c != channel]
    assert means[channel] > 1.5 * max(others)


def test_black_and_white_has_equal_channels() -> None:
    arr = _pixels(_scene((("colorization", "gray"),)))
    assert np.abs(arr[..., 0] - arr[..., 1]).max() <= 1 and np.abs(arr[..., 1] - arr[..., 2]).max() <= 1


def test_upside_down_is_the_upright_object_turned_half_a_turn() -> None:
    upright = object_layer(_scene(class_name="lamp"), SIZE)
    turned = object_layer(_scene((("orientation", "upside_down"),), class_name="lamp"), SIZE)
    expected = np.asarray(upright.rotate(180), dtype=float)
    assert turned.size == upright.size
    assert np.abs(np.asarray(turned, dtype=float) - expected).mean() < 2.0


def test_relative_size_values_scale_the_object() -> None:
    def width(key: str | None) -> int:
        planted = (("relative_size", key),) if key else ()
        return object_layer(_scene(planted, class_name="car"), SIZE).width

    assert width("tiny") < width("very_small") < width(None) < width("very_large") < width("giant")
    assert width("giant") > SIZE  # cut off by the frame, as its text says


def test_lighting_values_darken_where_they_say() -> None:
    plain = _pixels(_scene()).mean()
    assert _pixels(_scene((("lighting_shadows", "dim"),))).mean() < 0.4 * plain
    assert _pixels(_scene((("lighting_shadows", "overexposed"),))).mean() > plain
    lit_left = _pixels(_scene((("lighting_shadows", "from_left"),)))
    assert lit_left[:, : SIZE // 3].mean() > 1.3 * lit_left[:, -SIZE // 3 :].mean()
    shadow = _pixels(_scene((("lighting_shadows", "shadow_right"),), cell=3))
    no_shadow = _pixels(_scene(cell=3))
    right_half = (slice(None), slice(SIZE // 2, None))
    assert shadow[right_half].mean() < no_shadow[right_half].mean() - 2


def test_co_occurring_object_is_drawn_away_from_the_object() -> None:
    plain = _pixels(_scene(cell=3))
    with_tree = _pixels(_scene((("co_occurring_objects", "tree"),), cell=3))
    diff = np.abs(with_tree - plain).sum(axis=2)
    assert diff[:, 2 * SIZE // 3 :].sum() > 0.9 * diff.sum() > 0


def test_shape_stretch_changes_the_aspect_ratio() -> None:
    plain = object_layer(_scene(class_name="snowman"), SIZE)
    tall = object_layer(_scene((("shape", "tall"),), class_name="snowman"), SIZE)
    wide = object_layer(_scene((("shape", "wide"),), class_name="snowman"), SIZE)
    ratio = plain.height / plain.width
    assert tall.height / tall.width > 2 * ratio
    assert wide.height / wide.width < ratio / 2


def test_rendering_is_deterministic_and_sized() -> None:
    spec = _scene((("texture_noise", "grain"), ("perspective_angle", "from_left")))
    a, b = render_scene(spec, 64), render_scene(spec, 64)
    assert isinstance(a, Image.Image) and a.mode == "RGB" and a.size == (64, 64)
    assert a.tobytes() == b.tobytes()
