"""Text from a run, a dataset or a user renders as itself in Markdown and HTML, never as markup."""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt
from mmspubench.markup import (
    code_block,
    code_span,
    escape_cell,
    escape_html,
    escape_markdown,
    hub_link,
    is_valid_hub_id,
)

HOSTILE = [
    "org/<img src=https://evil.example/x.png>",
    "[click](https://evil.example)",
    "![x](https://evil.example/p.png)",
    "<script>alert(1)</script>",
    "a | b | c",
    "**bold** _it_ `code` ~~s~~",
    "https://evil.example/autolink www.evil.example",
    "&lt;img src=x&gt;",
    '"><svg onload=alert(1)>',
    "# heading\n\n- list\n> quote\n---\n  - nested\n+ plus\n1. one",
    "<https://evil.example>",
    "name\u202eevil\u200b\x1b]0;title\x07",
]


def _render(text: str) -> str:
    # CommonMark with raw HTML on, plus GFM tables: what a permissive renderer would do.
    return MarkdownIt("commonmark").enable("table").render(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_as_itself(text: str) -> None:
    out = _render(escape_markdown(text))
    for tag in (
        "<img",
        "<a ",
        "<script",
        "<svg",
        "<strong",
        "<em",
        "<code",
        "<h1",
        "<h2",
        "<li",
        "<hr",
        "<blockquote",
    ):
        assert tag not in out, (text, out)
    visible = text.translate({c: None for c in range(0x20) if c not in (9, 10)})
    for mark in ("\u202e", "\u200b", "\x7f"):
        visible = visible.replace(mark, "")
    shown = html.unescape(out.replace("<p>", "").replace("</p>", ""))
    assert shown.split() == visible.split()  # the same words; only paragraph breaks may differ


def test_escaped_text_is_safe_in_html_too() -> None:
    out = escape_markdown("<b onclick='x'>&amp;</b>")
    assert "<" not in out and ">" not in out
    assert html.unescape(out) == "<b onclick='x'>&amp;</b>"


def test_a_table_cell_stays_one_cell() -> None:
    table = f"| Model |\n|---|\n| {escape_cell('a | b' + chr(10) + '| c |')} |\n"
    out = _render(table)
    assert out.count("<td>") == 1 and "<a " not in out


def test_hub_link_links_only_valid_ids_it_builds() -> None:
    assert hub_link("org/name") == "[org/name](https://huggingface.co/org/name)"
    assert hub_link("org/data", kind="dataset").endswith("(https://huggingface.co/datasets/org/data)")
    assert hub_link("org/app", kind="space").endswith("(https://huggingface.co/spaces/org/app)")
    for bad in (
        "org/<img src=x>",
        "org/[a](b)",
        "org/name\n",
        "a/b/c",
        "org/na--me",
        "org/-x",
        "org/ｅvil",
        "plain",
    ):
        assert "](" not in hub_link(bad), bad
        assert "<" not in hub_link(bad)
    with pytest.raises(ValueError):
        hub_link("org/name", kind="paper")


def test_hub_id_rules() -> None:
    assert is_valid_hub_id("Qwen/Qwen2.5-VL-3B-Instruct") and is_valid_hub_id("gpt2")
    assert not is_valid_hub_id("org/name.") and not is_valid_hub_id("org/a..b") and not is_valid_hub_id("")


def test_code_block_cannot_be_closed_by_its_content() -> None:
    text = "a\n```\n<img src=x> [l](https://evil.example)\n````\nb"
    out = _render(code_block(text))
    assert out.count("<pre>") == 1 and "<img" not in out and "<a " not in out
    assert html.unescape(out.split('<code class="language-text">')[1].split("</code>")[0]).strip() == text


def test_escape_html_keeps_a_message_readable() -> None:
    assert escape_html("field 'x': <b>&</b>") == "field 'x': &lt;b&gt;&amp;&lt;/b&gt;"


@pytest.mark.parametrize("text", ["000042", "a`b", "`x`", "``<img src=x>``", "<a href=x>y</a>"])
def test_code_span_shows_its_text_verbatim(text: str) -> None:
    out = _render(code_span(text))
    assert out.count("<code>") == 1 and "<img" not in out and "<a " not in out
    assert html.unescape(out.split("<code>")[1].split("</code>")[0]) == text
