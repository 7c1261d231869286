"""``replica-spectrum`` and :func:`replica.workflow.spectrum.spectrum`.

Identities checked on the *written* file: ``m + mmse = 1``, I-MMSE ``4ι' = mmse`` by
central differences, the density integrates to 1 and reproduces ``mmse_S`` through
``(1 − (4π²/3)∫ρ³)/λ``; ``m_S`` of the command and of the solver's channel both agree with
published tables. Bad input is one
line on standard error, exit 2, and leaves the file system untouched.
"""

import json

import numpy as np
import pytest

from replica import __version__
from replica.workflow.spectrum import main, read_spectrum, spectrum

GAMMA = 0.5
# λ grid of the written file: away from the band split of v ≡ 1, γ = 0.5 (λ ≈ 25–58)
LAMBDA = "0.5:20:196"


def run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("spectrum") / "s.h5"
    rc = main(["--gamma", str(GAMMA), "--readout", "ones", "--lambda", LAMBDA, "--density-grid", "600",
               "-o", str(path), "--quiet"])
    assert rc == 0
    return read_spectrum(path)


def test_layout_and_attributes(written):
    n = 196
    assert written["lambda"].shape == written["m"].shape == written["mmse"].shape == written["iota"].shape == (n,)
    assert written["x"].shape == written["density"].shape == (n, 600)
    np.testing.assert_allclose(written["lambda"], np.linspace(0.5, 20, n), rtol=0, atol=1e-15)
    attrs = written["attrs"]
    assert attrs["version"] == __version__
    assert attrs["kind"] == "spectrum"
    assert attrs["parameters"]["gamma"] == GAMMA and attrs["parameters"]["readout"] == "ones"
    assert attrs["parameters"]["density_grid"] == 600
    assert attrs["configuration"]["lambda_grid"] == LAMBDA


def test_overlap_plus_mmse_is_one(written):
    np.testing.assert_allclose(written["m"] + written["mmse"], 1.0, rtol=0, atol=1e-15)
    assert np.all(np.diff(written["mmse"]) < 0)  # mmse_S decreases with λ


def test_i_mmse_by_finite_differences(written):
    lam, iota, mmse = written["lambda"], written["iota"], written["mmse"]
    h = lam[1] - lam[0]
    # 4 (ι(λ+h) − ι(λ−h)) = ∫ mmse_S over [λ−h, λ+h], by Simpson's rule on the written mmse
    # (rule error ≈ 6e-7 here; the increments are ≥ 7e-3, so a 1e-3 relative error fails)
    increment = 4 * (iota[2:] - iota[:-2])
    simpson = h / 3 * (mmse[:-2] + 4 * mmse[1:-1] + mmse[2:])
    np.testing.assert_allclose(increment, simpson, rtol=0, atol=2e-6)
    # and the plain central difference 4ι' ≈ mmse_S (error h² mmse'/6 ≈ 1.3e-3 at λ = 0.6)
    np.testing.assert_allclose(increment / (2 * h), mmse[1:-1], rtol=0, atol=2e-3)


def test_density_integrates_to_one_and_gives_mmse(written):
    lam, x, rho = written["lambda"], written["x"], written["density"]
    assert np.all(rho >= 0)
    assert np.all(rho[:, [0, -1]] < 1e-6)  # the grid spans the support: edges at both ends
    mass = np.trapezoid(rho, x, axis=1)
    np.testing.assert_allclose(mass, 1.0, rtol=0, atol=2e-5)
    # mmse_S(λ) = (1 − (4π²/3)∫ρ³)/λ from the written density
    from_density = (1 - 4 * np.pi**2 / 3 * np.trapezoid(rho**3, x, axis=1)) / lam
    np.testing.assert_allclose(from_density, written["mmse"], rtol=0, atol=3e-5)


# (λ, m_S(λ)) at γ = 0.5, copied from reference/barbier2025_shallow/hciz_m_table_gamma0.5_readout_<law>.csv
# (Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 / 2505.24849, public code; scipy-quad
# tables with ~1e-6 error); four rows of each (more rows in tests/test_hciz_symmetric.py)
PUBLISHED_M_S = {
    "ones": [(0.35000000000000003, 0.33259596), (3.8000000000000003, 0.84794480), (12.4, 0.94517943),
             (200.0, 0.99626902)],
    "rademacher": [(0.35000000000000003, 0.28838173), (3.8000000000000003, 0.83273303), (12.4, 0.94202586),
                   (200.0, 0.99625865)],
    "4point": [(0.014, 0.01383427), (0.548, 0.44861831), (10.8, 0.93949621), (200.0, 0.99627175)],
}


