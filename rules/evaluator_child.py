"""An evaluator process (rules/evaluator.py starts it as `python -I evaluator_child.py`): it imports the CEL
library and nothing of the portal, evaluates what it is sent, and is killed when one runs too long.

Framing on stdin/stdout: a 4-byte big-endian length, then the body. In: pickle of (source, variables),
from the portal process that started it. Out: JSON, one of {"value": bool}, {"type": name, "text": …}
(a result that is not a boolean) or {"error": kind, "text": …}. One byte b"+" says it is ready.
"""

import json
import pickle
import resource
import struct
import sys

# A runaway condition may also build huge lists: it fails on memory before it takes the host's.
MEMORY_LIMIT = 512 * 1024 * 1024
PROGRAMS_KEPT = 64


def _read(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    import cel

    programs: dict = {}
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(b"+")
    stdout.flush()
    while True:
        try:
            (length,) = struct.unpack(">I", _read(stdin, 4))
            source, variables = pickle.loads(_read(stdin, length))
        except EOFError:  # the portal process is gone
            return
        try:
            if source not in programs:
                if len(programs) >= PROGRAMS_KEPT:
                    programs.clear()
                programs[source] = cel.compile(source)
            result = programs[source].execute(variables)
            if isinstance(result, bool):
                answer = {"value": result}
            else:
                answer = {"type": type(result).__name__, "text": str(result)[:80]}
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # a Rust panic arrives as pyo3's PanicException, a BaseException
            answer = {"error": type(error).__name__, "text": str(error)[:1000]}
        body = json.dumps(answer).encode()
        stdout.write(struct.pack(">I", len(body)) + body)
        stdout.flush()


if __name__ == "__main__":
    main()
