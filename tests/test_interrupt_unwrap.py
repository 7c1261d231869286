"""An interrupt that reaches Python while a numba kernel calls back into it (``_numba_unpickle``) comes out of
the kernel as a ``SystemError`` whose chain holds the ``KeyboardInterrupt``; one that cuts a lazy import short
comes out later as an ``ImportError`` without it. The commands treat both as the interrupt (one line, exit
130/143, checkpoint kept), not as a crash (exit 1 with a traceback)."""

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


@pytest.mark.parametrize("handler, kind", [(cli._raise_terminated, cli._Terminated),
                                           (cli._raise_interrupted, KeyboardInterrupt)])
def test_an_interrupt_lost_on_the_way_is_re_raised(handler, kind):
    """A signal handler's interrupt swallowed by the code it landed in (a module import it cut short), then an
    ``ImportError`` from the half-imported module: the interrupt comes out."""
    with pytest.raises(kind):
        with cli.unwrapped_interrupts():
            try:
                handler(15, None)
            except KeyboardInterrupt:
                pass
            raise ImportError("cannot import name 'loggamma' from 'scipy.special'")


def test_an_interrupt_swallowed_without_a_later_error_comes_out_at_the_block_s_end_or_on_request():
    """SIGTERM during the import of a Cython module (scipy's): the module swallows the interrupt and the import
    goes on; nothing fails later. The block raises it when it ends, and ``pending()`` raises it between units of
    work."""
    for early in (False, True):
        done = []
        with pytest.raises(cli._Terminated):
            with cli.unwrapped_interrupts() as pending:
                try:
                    cli._raise_terminated(15, None)
                except KeyboardInterrupt:
                    pass
                if early:
                    pending()
                done.append("after")
        assert done == ([] if early else ["after"])


def test_a_second_interrupt_while_progress_bars_close_is_ignored(monkeypatch):
    import sys
    import types

    class Bar:
        def close(self):
            raise KeyboardInterrupt

    fake = types.SimpleNamespace(tqdm=types.SimpleNamespace(_instances=[Bar()]))
    monkeypatch.setitem(sys.modules, "tqdm.std", fake)
    cli.close_progress_bars()  # no exception


def test_an_error_after_an_earlier_block_s_interrupt_stays_an_error():
    """An interrupt handled in an earlier block does not turn a later block's error into one."""
    with pytest.raises(KeyboardInterrupt):
        with cli.unwrapped_interrupts():
            cli._raise_interrupted(2, None)
    with pytest.raises(ImportError):
        with cli.unwrapped_interrupts():
            raise ImportError("a real one")


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


def test_an_interrupt_in_a_weakref_callback_is_quiet_and_raised_later(capsys):
    """A SIGTERM that lands in a weakref callback (Python prints "Exception ignored in …" and a traceback, and goes
    on): the commands' unraisable hook keeps it quiet, and the interrupt comes out of the command (exit 143, one
    line)."""
    import weakref

    def build_parser():
        return argparse.ArgumentParser(prog="replica-test")

    class Thing:
        pass

    def run(args):
        thing = Thing()
        watch = weakref.ref(thing, lambda ref: cli._raise_terminated(15, None))
        del thing  # the callback runs here; its exception is unraisable
        return 0 if watch() is None else 1

    assert cli.run_command("replica-test", build_parser, run, []) == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("replica-test: terminated"), err
