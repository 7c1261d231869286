"""replica-figures: the comparison figures with the published data (data/reference/)."""

import csv

import numpy as np
import pytest

from replica.workflow import figures


def test_quick_figures_run_and_agree_with_the_published_numbers(tmp_path, capsys):
    out = tmp_path / "figs"
    assert figures.main(["--quick", "-o", str(out), "--quiet"]) == 0
    for name in ("quadratic", "relu", "rademacher_readout_rademacher", "rademacher_readout_ones", "deep",
                 "two_layer", "two_layer_phase"):
        assert (out / f"{name}.png").stat().st_size > 10_000, name
    rows = list(csv.DictReader(open(out / "deviations.csv")))
    dev = {(r["figure"], r["comparison"]): float(r["max_deviation"]) for r in rows}
    measure = {(r["figure"], r["comparison"]): r["measure"] for r in rows}
    printed = capsys.readouterr().out
    assert "max dev" in printed and "deviations.csv" in printed
    # each row says what its number measures (the first one is absolute, not relative)
    assert measure[("quadratic", "universal mmse vs published curves, all rows")] == "absolute"
    assert measure[("relu", "universal mmse vs published curve")] == "relative"
    assert {m for k, m in measure.items() if "GAMP-RIE" in k[1]} == {"std"}
    # independent published numbers (data/reference/): the agreements the theory must keep
    assert dev[("quadratic", "same, rows with published error >= 0.05")] < 3e-3
    assert dev[("relu", "universal mmse vs published curve")] < 1e-5
    assert dev[("rademacher", "universal mmse vs published curve, readout rademacher")] < 1e-6
    assert dev[("deep", "alpha_c(L) vs published, L = 1..3")] < 1e-5
    assert dev[("deep", "alpha_sp(L) vs published, L = 1..3")] < 1e-3
    # the deep thresholds computed here are stored too
    table = np.genfromtxt(out / "deep_thresholds.csv", delimiter=",", names=True)
    assert list(table["L"]) == [1, 2, 3] and np.all(np.diff(table["alpha_c"]) > 0)


def test_existing_outputs_are_not_replaced(tmp_path, capsys):
    out = tmp_path / "figs"
    out.mkdir()
    (out / "deep.png").write_bytes(b"keep")
    assert figures.main(["--quick", "--only", "deep", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--overwrite" in err and len(err.splitlines()) == 1
    assert (out / "deep.png").read_bytes() == b"keep"


@pytest.mark.parametrize("argv, message", [(["--only", "nope", "-o", "x"], "unknown figure"), ([], "required")])
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    assert figures.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
