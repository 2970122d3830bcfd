"""The review page's form for one item, as an annotator who changes nothing (or only ``changes``) sends it."""

from __future__ import annotations

from mmspubench.curate import review_handlers as h


def review_form(draft: h.Draft, item_id: str, **changes: object) -> dict[str, object]:
    """The form fields of ``item_id`` as the draft holds them, with ``changes`` laid over them."""
    fields = h.raw_fields(draft.record(item_id))
    form: dict[str, object] = {
        "question": fields["question"], "answer": fields["answer"], "class_name": fields["class_name"],
        "core_attributes": "\n".join(fields["core_attributes"]),
        "spurious_attributes": "\n".join(fields["spurious_attributes"]),
        "spurious_types": fields["spurious_types"],
        **{f"option_{x}": o for x, o in zip("ABCD", fields["options"], strict=True)},
    }  # fmt: skip
    return {**form, **changes}
