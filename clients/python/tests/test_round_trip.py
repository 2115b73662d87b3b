"""The round trip a service written in Python makes through loom's gRPC API, against a running loom: LOOM_ADDRESS and
LOOM_TOKEN (clients/test/clients.test.ts starts one and runs this file)."""

import os
from collections.abc import Iterator

import grpc
import pytest

from loom.v1 import executor_pb2
from loom_client import LoomClient, to_dict

NAME = "Python round trip"
WORKFLOW = """\
name: Python round trip
resources:
  Results:
    kind: graph.AgeDatabase
    parameters: { host: embedded, user: postgres, graph: python_round_trip }
components:
  Orders: source.Inlet
  Price:
    kind: processor.MessageTransformer
    options:
      language: javascript
      script: "if (typeof body.quantity !== 'number') throw new Error('quantity is not a number'); return { ...body, total: body.quantity * body.price };"
  Save:
    kind: persistence.GraphDatabaseWriter
    resource: Results
    options:
      query: "MERGE (o:Order {id: $id}) SET o.total = $total"
links:
  - Orders -> Price -> Save
"""


@pytest.fixture
def client() -> Iterator[LoomClient]:
    address, token = os.environ.get("LOOM_ADDRESS"), os.environ.get("LOOM_TOKEN")
    if not address or not token:
        pytest.skip("LOOM_ADDRESS and LOOM_TOKEN are not set: run through clients/test/clients.test.ts, which starts loom")
    with LoomClient.connect(address, token) as connected:
        yield connected


def test_refuses_a_call_without_the_token() -> None:
    address = os.environ.get("LOOM_ADDRESS")
    if not address:
        pytest.skip("LOOM_ADDRESS is not set: run through clients/test/clients.test.ts, which starts loom")
    with LoomClient.connect(address) as anonymous, pytest.raises(grpc.RpcError) as refused:
        anonymous.list_workflows()
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_refuses_a_wrong_kind_naming_it(client: LoomClient) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        client.push_workflow("name: Typo\ncomponents:\n  In: source.Inlet\n  Log: sink.Loger\nlinks:\n  - In -> Log\n", source_name="typo.workflow.yaml")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "did you mean sink.Logger?" in refused.value.details()
    assert "Typo" not in [summary.name.rsplit("_", 1)[0] for summary in client.list_workflows()]


def test_round_trip(client: LoomClient) -> None:
    pushed = client.push_workflow(WORKFLOW, source_name="python-round-trip.workflow.yaml")
    assert pushed.summary.valid
    assert pushed.summary.name.startswith("Python round trip_")
    assert NAME in [summary.name.rsplit("_", 1)[0] for summary in client.list_workflows()]

    started = client.start_workflow(NAME)
    assert started.state == executor_pb2.WORKFLOW_STATE_RUNNING
    events = client.watch_run(NAME, timeout=120)
    assert next(events).state == executor_pb2.WORKFLOW_STATE_RUNNING
    # the same file again changes nothing: no new version, and the run goes on (the watch sees no restart below);
    # a start of the running workflow answers its run
    again = client.push_workflow(WORKFLOW, source_name="python-round-trip.workflow.yaml")
    assert (again.unchanged, again.metadata.version) == (True, pushed.metadata.version)
    restarted = client.start_workflow(NAME)
    assert (restarted.already_running, restarted.run_id, restarted.state) == (True, started.run_id, executor_pb2.WORKFLOW_STATE_RUNNING)

    accepted = client.publish(NAME, "Orders", {"id": "py-1", "quantity": 3, "price": 2.5}, message_id="py-1")
    assert (accepted.message_id, accepted.duplicate) == ("py-1", False)
    assert client.publish(NAME, "Orders", {"id": "py-1", "quantity": 3, "price": 2.5}, message_id="py-1").duplicate
    # the watch sees the next message fail in the script, by name and typed
    client.publish(NAME, "Orders", {"id": "py-2", "quantity": "three", "price": 2.5}, message_id="py-2")
    between = []
    for failed in events:
        if failed.component != "":
            break
        between.append(failed.state)
    assert all(state == executor_pb2.WORKFLOW_STATE_RUNNING for state in between)
    assert failed.component.startswith("Price_")
    assert "quantity is not a number" in failed.error
    assert (failed.failure.kind, failed.failure.retryable) == ("invalid-argument", False)

    # a stop lets the messages in flight finish: py-1 is in the graph once the run has stopped
    client.stop_workflow(NAME)
    states = [event.state for event in events]
    assert states[-1] == executor_pb2.WORKFLOW_STATE_STOPPED

    read = client.read_graph("MATCH (o:Order) RETURN o.id AS id, o.total AS total ORDER BY id", graph="python_round_trip")
    assert list(read.columns) == ["id", "total"]
    assert [to_dict(row) for row in read.rows] == [{"id": "py-1", "total": 7.5}]
    assert (read.truncated, read.store) == (False, "embedded")
