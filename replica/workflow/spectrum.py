"""Spectral quantities of the symmetric HCIZ channel on a λ grid: ``replica-spectrum``.

For a width ratio γ and a readout law ``P_v`` the channel ``Y = √λ S⁰ + Z``
(docs/theory.md §4.1, ``S⁰ = W⁰ᵀdiag(v)W⁰/√(kd)``, ``Z`` GOE with semicircle on [−2, 2]) has

* ``m_S(λ)`` (overlap) and ``mmse_S(λ) = 1 − m_S(λ) = (1 − (4π²/3)∫ρ_λ³)/λ``;
* ``ι(λ) = ¼ ∫₀^λ mmse_S`` (mutual information per d², I-MMSE ``4ι' = mmse_S``);
* the density ``ρ_λ`` of the spectrum of ``Y``.

They are computed by the channel the solver uses: :func:`hciz.symmetric_channel` with the
readout law of :func:`priors.get_readout_law`, built exactly as in
:class:`replica.models.shallow.ShallowModel` (continuous ``gaussian``/``uniform`` laws enter the
channel exactly, not through their grid), so the numbers written here are the ones the
learning curves use.

HDF5 layout (``replica-spectrum -o FILE.h5``)
---------------------------------------------
``lambda`` (n_lambda)
    SNR grid λ ≥ 0 (dimension scale of the other datasets).
``m``, ``mmse``, ``iota`` (n_lambda)
    ``m_S``, ``mmse_S`` and ``ι`` at each λ.
``node`` (N), only with ``--density-grid N``
    The Chebyshev–Lobatto fractions ``u_k = (1 − cos(πk/(N−1)))/2`` (dimension scale of the
    columns of ``x`` and ``density``).
``x``, ``density`` (n_lambda × N), only with ``--density-grid N``
    Row ``i`` is ``ρ_{λ_i}`` on its own grid: ``N`` Chebyshev–Lobatto points
    ``x_k = a + (b − a)(1 − cos(πk/(N−1)))/2`` between the left edge ``a`` of the lowest band
    and the right edge ``b`` of the highest (gaps between bands included, where ``ρ = 0``;
    the points cluster at the outer square-root edges). Dimension scales ``lambda`` (rows) and
    ``node`` (columns), so that xarray labels both axes. For the ``gaussian`` readout law the
    support is the real line and ``[a, b]`` covers ``ρ ≥ 1e-12``. The trapezoid rule on a
    row integrates to 1 up to ``O(N^{-2})``.
root attributes
    ``parameters`` (JSON: ``gamma``, ``readout``, ``readout_grid``, ``lambda``,
    ``density_grid``, ``resolution``), ``version``, ``git_revision``, ``kind`` =
    ``"spectrum"``; the command line adds ``configuration`` (JSON of every resolved option).

Example::

    replica-spectrum --gamma 0.5 --readout ones --lambda 0:100:600 --density-grid 400 -o s.h5
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from .config import LIMITS, CommandParser, UsageError, check_memory, number_type, resolved_configuration
from .io import read_spectrum  # noqa: F401 - spectrum files are read in replica.workflow.io

__all__ = ["SpectrumResult", "spectrum", "write_spectrum", "read_spectrum", "build_parser", "main", "MAX_LAMBDA"]

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT = "replica_spectrum.h5"
#: for unbounded supports (gaussian readout law) the density grid covers ρ ≥ this value
DENSITY_CUT = 1e-12
#: largest SNR accepted: beyond it the critical-point polynomial of the band edges spans more
#: orders of magnitude than double precision resolves (λ = 1e60 fails; 1e30 is checked in tests)
MAX_LAMBDA = 1e30

_ATTRS = {
    "lambda": ("signal-to-noise ratio λ of Y = √λ S + Z", "1"),
    "m": ("overlap m_S(λ)", "1"),
    "mmse": ("matrix-denoising MMSE mmse_S(λ) = 1 − m_S(λ)", "1"),
    "iota": ("mutual information ι(λ) = ¼ ∫₀^λ mmse_S per d²", "nats"),
    "x": ("spectral variable x (grid of row λ)", "1"),
    "density": ("spectral density ρ_λ(x) of √λ S + Z", "1"),
    "node": ("Chebyshev–Lobatto node u_k = (1 − cos(πk/(N−1)))/2: x = a + (b − a) u_k", "1"),
}


@dataclass
class SpectrumResult:
    """Spectral quantities of the symmetric HCIZ channel on a λ grid.

    Attributes
    ----------
    gamma : float
        Width ratio γ > 0.
    readout : str
        Name of the readout law.
    lambdas : ndarray, shape (n_lambda,)
        SNRs λ ≥ 0, in the order given.
    overlap : ndarray, shape (n_lambda,)
        ``m_S(λ)`` in [0, 1).
    mmse : ndarray, shape (n_lambda,)
        ``mmse_S(λ) = 1 − m_S(λ)`` in (0, 1].
    mutual_information : ndarray, shape (n_lambda,)
        ``ι(λ) = ¼ ∫₀^λ mmse_S``.
    x : ndarray, shape (n_lambda, N), or None
        Density grid of each λ (module docstring); None without ``density_grid``.
    density : ndarray, shape (n_lambda, N), or None
        ``ρ_λ(x)`` on ``x``.
    """

    gamma: float
    readout: str
    lambdas: np.ndarray
    overlap: np.ndarray
    mmse: np.ndarray
    mutual_information: np.ndarray
    x: np.ndarray | None = None
    density: np.ndarray | None = None


def _channel(gamma, readout, *, readout_grid=None, resolution=None):
    """The solver's channel for (γ, readout law): same construction as ``ShallowModel``."""
    from hciz import readout_channel
    from priors import get_readout_law

    law = get_readout_law(readout, grid_size=readout_grid) if isinstance(readout, str) else readout
    return readout_channel(gamma, law, resolution=resolution), law