@pytest.mark.parametrize("readout", sorted(PUBLISHED_M_S))
def test_spectrum_and_solver_against_published_tables(readout):
    # replica-spectrum and the solver's channel are each compared with the published m_S(λ)
    from replica.models.shallow import ShallowModel

    lam, m_ref = np.array(PUBLISHED_M_S[readout]).T
    res = spectrum(GAMMA, readout, lam)
    model = ShallowModel("relu", GAMMA, 0.1, readout_law=readout)
    np.testing.assert_allclose(res.overlap, m_ref, rtol=0, atol=1e-5)
    np.testing.assert_allclose(model.channel.overlap(lam), m_ref, rtol=0, atol=1e-5)
    np.testing.assert_allclose(res.mmse, 1 - m_ref, rtol=0, atol=1e-5)
    assert res.readout == readout and res.density is None
    assert spectrum(GAMMA, readout, [0.0]).mmse[0] == 1.0


def test_python_api_rejects_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        spectrum(-0.5, "ones", [1.0])
    with pytest.raises(ValueError, match="lambda"):
        spectrum(GAMMA, "ones", [1.0, -1.0])
    with pytest.raises(ValueError, match="unknown readout law"):
        spectrum(GAMMA, "nope", [1.0])
    with pytest.raises(ValueError, match="density_grid"):
        spectrum(GAMMA, "ones", [1.0], density_grid=1)


BAD_INPUTS = [
    (["--gamma", "-0.5"], "--gamma"),
    (["--gamma", "0"], "--gamma"),
    (["--gamma", "abc"], "--gamma"),
    (["--lambda", "-1:3:4"], "--lambda"),
    (["--lambda", "1,-0.5"], "--lambda"),
    (["--lambda", "1:x:3"], "--lambda"),
    (["--lambda", "nan"], "--lambda"),
    (["--readout", "nope"], "--readout"),
    (["--density-grid", "1"], "--density-grid"),
    (["--resolution", "3"], "--resolution"),
    (["--bogus"], "--bogus"),
]


@pytest.mark.parametrize("extra, option", BAD_INPUTS)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, extra, option):
    out = tmp_path / "s.h5"
    rc, _, err = run(capsys, ["--lambda", "1:2:3", "-o", str(out), "--quiet"] + extra)
    assert rc == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("replica-spectrum: error:") and option in lines[0], err
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_overwrite(capsys, tmp_path):
    out = tmp_path / "s.h5"
    out.write_bytes(b"precious")
    rc, _, err = run(capsys, ["--lambda", "1,2", "-o", str(out), "--quiet"])
    assert rc == 2 and "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.h5"]  # no temporary file left
    rc, stdout, _ = run(capsys, ["--lambda", "1,2", "-o", str(out), "--quiet", "--overwrite"])
    assert rc == 0 and stdout.strip() == str(out)
    np.testing.assert_array_equal(read_spectrum(out)["lambda"], [1.0, 2.0])


def test_config_file(capsys, tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('gamma = 0.5\nreadout = "ones"\nlambda = "1,2,3"\ndelta = 0.1\n')  # delta: replica-sweep's key
    out = tmp_path / "s.h5"
    rc, _, err = run(capsys, ["--config", str(cfg), "-o", str(out), "--quiet"])
    assert rc == 0, err
    data = read_spectrum(out)
    np.testing.assert_array_equal(data["lambda"], [1.0, 2.0, 3.0])
    assert json.dumps(data["attrs"]["parameters"]["lambda"]) == "[1.0, 2.0, 3.0]"
    cfg.write_text("gama = 0.5\n")
    rc, _, err = run(capsys, ["--config", str(cfg), "-o", str(tmp_path / "t.h5"), "--quiet"])
    assert rc == 2 and "gama" in err and not (tmp_path / "t.h5").exists()


def test_density_file_opens_with_xarray(tmp_path, capsys):
    """``density`` and ``x`` carry dimension scales on both axes (λ rows, node columns): xarray used to
    refuse the file ("mixing of labeled and unlabeled dimensions")."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    path = tmp_path / "d.h5"
    assert main(["--lambda", "0.5,2,8", "--density-grid", "9", "-o", str(path), "--quiet"]) == 0
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        assert ds["density"].dims == ("lambda", "node") and ds["x"].dims == ("lambda", "node")
        # the node coordinate is the Chebyshev–Lobatto fraction: x = a + (b − a) u
        u = ds["node"].values
        np.testing.assert_allclose(u, 0.5 * (1 - np.cos(np.pi * np.arange(9) / 8)), rtol=0, atol=1e-15)
        x = ds["x"].values
        np.testing.assert_allclose(x, x[:, :1] + (x[:, -1:] - x[:, :1]) * u, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ds["density"].sel({"lambda": 2.0}),
                                   read_spectrum(path)["density"][1], rtol=0, atol=0)
