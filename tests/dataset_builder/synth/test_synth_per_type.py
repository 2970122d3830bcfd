"""``synth --mode train --correlated-types``: the cue is planted on the chosen types only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mmspubench.cli import main
from mmspubench.dataset_builder.synth.generate import SynthItem, generate_items
from mmspubench.dataset_builder.synth.vocab import CLASS_BY_NAME, SPURIOUS_VALUES
from mmspubench.errors import MMSpuBenchError


def _home(item: SynthItem, spurious_type: str) -> bool:
    return CLASS_BY_NAME[item.class_name].home_key(spurious_type) == dict(item.scene.planted)[spurious_type]


def _home_share(items: list[SynthItem], spurious_type: str) -> tuple[float, float]:
    """Share of the type's items planted with the class's home value, and the chance share."""
    chosen = [i for i in items if spurious_type in i.spurious_types]
    return sum(_home(i, spurious_type) for i in chosen) / len(chosen), 1 / len(SPURIOUS_VALUES[spurious_type])


def test_only_the_chosen_type_carries_the_cue() -> None:
    items = list(
        generate_items(
            900, seed=2, image_size=32, mode="train", correlation=1.0, correlated_types=["background"]
        )
    )
    assert all(_home(i, "background") for i in items if "background" in i.spurious_types)
    for other in ("shape", "colorization", "texture_noise", "orientation"):
        share, chance = _home_share(items, other)
        # Uniform values: about 1/len(values) at home (n ~ 130 per type: a 0.15 margin is > 3 sigma).
        assert abs(share - chance) < 0.15, (other, share, chance)
    # Correlation 0: the chosen type's value is always a decoy's, the others still random.
    broken = list(
        generate_items(
            300, seed=2, image_size=32, mode="train", correlation=0.0, correlated_types=["background"]
        )
    )
    with_bg = [i for i in broken if "background" in i.spurious_types]
    assert with_bg and not any(_home(i, "background") for i in with_bg)
    assert all(i.decoy is not None for i in with_bg)
    assert all(i.decoy is None for i in broken if "background" not in i.spurious_types)


def test_correlation_sets_the_share_on_the_chosen_type() -> None:
    items = list(
        generate_items(1200, seed=5, image_size=32, mode="train", correlation=0.7, correlated_types=["shape"])
    )
    share, _ = _home_share(items, "shape")
    assert abs(share - 0.7) < 0.1, share


def test_without_correlated_types_the_stream_is_unchanged() -> None:
    old = [i.record() for i in generate_items(20, seed=3, image_size=32, mode="train", correlation=0.9)]
    again = [
        i.record()
        for i in generate_items(
            20, seed=3, image_size=32, mode="train", correlation=0.9, correlated_types=None
        )
    ]
    assert old == again


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "benchmark", "correlated_types": ["background"]}, "need --mode train"),
        ({"mode": "train", "cue": "aligned", "correlated_types": ["background"]}, "not a cue"),
        ({"mode": "train", "correlated_types": ["weather"]}, "'weather'"),
        ({"mode": "train", "correlated_types": []}, "expected distinct names"),
        ({"mode": "train", "correlated_types": ["shape", "shape"]}, "expected distinct names"),
    ],
)
def test_bad_correlated_types_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(MMSpuBenchError, match=re.escape(message)):
        generate_items(3, **kwargs)


def test_cli_option_takes_names_or_abbreviations(tmp_path: Path) -> None:
    out = tmp_path / "bg"
    argv = ["synth", "--out", str(out), "--n", "20", "--image-size", "32", "--mode", "train"]
    assert main([*argv, "--correlation", "0.8", "--correlated-types", "BG,shape"]) == 0
    expected = generate_items(
        20, image_size=32, mode="train", correlation=0.8, correlated_types=("background", "shape")
    )
    assert json.loads((out / "annotation.json").read_text()) == [i.record() for i in expected]


def test_cli_bad_types_and_benchmark_mode_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["synth", "--out", str(tmp_path / "a"), "--mode", "train", "--correlated-types", "BG,weather"])
    assert exc.value.code == 2 and "weather" in capsys.readouterr().err
    assert main(["synth", "--out", str(tmp_path / "b"), "--correlated-types", "background"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "need --mode train" in err
    assert list(tmp_path.iterdir()) == []
