"""An error as one behaviour however a release words it.

XLA, libtpu and Mosaic quote the program in their errors (the failing HLO instruction with its
shape, layout, operands, ``metadata={…}``, ``frontend_attributes={…}``, a kernel's serialised
payload, MLIR locations, source paths and line numbers, ids, addresses), and how that quote
prints changes between releases. :func:`signature` keeps what a maintainer calls the error
(the exception type, the status, the message's own words and figures, from every line) and
drops the quote, so that two releases wording one failure differently compare equal and a size
or limit that moved compares different. :func:`core` is the error as a maintainer reads it:
the message's own words and figures in one line, the quote left out, never cut before its
figures.

Built against a corpus of real messages from jax 0.4.36 … 0.10.2 on CPU and a TPU v5e
(tests/data/errors/corpus.json; tests/test_error_signature.py). Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["signature", "core", "exception_name", "without_quotes", "split_type"]

# Renamed classes: one failure raised as jaxlib's XlaRuntimeError by older releases and as
# jax.errors.JaxRuntimeError by newer ones.
_TYPE_ALIASES = {"XlaRuntimeError": "JaxRuntimeError"}
# Exceptions that wrap another and say so with an "Inner: " prefix (Pallas's lowering).
_WRAPPERS = {"LoweringException", "JaxStackTraceBeforeTransformation"}
_OPEN = {"(": ")", "[": "]", "{": "}"}


def exception_name(exception_type: str | None, message: str) -> tuple[str, str]:
    """The exception's class name as a release-independent word, and the message without a
    wrapper's "Inner: " prefix."""
    name = (exception_type or "Exception").rsplit(".", 1)[-1]
    name = _TYPE_ALIASES.get(name, name)
    if name in _WRAPPERS:
        inner = re.match(r"\s*([A-Z]\w*(?:Error|Exception|Warning)): ", message)
        if inner:
            name = _TYPE_ALIASES.get(inner[1], inner[1])
            message = message[inner.end():]
    return name, message


def split_type(text: str) -> tuple[str | None, str]:
    """``"TypeName: message"`` (the harness's ``error`` figure) split in two; a text that
    starts with a status (``RESOURCE_EXHAUSTED: …``) or no class name has no type."""
    found = re.match(r"([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)): ", text)
    if found and not found[1].isupper():
        return found[1], text[found.end():]
    return None, text


def _past_quote(s: str, i: int) -> int:
    """The index just past the quoted string opened at ``s[i]`` (escapes respected)."""
    j, n = i + 1, len(s)
    while j < n and s[j] != '"':
        j += 2 if s[j] == "\\" else 1
    return j + 1


def _past_balanced(s: str, i: int) -> int:
    """The index just past the bracket opened at ``s[i]`` (quoted strings respected)."""
    stack, n = [], len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i = _past_quote(s, i)
            continue
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return n


