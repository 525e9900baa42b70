"""How sizes are written, once for both halves (standard library only: the driver imports it
without jax). A size is in MiB (2^20 bytes), named so: XLA's and the kernel's figures are
binary, and "MB" would be 10^6 bytes."""

from __future__ import annotations

MIB = 2**20
UNIT = "MiB"


def mib_number(size: float) -> str:
    """``size`` bytes in MiB, two decimals, no unit (a column whose header names it)."""
    return f"{size / MIB:.2f}"


def mib(size: float) -> str:
    """``size`` bytes as ``12.50 MiB``."""
    return f"{mib_number(size)} {UNIT}"


def column(unit: str | None) -> str:
    """A column header's unit for a metric's ``unit`` (bytes are shown in MiB)."""
    return f" ({UNIT})" if unit == "bytes" else f" ({unit})" if unit else ""
