"""The tiny-model trainer: examples as eval renders them, the loss, a few real optimiser steps."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from mmspubench.eval import prompts  # noqa: E402
from mmspubench.eval.protocol import ScoreRequest  # noqa: E402
from mmspubench.eval.tiny import examples as tiny_examples  # noqa: E402
from mmspubench.eval.tiny import train as train_tiny  # noqa: E402
from mmspubench.eval.tiny.train import Architecture, TrainConfig  # noqa: E402
from PIL import Image  # noqa: E402

TINY = Architecture(
    image_size=32,
    patch_size=8,
    vision_hidden=32,
    vision_layers=1,
    text_hidden=32,
    text_layers=1,
    heads=2,
    vocab_size=400,
)
NAMES = ("boat", "cactus", "snowman", "rocket")


@dataclass(frozen=True)
class FakeItem:
    image: Image.Image
    question: str
    options: tuple[str, ...]
    answer: str
    class_name: str
    core_attributes: tuple[str, ...]
    spurious_attributes: tuple[str, ...]


def fake_items(n: int, seed: int = 0) -> list[FakeItem]:
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        c = rng.randrange(len(NAMES))
        options = list(NAMES)
        rng.shuffle(options)
        items.append(
            FakeItem(
                image=Image.new("RGB", (40, 40), (60 * c, 90, 200 - 40 * c)),
                question="What is the object on the blue water, in the centre?",
                options=tuple(options),
                answer="ABCD"[options.index(NAMES[c])],
                class_name=NAMES[c],
                core_attributes=(f"{NAMES[c]} part one", "thin dark mast"),
                spurious_attributes=("blue water background",),
            )
        )
    return items


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[FakeItem], object]:
    items = fake_items(12)
    folder = tmp_path_factory.mktemp("init")
    return items, train_tiny.initial_adapter(items, TINY, seed=0, folder=folder)


def test_examples_cover_both_answer_modes_and_every_condition(setup: tuple) -> None:
    items, adapter = setup
    item = items[0]
    examples = tiny_examples.examples_for(3, item, adapter.render)
    kinds = [e.kind for e in examples]
    assert kinds == ["mcq-generate", "mcq-logprob", "cgla-core", "cgla-core", "cgla-spurious"]
    assert all(e.item == 3 for e in examples)
    assert (examples[0].continuation, examples[0].end_of_turn) == (item.class_name, True)
    assert item.options["ABCD".index(item.answer)] == item.class_name
    letter = tiny_examples.examples_for(3, item, adapter.render, generate_answer="letter")[0]
    assert (letter.continuation, letter.context) == (item.answer, examples[0].context)
    assert examples[0].context == adapter.render(prompts.mcq_prompt(item.question, item.options, "generate"))
    assert examples[1].continuation == " " + item.answer
    assert examples[1].context == adapter.render(prompts.mcq_prompt(item.question, item.options, "logprob"))
    assert all(e.continuation == " " + item.class_name and not e.end_of_turn for e in examples[1:][1:])
    assert examples[4].context == adapter.render(prompts.cgla_prompt("blue water background"))
    assert examples[2].context == adapter.render(prompts.cgla_prompt(item.core_attributes[0]))


def test_encode_puts_exactly_the_continuation_after_start(setup: tuple) -> None:
    items, adapter = setup
    tokenizer = adapter.processor.tokenizer
    # Images of different sizes: the cached ids must still equal the adapter's own encoding.
    images = [it.image.resize((40 + 7 * i, 33 + 5 * i)) for i, it in enumerate(items)]
    examples = [
        ex for i, it in enumerate(items[:4]) for ex in tiny_examples.examples_for(i, it, adapter.render)
    ]
    encoded = tiny_examples.encode(examples, adapter, images)
    for ex, enc in zip(examples, encoded, strict=True):
        tail = tiny_examples.END_OF_TURN if ex.end_of_turn else ""
        assert tokenizer.decode(list(enc.ids[enc.start :])) == ex.continuation + tail
        plain = adapter.encode(ScoreRequest(images[ex.item], ex.context, ex.continuation))
        assert enc.start == plain.n_context
        assert list(enc.ids[: plain.n_tokens]) == plain.inputs["input_ids"][0].tolist()
        n_image = sum(1 for t in enc.ids if t == adapter.processor.image_token_id)
        assert n_image == (TINY.image_size // TINY.patch_size) ** 2


def test_continuation_loss_equals_plain_full_forward(setup: tuple) -> None:
    items, adapter = setup
    encoded, pixels = tiny_examples.prepare(items[:3], adapter)
    batch = encoded[:7]
    with torch.no_grad():
        got = float(train_tiny.continuation_loss(adapter.model, batch, pixels, adapter.pad_token_id))
    # Plain computation: one unpadded forward per example, full LM head, log-softmax, sum over
    # the continuation tokens, then the mean over all continuation tokens of the batch.
    total, count = 0.0, 0
    with torch.no_grad():
        for e in batch:
            ids = torch.tensor([e.ids])
            logits = adapter.model(input_ids=ids, pixel_values=pixels[e.item : e.item + 1]).logits[0]
            logp = torch.log_softmax(logits.float(), dim=-1)
            for pos in range(e.start, len(e.ids)):
                total -= float(logp[pos - 1, e.ids[pos]])
                count += 1
    assert got == pytest.approx(total / count, abs=1e-5)


def test_trained_scores_match_eval_scorer_on_the_same_tokens(setup: tuple) -> None:
    # The sequences training learns from are the ones eval scores: the adapter's CGL of a
    # continuation equals minus the summed loss that training computes for it.
    items, adapter = setup
    examples = [e for e in tiny_examples.examples_for(0, items[0], adapter.render) if not e.end_of_turn]
    encoded, pixels = tiny_examples.prepare(items[:1], adapter)
    encoded = [
        e for e in encoded if e.ids[-1] != adapter.processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    ]
    scores = adapter.score([ScoreRequest(items[0].image, e.context, e.continuation) for e in examples])
    for enc, cgl in zip(encoded, scores, strict=True):
        with torch.no_grad():
            mean = float(train_tiny.continuation_loss(adapter.model, [enc], pixels, adapter.pad_token_id))
        assert -mean * (len(enc.ids) - enc.start) == pytest.approx(cgl, abs=1e-4)


def test_lr_schedule_warms_up_then_decays_to_a_tenth() -> None:
    assert train_tiny.lr_factor(0, 10, 100) == pytest.approx(0.1)
    assert train_tiny.lr_factor(9, 10, 100) == pytest.approx(1.0)
    assert train_tiny.lr_factor(10, 10, 100) == pytest.approx(1.0)
    assert train_tiny.lr_factor(55, 10, 100) == pytest.approx(0.55)
    assert train_tiny.lr_factor(100, 10, 100) == pytest.approx(0.1)


def test_a_few_steps_lower_the_loss_save_and_reload(tmp_path: Path) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    items = fake_items(16)
    config = TrainConfig(
        out=str(tmp_path / "model"),
        correlation=0.95,
        steps=12,
        batch_size=8,
        lr=1e-2,
        warmup=2,
        threads=1,
        log_every=4,
        arch=TINY,
    )
    summary = train_tiny.train(config, items, log=lambda _: None)
    assert len(summary.losses) == 3
    assert summary.losses[-1] < summary.losses[0]
    folder = tmp_path / "model"
    assert json.loads((folder / "training.json").read_text())["config"]["steps"] == 12
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    model = AutoModelForImageTextToText.from_pretrained(folder)
    processor = AutoProcessor.from_pretrained(folder)
    batch = processor(images=[items[0].image], text=["<image> What is it?"], return_tensors="pt")
    assert torch.isfinite(model(**batch).logits).all()


def test_same_seed_gives_the_same_weights(tmp_path: Path) -> None:
    items = fake_items(8)
    weights = []
    for name in ("a", "b"):
        config = TrainConfig(
            out=str(tmp_path / name),
            correlation=None,
            steps=3,
            batch_size=4,
            warmup=1,
            threads=1,
            log_every=3,
            arch=TINY,
        )
        train_tiny.train(config, items, log=lambda _: None)
        from safetensors.torch import load_file

        weights.append(load_file(str(tmp_path / name / "model.safetensors")))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_parse_args_rejects_a_correlation_outside_zero_one() -> None:
    with pytest.raises(SystemExit):
        train_tiny.parse_args(["--out", "x", "--correlation", "1.5"])
    config = train_tiny.parse_args(["--out", "x", "--correlation", "0.95", "--steps", "7"])
    assert (config.correlation, config.steps, config.out) == (0.95, 7, "x")


ASSETS = Path(__file__).resolve().parents[2] / "eval" / "assets"


@pytest.mark.parametrize("name", ["tiny-llava-biased", "tiny-llava-balanced"])
def test_shipped_weights_load_answer_and_score(name: str) -> None:
    from mmspubench.dataset_builder.synth.generate import generate_items
    from mmspubench.dataset_builder.synth.vocab import CLASSES
    from mmspubench.eval.backends.transformers.loading import load_model
    from mmspubench.eval.replies.parse import parse_answer

    folder = ASSETS / name
    training = json.loads((folder / "training.json").read_text())
    assert "mmspubench.eval.tiny.train" in (folder / "README.md").read_text()
    model = load_model(folder, scorer="plain")
    assert model.info.adapter == "hf-image-text-to-text/llava"
    items = list(generate_items(4, seed=1, image_size=64, mode="benchmark", cue="aligned"))
    contexts = [model.render(prompts.mcq_prompt(i.question, i.options, "generate")) for i in items]
    answers = [a.text for a in model.generate([i.image for i in items], contexts, max_new_tokens=16)]
    # A trained model answers with a class name (an untrained one babbles); the biased one, on
    # items whose cue agrees with the class, with one of the options.
    assert all(a.strip() in {c.name for c in CLASSES} for a in answers), answers
    if name.endswith("biased"):
        assert all(parse_answer(a, i.options) is not None for a, i in zip(answers, items, strict=True)), (
            answers
        )
    item = items[0]
    continuation = prompts.cgla_continuation(item.class_name)
    requests = [
        ScoreRequest(item.image, model.render(prompts.cgla_prompt(t)), continuation)
        for t in (*item.core_attributes, *item.spurious_attributes)
    ]
    scores = model.score(requests)
    assert all(math.isfinite(s) and s < 0 for s in scores)
    # Each synthetic core text fits two or three classes; with the picture, a trained model puts the
    # class well above the one-in-ten of a guess among the classes.
    assert max(scores[: len(item.core_attributes)]) > math.log(1 / len(CLASSES))
    assert training["config"]["correlation"] == (0.95 if name.endswith("biased") else None)


def test_planting_options_are_parsed_and_reach_the_training_items() -> None:
    config = train_tiny.parse_args(
        ["--out", "x", "--letter-bias", "b:1", "--text-prior-types", "BG,Col.", "--n-items", "12"]
    )
    assert config.letter_bias == ("B", 1.0)
    assert config.text_prior_types == ("background", "colorization")
    items = tiny_examples.load_items(
        12,
        seed=0,
        image_size=32,
        correlation=None,
        letter_bias=config.letter_bias,
        text_prior_types=config.text_prior_types,
    )
    assert {i.answer for i in items} == {"B"}
    for item in items:
        planted = bool({"background", "colorization"} & set(item.spurious_types))
        assert (item.class_name in item.question) == planted
    assert train_tiny.parse_args(["--out", "x"]).letter_bias is None


@pytest.mark.parametrize(
    "extra", [["--letter-bias", "A"], ["--letter-bias", "Q:0.5"], ["--text-prior-types", "weather"]]
)
def test_bad_planting_options_exit_2(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        train_tiny.parse_args(["--out", "x", *extra])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "synth:" in err and len(err.strip().splitlines()) == 1, err


def test_correlated_types_are_parsed_and_reach_the_training_items() -> None:
    config = train_tiny.parse_args(["--out", "x", "--correlation", "1", "--correlated-types", "Col."])
    assert config.correlated_types == ("colorization",)
    assert train_tiny.parse_args(["--out", "x", "--correlation", "1"]).correlated_types is None
    items = train_tiny.training_items(replace(config, arch=TINY), 60)
    # Correlation 1 on colorization only: every colorization value is the class's home value, the
    # other types' values are drawn uniformly (some not the class's own).
    from mmspubench.dataset_builder.synth.vocab import CLASSES

    home = {c.name: c for c in CLASSES}
    planted = [(i, t, k) for i in items for t, k in i.scene.planted]
    assert any(t == "colorization" for _, t, _ in planted)
    assert all(home[i.class_name].home_key(t) == k for i, t, k in planted if t == "colorization")
    assert any(home[i.class_name].home_key(t) != k for i, t, k in planted if t != "colorization")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--correlation", "0.9", "--correlated-types", "weather"], "synth: --correlated-types: "),
        (["--correlation", "0.9", "--correlated-types", ","], "synth: --correlated-types: "),
        (["--correlated-types", "Col."], "--correlated-types needs --correlation"),
    ],
)
def test_bad_correlated_types_are_one_line_and_exit_2(
    extra: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        train_tiny.parse_args(["--out", "x", *extra])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and expected in err and len(err.strip().splitlines()) == 1, err


def test_training_json_records_the_correlated_types(tmp_path: Path) -> None:
    config = train_tiny.parse_args(
        ["--out", str(tmp_path / "model"), "--correlation", "0.95", "--correlated-types", "colorization"]
    )
    config = replace(config, steps=1, batch_size=4, warmup=1, log_every=1, arch=TINY)
    train_tiny.train(config, fake_items(4), log=lambda _: None)
    recorded = json.loads((tmp_path / "model" / "training.json").read_text())["config"]
    assert recorded["correlated_types"] == ["colorization"] and recorded["correlation"] == 0.95
    assert train_tiny.config_from_json(recorded).correlated_types == ("colorization",)


def test_training_json_records_the_planting_options(tmp_path: Path) -> None:
    config = TrainConfig(
        out=str(tmp_path / "model"),
        correlation=None,
        steps=1,
        batch_size=4,
        warmup=1,
        threads=1,
        log_every=1,
        arch=TINY,
        letter_bias=("A", 0.9),
        text_prior_types=("background",),
    )
    train_tiny.train(config, fake_items(4), log=lambda _: None)
    recorded = json.loads((tmp_path / "model" / "training.json").read_text())["config"]
    assert recorded["letter_bias"] == ["A", 0.9] and recorded["text_prior_types"] == ["background"]


@pytest.mark.parametrize("name", ["balanced", "biased", "color-cue", "letter-bias", "text-prior", "thinking"])
def test_a_shipped_training_json_reads_back_as_its_train_config(name: str) -> None:
    from dataclasses import asdict

    from mmspubench.eval.bundled import ASSETS

    recorded = json.loads((ASSETS / f"tiny-llava-{name}" / "training.json").read_text())["config"]
    config = train_tiny.config_from_json(recorded)
    as_json = json.loads(json.dumps(asdict(config)))  # tuples back to lists, as training.json writes them
    assert {k: as_json[k] for k in recorded if k != "arch"} == {
        k: v for k, v in recorded.items() if k != "arch"
    }
    assert {k: as_json["arch"][k] for k in recorded["arch"]} == recorded["arch"]
    assert (
        train_tiny.training_items(config, 2)[0].question == train_tiny.training_items(config, 5)[0].question
    )


# ---------------------------------------------------------------- the thinking control (--reasoning)


@pytest.fixture(scope="module")
def thinking_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[FakeItem], object]:
    items = fake_items(12)
    folder = tmp_path_factory.mktemp("init-thinking")
    return items, train_tiny.initial_adapter(items, TINY, seed=0, folder=folder, reasoning=True)


def test_reasoning_examples_think_before_the_answer_with_a_decoy_and_score_thinking_off(
    thinking_setup: tuple,
) -> None:
    from mmspubench.eval.replies.parse import parse_answer, parse_final_answer

    items, adapter = thinking_setup
    empty = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    for item in items:
        examples = tiny_examples.examples_for(0, item, adapter.render, reasoning=True)
        generate = examples[0]
        decoy = tiny_examples.decoy_letter(item.answer)
        assert decoy != item.answer and decoy in "AB"
        assert generate.continuation == tiny_examples.reasoning_text(item.answer) + item.class_name
        assert generate.context.endswith("<|im_start|>assistant\n")  # thinking on: nothing opened
        # the whole text's last Answer: line is the decoy; after the block, the gold option's text
        assert parse_final_answer(generate.continuation, item.options) == decoy
        after = generate.continuation.rsplit("</think>", 1)[1]
        assert parse_answer(after, item.options) == item.answer
        # scored prompts as eval renders them for a thinking model: thinking off, the empty block
        assert examples[1].context.endswith(empty + prompts.MCQ_LOGPROB_PREFIX)
        assert all(e.context.endswith(empty + prompts.CGLA_ASSISTANT_PREFIX) for e in examples[2:])
        plain = tiny_examples.examples_for(0, item, adapter.render)
        assert [e.continuation for e in plain[1:]] == [e.continuation for e in examples[1:]]


def test_reasoning_markers_are_special_tokens_kept_when_decoded(thinking_setup: tuple) -> None:
    from mmspubench.eval.checkpoint.decoding import lost_markers, marker_ids

    items, adapter = thinking_setup
    tokenizer = adapter.processor.tokenizer
    markers = marker_ids(tokenizer)
    assert sorted(markers.values()) == ["</think>", "<think>"]
    assert lost_markers(tokenizer, markers) == markers  # skip_special_tokens drops them: kept by hand
    examples = tiny_examples.examples_for(0, items[0], adapter.render, reasoning=True)
    (encoded,) = tiny_examples.encode(examples[:1], adapter, [items[0].image])
    continuation = list(encoded.ids[encoded.start :])
    assert continuation[0] == tokenizer.convert_tokens_to_ids("<think>")
    assert tokenizer.decode(continuation) == examples[0].continuation + tiny_examples.END_OF_TURN


def test_a_reasoning_model_ships_a_thinking_template_and_records_it(tmp_path: Path) -> None:
    from mmspubench.eval.checkpoint import thinking
    from mmspubench.eval.config import with_options
    from mmspubench.eval.replies.reasoning import style_for

    config = train_tiny.parse_args(["--out", str(tmp_path / "model"), "--correlation", "0.95", "--reasoning"])
    assert config.reasoning and not train_tiny.parse_args(["--out", "x"]).reasoning
    config = replace(config, steps=1, batch_size=4, warmup=1, log_every=1, arch=TINY)
    train_tiny.train(config, fake_items(4), log=lambda _: None)
    folder = tmp_path / "model"
    recorded = json.loads((folder / "training.json").read_text())["config"]
    assert recorded["reasoning"] is True and train_tiny.config_from_json(recorded).reasoning
    template = thinking.folder_template(str(folder))
    assert template is not None and style_for("llava", template) == "think"
    assert thinking.of_template(thinking.template_renderer(template), template, str(folder)) == (
        thinking.TemplateThinking(True, True, "<think>\n\n</think>\n\n")
    )
    assert thinking.thinks_before_loading(with_options(None, {"model": str(folder)}))
