"""loom's gRPC API from Python: `LoomClient.connect(address, token)`, then push, start, publish, watch and query."""

from loom_client.client import AUTHORIZATION, LoomClient, to_dict

__all__ = ["AUTHORIZATION", "LoomClient", "to_dict"]
