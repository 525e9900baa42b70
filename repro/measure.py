"""Reading what a program needs: its compiled plan's sizes (the one reader of
``memory_analysis()`` and of XLA's buffer-assignment dump) and a real run's peak.

repro/metrics.py measures a case's metrics with these.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .process import PASS_DUMP
from .target import CompileOnly

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def error_text(exc: BaseException) -> str:
    """An exception as one line: its type and first line, with the addresses that change from
    run to run left out (what the ``error`` metric compares); a program the device's memory
    cannot hold in the words of :func:`out_of_memory`."""
    first = (str(exc).strip().splitlines() or [""])[0]
    if (short := out_of_memory(first)) is not None:
        return short["words"]
    return _ADDRESS.sub("0x…", f"{type(exc).__name__}: {first}".strip(": "))[:300]


def error_message(exc: BaseException) -> str:
    """An exception whole: its type and every line of its message, nothing cut (what the
    ``error`` metric's figure keeps; the driver compares it by its signature,
    jaxbisect/search/error_signature.py, and shows its core)."""
    return _ADDRESS.sub("0x…", f"{type(exc).__name__}: {str(exc).strip()}".strip(": "))


# XLA refuses at compile a plan that exceeds the device's memory (a TPU's HBM), in words that
# differ by release: libtpu 0.0.42.1 "Ran out of memory on HBM, the total memory required for
# HLO temporaries (17.98G) exceeds available HBM (15.75G)", libtpu 0.0.8 "Allocation
# (size=18923520000) would exceed memory (size=17179869184)". A behaviour with its figures,
# never a crash of the harness.
_SIZE = r"[\d.]+\s*[KMGT]i?B?"
_OUT_OF_MEMORY = (
    re.compile(rf"RESOURCE_EXHAUSTED.*?memory (?:required )?for (?P<what>[\w ]+?) "
               rf"\((?P<needed>{_SIZE})\) exceeds available (?P<memory>\w+) "
               rf"\((?P<available>{_SIZE})\)"),
    re.compile(r"RESOURCE_EXHAUSTED.*?Allocation \(size=(?P<needed>\d+)\) would exceed "
               r"(?P<memory>memory) \(size=(?P<available>\d+)\)"))


def out_of_memory(text: str) -> dict | None:
    """What an out-of-device-memory error says: needed and available as XLA wrote them (bytes
    where it gave bytes), and one line in words (None for any other error)."""
    found = next(filter(None, (pattern.search(text) for pattern in _OUT_OF_MEMORY)), None)
    if found is None:
        return None
    fields = {k: found[k].strip() for k in ("needed", "memory", "available")}
    fields["what"] = (found.groupdict().get("what") or "its buffers").strip()
    fields["memory"] = "HBM" if fields["memory"] == "memory" else fields["memory"]
    needed, available = (f"{fields[k]} bytes" if fields[k].isdigit() else fields[k]
                         for k in ("needed", "available"))
    return {**fields, "words": f"out of device memory: needs {needed} of {fields['memory']} for "
            f"{fields['what']}, the device has {available}"}


def _memory_fields(stats) -> dict:
    """Every ``*_in_bytes`` field the release's memory_analysis() has, named ``*_bytes``."""
    fields = {}
    for name in sorted(dir(stats)):
        if name.endswith("_in_bytes") and not name.startswith("_"):
            try:
                value = getattr(stats, name)
            except Exception:  # a property that a release implements by raising
                continue
            if isinstance(value, int):
                key = name.replace("_size_in_bytes", "_bytes").replace("_in_bytes", "_bytes")
                fields[key] = value
    return fields


_ALLOCATION = re.compile(r"^allocation \d+: size (\d+)(?:, (.*?))?:?\s*$")
NOT_TEMP = ("parameter", "maybe-live-out", "thread-local", "constant")


