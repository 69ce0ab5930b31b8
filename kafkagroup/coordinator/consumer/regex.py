"""Subscription by regular expression (KIP-848's ``SubscribedTopicRegex``): RE2 syntax, full match.

Kafka's coordinator compiles the pattern with RE2/J and keeps a topic when ``matcher(topic).matches()``:
the whole name must match.  Here the same engine family (Google's RE2 through the ``google-re2`` binding),
``fullmatch``.  Python's ``re`` would accept patterns RE2 refuses (backreferences, lookaround) and
differ on others, so it is not used.  Compiled patterns are cached (a group re-resolves on every topic
change); the cache is bounded.  ``google-re2`` comes with the ``serve`` extra; without it a regex
subscription is refused with a message saying so (names still work).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from typing import Any

try:
    import re2
except ImportError:                  # pragma: no cover - the serve and test extras install it
    re2 = None

__all__ = ["InvalidRegex", "compile_regex", "matching_topics"]

if re2 is not None:
    _OPTIONS = re2.Options()
    _OPTIONS.log_errors = False      # RE2 would log every refused pattern to stderr


class InvalidRegex(ValueError):
    """A subscription regex RE2 does not compile; the message says why."""


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    if re2 is None:
        raise InvalidRegex(f"SubscribedTopicRegex `{pattern}` cannot be used: regex subscriptions need the "
                           f"google-re2 package (pip install 'kafkagroup[serve]').")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidRegex(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {reason}.") from None


def matching_topics(pattern: str, names: Iterable[str]) -> frozenset[str]:
    """The names the whole of which ``pattern`` matches (InvalidRegex if it does not compile)."""
    regex = compile_regex(pattern)
    return frozenset(n for n in names if regex.fullmatch(n) is not None)
