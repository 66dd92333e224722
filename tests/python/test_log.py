"""The library's Python diagnostics (horovod_accel/common/log.py): the
"horovod" logger hierarchy that users configure with `logging`, and its
default handler that, while nothing is configured, prints what the library
printed before it used `logging`: the core's line for a rank's messages,
the bare message for the drivers', gated by HOROVOD_LOG_LEVEL.

The default's cases run in a fresh interpreter: under pytest, pytest's own
log capture is a configured handler, and the default handler steps aside.
"""
import logging
import re
import subprocess
import sys
import textwrap

import pytest

from launch_util import job_env

from horovod_accel.common import log

TIMEOUT = 60
STAMP_RE = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] "


def _python(code, **env):
    """Runs code in a fresh interpreter with job_env(**env); returns (stdout, stderr)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=job_env(**env),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout, r.stderr


# A rank's message (compute_threads, as hvd.init() logs it) and a driver's.
_BOTH = """
    import logging
    from horovod_accel.common import compute_threads, log
    compute_threads._log(logging.{level}, 3, "compute threads: a rank's line")
    log.get_logger("horovod_accel.ray.callbacks").{method}("horovod.ray: a driver's line")
"""


def test_default_output_is_the_core_line_and_the_bare_message():
    _, err = _python(_BOTH.format(level="WARNING", method="warning"),
                     HOROVOD_LOG_HIDE_TIME="1")
    assert err == ("[horovod_accel WARNING rank 3] compute threads: a rank's line\n"
                   "horovod.ray: a driver's line\n")
    _, err = _python(_BOTH.format(level="WARNING", method="error"))
    lines = err.splitlines()
    assert re.fullmatch(STAMP_RE + r"\[horovod_accel WARNING rank 3\] compute threads: "
                        r"a rank's line", lines[0]), err
    assert lines[1:] == ["horovod.ray: a driver's line"], err


@pytest.mark.parametrize("level, shown", [
    (None, {"WARNING", "ERROR"}),          # the default, as the core's
    ("INFO", {"INFO", "WARNING", "ERROR"}),
    ("error", {"ERROR"}),                  # any case, as the core
    ("TRACE", {"DEBUG", "INFO", "WARNING", "ERROR"}),
    ("nonsense", {"WARNING", "ERROR"}),    # not a level: WARNING, as the core
])
def test_horovod_log_level_gates_the_default_handler(level, shown):
    code = """
        import logging
        from horovod_accel.common import compute_threads
        for name in ("DEBUG", "INFO", "WARNING", "ERROR"):
            compute_threads._log(getattr(logging, name), 0, name.lower())
    """
    env = {"HOROVOD_LOG_HIDE_TIME": "1"}
    if level is not None:
        env["HOROVOD_LOG_LEVEL"] = level
    _, err = _python(code, **env)
    order = ["DEBUG", "INFO", "WARNING", "ERROR"]
    assert err.splitlines() == [f"[horovod_accel {n} rank 0] {n.lower()}"
                                for n in order if n in shown]


def test_level_follows_the_environment_filled_after_start():
    """A Ray actor or Spark task gets HOROVOD_LOG_LEVEL after its process
    started; the next message follows it, as compute_threads did before."""
    _, err = _python("""
        import logging, os
        from horovod_accel.common import compute_threads
        compute_threads._log(logging.INFO, 1, "hidden")
        os.environ["HOROVOD_LOG_LEVEL"] = "INFO"
        compute_threads._log(logging.INFO, 1, "shown")
        del os.environ["HOROVOD_LOG_LEVEL"]
        compute_threads._log(logging.INFO, 1, "hidden again")
    """, HOROVOD_LOG_HIDE_TIME="1")
    assert err == "[horovod_accel INFO rank 1] shown\n"


def test_a_users_logging_config_takes_the_records():
    out, err = _python("""
        import logging, sys
        logging.basicConfig(stream=sys.stdout, format="%(name)s|%(levelname)s|%(message)s")
        from horovod_accel.common import compute_threads, log
        compute_threads._log(logging.WARNING, 2, "rank line")
        log.get_logger("horovod_accel.ray.callbacks").warning("driver line")
        log.get_logger("horovod_accel.ray.callbacks").info("below the root's WARNING")
    """, HOROVOD_LOG_HIDE_TIME="1")
    assert err == ""
    assert out.splitlines() == ["horovod.common.compute_threads|WARNING|rank line",
                                "horovod.ray.callbacks|WARNING|driver line"]


def test_a_handler_on_the_horovod_logger_redirects_it(tmp_path):
    path = tmp_path / "horovod.log"
    _, err = _python(f"""
        import logging
        handler = logging.FileHandler({str(path)!r})
        handler.setFormatter(logging.Formatter("%(levelname)s %(rank)s %(message)s"))
        logging.getLogger("horovod").addHandler(handler)
        from horovod_accel.common import compute_threads
        compute_threads._log(logging.WARNING, 5, "to the file")
    """)
    assert err == ""
    assert path.read_text() == "WARNING 5 to the file\n"


@pytest.mark.parametrize("silence", [
    'logging.getLogger("horovod").setLevel(logging.CRITICAL)',
    'logging.getLogger("horovod").addHandler(logging.NullHandler()); '
    'logging.getLogger("horovod").propagate = False',
    "logging.disable(logging.CRITICAL)",
])
def test_a_users_config_silences_it(silence):
    out, err = _python(f"""
        import logging
        {silence}
        from horovod_accel.common import log
        log.get_logger("horovod_accel.ray.callbacks").error("silenced")
    """, HOROVOD_LOG_LEVEL="DEBUG")
    assert (out, err) == ("", "")


def test_a_dict_config_after_the_first_message_takes_over():
    """dictConfig removes the handlers of the loggers it configures (ours
    too); the user's level then holds, and no second default appears."""
    _, err = _python("""
        import logging, logging.config
        from horovod_accel.common import log
        log.get_logger("horovod_accel.ray").warning("before")
        logging.config.dictConfig({"version": 1, "loggers": {"horovod": {"level": "CRITICAL"}}})
        log.get_logger("horovod_accel.ray").error("silenced")
        log.get_logger("horovod_accel.ray").critical("critical")
    """, HOROVOD_LOG_LEVEL="DEBUG")
    assert err == "before\ncritical\n"


