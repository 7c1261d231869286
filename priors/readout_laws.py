"""Readout laws ``P_v`` of the second-layer weights (docs/theory.md §1).

A readout law is a finite set of atoms ``values`` with probabilities ``weights``
(``sum weights = 1``) normalised so that ``E v^2 = 1``.  Discrete laws are exact.  Continuous
laws (``uniform``, ``gaussian``, or any density, :func:`density_readout_law`) are marked
``exact=False`` and carry the exact law (:class:`priors.continuous_laws.ContinuousLaw`, attribute ``law``); their
atoms are a Gauss–Legendre rule in the quantile ``u = F(v)`` of ``DEFAULT_GRID_SIZE`` points
(or ``grid_size``; every node carries probability, no weight underflows at any size).  The
one-hidden-layer solver integrates over a continuous law with its own adaptive rule
(:mod:`replica.readout_grid`) unless a grid size was given (``fixed_grid=True``); the atoms
are then where ``Q(v)`` is reported.

Specifications understood by :func:`get_readout_law` (the registry :data:`READOUT_LAWS`, extended by
:func:`register_readout_law`; the commands' ``--readout`` help is generated from it,
:func:`describe_readout_laws`):

``ones``        ``v ≡ 1``
``rademacher``  ``v = ±1``, probability 1/2 each
``4point``      ``v ∈ {±1, ±3}/sqrt(5)``, probability 1/4 each
``uniform``     uniform on ``[-sqrt(3), sqrt(3)]``
``gaussian``    ``N(0, 1)``
``discrete:VALUE=WEIGHT,VALUE=WEIGHT,...``
                user law, e.g. ``discrete:1=0.5,-2=0.5``; weights are normalised to sum 1 and
                values rescaled so that ``E v^2 = 1``.  Atoms are kept as given (no merging).

Families of many-feature targets (hidden units of very different strengths; the readout
amplitudes of arXiv 2605.10395), ``K`` atoms of probability ``1/K`` each, rescaled to ``E v² = 1``
(:data:`READOUT_FAMILIES`, :func:`powerlaw_readout_law`, :func:`exponential_readout_law`,
:func:`csv_readout_law`):

``powerlaw:beta=B,k=K``     ``v_p ∝ p^(−B)``, ``p = 1 … K``, ``B > 0``
``exponential:rate=R,k=K``  ``v_p ∝ exp(−R (p − 1))``, ``p = 1 … K``, ``R > 0``
``csv:PATH``                atoms from a CSV file: one column (values, equal weights) or two
                            (``value,weight``), one atom per line, ``#`` comments and one header
                            line allowed
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .continuous_laws import CONTINUOUS_LAWS, DensityLaw

__all__ = [
    "ReadoutLaw",
    "continuous_readout_law",
    "READOUT_LAWS",
    "DEFAULT_GRID_SIZE",
    "get_readout_law",
    "discrete_readout_law",
    "readout_rescaling",
    "density_readout_law",
    "MAX_GRID_SIZE",
    "register_readout_law",
    "unregister_readout_law",
    "describe_readout_laws",
    "READOUT_FAMILIES",
    "powerlaw_readout_law",
    "exponential_readout_law",
    "csv_readout_law",
    "MAX_ATOMS",
]


@dataclass(frozen=True)
class _NamedLaw:
    """A registered readout law: ``build(grid_size) -> ReadoutLaw`` and its help text."""

    build: object
    summary: str


#: the registry of named readout laws: name → entry (build, summary); the ``discrete:...`` user
#: syntax needs no entry. Edit through :func:`register_readout_law`.
READOUT_LAWS: dict = {}

#: number of grid points used for continuous readout laws unless ``grid_size`` is given
DEFAULT_GRID_SIZE = 64
#: largest accepted grid size of a continuous law
MAX_GRID_SIZE = 1_000_000
#: largest number of atoms of a ``powerlaw:``/``exponential:``/``csv:`` law
MAX_ATOMS = 1_000_000


@dataclass(frozen=True, eq=False)
class ReadoutLaw:
    """Finite readout law with ``E v^2 = 1``.

    Attributes
    ----------
    name : str
        Specification it was built from.
    values : ndarray, shape (n_atoms,)
        Atoms ``v_i`` (float64, read-only).
    weights : ndarray, shape (n_atoms,)
        Probabilities, positive, summing to 1 (float64, read-only).
    exact : bool
        ``True`` for a discrete law, ``False`` for a quadrature grid of a continuous law.
    law : ContinuousLaw or None
        The exact continuous law (``None`` for discrete laws), see
        :mod:`priors.continuous_laws`.
    fixed_grid : bool
        ``True`` when the atoms of a continuous law are the grid the solver must use
        (``grid_size`` given); ``False`` when they only report ``Q(v)`` and the solver
        integrates over ``law`` adaptively.

    Notes
    -----
    Instances are immutable, hashable and compare equal when name, atoms, weights,
    ``exact``, the continuous law and ``fixed_grid`` agree (so they can key caches).
    """

    name: str
    values: np.ndarray
    weights: np.ndarray
    exact: bool
    law: object = None
    fixed_grid: bool = False

    def __post_init__(self):
        values = np.array(self.values, dtype=np.float64).ravel()
        weights = np.array(self.weights, dtype=np.float64).ravel()
        if values.shape != weights.shape or values.size == 0:
            raise ValueError("readout law needs as many weights as values (at least one)")
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(weights))):
            raise ValueError("readout law values and weights must be finite")
        if np.any(weights <= 0):
            raise ValueError("readout law weights must be positive (got "
                             + ", ".join(repr(float(w)) for w in weights[weights <= 0][:3]) + ")")
        if abs(weights.sum() - 1.0) > 1e-12:
            raise ValueError(f"readout law weights sum to {weights.sum()!r}, not 1")
        second = float(np.dot(weights, values ** 2))
        if abs(second - 1.0) > 1e-12:
            raise ValueError(f"readout law has E v^2 = {second!r}, not 1")
        values.setflags(write=False)
        weights.setflags(write=False)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "weights", weights)

    def _key(self):
        law = None if self.law is None else self.law.key()
        return (self.name, self.values.tobytes(), self.weights.tobytes(), self.exact, law, self.fixed_grid)

    def __eq__(self, other):
        if not isinstance(other, ReadoutLaw):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def expect(self, f):
        """Return ``E_v f(v) = sum_i weights_i f(values_i)``."""
        return float(np.dot(self.weights, f(self.values)))

    def sample(self, rng, shape):
        """Draw iid readouts ``v ~ P_v`` (``E v² = 1``).

        A continuous law is sampled exactly (:meth:`priors.continuous_laws.ContinuousLaw.sample`,
        not from its quadrature atoms); a discrete law from its atoms with their probabilities.

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of randomness.
        shape : int or tuple of int
            Shape of the draw (``k_L`` for one readout vector).

        Returns
        -------
        ndarray
            float64 array of ``shape``.
        """
        if self.law is not None:
            return self.law.sample(rng, shape)
        return rng.choice(self.values, size=shape, p=self.weights / self.weights.sum())


def discrete_readout_law(values, weights, *, name=None, exact=True):
    """Build a readout law from atoms, normalising weights and the second moment.

    Parameters
    ----------
    values : array_like, shape (n_atoms,)
        Atoms; not all zero, finite.
    weights : array_like, shape (n_atoms,)
        Positive finite weights; normalised to sum 1.
    name : str, optional
        Name stored in the law (default: a ``discrete:`` specification).
    exact : bool, optional
        Whether the atoms represent the law exactly (default ``True``).

    Returns
    -------
    ReadoutLaw
        With ``values / sqrt(E v^2)`` and ``weights / sum(weights)``.

    Raises
    ------
    ValueError
        Mismatched lengths, empty input, non-finite numbers, non-positive weights, or all
        values zero.
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if values.size == 0 or values.shape != weights.shape:
        raise ValueError("readout law needs as many weights as values (at least one)")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(weights))):
        raise ValueError("readout law values and weights must be finite")
    if np.any(weights <= 0):
        raise ValueError("readout law weights must be positive (got "
                         + ", ".join(repr(float(w)) for w in weights if w <= 0) + ")")
    weights = weights / weights.sum()
    second = float(np.dot(weights, values ** 2))
    if second <= 0:
        raise ValueError("readout law values are all zero; cannot normalise E v^2 = 1")
    values = values / math.sqrt(second)
    if name is None:
        name = "discrete:" + ",".join(f"{v:.17g}={w:.17g}" for v, w in zip(values, weights))
    return ReadoutLaw(name=name, values=values, weights=weights, exact=exact)