def sizes_from_buffer_assignment(text: str) -> dict:
    """output, temp and argument bytes from XLA's ``*-buffer-assignment.txt``, as
    memory_analysis() counts them: per ``allocation N: size S, ...`` line, ``parameter`` is
    argument, ``maybe-live-out`` output, and temp is what is none of parameter, live-out,
    thread-local or constant."""
    sizes = {"argument_bytes": 0, "output_bytes": 0, "temp_bytes": 0}
    seen = False
    for line in text.splitlines():
        match = _ALLOCATION.match(line)
        if not match:
            continue
        seen = True
        size, kinds = int(match[1]), match[2] or ""
        if "parameter" in kinds:
            sizes["argument_bytes"] += size
        if "maybe-live-out" in kinds:
            sizes["output_bytes"] += size
        if not any(kind in kinds for kind in NOT_TEMP):
            sizes["temp_bytes"] += size
    if not seen:
        raise ValueError("no allocation lines in the buffer-assignment dump")
    return sizes


class Compiler:
    """Compiles the report's program for this process's device, or for a target's compile-only
    GPU, and reads the plan's sizes.

    ``dump_dir`` is where XLA was told (before ``import jax``) to dump each module; the buffer
    assignment there answers where memory_analysis() cannot (``None`` for a compile-only GPU
    before jax 0.6.1), and wherever ``from_dump`` asks for it. ``pass_dumps``: where the
    module after each HLO pass goes, where XLA was told to dump those too (``--pass-dumps``
    with a target: XLA has one dump folder, the target's)."""

    def __init__(self, target=None, dump_dir: Path | None = None, from_dump: bool = False,
                 pass_dumps: Path | None = None):
        self.target, self.dump_dir, self.from_dump = target, dump_dir, from_dump
        self.pass_dumps = pass_dumps
        self._device = None if target is None else CompileOnly(target)

    def describe(self) -> dict | None:
        return self._device.describe() if self._device is not None else None

    def structs(self, args) -> tuple:
        """The arguments as shape/dtype structs (nothing allocated), on a target's devices if
        any: a TPU slice's compile-only devices place them themselves (the case's shardings
        over the slice kept, any other argument on its first device: repro/tpu_target.py)."""
        if self._device is not None and hasattr(self._device, "place"):
            return self._device.place(args)[0]
        import jax

        struct = jax.ShapeDtypeStruct if self._device is None else self._device.struct
        return tuple(struct(a.shape, a.dtype) if hasattr(a, "shape") and hasattr(a, "dtype")
                     else a for a in args)

    def lowering(self):
        """Where to lower and compile: a TPU target's first device as jax's default (Pallas
        from jax 0.9.2 asks it for the TPU generation; on the CPU device it fails "Unsupported
        TPU device kind: cpu"), else nothing."""
        import contextlib

        return (self._device.context() if hasattr(self._device, "context")
                else contextlib.nullcontext())

    def _dumped(self) -> set[Path]:
        dumps = self.dump_dir is not None and self.dump_dir.is_dir()
        return set(self.dump_dir.iterdir()) if dumps else set()

    def compile(self, fn, *args):
        """``fn.lower(*args).compile()`` (or ``fn().compile()`` for a function that lowers)
        and the buffer-assignment text it dumped (or None)."""
        before = self._dumped()
        try:
            compiled = (fn.lower(*args) if args else fn()).compile()
        except ValueError as exc:
            # jax 0.8.2 and 0.8.3 fail after XLA has compiled, while describing the outputs
            # of a compile-only device ("can address the following memory kinds: ."): the
            # plan is made and dumped, so its sizes are read from the dump.
            if self._device is None or "memory kinds" not in str(exc):
                raise
            compiled = None
        new = self._dumped() - before
        if self.dump_dir is not None and not new and compiled is not None:
            # The same program compiled earlier in this process comes from jax's cache, and
            # XLA dumps nothing: compile it afresh where the dump is what gives the sizes.
            import jax

            jax.clear_caches()
            compiled = (fn.lower(*args) if args else fn()).compile()
            new = self._dumped() - before
        assignment = [p for p in new
                      if p.name.endswith("after_optimizations-buffer-assignment.txt")]
        text = assignment[0].read_text(encoding="utf-8") if len(assignment) == 1 else None
        for path in new:  # dumps of v2 at large n_outer are big: keep none but those asked
            if self.pass_dumps is not None and PASS_DUMP.match(path.name):
                path.replace(self.pass_dumps / path.name)
            elif path.is_file():
                path.unlink()
        return compiled, text

    def sizes(self, compiled, assignment: str | None) -> tuple[dict, str]:
        """The plan's ``*_bytes`` fields and where they came from: ``memory_analysis()``, else
        the dumped buffer ``assignment``; raises Unmeasured."""
        if not self.from_dump and compiled is not None:
            try:
                stats = compiled.memory_analysis()
            except NotImplementedError as exc:
                if assignment is None:
                    raise Unmeasured(f"memory_analysis() not implemented: {exc}") from exc
                stats = None
            if isinstance(stats, (list, tuple)):  # some releases answer one entry per device
                stats = stats[0] if stats else None
            if stats is not None:
                return _memory_fields(stats), "memory_analysis()"
        if assignment is None:
            raise Unmeasured("XLA dumped no buffer assignment for this module" if self.from_dump
                             else "memory_analysis() returned None")
        return sizes_from_buffer_assignment(assignment), "XLA buffer-assignment dump"


