"""The Python load generator of bench/clients.bench.mjs, run as its own process with the Python client's venv (as a
service written in Python is): publishes the article pipeline's messages to a running `loom serve` at `callers`
concurrent PublishMessage calls, waits until its sink has every message that passes the filter, and prints one JSON
line as bench/publish-feeder.mjs does: { messages, seconds, perSecond, p50Ms, p99Ms, feederCpuUs }.

Modes: `threads`, the client's helper (LoomClient.publish, blocking) from `callers` threads, as a user of the helper
would call it concurrently; `aio`, the generated stub on grpc.aio with `callers` tasks, Python's asynchronous API.

Usage: python python-client-feeder.py '<json settings>' with { address, token, mode, messages, callers, workflow, inlet, sink }.
"""

import asyncio
import json
import math
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python" / "src"))

import grpc  # noqa: E402
from google.protobuf import json_format, struct_pb2  # noqa: E402

from loom.v1 import executor_pb2, executor_pb2_grpc  # noqa: E402
from loom_client import AUTHORIZATION, LoomClient  # noqa: E402

settings = json.loads(sys.argv[1])
messages: int = settings["messages"]
callers: int = settings["callers"]
workflow: str = settings["workflow"]
inlet: str = settings["inlet"]
latencies: list[float] = []


def sample_payload(index: int) -> dict:
    """bench/node-red-baseline.mjs's samplePayload: every other article passes the pipeline's filter."""
    return {"id": index, "title": f"article {index}", "text": "the quick brown fox jumps" if index % 2 == 0 else "too short"}


def sink_count(client: LoomClient) -> int:
    status = client.status(workflow)
    return next((component.messages_in for component in status.components if component.name == settings["sink"]), 0)


def feed_threads(client: LoomClient) -> None:
    lock = threading.Lock()
    next_index = 0

    def loop() -> None:
        nonlocal next_index
        while True:
            with lock:
                if next_index >= messages:
                    return
                index = next_index
                next_index += 1
            began = time.perf_counter()
            client.publish(workflow, inlet, sample_payload(index))
            latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=loop) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


async def feed_aio() -> None:
    metadata = ((AUTHORIZATION, f"Bearer {settings['token']}"),)
    async with grpc.aio.insecure_channel(settings["address"]) as channel:
        stub = executor_pb2_grpc.ExecutorStub(channel)
        next_index = 0

        async def loop() -> None:
            nonlocal next_index
            while next_index < messages:
                index = next_index
                next_index += 1
                body = struct_pb2.Struct()
                json_format.ParseDict(sample_payload(index), body)
                began = time.perf_counter()
                await stub.PublishMessage(
                    executor_pb2.PublishMessageRequest(workflow_name=workflow, inlet=inlet, body=body), metadata=metadata, timeout=120
                )
                latencies.append(time.perf_counter() - began)

        await asyncio.gather(*(loop() for _ in range(callers)))


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.floor(q * len(ordered)))]


def main() -> None:
    with LoomClient.connect(settings["address"], settings["token"], timeout=120) as client:
        before = sink_count(client)
        started = time.perf_counter()
        cpu_before = time.process_time()
        if settings["mode"] == "threads":
            feed_threads(client)
        else:
            asyncio.run(feed_aio())
        # every other sample passes the filter: the run is over once the sink has those
        expected = before + math.ceil(messages / 2)
        while sink_count(client) < expected:
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu_before
    print(
        json.dumps(
            {
                "messages": messages,
                "seconds": seconds,
                "perSecond": messages / seconds,
                "p50Ms": quantile(latencies, 0.5) * 1000,
                "p99Ms": quantile(latencies, 0.99) * 1000,
                "feederCpuUs": cpu * 1e6 / messages,
            }
        )
    )


main()
