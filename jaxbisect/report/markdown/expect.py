"""Which end is wrong, where a case states what is right (its ``EXPECT``): each release the
answer names is judged against it from its recorded figure, never from the search's labels
(the search places a run as old or new; whether old or new is right is the case's to say)."""

from __future__ import annotations

import math

from packaging.version import Version

RELATIVE = 1e-6  # a number equals EXPECT within this (an output's printed digits)


def matches(expect, value) -> bool | None:
    """Whether one recorded value is what the case expects (None: cannot tell from it)."""
    if isinstance(expect, str) and expect.lower() in ("nan", "inf", "-inf"):
        number = as_number(value)
        if number is None:
            return None
        return math.isnan(number) if expect.lower() == "nan" else number == float(expect)
    if isinstance(expect, bool) or isinstance(value, bool):
        return expect == value
    if isinstance(expect, (int, float)):
        number = as_number(value)
        if number is None:
            return None
        return math.isclose(number, expect, rel_tol=RELATIVE, abs_tol=0.0)
    if isinstance(expect, str):
        return str(value) == expect
    return None


def as_number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def judged(expect, figure: dict, metric: str) -> bool | None:
    """Whether a release's recorded figure is what the case expects: an output's values (a
    list EXPECT leaf by leaf, a scalar its one value); a nondeterministic output is right only
    where every run's value is; an error's message ("no error" where it raised none)."""
    if metric == "error":
        text = str(figure.get("value") or "")
        return None if not text else matches(expect, "no error" if text == "no error" else text)
    if metric != "output":
        return None
    if figure.get("nondeterministic"):
        runs = [v for run in figure.get("runs") or () for v in run]
        verdicts = [matches(expect if not isinstance(expect, list) else expect[0], v)
                    for v in runs]
        if not runs or None in verdicts:
            return None
        return all(verdicts)
    values = figure.get("values")
    if not isinstance(values, list) or not values:
        return None
    wanted = expect if isinstance(expect, list) else [expect]
    if len(wanted) != len(values):
        return None
    verdicts = [matches(e, v) for e, v in zip(wanted, values)]
    return None if None in verdicts else all(verdicts)


def named_releases(doc: dict) -> list[str]:
    """The releases the answer names, in order: the pair where one was found, else the ends
    and the releases inside that were unlike them."""
    if doc.get("last_old") and doc.get("first_new"):
        return [doc["last_old"]["jax"], doc["first_new"]["jax"]]
    named = list(doc.get("measured_part") or ())
    for change in (doc.get("interior_check") or {}).get("changes") or ():
        named += [v for v in (*change["came"], *change["went"]) if v not in named]
    return named


def verdicts(doc: dict) -> dict[str, bool]:
    """Release -> whether its figure is what the case expects, for each release the answer
    names whose figure can be judged; {} where the case states nothing."""
    expect = (doc.get("case") or {}).get("expect")
    if expect is None:
        return {}
    measured = {**{r["jax"]: r for r in doc.get("interior") or ()},
                **{p["jax"]: p for p in doc.get("probes") or ()}}
    out = {}
    for version in named_releases(doc):
        probe = measured.get(version)
        verdict = judged(expect, (probe or {}).get("figure") or {}, doc["metric"]["name"])
        if verdict is not None:
            out[version] = verdict
    return out


def expect_sentence(doc: dict) -> str:
    """ Expected: X; jax A is wrong." (the case's EXPECT) where it can be judged."""
    judged_at = verdicts(doc)
    if not judged_at:
        return ""
    expect = doc["case"]["expect"]
    order = sorted(judged_at, key=Version)
    wrong = [v for v in order if not judged_at[v]]
    said = ", ".join(f"jax {v}" for v in wrong)
    if not wrong:
        return f" Expected: {expect}; every release named gives it."
    # The releases that give it are in the sentence before (the first screen is short).
    return f" Expected: {expect}; {said} {'is' if len(wrong) == 1 else 'are'} wrong."
