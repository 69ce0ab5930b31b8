"""Client-controlled strings in the server's log lines are escaped, so a client cannot forge a line.

Group ids, member ids, client ids, instance ids and topic names come from clients and end up in log
messages (``"member %s of group %s failed its session"``); a group id holding a newline would otherwise
write a line of the client's choosing into the server's log.  :class:`EscapeClientStrings` is a logging
filter that replaces every argument of a record whose text is not printable (a newline, a carriage return,
an escape sequence, any control or unassigned character) by its ``repr()`` -- quoted and escaped, as
``%r`` would show it; printable arguments, numbers and the message template are left as they are.
:func:`escape_client_strings` installs it on the loggers whose records carry client strings (the server's
and the coordinator's); it applies to every record logged there, whatever handler formats it.

Limit: text in a traceback (``log.exception``) is not rewritten; the exceptions of this package quote
client strings with ``%r`` / ``!r`` where they name them.
"""
from __future__ import annotations

import logging

__all__ = ["EscapeClientStrings", "escape_client_strings"]


def _escaped(value: object) -> object:
    if isinstance(value, (int, float)) or value is None:
        return value
    text = value if isinstance(value, str) else str(value)
    return value if text.isprintable() else repr(text)


class EscapeClientStrings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(_escaped(a) for a in args)
        elif isinstance(args, dict) and args:
            record.args = {k: _escaped(v) for k, v in args.items()}
        elif not args and isinstance(record.msg, str) and not record.msg.isprintable():
            record.msg = repr(record.msg)
        return True


_FILTER = EscapeClientStrings()


def escape_client_strings(*logger_names: str) -> None:
    """Install the filter on these loggers (once each)."""
    for name in logger_names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
