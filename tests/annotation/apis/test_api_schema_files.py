"""Every multipart operation of the OpenAPI schema declares its files as binary, so the
docs page's "Try it out" offers a file chooser (they said ``format: uri``)."""

import pytest

from tests.factories import UserFactory
from tests.support.queue_support import client_for

pytestmark = pytest.mark.django_db

FILES = {
    ("post", "/api/datasets/{dataset}/gold/"): {"file"},
    ("post", "/api/imports/embeddings/"): {"vectors", "ids"},
    ("post", "/api/imports/karpathy/"): {"file"},
    ("post", "/api/imports/objects/"): {"file"},
    ("post", "/api/raters/"): {"file"},
    ("post", "/api/sampling/batches/upload/"): {"file"},
}


def multipart_bodies(schema: dict) -> dict[tuple[str, str], dict]:
    """(method, path) -> the multipart request body's properties, references resolved."""
    components = schema["components"]["schemas"]
    bodies = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "multipart/form-data" in content:
                body = content["multipart/form-data"]["schema"]
                if "$ref" in body:
                    body = components[body["$ref"].rsplit("/", 1)[1]]
                bodies[(method, path)] = body["properties"]
    return bodies


def test_every_multipart_operation_declares_its_files_binary():
    answer = client_for(UserFactory(roles=["admin"])).get("/api/schema/", {"format": "json"})
    assert answer.status_code == 200
    bodies = multipart_bodies(answer.json())
    assert set(FILES) <= set(bodies), f"multipart operations: {sorted(bodies)}"
    for operation, properties in bodies.items():
        binary = {name for name, field in properties.items() if field.get("format") == "binary"}
        uris = {name for name, field in properties.items() if field.get("format") == "uri"}
        assert binary, f"{operation} takes no file"
        assert not uris, f"{operation} declares {uris} as URLs"
        assert binary == FILES.get(operation, binary), operation