def readout_rescaling(spec):
    """What normalising a ``discrete:`` readout law changes, as one line (None if nothing).

    Parameters
    ----------
    spec : str
        Readout-law specification (only ``discrete:VALUE=WEIGHT,...`` can be rescaled).

    Returns
    -------
    str or None
        E.g. ``"values rescaled by 1/2 to E v² = 1: v = 1 (weight 1)"`` when the atoms do not
        have ``E v² = 1`` or the weights do not sum to 1; None otherwise (or for invalid
        specifications, reported by :func:`get_readout_law`).
    """
    text = str(spec).strip()
    if not text.lower().startswith("discrete:"):
        return None
    try:
        law = _parse_discrete(text, text[len("discrete:"):])
        pairs = [tuple(float(x) for x in item.split("=")) for item in text[len("discrete:"):].split(",")]
    except ValueError:
        return None
    values = np.array([p[0] for p in pairs])
    weights = np.array([p[1] for p in pairs])
    total = float(weights.sum())
    second = float(np.dot(weights / total, values ** 2))
    notes = []
    if abs(second - 1.0) > 1e-12:
        notes.append(f"values rescaled by 1/{math.sqrt(second):.6g} to E v² = 1")
    if abs(total - 1.0) > 1e-12:
        notes.append(f"weights divided by their sum {total:.6g}")
    if not notes:
        return None
    atoms = ", ".join(f"v = {v:.6g} (weight {w:.6g})" for v, w in zip(law.values, law.weights))
    return "; ".join(notes) + f": {atoms}"


