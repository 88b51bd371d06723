"""GET /api/schema/: the OpenAPI document, built once per process and then served as is.

drf-spectacular loads its contrib extensions lazily, on the first schema build, and two threads
doing that at once fail (`'NoneType' object has no attribute 'startswith'` in plumbing._load_class).
The document does not depend on who asks (it is public, and the same for every request), so
the first request builds it under a lock and every later one — on any thread — reuses it.
"""

import threading

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.response import Response

_lock = threading.Lock()
_built: dict = {}


class SchemaView(SpectacularAPIView):
    @extend_schema(**SCHEMA_KWARGS)  # as SpectacularAPIView.get says of itself
    def get(self, request, *args, **kwargs) -> Response:
        with _lock:
            if not _built:
                built = super().get(request, *args, **kwargs)
                _built.update(data=built.data, disposition=built["Content-Disposition"])
        return Response(data=_built["data"], headers={"Content-Disposition": _built["disposition"]})