def _remove_calls(s: str, names: tuple[str, ...]) -> str:
    """``name(…)`` groups (balanced) left out: MLIR's ``loc(…)``, ``callsite(…)``."""
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\(")
    out, i = [], 0
    while (found := pattern.search(s, i)) is not None:
        out.append(s[i:found.start()])
        i = _past_balanced(s, found.end() - 1)
    return "".join(out) + s[i:]


def _remove_instructions(s: str, mark: str) -> str:
    """A quoted HLO instruction (``%name = <shape> op(…), attrs…``) as ``mark``: it runs to
    the first sentence end or line end outside brackets and quotes."""
    pattern = re.compile(r"%[\w.\-]+ = ")
    out, i, n = [], 0, len(s)
    while (found := pattern.search(s, i)) is not None:
        out.append(s[i:found.start()] + mark)
        j = found.end()
        while j < n:
            c = s[j]
            if c == '"':
                j = _past_quote(s, j)
                continue
            if c in _OPEN:
                j = _past_balanced(s, j)
                continue
            if c == "\n" or (c == "." and (j + 1 >= n or s[j + 1] in " \n")):
                break
            j += 1
        i = j
    return "".join(out) + s[i:]


def _remove_jaxprs(s: str) -> str:
    out, i = [], 0
    while (k := s.find("{ lambda", i)) >= 0:
        out.append(s[i:k] + "<jaxpr>")
        i = _past_balanced(s, k)
    return "".join(out) + s[i:]


# Where a message stops saying the error and starts dumping the program or asking for a report.
_TAIL_MARKERS = ("Additional diagnostics:", "Failing jaxpr equation", "Define JAX_DUMP_IR_TO",
                 "Please report a bug at", "For simplicity, JAX has removed its internal frames")


def without_quotes(message: str, mark: str = "<instr>") -> str:
    """The message's own words and figures in one line: what it quotes of the program
    (instructions, attribute dicts, layouts, payloads, locations, paths, line numbers, ids,
    addresses), a dump after it and the boilerplate around it left out."""
    s = message or ""
    if "Traceback (most recent call last):" in s:  # a host callback's: the exception it raised
        head, _, tail = s.partition("Traceback (most recent call last):")
        last = [line for line in tail.splitlines() if line.strip() and not line.startswith(" ")]
        s = head + " " + (last[-1] if last else "")
    for marker in _TAIL_MARKERS:
        if (k := s.find(marker)) >= 0:
            s = s[:k]
    s = re.sub(r'backend_config=\{.*?"serialization_format"[^}]*\}\}', "backend_config={}", s,
               flags=re.S)
    s = re.sub(r"[A-Za-z0-9+/]{200,}={0,2}", "<blob>", s)
    s = re.sub(r"\bat loc\(", "loc(", s)
    s = _remove_calls(s, ("loc", "callsite"))
    s = re.sub(r"(?m)^\.\.\. additional diagnostics were skipped\.$", "", s)
    # An MLIR op quoted on its own line: its type signature is the error's figure, its name
    # and SSA ids are how a release prints it (vector.shape_cast became tpu.reshape).
    s = re.sub(r'%[\w$.\-#]+(?::\d+)? = "[\w.]+"\([^)\n]*\)(?: <\{[^\n]*?\}>)?(?: \{[^\n]*?\})? : ',
               "", s)
    s = _remove_instructions(s, mark)
    s = re.sub(r" :: .*", "", s)  # XLA's allocation descriptor after " :: "
    s = _remove_jaxprs(s)
    s = re.sub(r'(?m)^error: ".*\)+: ', "error: ", s)
    s = re.sub(r'(?m)^error: "[^"\n]*": ', "error: ", s)
    s = re.sub(r"(failed to verify '\w+'): [^\n]*", r"\1", s)
    s = re.sub(r'File "[^"]*", line \d+(?:, in \S+)?', "<frame>", s)
    s = re.sub(r'"?(?:/[^\s:"()]+)+\.py"?(?::\d+)+', "<src>", s)
    s = re.sub(r"(?:/[^\s:\"()]+)+\.py", "<src>", s)
    s = re.sub(r"0x[0-9a-fA-F]+", "<hex>", s)
    s = re.sub(r"#allocation\d+", "#allocation", s)
    s = re.sub(r"%[\w.\-]+", "%_", s)
    s = re.sub(r"\bstack_frame_id=\d+", "", s)
    s = re.sub(r"(?m)^\s*See (?:details at )?https?://\S+.*$", "", s)
    s = re.sub(r"Please file an? (?:issue|bug)[^.]*?(?:https?://\S+)?\.?(?=\s|$)", "", s)
    s = re.sub(r"It should not be possible to run out of scoped vmem -[^\n]*", "", s)
    s = re.sub(r"https?://\S+", "<url>", s)
    s = re.sub(r"\(Tip: [^)]*\)\.?", "", s)
    # libtpu >= 0.0.3x puts an error code and its name after the status: a label of the same
    # error, not another one.
    s = re.sub(r"^(\s*[A-Z][A-Z_]+): E\d{3,5}: \w+:", r"\1:", s)
    s = re.sub(r"Blocked\(block_size=(\d+)\)", r"\1", s)
    s = re.sub(r", in memory space (?:None|<[^>]*>|\S+)", "", s)
    s = re.sub(r"\s+", " ", s).strip()
    return re.sub(r"\s*:\s*$", "", s)


_UNITS = {"": 1, "B": 1, "K": 2**10, "KiB": 2**10, "M": 2**20, "MiB": 2**20, "G": 2**30,
          "GiB": 2**30, "T": 2**40, "TiB": 2**40}


def _bytes(number: str, unit: str = "") -> str:
    """A size in one unit for every release (XLA's own: two decimals, K/M/G/T = 2^10…2^40):
    one release gives bytes where another gives 17.62G."""
    n = float(number) * _UNITS.get(unit, 1)
    for name, k in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= k:
            return f"{n / k:.2f}{name}iB"
    return f"{n:.0f}B"


# Rewordings of one error by different releases, each written once with its figures; the
# first that matches the quote-free text wins. Each names the wordings it folds.
_TEMPLATES = (
    # libtpu <= 0.0.41 "Allocation (size=18923520000) would exceed memory (size=17179869184)";
    # 0.0.42.1 "Ran out of memory on HBM, the total memory required for HLO temporaries
    # (17.98G) exceeds available HBM (15.75G)".
    (re.compile(r"Allocation \(size=(\d+)\) would exceed memory \(size=(\d+)\)"),
     lambda m: f"hbm oom: requested {_bytes(m[1])}, capacity {_bytes(m[2])}"),
    (re.compile(r"Ran out of memory on HBM, the total memory required for HLO temporaries "
                r"\(([\d.]+)([KMGT]?)\) exceeds available HBM \(([\d.]+)([KMGT]?)\)"),
     lambda m: f"hbm oom: requested {_bytes(m[1], m[2])}, capacity {_bytes(m[3], m[4])}"),
    # A Pallas kernel's blocks over the scoped VMEM: the size and the limit are the error's
    # figures ("exceeded … by" is their difference; the instruction is quoted in between).
    (re.compile(r"Ran out of memory in memory space (\w+) while allocating on stack for "
                r"<instr>\.? ?Scoped allocation with size ([\d.]+)([KMGT]?) and limit "
                r"([\d.]+)([KMGT]?)"),
     lambda m: f"scoped {m[1]} oom: size {_bytes(m[2], m[3])}, limit {_bytes(m[4], m[5])}"),
    # "Unimplemented primitive in Pallas TPU lowering: sort." / "… lowering for tc: sort."
    (re.compile(r"Unimplemented primitive in Pallas TPU lowering(?: for [\w.]+)?: ([\w\-]+)"),
     lambda m: f"pallas tpu lowering: unimplemented primitive {m[1]}"),
    # The ref named by its parameter (x_ref) or as args[0]; block sizes as (7, 100) or
    # (Blocked(block_size=7), Blocked(block_size=100)).
    (re.compile(r"requires that the last two dimensions of your block shape are divisible by "
                r"(\d+) and (\d+).*?has block shape (\([^()]*\)), array shape (\([^()]*\))"),
     lambda m: (f"pallas tpu block shape not divisible by ({m[1]}, {m[2]}): block "
                f"{m[3].replace(' ', '')}, array {m[4].replace(' ', '')}")),
    (re.compile(r"Index map function \S+ at <src> for \S+ must return (\d+) values to match "
                r"block_shape=(\([^()]*\))\.? Currently returning (\d+) values"),
     lambda m: (f"pallas index map arity: must return {m[1]} for block "
                f"{m[2].replace(' ', '')}, returns {m[3]}")),
    # Mosaic: a pass-name prefix ("infer-vector-layout: ") in newer jaxlibs; the op's type
    # signature kept, its name not.
    (re.compile(r"Mosaic failed to compile TPU kernel: (?:[a-z][a-z0-9\-]*: )?(.*?)"
                r"(?: The MLIR operation involved: (\S.*))?$"),
     lambda m: f"mosaic: {m[1].strip()}" + (f" | op {m[2].strip()}" if m[2] else "")),
    # "CpuCallback error: <exc>" (<= 0.5) / "CpuCallback error calling callback: <exc>"
    (re.compile(r"^(\w+)Callback error(?: calling callback)?: (.*)$"),
     lambda m: f"{m[1]} host callback raised: {m[2]}"),
)


def _templated(text: str) -> str:
    status = re.match(r"([A-Z][A-Z_]+): ", text)
    head, rest = (status[1], text[status.end():]) if status else ("", text)
    for pattern, words in _TEMPLATES:
        if (found := pattern.search(rest)) is not None:
            rest = words(found)
            break
    return f"{head}: {rest}" if head else rest


def signature(exception_type: str | None, message: str) -> str:
    """What two errors must share to be one behaviour: the exception's class, the status,
    the message's own words and figures (sizes in one unit), nothing it quotes of the
    program."""
    name, message = exception_name(exception_type, message)
    return f"{name}| {_templated(without_quotes(message))}"


# Mosaic's own quote of the failing operation and its bug-report link follow the error's words
_MOSAIC_QUOTE = re.compile(r"\n\s*(?:The MLIR operation involved:|Please report a bug at:)")


def without_mosaic_quote(message: str) -> str:
    """The message up to Mosaic's quote of the operation it failed on (a quote of the program,
    printed as MLIR whose syntax moves between releases) and its bug-report link."""
    return _MOSAIC_QUOTE.split(message)[0]


def core(message: str, exception_type: str | None = None) -> str:
    """The error as a maintainer reads it, in one line: its status and own words with every
    figure ("RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on
    stack for [the instruction it quotes]. Scoped allocation with size 24.00M and limit
    16.00M exceeded scoped vmem limit by 8.00M."): what it quotes of the program said by its
    kind, in brackets."""
    if exception_type is None:
        exception_type, message = split_type(message)
    message = without_mosaic_quote(message)
    name, message = (exception_name(exception_type, message) if exception_type
                     else (None, message))
    words = re.sub(r"<(src|jaxpr|url|hex|blob|frame)>", lambda m: f"[{LEFT_OUT[m[1]]}]",
                   without_quotes(message, mark=f"[{LEFT_OUT['instr']}]"))
    if words and (any(m in message for m in _TAIL_MARKERS)
                  or any(advice.search(message) for advice in _ADVICE)):
        words += " […]"  # what follows its own words (advice, a link, a dump): left out, said
    return f"{name}: {words}" if name else words


# The advice an error ends with, which without_quotes leaves out (a link, "please file").
_ADVICE = (re.compile(r"(?m)^\s*See (?:details at )?https?://\S+"),
           re.compile(r"Please file an? (?:issue|bug)"),
           re.compile(r"It should not be possible to run out of scoped vmem -"))


# What an error's core shows in place of what it quotes of the program or the machine, in
# words a reader needs no key for ("for [the instruction it quotes]. Scoped allocation …").
LEFT_OUT = {"instr": "the instruction it quotes", "src": "a source path",
            "jaxpr": "the jaxpr it quotes", "url": "a link", "hex": "an address",
            "blob": "a payload", "frame": "a stack frame"}


def same_error(a: str, b: str) -> bool:
    """Two harness ``error`` figures (``"TypeName: message"``, or a crash's words) are one
    behaviour."""
    return signature(*split_type(a)) == signature(*split_type(b))


NO_ERROR = "no error"  # the error metric's figure where the program ran (repro/metrics.py)


def is_the_error(pattern: str, figure) -> bool:
    """Whether an ``error`` figure is the error ``pattern`` names (re.search over its whole
    message); a program that ran is never it."""
    return isinstance(figure, str) and figure != NO_ERROR and re.search(pattern, figure) is not None