def _parse_discrete(spec, body):
    if not body.strip():
        raise ValueError(f"readout law {spec!r}: no atoms after 'discrete:'")
    values, weights = [], []
    for item in body.split(","):
        if item.count("=") != 1:
            raise ValueError(f"readout law {spec!r}: atom {item.strip()!r} is not VALUE=WEIGHT")
        v_text, w_text = (s.strip() for s in item.split("="))
        try:
            v, w = float(v_text), float(w_text)
        except ValueError:
            raise ValueError(f"readout law {spec!r}: malformed number in atom "
                             f"{item.strip()!r}") from None
        values.append(v)
        weights.append(w)
    return discrete_readout_law(values, weights, name=spec)


def _family_parameters(spec, body, allowed):
    """``KEY=VALUE,…`` of a family specification: ``{key: text}``, every key of ``allowed`` given once."""
    family = spec.split(":", 1)[0]
    items = {}
    for item in body.split(","):
        if item.count("=") != 1:
            raise ValueError(f"readout law {spec!r}: {item.strip()!r} is not KEY=VALUE "
                             f"(expected {family}:{','.join(k + '=…' for k in allowed)})")
        key, value = (t.strip() for t in item.split("="))
        key = key.lower()
        if key not in allowed:
            raise ValueError(f"readout law {spec!r}: unknown parameter {key!r} (expected "
                             + ", ".join(allowed) + ")")
        if key in items:
            raise ValueError(f"readout law {spec!r}: parameter {key!r} given twice")
        items[key] = value
    missing = [k for k in allowed if k not in items]
    if missing:
        raise ValueError(f"readout law {spec!r}: missing " + ", ".join(f"{k}=…" for k in missing))
    return items


def _positive_number(spec, key, text):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"readout law {spec!r}: {key} must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"readout law {spec!r}: {key} must be finite and > 0, got {text!r}")
    return value


