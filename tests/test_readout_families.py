"""Readout laws of many-feature targets (issue 40, item 1): ``powerlaw:beta=B,k=K``, ``exponential:rate=R,k=K``
and ``csv:FILE`` — their atoms against the formulas written here, bad parameters refused in one line with exit 2
and no output, the same sweep as the equivalent hand-written ``discrete:`` law with two hidden layers, and the
located equilibrium change of a many-atom law (profile solver) independent of the α grid.
"""

import re

import numpy as np
import pytest

from priors.readout_laws import MAX_ATOMS, discrete_readout_law, get_readout_law
from replica.workflow.cli import sweep_main
from replica.workflow.io import read_sweep

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("beta,k", [(0.3, 1), (0.3, 7), (0.75, 100), (2.0, 1000)])
def test_powerlaw_atoms_decay_as_p_to_minus_beta_with_unit_second_moment(beta, k):
    law = get_readout_law(f"powerlaw:beta={beta},k={k}")
    p = np.arange(1, k + 1)
    assert law.exact and law.values.size == k
    np.testing.assert_allclose(law.weights, 1.0 / k, rtol=1e-15)
    np.testing.assert_allclose(law.values / law.values[0], p ** (-beta), rtol=1e-13)
    # E v² = 1 with the normalization written out: v_p = p^-β / sqrt(mean_q q^-2β)
    np.testing.assert_allclose(law.values, p ** (-beta) / np.sqrt(np.mean(p ** (-2.0 * beta))), rtol=1e-13)
    assert abs(np.sum(law.weights * law.values ** 2) - 1.0) < 1e-13


def test_exponential_atoms_and_their_limits():
    law = get_readout_law("exponential:rate=0.5,k=6")
    np.testing.assert_allclose(law.values[1:] / law.values[:-1], np.exp(-0.5), rtol=1e-13)
    assert abs(np.sum(law.weights * law.values ** 2) - 1.0) < 1e-13
    with pytest.raises(ValueError, match="underflow"):
        get_readout_law("exponential:rate=1,k=1000")


def test_family_specifications_are_case_and_order_insensitive_and_named_as_given():
    a = get_readout_law("powerlaw:beta=0.4,k=5")
    b = get_readout_law("PowerLaw:k=5, BETA=0.4")
    np.testing.assert_array_equal(a.values, b.values)
    assert b.name == "PowerLaw:k=5, BETA=0.4"


def test_csv_law_equals_the_discrete_law_of_its_rows(tmp_path):
    two = tmp_path / "two.csv"
    two.write_text("# amplitudes of a teacher\nvalue,weight\n2,1\n1,3\n\n0.5,4\n")
    law = get_readout_law(f"csv:{two}")
    ref = discrete_readout_law([2.0, 1.0, 0.5], [1.0, 3.0, 4.0])
    np.testing.assert_allclose(law.values, ref.values, rtol=1e-15)
    np.testing.assert_allclose(law.weights, ref.weights, rtol=1e-15)
    one = tmp_path / "one.csv"
    one.write_text("3\n1\n")
    law = get_readout_law(f"csv:{one}")
    np.testing.assert_allclose(law.weights, 0.5)
    np.testing.assert_allclose(law.values, np.array([3.0, 1.0]) / np.sqrt(5.0), rtol=1e-15)


