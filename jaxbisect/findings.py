"""Placeholder until the evidence module lands: no attribution yet."""


def gather(bisection, say):
    return "", {}