def _atom_count(spec, text):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"readout law {spec!r}: k must be an integer, got {text!r}") from None
    if not (math.isfinite(value) and value.is_integer() and 1 <= value <= MAX_ATOMS):
        raise ValueError(f"readout law {spec!r}: k must be an integer between 1 and {MAX_ATOMS}, got {text!r}")
    return int(value)


def powerlaw_readout_law(beta, k, *, name=None):
    """Power-law strengths of ``k`` hidden units: ``v_p ∝ p^(−β)``, ``p = 1 … k``, each of probability
    ``1/k``, rescaled to ``E v² = 1`` (``v_p = p^(−β) / √(k⁻¹ Σ_q q^(−2β))``).

    The many-feature targets of arXiv 2605.10395 (sharp feature-learning transitions and
    Bayes-optimal neural scaling laws): each unit is learned at its own sample ratio, strongest first.

    Parameters
    ----------
    beta : float
        Decay exponent, finite and ``> 0``.
    k : int
        Number of atoms, ``1 ≤ k ≤ MAX_ATOMS``.
    name : str, optional, keyword-only
        Stored name (default ``powerlaw:beta=…,k=…``).

    Returns
    -------
    ReadoutLaw
        Atoms in decreasing order (``v_1`` the strongest), exact.

    Raises
    ------
    ValueError
        ``beta`` not finite and positive, ``k`` not an integer in ``[1, MAX_ATOMS]``.
    """
    spec = name or f"powerlaw:beta={beta!r},k={k!r}"
    beta = _positive_number(spec, "beta", str(beta))
    k = _atom_count(spec, str(k))
    p = np.arange(1, k + 1, dtype=np.float64)
    return discrete_readout_law(p ** (-beta), np.full(k, 1.0 / k), name=name or f"powerlaw:beta={beta!r},k={k}")


def exponential_readout_law(rate, k, *, name=None):
    """Exponentially decaying strengths of ``k`` hidden units: ``v_p ∝ exp(−R (p − 1))``, ``p = 1 … k``,
    each of probability ``1/k``, rescaled to ``E v² = 1``.

    Parameters
    ----------
    rate : float
        Decay rate ``R``, finite and ``> 0``.
    k : int
        Number of atoms, ``1 ≤ k ≤ MAX_ATOMS``.
    name : str, optional, keyword-only
        Stored name (default ``exponential:rate=…,k=…``).

    Returns
    -------
    ReadoutLaw
        Atoms in decreasing order, exact.

    Raises
    ------
    ValueError
        ``rate`` not finite and positive, ``k`` not an integer in ``[1, MAX_ATOMS]``, or atoms that
        underflow to zero (``R (k − 1)`` above ~745).
    """
    spec = name or f"exponential:rate={rate!r},k={k!r}"
    rate = _positive_number(spec, "rate", str(rate))
    k = _atom_count(spec, str(k))
    values = np.exp(-rate * np.arange(k, dtype=np.float64))
    if not np.all(values > 0.0):
        raise ValueError(f"readout law {spec!r}: the weakest atoms exp(-rate (k - 1)) underflow to 0 "
                         f"(rate·(k − 1) = {rate * (k - 1):.6g} > 745): fewer atoms or a smaller rate")
    return discrete_readout_law(values, np.full(k, 1.0 / k), name=name or f"exponential:rate={rate!r},k={k}")


