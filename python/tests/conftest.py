"""Every message the suite provokes, held to the language the learner typed.

Each exception a test expects (``pytest.raises``, either form) that comes out of handgrad is
gathered; when the session ends, a message that speaks the library's C++ (``DType::f64``,
``Device::cpu``, ``NoGradGuard``, ``retain_graph=true``, a tensor's internal id such as ``t366``,
a C++ source line) fails the run, naming the test and the message. The messages are rewritten for
Python in one place, python/src/messages.cpp; this is the check that it misses nothing the suite
reaches."""

import re

import _pytest._code
import pytest

# The C++ spellings a Python user should never read.
CPP_SPELLINGS = [
    (re.compile(r"\b(DType|Device|hg|std)::"), "a C++ scope (::)"),
    (re.compile(r"NoGradGuard|bool_tensor\(|DualLevel level;"), "a C++ name"),
    (re.compile(r"\b(retain_graph|create_graph|keepdim|requires_grad)\s*=\s*(true|false)\b"), "a C++ bool"),
    (re.compile(r"\bt[0-9]+ \("), "a tensor's internal id"),
    (re.compile(r"`b8`|\b(f32|f64|i64)\b"), "a C++ dtype name"),
    (re.compile(r"\b[\w/]+\.(cpp|h|cu):[0-9]+"), "a C++ source line"),
]

_gathered = []  # (test id, message)
_current = {"test": "?"}


def _from_handgrad(exc):
    """Whether handgrad raised exc: its own class, or a traceback that passes through the package."""
    if type(exc).__module__.startswith("handgrad"):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if "/handgrad/" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _gather(exc):
    if exc is not None and _from_handgrad(exc):
        _gathered.append((_current["test"], str(exc)))


_fill_unfilled = _pytest._code.ExceptionInfo.fill_unfilled
_from_exc_info = _pytest._code.ExceptionInfo.from_exc_info.__func__


def _fill_unfilled_gathering(self, exc_info):
    _gather(exc_info[1])
    return _fill_unfilled(self, exc_info)


def _from_exc_info_gathering(cls, exc_info, exprinfo=None):
    _gather(exc_info[1])
    return _from_exc_info(cls, exc_info, exprinfo)


_pytest._code.ExceptionInfo.fill_unfilled = _fill_unfilled_gathering
_pytest._code.ExceptionInfo.from_exc_info = classmethod(_from_exc_info_gathering)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _current["test"] = item.nodeid
    yield


def cpp_spellings(message):
    """The C++ spellings in a message (anomaly mode's report may name the C++ line it asked for)."""
    found = []
    for pattern, what in CPP_SPELLINGS:
        if what == "a C++ source line" and "anomaly" in message:
            continue
        m = pattern.search(message)
        if m:
            found.append(f"{what}: {m.group(0)!r}")
    return found


def pytest_sessionfinish(session, exitstatus):
    bad = [(test, msg, found) for test, msg in _gathered if (found := cpp_spellings(msg))]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"messages: {len(_gathered)} handgrad errors the tests provoked, "
                            f"{len(bad)} in C++ spellings")
    if bad:
        if reporter is not None:
            for test, msg, found in bad[:40]:
                reporter.write_line(f"  {test}: {'; '.join(found)}\n    {msg[:300]}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
