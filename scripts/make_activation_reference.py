"""Write high-precision activation references to ``data/activation_reference.json``.

Independent of ``replica.activations``: mpmath (30 digits) adaptive quadrature of

* Hermite coefficients ``mu_l = E[sigma(z) He_l(z)]``, ``l = 0..8``, and ``nu = E sigma^2``;
* dual kernels ``kappa(q) = E[sigma(u) sigma(w)]`` at a few ``q`` as the nested integral
  ``E_u[sigma(u) E_xi sigma(q u + sqrt(1-q^2) xi)]``.

Usage: ``python scripts/make_activation_reference.py [--output data/activation_reference.json]``
(nested mpmath quadratures: 10–20 minutes).
"""

from __future__ import annotations

import argparse
import json
import pathlib

import mpmath as mp

mp.mp.dps = 30

ACTIVATIONS = {
    "elu": lambda x: x if x > 0 else mp.expm1(x),
    "tanh": mp.tanh,
    "tanh2": lambda x: mp.tanh(2 * x),
    "erf": mp.erf,
    "sigmoid": lambda x: 1 / (1 + mp.exp(-x)),
    "softplus": lambda x: mp.log1p(mp.exp(x)) if x < 30 else x + mp.log1p(mp.exp(-x)),
}
DEGREES = range(9)
KERNEL_Q = {"elu": [-0.8, 0.5], "tanh2": [-0.8, 0.5, 0.95], "softplus": [0.5]}


def gauss(f, centre=0):
    """``E f(z)`` for ``z ~ N(0, 1)``, split at ``centre`` (a kink or transition point)."""
    pts = sorted({-mp.inf, -8, mp.mpf(centre), 8, mp.inf})
    return mp.quad(lambda z: f(z) * mp.npdf(z), pts)


def hermite_e(ell, z):
    """Probabilists' Hermite polynomial ``He_ell(z)``."""
    return mp.hermite(ell, z / mp.sqrt(2)) * mp.power(2, -mp.mpf(ell) / 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="data/activation_reference.json",
                        help="JSON file to write (default: %(default)s)")
    args = parser.parse_args()
    out = {"source": "scripts/make_activation_reference.py (mpmath, 30 digits)",
           "hermite": {}, "nu": {}, "dual_kernel": {}}
    for name, f in ACTIVATIONS.items():
        out["hermite"][name] = [mp.nstr(gauss(lambda z: f(z) * hermite_e(ell, z)), 20)
                                for ell in DEGREES]
        out["nu"][name] = mp.nstr(gauss(lambda z: f(z) ** 2), 20)
    mp.mp.dps = 20
    for name, qs in KERNEL_Q.items():
        f = ACTIVATIONS[name]
        out["dual_kernel"][name] = {}
        for q in qs:
            q = mp.mpf(q)
            s = mp.sqrt(1 - q * q)

            def inner(u):
                return gauss(lambda xi: f(q * u + s * xi), centre=-q * u / s)

            val = gauss(lambda u: f(u) * inner(u))
            out["dual_kernel"][name][str(float(q))] = mp.nstr(val, 16)
            print(name, float(q), val, flush=True)
    pathlib.Path(args.output).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