def _density_range(channel, lam):
    """``[lo, hi]`` covering every band of ``ρ_λ`` (``ρ ≥ DENSITY_CUT`` for unbounded supports)."""
    bands = channel.support(lam)
    lo, hi = bands[0][0], bands[-1][1]
    if math.isfinite(lo) and math.isfinite(hi):
        return lo, hi
    edges = []
    for sign in (-1.0, 1.0):
        r = 2.0 + math.sqrt(lam / channel.gamma) * (1.0 + math.sqrt(channel.gamma)) ** 2
        while channel.density(np.array([sign * r]), lam)[0] > DENSITY_CUT:
            r *= 1.25
        edges.append(sign * r)
    return edges[0], edges[1]


def spectrum(gamma, readout, lambdas, *, density_grid=None, resolution=None, readout_grid=None,
             progress=False) -> SpectrumResult:
    """``m_S``, ``mmse_S``, ``ι`` and optionally ``ρ_λ`` of the symmetric HCIZ channel.

    Parameters
    ----------
    gamma : float
        Width ratio γ = k/d > 0.
    readout : str or priors.ReadoutLaw
        Readout law ``P_v`` (``ones``, ``rademacher``, ``4point``, ``uniform``, ``gaussian``,
        ``discrete:v=w,...``).
    lambdas : array_like, shape (n_lambda,)
        SNRs λ ≥ 0 (finite; any order, repeats allowed).
    density_grid : int or None, keyword-only
        Number N ≥ 2 of density points per λ (default None: no density).
    resolution : int or None, keyword-only
        Chebyshev nodes per piece of the channel's table (≥ 8, default that of
        :class:`hciz.SymmetricChannel`).
    readout_grid : int or None, keyword-only
        Grid size of continuous readout laws (default that of :func:`priors.get_readout_law`).
    progress : bool, keyword-only
        Show a progress bar over λ while computing densities.

    Returns
    -------
    SpectrumResult

    Raises
    ------
    ValueError
        γ ≤ 0 or not finite, λ < 0, λ > :data:`MAX_LAMBDA`, NaN or infinite, empty λ grid, unknown readout law,
        ``density_grid < 2``, ``resolution < 8``.

    Notes
    -----
    ``mmse_S(λ) = (1 − (4π²/3) ∫ρ_λ³ dx)/λ``, ``m_S = 1 − mmse_S``, ``ι(λ) = ¼∫₀^λ mmse_S``
    (docs/theory.md §4.1), evaluated from the channel's table, which is accurate to ~1e-12
    except while a band separates (docs/theory.md §4.1: bands split at necks).

    References
    ----------
    Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 (HCIZ channel);
    Maillard, Troiani, Martin, Krzakala, Zdeborová, arXiv 2408.03733, Eq. of the MMSE via ∫ρ³.
    """
    gamma = float(gamma)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be a finite number > 0, got {gamma}")
    lambdas = np.asarray(lambdas, dtype=float).ravel()
    if lambdas.size == 0:
        raise ValueError("lambda grid is empty")
    if not np.all(np.isfinite(lambdas)) or np.any(lambdas < 0):
        raise ValueError("lambda values must be finite and >= 0")
    if np.any(lambdas > MAX_LAMBDA):
        raise ValueError(f"lambda values must be <= {MAX_LAMBDA:g} (band edges are not resolved in double "
                         f"precision beyond), got {lambdas.max():g}")
    if density_grid is not None and int(density_grid) < 2:
        raise ValueError(f"density_grid must be >= 2, got {density_grid}")
    channel, law = _channel(gamma, readout, readout_grid=readout_grid, resolution=resolution)
    mmse = np.asarray(channel.mmse(lambdas), dtype=float)
    result = SpectrumResult(gamma, law.name, lambdas.copy(), 1.0 - mmse, mmse,
                            np.asarray(channel.mutual_information(lambdas), dtype=float))
    if density_grid is not None:
        from tqdm.auto import tqdm

        n = int(density_grid)
        nodes = 0.5 * (1.0 - np.cos(np.pi * np.arange(n) / (n - 1)))
        result.x = np.empty((lambdas.size, n))
        result.density = np.empty((lambdas.size, n))
        bar = tqdm(total=lambdas.size, disable=not progress, desc="densities", unit="λ", leave=False)
        for i in range(lambdas.size):
            lo, hi = _density_range(channel, float(lambdas[i]))
            result.x[i] = lo + (hi - lo) * nodes
            result.density[i] = channel.density(result.x[i], float(lambdas[i]))
            bar.update(1)
        bar.refresh()  # drawn at its total before it is cleared
        bar.close()
    return result


