"""Compile an XLA HLO module (an HloModuleProto, .pb) with the installed jaxlib; print its memory.

    python compile_hlo.py MODULE.pb [MORE.pb ...] [--json] [--target SPEC.txtpb]

No jax tracing: the module is handed to XLA as it is, through the call this jaxlib has (up to
0.5.x an XlaComputation converted to MLIR, from 0.6.0 hlo_to_stablehlo), then the CPU client's
compile, or with --target a compile-only GPU's (a GpuTargetConfigProto; needs the CUDA plugin
wheels, no GPU). The figure is the plan's output + temp bytes (jax's memory_analysis()).
XLA_FLAGS applies as usual. Each module is compiled in its own process: XLA reads its flags
(and its fuel, --xla_fuel) once a process.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version


def gpu_setup(dump):
    """Before jax starts: the CUDA plugin without a driver, ptxas from the nvcc wheel, and a
    dump of the buffer assignment (where the compile-only client gives no memory stats)."""
    import importlib.util

    os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    flags = [os.environ.get("XLA_FLAGS", ""), f"--xla_dump_to={dump}",
             "--xla_gpu_disable_gpuasm_optimizations=true"]
    spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    for place in (spec.submodule_search_locations or []) if spec else []:
        if os.path.exists(os.path.join(place, "bin", "ptxas")):
            flags.append(f"--xla_gpu_cuda_data_dir={place}")
    os.environ["XLA_FLAGS"] = " ".join(f for f in flags if f)


def from_dump(dump):
    """output and temp bytes from XLA's buffer-assignment dump, as memory_analysis() counts."""
    text = open(sorted(glob.glob(f"{dump}/*buffer-assignment.txt"))[-1]).read()
    output = temp = 0
    for size, kinds in re.findall(r"^allocation \d+: size (\d+)(?:, (.*?))?:?\s*$", text, re.M):
        output += int(size) if "maybe-live-out" in kinds else 0
        keep = ("parameter", "maybe-live-out", "thread-local", "constant")
        temp += 0 if any(k in kinds for k in keep) else int(size)
    return output, temp


def compile_module(path, target=None, dump=None):
    import jax
    from jax._src.lib import xla_client as xc

    proto = open(path, "rb").read()
    mlir = xc._xla.mlir
    if hasattr(mlir, "hlo_to_stablehlo"):  # jaxlib 0.6.0 on
        module = mlir.hlo_to_stablehlo(proto)
    else:
        module = mlir.xla_computation_to_mlir_module(xc.XlaComputation(proto))
    options = xc.CompileOptions()
    if target:
        import numpy as np
        from jax.experimental import topologies

        device = topologies.get_topology_desc(platform="cuda", topology="1x1x1",
                                              target_config=open(target).read()).devices[0]
        client = device.client
        build = options.executable_build_options
        build.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]]))
    else:
        client = jax.devices("cpu")[0].client
        device = client.local_devices()[0]
    if hasattr(client, "compile_and_load") and not target:  # jaxlib 0.7 on
        executable = client.compile_and_load(module, xc.DeviceList((device,)), options)
    elif "executable_devices" in (client.compile.__doc__ or ""):
        if target:  # this compile-only client takes an MLIR module object, not its bytes
            from jax._src.interpreters.mlir import make_ir_context
            from jax._src.lib.mlir import ir

            with make_ir_context():
                return measured(client.compile(ir.Module.parse(module),
                                               xc.DeviceList((device,)), options), path, dump)
        executable = client.compile(module, xc.DeviceList((device,)), options)
    else:
        executable = client.compile(module, options)
    return measured(executable, path, dump)


def measured(executable, path, dump):
    try:
        stats = executable.get_compiled_memory_stats()
        output, temp = stats.output_size_in_bytes, stats.temp_size_in_bytes
    except Exception:  # a compile-only GPU before jaxlib 0.6.1: XLA's own account
        if not dump:
            raise
        output, temp = from_dump(dump)
    return {"module": path, "jax": version("jax"), "jaxlib": version("jaxlib"),
            "output_bytes": output, "temp_bytes": temp, "bytes": output + temp}


def main(argv):
    as_json = "--json" in argv
    target = argv[argv.index("--target") + 1] if "--target" in argv else None
    paths = [a for a in argv if a.endswith(".pb")]
    if not paths:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    if len(paths) > 1:  # one process a module
        rest = [a for a in argv if not a.endswith(".pb")]
        return max(subprocess.run([sys.executable, __file__, p, *rest]).returncode
                   for p in paths)
    dump = tempfile.mkdtemp(prefix="compile-hlo-") if target else None
    if target:
        gpu_setup(dump)
    try:
        found = compile_module(paths[0], target, dump)
    except Exception as exc:
        found = {"module": paths[0], "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    finally:
        if dump:
            shutil.rmtree(dump, ignore_errors=True)
    if as_json:
        print(json.dumps(found), flush=True)
    elif "error" in found:
        print(f"{found['module']}: {found['error']}")
    else:
        print(f"{found['module']}: {found['bytes'] / 2**20:.2f} MiB (output "
              f"{found['output_bytes'] / 2**20:.2f} + temp {found['temp_bytes'] / 2**20:.2f} "
              f"MiB), jaxlib {found['jaxlib']}" + (f", {target}" if target else ""), flush=True)
    return 1 if "error" in found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
