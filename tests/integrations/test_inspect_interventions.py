"""The Inspect task's interventions view (`-T interventions=...`) and its ingest: hand-computed
figures of stand-in models run by Inspect's own mockllm (one that reads only the image's colour, one
that is right only on the published picture), the images shown, the option checks, edited logs."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mmspubench.cli import main
from mmspubench.errors import MMSpuBenchError

from tests.dataset_builder import hub_fixtures as hub
from tests.helpers.costs import without_costs

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ContentImage, ModelOutput, ModelUsage, get_model
from PIL import Image

TASK = "mmspubench/mm_spubench"
ARGS = {"dataset": hub.REPO_ID, "revision": hub.COMMIT}
Reply = Callable[[Image.Image, str], str]


def _output(text: str) -> ModelOutput:
    output = ModelOutput.from_content("mockllm", text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def _decoded(uri: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(uri.partition(",")[2]))).convert("RGB")


def _mock(reply: Reply) -> Any:
    """mockllm answering ``reply(image, user text)`` (the image decoded as our provider decodes it)."""

    def answer(messages: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        user = messages[1]
        (image,) = [p.image for p in user.content if isinstance(p, ContentImage)]
        return _output(reply(_decoded(str(image)), user.text))

    return get_model("mockllm/model", custom_outputs=answer)


def _run(model: Any, args: dict[str, Any], log_dir: Path, **kwargs: Any) -> EvalLog:
    logs = inspect_eval(TASK, model=model, task_args=args, display="none", log_dir=str(log_dir), **kwargs)
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def _split(dataset: str, revision: str | None = None) -> Any:
    from mmspubench.integrations.items import load_split

    return load_split(dataset, revision).items


def _coloured(image: Image.Image) -> bool:
    pixels = np.asarray(image, dtype=np.int64)
    return bool((pixels[..., 0] != pixels[..., 1]).any() or (pixels[..., 1] != pixels[..., 2]).any())


def colour_reader(items: Any) -> Reply:
    """Right while the image has colour, "B" on a grey one (it reads only the colour)."""
    gold = {s.user_text: s.item.answer for s in items}
    return lambda image, text: gold[text] if _coloured(image) else "B"


def published_only(items: Any) -> Reply:
    """Right on the published picture, "A" on any other (it reads the exact pixels)."""
    from mmspubench.eval.interventions import pixel_digest, to_rgb

    gold = {s.user_text: (s.item.answer, pixel_digest(to_rgb(s.item.pil_image))) for s in items}

    def reply(image: Image.Image, text: str) -> str:
        answer, digest = gold[text]
        return answer if pixel_digest(image) == digest else "A"

    return reply


def _figures(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {k: m.value for score in log.results.scores for k, m in score.metrics.items()}


def _ingest(path: Path | str, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit code and the message: the error line, or the summary line on success."""
    capsys.readouterr()
    code = main(["ingest", "inspect", str(path), "--out", str(out)])
    done = capsys.readouterr()
    return code, (done.err if code else done.out).strip()


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]


def _by_hand(right: list[bool], types: list[tuple[str, ...]], target: str) -> dict[str, float]:
    """The figures when every published answer is right and the changed ones are ``right`` (each
    wrong one answered differently)."""
    accuracy = 100 * sum(right) / len(right)
    out = {"accuracy": accuracy, "change": accuracy - 100, "flip_rate": 100 - accuracy}
    inside = [100 * (ok - 1) for ok, t in zip(right, types, strict=True) if target in t]
    outside = [100 * (ok - 1) for ok, t in zip(right, types, strict=True) if target not in t]
    if inside and outside:
        out["targeted_contrast"] = sum(inside) / len(inside) - sum(outside) / len(outside)
    return out


