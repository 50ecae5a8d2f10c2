"""The service against its own OpenAPI document, with schemathesis: every operation, with
generated valid and invalid requests, answers as the document says and never with a 500."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("schemathesis")
import schemathesis
from hypothesis import HealthCheck, settings

from neardup.service import create_app

KEY = "schema-test-key"

app = create_app(api_key=KEY, allowed_hosts=["testserver"])  # the Host schemathesis sends
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=40, suppress_health_check=list(HealthCheck), deadline=None)
def test_every_operation_conforms_to_the_openapi_document(case: schemathesis.Case) -> None:
    """Generated requests get documented statuses, JSON bodies of the documented shapes."""
    case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"})


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
