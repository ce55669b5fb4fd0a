"""A deliberately naive glob matcher, written from docs/policy.md, to test the C one against.

It backtracks with memoization over (token, offset) pairs: slow and obviously
right, which is what a differential test wants from its reference.
"""

from __future__ import annotations

from functools import cache


def _tokens(pattern: bytes, tool_name: bool) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(pattern):
        if pattern[i : i + 2] == b"\\*":
            out.append(("lit", ord("*")))
            i += 2
            continue
        if pattern[i] == ord("*"):
            j = i
            while j < len(pattern) and pattern[j] == ord("*"):
                j += 1
            stars = j - i
            if tool_name:
                out.append(("any", 0))
            elif stars == 1:
                out.append(("segment", 0))
            elif pattern[j : j + 1] == b"/":
                out.append(("dirs", 0))
                j += 1
            else:
                out.append(("any", 0))
            i = j
            continue
        out.append(("lit", pattern[i]))
        i += 1
    return out


def reference_match(pattern: bytes, subject: bytes, tool_name: bool = False) -> bool:
    if pattern == b"*":
        return True
    if tool_name:
        pattern, subject = pattern.lower(), subject.lower()
    elif pattern.endswith(b":*"):
        return subject.startswith(pattern[:-2])
    tokens = _tokens(pattern, tool_name)
    n = len(subject)

    @cache
    def match(t: int, s: int) -> bool:
        if t == len(tokens):
            return s == n
        kind, byte = tokens[t]
        if kind == "lit":
            return s < n and subject[s] == byte and match(t + 1, s + 1)
        if kind == "segment":
            end = s
            while end < n and subject[end] != ord("/"):
                end += 1
            return any(match(t + 1, k) for k in range(s, end + 1))
        if kind == "any":
            return any(match(t + 1, k) for k in range(s, n + 1))
        # "dirs": nothing, or anything up to and including a '/'
        return match(t + 1, s) or any(
            subject[k] == ord("/") and match(t + 1, k + 1) for k in range(s, n)
        )

    return match(0, 0)
