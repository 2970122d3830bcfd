"""Raw release -> Hub-layout folder: ``data/test-*.parquet`` (images embedded), ``README.md``, ``eval.yaml``.

Every record and every image is validated before anything is written. The Parquet shards are
written by a ``datasets.GeneratorBasedBuilder`` subclass run directly; its generator yields one
example at a time holding only the image's path, and the Parquet writer embeds the file bytes
batch by batch, so peak memory does not grow with the number of items. The whole folder is built
beside ``--out`` and renamed into place at the end, so a failure leaves nothing behind.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import datasets
from mmspubench.dataset_builder.folders import swap_into
from mmspubench.dataset_builder.images import MAX_IMAGE_PIXELS, check_image, resolve_image
from mmspubench.dataset_builder.raw import (
    UnknownKeyPolicy,
    check_release,
    read_annotation,
    validate_entry,
)
from mmspubench.dataset_builder.raw_counterfactuals import parse_counterfactuals
from mmspubench.dataset_builder.schema import Item, features_for
from mmspubench.dataset_builder.staging import check_out_vs_source, make_staging
from mmspubench.errors import MMSpuBenchError
from mmspubench.options import option

BUILDER_NAME = "mm_spubench"
SPLIT = "test"
DATA_DIR = "data"
DEFAULT_MAX_SHARD_BYTES = 500 * 2**20
WRITER_BATCH_SIZE = 100


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """How strictly to read the raw release and how to shard the output."""

    max_image_pixels: int = option(
        MAX_IMAGE_PIXELS, "refuse larger images as decompression bombs", arg_type=int
    )
    """Images with more pixels are refused as decompression bombs."""
    unknown_keys: UnknownKeyPolicy = option(
        "error",
        "what to do with a raw key the key table does not know (default: error)",
        choices=("error", "ignore"),
    )
    """``error``: a raw key outside ``raw.KEY_TABLE`` stops the build; ``ignore``: it is dropped."""
    max_shard_bytes: int = option(DEFAULT_MAX_SHARD_BYTES, "Parquet shard size", cli=False)
    """A new Parquet shard starts once the current one holds this many bytes (checked per row group)."""
    writer_batch_size: int = option(WRITER_BATCH_SIZE, "rows per Parquet row group", cli=False)
    """Rows per Parquet row group; bounds the image bytes held in memory at once."""


def validate_release(source: Path, options: BuildOptions = BuildOptions()) -> list[Item]:
    """Read and check every record and image of the raw release; raise on the first problem."""
    return validate_release_matched(source, options)[0]


def validate_release_matched(source: Path, options: BuildOptions = BuildOptions()) -> tuple[list[Item], str]:
    """``validate_release`` and how images were matched (``image_order.BY_ID`` or ``BY_POSITION``)."""
    from mmspubench.dataset_builder import image_order

    check_release(source)
    entries = list(read_annotation(source, unknown_keys=options.unknown_keys))
    positional = image_order.needs_positional_pairing(source, entries)
    paired = image_order.pair_by_position(source, entries) if positional else None
    records: list[Item] = []
    for i, entry in enumerate(entries):
        named = paired[i] if paired is not None else entry.fields.get("image")
        image_path = resolve_image(source, entry.file, entry.id, named)
        record = validate_entry(entry, image_path)
        check_image(image_path, entry.file, entry.id, max_pixels=options.max_image_pixels)
        counterfactuals = parse_counterfactuals(source, entry, record, max_pixels=options.max_image_pixels)
        records.append(replace(record, counterfactuals=counterfactuals) if counterfactuals else record)
    if not records:
        raise MMSpuBenchError(f"{source / 'annotation.json'}: no records; expected at least one")
    return records, image_order.BY_POSITION if positional else image_order.BY_ID


def has_counterfactuals(records: Sequence[Item]) -> bool:
    """Whether the build carries the optional ``counterfactuals`` column: only when some record has
    one, so a release without them builds to exactly ``FEATURES`` (and its content hash)."""
    return any(record.counterfactuals for record in records)


def record_to_example(record: Item, *, with_counterfactuals: bool = False) -> dict[str, Any]:
    """The ``FEATURES`` example of a record; the image is given by path and embedded on write."""
    return record.to_example(with_counterfactuals=with_counterfactuals)


class MMSpuBenchBuilder(datasets.GeneratorBasedBuilder):
    """Writes the validated records of one raw release as the ``test`` split."""

    VERSION = datasets.Version("1.0.0")

    def __init__(self, records: Sequence[Item], **kwargs: Any) -> None:
        self._records = records
        self._with_counterfactuals = has_counterfactuals(records)
        super().__init__(dataset_name=BUILDER_NAME, **kwargs)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(features=features_for(self._with_counterfactuals))

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={})]

    def _generate_examples(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for record in self._records:
            yield record.id, record_to_example(record, with_counterfactuals=self._with_counterfactuals)


def build_repo(
    source: Path, out: Path, *, overwrite: bool = False, options: BuildOptions = BuildOptions()
) -> Path:
    """Build the Hub-layout folder for the raw release ``source`` at ``out``; return ``out``."""
    from mmspubench.dataset_builder.card import render_card
    from mmspubench.dataset_builder.eval_yaml import render_eval_yaml
    from mmspubench.dataset_builder.image_order import MATCHING_NOTES
    from mmspubench.dataset_builder.inspect_config import write_inspect_config

    out = Path(out)
    check_out_vs_source(Path(source), out)
    if (out.exists() or out.is_symlink()) and not overwrite:
        raise MMSpuBenchError(f"{out}: --out already exists; pass --overwrite to replace it")
    if out.exists() and not out.is_dir():
        raise MMSpuBenchError(f"{out}: --out is a file, not a folder; --overwrite replaces folders only")
    records, matching = validate_release_matched(Path(source), options)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        work = make_staging(out)
    except OSError as err:
        raise MMSpuBenchError(f"{out}: cannot create the output folder ({_reason(err)})") from None
    try:
        repo = work / "repo"
        shards, split_info = _write_shards(records, work, repo, options)
        download_size = sum(p.stat().st_size for p in shards)
        write_inspect_config(records, repo)
        card = render_card(records, split_info, download_size, image_matching=MATCHING_NOTES[matching])
        (repo / "README.md").write_text(card, encoding="utf-8")
        (repo / "eval.yaml").write_text(render_eval_yaml(), encoding="utf-8")
        swap_into(repo, out, work)
    except OSError as err:  # disk full, permissions, I/O errors while writing: nothing is left behind
        raise MMSpuBenchError(
            f"{out}: writing the dataset failed ({_reason(err)}); --out is unchanged"
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _reason(err: OSError) -> str:
    where = f": {err.filename}" if err.filename else ""
    return f"{err.strerror or type(err).__name__}{where}"


def _write_shards(
    records: Sequence[Item], work: Path, repo: Path, options: BuildOptions
) -> tuple[list[Path], datasets.SplitInfo]:
    builder = MMSpuBenchBuilder(
        records, cache_dir=str(work / "cache"), writer_batch_size=options.writer_batch_size
    )
    prepared = work / "prepared"
    try:
        builder.download_and_prepare(
            output_dir=str(prepared),
            file_format="parquet",
            max_shard_size=options.max_shard_bytes,
            download_mode=datasets.DownloadMode.FORCE_REDOWNLOAD,
        )
    except datasets.exceptions.DatasetGenerationError as err:
        cause = err.__cause__ or err
        raise MMSpuBenchError(f"writing Parquet failed: {type(cause).__name__}: {cause}") from None
    written = sorted(prepared.glob(f"{BUILDER_NAME}-{SPLIT}*.parquet"), key=_shard_index)
    if not written:
        raise MMSpuBenchError(f"{prepared}: the builder wrote no Parquet shard")
    (repo / DATA_DIR).mkdir(parents=True)
    shards = []
    for index, path in enumerate(written):
        target = repo / DATA_DIR / f"{SPLIT}-{index:05d}-of-{len(written):05d}.parquet"
        path.rename(target)
        shards.append(target)
    written_info = builder.info.splits[SPLIT]
    split_info = datasets.SplitInfo(
        name=SPLIT, num_bytes=written_info.num_bytes, num_examples=written_info.num_examples
    )
    return shards, split_info


def _shard_index(path: Path) -> int:
    match = re.search(r"-(\d{5})-of-\d{5}\.parquet$", path.name)
    return int(match.group(1)) if match else 0
