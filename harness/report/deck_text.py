"""Text defects a deck must not show, found as a reader would find them.

Four kinds, each met on a real deck (issue 26.6):
- a count missing before what it counts ("Sanitizers: sanitize boots in this run.");
- a plural after one ("1 cases");
- an interval whose two ends read the same ("(-0.2% to -0.2%)");
- a figure on a slide that the report does not contain (the slide computed its own).
"""

from __future__ import annotations

import re

# Nouns of things a run counts; "debug kernels" or "perf boots" name a kind, so a
# kind-word may stand between the count and the noun ("32 of 37 timed cells").
COUNTED = ("boots", "cases", "workloads", "reports", "counters", "comparisons", "patches",
           "cells", "slides", "errors", "warnings", "violations", "trylocks", "files",
           "edges", "steps", "retries")
# Words that may stand before a counted noun without a number: determiners,
# quantifiers, prepositions and number words.
ALLOWED_BEFORE = {
    "the", "its", "their", "these", "those", "all", "no", "every", "each", "both", "many",
    "few", "more", "fewer", "other", "some", "any", "per", "of", "in", "on", "for", "and",
    "or", "by", "with", "from", "to", "at", "which", "whose", "what", "than", "as", "one",
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve",
}
_NUMBER = re.compile(r"^[-+]?\d[\d,]*(\.\d+)?%?$")
_PLURAL_AFTER_ONE = re.compile(r"(?<![\d.,])\b1 (" + "|".join(COUNTED) + r")\b")
_SAME_ENDS = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?\s*[%x]?)\s*(?:to|-|–)\s*\1(?![\d.,])")
# Figures a slide must take from the report: percentages, ratios and decimals (whole
# numbers, which count things, are left alone).
_FIGURE = re.compile(r"(?<![\w.,])[-+]?\d[\d,]*(?:\.\d+)?(?:%|x\b)|(?<![\w.,])\d+\.\d+(?![\w.])")


def _counts_for(word: str) -> bool:
    """A word that may introduce a counted noun: a number, a determiner or quantifier,
    or a possessive ("the design's boots")."""
    return bool(_NUMBER.match(word)) or word.lower() in ALLOWED_BEFORE or \
        word.endswith(("'s", "’s"))


def missing_counts(text: str) -> list[str]:
    """A counted noun with neither of the two words before it a count or a determiner,
    inside one phrase ("sanitize boots in this run" after a colon)."""
    found = []
    for line in text.splitlines():
        words = re.findall(r"[\w'’.,%+\-]+|[^\w\s]", line)
        for i, word in enumerate(words):
            if word not in COUNTED or i == 0:
                continue
            before = words[max(0, i - 2):i]
            if not re.match(r"[a-z]", before[-1]):  # punctuation or a capital: a new phrase
                continue
            if any(_counts_for(w) for w in before):
                continue
            found.append(f"no count before '{' '.join(before)} {word}'")
    return found


def _unwrap(text: str) -> str:
    """Prose wrapped over lines as one line again: a line that starts in lower case goes
    on the one before, unless that one is a table row (cells apart by wide gaps)."""
    out: list[str] = []
    for line in text.splitlines():
        if out and re.match(r"\s*[a-z(]", line) and not re.search(r"\S {3,}\S", out[-1]):
            out[-1] = out[-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def defects(text: str, report: str | None = None) -> list[str]:
    """What is wrong with one page's text; `report`: the report's text, which must
    contain every figure the page shows."""
    text = _unwrap(text)
    out = [f"'{m.group(0)}': a plural after one" for m in _PLURAL_AFTER_ONE.finditer(text)]
    out += [f"'{m.group(0)}': an interval whose ends read the same"
            for m in _SAME_ENDS.finditer(text) if re.search(r"\d", m.group(1))]
    out += missing_counts(text)
    if report is not None:
        out += [f"'{figure}' is on the slide but not in the report"
                for figure in dict.fromkeys(m.group(0) for m in _FIGURE.finditer(text))
                if figure not in report]
    return out