def test_a_users_level_wins_over_the_environment():
    _, err = _python("""
        import logging
        logging.getLogger("horovod").setLevel(logging.ERROR)
        from horovod_accel.common import compute_threads
        compute_threads._log(logging.WARNING, 0, "below the user's level")
        compute_threads._log(logging.ERROR, 0, "at it")
    """, HOROVOD_LOG_LEVEL="DEBUG", HOROVOD_LOG_HIDE_TIME="1")
    assert err == "[horovod_accel ERROR rank 0] at it\n"


# ---------------------------------------------------------------- in-process

def test_logger_names_live_under_horovod():
    assert log.logger_name("horovod_accel.spark.run_api") == "horovod.spark.run_api"
    assert log.logger_name("horovod_accel") == "horovod"
    assert log.logger_name("horovod.ray") == "horovod.ray"
    assert log.get_logger("horovod_accel.ray.callbacks").name == "horovod.ray.callbacks"
    with pytest.raises(ValueError, match="not a horovod_accel module"):
        log.get_logger("horovod_accelerated.x")


def test_core_level_names():
    assert [log.core_level_name(n) for n in (log.TRACE, logging.DEBUG, logging.INFO,
                                              logging.WARNING, logging.ERROR, logging.CRITICAL)] \
        == ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"]
    assert log.env_level({}) is None
    assert log.env_level({"HOROVOD_LOG_LEVEL": "fatal"}) == logging.CRITICAL


def test_formatter_appends_the_traceback(monkeypatch):
    monkeypatch.setenv("HOROVOD_LOG_HIDE_TIME", "1")
    try:
        raise KeyError("k")
    except KeyError:
        record = logging.LogRecord("horovod.x", logging.ERROR, __file__, 1, "failed", None,
                                   sys.exc_info())
    record.rank = 4
    text = log.DefaultFormatter().format(record)
    assert text.startswith("[horovod_accel ERROR rank 4] failed\nTraceback")
    assert text.endswith("KeyError: 'k'")


def test_only_one_default_handler():
    for _ in range(3):
        log.get_logger("horovod_accel.common.x")
    handlers = [h for h in logging.getLogger("horovod").handlers
                if isinstance(h, log.DefaultHandler)]
    assert len(handlers) == 1