BAD = {
    "beta-zero": ("powerlaw:beta=0,k=5", "beta must be finite and > 0"),
    "beta-negative": ("powerlaw:beta=-0.3,k=5", "beta must be finite and > 0"),
    "beta-nan": ("powerlaw:beta=nan,k=5", "beta must be finite and > 0"),
    "beta-text": ("powerlaw:beta=abc,k=5", "beta must be a number"),
    "k-zero": ("powerlaw:beta=0.3,k=0", "k must be an integer between 1"),
    "k-fraction": ("powerlaw:beta=0.3,k=2.5", "k must be an integer between 1"),
    "k-huge": (f"powerlaw:beta=0.3,k={10 * MAX_ATOMS}", "k must be an integer between 1"),
    "continuum-half": ("powerlaw:beta=0.5", "beta must be in (0, 1/2) for the continuum law"),
    "continuum-large": ("powerlaw:beta=2", "beta must be in (0, 1/2) for the continuum law"),
    "continuum-zero": ("powerlaw:beta=0", "beta must be in (0, 1/2) for the continuum law"),
    "unknown-key": ("powerlaw:beta=0.3,kk=5", "unknown parameter 'kk'"),
    "twice": ("powerlaw:beta=0.3,k=5,k=6", "parameter 'k' given twice"),
    "no-equals": ("exponential:rate", "is not KEY=VALUE"),
    "rate-zero": ("exponential:rate=0,k=5", "rate must be finite and > 0"),
    "csv-missing": ("csv:no-such-file.csv", "cannot read 'no-such-file.csv'"),
    "csv-empty-name": ("csv:", "no file after 'csv:'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_family_parameters_exit_2_in_one_line_without_output(tmp_path, capsys, case):
    spec, message = BAD[case]
    out = tmp_path / "s.h5"
    assert sweep_main(["--readout", spec, "--alpha", "1:2:2", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("replica-sweep: error: --readout:") and message in err
    assert not out.exists()


@pytest.mark.parametrize("content,message", [
    ("1,0.5\n2,-1\n", "line 2 of .*weight -1 is not positive"),
    ("1,0.5\n2,0\n", "weight 0 is not positive"),
    ("1,0.5\n3\n", "line 2 of .*expected 2 column"),
    ("value\n1\nabc\n", "line 3 of .*malformed number"),
    ("1,2,3\n", "expected 1 or 2 columns"),
    ("# nothing\n\n", "no atoms"),
    ("0\n0\n", "all zero"),
], ids=["negative-weight", "zero-weight", "ragged", "malformed", "three-columns", "empty", "zero-values"])
def test_bad_csv_files_exit_2_naming_the_file_and_line(tmp_path, capsys, content, message):
    path = tmp_path / "law.csv"
    path.write_text(content)
    out = tmp_path / "s.h5"
    assert sweep_main(["--readout", f"csv:{path}", "--alpha", "1:2:2", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(message, err), err
    assert not out.exists()


def test_help_of_every_command_lists_the_families():
    from replica.workflow import cli, experiment_cli, sgd_cli

    for build in (cli.build_sweep_parser, experiment_cli.build_parser, sgd_cli.build_parser):
        text = {a.dest: a for a in build()._actions}["readout"].help
        for syntax in ("powerlaw:beta=B,k=K", "exponential:rate=R,k=K", "csv:FILE"):
            assert syntax in text


def _sweep(tmp_path, name, readout, alpha, *extra):
    out = tmp_path / f"{name}.h5"
    assert sweep_main([*extra, "--readout", readout, "--alpha", alpha, "--quiet", "-o", str(out)]) == 0
    return read_sweep(out)


def test_two_hidden_layers_take_a_powerlaw_readout_as_its_discrete_atoms(tmp_path):
    law = get_readout_law("powerlaw:beta=0.3,k=3")
    atoms = "discrete:" + ",".join(f"{float(v)!r}={float(w)!r}" for v, w in zip(law.values, law.weights))
    extra = ("--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance")
    a = _sweep(tmp_path, "family", "powerlaw:beta=0.3,k=3", "1:3:3", *extra)
    b = _sweep(tmp_path, "atoms", atoms, "1:3:3", *extra)
    assert a["parameters"]["readout"] == "powerlaw:beta=0.3,k=3"
    np.testing.assert_allclose(a["equilibrium"]["mmse"], b["equilibrium"]["mmse"], rtol=1e-12, atol=0)
    assert np.all(np.isfinite(a["equilibrium"]["mmse"]))


@pytest.mark.xdist_group("profile-powerlaw")
def test_located_equilibrium_change_of_a_many_atom_law_does_not_depend_on_the_grid(tmp_path):
    """40 atoms (profile solver): the specialized branch starts by a fold at α ≈ 0.307 and crosses the universal
    one just above it, far from the coarse grid's next point (0.3 → 0.45). Its free entropy there must come from
    the points next to the fold (not from a continuation from 0.45 that fails at the fold): the located α_c and
    the mmse after it equal those of a fine grid around the change (a discretization-free quantity)."""
    extra = ("--activation", "tanh2", "--drop-hermite", "1", "--gamma", "0.5", "--delta", "0.04")
    coarse = _sweep(tmp_path, "coarse", "powerlaw:beta=0.3,k=40", "0.15:0.6:4", *extra)["equilibrium_changes"]
    fine = _sweep(tmp_path, "fine", "powerlaw:beta=0.3,k=40", "0.3:0.32:5", *extra)["equilibrium_changes"]
    assert list(coarse["kind"]) == list(fine["kind"]) == ["crossing"]
    assert abs(coarse["alpha"][0] - fine["alpha"][0]) < 1e-8
    assert np.isfinite(coarse["mmse_after"][0])
    assert abs(coarse["mmse_after"][0] - fine["mmse_after"][0]) < 1e-8
