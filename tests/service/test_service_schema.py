"""The service against its own OpenAPI document, with schemathesis: every operation, with
generated valid and invalid requests, answers as the document says and never with a 500."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("schemathesis")
import schemathesis
from hypothesis import HealthCheck, assume, settings

from neardup.records import no_text
from neardup.service import create_app

KEY = "schema-test-key"

app = create_app(api_key=KEY, allowed_hosts=["testserver"])  # the Host schemathesis sends
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=40, suppress_health_check=list(HealthCheck), deadline=None)
def test_every_operation_conforms_to_the_openapi_document(case: schemathesis.Case) -> None:
    """Generated requests get documented statuses, JSON bodies of the documented shapes.
    (A text that is nothing once normalized, such as ``<b>\u200b</b>``, matches the
    schema's pattern yet is refused, as its description says: no schema can tell.)"""
    assume(not any(no_text(t) for t in _texts(case.body)))
    case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"})


def _texts(body: object) -> list[str]:
    """The documents' texts a generated body holds (of one document or of a batch)."""
    if not isinstance(body, dict):
        return []
    docs = body.get("documents") if isinstance(body.get("documents"), list) else [body]
    return [d["text"] for d in docs if isinstance(d, dict) and isinstance(d.get("text"), str)]


def test_the_openapi_document_lists_every_endpoint() -> None:
    """The document has every endpoint of the service, with its methods."""
    paths = {p: sorted(ops) for p, ops in app.openapi()["paths"].items()}
    assert paths == {
        "/v1/compare": ["post"],
        "/v1/check": ["post"],
        "/v1/documents": ["post"],
        "/v1/documents:batch": ["post"],
        "/v1/documents/{doc_id}": ["delete", "get"],
        "/v1/clusters": ["get"],
        "/v1/clusters/{cluster_id}": ["get"],
        "/healthz": ["get"],
        "/metrics": ["get"],
    }
