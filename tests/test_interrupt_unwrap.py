"""An interrupt that reaches Python while a numba kernel calls back into it (``_numba_unpickle``) comes out of
the kernel as a ``SystemError`` whose chain holds the ``KeyboardInterrupt``; the commands treat it as the
interrupt (one line, exit 130/143, checkpoint kept), not as a crash (exit 1 with a traceback)."""

from __future__ import annotations

import argparse

import pytest

from replica.workflow import cli


def _wrapped(interrupt):
    """A SystemError chained to ``interrupt`` as numba's dispatcher leaves it (several levels deep)."""
    try:
        try:
            raise interrupt
        except KeyboardInterrupt as inner:
            raise SystemError("<function _numba_unpickle> returned a result with an exception set") from inner
    except SystemError as middle:
        return _chain(middle)


def _chain(cause):
    try:
        raise SystemError("CPUDispatcher(<function evaluate_point>) returned a result with an exception set") from cause
    except SystemError as exc:
        return exc


def test_the_interrupt_is_found_in_the_chain_and_re_raised():
    term = cli._Terminated()
    assert cli.interrupt_in_chain(_wrapped(term)) is term
    with pytest.raises(cli._Terminated):
        with cli.unwrapped_interrupts():
            raise _wrapped(term)


def test_a_system_error_without_an_interrupt_stays_an_error():
    assert cli.interrupt_in_chain(SystemError("other")) is None
    with pytest.raises(SystemError, match="other"):
        with cli.unwrapped_interrupts():
            raise SystemError("other")


@pytest.mark.parametrize("interrupt, status, word", [(KeyboardInterrupt(), 130, "interrupted"),
                                                     (cli._Terminated(), 143, "terminated")])
def test_a_command_exits_as_interrupted_in_one_line(capsys, interrupt, status, word):
    def build_parser():
        return argparse.ArgumentParser(prog="replica-test")

    def run(args):
        raise _wrapped(interrupt)

    assert cli.run_command("replica-test", build_parser, run, []) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"replica-test: {word}"), err
