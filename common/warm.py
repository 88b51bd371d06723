"""What a serving or sending process needs once, done when it starts rather than by its first request.

Django imports the URLconf (and with it every view module) on the first request a process resolves,
fills its URL tables on the first reverse() of each thread that finds them empty, and compiles a
template on first use. In a web worker the first page after a start paid for all of it, and every
request that arrived meanwhile queued behind it (docs/performance.md).
"""

import gc
from pathlib import Path

from django.conf import settings
from django.forms.renderers import get_default_renderer
from django.template import engines
from django.urls import get_resolver
from django.utils.module_loading import import_string


def warm_urls() -> None:
    """Import the URLconf and fill the URL tables, the namespaces' too."""
    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 — the property imports the URLconf
    resolver.reverse_dict  # noqa: B018 — the property fills the tables
    for _prefix, namespace in resolver.namespace_dict.values():
        namespace.reverse_dict  # noqa: B018


def warm_pages() -> None:
    """Compile the project's own templates into the cached loader (not every installed app's), and import
    what settings name for every page: context processors, form renderer, session serializer, messages."""
    engine = engines["django"]
    for directory in engine.dirs:
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file():
                engine.get_template(path.relative_to(directory).as_posix())
    engine.engine.template_context_processors  # noqa: B018 — the property imports them
    get_default_renderer()
    import_string(settings.SESSION_SERIALIZER)
    import_string(settings.MESSAGE_STORAGE)


def settle_collector() -> None:
    """Freeze what startup built (modules, URL tables, templates: never garbage, so never walked again by
    a full collection, which stops the event loop while it walks). The thresholds stay Python's own."""
    gc.collect()
    gc.freeze()


def warm_process() -> None:
    warm_urls()
    warm_pages()