def csv_readout_law(path, *, name=None):
    """Atoms read from a CSV file, rescaled to ``E v² = 1``.

    One atom per line: ``value`` (equal weights) or ``value,weight`` (weights normalised to sum 1);
    blank lines and ``#`` comments are skipped, and a first line that is not numeric is a header.

    Parameters
    ----------
    path : str or path-like
        The file.
    name : str, optional, keyword-only
        Stored name (default ``csv:PATH``).

    Returns
    -------
    ReadoutLaw
        Exact, the atoms in the file's order.

    Raises
    ------
    ValueError
        The file cannot be read, has no atoms, lines with different numbers of columns, more than two
        columns or ``MAX_ATOMS`` atoms, a malformed number, or a weight that is not positive (the message
        names the file and the line).
    """
    import csv
    from pathlib import Path

    path = Path(path)
    spec = name or f"csv:{path}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"readout law {spec!r}: cannot read {str(path)!r} ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ValueError(f"readout law {spec!r}: {str(path)!r} is not UTF-8 text") from None
    rows, seen_content = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in next(csv.reader([line]))]
        first, seen_content = not seen_content, True
        try:
            numbers = [float(f) for f in fields]
        except ValueError:
            if first:
                continue  # a header line
            raise ValueError(f"readout law {spec!r}: line {number} of {str(path)!r}: malformed number in "
                             f"{line.strip()!r}") from None
        if len(numbers) not in (1, 2) or (rows and len(numbers) != len(rows[0])):
            raise ValueError(f"readout law {spec!r}: line {number} of {str(path)!r}: expected "
                             + ("1 or 2 columns (value[,weight])" if not rows else f"{len(rows[0])} column(s)")
                             + f", got {len(numbers)}")
        if len(numbers) == 2 and not numbers[1] > 0.0:
            raise ValueError(f"readout law {spec!r}: line {number} of {str(path)!r}: weight {fields[1]} "
                             f"is not positive")
        rows.append(numbers)
        if len(rows) > MAX_ATOMS:
            raise ValueError(f"readout law {spec!r}: more than {MAX_ATOMS} atoms in {str(path)!r}")
    if not rows:
        raise ValueError(f"readout law {spec!r}: no atoms in {str(path)!r}")
    values = [r[0] for r in rows]
    weights = [r[1] for r in rows] if len(rows[0]) == 2 else [1.0] * len(rows)
    try:
        return discrete_readout_law(values, weights, name=spec)
    except ValueError as exc:
        raise ValueError(f"readout law {spec!r}: {exc}") from None


def _powerlaw(spec, body, grid_size=None):
    keys = {item.split("=")[0].strip().lower() for item in body.split(",")}
    if keys == {"beta"}:  # the continuum limit K → ∞ (priors.continuous_laws.PowerLawDensity)
        from .continuous_laws import PowerLawDensity

        params = _family_parameters(spec, body, ("beta",))
        try:
            law = PowerLawDensity(params["beta"])
        except ValueError as exc:
            raise ValueError(f"readout law {spec!r}: {exc}") from None
        return continuous_readout_law(law, grid_size, default_size=CONTINUUM_REPORT_NODES)
    params = _family_parameters(spec, body, ("beta", "k"))
    return powerlaw_readout_law(params["beta"], params["k"], name=spec)


#: reporting nodes of the continuum power-law law (``Q(v)`` on the quantile grid; the solver integrates adaptively)
CONTINUUM_REPORT_NODES = 64


def _exponential(spec, body):
    params = _family_parameters(spec, body, ("rate", "k"))
    return exponential_readout_law(params["rate"], params["k"], name=spec)


def _csv(spec, body):
    if not body.strip():
        raise ValueError(f"readout law {spec!r}: no file after 'csv:'")
    return csv_readout_law(body.strip(), name=spec)


#: parametrized readout laws, ``FAMILY:…`` → (parser ``(spec, body) -> ReadoutLaw``, syntax for the help)
READOUT_FAMILIES = {
    "powerlaw": (_powerlaw, "powerlaw:beta=B,k=K (v_p ∝ p^-B; without k the continuum limit, 0 < B < 1/2)"),
    "exponential": (_exponential, "exponential:rate=R,k=K (v_p ∝ e^-R(p-1))"),
    "csv": (_csv, "csv:FILE (value[,weight] per line)"),
}


