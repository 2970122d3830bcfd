"""`mmspubench export --format vlmevalkit --run DIR`: VLMEvalKit's prediction file of a run's
answers: `prediction` is the text after the reasoning (what the answer is read from), `thinking`
the reasoning, `raw_output` the whole reply, each read back with VLMEvalKit's reader
(`pd.read_csv(f, sep='\\t')`) exactly as written; a text pandas would read as missing is guarded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mmspubench.cli import main
from mmspubench.eval.records import SampleResult
from mmspubench.eval.replies.record import ReplyReading
from mmspubench.eval.results import write_samples_atomic

from tests.dataset_builder import hub_fixtures as hub

pd = pytest.importorskip("pandas")

EXPORT = ["export", "--format", "vlmevalkit", "--dataset", hub.REPO_ID]


def _items() -> list[Any]:
    from mmspubench.integrations.items import load_split

    return [s.item for s in load_split(hub.REPO_ID, hub.COMMIT).items]


def _answer(item: Any, k: int) -> tuple[str | None, str, ReplyReading]:
    """The ``k``-th kind of reply to ``item``: a thought then the letter, a thought cut by the budget,
    a refusal written ``None`` after a thought, and a plain letter."""
    other = "D" if item.answer != "D" else "A"
    if k % 4 == 0:
        raw = f"<think>Maybe {other}.</think>\n\n{item.answer}"
        return item.answer, raw, ReplyReading(item.answer, "parser", f"Maybe {other}.")
    if k % 4 == 1:
        return None, "<think>It is surely", ReplyReading("", "none", "It is surely", truncated=True)
    if k % 4 == 2:
        return None, "<think>Hard.</think>None", ReplyReading("None", "none", "Hard.")
    return item.answer, item.answer, ReplyReading(item.answer, "parser")


def _run(folder: Path, items: list[Any], generated: bool = True) -> Path:
    samples = []
    for k, item in enumerate(items):
        prediction, raw, reading = _answer(item, k)
        samples.append(
            SampleResult(
                id=item.id,
                types=tuple(item.spurious_types),
                answer=item.answer,
                prediction=prediction if generated else item.answer,
                correct=(prediction if generated else item.answer) == item.answer,
                raw_output=raw if generated else None,
                option_scores=None if generated else (0.0, -1.0, -2.0, -3.0),
                class_name=item.class_name,
                conditions=(),
                cgla_min=None,
                cgla_acc=None,
                reading=reading if generated else None,
            )
        )
    folder.mkdir(parents=True)
    write_samples_atomic(folder / "samples.jsonl", samples, None)
    return folder


def test_the_prediction_file_carries_the_answer_after_the_reasoning(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items()[:8]  # a run of the first items (--limit 8): rows keep the dataset's index
    run = _run(tmp_path / "run", items)
    out = tmp_path / "model_MM_SpuBench.tsv"
    assert main([*EXPORT, "--run", str(run), "--out", str(out)]) == 0
    assert f"{out}: 8 answers of {run} in VLMEvalKit's prediction layout" in capsys.readouterr().out
    table = pd.read_csv(out, sep="\t")  # what VLMEvalKit's load does with a .tsv
    assert list(table.columns) == [
        *("index", "question", "A", "B", "C", "D", "answer", "category", "item_id"),
        *("prediction", "thinking", "raw_output", "read_by"),
    ]
    dataset = tmp_path / "MM_SpuBench.tsv"
    assert main([*EXPORT, "--out", str(dataset)]) == 0
    whole = pd.read_csv(dataset, sep="\t")
    indices = dict(zip(whole["item_id"], whole["index"], strict=True))
    for k, (item, row) in enumerate(zip(items, table.itertuples(index=False), strict=True)):
        _, raw, reading = _answer(item, k)
        assert row.item_id == "item:" + item.id and row.index == indices[row.item_id]
        shown = reading.answer_text if reading.answer_text not in ("", "None") else " " + reading.answer_text
        assert row.prediction == shown  # never a letter of the reasoning; never NaN
        assert row.thinking == (reading.reasoning or " ") and row.raw_output == raw
        assert row.read_by == reading.read_by
    assert not table.isna().any().any()


def test_the_guard_knows_every_word_pandas_reads_as_missing() -> None:
    from mmspubench.integrations.vlmevalkit import NA_WORDS, guarded
    from pandas._libs.parsers import STR_NA_VALUES

    assert set(STR_NA_VALUES) == NA_WORDS
    assert guarded("None") == " None" and guarded("C") == "C" and guarded("none") == "none"


@pytest.mark.parametrize(
    ("more", "said"),
    [
        (["--circular"], "--run exports the answers of the published order; it takes no --circular"),
        (["--interventions", "blur"], "it takes no --circular or --interventions"),
    ],
)
def test_a_prediction_export_with_a_view_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], more: list[str], said: str
) -> None:
    out = tmp_path / "p_circular.tsv"
    assert main([*EXPORT, "--run", str(tmp_path), "--out", str(out), *more]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and not out.exists()


def test_a_logprob_run_has_no_text_to_export(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path / "run", _items()[:3], generated=False)
    out = tmp_path / "p.tsv"
    assert main([*EXPORT, "--run", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "record '" in err[0] and "field 'raw_output'" in err[0], err
    assert "generate-mode run" in err[0] and not out.exists()


@pytest.mark.parametrize("word", ["NA", "None", "nan", "#N/A", "<NA>", "1", "TRUE"])
def test_a_reasoning_pandas_reads_as_missing_is_guarded_and_a_number_refused(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], word: str
) -> None:
    items = _items()[:3]
    folder = tmp_path / "run"
    samples = [
        SampleResult(
            id=item.id,
            types=tuple(item.spurious_types),
            answer=item.answer,
            prediction=item.answer,
            correct=True,
            raw_output=f"<think>{word}</think>{item.answer}",
            option_scores=None,
            class_name=item.class_name,
            conditions=(),
            cgla_min=None,
            cgla_acc=None,
            reading=ReplyReading(item.answer, "parser", word),
        )
        for item in items
    ]
    folder.mkdir(parents=True)
    write_samples_atomic(folder / "samples.jsonl", samples, None)
    out = tmp_path / "p.tsv"
    code = main([*EXPORT, "--run", str(folder), "--out", str(out)])
    if word in ("1", "TRUE"):  # no guard keeps a number or a boolean text: refused, nothing written
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert code == 2 and not out.exists()
        assert f"record '{items[0].id}': field 'thinking': {word!r} reads back" in err
        return
    assert code == 0
    assert pd.read_csv(out, sep="\t")["thinking"].tolist() == [" " + word] * 3  # VLMEvalKit strips it