def write_spectrum(path, result: SpectrumResult, parameters: dict, *, configuration: dict | None = None) -> Path:
    """Write a :class:`SpectrumResult` to ``path`` atomically (layout in the module docstring).

    Parameters
    ----------
    path : str or Path
        Output file (replaced if present; the caller checks ``--overwrite``).
    result : SpectrumResult
    parameters : dict
        Stored as JSON in the root attribute ``parameters``.
    configuration : dict, optional, keyword-only
        Full resolved command-line configuration (root attribute ``configuration``).

    Returns
    -------
    Path
    """
    from .io import atomic_h5, git_revision

    path = Path(path)
    with atomic_h5(path) as h5:
        h5.attrs["parameters"] = json.dumps(parameters, sort_keys=True)
        h5.attrs["version"] = __version__
        h5.attrs["git_revision"] = git_revision()
        h5.attrs["kind"] = "spectrum"
        if configuration is not None:
            h5.attrs["configuration"] = json.dumps(configuration, sort_keys=True)
        data = {"lambda": result.lambdas, "m": result.overlap, "mmse": result.mmse,
                "iota": result.mutual_information}
        if result.density is not None:
            data["x"], data["density"] = result.x, result.density
        for name, value in data.items():
            ds = h5.create_dataset(name, data=np.asarray(value, dtype=float))
            ds.attrs["long_name"], ds.attrs["units"] = _ATTRS[name]
        h5["lambda"].make_scale("lambda")
        for name in data:
            if name != "lambda":
                h5[name].dims[0].attach_scale(h5["lambda"])
        if result.density is not None:  # second axis: the node index of the per-λ grids (a 1-D scale)
            n = result.density.shape[1]
            node = h5.create_dataset("node", data=0.5 * (1.0 - np.cos(np.pi * np.arange(n) / (n - 1))))
            node.attrs["long_name"], node.attrs["units"] = _ATTRS["node"]
            node.make_scale("node")
            for name in ("x", "density"):
                h5[name].dims[1].attach_scale(node)
    logger.info("wrote %s", path)
    return path