@pytest.fixture(scope="module")
def hub_log(published: Path, tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """The colour reader on the published fixture under grayscale and blur."""
    model = _mock(colour_reader(_split(hub.REPO_ID, hub.COMMIT)))
    args = {**ARGS, "interventions": ["grayscale", "blur"]}
    return _run(model, args, tmp_path_factory.mktemp("logs"))


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic twin of 18 items (two per type) with its counterfactuals."""
    out = tmp_path_factory.mktemp("twin") / "twin"
    argv = ["synth", "--counterfactuals", "--n", "18", "--image-size", "32", "--out", str(out)]
    assert main(argv) == 0
    return out


def test_a_colour_reader_loses_only_under_grayscale_in_inspect_and_after_ingest(
    hub_log: EvalLog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.eval.interventions import blur, grayscale, pixel_digest

    items = _split(hub.REPO_ID, hub.COMMIT)
    assert all(_coloured(s.item.pil_image.convert("RGB")) for s in items)
    golds = [s.item.answer for s in items]
    types = [s.item.spurious_types for s in items]
    expected = _by_hand([g == "B" for g in golds], types, "colorization")
    got = _figures(hub_log)
    assert got["overall"] == 100.0
    assert {k: got[f"grayscale_{k}"] for k in expected} == pytest.approx(expected, abs=1e-9)
    assert "grayscale_targeted_contrast" in got or "targeted_contrast" not in expected
    assert got["blur_accuracy"] == 100.0 and got["blur_change"] == 0.0 and got["blur_flip_rate"] == 0.0
    assert hub_log.samples is not None and len(hub_log.samples) == 3 * hub.N_IMAGES

    code, said = _ingest(hub_log.location, tmp_path / "run", capsys)
    assert code == 0, said
    assert said.endswith(f"accuracy 100.00%, grayscale {expected['accuracy']:.2f}%, blur 100.00%"), said
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["metrics"] == ["accuracy", "interventions"]
    assert results["config"]["interventions"] == ["grayscale", "blur"]
    section = results["interventions"]
    assert section["names"] == ["grayscale", "blur"]
    gray = section["by_intervention"]["grayscale"]
    assert gray["n"] == hub.N_IMAGES and gray["targets"] == ["Col."]
    assert gray["accuracy"]["overall"] == pytest.approx(expected["accuracy"])
    assert gray["change"]["gain"] == pytest.approx(expected["change"])
    assert gray["change"]["only_vanilla"] == sum(g != "B" for g in golds)
    assert gray["change"]["only_intervened"] == 0 and gray["flip_rate"] == pytest.approx(
        expected["flip_rate"]
    )
    assert section["by_intervention"]["blur"]["change"]["gain"] == 0.0
    for line, split_item in zip(_lines(tmp_path / "run"), items, strict=True):
        image = split_item.item.pil_image.convert("RGB")
        assert [e["name"] for e in line["interventions"]] == ["grayscale", "blur"]
        assert [e["digest"] for e in line["interventions"]] == [
            pixel_digest(grayscale(image)),
            pixel_digest(blur(image)),
        ]
        assert [e["prediction"] for e in line["interventions"]] == ["B", split_item.item.answer]
    argv = ["submit", str(tmp_path / "run" / "results.json"), "--model-repo", "org/model"]
    assert main([*argv, "--dry-run", str(tmp_path / "pr"), "--dataset-revision", hub.COMMIT]) == 0


def test_each_item_is_asked_under_each_intervention_with_the_changed_image_as_shown_by_eval() -> None:
    from inspect_ai.model import ContentText
    from mmspubench.eval.interventions import equalize, pixel_digest
    from mmspubench.integrations.inspect.task import mm_spubench

    task = mm_spubench(limit=2, circular=True, interventions="equalize")
    samples = list(task.dataset)
    items = [s.item for s in _split_bundled(2)]
    assert [s.id for s in samples] == [
        sid for i in items for sid in (i.id, *(f"{i.id}/rotation-{k}" for k in (1, 2, 3)), f"{i.id}/equalize")
    ]
    for index, (item, sample) in enumerate(zip(items, samples[4::5], strict=True)):
        assert sample.choices == list(item.options) and sample.target == item.answer
        image, text = _content(sample)
        assert isinstance(image, ContentImage) and isinstance(text, ContentText)
        assert str(image.image).startswith("data:image/png;base64,")
        assert text.text == _content(samples[5 * index])[1].text  # the published question and options
        digest = pixel_digest(equalize(item.pil_image))
        meta: dict[str, Any] = dict(sample.metadata or {})
        assert pixel_digest(_decoded(str(image.image))) == digest == meta["digest"]
        assert meta["targets"] == ["lighting_shadows"]


def _content(sample: Any) -> list[Any]:
    return list(sample.input[1].content)


def _split_bundled(limit: int) -> Any:
    from mmspubench.integrations.items import load_split

    return load_split(None, limit=limit).items


def test_the_twins_counterfactuals_run_and_ingest_with_their_gaps(
    twin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmspubench.eval.interventions import pixel_digest, to_rgb
    from mmspubench.eval.results import read_run
    from mmspubench.eval.submit.submission import check_run_figures, check_run_samples

    items = _split(str(twin))
    args = {"dataset": str(twin), "interventions": ["grayscale", "cf:*"]}
    log = _run(_mock(published_only(items)), args, tmp_path / "logs")
    golds = [s.item.answer for s in items]
    types = [s.item.spurious_types for s in items]
    got = _figures(log)
    names = ["grayscale", "cf:cue-aligned", "cf:cue-random", "cf:cue-removed"]
    right: dict[str, list[bool]] = {"grayscale": [g == "A" for g in golds]}
    for cf in ("cue-aligned", "cue-random", "cue-removed"):  # a random cue may redraw the published one
        published = [pixel_digest(to_rgb(s.item.pil_image)) for s in items]
        shown = [pixel_digest(to_rgb(c.image)) for s in items for c in s.item.counterfactuals if c.name == cf]
        right["cf:" + cf] = [g == "A" or a == b for g, a, b in zip(golds, published, shown, strict=True)]
    for name in names:  # every other picture is answered "A"
        expected = _by_hand(right[name], types, "colorization" if name == "grayscale" else "none")
        assert {k: got[f"{name}_{k}"] for k in expected} == pytest.approx(expected, abs=1e-9), name
    assert "cf:cue-aligned_targeted_contrast" not in got  # a counterfactual targets its item's own types

    code, err = _ingest(log.location, tmp_path / "run", capsys)
    assert code == 0, err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    section = results["interventions"]
    assert section["names"] == names and results["config"]["interventions"] == ["grayscale", "cf:*"]
    gaps = section["counterfactual_gaps"]
    assert gaps["aligned_minus_broken"]["gain"] == pytest.approx(got["cf:cue-aligned_change"])
    assert gaps["removed_minus_broken"]["gain"] == pytest.approx(got["cf:cue-removed_change"])
    assert gaps["removed_minus_broken"]["gain"] == pytest.approx(100 * golds.count("A") / len(golds) - 100)
    for line, split_item in zip(_lines(tmp_path / "run"), items, strict=True):
        cfs = split_item.item.counterfactuals
        assert [e["name"] for e in line["interventions"]] == ["grayscale", *(f"cf:{c.name}" for c in cfs)]
        assert [e["digest"] for e in line["interventions"][1:]] == [
            pixel_digest(to_rgb(c.image)) for c in cfs
        ]
        assert [e["targets"] for e in line["interventions"][1:]] == [list(c.targets) for c in cfs]
    record = read_run(tmp_path / "run")
    check_run_samples(record.results, record.samples, record.config, tmp_path / "run" / "results.json")
    check_run_figures(record.results, record.samples, record.config, tmp_path / "run" / "results.json")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("nope", "-T interventions='nope': unknown intervention 'nope'"),
        (
            "greyscale",
            "-T interventions='greyscale': unknown intervention 'greyscale' (did you mean grayscale?)",
        ),
        (
            ["grayscale", "grayscale"],
            "-T interventions=['grayscale', 'grayscale']: 'grayscale' is given twice",
        ),
        ("grayscale,,blur", "-T interventions='grayscale,,blur': name 2 is empty"),
        ("", "-T interventions='': no name given"),
        (True, "-T interventions=True: bool is not a list of names"),
        (["blur", 3], "-T interventions=['blur', 3]: 3 is not a name"),
        (["cf:*", "cf:cue-aligned"], "already asks every counterfactual"),
        ("cf:Bad", "a counterfactual's name is lower-case letters"),
    ],
)
def test_the_intervention_names_are_checked_in_one_line_before_the_data_is_read(
    given: Any, expected: str
) -> None:
    from mmspubench.integrations.inspect.task import mm_spubench

    with pytest.raises(MMSpuBenchError) as caught:
        mm_spubench(dataset="/nonexistent/folder", interventions=given)
    message = str(caught.value)
    assert expected in message and "\n" not in message and message.startswith("-T interventions="), message
    assert message.endswith("(as --interventions)")


def test_names_split_by_inspect_at_a_comma_and_a_space_are_read_as_eval_reads_them() -> None:
    from mmspubench.integrations.inspect.task import mm_spubench

    (item,) = [s.item for s in _split_bundled(1)]  # Inspect: -T 'interventions=grayscale, blur'
    task = mm_spubench(limit=1, interventions=["grayscale", " blur"])
    assert [s.id for s in task.dataset] == [item.id, f"{item.id}/grayscale", f"{item.id}/blur"]


def test_counterfactuals_a_dataset_does_not_ship_are_one_line(published: Path, twin: Path) -> None:
    from mmspubench.integrations.inspect.task import mm_spubench

    with pytest.raises(MMSpuBenchError) as caught:
        mm_spubench(dataset=hub.REPO_ID, revision=hub.COMMIT, interventions="cf:*")
    assert (
        "-T interventions=cf:*: needs counterfactual images, but no record has the 'counterfactuals' field"
        in str(caught.value)
    )
    with pytest.raises(MMSpuBenchError) as caught:
        mm_spubench(dataset=str(twin), interventions="grayscale,cf:nope")
    message = str(caught.value)
    assert "record '000000': field 'counterfactuals': has no counterfactual 'nope'" in message
    assert "it ships: cue-aligned, cue-random, cue-removed" in message and "\n" not in message


def _edited(log: EvalLog, path: Path, edit: Callable[[EvalLog], None]) -> Path:
    copy = read_eval_log(log.location)
    assert copy.samples is not None
    edit(copy)
    write_eval_log(copy, str(path))
    return path


def _sample(log: EvalLog, suffix: str) -> Any:
    assert log.samples is not None
    return next(s for s in log.samples if str(s.id).endswith(suffix))


def _published_uri(log: EvalLog) -> str:
    from mmspubench.integrations.items import by_id

    sample = _sample(log, "/grayscale")
    split = by_id(_split(hub.REPO_ID, hub.COMMIT))
    return split[sample.metadata["item_id"]].data_uri


def _show_published(log: EvalLog) -> None:  # the grayscale sample shows the unchanged picture
    _sample(log, "/grayscale").input[1].content[0].image = _published_uri(log)


def _show_published_and_claim_it(log: EvalLog) -> None:  # ... and its metadata names that picture
    from mmspubench.eval.interventions import pixel_digest

    sample = _sample(log, "/grayscale")
    uri = _published_uri(log)
    sample.input[1].content[0].image = uri
    sample.metadata["digest"] = pixel_digest(_decoded(uri))


def _flip_score(log: EvalLog) -> None:
    score = (_sample(log, "/blur").scores or {})["choice"]
    score.value = "I" if score.value == "C" else "C"


def _drop_sample(log: EvalLog) -> None:
    assert log.samples is not None
    log.samples.remove(_sample(log, "/blur"))


def _edit_figure(log: EvalLog) -> None:
    assert log.results is not None
    for score in log.results.scores:
        if "grayscale_change" in score.metrics:
            score.metrics["grayscale_change"].value += 1.0


def _claim_another(log: EvalLog) -> None:
    assert log.results is not None
    metric = log.results.scores[0].metrics["grayscale_change"].model_copy()
    log.results.scores[0].metrics["equalize_change"] = metric


def _fewer_names(log: EvalLog) -> None:
    log.eval.task_args["interventions"] = "grayscale"


def _unknown_name(log: EvalLog) -> None:
    log.eval.task_args["interventions"] = "nope"


def _plain_run_claiming(log: EvalLog) -> None:  # no interventions asked, their figures still there
    assert log.samples is not None
    log.samples = [s for s in log.samples if "/" not in str(s.id)]
    del log.eval.task_args["interventions"]


def _renamed(log: EvalLog) -> None:
    _sample(log, "/blur").metadata["intervention"] = "noise"


def _no_image(log: EvalLog) -> None:
    user = _sample(log, "/grayscale").input[1]
    user.content = [p for p in user.content if not isinstance(p, ContentImage)]


def _image_as(uri: str) -> Callable[[EvalLog], None]:
    def edit(log: EvalLog) -> None:
        _sample(log, "/grayscale").input[1].content[0].image = uri

    return edit


def _question_edited(log: EvalLog) -> None:
    _sample(log, "/blur").input[1].content[1].text += " Look at the background."


def _target_edited(log: EvalLog) -> None:
    sample = _sample(log, "/blur")
    sample.target = "D" if sample.target != "D" else "A"


def _twice(log: EvalLog) -> None:  # (written as a .json log: an .eval log keeps one sample per id)
    assert log.samples is not None
    log.samples.append(_sample(log, "/blur").model_copy(deep=True))


NOT_PNG = "data:image/png;base64," + base64.b64encode(b"not a picture").decode()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_no_image, "0 image(s) in the intervention view, expected 1"),
        (_image_as("https://example.org/x.png"), "the image is not a readable base64 data: URI"),
        (_image_as("data:image/png;base64,!!!"), "the image is not a readable base64 data: URI"),
        (_image_as(NOT_PNG), "the image is not a readable base64 data: URI"),
        (_question_edited, "the prompt text is not mmspubench's multiple-choice text"),
        (_target_edited, "field 'target'"),
        (_twice, "appears twice (blur)"),
        (_show_published, "field 'metadata': digest"),
        (_show_published_and_claim_it, "is not the item's grayscale image"),
        (_flip_score, "field 'score'"),
        (_drop_sample, "lack an answer of a view"),
        (_edit_figure, "figure 'grayscale_change': recorded"),
        (_claim_another, "figure 'equalize_change': recorded"),
        (_fewer_names, "intervention 'blur' is not a view of this run"),
        (_unknown_name, "task argument -T interventions='nope': unknown intervention"),
        (_renamed, "field 'id': does not name an intervention"),
        (_plain_run_claiming, "figure 'grayscale_accuracy': recorded"),
    ],
)
def test_an_edited_interventions_log_is_refused(
    hub_log: EvalLog,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[EvalLog], None],
    expected: str,
) -> None:
    name = "log.json" if edit is _twice else "log.eval"
    code, err = _ingest(_edited(hub_log, tmp_path / name, edit), tmp_path / "run", capsys)
    assert code == 2 and expected in err and "\n" not in err, err
    assert not (tmp_path / "run").exists()


def test_inspects_own_limit_with_interventions(
    published: Path, twin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _mock(lambda image, text: "B")
    whole = _run(model, {**ARGS, "interventions": "grayscale"}, tmp_path / "a", limit=4)
    code, err = _ingest(whole.location, tmp_path / "run", capsys)
    assert code == 0, err
    assert (
        json.loads((tmp_path / "run" / "results.json").read_text())["interventions"]["by_intervention"][
            "grayscale"
        ]["n"]
        == 2
    )
    varying = _run(model, {"dataset": str(twin), "interventions": "cf:*"}, tmp_path / "b", limit=4)
    code, err = _ingest(varying.location, tmp_path / "run2", capsys)
    assert code == 2 and "cut the run with -T limit= instead" in err and not (tmp_path / "run2").exists()


@pytest.mark.slow
def test_the_bundled_model_gives_evals_intervention_answers_item_by_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limit, names = 4, "grayscale,noise"
    run = tmp_path / "eval"
    argv = ["eval", "--out", str(run), "--no-progress", "--limit", str(limit), "--answer-mode", "generate"]
    assert main([*argv, "--metrics", "accuracy,interventions", "--interventions", names]) == 0
    log = _run("mmspubench/bundled", {"limit": limit, "interventions": names}, tmp_path / "logs")
    code, err = _ingest(log.location, tmp_path / "ingested", capsys)
    assert code == 0, err
    ours = json.loads((run / "results.json").read_text())
    back = json.loads((tmp_path / "ingested" / "results.json").read_text())
    for section in ("accuracy", "interventions"):
        assert back[section] == ours[section], section
    assert back["config"]["interventions"] == ours["config"]["interventions"] == names.split(",")
    figures = _figures(log)
    for name in names.split(","):
        assert figures[f"{name}_change"] == ours["interventions"]["by_intervention"][name]["change"]["gain"]
    keys = ("id", "prediction", "correct", "raw_output", "interventions")
    assert [{k: s[k] for k in keys} for s in _lines(tmp_path / "ingested")] == [
        {k: without_costs(s[k]) for k in keys}
        for s in _lines(run)  # ingested: no token counts
    ]
