"""Generates the loom.v1 modules (src/loom/v1: messages, type stubs, gRPC stubs) from the repository's proto/ with
grpcio-tools' protoc. Run it with the Python that has grpcio-tools (pip install -e '.[dev]' or requirements.txt):

    python clients/python/generate.py
"""

import shutil
import sys
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent.parent / "proto"
OUT = HERE / "src"
PACKAGE = OUT / "loom"


def main() -> int:
    protos = sorted(str(path.relative_to(PROTO_ROOT)) for path in (PROTO_ROOT / "loom" / "v1").glob("*.proto"))
    if not protos:
        print(f"generate.py: no .proto files under {PROTO_ROOT / 'loom' / 'v1'}", file=sys.stderr)
        return 1
    # a proto removed since the last run leaves no module behind
    shutil.rmtree(PACKAGE, ignore_errors=True)
    well_known = str(resources.files("grpc_tools") / "_proto")
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={OUT}",
            f"--pyi_out={OUT}",
            f"--grpc_python_out={OUT}",
            *protos,
        ]
    )
    if code != 0:
        print(f"generate.py: protoc failed (exit {code})", file=sys.stderr)
        return code
    for package in (PACKAGE, PACKAGE / "v1"):
        (package / "__init__.py").write_text('"""Generated from proto/ by clients/python/generate.py. DO NOT EDIT."""\n')
    (PACKAGE / "py.typed").write_text("")
    print(f"generate.py: {len(protos)} files of loom.v1 into {PACKAGE / 'v1'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
