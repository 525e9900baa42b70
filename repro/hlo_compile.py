"""Compile an XLA HLO module (an HloModuleProto, .pb) with the installed jaxlib; print its memory.

    python compile_hlo.py MODULE.pb [MORE.pb ...] [--json]

No jax tracing: the module is handed to XLA as it is, through the call this jaxlib has (up to
0.5.x an XlaComputation converted to MLIR, from 0.6.0 hlo_to_stablehlo), then the CPU client's
compile. The figure is the compiled plan's output + temp bytes (jax's memory_analysis()).
XLA_FLAGS applies as usual. Each module is compiled in its own process: XLA reads its flags
(and its fuel, --xla_fuel) once a process.
"""
import json
import subprocess
import sys
from importlib.metadata import version


def compile_module(path):
    import jax
    from jax._src.lib import xla_client as xc

    proto = open(path, "rb").read()
    mlir = xc._xla.mlir
    if hasattr(mlir, "hlo_to_stablehlo"):  # jaxlib 0.6.0 on
        module = mlir.hlo_to_stablehlo(proto)
    else:
        module = mlir.xla_computation_to_mlir_module(xc.XlaComputation(proto))
    client = jax.devices("cpu")[0].client
    options = xc.CompileOptions()
    if hasattr(client, "compile_and_load"):  # the loaded executable's name from jaxlib 0.7
        devices = xc.DeviceList(tuple(client.local_devices()[:1]))
        executable = client.compile_and_load(module, devices, options)
    else:
        executable = client.compile(module, options)
    stats = executable.get_compiled_memory_stats()
    return {"module": path, "jax": jax.__version__, "jaxlib": version("jaxlib"),
            "output_bytes": stats.output_size_in_bytes, "temp_bytes": stats.temp_size_in_bytes,
        "bytes": stats.output_size_in_bytes + stats.temp_size_in_bytes}


def main(argv):
    as_json = "--json" in argv
    paths = [a for a in argv if a != "--json"]
    if not paths:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    if len(paths) > 1:  # one process a module
        return max(subprocess.run([sys.executable, __file__, *([p] + ["--json"] * as_json)])
                   .returncode for p in paths)
    try:
        found = compile_module(paths[0])
    except Exception as exc:
        found = {"module": paths[0], "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    if as_json:
        print(json.dumps(found), flush=True)
    elif "error" in found:
        print(f"{found['module']}: {found['error']}")
    else:
        print(f"{found['module']}: {found['bytes'] / 2**20:.2f} MiB (output "
              f"{found['output_bytes'] / 2**20:.2f} + temp {found['temp_bytes'] / 2**20:.2f} "
              f"MiB), jaxlib {found['jaxlib']}", flush=True)
    return 1 if "error" in found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
