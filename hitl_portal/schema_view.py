"""GET /api/schema/: the OpenAPI document, built once per process and then served as is.

drf-spectacular loads its contrib extensions lazily, on the first schema build, and two threads
doing that at once fail (`'NoneType' object has no attribute 'startswith'` in plumbing._load_class).
The document does not depend on who asks (it is public, and the same for every request), so
the first request builds it under a lock and every later one — on any thread — reuses it.
"""

import threading

from drf_spectacular.views import SpectacularAPIView
from rest_framework.response import Response

_lock = threading.Lock()
_built: dict = {}


class SchemaView(SpectacularAPIView):
    def _get_schema_response(self, request) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        with _lock:
            if version not in _built:
                generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
                _built[version] = generator.get_schema(request=request, public=self.serve_public)
        return Response(
            data=_built[version],
            headers={"Content-Disposition": f'inline; filename="{self._get_filename(request, version)}"'},
        )
