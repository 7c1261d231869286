"""Check the rank-matched two-factor surrogate for products of three Gaussian factors.

``replica.models.deep_linear`` learns a product of ≥ 3 factors, e.g. ``W₃:₁ = W₃W₂W₁/√(k₂k₁)``,
through the two-factor rectangular channel of :mod:`hciz.rectangular` with the smallest inner
width (docs/deep_linear.md §5). This script measures the error of that approximation: it samples
the product, observes it as ``Y = √λ S + Z``, and applies the *oracle* rotation-invariant
estimator ``Ŝ = Σ_k (u_kᵀ S v_k) u_k v_kᵀ`` (``u_k, v_k`` singular vectors of ``Y``), whose
error converges to the Bayes-optimal MMSE of a bi-rotation-invariant prior as the size grows
(Troiani et al. 2022; Bun, Bouchaud, Potters 2017). The same estimate for a two-factor product
is compared with the exact channel as a control of the method.

Usage::

    python scripts/experiments/product_channel_check.py --dim 400 --gamma 0.5,0.5,0.5 --lam 0.5,2,8
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def oracle_mmse(factors, lam, rng, repeats=2):
    """Mean squared error per entry of the oracle RIE for ``S = F_1 ⋯ F_p/√(inner dims)``."""
    errs = []
    for _ in range(repeats):
        mats = [rng.standard_normal(shape) for shape in factors]
        S = mats[0]
        for M in mats[1:]:
            S = S @ M / np.sqrt(M.shape[0])
        Y = np.sqrt(lam) * S + rng.standard_normal(S.shape)
        U, _, Vt = np.linalg.svd(Y, full_matrices=False)
        xi = np.einsum("ik,ij,kj->k", U, S, Vt)
        est = (U * xi) @ Vt
        errs.append(np.mean((S - est) ** 2))
    return float(np.mean(errs)), float(np.std(errs) / np.sqrt(len(errs)))


def main(argv=None) -> int:
    from hciz.rectangular import rectangular_channel
    from replica.models.deep_linear import product_channel_shape

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=400)
    p.add_argument("--gamma", default="0.5,0.5,0.5", help="γ1,γ2,γ3")
    p.add_argument("--lam", default="0.5,2,8", help="SNR values λ")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    g = [float(x) for x in args.gamma.split(",")]
    d = args.dim
    k = [d] + [int(round(x * d)) for x in g]
    rng = np.random.default_rng(args.seed)
    print("product | λ | oracle RIE mse (sampled) | channel mmse | relative difference")
    for ell, m in [(2, 1), (3, 2), (3, 1)]:
        shapes = [(k[j], k[j - 1]) for j in range(ell, m - 1, -1)]
        ch = rectangular_channel(*product_channel_shape(g, ell, m))
        for lam in (float(x) for x in args.lam.split(",")):
            mse, sem = oracle_mmse(shapes, lam, rng)
            exact = float(ch.mmse(lam))
            print(f"W_{ell}:{m} ({'exact' if ell - m == 1 else 'surrogate'}) | {lam:g} | {mse:.4f} ± {sem:.4f} "
                  f"| {exact:.4f} | {(mse - exact) / exact:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
