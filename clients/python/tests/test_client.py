"""The helper's own checks, no loom needed: bad input is refused before any call, naming the argument."""

import pytest

from loom_client import LoomClient, to_dict
from loom_client.client import _struct


def test_refuses_an_empty_address() -> None:
    with pytest.raises(ValueError, match="^address: required"):
        LoomClient.connect("")


def test_refuses_a_body_that_is_not_an_object() -> None:
    with pytest.raises(TypeError, match="^body: expected a JSON object"):
        _struct(["not", "an", "object"], "body")  # type: ignore[arg-type]


def test_refuses_a_graph_read_naming_both_or_neither_source() -> None:
    with LoomClient.connect("127.0.0.1:1", "a-token-of-16-characters") as client:
        for sources in ({}, {"graph": "orders", "workflow": "Orders"}):
            with pytest.raises(ValueError, match="^graph, workflow: give exactly one"):
                client.read_graph("MATCH (n) RETURN n", **sources)


def test_struct_numbers_are_doubles() -> None:
    assert to_dict(_struct({"quantity": 3, "nested": {"ok": True}}, "body")) == {"quantity": 3.0, "nested": {"ok": True}}
