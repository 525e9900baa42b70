"""How sizes are written, once for both halves (standard library only: the driver imports it
without jax). A size is in MiB (2^20 bytes), named so: XLA's and the kernel's figures are
binary, and "MB" would be 10^6 bytes."""

from __future__ import annotations

MIB = 2**20
UNIT = "MiB"
MIB_TEXT = "2**20"   # MIB as a printed program writes it
KIB_TEXT = "2**10"   # KiB per MiB: a size the kernel gives in KiB (/proc/self/status)
PLAN_BYTES = "m.output_size_in_bytes + m.temp_size_in_bytes"  # a compiled plan's figure


def mib_number(size: float) -> str:
    """``size`` bytes in MiB, two decimals, no unit (a column whose header names it)."""
    return f"{size / MIB:.2f}"


def mib(size: float) -> str:
    """``size`` bytes as ``12.50 MiB``."""
    return f"{mib_number(size)} {UNIT}"


def column(unit: str | None) -> str:
    """A column header's unit for a metric's ``unit`` (bytes are shown in MiB)."""
    return f" ({UNIT})" if unit == "bytes" else f" ({unit})" if unit else ""


def printed_mib(expression: str, per_mib: str = MIB_TEXT) -> str:
    """How every program this toolkit writes prints a size: an f-string field writing
    ``expression`` (bytes; KiB with ``per_mib=KIB_TEXT``) in MiB with two decimals, then the
    unit: ``{(EXPRESSION) / 2**20:.2f} MiB``."""
    return f"{{({expression}) / {per_mib}:.2f}} {UNIT}"


def plan_lines(compiled: str, label: str = "memory") -> list[str]:
    """A program's two lines printing the compiled plan ``compiled`` (an expression: a
    ``Compiled``) as output + temp of its ``memory_analysis()`` in MiB, after ``label: ``
    (f-string text: ``n_outer={value}``)."""
    return [f"m = {compiled}.memory_analysis()",
            f'print(f"{label}: {printed_mib(PLAN_BYTES)}")']
