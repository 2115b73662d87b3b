"""A small typed helper over loom's generated gRPC stubs: one channel, the token on every call, plain Python values in
and the generated messages out."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Self

import grpc
from google.protobuf import json_format, struct_pb2

from loom.v1 import config_store_pb2, config_store_pb2_grpc, executor_pb2, executor_pb2_grpc

# The metadata key loom reads a caller's token from (libs/service-kit/src/bearer-token.ts): `authorization: Bearer <token>`.
AUTHORIZATION = "authorization"


def _struct(value: Mapping[str, Any], field: str) -> struct_pb2.Struct:
    """A JSON object as google.protobuf.Struct. Struct numbers are doubles: an integer arrives in loom as a float-valued
    number, exact up to 2**53."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{field}: expected a JSON object (a mapping), got {type(value).__name__}")
    message = struct_pb2.Struct()
    try:
        json_format.ParseDict(dict(value), message)
    except json_format.ParseError as error:
        raise ValueError(f"{field}: not a JSON object: {error}") from error
    return message


def _required(value: str, field: str) -> str:
    if not isinstance(value, str) or value == "":
        raise ValueError(f"{field}: required, a non-empty string")
    return value


class _TokenInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds `authorization: Bearer <token>` to every call's metadata."""

    def __init__(self, token: str) -> None:
        self._header = (AUTHORIZATION, f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [*(details.metadata or ()), self._header]
        return details._replace(metadata=metadata)  # type: ignore[attr-defined]

    def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return continuation(self._with_token(client_call_details), request)

    def intercept_stream_unary(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return continuation(self._with_token(client_call_details), request_iterator)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return continuation(self._with_token(client_call_details), request_iterator)


class LoomClient:
    """A connection to loom: its WorkflowStore and Executor stubs (`workflows`, `executor`, for every other RPC) and
    helpers for the usual round trip. Errors are grpc.RpcError as the server answered them (code and details)."""

    def __init__(self, channel: grpc.Channel, *, timeout: float = 30.0) -> None:
        self.channel = channel
        self.timeout = timeout
        self.workflows = config_store_pb2_grpc.WorkflowStoreStub(channel)
        self.executor = executor_pb2_grpc.ExecutorStub(channel)

    @classmethod
    def connect(
        cls,
        address: str,
        token: str | None = None,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float = 30.0,
    ) -> Self:
        """Connects to loom at `address` (`host:port`): TLS when `credentials` are given, else plaintext; `token` is
        sent on every call as `authorization: Bearer <token>`."""
        _required(address, "address")
        channel = grpc.secure_channel(address, credentials) if credentials is not None else grpc.insecure_channel(address)
        if token is not None:
            channel = grpc.intercept_channel(channel, _TokenInterceptor(_required(token, "token")))
        return cls(channel, timeout=timeout)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def push_workflow(self, text: str, *, source_name: str = "", expected_version: int | None = None) -> config_store_pb2.PutWorkflowResponse:
        """Stores a workflow written in the compact form (YAML or JSON text, as `loom workflow push` reads a file);
        `unchanged` in the answer when it is the stored version already."""
        request = config_store_pb2.PutWorkflowRequest(compact=_required(text, "text"), source_name=source_name)
        if expected_version is not None:
            request.expected_version = expected_version
        return self.workflows.PutWorkflow(request, timeout=self.timeout)

    def list_workflows(self) -> list[config_store_pb2.WorkflowSummary]:
        """The stored workflows."""
        return list(self.workflows.ListWorkflows(config_store_pb2.ListWorkflowsRequest(), timeout=self.timeout).workflows)

    def start_workflow(self, name: str) -> executor_pb2.StartWorkflowResponse:
        """Starts the stored workflow `name` (its name in the file, or its stored `<name>_<uuid>`)."""
        return self.executor.StartWorkflow(executor_pb2.StartWorkflowRequest(name=_required(name, "name")), timeout=self.timeout)

    def stop_workflow(self, name: str) -> executor_pb2.StopWorkflowResponse:
        """Stops the run of `name`, letting the messages in flight finish."""
        return self.executor.StopWorkflow(executor_pb2.StopWorkflowRequest(name=_required(name, "name")), timeout=self.timeout)

    def publish(
        self,
        workflow: str,
        inlet: str,
        body: Mapping[str, Any],
        *,
        message_id: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> executor_pb2.PublishMessageResponse:
        """Hands one message (a JSON object) to the inlet source `inlet` of a running workflow; returns once loom has
        accepted it. A `message_id` given again is answered `duplicate` and not published twice."""
        request = executor_pb2.PublishMessageRequest(
            workflow_name=_required(workflow, "workflow"),
            inlet=_required(inlet, "inlet"),
            body=_struct(body, "body"),
            headers=dict(headers or {}),
            message_id=message_id,
        )
        return self.executor.PublishMessage(request, timeout=self.timeout)

    def watch_run(self, name: str, *, timeout: float | None = None) -> Iterator[executor_pb2.WatchRunResponse]:
        """The run's events as they happen, its current state first: state changes and component errors (durable mode
        adds each executor's counters). Cancel the stream by closing the iterator (`.cancel()`) or let `timeout` end it."""
        return self.executor.WatchRun(executor_pb2.WatchRunRequest(name=_required(name, "name")), timeout=timeout)

    def read_graph(
        self,
        query: str,
        *,
        graph: str = "",
        workflow: str = "",
        resource: str = "",
        parameters: Mapping[str, Any] | None = None,
        max_rows: int = 0,
        timeout: float | None = None,
    ) -> executor_pb2.ReadGraphResponse:
        """Runs a read-only Cypher query as loom (no single sign-on): on the embedded graph's AGE graph `graph`, or on
        the graph database resource of the stored workflow `workflow` (`resource` names it when it has several).
        `max_rows` 0 means loom's default (1,000); `timeout` in seconds, loom's default (10 s) when None."""
        if (graph == "") == (workflow == ""):
            raise ValueError("graph, workflow: give exactly one, the embedded graph's name or a stored workflow's")
        request = executor_pb2.ReadGraphRequest(
            query=_required(query, "query"),
            graph=graph,
            workflow=workflow,
            resource=resource,
            max_rows=max_rows,
        )
        if parameters is not None:
            request.parameters.CopyFrom(_struct(parameters, "parameters"))
        if timeout is not None:
            request.timeout.FromMilliseconds(round(timeout * 1000))
        return self.executor.ReadGraph(request, timeout=self.timeout if timeout is None else timeout + self.timeout)

    def status(self, name: str) -> executor_pb2.GetWorkflowStatusResponse:
        """The run's state and each component's counters."""
        return self.executor.GetWorkflowStatus(executor_pb2.GetWorkflowStatusRequest(name=_required(name, "name")), timeout=self.timeout)


def to_dict(message: struct_pb2.Struct) -> dict[str, Any]:
    """A google.protobuf.Struct as a plain dict (numbers as floats: Struct has no integers)."""
    return json_format.MessageToDict(message)
