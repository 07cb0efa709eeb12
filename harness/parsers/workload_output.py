"""Parse what the workload programs print: one line per timed phase.

    result phase=create-unlink ops=4000 elapsed_ns=2604519870 procs=2 p50_ns=...

Throughput comes from the guest's own clock (elapsed_ns), never the host's.
"""

from __future__ import annotations

from dataclasses import dataclass


class OutputError(Exception):
    pass


@dataclass(frozen=True)
class Phase:
    name: str
    ops: int
    elapsed_ns: int
    procs: int
    extra: dict[str, float]

    @property
    def ops_per_s(self) -> float:
        return self.ops / (self.elapsed_ns / 1e9) if self.elapsed_ns else 0.0


def parse(text: str) -> list[Phase]:
    phases = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith("result "):
            continue
        fields = {}
        for item in line.split()[1:]:
            key, sep, value = item.partition("=")
            if not sep:
                raise OutputError(f"line {lineno}: {item!r} is not key=value")
            fields[key] = value
        try:
            name = fields.pop("phase")
            ops, elapsed, procs = (int(fields.pop(k)) for k in ("ops", "elapsed_ns", "procs"))
            extra = {k: float(v) for k, v in fields.items()}
        except KeyError as err:
            raise OutputError(f"line {lineno}: missing {err}") from None
        except ValueError as err:
            raise OutputError(f"line {lineno}: {err}") from None
        phases.append(Phase(name, ops, elapsed, procs, extra))
    return phases