def density_readout_law(pdf, support, *, name="density", grid_size=None, breakpoints=()):
    """Readout law with a density ``p`` on a finite interval, rescaled to ``E v² = 1``.

    Parameters
    ----------
    pdf : callable
        Unnormalised density ``p(x) ≥ 0`` on ``support`` (vectorized).
    support : (float, float)
        Finite interval ``a < b``.
    name : str, keyword-only
        Name of the law.
    grid_size : int, optional, keyword-only
        Fixed grid (quantile Gauss–Legendre rule) for the solver; default: adaptive
        integration, ``DEFAULT_GRID_SIZE`` nodes to report ``Q(v)``.
    breakpoints : sequence of float, keyword-only
        Points where ``p`` is not smooth.

    Returns
    -------
    ReadoutLaw
        ``exact=False``, ``law`` a :class:`priors.continuous_laws.DensityLaw`.

    Raises
    ------
    ValueError
        Bad support or density (see :class:`~priors.continuous_laws.DensityLaw`), bad
        ``grid_size``.

    Notes
    -----
    The HCIZ channel of a density other than ``gaussian``/``uniform`` is that of its
    quantile grid (:func:`hciz.readout_channel`): exact for the ``v``-integrals of the
    solver, a discretization for the spectrum of ``S⁰``.
    """
    law = DensityLaw(pdf, support, name=name, breakpoints=breakpoints)
    return continuous_readout_law(law, _check_grid_size(grid_size), default_size=DEFAULT_GRID_SIZE)


def _check_grid_size(grid_size):
    if grid_size is None:
        return None
    if isinstance(grid_size, bool) or not float(grid_size).is_integer():
        raise ValueError(f"grid_size must be an integer, got {grid_size!r}")
    n = int(grid_size)
    if n < 1 or n > MAX_GRID_SIZE:
        raise ValueError(f"grid_size must be between 1 and {MAX_GRID_SIZE}, got {grid_size!r}")
    return n


def get_readout_law(spec, *, grid_size=None):
    """Return the readout law described by ``spec``.

    Parameters
    ----------
    spec : str
        A name of ``READOUT_LAWS`` or ``"discrete:VALUE=WEIGHT,..."`` (see module docstring).
        Names are case-insensitive.
    grid_size : int, optional
        Continuous laws only: a fixed grid of ``grid_size`` nodes (1 to ``MAX_GRID_SIZE``)
        for the solver.  Default: the solver integrates adaptively (converged, with an
        error estimate) and the law's atoms are ``DEFAULT_GRID_SIZE`` = 64 nodes where
        ``Q(v)`` is reported.  Ignored by discrete laws.

    Returns
    -------
    ReadoutLaw

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones), malformed ``discrete:`` atoms or
        numbers, non-positive weights, all-zero values, malformed family parameters
        (``powerlaw:``, ``exponential:``: unknown, missing or repeated keys, ``beta``/``rate`` not
        finite and positive, ``k`` not an integer in ``[1, MAX_ATOMS]``; ``csv:``: an unreadable or
        malformed file, a weight that is not positive), or ``grid_size`` not an integer in
        ``[1, MAX_GRID_SIZE]`` (message starting with ``grid_size``).

    Notes
    -----
    The grid of ``uniform`` and ``gaussian`` is the Gauss–Legendre rule in the quantile
    ``u = F(v)`` (:meth:`priors.continuous_laws.ContinuousLaw.quantile_rule`): for
    ``uniform`` the Gauss–Legendre rule on ``[-sqrt(3), sqrt(3)]``; for ``gaussian`` nodes
    ``Φ⁻¹(u_i)`` whose weights never underflow (a Gauss–Hermite rule of 64 nodes has nodes at
    ``|v| = 14.9`` with weight 3e-49, and its weights underflow beyond ~380 nodes).
    Values are rescaled so that ``E v^2 = 1`` holds exactly on the grid.
    """
    if not isinstance(spec, str):
        raise ValueError(f"readout law specification must be a string, got {spec!r}")
    text = spec.strip()
    key = text.lower()
    n = _check_grid_size(grid_size)
    if key.startswith("discrete:"):
        return _parse_discrete(text, text[len("discrete:"):])
    family, sep, body = text.partition(":")
    if sep and family.lower() == "powerlaw":
        return _powerlaw(text, body, n)
    if sep and family.lower() in READOUT_FAMILIES:
        return READOUT_FAMILIES[family.lower()][0](text, body)
    if key in READOUT_LAWS:
        return READOUT_LAWS[key].build(n)
    raise ValueError(f"unknown readout law {spec!r}; valid: " + ", ".join(READOUT_LAWS)
                     + ", " + ", ".join(syntax.split(" ")[0] for _, syntax in READOUT_FAMILIES.values())
                     + ", or discrete:VALUE=WEIGHT,...")


