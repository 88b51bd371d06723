"""For operators: `/healthz` (is the database answering?) and `/metrics` (Prometheus text).

Metrics are read from the database at scrape time by one collector, so every process of every
server answers the same numbers; only `hitl_waiting_engines` is this process's own count (the
long-poll holds its waiters in memory). Decided requests are never deleted (a trigger refuses
it), so counting them gives a true counter.
"""

import hmac
import os
from collections.abc import Iterator

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny

from approvals.engine.waiting import waiting_count
from approvals.models import ApprovalRequest
from contacts.models import Delivery

# Seconds: from "decided within a second" (rubber-stamping) to a day (the default lifetime).
DECISION_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600)


_TABLE = ApprovalRequest._meta.db_table
_BUCKET_COLUMNS = ", ".join(f"count(*) FILTER (WHERE seconds <= {bound})" for bound in DECISION_BUCKETS)
_DECIDED_SQL = f"""
SELECT status, count(*), {_BUCKET_COLUMNS}, coalesce(sum(seconds), 0)
FROM (
    SELECT status,
           CASE WHEN status = 'expired' THEN NULL ELSE extract(epoch FROM decided_at - created_at) END AS seconds
    FROM {_TABLE} WHERE status <> 'pending'
) AS decided
GROUP BY status
"""
_PENDING_SQL = f"SELECT count(*) FROM {_TABLE} WHERE status = 'pending' AND expires_at > %s"
# Every workspace's chain head, summed: a counter that only grows. Prometheus keeps its history
# outside the database, so a log emptied and its heads reset shows as a reset (docs/deploy.md).
_SEALED_SQL = "SELECT coalesce(sum(seq), 0) FROM audit_audithead"
# Every delivery row by channel and where it stands now: a delivery moves from pending to sent or failed,
# and a pending one superseded before it was sent is dropped, so only sent and failed only grow.
_DELIVERIES_SQL = f"SELECT channel, status, count(*) FROM {Delivery._meta.db_table} GROUP BY channel, status"


class PortalCollector(Collector):
    """Four queries per scrape: pending now, the decided requests by outcome with their timings, the
    audit records sealed, and the notification deliveries by channel and status."""

    def collect(self) -> Iterator[Metric]:
        with connection.cursor() as cursor:
            cursor.execute(_PENDING_SQL, [timezone.now()])
            pending = cursor.fetchone()[0]
            cursor.execute(_DECIDED_SQL)
            decided = cursor.fetchall()
            cursor.execute(_SEALED_SQL)
            sealed = cursor.fetchone()[0]
            cursor.execute(_DELIVERIES_SQL)
            deliveries = cursor.fetchall()

        yield GaugeMetricFamily("hitl_approvals_pending", "Approval requests waiting for a person now.", value=pending)

        decisions = CounterMetricFamily(
            "hitl_approval_decisions", "Approval requests decided, by outcome.", labels=["outcome"]
        )
        buckets = [0] * len(DECISION_BUCKETS)
        decided_count, decided_sum = 0, 0.0
        for status, count, *rest in decided:
            decisions.add_metric([status], count)
            if status != "expired":
                buckets = [total + n for total, n in zip(buckets, rest[:-1], strict=True)]
                decided_count += count
                decided_sum += float(rest[-1])
        yield decisions

        yield HistogramMetricFamily(
            "hitl_time_to_decision_seconds",
            "Seconds from registration to a person's decision (expired requests are not decisions).",
            buckets=[(str(float(b)), n) for b, n in zip(DECISION_BUCKETS, buckets, strict=True)]
            + [("+Inf", decided_count)],
            sum_value=decided_sum,
        )
        yield GaugeMetricFamily(
            "hitl_waiting_engines", "Long-polls this server process holds open now.", value=waiting_count()
        )
        yield CounterMetricFamily(
            "hitl_audit_sealed_records", "Audit records sealed into the hash chains, all workspaces.", value=sealed
        )
        delivered = CounterMetricFamily(
            "hitl_deliveries", "Notification deliveries, by channel and status.", labels=["channel", "status"]
        )
        for channel, status, count in deliveries:
            delivered.add_metric([channel, status], count)
        yield delivered


registry = CollectorRegistry(auto_describe=False)
registry.register(PortalCollector())


def _authorized(request: HttpRequest) -> bool:
    expected = os.environ.get("HITL_METRICS_TOKEN", "")
    given = request.headers.get("Authorization", "")
    # No token configured: nobody scrapes (metrics name workloads; they are not public).
    return bool(expected) and hmac.compare_digest(given.encode(), f"Bearer {expected}".encode())


@extend_schema(
    tags=["Operations"],
    summary="Prometheus metrics",
    description="Prometheus text format. Needs `Authorization: Bearer $HITL_METRICS_TOKEN` (unset: always 401).",
    auth=[],
    responses={
        (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="The metrics (Prometheus text)."),
        (401, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="No or wrong scrape token."),
    },
)
@api_view(["GET"])
@authentication_classes([])  # the scrape token is not an API token
@permission_classes([AllowAny])
def metrics(request: HttpRequest) -> HttpResponse:
    if not _authorized(request):
        response = HttpResponse(
            "Send Authorization: Bearer <the value of HITL_METRICS_TOKEN> (unset: metrics are off).\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        response["Cache-Control"] = "no-store"
        return response
    response = HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])


@extend_schema(
    tags=["Operations"],
    summary="Health check",
    description="200 when the database answers, else 503.",
    auth=[],
    responses={200: HealthSerializer, 503: HealthSerializer},
)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        connection.close()  # let the next request open a fresh one
        return JsonResponse({"status": "unavailable", "database": "not answering"}, status=503)
    return JsonResponse({"status": "ok"})
