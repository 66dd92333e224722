"""The library's Python diagnostics: the "horovod" logger hierarchy.

Library code logs through `get_logger(__name__)`, a standard `logging`
logger under "horovod" (horovod_accel.ray.callbacks logs as
"horovod.ray.callbacks"), as upstream's modules do. Users configure it with
the `logging` module: a handler on "horovod" (or on the root, e.g.
logging.basicConfig) receives its records, `setLevel` on "horovod" chooses
what is logged, and a NullHandler with propagate=False silences it.

The default, while nothing is configured: ONE handler on the "horovod"
logger (installed by the first get_logger call) writes each record to the
current sys.stderr, as the library printed it before it used `logging`:
  * a record that carries a rank (`extra={"rank": r}`: diagnostics of a
    rank's process, beside the core's own lines) as the core's log line
    (csrc/common/util/logging.cc):
        [YYYY-mm-dd HH:MM:SS] [horovod_accel LEVEL rank R] message
    without the time when HOROVOD_LOG_HIDE_TIME is true;
  * any other record (the drivers' messages, which name their source:
    "horovod.ray: ...") as its message alone.
It steps aside for a record that another handler will see: one on the
record's logger or on any logger the record propagates to (the rule of the
standard library's last-resort handler). So, under pytest, records go to
pytest's log capture.

Level: HOROVOD_LOG_LEVEL (TRACE, DEBUG, INFO, WARNING, ERROR, FATAL; the
core's variable, read by the core at hvd.init()) sets the "horovod" logger's
level while the user has not set it; unset, the level is inherited (the
root's WARNING by default, as the core's default). It is read again at each
get_logger call, so library code calls get_logger where it logs rather than
keeping a logger from import time: a process whose environment is filled
after start (a Ray actor, a Spark task) logs at the level it was given.
"""
import logging
import os
import sys
import threading
import time

ROOT = "horovod"
LEVEL_VARIABLE = "HOROVOD_LOG_LEVEL"
HIDE_TIME_VARIABLE = "HOROVOD_LOG_HIDE_TIME"

TRACE = 5  # below logging.DEBUG, as the core's TRACE is below its DEBUG
logging.addLevelName(TRACE, "TRACE")
_LEVELS = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
           "WARNING": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}

# Serializes installing the default handler (two threads logging first).
_INSTALL_LOCK = threading.Lock()


def env_level(environ=os.environ):
    """The logging level HOROVOD_LOG_LEVEL names, or None when unset. A value
    that is not a level means WARNING, as in the core."""
    value = environ.get(LEVEL_VARIABLE)
    if value is None or not value.strip():
        return None
    return _LEVELS.get(value.strip().upper(), logging.WARNING)


def core_level_name(levelno):
    """The core's name for a logging level (FATAL for CRITICAL, TRACE below DEBUG)."""
    if levelno >= logging.CRITICAL:
        return "FATAL"
    if levelno < logging.DEBUG:
        return "TRACE"
    return logging.getLevelName(levelno)


class DefaultFormatter(logging.Formatter):
    """The default handler's format (see the module docstring)."""

    def format(self, record):
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        rank = getattr(record, "rank", None)
        if rank is None:
            return message
        stamp = ""
        from horovod_accel.common import settings  # noqa: PLC0415 (loads the core)
        if not settings.read(HIDE_TIME_VARIABLE):
            stamp = time.strftime("[%Y-%m-%d %H:%M:%S] ", time.localtime(record.created))
        return f"{stamp}[horovod_accel {core_level_name(record.levelno)} rank {rank}] {message}"


class DefaultHandler(logging.StreamHandler):
    """Writes to the current sys.stderr (not the one at install time, so a
    replaced sys.stderr is followed) unless another handler will see the
    record. `applied_level`: the level this module last put on the "horovod"
    logger, None if none (then the user's level, if any, is left alone)."""

    def __init__(self):
        logging.Handler.__init__(self)  # StreamHandler's would fix the stream now
        self.setFormatter(DefaultFormatter())
        self.applied_level = None

    @property
    def stream(self):
        return sys.stderr

    def handle(self, record):
        if _another_handler_sees(record, self):
            return False
        return super().handle(record)


def _another_handler_sees(record, handler):
    logger = logging.getLogger(record.name)
    while logger is not None:
        if any(h is not handler for h in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def _default_handler(root):
    for h in root.handlers:
        if isinstance(h, DefaultHandler):
            return h
    with _INSTALL_LOCK:
        for h in root.handlers:
            if isinstance(h, DefaultHandler):
                return h
        h = DefaultHandler()
        root.addHandler(h)
        return h


def _follow_env_level(root, handler):
    """Puts HOROVOD_LOG_LEVEL on the "horovod" logger unless the user set a level."""
    if root.level not in (logging.NOTSET, handler.applied_level):
        return  # the user's choice
    wanted = env_level()
    if wanted == handler.applied_level:
        return
    root.setLevel(wanted if wanted is not None else logging.NOTSET)
    handler.applied_level = wanted


def logger_name(module_name):
    """The "horovod" logger name of a library module: horovod_accel.x.y ->
    horovod.x.y (names already under "horovod" are kept)."""
    if module_name == "horovod_accel" or module_name.startswith("horovod_accel."):
        return ROOT + module_name[len("horovod_accel"):]
    if module_name == ROOT or module_name.startswith(ROOT + "."):
        return module_name
    raise ValueError(f"log.get_logger({module_name!r}): not a horovod_accel module; pass "
                     f"__name__ of a module of horovod_accel")


def get_logger(module_name):
    """The logger of library module `module_name` (pass __name__), with the
    default handler installed and HOROVOD_LOG_LEVEL applied (see the module
    docstring). Cheap: call it where you log."""
    root = logging.getLogger(ROOT)
    _follow_env_level(root, _default_handler(root))
    return logging.getLogger(logger_name(module_name))