# --------------------------------------------------------------------------- command line
def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``replica-spectrum``."""
    p = CommandParser(
        prog="replica-spectrum",
        description=(
            "Overlap m_S(λ), MMSE mmse_S(λ) = 1 − m_S(λ), mutual information ι(λ) = ¼∫₀^λ mmse_S and "
            "optionally the spectral density ρ_λ of Y = √λ S + Z (S = Wᵀdiag(v)W/√(kd), GOE noise with "
            "semicircle on [−2, 2]; docs/theory.md §4.1) on a grid of λ, computed by the HCIZ channel the "
            "solver uses. Writes one HDF5 file (layout: python -m pydoc replica.workflow.spectrum)."
        ),
    )
    g = p.add_argument_group("channel (docs/theory.md §4.1)")
    g.add_argument("--gamma", type=number_type("--gamma", minimum=LIMITS["gamma"][0], maximum=LIMITS["gamma"][1], upper_strict=False), default=0.5, help="width ratio γ = k/d in [1e-4, 1e4] (default 0.5)")
    g.add_argument("--readout", default="ones",
                   help="readout law P_v (E v² = 1): ones, rademacher, uniform (on ±√3), gaussian, 4point "
                        "({±1,±3}/√5) or 'discrete:v=w,v=w,...' (default ones)")
    g.add_argument("--readout-grid", type=number_type("--readout-grid", minimum=2, maximum=1_000_000, upper_strict=False, integer=True), default=None,
                   help="grid points of continuous readout laws, used for E v only: the spectrum of the "
                        "gaussian and uniform laws is exact (default 64)")
    g.add_argument("--lambda", dest="lambda_grid", default="0:100:201", metavar="GRID",
                   help="SNRs 0 <= λ <= 1e30: 'a,b,c' or inclusive 'start:stop:num' (default 0:100:201)")
    g.add_argument("--density-grid", type=number_type("--density-grid", minimum=LIMITS["density_grid"][0], maximum=LIMITS["density_grid"][1], upper_strict=False, integer=True), default=None, metavar="N",
                   help="also write ρ_λ on 2 <= N <= 100000 points per λ spanning its support (Chebyshev–Lobatto, "
                        "clustered at the edges; default: no density)")
    g.add_argument("--resolution", type=number_type("--resolution", minimum=LIMITS["resolution"][0], maximum=LIMITS["resolution"][1], upper_strict=False, integer=True), default=None, metavar="R",
                   help="Chebyshev nodes per piece of the channel table, 8 to 1024 (default 24)")
    from .cli import add_output_options

    add_output_options(p, default_output=DEFAULT_OUTPUT, resume=False,
                       config_example="gamma = 0.5, lambda = '0:100:201'")
    return p


def _run(args) -> int:
    from priors import get_readout_law

    from .cli import parse_number_grid

    lambdas = parse_number_grid(args.lambda_grid, "--lambda", minimum=0.0, meaning="λ")
    if lambdas.max() > MAX_LAMBDA:
        raise UsageError(f"--lambda: values must be <= {MAX_LAMBDA:g} (band edges are not resolved in double "
                         f"precision beyond), got {lambdas.max():g}")
    if args.density_grid is not None:  # x and density, n_λ × N doubles each
        check_memory(16.0 * lambdas.size * args.density_grid, "--lambda/--density-grid",
                     f"{lambdas.size} λ × {args.density_grid} density points")
    from .cli import check_readout_grid

    check_readout_grid(args.readout, args.readout_grid)
    try:
        get_readout_law(args.readout, grid_size=args.readout_grid)
    except ValueError as exc:
        raise UsageError(f"--readout: {str(exc).splitlines()[0]}") from None
    from .cli import warn_readout_rescaling

    warn_readout_rescaling(args.readout)
    out = Path(args.output)
    from .safe_write import SafeOutput

    parameters = {"gamma": args.gamma, "readout": args.readout, "readout_grid": args.readout_grid,
                  "lambda": lambdas.tolist(), "density_grid": args.density_grid, "resolution": args.resolution}
    with SafeOutput(out, overwrite=args.overwrite, checkpoints=False) as target:
        result = spectrum(args.gamma, args.readout, lambdas, density_grid=args.density_grid,
                          resolution=args.resolution, readout_grid=args.readout_grid, progress=not args.quiet)
        configuration = resolved_configuration(args)
        target.finish(lambda: write_spectrum(out, result, parameters, configuration=configuration))
    print(out)
    return 0


def main(argv=None) -> int:
    """Entry point of ``replica-spectrum``; returns the exit status (2 on bad input).

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 on bad input (one line on standard error, no file written),
        1 when the output cannot be written, 130 on Ctrl-C (no file written).
    """
    from .cli import run_command

    return run_command("replica-spectrum", build_parser, _run_interruptible, argv)


def _run_interruptible(args) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt as exc:  # no checkpoint: the old file stays, one line says so
        exc.note = f"nothing saved; {args.output} {'unchanged' if Path(args.output).exists() else 'not written'}"
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
