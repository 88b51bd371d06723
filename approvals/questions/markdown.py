"""A plan's Markdown as safe HTML: markdown-it-py (CommonMark) with raw HTML off and no images.

An agent writes the plan, so it is untrusted input: raw HTML is shown as text, an image is shown
as its words (a remote image would tell its server who read the plan, and when), and a link
opens nothing by itself (rel=noopener noreferrer nofollow; markdown-it already refuses
javascript: and data: URLs).
"""

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def _image(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    words = self.renderInlineAsText(token.children or [], options, env) or "image"
    return f'<span class="plan-image" title="Images are not shown">[{escape(words)}]</span>'


def _link_open(self, tokens, idx, options, env) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return self.renderToken(tokens, idx, options, env)


_md.add_render_rule("image", _image)
_md.add_render_rule("link_open", _link_open)


def plan_html(markdown: str) -> SafeString:
    """The plan as HTML for a page or an email: escaped text, never the agent's own HTML."""
    return mark_safe(_md.render(markdown or ""))  # noqa: S308 — html is off: markdown-it escapes all text