def register_readout_law(name, law, *, summary="", replace=False):
    """Register a named readout law (``--readout NAME`` in every command).

    Parameters
    ----------
    name : str
        Lower case, without spaces, ``,``, ``=`` or ``:``.
    law : ContinuousLaw or (values, weights)
        A continuous law with ``E v² = 1`` (:class:`priors.continuous_laws.ContinuousLaw`; also
        registered in ``CONTINUOUS_LAWS``, so ``--readout-grid`` applies), or the atoms and
        positive weights of a discrete law (normalised to ``E v² = 1`` and total weight 1).
    summary : str, keyword-only
        Short description for the help texts (e.g. ``"{±1, ±3}/√5"``).
    replace : bool, keyword-only
        Allow replacing a registered law of the same name.

    Raises
    ------
    ValueError
        Malformed or already registered name (without ``replace``), or invalid atoms (the
        messages of :func:`discrete_readout_law`).
    """
    from .continuous_laws import ContinuousLaw

    name = str(name)
    if not name or name != name.strip().lower() or any(c in name for c in " ,=:"):
        raise ValueError(f"readout law name {name!r}: lower case, without spaces, commas, '=' or ':'")
    if name in READOUT_LAWS and not replace:
        raise ValueError(f"readout law {name!r} already registered")
    if isinstance(law, ContinuousLaw):
        CONTINUOUS_LAWS[name] = law

        def build(grid_size):
            return continuous_readout_law(law, grid_size, default_size=DEFAULT_GRID_SIZE)
    else:
        values, weights = law
        discrete_readout_law(values, weights, name=name)  # checks the atoms now

        def build(grid_size):  # discrete laws ignore grid_size
            return discrete_readout_law(values, weights, name=name)
    READOUT_LAWS[name] = _NamedLaw(build, str(summary))


def unregister_readout_law(name):
    """Remove a registered readout law (tests, plug-ins); a missing name is ignored."""
    if READOUT_LAWS.pop(name, None) is not None:
        CONTINUOUS_LAWS.pop(name, None)


def describe_readout_laws():
    """One line for the help texts: every registered name with its summary, then the ``discrete:`` syntax."""
    names = [f"{name} ({entry.summary})" if entry.summary else name for name, entry in READOUT_LAWS.items()]
    names += [syntax for _, syntax in READOUT_FAMILIES.values()]
    return ", ".join(names) + " or 'discrete:v=w,v=w,...'"


def continuous_readout_law(law, grid_size=None, *, default_size):
    """The :class:`ReadoutLaw` of a continuous law on its quantile grid.

    ``grid_size=None``: ``default_size`` nodes that only report ``Q(v)`` (the solver
    integrates adaptively); an integer: a fixed grid (``fixed_grid=True``).

    Parameters
    ----------
    law : priors.continuous_laws.ContinuousLaw
    grid_size : int or None
    default_size : int, keyword-only
    """
    import dataclasses

    n = default_size if grid_size is None else int(grid_size)
    values, weights = law.quantile_rule(n)
    out = discrete_readout_law(values, weights, name=law.name, exact=False)
    return dataclasses.replace(out, law=law, fixed_grid=grid_size is not None)


for _name, _law, _summary in (("ones", ([1.0], [1.0]), "v ≡ 1"), ("rademacher", ([-1.0, 1.0], [0.5, 0.5]), "±1"),
                              ("4point", ([-3.0, -1.0, 1.0, 3.0], [0.25] * 4), "{±1, ±3}/√5"),
                              ("uniform", CONTINUOUS_LAWS["uniform"], "on ±√3"),
                              ("gaussian", CONTINUOUS_LAWS["gaussian"], "N(0, 1)")):
    register_readout_law(_name, _law, summary=_summary)
del _name, _law, _summary
