"""Helpers of the command-line tests: the entry points of every command, called in-process, and
the check that an error is reported as one line."""

from __future__ import annotations


def one_line(err: str) -> str:
    """The single non-empty line of ``err`` (asserts there is exactly one and no traceback)."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def spectrum_main(argv):
    from replica.workflow.spectrum import main

    return main(argv)


def sgd_main(argv):
    from replica.workflow import sgd_cli

    return sgd_cli.main(argv)


def experiment_main(argv):
    from replica.workflow import experiment_cli as cli

    return cli.main(argv)


def figures_main(argv):
    from replica.workflow import figures

    return figures.main(argv)