def plan_bytes(fields: dict) -> int:
    """The plan's bytes, output + temp: 0 where the release does not measure them."""
    return (fields.get("output_bytes") or 0) + (fields.get("temp_bytes") or 0)


NOT_MEASURED = "memory_analysis() reports 0 bytes (not measured by this release)"


class Unmeasured(Exception):
    """The compile worked but the release gives no sizes for it."""


# -- runtime mode -------------------------------------------------------------------------


def _proc_status_kib(field: str) -> int:
    """VmRSS, VmHWM … of this process, in KiB (where /proc/self/clear_refs is, so is this)."""
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(field + ":"))


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) so compile-time memory is not counted."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


DEVICE_STATS = ("bytes_in_use", "peak_bytes_in_use", "bytes_reserved", "peak_bytes_reserved",
                "bytes_limit")


def device_peak(before: dict, after: dict) -> dict:
    """A run's peak from the device's ``memory_stats()`` before and after it.

    A TPU keeps a program's temporaries *reserved* (from its load on), never in use: its
    ``peak_bytes_in_use`` misses them (98% of the scan case's). In use plus reserved is what the
    run held; an allocator that reserves nothing (a GPU's BFC) adds nothing."""
    reserved = int(after.get("peak_bytes_reserved") or 0)
    return {"source": "device memory_stats peak_bytes_in_use"
            + (" + peak_bytes_reserved" if reserved else ""),
            "baseline_bytes": int(before.get("bytes_in_use", 0)),
            "peak_bytes": int(after["peak_bytes_in_use"]) + reserved,
            "device_stats": {key: int(after[key]) for key in DEVICE_STATS if key in after}}


def peak_of_run(run) -> dict:
    """``run()`` once (its result waited for) and the peak it reached: the device's
    ``peak_bytes_in_use`` on a GPU, the process's peak RSS elsewhere (its mark reset first, so
    that compiling is not counted), each with the baseline before it."""
    import resource

    import jax

    device = jax.devices()[0]
    try:
        before = device.memory_stats()
    except Exception:
        before = None
    if before and "peak_bytes_in_use" in before:
        jax.block_until_ready(run())
        return device_peak(before, device.memory_stats())
    hwm_reset = _reset_peak_rss()
    baseline = (_proc_status_kib("VmRSS") if hwm_reset
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    jax.block_until_ready(run())
    peak = (_proc_status_kib("VmHWM") if hwm_reset
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return {"source": "process peak RSS" + ("" if hwm_reset else " (ru_maxrss)"),
            "baseline_bytes": baseline * 1024, "peak_bytes": peak * 1024}


def run_child(module: str, request: str, timeout: float,
              base: dict | None = None) -> tuple[dict | None, str | None]:
    """``python -m MODULE REQUEST`` in a fresh process (this package first on its path;
    ``base``: its environment, else this one's): the JSON object it printed last, or one line
    saying why there is none."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, env.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, "-m", module, request], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        if done.returncode < 0:
            tail = f"killed by signal {-done.returncode} (out of memory?)"
        return None, tail[:500]
    return json.loads(lines[-1]), None
